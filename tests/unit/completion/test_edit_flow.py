"""Unit tests of the edit path's logic (`completion.edit.flow`): routing with reasons, escalation of a fast
answer that fails its checks, a tier that is down, refusal when the user typed over the range, and the
trace record. Model answers come from `httpx.MockTransport` (fixed answers, to drive each branch); the
same path against the real simulator over loopback is in test_e2e_edits.py."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import pathlib
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from typing import Any

import httpx
import pytest

from tandem.completion.config.tree import Config, EditConfig, ModelConfig, ModelsConfig, RouterConfig
from tandem.completion.edit.file_edits import apply_all
from tandem.completion.edit.flow import EditFlow, EditInputs, EditRequest
from tandem.completion.edit.prompt import read_edit_prompt
from tandem.completion.edit.types import EditOutcome, EditProgress
from tandem.completion.observe.trace import Tracer
from tandem.completion.providers.tiers import Tiers
from tandem.completion.routing.change_in_progress import WorkingDiff
from tandem.completion.routing.router import RouteDecision, RouteInputs
from tandem.completion.routing.symbol_lookup import SymbolIndex

VIEWS = "def show(invoice):\n    return invoice.total\n\n\ndef other():\n    return 1\n"
FIXED = "def show(invoice):\n    return invoice.total * 2\n\n\ndef other():\n    return 1\n"
GOOD = "views.py\n<<<<<<< SEARCH\n    return invoice.total\n=======\n    return invoice.total * 2\n>>>>>>> REPLACE\n"
BROKEN_SYNTAX = (
    "views.py\n<<<<<<< SEARCH\n    return invoice.total\n=======\n    return (invoice.total\n>>>>>>> REPLACE\n"
)
CUT_OFF = "views.py\n<<<<<<< SEARCH\n    return invoice.total\n=======\n    return invoice"
# Parses, but names something defined nowhere (a swapped or made-up name).
UNDEFINED = (
    "views.py\n<<<<<<< SEARCH\n    return invoice.total\n=======\n    return invoce.total * 2\n>>>>>>> REPLACE\n"
)


def sse(text: str) -> bytes:
    chunks = [text[i : i + 7] for i in range(0, len(text), 7)]
    body = "".join(
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]}) + "\n\n"
        for c in chunks
    )
    usage = {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": len(chunks)}}
    return (body + "data: " + json.dumps(usage) + "\n\ndata: [DONE]\n\n").encode()


class Provider:
    """Answers by host: fast.test / accurate.test, each a list of answers (str) or status codes (int)."""

    def __init__(self, answers: Mapping[str, list[str | int]]) -> None:
        self.answers = {host: list(items) for host, items in answers.items()}
        self.asked: list[str] = []
        self.bodies: list[dict[str, object]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        self.asked.append(host.split(".")[0])
        self.bodies.append(json.loads(request.content))
        answer = self.answers[host].pop(0)
        if isinstance(answer, int):
            return httpx.Response(answer, json={"error": {"message": "simulated failure"}})
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse(answer))


def config(
    *,
    fast: bool = True,
    accurate: bool = True,
    force: str = "",
    strategy: str = "route",
    band: tuple[float, float] = (0.0, 1.01),
) -> Config:
    """Two tiers on MockTransport hosts. The escalation tests ask for the router's tier with escalation
    (`strategy = "route"`), the path a chosen tier takes under any strategy; the hedged ones say so."""
    models = ModelsConfig(
        fast=ModelConfig(base_url="http://fast.test/v1", model="sim-spark") if fast else None,
        accurate=ModelConfig(base_url="http://accurate.test/v1", model="sim-codex") if accurate else None,
    )
    edit = EditConfig(deadline_s=30.0, strategy=strategy, hedge_from=band[0], accurate_from=band[1])  # type: ignore[arg-type]
    return Config(models=models, router=RouterConfig(force=force), edit=edit)  # type: ignore[arg-type]


class Files:
    """The workspace as the server would see it: current texts, changeable mid-edit."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = dict(texts)
        self.on_read: Callable[[], None] = lambda: None

    def current(self, paths: Collection[str]) -> Mapping[str, str]:
        self.on_read()
        return {p: self.texts[p] for p in paths if p in self.texts}

    def inputs(self, **route: object) -> EditInputs:
        routed = RouteInputs(mode="edit", **route)  # type: ignore[arg-type]
        return EditInputs(current_texts=self.current, read_text=self.texts.get, route=routed)


