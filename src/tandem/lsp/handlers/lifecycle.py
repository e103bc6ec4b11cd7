"""initialize, initialized, shutdown, and workspace/didChangeConfiguration.

At initialize tandem negotiates the position encoding, reads its configuration layers, creates the one
shared HTTP client and the engine, and starts opening connections to the configured providers so the
first keystroke does not pay for TCP and TLS set-up.
"""

from __future__ import annotations

import logging
import os
import pathlib
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from lsprotocol import types

from tandem.completion.machine.containment import folder_refusal
from tandem.completion.providers.backends.factory import describe_model
from tandem.completion.providers.http import make_client
from tandem.completion.session import Session
from tandem.completion.spend import default_spend_path
from tandem.completion.workspace import WorkspaceIndex
from tandem.lsp.positions import PositionCodec
from tandem.lsp.shown import shown

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

log = logging.getLogger(__name__)


def _uri_path(uri: str) -> pathlib.Path | None:
    parsed = urlparse(uri)
    return pathlib.Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def _given_folders(params: types.InitializeParams) -> list[pathlib.Path]:
    """Every workspace folder the client names (the root URI, or the root path, when it names none)."""
    folders = [_uri_path(folder.uri) for folder in params.workspace_folders or ()]
    if not params.workspace_folders:
        folders = [_uri_path(params.root_uri)] if params.root_uri else []
        if not folders and params.root_path:
            folders = [pathlib.Path(params.root_path)]
    return [folder for folder in folders if folder is not None]


def checked_folders(given: list[pathlib.Path]) -> tuple[list[pathlib.Path], list[str]]:
    """The folders tandem may read and write in (normalised: no `..`), and a message for each refused one."""
    kept: list[pathlib.Path] = []
    refused: list[str] = []
    for folder in given:
        refusal = folder_refusal(folder)
        if refusal:
            refused.append(
                f"tandem: {shown(refusal)}; tandem will not read or write there. Open a project folder instead."
            )
        elif pathlib.Path(os.path.normpath(folder)) not in kept:
            kept.append(pathlib.Path(os.path.normpath(folder)))
    return kept, refused


async def _start_workspace(ls: TandemServer, index: WorkspaceIndex) -> None:
    _report(ls, await index.start())


def _report(ls: TandemServer, messages: list[str]) -> None:
    for message in messages:
        ls.notify_user(f"tandem configuration: {message}", types.MessageType.Warning)


def _started(ls: TandemServer, encoding: str) -> str:
    """The first log line: who serves what, with which models (never keys)."""
    models = ls.config.models
    described = [
        f"{role} model {describe_model(model)}" if model is not None else f"no {role} model"
        for role, model in (("fast", models.fast), ("accurate", models.accurate))
    ]
    root = ls.sources.workspace_root or "(no folder)"
    return f"tandem serving {ls.client_name or 'an editor'} ({encoding}) in {root}; " + ", ".join(described)


def register(server: TandemServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: TandemServer, params: types.InitializeParams) -> None:
        ls.client_name = params.client_info.name if params.client_info else ""
        ls.sources.client_name = ls.client_name  # whose settings channels the workspace can write
        folders, refused = checked_folders(_given_folders(params))
        ls.sources.workspace_root = folders[0] if folders else None
        ls.sources.workspace_folders = folders
        ls.refused_folders = refused
        ls.sources.set_initialization_options(params.initialization_options)

    @server.feature(types.INITIALIZED)
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
        _report(ls, [str(p) for p in problems] + session.configure(config))
        log.info("%s", _started(ls, str(encoding)))
        ls.spawn(session.warm())
        ls.spawn(_start_workspace(ls, workspace))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: TandemServer, params: types.DidChangeConfigurationParams) -> None:
        ls.sources.set_did_change(params.settings)
        config, problems = ls.sources.resolve()
        ls.config = config
        messages = [str(p) for p in problems]
        if ls.session is not None:
            messages += ls.session.configure(config)
            ls.spawn(ls.session.warm())
        _report(ls, messages)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(ls: TandemServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        """Folders added later are held to the same check; accepted ones join the workspace (their ignore
        files apply, edits may write there), removed ones leave it."""
        added = [path for path in (_uri_path(f.uri) for f in params.event.added) if path is not None]
        removed = {path for path in (_uri_path(f.uri) for f in params.event.removed) if path is not None}
        folders, refused = checked_folders(added)
        for message in refused:
            ls.notify_user(message, types.MessageType.Error)
        removed = {pathlib.Path(os.path.normpath(path)) for path in removed}
        current = [f for f in ls.sources.workspace_folders if f not in removed]
        ls.sources.workspace_folders = current + [f for f in folders if f not in current]
        if ls.session is not None and ls.session.workspace is not None:
            ls.session.workspace.set_folders(ls.sources.workspace_folders)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: TandemServer, params: None) -> None:
        await ls.aclose()
