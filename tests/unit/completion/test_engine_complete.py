"""`Engine.complete` in-process, without an LSP server: a simulator on loopback answers from a truth file, and
the model requests are counted (and held when a test needs one in flight) at the HTTP client
(`fixtures_sim.HeldTransport`).

The truth file holds `return a + b`; the document is open at `return |`, so the model's answer is `a + b`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import pathlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import httpx
import pytest
from fixtures_sim import HeldTransport, SimFactory

from tandem.cache.lines import LineBuffer
from tandem.completion.config.tree import CompletionConfig, Config, ModelConfig, ModelsConfig, PrefetchConfig
from tandem.completion.inline.engine import NO_MODEL_NOTICE, Engine
from tandem.completion.inline.prefetch import TokenBudget
from tandem.completion.inline.request import CompletionRequest
from tandem.completion.observe.spend import SpendLedger
from tandem.completion.observe.trace import Tracer, TraceRecord
from tandem.completion.providers.tiers import Tiers
from tandem.sim.runner import SimHandle

TRUTH = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
DOCUMENT = "def add(a, b):\n    return \n"
URI = "file:///w/calc.py"


@dataclass
class Rig:
    engine: Engine
    model: HeldTransport
    sim: SimHandle | None
    buffer: LineBuffer
    records: list[TraceRecord]
    _written: asyncio.Event

    def ask(self, character: int = 11, version: int = 1, uri: str = URI) -> CompletionRequest:
        return CompletionRequest(
            uri=uri,
            version=version,
            line=1,
            character=character,
            document=self.buffer,
            language="python",
            path=uri.rsplit("/", 1)[-1],
        )

    async def record(self, found: Callable[[TraceRecord], bool]) -> TraceRecord:
        """The first trace record `found` accepts, waiting for it to be written."""
        while True:
            for record in self.records:
                if found(record):
                    return record
            self._written.clear()
            await asyncio.wait_for(self._written.wait(), 10)


def _config(base_url: str | None) -> Config:
    models = ModelsConfig(fast=ModelConfig(base_url=base_url, model="sim-spark")) if base_url else ModelsConfig()
    # No debounce (nothing waits on time) and no speculation (every model request is the test's own).
    return Config(models=models, completion=CompletionConfig(debounce_ms=0), prefetch=PrefetchConfig(enabled=False))


@pytest.fixture
async def rig(sim_factory: SimFactory, tmp_path: pathlib.Path) -> AsyncIterator[Rig]:
    (tmp_path / "calc.py").write_text(TRUTH)
    sim = sim_factory(profile="spark", ttft_ms=5.0, tokens_per_s=20_000.0, truth=(str(tmp_path),))
    async with _rig(sim) as built:
        yield built


@contextlib.asynccontextmanager
async def _rig(sim: SimHandle | None, config: Config | None = None) -> AsyncIterator[Rig]:
    model = HeldTransport()
    config = config or _config(sim.base_url if sim is not None else None)
    async with httpx.AsyncClient(transport=model) as client:
        tiers = Tiers(client, {})
        assert tiers.configure(config.models) == []
        tracer = Tracer(None)
        records: list[TraceRecord] = []
        written = asyncio.Event()

        def sink(record: TraceRecord) -> None:
            records.append(record)
            written.set()

        tracer.sinks.append(sink)
        engine = Engine(
            config=config,
            tiers=tiers,
            tracer=tracer,
            budget=TokenBudget(per_minute=config.prefetch.tokens_per_minute),
            spend=SpendLedger(config.budget, path=None),
        )
        try:
            yield Rig(engine, model, sim, LineBuffer(DOCUMENT), records, written)
        finally:
            model.release()
            await engine.aclose()
            await tiers.aclose()


def _typed(rig: Rig, text: str, at: int = 11) -> None:
    rig.buffer.replace((1, at), (1, at), text)


async def test_an_answer_is_kept_and_asking_again_at_the_same_place_asks_no_model(rig: Rig) -> None:
    first = await rig.engine.complete(rig.ask())
    assert (first.text, first.source, first.error) == ("a + b", "model", "")
    assert rig.model.sent == 1
    again = await rig.engine.complete(rig.ask())
    assert (again.text, again.source) == ("a + b", "stream")
    # Once the stream has ended and the document's streams are forgotten, the completion cache answers.
    await rig.record(lambda r: r.source == "model" and r.outcome == "shown")
    rig.engine.document_closed(URI)
    cached = await rig.engine.complete(rig.ask())
    assert (cached.text, cached.source, cached.tier) == ("a + b", "cache", "cache")
    assert rig.model.sent == 1


async def test_typing_ahead_of_the_suggestion_is_served_from_its_stream_then_from_the_cache(rig: Rig) -> None:
    assert (await rig.engine.complete(rig.ask())).text == "a + b"
    _typed(rig, "a ")
    ahead = await rig.engine.complete(rig.ask(character=13, version=2))
    assert (ahead.text, ahead.source) == ("+ b", "stream")
    await rig.record(lambda r: r.source == "model")
    rig.engine.document_closed(URI)
    _typed(rig, "+", at=13)
    cached = await rig.engine.complete(rig.ask(character=14, version=3))
    assert (cached.text, cached.source) == (" b", "cache")
    assert rig.model.sent == 1


async def test_a_newer_request_supersedes_the_one_waiting_and_reads_the_same_stream(rig: Rig) -> None:
    rig.model.hold()
    older = asyncio.create_task(rig.engine.complete(rig.ask()))
    await rig.model.wait_arrived(1)  # the older request waits for the model
    newer = asyncio.create_task(rig.engine.complete(rig.ask()))
    superseded = await asyncio.wait_for(older, 10)  # answered at once, before the model says anything
    assert (superseded.text, superseded.error) == ("", "")
    assert not newer.done()
    rig.model.release()
    answer = await asyncio.wait_for(newer, 10)
    assert (answer.text, answer.source) == ("a + b", "stream")
    # The older request is traced when the stream it started ends.
    assert (await rig.record(lambda r: r.id == superseded.trace_id)).outcome == "superseded"
    assert rig.model.arrived == rig.model.sent == 1


async def test_a_cancelled_request_is_traced_and_its_stream_serves_the_next_keystroke(rig: Rig) -> None:
    rig.model.hold()
    task = asyncio.create_task(rig.engine.complete(rig.ask()))
    await rig.model.wait_arrived(1)
    task.cancel()  # $/cancelRequest
    with pytest.raises(asyncio.CancelledError):
        await task
    rig.model.release()
    cancelled = await rig.record(lambda r: r.outcome == "cancelled")
    assert cancelled.source == "model"  # written once its stream ended, with its usage
    answer = await rig.engine.complete(rig.ask())
    assert (answer.text, answer.source) == ("a + b", "stream")
    assert rig.model.sent == 1


async def test_a_provider_failure_is_answered_with_the_reason_and_not_kept(rig: Rig) -> None:
    assert rig.sim is not None
    rig.sim.arm_fault("500", 1)
    failed = await rig.engine.complete(rig.ask())
    assert failed.text == ""
    assert failed.error.startswith("provider unavailable") and "500" in failed.error, failed.error
    assert (await rig.record(lambda r: r.id == failed.trace_id)).outcome == "error"
    # The failure is not served again: the next ask goes to the model, which now answers.
    answer = await rig.engine.complete(rig.ask())
    assert (answer.text, answer.source, answer.error) == ("a + b", "model", "")
    assert rig.model.sent == 2


async def test_an_answer_the_user_typed_away_from_is_not_served(rig: Rig) -> None:
    assert (await rig.engine.complete(rig.ask())).text == "a + b"
    _typed(rig, "b")  # not what the suggestion says: its text is stale here
    answer = await rig.engine.complete(rig.ask(character=12, version=2))
    assert answer.source == "model" and not answer.text.startswith(" + b")
    assert rig.model.sent == 2


async def test_without_a_model_the_answer_says_how_to_configure_one() -> None:
    async with _rig(None) as rig:
        answer = await rig.engine.complete(rig.ask())
    assert (answer.text, answer.notice) == ("", NO_MODEL_NOTICE)
    assert rig.model.arrived == 0


async def test_the_debounce_learns_the_models_speed_from_when_it_was_asked_not_from_its_own_wait(rig: Rig) -> None:
    # A fixed 0.3 s wait before the model is asked: the latency the debounce learns must leave it out,
    # or a wait would lengthen the next waits by itself.
    rig.engine.configure(
        dataclasses.replace(rig.engine.config, completion=CompletionConfig(debounce="fixed", debounce_ms=300))
    )
    answer = await rig.engine.complete(rig.ask())
    assert (answer.text, answer.source) == ("a + b", "model")
    record = await rig.record(lambda r: r.source == "model" and r.outcome == "shown")
    waited_s = (record.marks_ns["debounce_end"] - record.received_ns) / 1e9
    assert waited_s >= 0.3
    learnt = rig.engine._debounce.model_latency_s
    assert learnt is not None
    assert learnt <= answer.waited_ms / 1000 - waited_s + 0.01


@pytest.fixture
async def local_rig(sim_factory: SimFactory, tmp_path: pathlib.Path) -> AsyncIterator[Rig]:
    """A model on this machine (one request at a time), speculation on."""
    (tmp_path / "calc.py").write_text(TRUTH)
    sim = sim_factory(profile="spark", ttft_ms=5.0, tokens_per_s=20_000.0, truth=(str(tmp_path),))
    config = Config(
        models=ModelsConfig(fast=ModelConfig(base_url=sim.base_url, model="sim-spark", local=True)),
        completion=CompletionConfig(debounce_ms=0),
        prefetch=PrefetchConfig(enabled=True),
    )
    async with _rig(sim, config) as built:
        yield built


OTHER = "file:///w/other.py"


async def test_a_miss_in_another_document_stops_the_stream_that_holds_a_local_models_one_slot(
    local_rig: Rig,
) -> None:
    rig = local_rig
    rig.model.hold()
    left = asyncio.create_task(rig.engine.complete(rig.ask(uri=OTHER)))
    await rig.model.wait_arrived(1)  # the document the user leaves holds the slot, its request unsent
    here = asyncio.create_task(rig.engine.complete(rig.ask()))
    await rig.model.wait_arrived(2)  # asked at once: the other document's stream no longer holds the slot
    rig.model.release()
    answer = await asyncio.wait_for(here, 10)
    assert answer.source == "model" and "a + b".startswith(answer.text) and answer.text
    assert (await asyncio.wait_for(left, 10)).text == ""
    assert rig.model.sent == 1


@pytest.mark.parametrize("closed", [False, True], ids=["left-open", "closed"])
async def test_a_resting_cursor_takes_a_local_models_slot_from_the_document_the_user_left(
    local_rig: Rig, closed: bool
) -> None:
    rig = local_rig
    rig.model.hold()
    left = asyncio.create_task(rig.engine.complete(rig.ask(uri=OTHER)))
    await rig.model.wait_arrived(1)
    if closed:
        rig.engine.document_closed(OTHER)  # its stream is stopped, but holds the slot until its request ends
    assert rig.engine.warm(rig.ask())
    await rig.model.wait_arrived(2)  # the warm read, once the stream of the document left has ended
    rig.model.release()
    assert (await asyncio.wait_for(left, 10)).text == ""
    warmed = await rig.record(lambda r: r.kind == "prefetch")
    assert warmed.outcome != "error" and "cursor rests" in warmed.route_reasons[0]
    first_key = await rig.engine.complete(rig.ask())
    assert (first_key.text, first_key.source) == ("a + b", "stream")
    assert rig.model.sent == 1


async def test_a_warm_read_waiting_for_the_slot_yields_to_the_users_request(local_rig: Rig) -> None:
    rig = local_rig
    tier = rig.engine.tiers.for_completion()
    assert tier is not None and tier.slots is not None
    held = asyncio.Event()
    done = asyncio.Event()

    async def other_work() -> None:  # something else holds the model's one slot (not a stream to stop)
        async with tier.slots.hold():
            held.set()
            await done.wait()

    holder = asyncio.create_task(other_work())
    await held.wait()
    assert rig.engine.warm(rig.ask())  # waits for the slot
    _typed(rig, "a ")  # the user types before the slot is free: the place the warm read knew is gone
    here = asyncio.create_task(rig.engine.complete(rig.ask(character=13, version=2)))
    for _ in range(1000):  # the user's request queues for the slot too
        if tier.slots.waiting:
            break
        await asyncio.sleep(0)  # sleep-ok: one turn of the loop, no time: the task runs to its queueing
    assert tier.slots.waiting == 1
    done.set()
    await holder
    answer = await asyncio.wait_for(here, 10)
    assert (answer.source, answer.error) == ("model", "")
    await rig.record(lambda r: r.id == answer.trace_id)
    await tier.slots.idle()
    await asyncio.sleep(0)  # sleep-ok: one turn of the loop, no time: the waiting warm read's turn to act
    assert not any(r.kind == "prefetch" for r in rig.records)
    assert rig.model.arrived == 1
