"""One edit, from the request to the user's files: `Edits.run(request, workspace)`. No LSP here.

    gather the router's inputs -> `EditFlow.run` -> `Workspace.apply` -> rebase and apply again when the
    editor refused because the user typed -> close the trace record

The edit drives the workspace through one small interface, `Workspace` (the LSP edge's
`lsp.edit_workspace.EditWorkspace` is one): what is open, the symbol index, the files' current texts, apply
the edits, and tell the user (progress, a notice once). Everything else an edit does happens here, in the
model side's own room.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from tandem.completion.edit.file_edits import EditConflict, FileEdit
from tandem.completion.edit.flow import EditFlow
from tandem.completion.edit.rebase import rebase_edits
from tandem.completion.edit.types import EditInputs, EditOutcome, EditProgress, EditRequest
from tandem.completion.routing.inputs import RouterInputsCache, RouterInputsQuery, gather_router_inputs
from tandem.completion.routing.router import RouteInputs
from tandem.completion.routing.workspace_symbols import IndexLookup, candidate_names

if TYPE_CHECKING:
    from tandem.cache.symbols import SymbolIndex

# Times an edit is rebased again when the editor refuses it because the user typed in the last instant.
APPLY_TRIES = 3


@dataclass(frozen=True, kw_only=True)
class Applied:
    """What the workspace said to one `Workspace.apply`."""

    applied: bool
    why: str = ""
    # Nothing can change the answer (a path that may not be written, an editor that cannot create files or
    # answered with an error, no typing since the texts were read): no rebase, no retry.
    final: bool = False


class Workspace(Protocol):
    """The workspace as one edit drives it (the LSP edge's `lsp.edit_workspace.EditWorkspace` is one).
    Paths are workspace-relative, as the model sees them and the edits carry them."""

    root: pathlib.Path | None

    def open_texts(self) -> dict[str, str]:
        """{path: current text} of the open documents that may be read (for the router, on this machine)."""
        ...

    def symbols(self) -> SymbolIndex | None: ...

    def current(self, paths: Collection[str]) -> dict[str, str]:
        """The current texts of `paths` (absent when unknown); the versions read are what `apply` names."""
        ...

    def read_text(self, path: str) -> str | None:
        """Another file's current text, to show the model, or None (unreadable)."""
        ...

    async def apply(self, edits: Sequence[FileEdit], current: Mapping[str, str]) -> Applied:
        """Write `edits` (over the texts `current`), or say why not: a path that may not be written is
        refused before anything is sent."""
        ...

    def progress(self, progress: EditProgress) -> None: ...

    def notify(self, message: str) -> None:
        """Tell the user something once (a model that is down or missing)."""
        ...


@dataclass(frozen=True, kw_only=True)
class EditResult:
    outcome: EditOutcome
    applied: bool
    # Why nothing was applied (the outcome's own message when no model's answer could be used).
    why: str = ""


class Edits:
    """Runs edits for the session: the flow (models, router, checks) plus gathering and applying."""

    def __init__(self, flow: EditFlow, *, router_inputs: RouterInputsCache | None = None) -> None:
        self.flow = flow
        # The router's git reads, cached per file and HEAD (a fresh cache when none is shared).
        self.router_inputs = router_inputs or RouterInputsCache()

    async def run(self, request: EditRequest, workspace: Workspace) -> EditResult:
        """The whole edit; cancelling it stops the model stream, and the trace record says so."""
        inputs = await gather_inputs(request, workspace, self.router_inputs)
        outcome = await self.flow.run(request, inputs, on_progress=workspace.progress)
        for notice in outcome.notices:
            workspace.notify(notice)
        if not outcome.ok:
            self.flow.finish(outcome)
            return EditResult(outcome=outcome, applied=False, why=outcome.message)
        try:
            applied, why = await _apply(workspace, outcome)
        except asyncio.CancelledError:
            self.flow.finish(outcome, applied=False, error="cancelled")
            raise
        self.flow.finish(outcome, applied=applied, error=why)
        return EditResult(outcome=outcome, applied=applied, why=why)


async def gather_inputs(request: EditRequest, workspace: Workspace, cache: RouterInputsCache) -> EditInputs:
    """The router's one input (`RouteInputs`), gathered once, off the loop: the symbol lookup (reading the
    indexed texts once), and the working diff, the file's and the selected lines' history and the
    repository's last commits read from git under one deadline (`routing.inputs`). The open documents are
    snapshot on the loop first (buffers change under typing)."""
    text, start, end = request.text, request.start, request.end
    overlay = workspace.open_texts()
    lookup = IndexLookup(workspace.symbols(), overlay)
    names = candidate_names(text[start:end], request.instruction, workspace.symbols())
    # The working diff reads the files on disk: it takes the open documents by absolute path.
    open_files = {str(_absolute(workspace.root, path)): buffer for path, buffer in overlay.items()}
    first_line, end_line = text.count("\n", 0, start), text.count("\n", 0, end)
    end_line += bool(end > start and end > 0 and text[end - 1] != "\n")  # a last line selected in part counts
    query = RouterInputsQuery(
        root=workspace.root, path=request.path, first_line=first_line, end_line=end_line, open_files=open_files
    )
    # The request's own part (selection, instruction) the flow fills in where it routes.
    known = RouteInputs(mode="edit", path=request.path, symbols=lookup)
    _, route = await asyncio.gather(asyncio.to_thread(lookup.prepare, names), gather_router_inputs(query, cache, known))
    return EditInputs(current_texts=workspace.current, read_text=workspace.read_text, route=route)


def _absolute(root: pathlib.Path | None, path: str) -> pathlib.Path:
    candidate = pathlib.Path(path)
    return candidate if candidate.is_absolute() or root is None else root / candidate


async def _apply(workspace: Workspace, outcome: EditOutcome) -> tuple[bool, str]:
    """Apply through the workspace; when it refuses because the user typed meanwhile, rebase the edits over
    the newer texts and try again (or refuse, if the user changed the same lines)."""
    edits, current = list(outcome.edits), dict(outcome.current)
    why = ""
    for _ in range(APPLY_TRIES):
        answer = await workspace.apply(edits, current)
        if answer.applied:
            return True, ""
        why = answer.why or "the editor refused it"
        if answer.final:
            return False, why
        newer = workspace.current(list(current))
        try:
            edits = rebase_edits(edits, current, newer)
        except EditConflict as conflict:
            return False, str(conflict)
        current = newer
    return False, f"you kept typing in the edited files ({why})"
