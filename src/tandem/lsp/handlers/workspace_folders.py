"""workspace/didChangeWorkspaceFolders, and the check every workspace folder passes (the ones named at
initialize too): a folder tandem may not read or write in is refused with a message the user sees."""

from __future__ import annotations

import os
import pathlib
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from lsprotocol import types

from tandem.completion.machine.containment import folder_refusal
from tandem.lsp.shown import shown

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer


def uri_path(uri: str) -> pathlib.Path | None:
    parsed = urlparse(uri)
    return pathlib.Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def given_folders(params: types.InitializeParams) -> list[pathlib.Path]:
    """Every workspace folder the client names (the root URI, or the root path, when it names none)."""
    folders = [uri_path(folder.uri) for folder in params.workspace_folders or ()]
    if not params.workspace_folders:
        folders = [uri_path(params.root_uri)] if params.root_uri else []
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


def did_change_workspace_folders(ls: TandemServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    """Folders added later are held to the same check; accepted ones join the workspace (their ignore
    files apply, edits may write there), removed ones leave it."""
    added = [path for path in (uri_path(f.uri) for f in params.event.added) if path is not None]
    removed = {path for path in (uri_path(f.uri) for f in params.event.removed) if path is not None}
    folders, refused = checked_folders(added)
    for message in refused:
        ls.notify_user(message, types.MessageType.Error)
    removed = {pathlib.Path(os.path.normpath(path)) for path in removed}
    current = [f for f in ls.sources.workspace_folders if f not in removed]
    ls.sources.workspace_folders = current + [f for f in folders if f not in current]
    if ls.session is not None and ls.session.workspace is not None:
        ls.session.workspace.set_folders(ls.sources.workspace_folders)