async def run(
    provider: Provider,
    cfg: Config,
    request: EditRequest,
    files: Files,
    tmp_path: pathlib.Path,
    **inputs: object,
) -> tuple[EditFlow, EditOutcome, list[dict[str, Any]], list[EditProgress]]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(provider)) as client:
        models = Tiers(client, {})
        assert models.configure(cfg.models) == []
        tracer = Tracer(tmp_path / "trace.jsonl")
        flow = EditFlow(models=models, tracer=tracer, config=cfg)
        seen: list[EditProgress] = []
        outcome = await flow.run(request, files.inputs(**inputs), on_progress=seen.append)
        flow.finish(outcome, applied=outcome.ok)
        tracer.close()
    records = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    return flow, outcome, records, seen


def small_request(**fields: object) -> EditRequest:
    start = VIEWS.index("    return invoice.total")
    end = VIEWS.index("\n\n\ndef other") + 1
    base: dict[str, object] = {
        "path": "views.py",
        "text": VIEWS,
        "start": start,
        "end": end,
        "instruction": "double it",
        "language": "python",
    }
    base.update(fields)
    return EditRequest(**base)  # type: ignore[arg-type]


async def test_small_edit_goes_fast_and_is_applied(tmp_path: pathlib.Path) -> None:
    provider = Provider({"fast.test": [GOOD]})
    files = Files({"views.py": VIEWS})
    _, outcome, [record], seen = await run(provider, config(), small_request(), files, tmp_path)
    assert outcome.ok and outcome.tier == "fast" and not outcome.escalation
    assert apply_all(files.texts, outcome.edits)["views.py"] == FIXED
    assert provider.asked == ["fast"]
    assert record["kind"] == "edit" and record["outcome"] == "applied" and record["tier"] == "fast"
    assert record["edit"]["attempts"][0]["outcome"] == "ok"
    assert record["route_reasons"] and seen[0].message.startswith("fast: ")
    # The model was asked with the edit conversation, and the trace holds no text of the file.
    sent = provider.bodies[0]["messages"]
    assert read_edit_prompt(sent) is not None  # type: ignore[arg-type]
    assert "invoice" not in json.dumps(record)


@pytest.mark.parametrize(
    ("answer", "why"), [(BROKEN_SYNTAX, "invalid"), (CUT_OFF, "unparsable"), (UNDEFINED, "invalid")]
)
async def test_fast_answer_that_fails_its_checks_escalates(tmp_path: pathlib.Path, answer: str, why: str) -> None:
    provider = Provider({"fast.test": [answer], "accurate.test": [GOOD]})
    files = Files({"views.py": VIEWS})
    _, outcome, [record], seen = await run(provider, config(), small_request(), files, tmp_path)
    assert outcome.ok and outcome.tier == "accurate"
    assert provider.asked == ["fast", "accurate"]
    assert [a["outcome"] for a in record["edit"]["attempts"]] == [why, "ok"]
    assert record["edit"]["escalation"].startswith(f"fast answer rejected ({why}")
    assert any(p.message.startswith("escalating to the accurate model") for p in seen)


async def test_fast_answer_far_larger_than_predicted_escalates(tmp_path: pathlib.Path) -> None:
    rewrite = "\n".join(f"    x{i} = {i}" for i in range(60))
    huge = f"views.py\n<<<<<<< SEARCH\n    return invoice.total\n=======\n{rewrite}\n    return x0\n>>>>>>> REPLACE\n"
    provider = Provider({"fast.test": [huge], "accurate.test": [huge]})
    files = Files({"views.py": VIEWS})
    _, outcome, [record], _ = await run(provider, config(), small_request(), files, tmp_path)
    # Only the fast model is held to the predicted size: the accurate model's same answer is applied.
    assert outcome.ok and outcome.tier == "accurate"
    assert "far more than" in record["edit"]["attempts"][0]["error"]


