"""Time to a correct edit: the router vs always-fast vs always-accurate, through the real edit path. Simulated.

Every edit task of a git history (`eval.history`) is run through `EditFlow.run` against two
simulators over loopback: spark as the fast model, codex as the accurate one, each answering edit prompts
from the commit's after-texts (the edit truth) with its calibrated, difficulty-dependent error model
(`tandem.sim.error_model`). The edit path sees what an editor would: the parent's version of the
primary file with a user's selection selected (`EditTask.user_selection`: the function or block enclosing
the changed code, which does not know how far the change goes), the commit's subject as the instruction,
the symbol index of the parent's tree; and, as context, the other files the commit modifies (without them
no answer could be right, whoever answers; the route itself sees only the index).

The selection is both what the router routes and what the model is asked to edit, as in an editor. The
truth (the commit's change) can be produced from it: the prompt shows the whole primary file and any
SEARCH/REPLACE block may change it outside the selection, and the simulator's answer and its error draw
depend on the truth, not on the selection. What the selection changes is what the editor would see
change: the route, the prompt's selected lines, and the fast answer's size check, which is relative to
the selection (`validate`); with the changed region that check knew the answer's size, and a right answer
reaching far outside the user's block may now fail it and escalate, as it would for a user.
`selection="changed"` runs the changed region instead, to compare with.

    router           both tiers; the router decides; fast answers that fail validation escalate
    fast-first       both tiers; every edit asks the fast model first and escalates what fails validation
                     (the cheapest a router that trusts validation could be)
    always-fast      the fast tier only (nothing to escalate to: a fast-only tool)
    always-accurate  the accurate tier only

Beside them, derived exactly from the runs (`eval.edit_runs`): the router at other decision
boundaries, a router that knew which tasks are hard, and a bound no router can beat (the least time to
keep the target share of always-accurate's correct edits if each task's outcome on each tier were known
before asking). A router sees only what is there before generating.

An edit is correct when, applied, every file the edit path was shown equals the commit's version of it.
The files shown and judged are the commit's code, as the label about code counts it (`code_label`):
source files, and tests only in a commit that changes nothing else. A changelog line, docs or a regression
test written with the fix are not what an editor's edit request asks for, and a long changelog (black's
CHANGES.md, 95 KB; flask's CHANGES.rst) never fits the edit prompt's context budget, so judging them made
nearly every such commit wrong whoever answered. Files the commit creates (other than the primary file)
or deletes are not judged either: an instruction alone cannot name them. Before each strategy the truth
is set again, which restarts the simulators' attempt counts, so the strategies meet the same dice for the
same prompt.

Time is each edit's time from request to checked answer (escalation included) at the profiles' real
speeds (spark ~1,000 tokens/s and 100 ms to first token, codex ~65 tokens/s and 600 ms): per model call,
the profile's time to first token plus the tokens it streamed at the profile's rate, plus tandem's own
measured time around it. The simulators may run `time_scale` times faster to save wall time; only the
model's part is scaled back, so the machine's noise is not multiplied.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import httpx

from tandem.completion.config.tree import Config, EditConfig, ModelConfig, ModelsConfig, RouterConfig
from tandem.completion.edit.file_edits import apply_all
from tandem.completion.edit.flow import EditFlow, EditInputs, EditOutcome, EditRequest
from tandem.completion.observe.trace import Tracer
from tandem.completion.providers.tiers import Tiers
from tandem.completion.routing.file_history import read_history, read_past_commits
from tandem.completion.routing.router import RouteInputs, route
from tandem.completion.routing.weights import DEFAULT_MODEL, RouterModel, RouterWeights
from tandem.eval.code_label import code_files
from tandem.eval.edit_cost import REPLAY_PRICES, cost_usd
from tandem.eval.edit_hedging import (
    Band,
    Derived,
    RunFacts,
    TierSpeed,
    banded,
    draft_check,
    draft_gated,
    hedged,
    totals,
)
from tandem.eval.edit_runs import (
    TARGET_KEEP,
    TARGET_TIME,
    OperatingPoint,
    TaskRun,
    knowing_hard,
    operating_points,
    oracle_bound,
)
from tandem.eval.history import EditTask, GitError, git, scan_history
from tandem.eval.router_eval import HARD_LINES, TreeSymbols, lines_history_before

Strategy = Literal["router", "fast-first", "always-fast", "always-accurate", "default (run)", "draft-check (run)"]
# The shipped `[edit]` strategy as `EditFlow` runs it (the defaults: both models at once for every edit),
# beside the derivation of the same strategy from the other runs, which it should match task by task
# (same prompts, same simulator dice).
DEFAULT_RUN: Strategy = "default (run)"
# Draft-check as `EditFlow` runs it (`[edit] strategy = "draft-check"`): the simulated checker keeps or
# replaces the fast draft by its own assumption (`tandem.sim.edits`), beside the modelled upper estimate.
DRAFT_CHECK_RUN: Strategy = "draft-check (run)"
STRATEGIES: tuple[Strategy, ...] = (
    "router",
    "fast-first",
    "always-fast",
    "always-accurate",
    DEFAULT_RUN,
    DRAFT_CHECK_RUN,
)

SetTruth = Callable[[str, Mapping[str, str]], None]


@dataclass(frozen=True, kw_only=True)
class Models:
    """Where the two simulated tiers answer: OpenAI-compatible base URLs (`.../v1`)."""

    fast_url: str
    accurate_url: str
    # How much faster than their profiles the simulators were started (their times are scaled back).
    time_scale: float = 1.0
    # The profiles' real speeds: (time to first token in ms, tokens per second), by tier.
    fast_speed: tuple[float, float] = (100.0, 1000.0)
    accurate_speed: tuple[float, float] = (600.0, 65.0)
    # Real models instead of the simulators (`bench/bench_local_models.py`): their answers are judged after
    # whitespace normalisation and their times are the wall clock's.
    fast_config: ModelConfig | None = None
    accurate_config: ModelConfig | None = None

    @property
    def real(self) -> bool:
        return self.fast_config is not None or self.accurate_config is not None

    def model_s(self, tier: str, tokens_out: int) -> float:
        """A model call's time at the profile's real speed."""
        ttft_ms, rate = self.fast_speed if tier == "fast" else self.accurate_speed
        return ttft_ms / 1000 + tokens_out / rate


@dataclass(kw_only=True)
class StrategyFigures:
    """One strategy over all tasks. `simulated_s`: at the profiles' real speeds (see the module docstring)."""

    name: str
    tasks: int = 0
    correct: int = 0
    # Applied, but not what the commit did: a silent wrong edit the user must catch.
    wrong: int = 0
    # Nothing applied (every answer failed its checks).
    refused: int = 0
    escalated: int = 0
    accurate_served: int = 0
    wall_s: float = 0.0
    simulated_s: float = 0.0
    # Prompt and answer tokens, every attempt.
    tokens: int = 0
    # Their price at the replay's list prices (`eval.edit_cost`), USD.
    cost_usd: float = 0.0
    # Derived from the other strategies' runs (`edit_hedging`), not run through the edit path.
    derived: bool = False

    @property
    def correct_per_hour(self) -> float:
        return self.correct / (self.simulated_s / 3600) if self.simulated_s else 0.0

    @property
    def seconds_per_correct(self) -> float | None:
        return self.simulated_s / self.correct if self.correct else None

    @property
    def usd_per_correct(self) -> float | None:
        return self.cost_usd / self.correct if self.correct else None


