"""Edits: workspace/executeCommand `tandem.edit`, textDocument/codeAction, $/progress, workspace/applyEdit.

`tandem.edit` takes one argument `{uri, range, instruction, model?: "fast" | "accurate"}` (the VS Code
extension, the Neovim plugin and tandem.el send exactly this). The range is read against the server's copy
of the document, which the client brings up to date before it sends the command; typing after that is
handled by rebasing the edit, so no document version is needed. The edit itself is
`completion.edit.flow.EditFlow.run`; this module gathers what it needs from the server (texts, symbols,
the working diff), shows progress, and applies the result:

- progress: work-done progress created with window/workDoneProgress/create when the client supports
  it, cancellable (a cancel stops the model stream), the message naming the route and its reasons;
- apply: workspace/applyEdit with the versions the server holds. If the user typed meanwhile the edit
  was already rebased (or refused) by the flow; if the editor still refuses because the user typed in
  the last instant, it is rebased again, a few times at most;
- report: every edit's end is a window/showMessage (`lsp.edit_report`: the model, the files, the size
  of the change, or why nothing was applied), also returned as the answer's `message`.

Code actions on a selection offer preset instructions (for clients that cannot prompt, such as Helix)
and, in VS Code and Neovim, "Edit selection with tandem..." (the plugin's own prompt command); on a
diagnostic without a selection, "tandem: Fix"; on a bare cursor, nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from tandem.completion.edit.file_edits import EditConflict, line_offset
from tandem.completion.edit.flow import EditFlow, EditInputs, EditOutcome, EditRequest
from tandem.completion.edit.rebase import rebase_edits
from tandem.completion.routing.file_history import histories, past_commits
from tandem.completion.routing.working_diff import working_diff
from tandem.completion.routing.workspace_symbols import IndexLookup, candidate_names
from tandem.completion.workspace import WorkspaceIndex
from tandem.lsp import edit_report
from tandem.lsp.edit_workspace import EditWorkspace
from tandem.lsp.handlers import next_edit

# At run time, not only for type checking: pygls resolves a command handler's annotations to find its
# arguments. (lsp.server imports this module only inside build_server, so there is no cycle.)
from tandem.lsp.server import TandemServer

if TYPE_CHECKING:
    from tandem.completion.routing.router import Tier

log = logging.getLogger(__name__)

EDIT_COMMAND = "tandem.edit"
# An edit asked while the workspace scan is still running waits this long for it (a scan of 20,000 files
# takes a few seconds), then goes ahead and says which files it could not see.
SCAN_WAIT_S = 10.0
_SCAN_REPORT_EVERY_S = 0.5
NOT_INDEXED = "other files were not yet indexed (the workspace scan was still running), so the edit did not see them"
# The VS Code extension's own command: it prompts for the instruction, then sends tandem.edit.
PROMPT_COMMAND = "tandem.editSelection"
# Clients whose tandem plugin implements PROMPT_COMMAND (asks for an instruction, then runs tandem.edit):
# the VS Code extension and the Neovim plugin. Others get the presets only.
PROMPTING_CLIENTS = frozenset(
    {"Visual Studio Code", "Visual Studio Code - Insiders", "code-server", "VSCodium", "Neovim"}
)
# Preset instructions: (code action title, instruction).
PRESETS: tuple[tuple[str, str], ...] = (
    ("Fix", "Fix the bugs in this code."),
    ("Document", "Document this code: docstrings and comments that explain why, not what."),
    ("Add type hints", "Add type hints to this code."),
    ("Complete this function", "Complete this function: implement what its name, signature and docstring say."),
)
# Times an edit is rebased again when the editor refuses it because the user typed in the last instant.
_APPLY_TRIES = 3
_tokens = itertools.count(1)


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


def flow_of(ls: TandemServer) -> EditFlow:
    """The server's edit flow, created on first use and kept in step with the configuration."""
    if ls.engine is None:
        raise JsonRpcInvalidParams(message="tandem.edit: the server is not initialized yet")
    if ls.edit_flow is None:
        # The engine's tiers (one backend per model, one Retry-After hold-off, configured in one place) and
        # its tracer (one trace file, one record per edit written at its end).
        # Its gate too: what may be sent is decided in one place for completions and edits alike.
        ls.edit_flow = EditFlow(models=ls.engine.tiers, tracer=ls.engine.tracer, config=ls.config, gate=ls.engine.gate)
    ls.edit_flow.config = ls.config
    return ls.edit_flow


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
    """One `tandem.edit`, from the arguments to the applied edit; returns a summary for the client."""
    received_ns = time.perf_counter_ns()
    document = ls.documents.get(args.uri)
    if document is None:
        raise JsonRpcInvalidParams(message=f"tandem.edit: {args.uri} is not open in the editor")
    instruction = args.instruction or await _ask_instruction(ls)
    if not instruction:
        raise JsonRpcInvalidParams(message="tandem.edit needs an instruction (what should change?)")
    text = document.buffer.text()
    start, end = _offsets(ls, text, document, args.range)
    progress = _Progress(ls)
    running: list[asyncio.Future[Any]] = []
    stopped_by_user = False

    def cancel() -> None:
        nonlocal stopped_by_user
        stopped_by_user = True
        for future in running:
            future.cancel()

    # Right after start-up the workspace scan may still be running: the edit would not see the files it has
    # not reached (what uses or defines the selection elsewhere). Wait for it, saying so, within a bound.
    not_indexed = ""
    index = ls.workspace_index
    if index is not None and index.scanning:
        await progress.begin(_scan_words(index.scan_progress.files), cancel)
        waiting = asyncio.ensure_future(_wait_for_scan(index, progress))
        running.append(waiting)
        try:
            scanned = await waiting
        except asyncio.CancelledError:
            progress.end("cancelled")
            if not stopped_by_user:
                raise
            return _done(ls, False, "tandem: edit cancelled", show=False)
        running.clear()
        if not scanned:
            not_indexed = f"; {NOT_INDEXED} ({index.scan_progress.files:,} files indexed so far)"
            log.info("edit asked before the workspace scan ended: %s", NOT_INDEXED)
    workspace = EditWorkspace(ls)
    path = workspace.path_of(args.uri)
    flow = flow_of(ls)
    request = EditRequest(
        path=path,
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
    # Off the loop: the working diff, the file's history and the repository's last commits run git, the
    # symbol lookup reads the indexed texts once.
    overlay = workspace.open_texts()
    lookup = IndexLookup(workspace.symbols(), overlay)
    names = candidate_names(text[start:end], instruction, workspace.symbols())
    open_files = workspace.open_files()
    first_line, end_line = text.count("\n", 0, start), text.count("\n", 0, end)
    end_line += bool(end > start and end > 0 and text[end - 1] != "\n")  # a last line selected in part counts
    diff, _, (history, lines_history), past = await asyncio.gather(
        asyncio.to_thread(working_diff, workspace.root, open_files),
        asyncio.to_thread(lookup.prepare, names),
        asyncio.to_thread(histories, workspace.root, path, first_line, end_line),
        asyncio.to_thread(past_commits, workspace.root),
    )
    inputs = EditInputs(
        current_texts=workspace.current,
        read_text=workspace.read_text,
        symbols=lookup,
        working_diff=diff,
        file_history=history,
        lines_history=lines_history,
        past_commits=past,
    )
    await progress.begin("routing the edit", cancel)
    task = asyncio.ensure_future(flow.run(request, inputs, on_progress=lambda p: progress.report(p.message)))
    running.append(task)
    try:
        outcome: EditOutcome = await task
    except asyncio.CancelledError:
        progress.end("cancelled")
        if not stopped_by_user:
            raise  # $/cancelRequest: pygls answers the request
        return _done(ls, False, "tandem: edit cancelled", show=False)
    for notice in outcome.notices:
        ls.notify_user(notice)
    if not outcome.ok:
        progress.end("not applied")
        flow.finish(outcome)
        return _done(ls, False, f"tandem: {outcome.message}{not_indexed}", outcome=outcome)
    applied, why = await _apply(ls, workspace, outcome, instruction)
    progress.end("applied" if applied else "not applied")
    flow.finish(outcome, applied=applied, error=why)
    if not applied:
        return _done(ls, False, f"tandem: the edit was not applied: {why}{not_indexed}", outcome=outcome)
    configured = getattr(ls.config.models, outcome.tier or "", None)
    model = configured.model if configured is not None else ""
    files = edit_report.changes(outcome.edits, outcome.current, workspace.open_texts())
    message = edit_report.applied_message(outcome.tier or "", model, files, rebased=outcome.rebased)
    result = _done(ls, True, message + not_indexed, outcome=outcome, kind=types.MessageType.Info)
    result.update(
        all_files_indexed=not not_indexed,
        model=model,
        lines_added=sum(f.added for f in files),
        lines_removed=sum(f.removed for f in files),
        not_open=[f.path for f in files if not f.opened],
    )
    return result


async def _apply(ls: TandemServer, workspace: EditWorkspace, outcome: EditOutcome, label: str) -> tuple[bool, str]:
    """workspace/applyEdit; when the editor refuses because the user typed meanwhile, rebase and retry.
    Nothing is sent if any path the edit writes is outside the workspace folders."""
    refused = sorted({r for e in outcome.edits if (r := workspace.write_refusal(e.path, creates=e.creates))})
    if refused:
        return False, "; ".join(refused)
    workspace_caps = ls.client_capabilities.workspace
    edit_caps = workspace_caps.workspace_edit if workspace_caps else None
    # Neovim takes documentChanges without saying so; it does say it takes resource operations.
    document_changes = bool(edit_caps and (edit_caps.document_changes or edit_caps.resource_operations))
    creates = any(e.creates for e in outcome.edits)
    can_create = bool(edit_caps and edit_caps.resource_operations and "create" in edit_caps.resource_operations)
    if creates and not can_create:
        return False, "it creates a file, and this editor cannot create files for a language server"
    edits, current = list(outcome.edits), dict(outcome.current)
    why = ""
    for _ in range(_APPLY_TRIES):
        edit = workspace.workspace_edit(edits, current, document_changes=document_changes)
        try:
            result = await ls.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label=f"tandem: {label[:60]}")
            )
        except JsonRpcException as error:
            # Some editors (eglot) refuse with an error reply rather than `applied: false`.
            return False, f"the editor refused it: {error.message}"
        if result.applied:
            return True, ""
        why = result.failure_reason or "the editor refused it"
        if not workspace.changed_since_read():
            return False, why
        newer = workspace.current(list(current))
        try:
            edits = rebase_edits(edits, current, newer)
        except EditConflict as conflict:
            return False, str(conflict)
        current = newer
    return False, f"you kept typing in the edited files ({why})"


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
    result: dict[str, Any] = {"applied": applied, "message": message}
    if outcome is not None:
        result.update(
            tier=outcome.tier,
            route=outcome.decision.summary(),
            escalation=outcome.escalation,
            files=sorted({e.path for e in outcome.edits}) if applied else [],
            rebased=outcome.rebased,
        )
    return result


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
    if document is None or ls.engine is None or not ls.engine.gate.document(document.uri):
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
        argument = {
            "uri": document.uri,
            "range": _span(_whole_lines(ls, document, first, last)),
            "instruction": f"Fix this problem: {problems}" if problems else PRESETS[0][1],
        }
        command = types.Command(title="tandem: Fix", command=EDIT_COMMAND, arguments=[argument])
        fix = types.CodeAction(
            title="tandem: Fix", kind=types.CodeActionKind.QuickFix, diagnostics=list(diagnostics), command=command
        )
        return [fix]
    if not offered(types.CodeActionKind.RefactorRewrite):
        return []
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


def _span(where: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": where.start.line, "character": where.start.character},
        "end": {"line": where.end.line, "character": where.end.character},
    }


def register(server: TandemServer) -> None:
    @server.command(EDIT_COMMAND)
    async def tandem_edit(ls: TandemServer, *args: Any) -> dict[str, Any]:
        return await run_edit(ls, parse_arguments(args))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.RefactorRewrite, types.CodeActionKind.QuickFix],
            resolve_provider=False,
        ),
    )
    async def code_action(ls: TandemServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return await next_edit.code_actions(ls, params) + _code_actions(ls, params)