async def test_without_an_accurate_model_a_bad_fast_answer_is_refused(tmp_path: pathlib.Path) -> None:
    provider = Provider({"fast.test": [BROKEN_SYNTAX]})
    files = Files({"views.py": VIEWS})
    _, outcome, [record], _ = await run(provider, config(accurate=False), small_request(), files, tmp_path)
    assert not outcome.ok and "would no longer parse" in outcome.message
    assert record["outcome"] == "failed"


async def test_an_answer_that_is_no_edit_is_told_in_the_users_words(tmp_path: pathlib.Path) -> None:
    """Issue 16, item 9: the user reads that the model's answer was no edit, not the parser's terms; the
    trace keeps the parser's reason."""
    provider = Provider({"fast.test": ["I would double the total."]})
    files = Files({"views.py": VIEWS})
    _, outcome, [record], _ = await run(provider, config(accurate=False), small_request(), files, tmp_path)
    assert not outcome.ok
    assert outcome.message == "the fast model answered, but not with a change tandem could apply to your files"
    assert "SEARCH/REPLACE" in record["error"] and record["edit"]["attempts"][0]["outcome"] == "unparsable"


async def test_a_tier_that_is_down_hands_over_and_the_user_is_told_once(tmp_path: pathlib.Path) -> None:
    provider = Provider({"fast.test": [503, 503], "accurate.test": [GOOD, GOOD]})
    files = Files({"views.py": VIEWS})
    async with httpx.AsyncClient(transport=httpx.MockTransport(provider)) as client:
        models = Tiers(client, {})
        models.configure(config().models)
        flow = EditFlow(models=models, tracer=Tracer(None), config=config())
        first = await flow.run(small_request(), files.inputs())
        second = await flow.run(small_request(), files.inputs())
    assert first.ok and first.tier == "accurate" and second.ok
    assert len(first.notices) == 1 and "fast model is unavailable" in first.notices[0]
    assert second.notices == ()
    assert "fast model unavailable" in first.escalation


async def test_a_missing_tier_is_served_by_the_other(tmp_path: pathlib.Path) -> None:
    provider = Provider({"fast.test": [GOOD]})
    files = Files({"views.py": VIEWS})
    _, outcome, _, _ = await run(provider, config(accurate=False, force="accurate"), small_request(), files, tmp_path)
    assert outcome.ok and outcome.tier == "fast"
    assert "no accurate model is configured" in outcome.notices[0]


async def test_user_typing_elsewhere_is_rebased_over(tmp_path: pathlib.Path) -> None:
    provider = Provider({"fast.test": [GOOD]})
    files = Files({"views.py": VIEWS})

    def user_types_above() -> None:
        files.texts["views.py"] = "import os\n" + VIEWS

    files.on_read = user_types_above
    _, outcome, _, _ = await run(provider, config(), small_request(), files, tmp_path)
    assert outcome.ok and outcome.rebased
    assert apply_all(outcome.current, outcome.edits)["views.py"] == "import os\n" + FIXED


async def test_user_typing_over_the_range_refuses_without_escalating(tmp_path: pathlib.Path) -> None:
    provider = Provider({"fast.test": [GOOD]})
    files = Files({"views.py": VIEWS})

    def user_types_inside() -> None:
        files.texts["views.py"] = VIEWS.replace("invoice.total\n", "invoice.total + tax\n", 1)

    files.on_read = user_types_inside
    _, outcome, [record], _ = await run(provider, config(), small_request(), files, tmp_path)
    assert not outcome.ok and outcome.conflict
    assert "you changed line 2" in outcome.message
    assert provider.asked == ["fast"] and record["outcome"] == "conflict"


