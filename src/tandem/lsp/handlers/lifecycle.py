"""initialize, initialized, shutdown, and workspace/didChangeConfiguration.

At initialize tandem negotiates the position encoding, reads its configuration layers, creates the one
shared HTTP client and the engine, and starts opening connections to the configured providers so the
first keystroke does not pay for TCP and TLS set-up.
"""

from __future__ import annotations

import logging
import pathlib
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from lsprotocol import types

from tandem.completion.providers.backends.factory import describe_model
from tandem.completion.providers.http import make_client
from tandem.completion.session import Session
from tandem.completion.spend import default_spend_path
from tandem.completion.workspace import WorkspaceIndex
from tandem.lsp.positions import PositionCodec

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

log = logging.getLogger(__name__)


def _root(params: types.InitializeParams) -> pathlib.Path | None:
    uri = None
    if params.workspace_folders:
        uri = params.workspace_folders[0].uri
    elif params.root_uri:
        uri = params.root_uri
    if uri:
        parsed = urlparse(uri)
        return pathlib.Path(unquote(parsed.path)) if parsed.scheme == "file" else None
    return pathlib.Path(params.root_path) if params.root_path else None


def _folders(params: types.InitializeParams) -> list[pathlib.Path]:
    """Every workspace folder (edits may write inside any of them); the root alone when none are sent."""
    folders = [urlparse(folder.uri) for folder in params.workspace_folders or ()]
    paths = [pathlib.Path(unquote(f.path)) for f in folders if f.scheme == "file"]
    root = _root(params)
    return paths or ([root] if root is not None else [])


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
        ls.sources.workspace_root = _root(params)
        ls.sources.workspace_folders = _folders(params)
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

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: TandemServer, params: None) -> None:
        await ls.aclose()
