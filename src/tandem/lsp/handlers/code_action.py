"""textDocument/codeAction: the one place code actions are assembled, from the next-edit offer
(`handlers.next_edit.code_actions`: "Apply next edit") and the edit offers below, which run `tandem.edit`
(`handlers.edits`).

Edits are offered on a selection: preset instructions (for clients that cannot prompt, such as Helix)
and, in VS Code and Neovim, "Edit selection with tandem..." (the plugin's own prompt command); on a
diagnostic without a selection, "tandem: Fix"; on a bare cursor, nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tandem.lsp.handlers import next_edit
from tandem.lsp.handlers.edits import EDIT_COMMAND, PRESETS

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

OPTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.RefactorRewrite, types.CodeActionKind.QuickFix],
    resolve_provider=False,
)
# The VS Code extension's own command: it prompts for the instruction, then sends tandem.edit.
PROMPT_COMMAND = "tandem.editSelection"
# Clients whose tandem plugin implements PROMPT_COMMAND (asks for an instruction, then runs tandem.edit):
# the VS Code extension and the Neovim plugin. Others get the presets only.
PROMPTING_CLIENTS = frozenset(
    {"Visual Studio Code", "Visual Studio Code - Insiders", "code-server", "VSCodium", "Neovim"}
)


async def code_action(ls: TandemServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    return await next_edit.code_actions(ls, params) + _code_actions(ls, params)


def _whole_lines(ls: TandemServer, document: Any, first: int, last: int) -> types.Range:
    return types.Range(
        start=types.Position(line=first, character=0),
        end=ls.documents.to_client(document, last, len(document.buffer.line_content(last))),
    )


def _code_actions(ls: TandemServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """Edits offered where they make sense: on a selection (every preset, and the prompt where the client
    can ask), and on a diagnostic without a selection ("Fix" it). A bare cursor gets nothing, so editors
    show no lightbulb on every line."""
    document = ls.documents.get(params.text_document.uri)
    if document is None or ls.session is None or not ls.session.gate.document(document.uri):
        return []  # nothing of a refused document would be sent: offer no edit of it
    wanted = [str(kind) for kind in params.context.only or []]

    def offered(kind: types.CodeActionKind) -> bool:
        return not wanted or any(str(kind) == w or str(kind).startswith(w + ".") for w in wanted)

    where = params.range
    if where.start == where.end:
        diagnostics = params.context.diagnostics
        if not diagnostics or not offered(types.CodeActionKind.QuickFix):
            return []
        first = min(d.range.start.line for d in diagnostics)
        last = max(d.range.end.line for d in diagnostics)
        problems = "; ".join(dict.fromkeys(d.message.strip() for d in diagnostics if d.message.strip()))
        lines = _whole_lines(ls, document, first, last)
        _offered(ls, document.uri, lines)
        argument = {
            "uri": document.uri,
            "range": _span(lines),
            "instruction": f"Fix this problem: {problems}" if problems else PRESETS[0][1],
        }
        command = types.Command(title="tandem: Fix", command=EDIT_COMMAND, arguments=[argument])
        fix = types.CodeAction(
            title="tandem: Fix", kind=types.CodeActionKind.QuickFix, diagnostics=list(diagnostics), command=command
        )
        return [fix]
    if not offered(types.CodeActionKind.RefactorRewrite):
        return []
    _offered(ls, document.uri, where)
    span = _span(where)
    actions: list[types.CodeAction] = []
    if ls.client_name in PROMPTING_CLIENTS:
        title = "Edit selection with tandem..."
        command = types.Command(title=title, command=PROMPT_COMMAND, arguments=[{"uri": document.uri, "range": span}])
        actions.append(types.CodeAction(title=title, kind=types.CodeActionKind.RefactorRewrite, command=command))
    for title, instruction in PRESETS:
        argument = {"uri": document.uri, "range": span, "instruction": instruction}
        command = types.Command(title=f"tandem: {title}", command=EDIT_COMMAND, arguments=[argument])
        actions.append(
            types.CodeAction(title=f"tandem: {title}", kind=types.CodeActionKind.RefactorRewrite, command=command)
        )
    return actions


def _offered(ls: TandemServer, uri: str, where: types.Range) -> None:
    """An edit of `where` is offered: the router's read of those lines' history starts now (the lines an edit
    of this range routes with: a last line selected in part counts)."""
    if ls.session is not None:
        ls.session.edit_offered(uri, where.start.line, where.end.line + (where.end.character > 0))


def _span(where: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": where.start.line, "character": where.start.character},
        "end": {"line": where.end.line, "character": where.end.character},
    }