async def test_cross_file_edit_routes_accurate_with_reasons_and_shows_the_files(tmp_path: pathlib.Path) -> None:
    models_py = "def compute_total(invoice):\n    return invoice.total\n"
    views_py = "from models import compute_total\n\ndef show(i):\n    return compute_total(i)\n"
    urls_py = "from views import show\nfrom models import compute_total\nroutes = [show, compute_total]\n"
    files = Files({"models.py": models_py, "views.py": views_py, "urls.py": urls_py})
    symbols = SymbolIndex.from_texts(files.texts.items())
    answer = (
        "models.py\n<<<<<<< SEARCH\ndef compute_total(invoice):\n=======\ndef invoice_total(invoice):\n"
        ">>>>>>> REPLACE\n"
        "views.py\n<<<<<<< SEARCH\nfrom models import compute_total\n=======\nfrom models import invoice_total\n"
        ">>>>>>> REPLACE\n"
    )
    provider = Provider({"accurate.test": [answer]})
    request = EditRequest(
        path="models.py", text=models_py, start=0, end=len(models_py), instruction="rename compute_total everywhere"
    )
    _, outcome, [record], seen = await run(provider, config(), request, files, tmp_path, symbols=symbols)
    assert outcome.ok and outcome.tier == "accurate"
    assert {e.path for e in outcome.edits} == {"models.py", "views.py"}
    assert seen[0].message.startswith("accurate: broad instruction ('everywhere')")
    # The files it reaches are in its features and its prompt; the fitted weights give files the instruction
    # names almost no weight (0.04 log-odds here), so they are not a reason of their own.
    assert "instruction asks to rename" in record["route_reasons"]
    shown = read_edit_prompt(provider.bodies[0]["messages"])  # type: ignore[arg-type]
    assert shown is not None and set(shown.context) == {"views.py", "urls.py"}
    assert record["edit"]["features"]["mentioned_files"] == 2 and record["edit"]["context_files"] == 2
    assert record["edit"]["features"]["whole_selection"] is True  # "rename" rewrites what is selected


async def test_working_diff_and_overrides_reach_the_decision(tmp_path: pathlib.Path) -> None:
    files = Files({"views.py": VIEWS})
    async with httpx.AsyncClient(transport=httpx.MockTransport(Provider({}))) as client:
        flow = EditFlow(models=Tiers(client, {}), tracer=Tracer(None), config=config())
        busy = WorkingDiff(lines=400, files=("a.py", "b.py", "c.py", "d.py"))
        decision = flow.decide(small_request(), files.inputs(working_diff=busy))
        assert decision.tier == "accurate" and "your change in progress spans 4 file(s)" in decision.message()
        forced = flow.decide(small_request(override="fast"), files.inputs(working_diff=busy))
        assert forced.tier == "fast" and forced.reasons[0].startswith("requested by the user")
        flow.config = config(force="accurate")
        assert flow.decide(small_request(), files.inputs()).tier == "accurate"


async def test_cancelling_stops_the_stream_and_traces_it(tmp_path: pathlib.Path) -> None:
    started = asyncio.Event()

    async def endless() -> AsyncIterator[bytes]:
        started.set()
        await asyncio.Event().wait()  # a model that never answers
        yield b""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=endless())

    files = Files({"views.py": VIEWS})
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        models = Tiers(client, {})
        models.configure(config().models)
        tracer = Tracer(tmp_path / "trace.jsonl")
        flow = EditFlow(models=models, tracer=tracer, config=config())
        task = asyncio.create_task(flow.run(small_request(), files.inputs()))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        tracer.close()
    [record] = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert record["outcome"] == "cancelled" and record["kind"] == "edit"


