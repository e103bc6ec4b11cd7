"""The protocol dispatches each message by its kind as pygls does: `TandemProtocol.handle_message` tells a
request, a notification, a response and an error apart by their fields, where pygls asks `isinstance`
of its runtime-checkable protocols (slow in Python 3.11: three such checks a keystroke)."""

from __future__ import annotations

from typing import Any

import pytest
from pygls.protocol.json_rpc import RPCNotification, RPCRequest, RPCResponse

from tandem.lsp.server import build_server

MESSAGES = {
    "request": {"id": 7, "method": "textDocument/inlineCompletion", "params": {
        "textDocument": {"uri": "file:///w/a.py"}, "position": {"line": 0, "character": 1},
        "context": {"triggerKind": 2}}},
    "notification": {"method": "textDocument/didClose", "params": {"textDocument": {"uri": "file:///w/a.py"}}},
    "unknown request": {"id": "x-1", "method": "tandem/unknown", "params": None},
    "unknown notification": {"method": "$/unknown", "params": {"a": 1}},
    "response": {"id": 3, "result": {"ok": True}},
    "null response": {"id": 4, "result": None},
    "error": {"id": 5, "error": {"code": -32601, "message": "no such method"}},
}  # fmt: skip


def _pygls_kind(message: Any) -> str:
    if isinstance(message, RPCRequest):
        return "request"
    if isinstance(message, RPCNotification):
        return "notification"
    if isinstance(message, RPCResponse):
        return "response"
    return "error"


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_each_message_goes_where_pygls_would_send_it(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    server = build_server(env={})
    protocol = server.protocol
    message = protocol.structure_message({"jsonrpc": "2.0", **MESSAGES[name]})
    seen: list[tuple[str, tuple[Any, ...]]] = []
    for kind, method in (("request", "_handle_request"), ("notification", "_handle_notification")):
        monkeypatch.setattr(protocol, method, lambda *args, kind=kind: seen.append((kind, args)))

    def response(*args: Any) -> None:
        seen.append(("response" if len(args) == 2 else "error", args))

    monkeypatch.setattr(protocol, "_handle_response", response)
    protocol.handle_message(message)
    assert [kind for kind, _ in seen] == [_pygls_kind(message)]
    expected = {
        "request": lambda m: (m.id, m.method, m.params),
        "notification": lambda m: (m.method, m.params),
        "response": lambda m: (m.id, m.result),
        "error": lambda m: (m.id, None, m.error),
    }[seen[0][0]](message)
    assert seen[0][1] == expected


def test_a_did_change_that_fails_is_reported_as_pygls_reports_a_notification_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """didChange skips pygls' handler machinery; a failure in it still reaches the server's error report
    as a notification handler's failure, and the next change is handled."""
    from pygls.exceptions import FeatureNotificationError, JsonRpcInternalError

    server = build_server(env={})
    protocol = server.protocol
    reported: list[tuple[Exception, type]] = []
    monkeypatch.setattr(server, "report_server_error", lambda error, source: reported.append((error, source)))
    uri = "file:///w/a.py"
    item = {"uri": uri, "languageId": "python", "version": 0, "text": "x = 1\n"}
    opened = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}}
    protocol.handle_message(protocol.structure_message(opened))

    def change(version: int, line: int) -> None:
        at = {"line": line, "character": 0}
        params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
            {"range": {"start": at, "end": at}, "text": "y"}]}  # fmt: skip
        message = {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params}
        protocol.handle_message(protocol.structure_message(message))

    original = server.documents.change
    monkeypatch.setattr(server.documents, "change", lambda *args: 1 / 0)
    change(1, 0)
    assert [(type(error), source) for error, source in reported] == [(JsonRpcInternalError, FeatureNotificationError)]
    monkeypatch.setattr(server.documents, "change", original)
    change(2, 0)
    document = server.documents.get(uri)
    assert document is not None and document.buffer.text() == "yx = 1\n" and document.version == 2
