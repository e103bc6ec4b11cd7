"""Edits: workspace/executeCommand `tandem.edit`, with $/progress and workspace/applyEdit.

`tandem.edit` takes one argument `{uri, range, instruction, model?: "fast" | "accurate"}` (the VS Code
extension, the Neovim plugin and tandem.el send exactly this). The range is read against the server's copy
of the document, which the client brings up to date before it sends the command; typing after that is
handled by rebasing the edit, so no document version is needed. The edit itself, from gathering the
router's inputs to rebasing on a refused apply, is `completion.edit.service.Edits.run`; this module reads the
arguments, shows progress, sends `workspace/applyEdit` when the service asks, and tells the user the end:

- progress: work-done progress created with window/workDoneProgress/create when the client supports
  it, cancellable (a cancel stops the model stream), the message naming the route and its reasons;
- apply: workspace/applyEdit with the versions the server holds. If the user typed meanwhile the edit
  was already rebased (or refused) by the flow; if the editor still refuses because the user typed in
  the last instant, the service rebases it and asks again, a few times at most;
- report: every edit's end is a window/showMessage (`lsp.edit_report`: the model, the files, the size
  of the change, or why nothing was applied), also returned as the answer's `message`.

The code actions that run `tandem.edit` are offered by `handlers.code_action`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from tandem.completion.edit.file_edits import line_offset
from tandem.completion.edit.service import EditResult
from tandem.completion.edit.types import EditOutcome, EditRequest
from tandem.completion.workspace import WorkspaceIndex
from tandem.lsp import edit_report
from tandem.lsp.edit_workspace import EditWorkspace

# At run time, not only for type checking: pygls resolves a command handler's annotations to find its
# arguments. (lsp.server imports the handlers' table only inside build_server, so there is no cycle.)
from tandem.lsp.server import TandemServer
from tandem.lsp.shown import shown

if TYPE_CHECKING:
    from tandem.completion.routing.router import Tier

log = logging.getLogger(__name__)

EDIT_COMMAND = "tandem.edit"
# An edit asked while the workspace scan is still running waits this long for it (a scan of 20,000 files
# takes a few seconds), then goes ahead and says which files it could not see.
SCAN_WAIT_S = 10.0
_SCAN_REPORT_EVERY_S = 0.5
NOT_INDEXED = "other files were not yet indexed (the workspace scan was still running), so the edit did not see them"
# Preset instructions: (code action title, instruction).
PRESETS: tuple[tuple[str, str], ...] = (
    ("Fix", "Fix the bugs in this code."),
    ("Document", "Document this code: docstrings and comments that explain why, not what."),
    ("Add type hints", "Add type hints to this code."),
    ("Complete this function", "Complete this function: implement what its name, signature and docstring say."),
)
_tokens = itertools.count(1)
_T = TypeVar("_T")


@dataclass(frozen=True, kw_only=True)
class EditArguments:
    uri: str
    range: types.Range
    instruction: str
    model: Tier | None = None


def parse_arguments(args: tuple[Any, ...]) -> EditArguments:
    """The one argument of `tandem.edit`; JsonRpcInvalidParams says what is wrong with it."""
    if len(args) != 1 or not isinstance(args[0], dict):
        raise JsonRpcInvalidParams(message="tandem.edit takes one argument: {uri, range, instruction, model?}")
    raw = args[0]
    uri, instruction, model = raw.get("uri"), raw.get("instruction", ""), raw.get("model") or None
    if not isinstance(uri, str) or not isinstance(instruction, str):
        raise JsonRpcInvalidParams(message="tandem.edit: uri and instruction must be strings")
    if model not in (None, "fast", "accurate"):
        raise JsonRpcInvalidParams(message=f'tandem.edit: model must be "fast" or "accurate", not {model!r}')
    try:
        start, end = raw["range"]["start"], raw["range"]["end"]
        where = types.Range(
            start=types.Position(line=int(start["line"]), character=int(start["character"])),
            end=types.Position(line=int(end["line"]), character=int(end["character"])),
        )
    except (KeyError, TypeError, ValueError):
        raise JsonRpcInvalidParams(message="tandem.edit: range must be {start: {line, character}, end: ...}") from None
    return EditArguments(uri=uri, range=where, instruction=instruction.strip(), model=cast("Tier | None", model))


class _Progress:
    """Work-done progress for one edit, if the client supports it; a cancel calls `on_cancel`."""

    def __init__(self, ls: TandemServer) -> None:
        self._ls = ls
        window = ls.client_capabilities.window
        self.supported = bool(window and window.work_done_progress)
        self.token = f"tandem-edit-{next(_tokens)}"
        self._begun = False

    async def begin(self, message: str, on_cancel: Any) -> None:
        """Begins the progress (once: begun already, it reports `message`)."""
        if self._begun:
            self.report(message)
            return
        if not self.supported:
            return
        try:
            await self._ls.work_done_progress.create_async(self.token)
        except Exception as error:  # a client that refuses progress still gets its edit
            log.info("work done progress refused: %r", error)
            return
        self._ls.work_done_progress.begin(
            self.token, types.WorkDoneProgressBegin(title="tandem edit", message=message, cancellable=True)
        )
        self._begun = True
        self._ls.work_done_progress.tokens[self.token].add_done_callback(lambda future: on_cancel())

    def report(self, message: str) -> None:
        if self._begun:
            self._ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(message=message))

    def end(self, message: str) -> None:
        if self._begun:
            self._ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self._ls.work_done_progress.tokens.pop(self.token, None)
            self._begun = False


class _Stoppable:
    """Work that the progress's cancel button stops."""

    def __init__(self, progress: _Progress) -> None:
        self._progress = progress
        self._running: list[asyncio.Future[Any]] = []
        self._stopped_by_user = False

    def stop(self) -> None:
        self._stopped_by_user = True
        for future in self._running:
            future.cancel()

    async def run(self, work: Coroutine[Any, Any, _T]) -> _T | None:
        """`work`'s result, or None when the user stopped it ($/cancelRequest still cancels the caller)."""
        task = asyncio.ensure_future(work)
        self._running.append(task)
        try:
            return await task
        except asyncio.CancelledError:
            self._progress.end("cancelled")
            if not self._stopped_by_user:
                raise  # $/cancelRequest: pygls answers the request
            return None
        finally:
            self._running.remove(task)


