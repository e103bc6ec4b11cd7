"""One edit, from the request to the user's files: `Edits.run(EditJob)`. No LSP here.

    gather the router's inputs -> `EditFlow.run` -> apply (through the caller) -> rebase and apply again
    when the editor refused because the user typed -> close the trace record

The LSP edge parses `tandem.edit`'s arguments, reports progress and sends `workspace/applyEdit` through
`EditJob.apply`; everything else an edit does happens here, in the model side's own room.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from tandem.completion.edit.file_edits import EditConflict, FileEdit
from tandem.completion.edit.flow import EditFlow
from tandem.completion.edit.rebase import rebase_edits
from tandem.completion.edit.types import EditInputs, EditOutcome, EditRequest, ProgressSink
from tandem.completion.routing.inputs import RouterInputsCache, RouterInputsQuery, gather_router_inputs
from tandem.completion.routing.router import RouteInputs
from tandem.completion.routing.workspace_symbols import IndexLookup, candidate_names

if TYPE_CHECKING:
    from tandem.cache.symbols import SymbolIndex

# Times an edit is rebased again when the editor refuses it because the user typed in the last instant.
APPLY_TRIES = 3


class EditFiles(Protocol):
    """The workspace as one edit reads it (the LSP edge's `EditWorkspace` is one). Paths are
    workspace-relative, as the model sees them and the edits carry them."""

    root: pathlib.Path | None

    def open_texts(self) -> dict[str, str]: ...

    def open_files(self) -> dict[str, str]: ...

    def symbols(self) -> SymbolIndex | None: ...

    def current(self, paths: Collection[str]) -> dict[str, str]: ...

    def read_text(self, path: str) -> str | None: ...

    def changed_since_read(self) -> bool: ...

    def write_refusal(self, path: str, *, creates: bool = False) -> str: ...


@dataclass(frozen=True, kw_only=True)
class Applied:
    """What the editor said to one `workspace/applyEdit`."""

    applied: bool
    why: str = ""
    # Nothing can change the answer (the editor cannot create files, or answered with an error): no retry.
    final: bool = False


ApplyEdits = Callable[[Sequence[FileEdit], Mapping[str, str]], Awaitable[Applied]]


@dataclass(frozen=True, kw_only=True)
class EditJob:
    """One edit as the edge hands it in."""

    request: EditRequest
    files: EditFiles
    # Sends the edits (over the texts they apply to) to the editor.
    apply: ApplyEdits
    on_progress: ProgressSink
    # Tells the user something once (a model that is down or missing).
    notify: Callable[[str], None]


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

    async def run(self, job: EditJob) -> EditResult:
        """The whole edit; cancelling it stops the model stream, and the trace record says so."""
        inputs = await gather_inputs(job.request, job.files, self.router_inputs)
        outcome = await self.flow.run(job.request, inputs, on_progress=job.on_progress)
        for notice in outcome.notices:
            job.notify(notice)
        if not outcome.ok:
            self.flow.finish(outcome)
            return EditResult(outcome=outcome, applied=False, why=outcome.message)
        try:
            applied, why = await _apply(job, outcome)
        except asyncio.CancelledError:
            self.flow.finish(outcome, applied=False, error="cancelled")
            raise
        self.flow.finish(outcome, applied=applied, error=why)
        return EditResult(outcome=outcome, applied=applied, why=why)


async def gather_inputs(request: EditRequest, files: EditFiles, cache: RouterInputsCache) -> EditInputs:
    """The router's one input (`RouteInputs`), gathered once, off the loop: the symbol lookup (reading the
    indexed texts once), and the working diff, the file's and the selected lines' history and the
    repository's last commits read from git under one deadline (`routing.inputs`). The open documents are
    snapshot on the loop first (buffers change under typing)."""
    text, start, end = request.text, request.start, request.end
    overlay = files.open_texts()
    lookup = IndexLookup(files.symbols(), overlay)
    names = candidate_names(text[start:end], request.instruction, files.symbols())
    open_files = files.open_files()
    first_line, end_line = text.count("\n", 0, start), text.count("\n", 0, end)
    end_line += bool(end > start and end > 0 and text[end - 1] != "\n")  # a last line selected in part counts
    query = RouterInputsQuery(
        root=files.root, path=request.path, first_line=first_line, end_line=end_line, open_files=open_files
    )
    # The request's own part (selection, instruction) the flow fills in where it routes.
    known = RouteInputs(mode="edit", path=request.path, symbols=lookup)
    _, route = await asyncio.gather(asyncio.to_thread(lookup.prepare, names), gather_router_inputs(query, cache, known))
    return EditInputs(current_texts=files.current, read_text=files.read_text, route=route)


async def _apply(job: EditJob, outcome: EditOutcome) -> tuple[bool, str]:
    """Apply through the caller; when the editor refuses because the user typed meanwhile, rebase the
    edits over the newer texts and try again (or refuse, if the user changed the same lines). Nothing is
    sent if any path the edit writes may not be written."""
    files = job.files
    refused = sorted({r for e in outcome.edits if (r := files.write_refusal(e.path, creates=e.creates))})
    if refused:
        return False, "; ".join(refused)
    edits, current = list(outcome.edits), dict(outcome.current)
    why = ""
    for _ in range(APPLY_TRIES):
        answer = await job.apply(edits, current)
        if answer.applied:
            return True, ""
        why = answer.why or "the editor refused it"
        if answer.final or not files.changed_since_read():
            return False, why
        newer = files.current(list(current))
        try:
            edits = rebase_edits(edits, current, newer)
        except EditConflict as conflict:
            return False, str(conflict)
        current = newer
    return False, f"you kept typing in the edited files ({why})"