async def test_a_rate_limited_tier_is_left_alone_until_its_retry_after(tmp_path: pathlib.Path) -> None:
    provider = Provider({"fast.test": [429], "accurate.test": [GOOD, GOOD]})
    files = Files({"views.py": VIEWS})
    async with httpx.AsyncClient(transport=httpx.MockTransport(provider)) as client:
        models = Tiers(client, {})
        models.configure(config().models)
        flow = EditFlow(models=models, tracer=Tracer(None), config=config())
        first = await flow.run(small_request(), files.inputs())
        second = await flow.run(small_request(), files.inputs())
    assert first.tier == "accurate" and second.tier == "accurate"
    # The second edit did not ask the fast model again: it is waiting out the provider's Retry-After.
    assert provider.asked == ["fast", "accurate", "accurate"]
    assert second.attempts[0].outcome == "unavailable" and "Retry-After" in second.attempts[0].error


async def test_a_fast_rename_forgotten_in_an_importing_file_escalates(tmp_path: pathlib.Path) -> None:
    models = "def compute_total(invoice):\n    return invoice.total\n"
    views = "from models import compute_total\n\n\ndef show(invoice):\n    return compute_total(invoice)\n"
    renamed = (
        "models.py\n<<<<<<< SEARCH\ndef compute_total(invoice):\n=======\ndef invoice_total(invoice):\n"
        ">>>>>>> REPLACE\n"
    )
    both = renamed + (
        "views.py\n<<<<<<< SEARCH\nfrom models import compute_total\n=======\nfrom models import invoice_total\n"
        ">>>>>>> REPLACE\nviews.py\n<<<<<<< SEARCH\n    return compute_total(invoice)\n=======\n"
        "    return invoice_total(invoice)\n>>>>>>> REPLACE\n"
    )
    provider = Provider({"fast.test": [renamed], "accurate.test": [both]})
    files = Files({"models.py": models, "views.py": views})
    symbols = SymbolIndex.from_texts(files.texts.items())
    request = EditRequest(
        path="models.py", text=models, start=0, end=len(models), instruction="call it invoice_total", language="python"
    )
    _, outcome, [record], _ = await run(provider, config(force="fast"), request, files, tmp_path, symbols=symbols)
    assert provider.asked == ["fast", "accurate"]
    assert (
        record["edit"]["attempts"][0]["error"] == "it removes 'compute_total' from models.py, which views.py still uses"
    )
    assert outcome.ok and outcome.tier == "accurate"
    assert "invoice_total" in apply_all(files.texts, outcome.edits)["views.py"]


# -- hedged: both models at once ---------------------------------------------------------------------------


class HeldAccurate:
    """A provider whose fast answers come at once and whose accurate stream is held until `release` is set:
    the fast answer is checked while the accurate one is still on its way, as with real model speeds."""

    def __init__(self, fast: str, accurate: str) -> None:
        self.fast, self.accurate = fast, accurate
        self.asked: list[str] = []
        self.accurate_started = asyncio.Event()
        self.release = asyncio.Event()
        # Set when the accurate stream's body is closed by the client (a cancelled request).
        self.accurate_closed = asyncio.Event()

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host.split(".")[0]
        self.asked.append(host)
        if host == "fast":
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse(self.fast))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=self._held())

    async def _held(self) -> AsyncIterator[bytes]:
        body = sse(self.accurate)
        try:
            # The first chunk goes out at once (the model started answering), the rest when released.
            cut = body.index(b"\n\n") + 2
            yield body[:cut]
            self.accurate_started.set()
            await self.release.wait()
            yield body[cut:]
        finally:
            self.accurate_closed.set()


async def run_hedged(
    provider: HeldAccurate, files: Files, tmp_path: pathlib.Path, *, while_held: Callable[[], None] | None = None
) -> tuple[EditOutcome, dict[str, Any], list[EditProgress]]:
    """One edit under the hedged plan (hedge from score 0: every edit); `while_held` runs (then the accurate
    stream is released) once the fast answer has failed its checks."""
    cfg = config(strategy="banded", band=(0.0, 1.01))
    seen: list[EditProgress] = []

    def on_progress(report: EditProgress) -> None:
        seen.append(report)
        if report.message.startswith("the accurate model's answer is on its way"):
            if while_held is not None:
                while_held()
            provider.release.set()

    async with httpx.AsyncClient(transport=httpx.MockTransport(provider)) as client:
        models = Tiers(client, {})
        models.configure(cfg.models)
        tracer = Tracer(tmp_path / "trace.jsonl")
        flow = EditFlow(models=models, tracer=tracer, config=cfg)
        outcome = await flow.run(small_request(), files.inputs(), on_progress=on_progress)
        flow.finish(outcome, applied=outcome.ok)
        tracer.close()
    [record] = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    return outcome, record, seen


