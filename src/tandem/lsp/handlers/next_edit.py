"""textDocument/copilotInlineEdit and textDocument/didShowInlineEdit (GitHub Copilot's shape), the accept and
dismiss commands, and the next edit as offered elsewhere, for clients without inline edits (Helix): the
"Apply next edit" code action (`handlers.code_action` assembles textDocument/codeAction) and a menu item
(`handlers.completion`).

    request   {textDocument: {uri, version}, position}
    result    {edits: [{text, textDocument: {uri, version}, range, command}]}   (items are alternatives)

An edit is stamped with the version it was computed for; a client applies it only to that version. The
item's `command` (`tandem.nextEditAccepted`) runs after the client applied it: tandem checks the
document now holds it and asks for the next edit at once. `tandem.nextEditDismissed` says it was turned
down. Everything else is `completion.next_edit.suggest.NextEdits`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, TypeGuard

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcInvalidParams

from tandem.completion.next_edit.types import NextEditResult, Suggestion
from tandem.lsp.requests import next_edit_request
from tandem.lsp.requests import plain as _plain

if TYPE_CHECKING:
    from tandem.completion.next_edit.suggest import NextEdits
    from tandem.lsp.documents import Document
    from tandem.lsp.server import TandemServer

log = logging.getLogger(__name__)

METHOD = "textDocument/copilotInlineEdit"
DID_SHOW = "textDocument/didShowInlineEdit"
ACCEPTED = "tandem.nextEditAccepted"
DISMISSED = "tandem.nextEditDismissed"
ACTION_TITLE = "Apply next edit"
_CONVERTER = get_converter()


def _next_edits(ls: TandemServer) -> NextEdits | None:
    return ls.session.next_edits if ls.session is not None else None


async def suggest(ls: TandemServer, uri: str, position: types.Position) -> tuple[Document | None, NextEditResult]:
    """The next edit at `position` of the open document `uri` (empty when none may be asked for)."""
    received_ns = time.perf_counter_ns()
    document = ls.documents.get(uri)
    next_edits = _next_edits(ls)
    if document is None or next_edits is None:
        return document, NextEditResult(outcome="skipped")
    line, character = ls.documents.to_server(document, position)
    request = next_edit_request(document, line, character, client=ls.client_name, received_ns=received_ns)
    return document, await next_edits.suggest(request)


def _range(ls: TandemServer, document: Document, suggestion: Suggestion) -> types.Range:
    edit = suggestion.edit
    return types.Range(
        start=ls.documents.to_client(document, edit.start_line, edit.start_char),
        end=ls.documents.to_client(document, edit.end_line, edit.end_char),
    )


def _command(uri: str, suggestion: Suggestion) -> dict[str, Any]:
    payload = {"uri": uri, "version": suggestion.version, "trace_id": suggestion.trace_id}
    return {"title": "tandem: next edit accepted", "command": ACCEPTED, "arguments": [payload]}


def _trace_id(value: Any) -> tuple[str, str]:
    """(uri, trace_id) from a command payload, or from a didShowInlineEdit item that carries one."""
    plain = _plain(value)
    if isinstance(plain, dict) and "item" in plain:
        plain = plain["item"]
    if isinstance(plain, dict) and isinstance(plain.get("command"), dict):
        arguments = plain["command"].get("arguments") or [None]
        plain = arguments[0]
    if isinstance(plain, list) and plain:
        plain = plain[0]
    if not isinstance(plain, dict):
        return "", ""
    return str(plain.get("uri", "")), str(plain.get("trace_id", ""))


def _accepted(ls: TandemServer, payload: Any) -> None:
    uri, trace_id = _trace_id(payload)
    document = ls.documents.get(uri)
    next_edits = _next_edits(ls)
    if next_edits is None or document is None or not trace_id:
        return
    last = next_edits.current(uri)
    cursor = (0, 0)
    if last is not None and last.trace_id == trace_id:
        edit = last.edit
        parts = edit.text.split("\n")
        cursor = (
            (edit.start_line, edit.start_char + len(edit.text))
            if len(parts) == 1
            else (edit.start_line + len(parts) - 1, len(parts[-1]))
        )
    if not next_edits.accepted(trace_id, uri, version=document.version, cursor=cursor):
        log.info("next edit %s accepted, but the document does not hold it: not chained", trace_id)


async def menu_item(ls: TandemServer, uri: str, position: types.Position) -> types.CompletionItem | None:
    """The next edit as a completion item, for menu clients (Helix), when it is on the cursor's line (an
    edit elsewhere cannot be a completion): its text edit covers the edit's range and the cursor."""
    document = ls.documents.get(uri)
    next_edits = _next_edits(ls)
    if next_edits is None or document is None:
        return None
    suggestion = await next_edits.for_version(uri, document.version)
    line, column = ls.documents.to_server(document, position)
    if suggestion is None or document.version != suggestion.version:
        return None
    edit = suggestion.edit
    if not edit.start_line == edit.end_line == line:
        return None
    content = document.buffer.line_content(line)
    low, high = min(edit.start_char, column), max(edit.end_char, column)
    new_text = content[low : edit.start_char] + edit.text + content[edit.end_char : high]
    result_line = (content[:low] + new_text + content[high:]).split("\n", 1)[0].strip()
    start, end = ls.documents.to_client(document, line, low), ls.documents.to_client(document, line, high)
    payload = _command(uri, suggestion)
    return types.CompletionItem(
        label=f"next edit: {result_line}"[:80],
        kind=types.CompletionItemKind.Event,
        detail="tandem next edit",
        # Clients filter by what lies between the range's start and the cursor: the item must match it.
        filter_text=content[low:column] + edit.text,
        sort_text="0001",
        insert_text_format=types.InsertTextFormat.PlainText,
        text_edit=types.TextEdit(range=types.Range(start=start, end=end), new_text=new_text),
        command=types.Command(title=payload["title"], command=ACCEPTED, arguments=payload["arguments"]),
    )