@dataclass(frozen=True, kw_only=True)
class EditEvalResult:
    repo: str
    tasks: int
    skipped: dict[str, int]
    time_scale: float
    strategies: dict[str, StrategyFigures]
    runs: tuple[TaskRun, ...] = ()
    simulated: bool = True
    # router correct / always-accurate correct, router time / always-accurate time
    keeps: float | None = None
    time_share: float | None = None
    meets_target: bool = False
    # The least share of always-accurate's time that keeps the target share of its correct edits, for a
    # router that knew every answer in advance (`oracle_bound`).
    bound_time_share: float | None = None
    # A router that knew which tasks are hard (the truth's label): accurate for those, fast-first for the
    # rest; its correct edits and time as shares of always-accurate's (`knowing_hard`).
    knowing_hard_keeps: float | None = None
    knowing_hard_time_share: float | None = None
    # The router at other `[router] accurate_score` settings (`operating_points`).
    operating_points: tuple[OperatingPoint, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    # The accurate profile's real speed (what the derived strategies are computed at).
    accurate_speed: TierSpeed = field(default_factory=lambda: TierSpeed(ttft_s=0.6, tokens_per_s=65.0))
    # router-banded's edges, and where they were chosen ("" until `with_banded`).
    band: Band | None = None
    band_source: str = ""
    # The kind of selection routed and edited (`EditTask.selected_span`): "user" or "changed".
    selection: str = "user"


@dataclass(frozen=True, kw_only=True)
class _Prepared:
    task: EditTask
    # The texts the edit path sees (parent's), by path; truth: the commit's texts of the judged files.
    shown: dict[str, str]
    truth: dict[str, str]
    context: tuple[str, ...]


def _show(repo: Path, rev: str, path: str) -> str | None:
    try:
        return git(repo, "show", f"{rev}:{path}").decode("utf-8")
    except (GitError, UnicodeDecodeError):
        return None


def prepare(repo: Path, task: EditTask) -> _Prepared | None:
    """The shown files and the truth of `task`; None when its primary file cannot be judged."""
    shown = {task.path: task.parent_text}
    truth = {task.path: task.truth_text}
    context: list[str] = []
    code = {c.path for c in code_files(task.changes)}
    for change in task.changes:
        if change.path == task.path or change.path not in code:
            continue
        before = _show(repo, task.parent, change.old_path or change.path)
        after = _show(repo, task.commit, change.path)
        if before is None or after is None:
            continue  # created or deleted by the commit: not judged
        shown[change.path], truth[change.path] = before, after
        context.append(change.path)
    if task.truth_text == task.parent_text:
        return None
    return _Prepared(task=task, shown=shown, truth=truth, context=tuple(context))


def set_truth_over_http(root_url_of: Callable[[str], str]) -> SetTruth:
    """A `SetTruth` that posts to the simulator's control API (`POST {root}/_sim/edit-truth`)."""

    def set_truth(base_url: str, files: Mapping[str, str]) -> None:
        response = httpx.post(f"{root_url_of(base_url)}/_sim/edit-truth", json={"files": dict(files)}, timeout=30)
        response.raise_for_status()

    return set_truth


_FORCE: dict[Strategy, Literal["", "fast", "accurate"]] = {
    "router": "",
    "fast-first": "fast",
    "always-fast": "fast",
    "always-accurate": "accurate",
    DEFAULT_RUN: "",
    DRAFT_CHECK_RUN: "",
}


def _config(models: Models, strategy: Strategy) -> Config:
    fast = models.fast_config or ModelConfig(base_url=models.fast_url, model="sim-spark")
    accurate = models.accurate_config or ModelConfig(base_url=models.accurate_url, model="sim-codex")
    chosen = {
        "router": ModelsConfig(fast=fast, accurate=accurate),
        "fast-first": ModelsConfig(fast=fast, accurate=accurate),
        "always-fast": ModelsConfig(fast=fast),
        "always-accurate": ModelsConfig(accurate=accurate),
        DEFAULT_RUN: ModelsConfig(fast=fast, accurate=accurate),
        DRAFT_CHECK_RUN: ModelsConfig(fast=fast, accurate=accurate),
    }[strategy]
    # The baselines pin their tier (as a project's `[router] force` does), so the route never asks for a
    # tier they do not have; fast-first pins the fast tier and keeps the accurate one to escalate to.
    force = _FORCE[strategy]
    # Generous deadline: a slow accurate answer is part of the accurate model's time, not a failure.
    if strategy == DEFAULT_RUN:
        edit = replace(EditConfig(), deadline_s=3600.0)
    elif strategy == DRAFT_CHECK_RUN:
        edit = EditConfig(deadline_s=3600.0, strategy="draft-check")
    else:
        # "router" is the router's tier with escalation: the strategy before hedging.
        edit = EditConfig(deadline_s=3600.0, strategy="route")
    return Config(models=chosen, router=RouterConfig(force=force), edit=edit)


def _judge(prepared: _Prepared, outcome: EditOutcome, *, normalise: bool = False) -> str:
    """'correct' when every file the commit changed reads as the commit left it (`normalise`: after
    whitespace normalisation, all runs of whitespace one space), 'wrong' otherwise, 'refused' when nothing
    was applied. It sees only the text: an edit that differs from the commit but works is 'wrong'."""
    if not outcome.ok:
        return "refused"
    after = apply_all(outcome.current, outcome.edits)

    def same(a: str, b: str) -> bool:
        return " ".join(a.split()) == " ".join(b.split()) if normalise else a == b

    ok = all(same(after.get(path, outcome.current.get(path, "")), text) for path, text in prepared.truth.items())
    return "correct" if ok else "wrong"


async def evaluate_edits(
    repo: Path,
    models: Models,
    *,
    set_truth: SetTruth,
    limit: int = 50,
    max_index_files: int = 3000,
    trace_path: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    weights: RouterWeights | RouterModel = DEFAULT_MODEL,
    strategies: Sequence[Strategy] = STRATEGIES,
    selection: str = "user",
) -> EditEvalResult:
    """Run every task of `repo`'s history (up to `limit`) through the edit path, once per strategy, with
    the kind of selection `selection` (`EditTask.selected_span`; see the module docstring); the router uses
    `weights` (an evaluation on a held-out history passes weights fitted without it)."""
    scan = scan_history(repo, limit=limit)
    skipped = dict(scan.skipped)
    trees = TreeSymbols(repo, max_files=max_index_files, max_file_bytes=200_000)
    figures: dict[str, StrategyFigures] = {name: StrategyFigures(name=name) for name in strategies}
    runs: list[TaskRun] = []
    tracer = Tracer(trace_path)
    async with httpx.AsyncClient(timeout=httpx.Timeout(3600.0, connect=10.0)) as client:
        flows: dict[Strategy, EditFlow] = {}
        for strategy in strategies:
            config = _config(models, strategy)
            tiers = Tiers(client, {})
            tiers.configure(config.models)
            flows[strategy] = EditFlow(models=tiers, tracer=tracer, config=config, weights=weights)
        for number, task in enumerate(scan.tasks):
            if progress is not None:
                progress(number, len(scan.tasks))
            prepared = prepare(repo, task)
            if prepared is None:
                skipped["no change to the primary file's text"] = (
                    skipped.get("no change to the primary file's text", 0) + 1
                )
                continue
            runs.append(await _run_task(repo, prepared, flows, figures, models, set_truth, trees, selection))
    tracer.close()
    if "fast-first" in figures and "always-accurate" in figures:
        figures.update(_derived_figures(runs, models))
    none = StrategyFigures(name="")
    router, accurate = figures.get("router", none), figures.get("always-accurate", none)
    keeps = router.correct / accurate.correct if accurate.correct else None
    time_share = router.simulated_s / accurate.simulated_s if accurate.simulated_s else None
    meets = keeps is not None and time_share is not None and keeps >= TARGET_KEEP and time_share <= TARGET_TIME
    bound = oracle_bound(runs)
    hard_correct, hard_s = knowing_hard(runs)
    points = operating_points(runs, accurate.correct, accurate.simulated_s)
    return EditEvalResult(
        repo=str(repo),
        tasks=len(runs),
        skipped=skipped,
        time_scale=models.time_scale,
        strategies=figures,
        runs=tuple(runs),
        keeps=keeps,
        time_share=time_share,
        meets_target=meets,
        bound_time_share=bound / accurate.simulated_s if accurate.simulated_s else None,
        knowing_hard_keeps=hard_correct / accurate.correct if accurate.correct else None,
        knowing_hard_time_share=hard_s / accurate.simulated_s if accurate.simulated_s else None,
        operating_points=points,
        accurate_speed=_accurate_speed(models),
        selection=selection,
    )


def rescored(runs: Sequence[TaskRun], weights: RouterWeights | RouterModel) -> list[tuple[float, RunFacts]]:
    """Each task's router score under `weights` (from the features the router saw), with its runs."""
    thresholds = RouterConfig()
    return [
        (route(run.features, thresholds, weights=weights).score, run.facts)
        for run in runs
        if run.features is not None and run.facts is not None
    ]


def default_shape(band: Band) -> Band:
    """`band`'s edges in the shape of the shipped `[edit]` defaults: with no hedge band there
    (`hedge_from >= accurate_from`), the edits below `accurate_from` go fast-first."""
    shipped = EditConfig()
    if shipped.hedge_from >= shipped.accurate_from:
        return Band(hedge_from=band.accurate_from, accurate_from=band.accurate_from)
    return band


def with_banded(result: EditEvalResult, band: Band, source: str) -> EditEvalResult:
    """`result` with the banded policies' figures (derived from the runs at the router's own scores) beside
    the others; `band` holds both label edges, `source` says where they were chosen. router-banded is the
    shipped defaults' shape with these edges (`default_shape`); banded + hedge hedges between the edges;
    banded, gated asks the accurate model there on the draft's evidence."""
    facts = [(run.facts, run.score) for run in result.runs if run.facts is not None]
    speed = result.accurate_speed
    strategies = {
        **result.strategies,
        "router-banded": _figures_of("router-banded", [banded(f, s, default_shape(band), speed) for f, s in facts]),
        "banded + hedge": _figures_of("banded + hedge", [banded(f, s, band, speed) for f, s in facts]),
        "banded, gated": _figures_of("banded, gated", [banded(f, s, band, speed, draft_gate=True) for f, s in facts]),
    }
    return replace(result, strategies=strategies, band=band, band_source=source)


def shipped_band() -> Band:
    """The band of the shipped `[edit]` defaults (`strategy = "route"` would be no band at all)."""
    shipped = EditConfig()
    return Band(hedge_from=shipped.hedge_from, accurate_from=shipped.accurate_from)


def default_agreement(result: EditEvalResult) -> tuple[int, int] | None:
    """(tasks where `DEFAULT_RUN`'s verdict is the one derived for the same band from the other runs,
    tasks with both), or None without the run."""
    if DEFAULT_RUN not in result.strategies:
        return None
    band = shipped_band()
    same = total = 0
    for run in result.runs:
        if run.facts is None or DEFAULT_RUN not in run.results:
            continue
        total += 1
        same += banded(run.facts, run.score, band, result.accurate_speed).result == run.results[DEFAULT_RUN]
    return same, total


def _accurate_speed(models: Models) -> TierSpeed:
    ttft_ms, rate = models.accurate_speed
    return TierSpeed(ttft_s=ttft_ms / 1000, tokens_per_s=rate)


async def _run_task(
    repo: Path,
    prepared: _Prepared,
    flows: Mapping[Strategy, EditFlow],
    figures: Mapping[str, StrategyFigures],
    models: Models,
    set_truth: SetTruth,
    trees: TreeSymbols,
    selection: str,
) -> TaskRun:
    task = prepared.task
    symbols = trees.index(task.parent, task.path)
    reach_cache: dict[str, str | None] = {}

    def read_text(path: str) -> str | None:
        if path in prepared.shown:
            return prepared.shown[path]
        if path not in reach_cache:
            reach_cache[path] = _show(repo, task.parent, path)
        return reach_cache[path]

    def current(paths: Sequence[str] | Any) -> dict[str, str]:
        return {p: t for p in paths if (t := read_text(p)) is not None}

    inputs = EditInputs(
        current_texts=current,
        read_text=read_text,
        route=RouteInputs(
            mode="edit",
            path=task.path,
            symbols=symbols,
            history=read_history(repo, task.path, rev=task.parent, timeout=60.0),
            lines_history=lines_history_before(repo, task, selection),
            past_commits=read_past_commits(repo, rev=task.parent, timeout=60.0),
        ),
        extra_context=prepared.context,
    )
    start, end = task.selected_span(selection)
    request = EditRequest(path=task.path, text=task.parent_text, start=start, end=end, instruction=task.instruction)
    results: dict[str, str] = {}
    seconds: dict[str, float] = {}
    served: dict[str, str] = {}
    tokens: dict[str, int] = {}
    costs: dict[str, float] = {}
    outcomes: dict[str, EditOutcome] = {}
    route = ""
    score = 0.0
    features = None
    for strategy, flow in flows.items():
        for tries in range(_TRIES):
            # Setting the truth restarts the attempt counts: every strategy meets the same dice.
            set_truth(models.fast_url, prepared.truth)
            set_truth(models.accurate_url, prepared.truth)
            started = time.perf_counter()
            try:
                outcome = await flow.run(request, inputs)
            except SystemError:
                # CPython 3.11's ast module fails a parse that meets one in another thread (gh-106905):
                # the simulators parse their answers in this process's threads while tandem checks one.
                # Run again from the same dice; tandem's own checks parse one at a time.
                if tries == _TRIES - 1:
                    raise
                RETRIED[0] += 1
                continue
            break
        wall_s = time.perf_counter() - started
        # Rounded once, so that the strategy's total and the figures derived from the per-task seconds add
        # the same numbers (a derived strategy is never slower than its source by a rounding).
        simulated_s = round(_simulated_s(outcome, wall_s, models), 3)
        flow.finish(outcome, applied=outcome.ok)
        verdict = _judge(prepared, outcome, normalise=models.real)
        figure = figures[strategy]
        figure.tasks += 1
        setattr(figure, verdict, getattr(figure, verdict) + 1)
        figure.escalated += bool(outcome.escalation)
        figure.accurate_served += outcome.tier == "accurate"
        figure.wall_s += wall_s
        figure.simulated_s += simulated_s
        spent = sum(a.tokens_in + a.tokens_out for a in outcome.attempts)
        figure.tokens += spent
        costs[strategy] = sum(cost_usd(a.tier, a.tokens_in, a.tokens_out) for a in outcome.attempts)
        figure.cost_usd += costs[strategy]
        tokens[strategy], outcomes[strategy] = spent, outcome
        results[strategy], seconds[strategy] = verdict, simulated_s
        served[strategy] = outcome.tier or ""
        if strategy in ("router", DEFAULT_RUN) and not route:
            route, score = outcome.decision.summary(), outcome.decision.score
            features = outcome.decision.features
    if not route and outcomes:
        # No routed strategy ran (real models, baselines only): the router's decision is still made and traced.
        decided = next(iter(outcomes.values())).decision
        route, score, features = decided.summary(), decided.score, decided.features
    return TaskRun(
        commit=task.commit[:10],
        instruction=task.instruction,
        hard=task.is_code_hard(max_lines=HARD_LINES),
        changed_lines=task.changed_lines,
        files=len(task.changes),
        route=route,
        score=score,
        results=results,
        simulated_s=seconds,
        served_by=served,
        tokens=tokens,
        cost_usd=costs,
        facts=_facts(outcomes, results, seconds, tokens, costs, models),
        features=features,
    )


_TRIES = 3
# Strategy runs started again after the SystemError above, in this process (printed with the table).
RETRIED = [0]


def _facts(
    outcomes: Mapping[str, EditOutcome],
    results: Mapping[str, str],
    seconds: Mapping[str, float],
    tokens: Mapping[str, int],
    costs: Mapping[str, float],
    models: Models,
) -> RunFacts | None:
    """fast-first's first attempt and always-accurate's answer, for the derived strategies."""
    first, accurate = outcomes.get("fast-first"), outcomes.get("always-accurate")
    if first is None or accurate is None or not first.attempts or first.attempts[0].tier != "fast":
        return None
    fast = first.attempts[0]
    return RunFacts(
        first_result=results["fast-first"],
        first_s=seconds["fast-first"],
        fast_passed=not first.escalation and first.tier == "fast",
        fast_s=models.model_s("fast", fast.tokens_out),
        fast_tokens_in=fast.tokens_in,
        fast_tokens_out=fast.tokens_out,
        first_tokens=tokens["fast-first"],
        accurate_result=results["always-accurate"],
        accurate_s=seconds["always-accurate"],
        accurate_tokens_in=sum(a.tokens_in for a in accurate.attempts),
        accurate_tokens_out=sum(a.tokens_out for a in accurate.attempts),
        first_cost_usd=costs["fast-first"],
        fast_cost_usd=cost_usd("fast", fast.tokens_in, fast.tokens_out),
        accurate_cost_usd=costs["always-accurate"],
        accurate_usd_per_token=(REPLAY_PRICES["accurate"].input_per_token, REPLAY_PRICES["accurate"].output_per_token),
        fast_changed_lines=fast.changed_lines,
    )


def _derived_figures(runs: Sequence[TaskRun], models: Models) -> dict[str, StrategyFigures]:
    """hedged and draft-check (`edit_hedging`), from the runs of fast-first and always-accurate."""
    speed = _accurate_speed(models)
    facts = [run.facts for run in runs if run.facts is not None]
    figures: dict[str, StrategyFigures] = {}
    for name, derive in (("hedged", hedged), ("draft-check", draft_check), ("draft-gated", draft_gated)):
        figures[name] = _figures_of(name, [derive(f, speed) for f in facts])
    return figures


def _figures_of(name: str, derived: Sequence[Derived]) -> StrategyFigures:
    """A strategy's row from its verdicts derived task by task (labelled derived)."""
    correct, wait_s, spent = totals(derived)
    return StrategyFigures(
        name=name,
        tasks=len(derived),
        correct=correct,
        wrong=sum(1 for d in derived if d.result == "wrong"),
        refused=sum(1 for d in derived if d.result == "refused"),
        simulated_s=wait_s,
        tokens=spent,
        cost_usd=sum(d.cost_usd for d in derived),
        derived=True,
    )


def _simulated_s(outcome: EditOutcome, wall_s: float, models: Models) -> float:
    """The edit's time at the profiles' real speeds: each call's model time unscaled, tandem's own as measured.
    Hedged calls overlap: the user waits for the longer of those whose answer was waited for (a cancelled
    one was not)."""
    if models.real:
        return wall_s
    times = [models.model_s(a.tier, a.tokens_out) for a in outcome.attempts if a.outcome != "cancelled"]
    model_s = max(times, default=0.0) if outcome.plan == "hedged" else sum(times)
    scaled_model_s = model_s / models.time_scale
    return model_s + max(0.0, wall_s - scaled_model_s)
