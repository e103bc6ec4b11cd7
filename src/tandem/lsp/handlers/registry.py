"""Every LSP method and command tandem answers, and the module whose function answers it: the one table.

Adding a method is one module in `lsp/handlers/` with a named handler `(ls, params)`, and one line here.
pygls dispatches each message to the function registered for its method (its built-in lifecycle and sync
handlers call these after their own work; `handlers.text_document_sync.DocumentSync` replaces its
document copies); `workspace/executeCommand` dispatches to `COMMANDS`. The order of `COMMANDS` is the
order the initialize result lists them in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tandem.lsp.handlers import (
    code_action,
    completion,
    completion_feedback,
    configuration,
    edits,
    health,
    inline_completion,
    lifecycle,
    next_edit,
    text_document_sync,
    warm,
    workspace_folders,
)

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

Handler = Callable[..., Any]

# (LSP method, handler, the options its capability is announced with, if any)
METHODS: tuple[tuple[str, Handler, Any], ...] = (
    (types.INITIALIZE, lifecycle.initialize, None),
    (types.INITIALIZED, lifecycle.initialized, None),
    (types.SHUTDOWN, lifecycle.shutdown, None),
    (types.WORKSPACE_DID_CHANGE_CONFIGURATION, configuration.did_change_configuration, None),
    (types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, workspace_folders.did_change_workspace_folders, None),
    (types.TEXT_DOCUMENT_DID_OPEN, text_document_sync.did_open, None),
    (types.TEXT_DOCUMENT_DID_SAVE, text_document_sync.did_save, None),
    (types.TEXT_DOCUMENT_DID_CHANGE, text_document_sync.did_change, None),
    (types.TEXT_DOCUMENT_DID_CLOSE, text_document_sync.did_close, None),
    (types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_completion.inline_completion, inline_completion.OPTIONS),
    (types.TEXT_DOCUMENT_COMPLETION, completion.completion, completion.OPTIONS),
    (completion_feedback.DID_SHOW, completion_feedback.did_show, None),
    (completion_feedback.DID_PARTIALLY_ACCEPT, completion_feedback.did_partially_accept, None),
    (types.TEXT_DOCUMENT_CODE_ACTION, code_action.code_action, code_action.OPTIONS),
    (next_edit.METHOD, next_edit.inline_edit, None),
    (next_edit.DID_SHOW, next_edit.did_show, None),
    (health.METHOD, health.health, None),
    (warm.METHOD, warm.warm, None),
)

# (workspace/executeCommand command, handler)
COMMANDS: tuple[tuple[str, Handler], ...] = (
    (completion_feedback.ACCEPTED, completion_feedback.accepted),
    (edits.EDIT_COMMAND, edits.tandem_edit),
    (next_edit.ACCEPTED, next_edit.accepted),
    (next_edit.DISMISSED, next_edit.dismissed),
)


def register(server: TandemServer) -> None:
    """Every handler of the table on `server` (`lsp.server.build_server` calls this once per server)."""
    for method, handler, options in METHODS:
        server.feature(method, options)(handler)
    for command, handler in COMMANDS:
        server.command(command)(handler)
