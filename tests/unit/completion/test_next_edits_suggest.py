"""`NextEdits.suggest` in-process, without an LSP server: a simulator on loopback answers next-edit prompts from
the file as it reads after the user's real next changes (its next-edit truth), and the model requests are
counted (and held when a test needs one in flight) at the HTTP client (`fixtures_sim.HeldTransport`).

The user renames `w` to `width` on the `def` line; the truth renames the docstring's `w` too, so the
suggestion inserts "idth" there.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from fixtures_sim import HeldTransport, SimFactory

from tandem.cache.edit_history import EditHistory, Lines
from tandem.cache.edit_region import CharEdit
from tandem.cache.lines import LineBuffer
from tandem.completion.config.tree import Config, ModelConfig, ModelsConfig, NextEditConfig
from tandem.completion.inline.prefetch import TokenBudget
from tandem.completion.next_edit.suggest import NextEdits
from tandem.completion.next_edit.types import NextEditRequest
from tandem.completion.observe.trace import Tracer, TraceRecord
from tandem.completion.providers.tiers import Tiers
from tandem.sim.runner import SimHandle

BEFORE = 'def area(w, h):\n    """Area of a w by h rectangle."""\n    scale = 1\n    return w * h * scale\n'
TRUTH = 'def area(width, h):\n    """Area of a width by h rectangle."""\n    scale = 1\n    return width * h * scale\n'
URI = "file:///w/sample.py"
PATH = "sample.py"
# The docstring's "w" becomes "width".
SUGGESTED = CharEdit(start_line=1, start_char=18, end_line=1, end_char=18, text="idth")


@dataclass
class Rig:
    model: HeldTransport
    sim: SimHandle
    buffer: LineBuffer
    history: EditHistory
    version: int = 1
    records: list[TraceRecord] = field(default_factory=list)
    next_edits: NextEdits = field(init=False)

    def document(self, uri: str) -> tuple[int, Lines] | None:
        """The editor's document as the server holds it (the `documents` lookup)."""
        return (self.version, self.buffer) if uri == URI else None

    def type(self, line: int, character: int, text: str) -> None:
        """The user types `text` at (line, character): the change is in the edit history, the version moves on."""
        self.history.before_change(URI, PATH, self.buffer, line, line)
        self.buffer.replace((line, character), (line, character), text)
        self.history.after_change(URI, 1, 1)
        self.version += 1

    def ask(self, line: int = 0, character: int = 14) -> NextEditRequest:
        return NextEditRequest(
            uri=URI, version=self.version, line=line, character=character, document=self.buffer, path=PATH
        )


@pytest.fixture
async def rig(sim_factory: SimFactory) -> AsyncIterator[Rig]:
    sim = sim_factory(profile="spark", ttft_ms=5.0, tokens_per_s=20_000.0)
    sim.set_next_edit_truth({PATH: TRUTH})
    model = HeldTransport()
    # No pause before asking (nothing waits on time); one request per suggestion, not two parts.
    config = Config(
        models=ModelsConfig(fast=ModelConfig(base_url=sim.base_url, model="sim-spark")),
        next_edit=NextEditConfig(debounce_ms=0, split=False),
    )
    async with httpx.AsyncClient(transport=model) as client:
        tiers = Tiers(client, {})
        assert tiers.configure(config.models) == []
        tracer = Tracer(None)
        history = EditHistory()
        rig = Rig(model, sim, LineBuffer(BEFORE), history)
        tracer.sinks.append(rig.records.append)
        rig.next_edits = NextEdits(
            tiers=tiers,
            tracer=tracer,
            budget=TokenBudget(per_minute=config.prefetch.tokens_per_minute),
            config=config,
            documents=rig.document,
            history=history,
        )
        try:
            yield rig
        finally:
            model.release()
            await rig.next_edits.aclose()
            await tiers.aclose()