async def test_the_plan_bands_the_routers_score(tmp_path: pathlib.Path) -> None:
    files = Files({"views.py": VIEWS})
    async with httpx.AsyncClient(transport=httpx.MockTransport(Provider({}))) as client:
        flow = EditFlow(
            models=Tiers(client, {}), tracer=Tracer(None), config=config(strategy="banded", band=(0.3, 0.7))
        )
        decision = flow.decide(small_request(), files.inputs())

        def at(score: float, **fields: object) -> RouteDecision:
            return dataclasses.replace(decision, score=score, **fields)  # type: ignore[arg-type]

        assert [flow.plan(at(s)) for s in (0.1, 0.29, 0.3, 0.69, 0.7, 0.99)] == [
            "fast-first",
            "fast-first",
            "hedged",
            "hedged",
            "accurate",
            "accurate",
        ]
        # A tier the user (or the project) chose is asked alone, whatever the score.
        assert flow.plan(at(0.5, tier="fast", overridden=True)) == "fast-first"
        assert flow.plan(at(0.5, tier="accurate", overridden=True)) == "accurate"
        # The old behaviour: the router's tier, escalating.
        flow.config = config(strategy="route")
        assert flow.plan(at(0.5, tier="fast")) == "fast-first" and flow.plan(at(0.9, tier="accurate")) == "accurate"


async def test_hedged_a_fast_answer_that_passes_cancels_the_accurate_stream(tmp_path: pathlib.Path) -> None:
    provider = HeldAccurate(fast=GOOD, accurate=GOOD)
    files = Files({"views.py": VIEWS})
    outcome, record, _ = await run_hedged(provider, files, tmp_path)
    assert outcome.ok and outcome.tier == "fast" and outcome.plan == "hedged" and not outcome.escalation
    assert apply_all(files.texts, outcome.edits)["views.py"] == FIXED
    assert sorted(provider.asked) == ["accurate", "fast"]
    # The accurate stream was started, then closed by tandem before its answer was complete.
    assert provider.accurate_started.is_set() and provider.accurate_closed.is_set() and not provider.release.is_set()
    fast, accurate = record["edit"]["attempts"]
    assert record["edit"]["plan"] == "hedged" and record["tier"] == "fast"
    assert (fast["tier"], fast["outcome"], fast["used"]) == ("fast", "ok", True)
    assert (accurate["tier"], accurate["outcome"], accurate["used"]) == ("accurate", "cancelled", False)
    # Its usage never arrived: the tokens sent and received were counted here, and the trace says so.
    assert accurate["tokens"]["estimated"] is True and accurate["tokens"]["in"] > 100 and accurate["tokens"]["out"] > 0
    assert record["tokens"]["in"] == fast["tokens"]["in"] + accurate["tokens"]["in"]


async def test_hedged_a_fast_answer_that_fails_is_replaced_by_the_accurate_one(tmp_path: pathlib.Path) -> None:
    provider = HeldAccurate(fast=BROKEN_SYNTAX, accurate=GOOD)
    files = Files({"views.py": VIEWS})
    outcome, record, seen = await run_hedged(provider, files, tmp_path)
    assert outcome.ok and outcome.tier == "accurate" and outcome.plan == "hedged"
    assert apply_all(files.texts, outcome.edits)["views.py"] == FIXED
    # Asked once each: the accurate answer was the one already streaming, not a second request.
    assert sorted(provider.asked) == ["accurate", "fast"]
    fast, accurate = record["edit"]["attempts"]
    assert (fast["outcome"], fast["used"], accurate["outcome"], accurate["used"]) == ("invalid", False, "ok", True)
    assert accurate["tokens"]["estimated"] is False and accurate["started_ms"] < fast["started_ms"] + fast["ms"]
    assert record["edit"]["escalation"].startswith("fast answer rejected (invalid")
    assert seen[0].message.startswith("fast and accurate at once")