async def _wait_for_scan(index: WorkspaceIndex, progress: _Progress) -> bool:
    """Waits at most SCAN_WAIT_S for the workspace scan, reporting the files it has indexed as it goes."""
    deadline = time.monotonic() + SCAN_WAIT_S
    shown = index.scan_progress.files
    while (left := deadline - time.monotonic()) > 0:
        if await index.wait_for_scan(min(left, _SCAN_REPORT_EVERY_S)):
            return True
        if index.scan_progress.files != shown:
            shown = index.scan_progress.files
            progress.report(_scan_words(shown))
    return not index.scanning


def _scan_words(files: int) -> str:
    return f"waiting for the workspace scan ({files:,} files indexed so far)"


def _show(ls: TandemServer, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
    message = shown(message)
    log.info("%s", message)
    ls.window_show_message(types.ShowMessageParams(type=kind, message=message))


async def _ask_instruction(ls: TandemServer) -> str:
    """No instruction given: offer the presets with window/showMessageRequest, if the client has it."""
    window = ls.client_capabilities.window
    if not (window and window.show_message):
        return ""
    choice = await ls.window_show_message_request_async(
        types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message="tandem: what should the edit do?",
            actions=[types.MessageActionItem(title=title) for title, _ in PRESETS],
        )
    )
    return next((text for title, text in PRESETS if choice is not None and choice.title == title), "")


def _offsets(ls: TandemServer, text: str, document: Any, where: types.Range) -> tuple[int, int]:
    (sl, sc), (el, ec) = ls.documents.to_server(document, where.start), ls.documents.to_server(document, where.end)
    start, end = line_offset(text, sl) + sc, line_offset(text, el) + ec
    return min(start, end), max(start, end)