async def test_after_an_edit_the_next_one_is_suggested_for_that_version(rig: Rig) -> None:
    rig.type(0, 10, "idth")
    result = await rig.next_edits.suggest(rig.ask())
    assert (result.outcome, result.reason) == ("answered", "")
    assert result.suggestion is not None
    assert (result.suggestion.version, result.suggestion.edit) == (2, SUGGESTED)
    assert rig.model.sent == 1


async def test_before_any_edit_no_model_is_asked(rig: Rig) -> None:
    result = await rig.next_edits.suggest(rig.ask())
    assert (result.outcome, result.reason, result.suggestion) == ("skipped", "no edit in this document yet", None)
    assert rig.model.arrived == 0


async def test_asking_again_with_nothing_changed_asks_no_model(rig: Rig) -> None:
    rig.sim.set_next_edit_truth({})  # the model sees nothing to do
    rig.type(0, 10, "idth")
    first = await rig.next_edits.suggest(rig.ask())
    assert (first.outcome, first.suggestion) == ("empty", None)
    again = await rig.next_edits.suggest(rig.ask(line=2, character=3))  # the cursor moved; the text did not
    assert (again.outcome, again.reason) == ("skipped", "no edit since the last request")
    assert rig.model.arrived == 1


async def test_asking_again_with_nothing_changed_returns_the_suggestion_made(rig: Rig) -> None:
    rig.type(0, 10, "idth")
    first = await rig.next_edits.suggest(rig.ask())
    again = await rig.next_edits.suggest(rig.ask(line=3, character=0))
    assert again.suggestion is not None and again.suggestion == first.suggestion
    assert rig.model.arrived == 1


async def test_two_asks_at_one_version_share_one_model_request(rig: Rig) -> None:
    """VS Code asks for code actions (which offer the next edit) and for the inline edit at the same version:
    the second ask joins the first rather than answering "no edit since the last request"."""
    rig.type(0, 10, "idth")
    rig.model.hold()
    first = asyncio.create_task(rig.next_edits.suggest(rig.ask()))
    await rig.model.wait_arrived(1)  # the first ask waits for the model
    second = asyncio.create_task(rig.next_edits.suggest(rig.ask()))
    await asyncio.sleep(0)  # sleep-ok: one event-loop turn, so that the second ask has started and joined
    assert not second.done()
    rig.model.release()
    results = await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert [r.outcome for r in results] == ["answered", "answered"]
    assert results[0].suggestion is not None and results[0].suggestion.edit == SUGGESTED
    assert results[1].suggestion == results[0].suggestion
    assert rig.model.arrived == 1


async def test_a_failing_provider_is_answered_with_the_reason(rig: Rig) -> None:
    rig.sim.arm_fault("500", 1)
    rig.type(0, 10, "idth")
    result = await rig.next_edits.suggest(rig.ask())
    assert (result.outcome, result.suggestion) == ("error", None)
    assert result.reason.startswith("provider unavailable") and "500" in result.reason, result.reason


async def test_an_answer_for_a_version_the_user_has_left_is_not_returned(rig: Rig) -> None:
    rig.type(0, 10, "idth")
    rig.model.hold()
    asked = asyncio.create_task(rig.next_edits.suggest(rig.ask()))
    await rig.model.wait_arrived(1)
    rig.version += 1  # the user changed the document while the model worked
    rig.model.release()
    result = await asyncio.wait_for(asked, 10)
    assert (result.outcome, result.suggestion) == ("stale", None)
    assert result.reason == "the document changed while the model worked"


async def test_a_newer_ask_supersedes_the_one_waiting(rig: Rig) -> None:
    rig.type(0, 10, "idth")
    rig.model.hold()
    older = asyncio.create_task(rig.next_edits.suggest(rig.ask()))
    await rig.model.wait_arrived(1)
    rig.type(2, 9, "0")  # "scale = 10": the user went on typing
    newer = asyncio.create_task(rig.next_edits.suggest(rig.ask(line=2, character=10)))
    superseded = await asyncio.wait_for(older, 10)  # answered before the model says anything
    assert (superseded.outcome, superseded.suggestion) == ("superseded", None)
    rig.model.release()
    await asyncio.wait_for(newer, 10)
