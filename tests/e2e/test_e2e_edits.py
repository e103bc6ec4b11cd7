"""`tandem.edit` end to end: `tandem serve` over stdio with real clients' capabilities, two simulators on
loopback (spark as the fast model, codex as the accurate one) answering edit prompts from their edit
truth, and a client that applies `workspace/applyEdit` to its own copy of the documents the way an
editor does (refusing an edit for a version it has moved past) and tells the server with didChange."""

from __future__ import annotations

import asyncio
import pathlib
import subprocess
from collections.abc import Mapping
from typing import Any, Union

import httpx
import pytest
from e2e_support import Session, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from pygls.protocol import default_converter

from tandem.sim.runner import SimHandle, SimSettings

pytestmark = pytest.mark.e2e

SAMPLE = '''"""Invoices — totals in € and ¥."""


def total(items):
    result = 0
    for item in items:
        result += item.price * item.quantity
    return result


def label(name):
    return "Invoice — " + name
'''
SAMPLE_TYPED = SAMPLE.replace("def total(items):", "def total(items: list[object]) -> float:")
MODELS = "def compute_total(invoice):\n    return sum(line.amount for line in invoice.lines)\n"
VIEWS = "from models import compute_total\n\n\ndef show(invoice):\n    return f'{compute_total(invoice)} €'\n"
URLS = "from models import compute_total\nfrom views import show\n\nroutes = [show, compute_total]\n"


def _sim(profile: str, **fields: Any) -> SimSettings:
    return SimSettings(profile=profile, ttft_ms=fields.pop("ttft_ms", 5.0), tokens_per_s=50_000.0, **fields)


@pytest.fixture
def sims(sim_factory: SimFactory) -> tuple[SimHandle, SimHandle]:
    return sim_factory(_sim("spark")), sim_factory(_sim("codex"))


def two_models(fast: SimHandle, accurate: SimHandle) -> dict[str, Any]:
    # Every edit hedged (the default before the router's bands): these tests drive the edit path's
    # mechanics (apply, progress, rebase, refusals), not where the router sends an edit.
    return {
        "models": {
            "fast": {"provider": "openai-chat", "base_url": fast.base_url, "model": "sim-spark"},
            "accurate": {"provider": "openai-chat", "base_url": accurate.base_url, "model": "sim-codex"},
        },
        "edit": {"strategy": "banded", "hedge_from": 0.0, "accurate_from": 1.01},
    }


def set_truth(sim: SimHandle, files: Mapping[str, str], *, errors: str = "off") -> None:
    """The simulator's edit truth, through its control API (as a test harness in another process would)."""
    response = httpx.post(f"{sim.root_url}/_sim/edit-truth", json={"files": dict(files), "errors": errors})
    response.raise_for_status()


def edit_requests(sim: SimHandle) -> int:
    return int(sim.stats()["requests"].get("chat.completions", 0))