async def test_hedged_the_users_newer_text_is_never_overwritten(tmp_path: pathlib.Path) -> None:
    files = Files({"views.py": VIEWS})

    def user_types_inside() -> None:
        files.texts["views.py"] = VIEWS.replace("invoice.total\n", "invoice.total + tax\n", 1)

    outcome, record, _ = await run_hedged(
        HeldAccurate(fast=BROKEN_SYNTAX, accurate=GOOD), files, tmp_path, while_held=user_types_inside
    )
    assert not outcome.ok and outcome.conflict and "you changed line 2" in outcome.message
    assert record["outcome"] == "conflict"

    files = Files({"views.py": VIEWS})

    def user_types_above() -> None:
        files.texts["views.py"] = "import os\n" + VIEWS

    outcome, _, _ = await run_hedged(
        HeldAccurate(fast=BROKEN_SYNTAX, accurate=GOOD), files, tmp_path / "2", while_held=user_types_above
    )
    assert outcome.ok and outcome.rebased and outcome.tier == "accurate"
    assert apply_all(outcome.current, outcome.edits)["views.py"] == "import os\n" + FIXED


# -- draft-check: the accurate model checks a fast draft ------------------------------------------------------

TRIPLED = GOOD.replace("invoice.total * 2", "invoice.total * 3")


@pytest.mark.parametrize(
    ("fast", "accurate", "tier", "why"),
    [
        (GOOD, ["KEEP"], "fast", "the accurate model kept the fast model's draft"),
        (TRIPLED, [GOOD], "accurate", "the accurate model replaced the fast model's draft"),
        (GOOD, [503], "fast", "the accurate model's check failed (unavailable"),
    ],
)
async def test_draft_check_keeps_or_replaces_the_fast_draft(
    tmp_path: pathlib.Path, fast: str, accurate: list[str | int], tier: str, why: str
) -> None:
    provider = Provider({"fast.test": [fast], "accurate.test": accurate})
    files = Files({"views.py": VIEWS})
    _, outcome, [record], _ = await run(provider, config(strategy="draft-check"), small_request(), files, tmp_path)
    assert outcome.ok and outcome.tier == tier and outcome.plan == "draft-check"
    # Kept, or replaced by the accurate model's right edit: the doubled total either way.
    assert apply_all(files.texts, outcome.edits)["views.py"] == FIXED
    assert provider.asked == ["fast", "accurate"]
    # The checker was shown the draft after the edit prompt.
    shown = provider.bodies[1]["messages"][-1]["content"]  # type: ignore[index]
    assert shown.startswith("<|tandem:draft|>\n" + fast.rstrip()) and "KEEP" in shown
    assert record["edit"]["plan"] == "draft-check" and record["edit"]["escalation"].startswith(why)
    assert [a["tier"] for a in record["edit"]["attempts"] if a["used"]] == [tier]


async def test_draft_check_sends_a_failing_draft_on_as_fast_first_does(tmp_path: pathlib.Path) -> None:
    provider = Provider({"fast.test": [BROKEN_SYNTAX], "accurate.test": [GOOD]})
    files = Files({"views.py": VIEWS})
    _, outcome, _, _ = await run(provider, config(strategy="draft-check"), small_request(), files, tmp_path)
    assert outcome.ok and outcome.tier == "accurate" and outcome.escalation.startswith("fast answer rejected")
    # An escalation, not a check: the accurate model was given the edit prompt alone.
    assert "<|tandem:draft|>" not in json.dumps(provider.bodies[1])
