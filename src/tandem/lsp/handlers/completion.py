"""textDocument/inlineCompletion (ghost text) and textDocument/completion (menu items).

Both become one `CompletionRequest` for `Engine.complete`; this module only converts positions (through
the negotiated codec) and shapes the answer for each method. What may be sent is not decided here: the
engine asks the gate (`completion.gate`) for every request, accepted-command speculation included.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tandem.completion.inline.closers import replaced_closers
from tandem.completion.inline.request import CompletionRequest, CompletionResult
from tandem.lsp.handlers import next_edit
from tandem.lsp.requests import completion_request
from tandem.lsp.requests import plain as payload
from tandem.lsp.status import Status

if TYPE_CHECKING:
    from tandem.lsp.documents import Document
    from tandem.lsp.server import TandemServer

log = logging.getLogger(__name__)


def _request(
    ls: TandemServer,
    document: Document,
    position: types.Position,
    *,
    kind: str,
    invoked: bool,
    received_ns: int,
) -> CompletionRequest:
    line, column = ls.documents.to_server(document, position)
    return completion_request(
        document,
        line,
        column,
        client=ls.client_name,
        kind="inline" if kind == "inline" else "completion",
        invoked=invoked,
        received_ns=received_ns,
    )


async def _complete(
    ls: TandemServer, uri: str, position: types.Position, *, kind: str, invoked: bool
) -> tuple[CompletionRequest | None, CompletionResult]:
    received_ns = time.perf_counter_ns()
    ls.started_requests.add(ls.protocol.msg_id)
    document = ls.documents.get(uri)
    if document is None:
        log.warning("completion requested for a document that is not open: %s", uri)
        return None, CompletionResult.empty()
    if ls.session is None:
        return None, CompletionResult.empty()
    engine = ls.session.inline
    request = _request(ls, document, position, kind=kind, invoked=invoked, received_ns=received_ns)
    result = await engine.complete(request)
    if result.notice:
        ls.notify_user(result.notice)
    ls.send_status(ls.with_recovery(Status.of_completion(result, engine.live_figures())))
    return request, result


def _word_start(line: str, column: int) -> int:
    start = column
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
        start -= 1
    return start


def _documentation(ls: TandemServer, language: str, text: str) -> types.MarkupContent | str:
    """The full suggestion for the item's detail pane, as markdown only where the client renders it."""
    caps = ls.client_capabilities.text_document
    item = caps.completion.completion_item if caps and caps.completion else None
    if item and item.documentation_format and types.MarkupKind.Markdown in item.documentation_format:
        return types.MarkupContent(kind=types.MarkupKind.Markdown, value=f"```{language}\n{text}\n```")
    return text


def _replace_end(ls: TandemServer, request: CompletionRequest, text: str, cursor: types.Position) -> types.Position:
    """Where the suggestion's range ends: past the closers the editor auto-inserted after the cursor when
    the suggestion holds them (completion.inline.closers), else at the cursor."""
    document = ls.documents.get(request.uri)
    if document is None or document.version != request.version:
        return cursor  # the document moved on: the client drops this answer
    replaced = replaced_closers(text, request.line_after())
    return ls.documents.to_client(document, request.line, request.character + replaced)


ACCEPTED = "tandem.accepted"


def _accepted_command(uri: str, position: types.Position, result: CompletionResult) -> types.Command:
    """Run by the editor after the user accepts the suggestion: tandem speculates on what comes next."""
    payload = {
        "uri": uri,
        "position": {"line": position.line, "character": position.character},
        "text": result.text,
        "trace_id": result.trace_id,
    }
    return types.Command(title="tandem: accepted", command=ACCEPTED, arguments=[payload])


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
    request = _request(ls, document, client_position, kind="inline", invoked=False, received_ns=time.perf_counter_ns())
    engine.speculate(request, text, after_insert=True)


def register(server: TandemServer) -> None:
    # Long only because it registers five handlers, each a short function of its own (pygls binds a feature
    # by decorating a function with the server at hand, as its examples do).
    # pygls resolves a command handler's annotations at call time: `ls` stays unannotated because
    # TandemServer is only imported for type checking here.
    @server.command(ACCEPTED)
    def accepted(ls, *args: Any) -> None:  # type: ignore[no-untyped-def]
        _on_accepted(ls, args[0] if args else None)

    @server.feature("textDocument/didShowCompletion")
    def did_show(ls: TandemServer, params: Any) -> None:
        """Copilot-style notification: a suggestion is on screen (tandem already speculated on it)."""

    @server.feature("textDocument/didPartiallyAcceptCompletion")
    def did_partially_accept(ls: TandemServer, params: Any) -> None:
        """Copilot-style notification: the user accepted part of a suggestion (a word, a line)."""
        plain = payload(params)
        item = plain.get("item") if isinstance(plain, dict) else None
        command = item.get("command") if isinstance(item, dict) else None
        arguments = command.get("arguments") if isinstance(command, dict) else None
        length = plain.get("acceptedLength") if isinstance(plain, dict) else None
        if arguments and isinstance(length, int):
            _on_accepted(ls, arguments[0], partial_chars=length)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(ls: TandemServer, params: types.InlineCompletionParams) -> types.InlineCompletionList:
        invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
        request, result = await _complete(ls, params.text_document.uri, params.position, kind="inline", invoked=invoked)
        if request is None or not result.text:
            return types.InlineCompletionList(items=[])
        here = types.Range(start=params.position, end=_replace_end(ls, request, result.text, params.position))
        item = types.InlineCompletionItem(
            insert_text=result.text,
            range=here,
            command=_accepted_command(params.text_document.uri, params.position, result),
        )
        return types.InlineCompletionList(items=[item])

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[".", "(", " ", "\n"], resolve_provider=False),
    )
    async def completion(ls: TandemServer, params: types.CompletionParams) -> types.CompletionList:
        invoked = params.context is None or params.context.trigger_kind == types.CompletionTriggerKind.Invoked
        request, result = await _complete(ls, params.text_document.uri, params.position, kind="menu", invoked=invoked)
        # A next edit on the cursor's line is offered in the menu too (Helix has no other way to show one).
        next_edit_item = await next_edit.menu_item(ls, params.text_document.uri, params.position)
        extra = [next_edit_item] if next_edit_item is not None else []
        if request is None or not result.text:
            return types.CompletionList(is_incomplete=result.streaming, items=extra)
        document = ls.documents.get(request.uri)
        assert document is not None
        # Menus filter by the word before the cursor, so the edit replaces that word with word + completion.
        line = request.document.line_content(request.line)
        start_column = _word_start(line, request.character)
        word = line[start_column : request.character]
        start = ls.documents.to_client(document, request.line, start_column)
        end = _replace_end(ls, request, result.text, params.position)
        first_line = result.text.split("\n", 1)[0]
        if first_line.strip():
            label = (word + first_line).strip()
        else:  # the suggestion is the next line (the cursor's line is complete): say so
            next_line = result.text.strip().split("\n", 1)[0]
            label = f"{word}↵ {next_line}".strip()
        item = types.CompletionItem(
            label=label[:80],
            kind=types.CompletionItemKind.Text,
            detail="tandem",
            documentation=_documentation(ls, request.language, word + result.text),
            filter_text=word + result.text,
            sort_text="0000",
            preselect=True,
            insert_text_format=types.InsertTextFormat.PlainText,
            text_edit=types.TextEdit(range=types.Range(start=start, end=end), new_text=word + result.text),
            command=_accepted_command(request.uri, params.position, result),
        )
        return types.CompletionList(is_incomplete=result.streaming, items=[item, *extra])
