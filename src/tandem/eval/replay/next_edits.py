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
import contextlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from tandem.cache.edit_region import CharEdit, Hunk, Region, char_edit, hunks
from tandem.eval.history import GitError
from tandem.eval.next_edit_tasks import NextEditTask, TaskLimits, next_edit_tasks
from tandem.eval.replay.client import OpenDocument, Pending, ReplayClient
from tandem.eval.replay.keystrokes import Rhythm, key_presses, next_key
from tandem.eval.replay.next_edit_summary import STRATEGIES, Tally, render, summarise
from tandem.sim.runner import SimHandle, SimSettings, start_in_thread

METHOD = "textDocument/copilotInlineEdit"
DID_SHOW = "textDocument/didShowInlineEdit"
DISMISSED = "tandem.nextEditDismissed"
# The longest a suggestion is waited for after a change (a suggestion later than this is not on screen).
_WAIT_S = 5.0


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
    model = getattr(sim, "model", None) or {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"}
    options = {
        "models": {"fast": model},
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
        settings = toml_table(args.next_edit_setting)
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
        "simulated": (
            f"a real model: {args.model} at {args.base_url}, nothing simulated"
            if args.base_url
            else "SIMULATED model: output comes from tandem sim (spark profile, real speed), answering from the commit"
        ),
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
            with _model_for(args) as sim:
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
            results[strategy] = summarise(tally, baseline_keys, local=bool(args.base_url and args.local))
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    if args.json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
    else:
        sys.stdout.write(render(results))
    return 0


@dataclass(frozen=True)
class _RealModel:
    """A real model in the simulator's place (`--base-url`): it is told no truth; `model` is its settings."""

    base_url: str
    model: dict[str, Any]

    def set_next_edit_truth(self, files: dict[str, str]) -> None:
        del files  # a real model predicts; nothing is told it


@contextlib.contextmanager
def _model_for(args: argparse.Namespace) -> Iterator[Any]:
    """The simulator, or with `--base-url` the real model the user named (a simulator of its own per
    strategy: one shared would start the second with the first's prompts in its cache)."""
    if not args.base_url:
        with start_in_thread(SimSettings(profile="spark", seed=args.seed, error_rate=args.error_rate)) as sim:
            yield sim
        return
    model: dict[str, Any] = {"provider": args.provider, "base_url": args.base_url, "model": args.model}
    if args.fim_template:
        model["fim_template"] = args.fim_template
    if args.local:
        model["local"] = True
    if args.api_key_env:
        model["api_key_env"] = args.api_key_env
    yield _RealModel(args.base_url, model)


def toml_table(pairs: list[str]) -> dict[str, Any]:
    """`NAME=VALUE` pairs (VALUE in TOML) as a table (`--next-edit-setting`, `--completion-setting`)."""
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
