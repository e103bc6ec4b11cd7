"""`tandem serve` over real stdio against a hostile client: bad framing, invalid params, unknown methods,
requests after shutdown. The server keeps serving, answers every request per the spec, and keeps the
user's text exact."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import sys
from typing import Any

import pytest
from e2e_support import fast_model
from fixtures_sim import SimFactory

from tandem.lsp.framing import FrameReader, Message

pytestmark = pytest.mark.e2e

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


def frame(value: Any, *, length_delta: int = 0, header: str = "Content-Length") -> bytes:
    body = json.dumps(value).encode()
    return f"{header}: {len(body) + length_delta}\r\n\r\n".encode() + body


class RawClient:
    """An LSP client that writes whatever bytes it is told to, and reads answers by id."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.frames = FrameReader()
        self.answers: dict[Any, dict[str, Any]] = {}
        self.null_id_errors: list[dict[str, Any]] = []

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    async def answer(self, msg_id: Any) -> dict[str, Any]:
        assert self.process.stdout is not None
        while msg_id not in self.answers:
            data = await self.process.stdout.read(1 << 16)
            assert data, "the server closed its output"
            for event in self.frames.feed(data):
                if isinstance(event, Message) and "method" not in event.value:
                    if event.value.get("id") is None:
                        self.null_id_errors.append(event.value)
                    else:
                        self.answers[event.value["id"]] = event.value
        return self.answers.pop(msg_id)


def request(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, **({} if params is None else {"params": params})}


def notify(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def test_hostile_client_is_answered_and_loses_no_character(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    truth = tmp_path / "truth" / "a.py"
    truth.parent.mkdir()
    truth.write_text(TRUTH)
    sim = sim_factory(profile="spark", ttft_ms=5, truth=(str(truth),))
    await _hostile_session(tmp_path, fast_model(sim.base_url))


# The simulator answers with the rest of this text only if the server's copy of the document is exact.
TRUTH = "x = 1\nabcdef = {'key': 'value'}\n"


async def _hostile_session(tmp_path: pathlib.Path, options: dict[str, Any]) -> None:
    home = tmp_path / "home"
    (home / ".config" / "tandem").mkdir(parents=True)
    # An editor that does not say who it is may be carrying the workspace's settings, so the models are
    # the user's own, in tandem's config.toml.
    fast = options["models"]["fast"]
    table = "".join(f"{key} = {value!r}\n" for key, value in fast.items())
    (home / ".config" / "tandem" / "config.toml").write_text(f"[models.fast]\n{table}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")} | {"HOME": str(home)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "tandem", "serve", "--trace", str(tmp_path / "trace.jsonl"),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env,
    )  # fmt: skip
    client = RawClient(process)
    try:
        initialize = {"processId": None, "capabilities": {}, "initializationOptions": options}
        client.send(frame(request(1, "initialize", initialize)))
        assert "capabilities" in (await client.answer(1))["result"]
        client.send(frame(notify("initialized", {})))
        uri = (tmp_path / "a.py").as_uri()
        item = {"uri": uri, "languageId": "python", "version": 0, "text": "x = 1\n"}
        client.send(frame(notify("textDocument/didOpen", {"textDocument": item})))

        def typed(version: int, text: str) -> dict[str, Any]:
            at = {"line": 1, "character": version - 1}
            change = {"range": {"start": at, "end": at}, "text": text}
            return notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})  # noqa: E501

        # Framing damage, each followed by a keystroke that must not be lost.
        client.send(b"X-Junk: " + b"a" * 70_000 + b"\r\n" + frame(typed(1, "a")))  # header line over 64 KiB
        client.send(b"garbage between messages\r\n" + frame(typed(2, "b"), header="content-length"))
        client.send(frame(typed(3, "c"), length_delta=-20))  # too short
        client.send(frame(typed(4, "d"), length_delta=+30) + frame(typed(5, "e")))  # too large
        big = request(2, "workspace/executeCommand", {"command": "no.such.command", "arguments": ["y" * 200_000]})
        client.send(frame(big, length_delta=-150_000))  # too short on a 200 KB body
        assert "id" in await client.answer(2)
        client.send(b"Content-Length: abc\r\n\r\n" + json.dumps(typed(6, "lost")).encode())  # unusable length
        client.send(frame(typed(6, "f")))

        # Invalid params: each answered -32602 with its id.
        td = {"uri": uri}
        bad_params: list[Any] = [
            None, [], {}, {"textDocument": td},
            {"textDocument": td, "position": {"line": -1, "character": 0}},
            {"textDocument": td, "position": {"line": 2**31, "character": 0}},
            {"textDocument": td, "position": {"line": "one", "character": 0}},
        ]  # fmt: skip
        for n, params in enumerate(bad_params, start=10):
            client.send(frame(request(n, "textDocument/completion", params)))
        for n in range(10, 10 + len(bad_params)):
            assert (await client.answer(n))["error"]["code"] == INVALID_PARAMS
        client.send(frame(request(30, "no/suchMethod", {})))
        assert (await client.answer(30))["error"]["code"] == METHOD_NOT_FOUND
        client.send(frame([1, 2, 3]))
        client.send(frame({"id": 31, "method": "shutdown"}))  # no "jsonrpc"
        assert (await client.answer(31))["error"]["code"] == INVALID_REQUEST
        # Ids JSON-RPC does not allow (an object, an array, a boolean, a fraction): each answered with id null,
        # and the stream stays in sync (the next request is answered, the keystrokes after are kept).
        errors_before = len(client.null_id_errors)
        for n, bad_id in enumerate([{"x": 1}, [7], True, 1.5, {"id": 32}]):
            at_n = {"textDocument": td, "position": {"line": 0, "character": n}}
            client.send(frame(request(bad_id, "textDocument/completion", at_n)))
            client.send(frame(request(bad_id, "shutdown")))
        client.send(frame(request(32, "no/suchMethod", {})))
        assert (await client.answer(32))["error"]["code"] == METHOD_NOT_FOUND
        bad = client.null_id_errors[errors_before:]
        assert len(bad) == 10 and all(e["error"]["code"] == INVALID_REQUEST for e in bad)

        # The text is exact: every keystroke arrived, the one behind an unusable length was reported.
        position = {"line": 1, "character": 6}
        client.send(frame(request(40, "textDocument/completion", {"textDocument": td, "position": position})))
        completion = (await client.answer(40))["result"]
        [item] = completion["items"]
        assert item["textEdit"]["newText"] == "abcdef = {'key': 'value'}", completion
        assert any(e["error"]["code"] == PARSE_ERROR for e in client.null_id_errors)
        assert any(e["error"]["code"] == INVALID_REQUEST for e in client.null_id_errors)

        client.send(frame(request(50, "shutdown")))
        assert (await client.answer(50))["result"] is None
        client.send(frame(request(51, "textDocument/completion", {"textDocument": td, "position": position})))
        assert (await client.answer(51))["error"]["code"] == INVALID_REQUEST
        client.send(frame(notify("exit", None)))
        assert await asyncio.wait_for(process.wait(), 10) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
