"""The workspace as one edit sees it: paths, current texts and versions, privacy, and the `WorkspaceEdit`.

`EditWorkspace` is the edit service's one interface to the editor (`completion.edit.service.Workspace`):
the open documents and the symbol index for the router, the files' current texts, `apply`
(`workspace/applyEdit` as the client's capabilities allow), progress lines and notices for the user.

Paths are what the model sees and the edits carry: POSIX, relative to the workspace root (the workspace
index's `relative`), absolute outside it. A file's current text is its open document's buffer, else the
file on disk; each read records the version it had (None for a file that is not open), and those are the
versions the `WorkspaceEdit` names, so an editor refuses an edit the user has typed past.

Nothing is read from disk through a link that leads out of the workspace, and nothing is written outside
the workspace folders (`completion.machine.containment`): a model's answer names paths, and a prompt-injected
model names `../../.bashrc`. Where an edit may write is `completion.machine.writes.write_decision`'s one
decision; `workspace_edit` applies it: a file that needs the user's word is written only as an annotated
change (`ChangeAnnotation.needsConfirmation`), and a client that cannot ask gets a refusal instead.

Columns go through the server's position codec (`ls.documents.codec`), never through string indexing.
"""

from __future__ import annotations

import pathlib
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tandem.completion.edit.file_edits import FileEdit, line_col
from tandem.completion.edit.service import Applied
from tandem.completion.gate import relative_path
from tandem.completion.machine.containment import Folders
from tandem.completion.machine.files import exists as lexists
from tandem.completion.machine.files import read_text
from tandem.completion.machine.writes import Write, WriteDecision, write_decision

if TYPE_CHECKING:
    from tandem.cache.symbols import SymbolIndex
    from tandem.completion.edit.types import EditProgress
    from tandem.lsp.documents import Document
    from tandem.lsp.server import TandemServer


# A file an edit reads from disk (one that is not open) is at most this large.
MAX_EDIT_FILE_BYTES = 8_000_000


class ProgressLine(Protocol):
    """Where an edit's progress lines go (the handler's work-done progress)."""

    def report(self, message: str) -> None: ...


