"""Nothing per keystroke outlives its message: pygls keeps a future per handler run under the message's id,
and the document notifications' futures must go when they finish (they were kept for the life of the
process: one per didChange)."""

from __future__ import annotations

import json
from typing import Any

from tandem.lsp.server import build_server


class _Sink:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        body = data.split(b"\r\n\r\n", 1)[1]
        self.messages.append(json.loads(body))

    def close(self) -> None:
        pass


def _send(server: Any, message: dict[str, Any]) -> None:
    message = {"jsonrpc": "2.0", **message}
    server.protocol.handle_message(server.protocol.structure_message(message))


def test_document_notifications_leave_no_futures_behind() -> None:
    server = build_server(env={})
    sink = _Sink()
    server.protocol.set_writer(sink)
    uri = "file:///w/a.py"
    item = {"uri": uri, "languageId": "python", "version": 0, "text": "x = 1\n"}
    _send(server, {"method": "textDocument/didOpen", "params": {"textDocument": item}})
    for version in range(1, 1001):
        at = {"line": 1, "character": version - 1}
        change = {"range": {"start": at, "end": at}, "text": "a"}
        params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
        _send(server, {"method": "textDocument/didChange", "params": params})
    document = server.documents.get(uri)
    assert document is not None and document.buffer.text() == "x = 1\n" + "a" * 1000
    _send(server, {"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
    assert server.documents.get(uri) is None
    assert len(server.protocol._request_futures) == 0
    assert sink.messages == []  # no errors reported