async def run_edit(ls: TandemServer, args: EditArguments) -> dict[str, Any]:
    """One `tandem.edit`: the arguments read against the server's documents, progress while it runs, and
    the message at its end. The edit itself is `completion.edit.service.Edits.run`, which drives the
    workspace (`lsp.edit_workspace.EditWorkspace`: its reads, `workspace/applyEdit`, progress)."""
    received_ns = time.perf_counter_ns()
    session = ls.session
    if session is None:
        raise JsonRpcInvalidParams(message="tandem.edit: the server is not initialized yet")
    document = ls.documents.get(args.uri)
    if document is None:
        raise JsonRpcInvalidParams(message=f"tandem.edit: {args.uri} is not open in the editor")
    instruction = args.instruction or await _ask_instruction(ls)
    if not instruction:
        raise JsonRpcInvalidParams(message="tandem.edit needs an instruction (what should change?)")
    text = document.buffer.text()
    start, end = _offsets(ls, text, document, args.range)
    progress = _Progress(ls)
    stoppable = _Stoppable(progress)
    # Right after start-up the workspace scan may still be running: the edit would not see the files it has
    # not reached (what uses or defines the selection elsewhere). Wait for it, saying so, within a bound.
    not_indexed = ""
    index = session.workspace
    if index is not None and index.scanning:
        await progress.begin(_scan_words(index.scan_progress.files), stoppable.stop)
        scanned = await stoppable.run(_wait_for_scan(index, progress))
        if scanned is None:
            return _done(ls, False, "tandem: edit cancelled", show=False)
        if not scanned:
            not_indexed = f"; {NOT_INDEXED} ({index.scan_progress.files:,} files indexed so far)"
            log.info("edit asked before the workspace scan ended: %s", NOT_INDEXED)
    workspace = EditWorkspace(ls, label=instruction, progress=progress)
    request = EditRequest(
        path=workspace.path_of(args.uri),
        text=text,
        start=start,
        end=end,
        instruction=instruction,
        language=document.language_id,
        override=args.model,
        client=ls.client_name,
        received_ns=received_ns,
        uri=args.uri,
    )
    await progress.begin("routing the edit", stoppable.stop)
    result: EditResult | None = await stoppable.run(session.edits.run(request, workspace))
    if result is None:
        return _done(ls, False, "tandem: edit cancelled", show=False)
    progress.end("applied" if result.applied else "not applied")
    return _report(ls, workspace, result, not_indexed)


def _report(ls: TandemServer, workspace: EditWorkspace, result: EditResult, not_indexed: str) -> dict[str, Any]:
    """How the edit ended, in the one message the user reads and in the command's result."""
    outcome = result.outcome
    if not outcome.ok:
        return _done(ls, False, f"tandem: {outcome.message}{not_indexed}", outcome=outcome)
    if not result.applied:
        return _done(ls, False, f"tandem: the edit was not applied: {result.why}{not_indexed}", outcome=outcome)
    configured = getattr(ls.config.models, outcome.tier or "", None)
    model = configured.model if configured is not None else ""
    files = edit_report.changes(outcome.edits, outcome.current, workspace.open_texts())
    message = edit_report.applied_message(outcome.tier or "", model, files, rebased=outcome.rebased)
    answer = _done(ls, True, message + not_indexed, outcome=outcome, kind=types.MessageType.Info)
    answer.update(
        all_files_indexed=not not_indexed,
        model=model,
        lines_added=sum(f.added for f in files),
        lines_removed=sum(f.removed for f in files),
        not_open=[f.path for f in files if not f.opened],
    )
    return answer


def _done(
    ls: TandemServer,
    applied: bool,
    message: str,
    *,
    outcome: EditOutcome | None = None,
    show: bool = True,
    kind: types.MessageType | None = None,
) -> dict[str, Any]:
    """The command's result, after telling the user how the edit ended (window/showMessage, so editors
    that run `tandem.edit` as a plain code action show it too)."""
    if message and show:
        conflict = outcome is not None and outcome.conflict
        if kind is None:
            kind = types.MessageType.Warning if conflict or outcome is None else types.MessageType.Error
        _show(ls, message, kind)
    result: dict[str, Any] = {"applied": applied, "message": shown(message)}
    if outcome is not None:
        result.update(
            tier=outcome.tier,
            route=outcome.decision.summary(),
            escalation=outcome.escalation,
            files=sorted({e.path for e in outcome.edits}) if applied else [],
            rebased=outcome.rebased,
        )
    return result


async def tandem_edit(ls: TandemServer, *args: Any) -> dict[str, Any]:
    return await run_edit(ls, parse_arguments(args))