class Editor:
    """The client's side of the documents: applies workspace edits like an editor, reports with didChange."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.received: list[types.ApplyWorkspaceEditParams] = []

        def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            return self._apply(params)

        session.client.feature(types.WORKSPACE_APPLY_EDIT)(apply_edit)
        # lsprotocol reads any code action with a `command` key as a bare Command, even when that key holds
        # a Command object (a CodeAction's); editors read the JSON correctly, so the test client must too.
        session.client.protocol._converter.register_structure_hook(
            Union[types.Command, types.CodeAction],  # noqa: UP007 (the hook is keyed by this exact type)
            _command_or_action,
        )

    def open(self, name: str, text: str) -> str:
        uri = self.session.open(name, text)
        self.texts[uri], self.versions[uri] = text, 1
        return uri

    def type(self, uri: str, text: str) -> None:
        """The user replaces the whole document (sent as one full-text change)."""
        self.versions[uri] += 1
        self.texts[uri] = text
        self.session.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def _offset(self, text: str, position: types.Position) -> int:
        lines = text.split("\n")
        start = sum(len(line) + 1 for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        used = column = 0
        while column < len(line) and used < position.character:
            used += self.session.units(line[column])
            column += 1
        return start + column

    def _apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.received.append(params)
        changes = params.edit.document_changes or []
        for change in changes:
            assert isinstance(change, types.TextDocumentEdit), change
            uri, version = change.text_document.uri, change.text_document.version
            if uri in self.versions and version != self.versions[uri]:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason=f"{uri} has changed")
        for change in changes:
            assert isinstance(change, types.TextDocumentEdit)
            text = self.texts[change.text_document.uri]
            # Apply from the end, so earlier offsets stay valid.
            spans = sorted(
                (
                    (self._offset(text, e.range.start), self._offset(text, e.range.end), e.new_text)
                    for e in change.edits
                    if isinstance(e, types.TextEdit)
                ),
                reverse=True,
            )
            for start, end, new_text in spans:
                text = text[:start] + new_text + text[end:]
            self.type(change.text_document.uri, text)
        return types.ApplyWorkspaceEditResult(applied=True)


def _command_or_action(value: Any, _: object) -> types.Command | types.CodeAction:
    converter = default_converter()  # type: ignore[no-untyped-call]
    if isinstance(value.get("command"), str):
        return converter.structure(value, types.Command)  # type: ignore[no-any-return]
    return converter.structure(value, types.CodeAction)  # type: ignore[no-any-return]


def whole(text: str) -> dict[str, Any]:
    lines = text.split("\n")
    return {"start": {"line": 0, "character": 0}, "end": {"line": len(lines) - 1, "character": 0}}


async def execute(session: Session, argument: dict[str, Any]) -> dict[str, Any]:
    result = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="tandem.edit", arguments=[argument])
    )
    assert isinstance(result, dict)
    return result


def edit_records(session: Session) -> list[dict[str, Any]]:
    return [r for r in session.records() if r["kind"] == "edit"]


@pytest.mark.parametrize("client", ["vscode", "helix", "neovim"])
async def test_code_action_runs_an_edit_and_the_client_applies_it(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle], client: str
) -> None:
    fast, accurate = sims
    set_truth(fast, {"invoice.py": SAMPLE_TYPED})
    async with serve(tmp_path, client, options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        # A bare cursor gets no action (no lightbulb on every line); a diagnostic there gets "Fix".
        cursor = types.Range(start=types.Position(line=4, character=2), end=types.Position(line=4, character=2))
        problem = types.Diagnostic(range=cursor, message="'qty' is possibly unbound")
        for diagnostics, want in (([], []), ([problem], ["tandem: Fix"])):
            offered = await session.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    range=cursor,
                    context=types.CodeActionContext(diagnostics=diagnostics),
                )
            )
            assert [a.title for a in offered or []] == want
        [fix] = offered or []
        assert isinstance(fix, types.CodeAction) and fix.command is not None and fix.command.arguments
        assert fix.command.arguments[0]["instruction"] == "Fix this problem: 'qty' is possibly unbound"
        selection = types.Range(start=types.Position(line=3, character=0), end=types.Position(line=8, character=0))
        actions = await session.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=selection,
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        assert actions is not None
        titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
        assert "tandem: Add type hints" in titles
        # Only clients whose plugin can prompt for an instruction (VS Code, Neovim) get the open-ended action.
        assert ("Edit selection with tandem..." in titles) == (client in ("vscode", "neovim"))
        [action] = [a for a in actions if isinstance(a, types.CodeAction) and a.title == "tandem: Add type hints"]
        assert action.command is not None and action.command.command == "tandem.edit"
        result = await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=action.command.command, arguments=action.command.arguments)
        )
        assert isinstance(result, dict) and result["applied"] is True, result
        assert result["tier"] == "fast" and result["files"] == ["invoice.py"]
        assert editor.texts[uri] == SAMPLE_TYPED
        # Every edit ends with a message naming the model, the file and the size of the change.
        added, removed = result["lines_added"], result["lines_removed"]
        assert added > 0 and removed > 0, result
        want = f"tandem: fast model (sim-spark) edited invoice.py (+{added} -{removed} lines)"
        assert result["message"] == want and want in [m.message for m in session.client.messages]
        [received] = editor.received
        [change] = received.edit.document_changes or []
        assert isinstance(change, types.TextDocumentEdit) and change.text_document.version == 1
        progress = [v for reports in session.client.progress_reports.values() for v in reports]
        messages = [getattr(v, "message", "") or "" for v in progress]
        # The hedged plan asks both models at once, and says so first.
        assert any(m.startswith("fast and accurate at once") for m in messages), messages
        # Then short reports a status bar can hold: the model at work and what it is doing.
        assert "fast model (sim-spark): asking" in messages, messages
        assert isinstance(progress[-1], types.WorkDoneProgressEnd)
        # The fast answer passed its checks: it is the one applied; the accurate request beside it (sent at
        # once, or cancelled before it went out) was not used.
        assert edit_requests(fast) == 1 and edit_requests(accurate) <= 1
    [record] = edit_records(session)
    assert record["outcome"] == "applied" and record["tier"] == "fast" and record["edit"]["applied_files"] == 1
    assert record["edit"]["plan"] == "hedged"
    assert [a["tier"] for a in record["edit"]["attempts"] if a["used"]] == ["fast"]


async def test_multi_file_edit_goes_accurate_and_changes_every_file(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    fast, accurate = sims
    renamed = {
        "models.py": MODELS.replace("compute_total", "invoice_total"),
        "views.py": VIEWS.replace("compute_total", "invoice_total"),
        "urls.py": URLS.replace("compute_total", "invoice_total"),
    }
    set_truth(accurate, renamed)
    async with serve(tmp_path, "vscode", options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        uris = {
            name: editor.open(name, text)
            for name, text in (("models.py", MODELS), ("views.py", VIEWS), ("urls.py", URLS))
        }
        result = await execute(
            session,
            {"uri": uris["models.py"], "range": whole(MODELS), "instruction": "rename compute_total to invoice_total"},
        )
        assert result["applied"] is True, result
        assert result["tier"] == "accurate" and "instruction asks to rename" in result["route"]
        assert result["files"] == ["models.py", "urls.py", "views.py"]
        assert result["message"].startswith("tandem: accurate model (sim-codex) edited 3 files (+5 -5 lines): ")
        for name, uri in uris.items():
            assert editor.texts[uri] == renamed[name], name
        [received] = editor.received
        assert len(received.edit.document_changes or []) == 3
        # Hedged (the default): the fast model, which has no answer for this edit, was asked beside it.
        assert edit_requests(fast) == 1 and edit_requests(accurate) == 1
        progress = [getattr(v, "message", "") or "" for r in session.client.progress_reports.values() for v in r]
        assert any(m.startswith("fast and accurate at once") for m in progress), progress
        [record] = edit_records(session)
        # The two files it reaches are in its features; the fitted weights give files the instruction names
        # almost no weight, so they are not a reason of their own.
        assert record["edit"]["features"]["mentioned_files"] == 2


async def test_an_edit_is_refused_when_the_user_typed_over_its_range(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    # Slow enough that the user types while the model is still thinking.
    fast = sim_factory(_sim("spark", ttft_ms=1500.0))
    accurate = sim_factory(_sim("codex"))
    set_truth(fast, {"invoice.py": SAMPLE_TYPED})
    async with serve(tmp_path, "vscode", options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        argument = {"uri": uri, "range": whole(SAMPLE), "instruction": "add type hints", "model": "fast"}
        pending = asyncio.ensure_future(execute(session, argument))
        await _until(lambda: edit_requests(fast) >= 1)
        editor.type(uri, SAMPLE.replace("def total(items):", "def total(items, tax):"))
        result = await pending
        assert result["applied"] is False and "you changed line 4" in result["message"]
        assert editor.received == []
        assert any("you changed line 4" in m.message for m in session.client.messages)
        assert edit_requests(accurate) == 0  # refused, not escalated: the answer was fine, the text moved
    [record] = edit_records(session)
    assert record["outcome"] == "conflict"


@pytest.mark.parametrize("how", ["syntax", "truncated"])
async def test_a_fast_answer_that_does_not_parse_escalates_to_the_accurate_model(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle], how: str
) -> None:
    fast, accurate = sims
    if how == "syntax":
        set_truth(fast, {"invoice.py": SAMPLE_TYPED}, errors="syntax")  # every fast answer breaks the file
    else:
        set_truth(fast, {"invoice.py": SAMPLE_TYPED})
        fast.arm_fault("truncate", 1)  # the stream ends half-way: the blocks are cut off
    set_truth(accurate, {"invoice.py": SAMPLE_TYPED})
    async with serve(tmp_path, "neovim", options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        # The fast model is asked first by request (the router's score for this edit sits near its boundary).
        argument = {"uri": uri, "range": whole(SAMPLE), "instruction": "add type hints", "model": "fast"}
        result = await execute(session, argument)
        assert result["applied"] is True and result["tier"] == "accurate", result
        assert result["escalation"].startswith("fast answer rejected")
        assert editor.texts[uri] == SAMPLE_TYPED
        assert edit_requests(fast) == 1 and edit_requests(accurate) == 1
    [record] = edit_records(session)
    outcomes = [a["outcome"] for a in record["edit"]["attempts"]]
    assert outcomes[-1] == "ok" and outcomes[0] in ("invalid", "unparsable", "failed"), outcomes
    assert record["tier"] == "accurate" and record["edit"]["escalation"]


async def test_a_tier_that_is_down_is_replaced_and_the_user_told_once(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    fast, accurate = sims
    set_truth(accurate, {"invoice.py": SAMPLE_TYPED})
    fast.arm_fault("500")  # every request
    async with serve(tmp_path, "helix", options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        for _ in range(2):
            # Asked of the fast model by request, which is down: the accurate one serves.
            argument = {"uri": uri, "range": whole(SAMPLE), "instruction": "add type hints", "model": "fast"}
            result = await execute(session, argument)
            assert result["applied"] is True and result["tier"] == "accurate", result
            editor.type(uri, SAMPLE)
    told = [m.message for m in session.client.messages if "fast model is unavailable" in m.message]
    assert len(told) == 1, told


async def test_bad_arguments_are_an_error_in_words(tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]) -> None:
    fast, accurate = sims
    async with serve(tmp_path, "eglot", options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        with pytest.raises(Exception, match="not open in the editor"):
            await execute(session, {"uri": uri + "x", "range": whole(SAMPLE), "instruction": "x"})
        with pytest.raises(Exception, match="model must be"):
            await execute(session, {"uri": uri, "range": whole(SAMPLE), "instruction": "x", "model": "big"})
        # eglot has no showMessageRequest to pick a preset with: an edit without instruction is refused.
        with pytest.raises(Exception, match="needs an instruction"):
            await execute(session, {"uri": uri, "range": whole(SAMPLE), "instruction": ""})


async def _until(condition: object, *, attempts: int = 500) -> None:
    """Wait for a condition another thread or process makes true, yielding to the loop between checks."""
    assert callable(condition)
    for _ in range(attempts):
        if condition():
            return
        await asyncio.sleep(0.01)  # sleep-ok: polling another thread's counter, bounded
    raise AssertionError("condition never became true")


async def test_an_edit_without_instruction_offers_the_presets(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    fast, accurate = sims
    # Whichever model the router picks for the preset, it knows the answer: the presets are under test.
    set_truth(fast, {"invoice.py": SAMPLE_TYPED})
    set_truth(accurate, {"invoice.py": SAMPLE_TYPED})
    async with serve(tmp_path, "helix", options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        offered: list[str] = []

        def pick(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
            offered.extend(action.title for action in params.actions or [])
            return types.MessageActionItem(title="Add type hints")

        session.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)(pick)
        uri = editor.open("invoice.py", SAMPLE)
        result = await execute(session, {"uri": uri, "range": whole(SAMPLE), "instruction": ""})
        assert offered == ["Fix", "Document", "Add type hints", "Complete this function"]
        assert result["applied"] is True and editor.texts[uri] == SAMPLE_TYPED


async def test_cancelling_the_progress_stops_the_edit(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    fast = sim_factory(_sim("spark"))
    accurate = sim_factory(_sim("codex", ttft_ms=60_000.0))
    set_truth(accurate, {"invoice.py": SAMPLE_TYPED})
    async with serve(tmp_path, "vscode", options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        argument = {"uri": uri, "range": whole(SAMPLE), "instruction": "add type hints", "model": "accurate"}
        pending = asyncio.ensure_future(execute(session, argument))
        await _until(lambda: edit_requests(accurate) >= 1)
        [token] = list(session.client.progress_reports)
        session.client.protocol.notify(
            types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
        )
        result = await pending
        assert result == {"applied": False, "message": "tandem: edit cancelled"}
        assert editor.received == []
        assert isinstance(session.client.progress_reports[token][-1], types.WorkDoneProgressEnd)
    [record] = edit_records(session)
    assert record["outcome"] == "cancelled"


async def test_an_editor_refusing_with_an_error_reply_is_told_and_traced(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    # eglot answers a declined workspace/applyEdit with an error reply, not with `applied: false`.
    fast, accurate = sims
    set_truth(fast, {"invoice.py": SAMPLE_TYPED})
    async with serve(tmp_path, "eglot", options=two_models(fast, accurate)) as session:
        refused: list[types.ApplyWorkspaceEditParams] = []

        def refuse(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            refused.append(params)
            raise ValueError("the user said no")

        session.client.feature(types.WORKSPACE_APPLY_EDIT)(refuse)
        uri = session.open("invoice.py", SAMPLE)
        argument = {
            "uri": uri,
            "range": {"start": {"line": 3, "character": 0}, "end": {"line": 8, "character": 0}},
            "instruction": "add type hints",
            "model": "fast",
        }
        result = await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="tandem.edit", arguments=[argument])
        )
        assert isinstance(result, dict) and result["applied"] is False, result
        # The message was sent before the command's result.
        assert any("not applied" in m.message and "refused" in m.message for m in session.client.messages)
        assert len(refused) == 1
    [record] = edit_records(session)
    assert record["outcome"] != "applied" and "refused" in record["error"]


# -- hedged edits: both models at once, over real loopback HTTP ---------------------------------------------

# Every edit hedged (the band from score 0 up), whatever the default band is.
HEDGED = {"edit": {"strategy": "banded", "hedge_from": 0.0, "accurate_from": 1.01}}


def progress_messages(session: Session) -> list[str]:
    return [getattr(v, "message", "") or "" for r in session.client.progress_reports.values() for v in r]


async def test_hedged_the_accurate_request_is_cancelled_when_the_fast_answer_passes(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    fast, accurate = sims
    set_truth(fast, {"invoice.py": SAMPLE_TYPED})
    set_truth(accurate, {"invoice.py": SAMPLE_TYPED})
    # The accurate model sends its first token and then nothing, holding the connection open (300 s): the
    # edit ends now only if tandem cancels that request.
    accurate.arm_fault("stall")
    async with serve(tmp_path, "vscode", options={**two_models(fast, accurate), **HEDGED}) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        result = await execute(session, {"uri": uri, "range": whole(SAMPLE), "instruction": "add type hints"})
        assert result["applied"] is True and result["tier"] == "fast", result
        assert editor.texts[uri] == SAMPLE_TYPED
        assert edit_requests(fast) == 1 and edit_requests(accurate) == 1
        assert any(m.startswith("fast and accurate at once") for m in progress_messages(session))
        # Nothing holds a connection any more: the accurate stream was closed, not left streaming.
        health = await session.client.protocol.send_request_async("tandem/health", None)
        pool = health["pool"] if isinstance(health, dict) else health.pool
        active, orphaned = (
            (pool["active"], pool["orphaned"]) if isinstance(pool, dict) else (pool.active, pool.orphaned)
        )
        assert (active, orphaned) == (0, 0), pool
    [record] = edit_records(session)
    attempts = record["edit"]["attempts"]
    assert record["edit"]["plan"] == "hedged" and record["tier"] == "fast"
    assert [(a["tier"], a["outcome"], a["used"]) for a in attempts] == [
        ("fast", "ok", True),
        ("accurate", "cancelled", False),
    ]
    # The cancelled request's tokens are counted (the provider's usage never came: counted by tandem).
    assert attempts[1]["tokens"]["estimated"] is True and attempts[1]["tokens"]["in"] > 0


async def test_hedged_a_fast_answer_that_fails_is_replaced_by_the_accurate_one_on_its_way(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    fast, accurate = sims
    set_truth(fast, {"invoice.py": SAMPLE_TYPED}, errors="syntax")  # every fast answer breaks the file
    set_truth(accurate, {"invoice.py": SAMPLE_TYPED})
    async with serve(tmp_path, "neovim", options={**two_models(fast, accurate), **HEDGED}) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        result = await execute(session, {"uri": uri, "range": whole(SAMPLE), "instruction": "add type hints"})
        assert result["applied"] is True and result["tier"] == "accurate", result
        assert editor.texts[uri] == SAMPLE_TYPED
        # One request each: the accurate answer used is the one started beside the fast one.
        assert edit_requests(fast) == 1 and edit_requests(accurate) == 1
    [record] = edit_records(session)
    attempts = record["edit"]["attempts"]
    assert [(a["tier"], a["outcome"], a["used"]) for a in attempts] == [
        ("fast", "invalid", False),
        ("accurate", "ok", True),
    ]
    assert attempts[1]["tokens"]["estimated"] is False and attempts[1]["tokens"]["out"] > 0
    assert record["edit"]["escalation"].startswith("fast answer rejected (invalid")


async def test_hedged_the_users_newer_text_is_never_overwritten(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    # The accurate model is slow to start: the user types over the range after the fast answer failed and
    # before the accurate one is checked.
    fast = sim_factory(_sim("spark"))
    accurate = sim_factory(_sim("codex", ttft_ms=1500.0))
    set_truth(fast, {"invoice.py": SAMPLE_TYPED}, errors="syntax")
    set_truth(accurate, {"invoice.py": SAMPLE_TYPED})
    async with serve(tmp_path, "helix", options={**two_models(fast, accurate), **HEDGED}) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        argument = {"uri": uri, "range": whole(SAMPLE), "instruction": "add type hints"}
        pending = asyncio.ensure_future(execute(session, argument))
        await _until(
            lambda: any(m.startswith("the accurate model's answer is on its way") for m in progress_messages(session))
        )
        typed = SAMPLE.replace("def total(items):", "def total(items, tax):")
        editor.type(uri, typed)
        result = await pending
        assert result["applied"] is False and "you changed line 4" in result["message"], result
        assert editor.received == [] and editor.texts[uri] == typed
        assert edit_requests(accurate) == 1
    [record] = edit_records(session)
    assert record["outcome"] == "conflict"
    assert [a["outcome"] for a in record["edit"]["attempts"]] == ["invalid", "conflict"]


@pytest.mark.parametrize(("fast_errors", "tier"), [("off", "fast"), ("dropped-hunk", "accurate")])
async def test_draft_check_the_accurate_model_keeps_or_replaces_the_fast_draft(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle], fast_errors: str, tier: str
) -> None:
    fast, accurate = sims
    both_typed = SAMPLE_TYPED.replace("def label(name):", "def label(name: str) -> str:")
    # A dropped hunk (one of the two functions left as it was) passes tandem's checks: it parses and names
    # nothing new; only the checker can see it. The simulated checker (`tandem.sim.edits`) reads the draft
    # with its own reader.
    set_truth(fast, {"invoice.py": both_typed}, errors=fast_errors)
    set_truth(accurate, {"invoice.py": both_typed}, errors="off")
    options = {**two_models(fast, accurate), "edit": {"strategy": "draft-check"}}
    async with serve(tmp_path, "vscode", options=options) as session:
        editor = Editor(session)
        uri = editor.open("invoice.py", SAMPLE)
        result = await execute(session, {"uri": uri, "range": whole(SAMPLE), "instruction": "add type hints"})
        assert result["applied"] is True and result["tier"] == tier, result
        assert editor.texts[uri] == both_typed
        assert edit_requests(fast) == 1 and edit_requests(accurate) == 1
        async with httpx.AsyncClient() as client:
            [draw] = (await client.get(f"{accurate.root_url}/_sim/edits")).json()["edits"]
        assert draw["kept_draft"] is (tier == "fast") and draw["draft_exact"] is (tier == "fast")
    [record] = edit_records(session)
    assert record["edit"]["plan"] == "draft-check"
    assert [a["tier"] for a in record["edit"]["attempts"]] == ["fast", "accurate"]


def _commit(root: pathlib.Path, message: str, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text)
    who = ["-c", "user.email=a@example.com", "-c", "user.name=a", "-c", "commit.gpgSign=false"]
    subprocess.run(["git", "-C", str(root), *who, "add", *files], check=True)
    subprocess.run(["git", "-C", str(root), *who, "commit", "-qm", message], check=True)


def _git_workspace(tmp_path: pathlib.Path) -> None:
    """The workspace `serve` will use, as a git repository: models.py changed with views.py in two of its three
    commits, with its changelog line in the other (not code)."""
    root = tmp_path / "workspace"
    root.mkdir()
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True)
    _commit(root, "start", {"models.py": MODELS, "views.py": VIEWS})
    _commit(root, "views", {"models.py": MODELS + "\n", "views.py": VIEWS + "\n"})
    _commit(root, "note the total", {"models.py": MODELS, "CHANGES.md": "- models\n"})


async def test_the_router_reads_the_edited_files_git_history(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    fast, accurate = sims
    _git_workspace(tmp_path)
    set_truth(fast, {"models.py": MODELS.replace("def compute_total", "def compute_total ")})
    async with serve(tmp_path, "vscode", options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        uri = editor.open("models.py", MODELS)
        await execute(session, {"uri": uri, "range": whole(MODELS), "instruction": "fix the total"})
        [record] = edit_records(session)
    features = record["edit"]["features"]
    assert (features["history_commits"], features["history_co_changed"], features["history_co_files"]) == (3, 2, 1)
    # The selected lines (the whole file) were written by "start", with views.py.
    assert (features["lines_history_commits"], features["lines_history_co_changed"]) == (1, 1)
    # The repository's three commits, one of them like "fix the total" (its subject says "total"), not hard.
    similar = (features["similar_commits"], features["similar_neighbours"], features["similar_neighbours_hard"])
    assert similar == (3, 1, 0)


async def test_a_file_too_long_for_the_window_is_shown_around_the_selection_and_edited(
    tmp_path: pathlib.Path, sims: tuple[SimHandle, SimHandle]
) -> None:
    """A file under the privacy gate's size limit (1 MB) can still be several windows long: shown whole, its
    edit prompt would be ~450,000 tokens, sent to both models (it was; then it was refused). The model is
    shown the lines around the selection that fit, and the answer is found and applied in the whole file.
    When even the selection does not fit, nothing is sent and the user reads why."""
    fast, accurate = sims
    big = "".join(f"value_{n} = {n} * 3\n" for n in range(38_000))
    assert len(big) < 1_000_000
    # The simulator's truth: one comment added above the selected lines, the other 37,999 lines as they were.
    edited = big.replace("value_10 = 10 * 3\n", "# ten\nvalue_10 = 10 * 3\n")
    set_truth(fast, {"big.py": edited})
    async with serve(tmp_path, "vscode", options=two_models(fast, accurate)) as session:
        editor = Editor(session)
        uri = editor.open("big.py", big)
        lines = {"start": {"line": 10, "character": 0}, "end": {"line": 12, "character": 0}}
        argument = {"uri": uri, "range": lines, "instruction": "add a comment", "model": "fast"}
        result = await execute(session, argument)
        assert result["applied"] is True, result
        assert editor.texts[uri] == edited
        assert edit_requests(fast) == 1 and edit_requests(accurate) == 0
        # The whole file selected: too long for the window even in part.
        result = await execute(session, {"uri": uri, "range": whole(edited), "instruction": "add a comment"})
        assert result["applied"] is False and "over the 128,000-token window" in result["message"], result
        assert "select fewer lines" in result["message"]
        assert editor.texts[uri] == edited
        assert edit_requests(fast) == 1 and edit_requests(accurate) == 0
        # The server goes on serving: a small file's edit in the same session is asked as ever.
        set_truth(fast, {"invoice.py": SAMPLE_TYPED})
        small = editor.open("invoice.py", SAMPLE)
        argument = {"uri": small, "range": whole(SAMPLE), "instruction": "add type hints", "model": "fast"}
        assert (await execute(session, argument))["applied"] is True
    [record, refused, _] = edit_records(session)
    first, end = record["edit"]["shown_lines"]
    assert first <= 10 and end >= 12 and 0 < end - first < 38_000
    # What was sent fits the window, as the provider counted it.
    assert 0 < record["tokens"]["in"] <= 128_000 - 16_384 and not record["tokens"]["estimated"], record["tokens"]
    assert refused["outcome"] == "failed" and "128,000-token window" in refused["error"]