class EditWorkspace:
    """The workspace as one edit drives it (`completion.edit.service.Workspace`): its reads, `apply`, and
    what the user is told; built on the event loop (it snapshots the open documents). `label` names the
    edit in the editor's undo history; `progress` takes its progress lines."""

    def __init__(self, ls: TandemServer, *, label: str = "", progress: ProgressLine | None = None) -> None:
        self._ls = ls
        self._label = label
        self._progress = progress
        self.index = ls.session.workspace if ls.session is not None else None
        self.root = self.index.root if self.index is not None else ls.sources.workspace_root
        self.folders = self.index.folders if self.index is not None else Folders(ls.sources.workspace_folders)
        documents: Mapping[str, Document] = ls.documents.all()
        self._open_by_path = {self.path_of(uri): doc for uri, doc in documents.items()}
        # The version of each file when its text was last read by `current` (None: not open).
        self.versions: dict[str, int | None] = {}

    # -- paths ----------------------------------------------------------------------------------

    def path_of(self, uri: str) -> str:
        return relative_path(uri, self.root)

    def uri_of(self, path: str) -> str:
        doc = self._open_by_path.get(path)
        if doc is not None:
            return doc.uri  # the client's own spelling of it
        return self.file_of(path).as_uri()

    def file_of(self, path: str) -> pathlib.Path:
        candidate = pathlib.Path(path)
        if candidate.is_absolute() or self.root is None:
            return candidate
        return self.root / candidate

    def write_decision(self, path: str, *, creates: bool = False) -> WriteDecision:
        """The machine's one decision on writing `path` (`completion.machine.writes`): allowed, with the
        user's confirmation (when this client can ask for it), or never. `creates`: the answer makes it anew
        (the model was not shown it)."""
        file = self.file_of(path)
        shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)  # a model's path: no control bytes
        opened = path in self._open_by_path
        exists = opened or lexists(file)
        return write_decision(
            file,
            folders=self.folders,
            shown=shown,
            shown_to_model=not creates,
            exists=exists,
            open_outside=opened,
            can_confirm=self.can_confirm(),
        )

    def can_confirm(self) -> bool:
        """The client can ask the user to confirm a change (`changeAnnotationSupport`, with documentChanges)."""
        caps = self._ls.client_capabilities.workspace
        edit_caps = caps.workspace_edit if caps else None
        return bool(edit_caps and edit_caps.change_annotation_support is not None and edit_caps.document_changes)

    def write_refusal(self, path: str, *, creates: bool = False) -> str:
        """ "" if an edit may write `path` (perhaps after the user confirms it), else a message naming it."""
        decision = self.write_decision(path, creates=creates)
        return decision.reason if decision.write is Write.REFUSE else ""

    def symbols(self) -> SymbolIndex | None:
        return self.index.symbols if self.index is not None else None

    # -- texts ----------------------------------------------------------------------------------

    def open_texts(self) -> dict[str, str]:
        """{path: current text} of the open documents the gate allows (on the loop: buffers change under
        typing). They feed the router's name lookup and working diff, which stay on this machine."""
        gate = self.index.gate if self.index is not None else None
        return {
            path: doc.buffer.text()
            for path, doc in self._open_by_path.items()
            if gate is None or gate.document(doc.uri)
        }

    def read_text(self, path: str) -> str | None:
        """`path`'s current text, or None if unreadable (whether it may be shown to a model is the gate's
        decision, in the edit flow)."""
        return self._text(path)

    def current(self, paths: Collection[str]) -> dict[str, str]:
        """The current texts of `paths` (absent when unknown), recording the version each had."""
        texts: dict[str, str] = {}
        for path in paths:
            doc = self._live(path)
            text = doc.buffer.text() if doc is not None else self._disk(path)
            self.versions[path] = doc.version if doc is not None else None
            if text is not None:
                texts[path] = text
        return texts

    def _live(self, path: str) -> Document | None:
        doc = self._open_by_path.get(path)
        # Re-read from the store: the document may have been closed (or reopened) since the snapshot.
        return self._ls.documents.get(doc.uri) if doc is not None else None

    def _text(self, path: str) -> str | None:
        doc = self._live(path)
        return doc.buffer.text() if doc is not None else self._disk(path)

    def _disk(self, path: str) -> str | None:
        # Inside the workspace only (a link out of it, or a path a model made up that leaves it, is not
        # read), a regular file, bounded: `machine.files`.
        within = self.folders if self.folders else None
        if self.index is not None:
            self.index.ensure_rules_for(path)  # the gate judges it next: with the ignore files above it
        return read_text(self.file_of(path), max_bytes=MAX_EDIT_FILE_BYTES, within=within)

    def changed_since_read(self) -> bool:
        """True if an open file's version moved since `current` last read it."""
        for path, version in self.versions.items():
            doc = self._live(path)
            if doc is not None and doc.version != version:
                return True
        return False

    # -- telling the user -----------------------------------------------------------------------

    def progress(self, progress: EditProgress) -> None:
        if self._progress is not None:
            self._progress.report(progress.message)

    def notify(self, message: str) -> None:
        self._ls.notify_user(message)

    # -- the workspace edit ---------------------------------------------------------------------

    async def apply(self, edits: Sequence[FileEdit], current: Mapping[str, str]) -> Applied:
        """`workspace/applyEdit` of `edits` (over `current`), as the client's capabilities allow; nothing is
        sent if any path the edit writes may not be written (`write_refusal`). A refusal the user's typing
        cannot explain (no open file moved since `current` read it) is final."""
        refused = sorted({r for e in edits if (r := self.write_refusal(e.path, creates=e.creates))})
        if refused:
            return Applied(applied=False, why="; ".join(refused), final=True)
        workspace_caps = self._ls.client_capabilities.workspace
        edit_caps = workspace_caps.workspace_edit if workspace_caps else None
        # Neovim takes documentChanges without saying so; it does say it takes resource operations.
        document_changes = bool(edit_caps and (edit_caps.document_changes or edit_caps.resource_operations))
        can_create = bool(edit_caps and edit_caps.resource_operations and "create" in edit_caps.resource_operations)
        if any(e.creates for e in edits) and not can_create:
            why = "it creates a file, and this editor cannot create files for a language server"
            return Applied(applied=False, why=why, final=True)
        edit = self.workspace_edit(edits, current, document_changes=document_changes)
        try:
            result = await self._ls.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label=f"tandem: {self._label[:60]}")
            )
        except JsonRpcException as error:
            # Some editors (eglot) refuse with an error reply rather than `applied: false`.
            return Applied(applied=False, why=f"the editor refused it: {error.message}", final=True)
        why = result.failure_reason or ""
        return Applied(applied=result.applied, why=why, final=not result.applied and not self.changed_since_read())

    def workspace_edit(
        self, edits: Sequence[FileEdit], current: Mapping[str, str], *, document_changes: bool
    ) -> types.WorkspaceEdit:
        """`edits` (over `current`) as a WorkspaceEdit: versioned `documentChanges` (with a CreateFile
        for a new file) when the client takes them, else plain `changes`."""
        by_path: dict[str, list[types.TextEdit]] = {}
        created: list[str] = []
        # Files the user must confirm: {path: annotation id}, each annotation saying why.
        confirm: dict[str, str] = {}
        annotations: dict[str, types.ChangeAnnotation] = {}
        for edit in edits:
            decision = self.write_decision(edit.path, creates=edit.creates)
            if decision.write is Write.REFUSE:
                raise ValueError(f"refusing to write: {decision.reason}")  # `apply` checks write_refusal first
            if decision.write is Write.CONFIRM and edit.path not in confirm:
                confirm[edit.path] = f"tandem.confirm.{len(confirm)}"
                annotations[confirm[edit.path]] = types.ChangeAnnotation(
                    label=f"tandem: {decision.reason}", needs_confirmation=True, description=decision.reason
                )
        if confirm and not document_changes:
            raise ValueError("refusing to write: a change that needs confirmation needs documentChanges")
        for edit in sorted(edits, key=lambda e: (e.path, e.start)):
            text = current.get(edit.path, "")
            if edit.creates and edit.path not in current and edit.path not in created:
                created.append(edit.path)
            by_path.setdefault(edit.path, []).append(
                types.TextEdit(
                    range=types.Range(start=self._position(text, edit.start), end=self._position(text, edit.end)),
                    new_text=edit.new_text,
                )
            )
        if not document_changes:
            return types.WorkspaceEdit(
                changes={self.uri_of(path): list(text_edits) for path, text_edits in by_path.items()}
            )
        changes: list[types.TextDocumentEdit | types.CreateFile | types.RenameFile | types.DeleteFile] = []
        for path, text_edits in by_path.items():
            uri = self.uri_of(path)
            annotation = confirm.get(path)
            if path in created:
                options = types.CreateFileOptions(ignore_if_exists=True)
                changes.append(types.CreateFile(uri=uri, options=options, annotation_id=annotation))
            listed: list[types.TextEdit | types.AnnotatedTextEdit] = list(text_edits)
            if annotation is not None:
                listed = [
                    types.AnnotatedTextEdit(range=e.range, new_text=e.new_text, annotation_id=annotation)
                    for e in text_edits
                ]
            changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=self.versions.get(path)
                    ),
                    edits=listed,
                )
            )
        return types.WorkspaceEdit(document_changes=changes, change_annotations=annotations or None)

    def _position(self, text: str, offset: int) -> types.Position:
        line, column = line_col(text, offset)
        start = offset - column
        end = text.find("\n", start)
        content = text[start : len(text) if end < 0 else end].rstrip("\r")
        return types.Position(line=line, character=self._ls.documents.codec.to_client(content, column))
