"""`tandem replay --next-edits --repo PATH`: next-edit suggestions on real edit sequences from a git history.

Each task is one file of a commit that makes several separate changes to it (`eval.next_edit_tasks`). The
file is opened at the parent's text in `tandem serve` (driven as VS Code drives it: utf-16 positions, a
`textDocument/copilotInlineEdit` request after every key press, `$/cancelRequest` for the one it replaces).
The user makes the first change, typed with a human rhythm; the simulator (`tandem sim`, spark profile at its
real speed) knows the file after the commit. After each change the user finishes, the suggestion on screen is
accepted (Tab: applied, `didShowInlineEdit`, the item's command) when it makes exactly one of the commit's
remaining changes; otherwise it is dismissed and the user types the next remaining change. After an accept
the next suggestion is asked for at once.

Strategies, all in one run: `baseline` (no next edits: the user types every change; its time is the
rhythm's own, computed from the same keystroke schedule since nothing else happens), `next-edits` (no
prefetch on accept), `next-edits+prefetch` (tandem's default). Figures from the client (what was suggested
exactly, characters not typed, time from the end of the user's change to the suggestion) and from the
server's trace (phases, refusals, tokens). Model output is simulated, and labelled so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from tandem.cache.edit_region import CharEdit, Hunk, Region, char_edit, hunks
from tandem.eval.history import GitError
from tandem.eval.next_edit_tasks import NextEditTask, TaskLimits, next_edit_tasks
from tandem.eval.replay.client import OpenDocument, Pending, ReplayClient
from tandem.eval.replay.keystrokes import Rhythm, key_presses, next_key
from tandem.sim.runner import SimHandle, SimSettings, start_in_thread

METHOD = "textDocument/copilotInlineEdit"
DID_SHOW = "textDocument/didShowInlineEdit"
DISMISSED = "tandem.nextEditDismissed"
STRATEGIES = ("next-edits", "next-edits+prefetch")
# The longest a suggestion is waited for after a change (a suggestion later than this is not on screen).
_WAIT_S = 5.0
# A request that waited less than this before its context was built was asked at once.
_AT_ONCE_MS = 5.0


def add_next_edit_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--next-edits",
        action="store_true",
        help="replay real edit sequences from a git history (with --repo) and measure next-edit suggestions",
    )
    parser.add_argument(
        "--min-changes",
        type=int,
        default=2,
        metavar="N",
        help="next edits: only files a commit changes in at least N separate places (default 2)",
    )
    parser.add_argument(
        "--next-edit-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="next edits: a [next_edit] setting for the server, as TOML (e.g. pause='typed'); repeatable",
    )
    parser.add_argument(
        "--next-edit-order",
        choices=("top-down", "bottom-up"),
        default="top-down",
        help="next edits: the user types the first remaining change from the top of the file (default) or from"
        " the bottom (then every later change lies above the cursor)",
    )
    parser.add_argument(
        "--tokens-per-minute",
        type=int,
        default=0,
        metavar="N",
        help="next edits: the speculation token budget ([prefetch] tokens_per_minute) the server gets;"
        " default 0: unlimited, to measure what next edits spend rather than what a budget lets them spend",
    )
    parser.add_argument(
        "--next-edit-strategies",
        default=",".join(STRATEGIES),
        metavar="LIST",
        help=f"next edits: the strategies to run, comma-separated (default {','.join(STRATEGIES)})",
    )


@dataclass
class Tally:
    """What one strategy did over all tasks (client-side figures)."""

    tasks: int = 0
    later_changes: int = 0
    suggested_exactly: int = 0
    # Key presses the later changes take when typed by hand, and those the accepted suggestions saved.
    later_keys: int = 0
    keys_saved: int = 0
    accepted_chars: int = 0
    shown: int = 0
    wrong_shown: int = 0
    # Client-measured ms, request sent -> answer with a suggestion, after the user's own change / an accept.
    after_change_ms: list[float] = field(default_factory=list)
    after_accept_ms: list[float] = field(default_factory=list)
    typing_s: float = 0.0
    trace: list[dict[str, Any]] = field(default_factory=list)


class _Doc:
    """The client's copy of the document, its cursor, and the server's view of it (versions)."""

    def __init__(self, client: ReplayClient, uri: str, text: str) -> None:
        self.client = client
        self.lines = text.split("\n")
        self.handle: OpenDocument = client.open(uri=uri, language_id="python", text=text, cursor=0)
        self.cursor = (0, 0)

    def position(self, line: int, column: int) -> types.Position:
        return types.Position(line=line, character=_utf16(self.lines[line][:column]) if line < len(self.lines) else 0)

    def column(self, line: int, units: int) -> int:
        text = self.lines[line] if line < len(self.lines) else ""
        count = 0
        for index, char in enumerate(text):
            if count >= units:
                return index
            count += 2 if ord(char) > 0xFFFF else 1
        return len(text)

    def apply(self, edit: CharEdit) -> None:
        start, end = self.position(edit.start_line, edit.start_char), self.position(edit.end_line, edit.end_char)
        self.client.replace(self.handle, start, end, edit.text)
        self.lines = edit.apply(self.lines)
        parts = edit.text.split("\n")
        if len(parts) == 1:
            self.cursor = (edit.start_line, edit.start_char + len(edit.text))
        else:
            self.cursor = (edit.start_line + len(parts) - 1, len(parts[-1]))

    def ask(self) -> Pending:
        line, column = self.cursor
        return self.client.send(
            METHOD,
            {
                "textDocument": {"uri": self.handle.uri, "version": self.handle.version},
                "position": {"line": line, "character": _utf16(self.lines[line][:column])},
            },
        )


def _utf16(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def _remaining(lines: list[str], truth: tuple[str, ...]) -> list[Hunk]:
    return hunks(tuple(lines), truth)


def _keys(edit: CharEdit) -> int:
    """Key presses the edit takes by hand: the text typed, plus one to delete a selection."""
    deletes = (edit.start_line, edit.start_char) != (edit.end_line, edit.end_char)
    return key_presses(edit.text) + (1 if deletes else 0)


async def _answer(pending: Pending) -> tuple[CharEdit | None, dict[str, Any] | None, float]:
    """The suggestion a request answered (converted to code points later), its item, and the latency."""
    try:
        await asyncio.wait_for(pending.answered.wait(), _WAIT_S)
    except TimeoutError:
        return None, None, 0.0
    future = pending.future
    if future.cancelled() or future.exception() is not None:
        return None, None, pending.latency_ms
    edits = _plain(future.result()).get("edits") or []
    if not edits:
        return None, None, pending.latency_ms
    return None, edits[0], pending.latency_ms


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class _Runner:
    def __init__(
        self, client: ReplayClient, sim: SimHandle, rhythm: Rhythm, seed: int, root: Path, order: str = "top-down"
    ) -> None:
        self.client, self.sim, self.rhythm, self.root = client, sim, rhythm, root
        self.rng = random.Random(seed)
        self.order = order

    async def task(self, task: NextEditTask, tally: Tally) -> None:
        self.sim.set_next_edit_truth({task.path: task.after})
        truth = tuple(task.after.split("\n"))
        doc = _Doc(self.client, (self.root / task.path).as_uri(), task.before)
        tally.tasks += 1
        first = True
        moves = 0
        while (remaining := _remaining(doc.lines, truth)) and moves < 3 * task.hunks:
            moves += 1
            # The user types the first remaining change (from the top, or from the bottom), asking for a next
            # edit after every key press.
            hunk = remaining[0] if self.order == "top-down" else remaining[-1]
            edit = char_edit(hunk, Region(0, tuple(doc.lines)), line_count=len(doc.lines))
            if not first:
                tally.later_changes += 1
                tally.later_keys += _keys(edit)
            pending = await self._type(doc, edit, tally)
            first = False
            # Then takes whatever is suggested while it does exactly one of the remaining changes.
            chained = False
            while pending is not None and _remaining(doc.lines, truth):
                _, item, latency_ms = await _answer(pending)
                if item is None:
                    break
                suggestion = self._edit(doc, item)
                tally.shown += 1
                (tally.after_accept_ms if chained else tally.after_change_ms).append(latency_ms)
                self.client.notify(DID_SHOW, {"item": item})
                before = _remaining(doc.lines, truth)
                after = _remaining(suggestion.apply(list(doc.lines)), truth)
                if not _one_done(before, after):
                    tally.wrong_shown += 1
                    command = item.get("command") or {}
                    self.client.execute(DISMISSED, list(command.get("arguments") or []))
                    break
                tally.suggested_exactly += 1
                tally.later_changes += 1
                tally.later_keys += _keys(suggestion)
                tally.keys_saved += _keys(suggestion)
                tally.accepted_chars += len(suggestion.text)
                doc.apply(suggestion)
                command = item.get("command") or {}
                if command.get("command"):
                    self.client.execute(str(command["command"]), list(command.get("arguments") or []))
                chained = True
                pending = doc.ask()
        self.client.close(doc.handle)

    def _edit(self, doc: _Doc, item: dict[str, Any]) -> CharEdit:
        start, end = item["range"]["start"], item["range"]["end"]
        return CharEdit(
            start["line"],
            doc.column(start["line"], start["character"]),
            end["line"],
            doc.column(end["line"], end["character"]),
            item["text"],
        )

    async def _type(self, doc: _Doc, edit: CharEdit, tally: Tally) -> Pending | None:
        started = time.perf_counter()
        pending: Pending | None = None

        def ask() -> None:
            nonlocal pending
            if pending is not None:
                self.client.cancel(pending)
            pending = doc.ask()

        if (edit.start_line, edit.start_char) != (edit.end_line, edit.end_char):
            await asyncio.sleep(self.rhythm.pause_s(self.rng, "\n"))
            doc.apply(CharEdit(edit.start_line, edit.start_char, edit.end_line, edit.end_char, ""))
            ask()
        line, column = edit.start_line, edit.start_char
        at, previous = 0, "\n"
        while at < len(edit.text):
            key = next_key(edit.text, at)
            await asyncio.sleep(self.rhythm.pause_s(self.rng, previous))
            doc.apply(CharEdit(line, column, line, column, key))
            line, column = doc.cursor
            ask()
            at += len(key)
            previous = key
        tally.typing_s += time.perf_counter() - started
        return pending


def _one_done(before: list[Hunk], after: list[Hunk]) -> bool:
    """Whether the change took away exactly one remaining hunk and touched nothing else."""
    if len(after) != len(before) - 1:
        return False
    left = [(h.old, h.new) for h in before]
    for hunk in after:
        key = (hunk.old, hunk.new)
        if key not in left:
            return False
        left.remove(key)
    return True


async def _run_strategy(
    strategy: str,
    tasks: list[NextEditTask],
    sim: SimHandle,
    rhythm: Rhythm,
    seed: int,
    workdir: Path,
    trace_base: Path | None = None,
    settings: dict[str, Any] | None = None,
    order: str = "top-down",
    tokens_per_minute: int = 0,
) -> Tally:
    trace = (
        trace_base.with_name(f"{trace_base.stem}-{strategy}{trace_base.suffix or '.jsonl'}")
        if trace_base is not None
        else workdir / f"trace-{strategy}.jsonl"
    )
    trace.unlink(missing_ok=True)  # the summary reads this run's records only
    client = ReplayClient(trace_path=trace)
    options = {
        "models": {"fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"}},
        "next_edit": {**(settings or {}), "prefetch_on_accept": strategy.endswith("+prefetch")},
        # Unless a budget is asked for: measure what next edits spend, not what a budget lets them spend.
        "prefetch": {"tokens_per_minute": tokens_per_minute or 100_000_000},
        "trace": {"path": str(trace)},
    }
    tally = Tally()
    await client.start(options)
    try:
        runner = _Runner(client, sim, rhythm, seed, workdir / "workspace", order)
        for index, task in enumerate(tasks):
            _progress(f"{strategy}: task {index + 1}/{len(tasks)}")
            await runner.task(task, tally)
        # Let the last records (written when their streams end) reach the file.
        await asyncio.sleep(0.5)
    finally:
        await client.stop()
    if trace.exists():
        tally.trace = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    return tally


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r  {text}   ")
        sys.stderr.flush()


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def summarise(tally: Tally, baseline_keys: int) -> dict[str, Any]:
    records = [r for r in tally.trace if r.get("kind") == "next_edit"]
    asked = [r for r in records if r.get("source") == "model"]
    answered = [r for r in records if r.get("outcome") == "answered"]
    refused: dict[str, int] = {}
    for record in asked:
        for reason in record.get("next_edit", {}).get("refused", []):
            refused[reason] = refused.get(reason, 0) + 1
    outcomes: dict[str, int] = {}
    for record in records:
        outcomes[record["outcome"]] = outcomes.get(record["outcome"], 0) + 1
    tokens = sum(r["tokens"]["in"] + r["tokens"]["out"] for r in records)
    cached = sum(r["tokens"]["cached"] for r in records)

    def phase(record: dict[str, Any], name: str) -> float | None:
        value = record.get("ms", {}).get(name)
        return float(value) if value is not None else None

    def series(name: str, start: str = "", of: list[dict[str, Any]] | None = None) -> list[float]:
        out = []
        for record in answered if of is None else of:
            end_ms, start_ms = phase(record, name), phase(record, start) if start else 0.0
            if end_ms is not None and start_ms is not None:
                out.append(end_ms - start_ms)
        return out

    # The model's time on every request it answered (answered, or overtaken by the next key and, with
    # `rebase`, answering later keys); the server's phases on the requests answered with a model request.
    answered_asking = [r for r in answered if r.get("source") == "model"]
    ttft = series("first_token", "request_sent", asked)
    generation = series("first_line", "first_token", asked)
    debounce = series("debounce_end", of=answered_asking)
    context = series("request_sent", "debounce_end", answered_asking)
    after_model = series("answered", "first_line", answered_asking)
    # The server's own time around the model: building and sending the prompt, and judging the hunk after
    # the model's text made it (the wait for a pause in the typing and the model's time left out).
    own = []
    for record in answered_asking:
        marks = [phase(record, name) for name in ("debounce_end", "request_sent", "first_line", "answered")]
        if None not in marks:
            debounce_end, sent, first_line, done = (float(m or 0.0) for m in marks)
            own.append((sent - debounce_end) + (done - first_line))
    # The server's whole time (request received -> answered) of the suggestions shown that were not
    # prefetched (after a change; after an accept too, without prefetch), by whether the request was asked
    # at once (a clause's end, `[next_edit] pause = "typed"`) or after the pause in the typing: the pause
    # is the part of the user's wait no model speed removes. "rebased": answered from the rewrite an
    # earlier key's request had under way (`[next_edit] rebase`), no request of its own.
    by_wait: dict[str, list[float]] = {"at_once": [], "after_pause": [], "rebased": []}
    for record in answered:
        total, waited = phase(record, "answered"), phase(record, "debounce_end")
        if total is not None and not record.get("prefetched") and record.get("next_edit", {}).get("shown"):
            if record.get("source") == "rebased":
                by_wait["rebased"].append(total)
            else:
                by_wait["after_pause" if (waited or 0.0) >= _AT_ONCE_MS else "at_once"].append(total)
    region = [r["next_edit"]["region_lines"] for r in answered]
    judged = sum(r.get("next_edit", {}).get("hunks", 0) for r in asked)
    model_outcomes: dict[str, int] = {}
    for record in asked:
        model_outcomes[record["outcome"]] = model_outcomes.get(record["outcome"], 0) + 1
    fates: dict[str, int] = {}
    for record in answered:
        fate = record.get("next_edit", {}).get("fate") or "unknown"
        fates[fate] = fates.get(fate, 0) + 1

    def share(part: int, whole: int) -> float | None:
        return round(part / whole, 3) if whole else None

    # A rewrite that changes nothing ends "empty" with no hunk refused: the model's no-op.
    no_change = sum(1 for r in asked if r["outcome"] == "empty" and not r.get("next_edit", {}).get("refused"))
    return {
        "tasks": tally.tasks,
        "later_changes": tally.later_changes,
        "suggested_exactly": tally.suggested_exactly,
        "suggested_exactly_share": round(tally.suggested_exactly / tally.later_changes, 3)
        if tally.later_changes
        else None,
        "later_keys": tally.later_keys,
        "keys_saved": tally.keys_saved,
        "keys_saved_share": round(tally.keys_saved / baseline_keys, 3) if baseline_keys else None,
        "accepted_chars": tally.accepted_chars,
        "shown": tally.shown,
        "wrong_shown": tally.wrong_shown,
        "after_change_ms": {
            "n": len(tally.after_change_ms),
            "p50": _pct(tally.after_change_ms, 0.5),
            "p95": _pct(tally.after_change_ms, 0.95),
        },
        "after_accept_ms": {
            "n": len(tally.after_accept_ms),
            "p50": _pct(tally.after_accept_ms, 0.5),
            "p95": _pct(tally.after_accept_ms, 0.95),
        },
        "shown_server_ms_by_wait": {
            name: {"n": len(values), "p50": _pct(values, 0.5), "p95": _pct(values, 0.95)}
            for name, values in by_wait.items()
        },
        **{
            f"server_ms_p{round(q * 100)}": {
                "debounce": _pct(debounce, q),
                "context_and_send": _pct(context, q),
                "sim_ttft": _pct(ttft, q),
                "sim_generation_to_first_hunk": _pct(generation, q),
                "after_first_hunk": _pct(after_model, q),
                "tandem_own": _pct(own, q),
            }
            for q in (0.5, 0.95)
        },
        "region_lines_median": statistics.median(region) if region else None,
        "context_tokens_median": statistics.median(r["context_tokens"] for r in asked) if asked else None,
        "requests": len(records),
        "model_requests": len(asked),
        # Requests answered from an earlier request's rewrite, and those that tried one, found it
        # disagreeing with the user's newer text, and asked the model.
        "rebased_answers": sum(1 for r in answered if r.get("source") == "rebased"),
        "rebase_disagreed": sum(
            1 for r in asked if r.get("next_edit", {}).get("rebased_from") and not r["next_edit"].get("hedged")
        ),
        # Requests made at once beside an earlier key's rewrite that had not yet streamed as far as the
        # user's change, and those of them that the earlier rewrite answered after all (their own request
        # cancelled, its tokens spent).
        "hedged": sum(1 for r in records if r.get("next_edit", {}).get("hedged")),
        "hedged_answered_by_rebase": sum(
            1 for r in records if r.get("next_edit", {}).get("hedged") and r.get("source") == "rebased"
        ),
        "outcomes": outcomes,
        "model_outcomes": model_outcomes,
        "fates": fates,
        "hunks_judged": judged,
        "refused_hunks": refused,
        "answered_stale": outcomes.get("stale", 0),
        "shares": {
            # Of the model's requests: rewrites that changed nothing, and answers dropped because the
            # document moved on while the model worked; of the requests the client made: those refused
            # as stale before any model was asked (their version already left); of the hunks the model
            # proposed: each reason one was refused; of the suggestions answered: accepts refused as stale.
            "no_change_of_model_requests": share(no_change, len(asked)),
            "stale_of_model_requests": share(model_outcomes.get("stale", 0), len(asked)),
            "stale_before_asking_of_requests": share(
                sum(1 for r in records if r["outcome"] == "stale" and r.get("source") != "model"), len(records)
            ),
            **{f"{reason}_of_hunks": share(count, judged) for reason, count in sorted(refused.items())},
            "accept_refused_stale_of_answered": share(fates.get("stale", 0), len(answered)),
        },
        "tokens": tokens,
        "tokens_cached": cached,
        "tokens_per_accepted_char": round(tokens / tally.accepted_chars, 1) if tally.accepted_chars else None,
    }


def run_next_edits(args: argparse.Namespace) -> int:
    """`tandem replay --next-edits`: returns the exit status; errors the user can fix are one line on stderr."""
    repos: list[Path] | Path | None = args.repo
    repo = repos[0] if isinstance(repos, list) and len(repos) == 1 else repos
    if isinstance(repo, list):
        sys.stderr.write("tandem replay: error: --next-edits takes one --repo\n")
        return 1
    if repo is None:
        sys.stderr.write("tandem replay: error: --next-edits needs --repo PATH (a git repository)\n")
        return 1
    try:
        tasks, looked = next_edit_tasks(repo, limit=args.limit, limits=TaskLimits(min_hunks=max(2, args.min_changes)))
    except GitError as error:
        sys.stderr.write(f"tandem replay: error: {repo}: {error}\n")
        return 1
    if not tasks:
        sys.stderr.write(f"tandem replay: error: no commit among {looked} makes several small changes to one file\n")
        return 1
    try:
        settings = _settings(args.next_edit_setting)
    except ValueError as error:
        sys.stderr.write(f"tandem replay: error: --next-edit-setting: {error}\n")
        return 1
    strategies = [name.strip() for name in str(args.next_edit_strategies).split(",") if name.strip()]
    unknown = [name for name in strategies if name not in STRATEGIES]
    if unknown or not strategies:
        sys.stderr.write(f"tandem replay: error: --next-edit-strategies: one or more of {', '.join(STRATEGIES)}\n")
        return 1
    rhythm = Rhythm(chars_per_s=args.cps, time_scale=args.time_scale)
    # Without next edits the user types every later change: the same key presses at the same rhythm.
    baseline_keys = 0
    for task in tasks:
        lines = task.before.split("\n")
        truth = tuple(task.after.split("\n"))
        remaining = _remaining(lines, truth)
        later = remaining[1:] if args.next_edit_order == "top-down" else remaining[:-1]
        for hunk in later:
            baseline_keys += _keys(char_edit(hunk, Region(0, tuple(lines)), line_count=len(lines)))
    results: dict[str, Any] = {
        "repo": str(repo),
        "commits_scanned": looked,
        "min_changes": max(2, args.min_changes),
        "tasks": len(tasks),
        "simulated": "model output comes from tandem sim (spark profile, real speed), answering from the commit",
        "typing": f"{args.cps:g} chars/s x time scale {args.time_scale:g}",
        "baseline": {"later_keys_typed": baseline_keys, "keys_saved": 0},
        "next_edit_settings": settings,
        "strategies": strategies,
        "order": args.next_edit_order,
        "tokens_per_minute": args.tokens_per_minute or "unlimited",
    }
    with tempfile.TemporaryDirectory(prefix="tandem-next-edits-") as scratch:
        for strategy in strategies:
            # A simulator of its own for each strategy: one shared would start the second with the first's
            # prompts in its cache (the same states, asked again: a time to first token of ~40 ms against
            # ~110) and its random draws where the first left them.
            with start_in_thread(SimSettings(profile="spark", seed=args.seed, error_rate=args.error_rate)) as sim:
                tally = asyncio.run(
                    _run_strategy(
                        strategy,
                        tasks,
                        sim,
                        rhythm,
                        args.seed,
                        Path(scratch),
                        args.trace,
                        settings,
                        args.next_edit_order,
                        args.tokens_per_minute,
                    )
                )
            results[strategy] = summarise(tally, baseline_keys)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    if args.json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
    else:
        sys.stdout.write(render(results))
    return 0


def render(results: dict[str, Any]) -> str:
    lines = [
        f"next edits on {results['repo']}: {results['tasks']} tasks from {results['commits_scanned']} commits "
        f"(SIMULATED model: {results['simulated']}; typing {results['typing']})",
        f"  baseline (no next edits): {results['baseline']['later_keys_typed']} key presses for the later changes",
    ]
    if results.get("next_edit_settings"):
        lines.append(f"  [next_edit] settings: {results['next_edit_settings']}")
    for strategy in results.get("strategies", STRATEGIES):
        r = results[strategy]
        ms, acc, srv, hi = r["after_change_ms"], r["after_accept_ms"], r["server_ms_p50"], r["server_ms_p95"]
        lines += [
            f"  {strategy}:",
            f"    later changes suggested exactly before typing: {r['suggested_exactly']}/{r['later_changes']}"
            f" ({_share(r['suggested_exactly_share'])}); key presses saved {r['keys_saved']}"
            f" ({_share(r['keys_saved_share'])} of the baseline's), characters not typed {r['accepted_chars']}",
            f"    end of change -> suggestion: p50 {ms['p50']} ms, p95 {ms['p95']} ms (n={ms['n']});"
            f" after an accept: p50 {acc['p50']} ms, p95 {acc['p95']} ms (n={acc['n']})",
            "    the server's time for those shown, not prefetched: "
            + "; ".join(
                f"{name.replace('_', ' ')} p50 {w['p50']} ms, p95 {w['p95']} ms (n={w['n']})"
                for name, w in r["shown_server_ms_by_wait"].items()
            ),
            f"    server p50/p95: debounce {srv['debounce']}/{hi['debounce']} ms, context and send"
            f" {srv['context_and_send']}/{hi['context_and_send']} ms, sim TTFT {srv['sim_ttft']}/{hi['sim_ttft']} ms"
            f" (request sent -> first token, loopback HTTP included), generation to the first hunk"
            f" {srv['sim_generation_to_first_hunk']}/{hi['sim_generation_to_first_hunk']} ms,"
            f" {srv['after_first_hunk']}/{hi['after_first_hunk']} ms after it; tandem's own time (context, send,"
            f" judging) {srv['tandem_own']}/{hi['tandem_own']} ms; region {r['region_lines_median']} lines,"
            f" prompt {r['context_tokens_median']} tokens (median)",
            f"    requests {r['requests']} ({r['model_requests']} asked the model, {r['rebased_answers']} answered from"
            f" an earlier key's rewrite, {r['rebase_disagreed']} found it disagreeing, {r['hedged']} asked beside"
            f" one still behind, {r['hedged_answered_by_rebase']} of them answered by it); outcomes {r['outcomes']};"
            f" fates of answered {r['fates']}; refused hunks {r['refused_hunks']} of {r['hunks_judged']} judged;"
            f" wrong suggestions shown {r['wrong_shown']}/{r['shown']}",
            f"    shares: {', '.join(f'{k} {_share(v)}' for k, v in r['shares'].items())}",
            f"    tokens {r['tokens']} ({r['tokens_cached']} of them cached prompt tokens), per accepted character"
            f" {r['tokens_per_accepted_char']}",
        ]
    return "\n".join(lines) + "\n"


def _settings(pairs: list[str]) -> dict[str, Any]:
    """`NAME=VALUE` pairs (VALUE in TOML) as a `[next_edit]` table."""
    import tomllib

    table: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{pair!r} is not NAME=VALUE")
        try:
            table.update(tomllib.loads(f"{name.strip()} = {value.strip()}"))
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{pair!r}: {error}") from None
    return table


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"
