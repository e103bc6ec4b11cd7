"""The stdio message loop (`lsp.stdio.MessageLoop`) answers every request per JSON-RPC and LSP, whatever
its params, and a client repeating a bad request cannot fill the log."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from tandem.lsp.server import build_server
from tandem.lsp.stdio import MessageLoop

URI = "file:///w/a.py"
INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32600, -32601, -32602


class _Sink:
    def __init__(self) -> None:
        self.answers: dict[Any, dict[str, Any]] = {}
        self.changed = asyncio.Event()

    def write(self, data: bytes) -> None:
        message = json.loads(data.split(b"\r\n\r\n", 1)[1])
        if "method" not in message:
            self.answers[message.get("id")] = message
            self.changed.set()

    def close(self) -> None:
        pass

    async def answer(self, msg_id: Any) -> dict[str, Any]:
        while msg_id not in self.answers:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 10)
        return self.answers.pop(msg_id)


async def _started() -> tuple[Any, MessageLoop, _Sink]:
    server = build_server(env={})
    sink = _Sink()
    server.protocol.set_writer(sink)
    loop = MessageLoop(server.protocol)
    loop.dispatch({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"capabilities": {}}})
    await sink.answer("init")
    loop.dispatch({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    item = {"uri": URI, "languageId": "python", "version": 0, "text": "x = 1\n"}
    loop.dispatch({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
    return server, loop, sink


async def test_omitted_params_are_null() -> None:
    """JSON-RPC lets a request leave params out: an unknown method is then -32601 (it was -32600, pygls
    cannot structure an untyped message without params), a method that needs none answers, one that
    needs them is -32602."""
    server, loop, sink = await _started()
    loop.dispatch({"jsonrpc": "2.0", "id": 1, "method": "no/suchMethod"})
    assert (await sink.answer(1))["error"]["code"] == METHOD_NOT_FOUND
    loop.dispatch({"jsonrpc": "2.0", "id": 2, "method": "tandem/health"})
    assert (await sink.answer(2))["result"]["documents"] == 1
    loop.dispatch({"jsonrpc": "2.0", "id": 3, "method": "textDocument/completion"})
    assert (await sink.answer(3))["error"]["code"] == INVALID_PARAMS
    loop.dispatch({"jsonrpc": "2.0", "id": 4, "method": "textDocument/copilotInlineEdit"})
    assert (await sink.answer(4))["error"]["code"] == INVALID_PARAMS
    await server.aclose()


@pytest.mark.parametrize(
    "position",
    [
        None,
        [],
        {"line": 0},
        {"line": -1, "character": 0},
        {"line": 2**31, "character": 0},
        {"line": "1", "character": 0},
    ],
)
async def test_next_edit_request_with_unusable_params_is_invalid_params(position: Any) -> None:
    """textDocument/copilotInlineEdit has no lsprotocol type; its params get the same answer as typed ones
    (it answered an empty list)."""
    server, loop, sink = await _started()
    params = {"textDocument": {"uri": URI}, "position": position}
    loop.dispatch({"jsonrpc": "2.0", "id": 1, "method": "textDocument/copilotInlineEdit", "params": params})
    assert (await sink.answer(1))["error"]["code"] == INVALID_PARAMS
    await server.aclose()


async def test_repeated_bad_requests_are_logged_once_each(caplog: pytest.LogCaptureFixture) -> None:
    server, loop, sink = await _started()
    caplog.set_level(logging.DEBUG)
    # pygls' own level too: an in-process replay earlier in the run leaves it at ERROR (eval/replay/cli.py).
    caplog.set_level(logging.DEBUG, logger="pygls")
    bad_edit = {"command": "tandem.edit", "arguments": [1, 2]}
    bad_position = {"textDocument": {"uri": URI}, "position": {"line": -1, "character": 0}}
    for n in range(0, 60, 3):
        loop.dispatch({"jsonrpc": "2.0", "id": n, "method": "no/suchMethod", "params": {}})
        loop.dispatch({"jsonrpc": "2.0", "id": n + 1, "method": "workspace/executeCommand", "params": bad_edit})
        loop.dispatch(
            {"jsonrpc": "2.0", "id": n + 2, "method": "textDocument/copilotInlineEdit", "params": bad_position}
        )
    codes = [(await sink.answer(n))["error"]["code"] for n in range(60)]
    assert codes == [METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_PARAMS] * 20
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    unknown = [r for r in logged if "unknown method" in r.getMessage()]
    params = [r for r in logged if r.getMessage().startswith("client input:")]
    assert len(unknown) == 1 and len(params) == 1, [r.getMessage() for r in logged]
    assert not any(r.exc_info for r in logged)
    loop.dispatch({"jsonrpc": "2.0", "id": "other", "method": "other/unknown"})
    assert (await sink.answer("other"))["error"]["code"] == METHOD_NOT_FOUND
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING and "other/unknown" in r.getMessage()]
    assert len(warned) == 1
    await server.aclose()
