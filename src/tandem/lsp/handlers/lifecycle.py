"""initialize, initialized, shutdown (exit is `lsp.server.TandemProtocol.lsp_exit`: it leaves the process).

At initialize tandem reads who the client is, its workspace folders (`handlers.workspace_folders` checks
them) and its initialization options; at initialized it resolves the configuration layers, creates the one
shared HTTP client and the session, and starts opening connections to the configured providers so the
first keystroke does not pay for TCP and TLS set-up.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from tandem.completion.observe.spend import default_spend_path
from tandem.completion.providers.backends.factory import describe_model
from tandem.completion.providers.http import make_client
from tandem.completion.session import Session
from tandem.completion.workspace import WorkspaceIndex
from tandem.lsp import heap
from tandem.lsp.handlers.configuration import report
from tandem.lsp.handlers.workspace_folders import checked_folders, given_folders
from tandem.lsp.positions import PositionCodec

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

log = logging.getLogger(__name__)


def initialize(ls: TandemServer, params: types.InitializeParams) -> None:
    ls.client_name = params.client_info.name if params.client_info else ""
    ls.sources.client_name = ls.client_name  # whose settings channels the workspace can write
    folders, refused = checked_folders(given_folders(params))
    ls.sources.workspace_root = folders[0] if folders else None
    ls.sources.workspace_folders = folders
    ls.refused_folders = refused
    ls.sources.set_initialization_options(params.initialization_options)


def initialized(ls: TandemServer, params: types.InitializedParams) -> None:
    # pygls negotiated the encoding (the client's first choice it supports) while answering initialize.
    encoding = ls.server_capabilities.position_encoding or types.PositionEncodingKind.Utf16
    ls.documents.codec = PositionCodec(str(encoding))
    config, problems = ls.sources.resolve()
    ls.config = config
    workspace = WorkspaceIndex(
        root=ls.sources.workspace_root,
        folders=ls.sources.workspace_folders,
        context=config.context,
        privacy=config.privacy,
    )
    ls.session = session = Session(
        config=config,
        client=make_client(),
        tracer=ls.make_tracer(),
        documents=ls.documents.version_and_lines,
        history=ls.edit_history,
        workspace=workspace,
        spend_path=default_spend_path(),
    )
    session.on_notice(ls.announce)
    for message in ls.refused_folders:
        ls.notify_user(message, types.MessageType.Error)
    report(ls, [str(p) for p in problems] + session.configure(config))
    log.info("%s", _started(ls, str(encoding)))
    ls.spawn(session.warm())
    ls.spawn(_start_workspace(ls, workspace))


async def shutdown(ls: TandemServer, params: None) -> None:
    await ls.aclose()


async def _start_workspace(ls: TandemServer, index: WorkspaceIndex) -> None:
    report(ls, await index.start())
    heap.trim_now()  # the scan freed the texts it read: their pages back to the system (`lsp.heap`)


def _started(ls: TandemServer, encoding: str) -> str:
    """The first log line: who serves what, with which models (never keys)."""
    models = ls.config.models
    described = [
        f"{role} model {describe_model(model)}" if model is not None else f"no {role} model"
        for role, model in (("fast", models.fast), ("accurate", models.accurate))
    ]
    root = ls.sources.workspace_root or "(no folder)"
    return f"tandem serving {ls.client_name or 'an editor'} ({encoding}) in {root}; " + ", ".join(described)
