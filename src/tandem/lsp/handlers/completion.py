"""textDocument/completion: the suggestion as a menu item (`lsp.completing` runs the completion), beside
the next edit on the cursor's line when there is one (`handlers.next_edit.menu_item`): Helix has no other
way to show either."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from tandem.lsp.completing import complete, replace_end
from tandem.lsp.handlers import next_edit
from tandem.lsp.handlers.completion_feedback import accepted_command

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

OPTIONS = types.CompletionOptions(trigger_characters=[".", "(", " ", "\n"], resolve_provider=False)


async def completion(ls: TandemServer, params: types.CompletionParams) -> types.CompletionList:
    invoked = params.context is None or params.context.trigger_kind == types.CompletionTriggerKind.Invoked
    request, result = await complete(ls, params.text_document.uri, params.position, kind="menu", invoked=invoked)
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
    end = replace_end(ls, request, result.text, params.position)
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
        command=accepted_command(request.uri, params.position, result),
    )
    return types.CompletionList(is_incomplete=result.streaming, items=[item, *extra])


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