async def code_actions(ls: TandemServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """ "Apply next edit", as a versioned workspace edit (refused by the client if the document moved on)."""
    uri = params.text_document.uri
    document, result = await suggest(ls, uri, params.range.start)
    suggestion = result.suggestion
    if document is None or suggestion is None or suggestion.version != document.version:
        return []
    edit = types.TextEdit(range=_range(ls, document, suggestion), new_text=suggestion.edit.text)
    change = types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=suggestion.version),
        edits=[edit],
    )
    payload = _command(uri, suggestion)
    return [
        types.CodeAction(
            title=ACTION_TITLE,
            kind=types.CodeActionKind.QuickFix,
            edit=types.WorkspaceEdit(document_changes=[change]),
            command=types.Command(title=payload["title"], command=ACCEPTED, arguments=payload["arguments"]),
        )
    ]


def _uinteger(value: object) -> TypeGuard[int]:
    """An LSP uinteger (0 to 2^31 - 1), as lsprotocol checks typed positions."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


async def inline_edit(ls: TandemServer, params: Any) -> dict[str, Any]:
    plain = _plain(params)
    text_document = plain.get("textDocument") if isinstance(plain, dict) else None
    position = plain.get("position") if isinstance(plain, dict) else None
    # pygls has no type for this method: its params are checked here, and answered -32602 as typed ones
    # are (lsp.stdio logs a hostile client's bad params once).
    if not isinstance(text_document, dict) or not isinstance(position, dict):
        raise JsonRpcInvalidParams(f"{METHOD} takes textDocument and position")
    uri = str(text_document.get("uri", ""))
    line, character = position.get("line"), position.get("character")
    if not _uinteger(line) or not _uinteger(character):
        raise JsonRpcInvalidParams(f"{METHOD}: position must be {{line, character}}, whole numbers >= 0")
    client_position = types.Position(line=line, character=character)
    document = ls.documents.get(uri)
    asked = text_document.get("version")
    if document is not None and isinstance(asked, int) and asked != document.version:
        # The user typed on before this request was read: an answer would be for an older text.
        if (next_edits := _next_edits(ls)) is not None:
            next_edits.stale(document.path, ls.client_name, time.perf_counter_ns())
        return {"edits": []}
    document, result = await suggest(ls, uri, client_position)
    suggestion = result.suggestion
    if document is None or suggestion is None or suggestion.version != document.version:
        return {"edits": []}
    return {
        "edits": [
            {
                "text": suggestion.edit.text,
                "textDocument": {"uri": uri, "version": suggestion.version},
                "range": _CONVERTER.unstructure(_range(ls, document, suggestion)),
                "command": _command(uri, suggestion),
            }
        ]
    }


def did_show(ls: TandemServer, params: Any) -> None:
    _, trace_id = _trace_id(params)
    if (next_edits := _next_edits(ls)) is not None and trace_id:
        next_edits.shown(trace_id)


# pygls resolves a command handler's annotations at call time: `ls` stays unannotated because
# TandemServer is only imported for type checking here.
def accepted(ls, *args: Any) -> None:  # type: ignore[no-untyped-def]
    _accepted(ls, args[0] if args else None)


def dismissed(ls, *args: Any) -> None:  # type: ignore[no-untyped-def]
    _, trace_id = _trace_id(args[0] if args else None)
    if (next_edits := _next_edits(ls)) is not None and trace_id:
        next_edits.dismissed(trace_id)
