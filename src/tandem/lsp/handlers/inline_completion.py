"""textDocument/inlineCompletion: ghost text at the cursor (`lsp.completing` runs the completion), one item
whose range covers the closers it replaces and whose command reports its acceptance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from tandem.lsp.completing import complete, replace_end
from tandem.lsp.handlers.completion_feedback import accepted_command

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

OPTIONS = types.InlineCompletionOptions()


async def inline_completion(ls: TandemServer, params: types.InlineCompletionParams) -> types.InlineCompletionList:
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    request, result = await complete(ls, params.text_document.uri, params.position, kind="inline", invoked=invoked)
    if request is None or not result.text:
        return types.InlineCompletionList(items=[])
    here = types.Range(start=params.position, end=replace_end(ls, request, result.text, params.position))
    item = types.InlineCompletionItem(
        insert_text=result.text,
        range=here,
        command=accepted_command(params.text_document.uri, params.position, result),
    )
    return types.InlineCompletionList(items=[item])
