"""What the client says back about a suggestion: the `tandem.accepted` command (run after the user accepts
one), and the Copilot-style textDocument/didShowCompletion and textDocument/didPartiallyAcceptCompletion
notifications. An acceptance is traced, and tandem speculates on what comes after the inserted text.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tandem.lsp.completing import request_at
from tandem.lsp.requests import plain as payload

if TYPE_CHECKING:
    from tandem.completion.inline.request import CompletionResult
    from tandem.lsp.server import TandemServer

log = logging.getLogger(__name__)

ACCEPTED = "tandem.accepted"
DID_SHOW = "textDocument/didShowCompletion"
DID_PARTIALLY_ACCEPT = "textDocument/didPartiallyAcceptCompletion"


def accepted_command(uri: str, position: types.Position, result: CompletionResult) -> types.Command:
    """Run by the editor after the user accepts the suggestion: tandem speculates on what comes next."""
    payload = {
        "uri": uri,
        "position": {"line": position.line, "character": position.character},
        "text": result.text,
        "trace_id": result.trace_id,
    }
    return types.Command(title="tandem: accepted", command=ACCEPTED, arguments=[payload])


# pygls resolves a command handler's annotations at call time: `ls` stays unannotated because
# TandemServer is only imported for type checking here.
def accepted(ls, *args: Any) -> None:  # type: ignore[no-untyped-def]
    _on_accepted(ls, args[0] if args else None)


def did_show(ls: TandemServer, params: Any) -> None:
    """Copilot-style notification: a suggestion is on screen (tandem already speculated on it)."""


def did_partially_accept(ls: TandemServer, params: Any) -> None:
    """Copilot-style notification: the user accepted part of a suggestion (a word, a line)."""
    plain = payload(params)
    item = plain.get("item") if isinstance(plain, dict) else None
    command = item.get("command") if isinstance(item, dict) else None
    arguments = command.get("arguments") if isinstance(command, dict) else None
    length = plain.get("acceptedLength") if isinstance(plain, dict) else None
    if arguments and isinstance(length, int):
        _on_accepted(ls, arguments[0], partial_chars=length)


def _on_accepted(ls: TandemServer, payload: Any, *, partial_chars: int | None = None) -> None:
    """The user accepted (part of) a suggestion: trace it, and prefetch the state after it."""
    if ls.session is None or not isinstance(payload, dict):
        return
    engine = ls.session.inline
    uri, text = payload.get("uri"), payload.get("text")
    position = payload.get("position") or {}
    document = ls.documents.get(uri) if isinstance(uri, str) else None
    if document is None or not isinstance(text, str):
        return
    if partial_chars is not None:
        text = text[:partial_chars]
    try:
        client_position = types.Position(line=int(position["line"]), character=int(position["character"]))
    except (KeyError, TypeError, ValueError):
        log.warning("tandem.accepted without a usable position: %r", position)
        return
    engine.accepted(str(payload.get("trace_id", "")), len(text))
    # The editor has inserted the text by now: speculate at the cursor after it, if nothing covers it.
    request = request_at(
        ls, document, client_position, kind="inline", invoked=False, received_ns=time.perf_counter_ns()
    )
    engine.speculate(request, text, after_insert=True)
