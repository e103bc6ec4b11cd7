"""Fuzzing request params through the server's message loop: whatever the params, every request gets
exactly one answer (a result or a JSON-RPC error), and the server keeps serving (example count from the
active hypothesis profile, tests/conftest.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from tandem.lsp.server import build_server
from tandem.lsp.stdio import MessageLoop

METHODS = [
    "textDocument/completion",
    "textDocument/inlineCompletion",
    "textDocument/codeAction",
    "workspace/executeCommand",
    "textDocument/didChange",
    "textDocument/didOpen",
    "textDocument/hover",
]
URI = "file:///w/a.py"
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), st.text(max_size=5)
)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)  # noqa: E501
POSITION = st.fixed_dictionaries({"line": st.integers(-3, 2**32) | JSON, "character": st.integers(-3, 2**32) | JSON})
RANGE = st.fixed_dictionaries({"start": POSITION, "end": POSITION})
# Near-valid params (right keys, wrong values) reach further into the handlers than random JSON does.
PARAMS = st.one_of(
    JSON,
    st.fixed_dictionaries({"textDocument": st.fixed_dictionaries({"uri": st.just(URI)}), "position": POSITION}),
    st.fixed_dictionaries({
        "textDocument": st.fixed_dictionaries({"uri": st.just(URI), "version": st.integers(-2, 2**31) | JSON}),
        "contentChanges": st.lists(st.fixed_dictionaries({"range": RANGE, "text": st.text(max_size=4)}), max_size=3),
    }),
    st.fixed_dictionaries({"command": st.sampled_from(["tandem.edit", "tandem.accepted", "x"]), "arguments": JSON}),
)  # fmt: skip


class _Sink:
    def __init__(self) -> None:
        self.answers: dict[Any, list[dict[str, Any]]] = {}
        self.changed = asyncio.Event()

    def write(self, data: bytes) -> None:
        message = json.loads(data.split(b"\r\n\r\n", 1)[1])
        if "method" not in message:
            self.answers.setdefault(message.get("id"), []).append(message)
            self.changed.set()

    def close(self) -> None:
        pass


async def _session(calls: list[tuple[str, Any, bool]]) -> None:
    server = build_server(env={})
    sink = _Sink()
    server.protocol.set_writer(sink)
    loop = MessageLoop(server.protocol)
    loop.dispatch({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"capabilities": {}}})
    item = {"uri": URI, "languageId": "python", "version": 0, "text": "x = 1\n"}
    loop.dispatch({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
    ids = []
    for n, (method, params, is_request) in enumerate(calls):
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if is_request:
            message["id"] = n
            ids.append(n)
        loop.dispatch(message)
    while not all(i in sink.answers for i in ids):
        sink.changed.clear()
        await asyncio.wait_for(sink.changed.wait(), 5)
    for i in ids:
        [answer] = sink.answers[i]
        assert ("result" in answer) != ("error" in answer), answer
    # Still serving: a well-formed request after the fuzzed ones is answered.
    loop.dispatch({"jsonrpc": "2.0", "id": "last", "method": "shutdown"})
    await asyncio.wait_for(_answered(sink, "last"), 10)
    await server.aclose()


async def _answered(sink: _Sink, msg_id: Any) -> None:
    while msg_id not in sink.answers:
        sink.changed.clear()
        await sink.changed.wait()


CHANGE = {"textDocument": {"uri": URI, "version": 1}, "contentChanges": []}


@given(calls=st.lists(st.tuples(st.sampled_from(METHODS), PARAMS, st.booleans()), min_size=1, max_size=6))
@example(calls=[("textDocument/didChange", CHANGE, True)])  # a notification's method sent with an id
def test_fuzz_every_request_is_answered_once(calls: list[tuple[str, Any, bool]]) -> None:
    asyncio.run(_session(calls))
