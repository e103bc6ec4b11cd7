"""`tandem replay` and `tandem demo`: options, a progress bar on stderr, and the printed summary.

`tandem.cli` adds these options to its subcommands and calls `run_replay` / `run_demo`. Errors the user can
fix are one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import pathlib
import sys
import time
from typing import IO, TYPE_CHECKING, Any

from tandem.eval.replay.runner import ReplayOptions, replay
from tandem.eval.replay.sources import SOURCE_SUFFIXES
from tandem.eval.replay.summary import Summary, format_summary

if TYPE_CHECKING:
    from tandem.eval.replay.session import Tally

DEMO_SECONDS = 20.0
DEMO_SESSIONS = 32
_BAR_WIDTH = 30


def _positive(kind: type[int] | type[float]) -> argparse._ActionType:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
        return value

    return parse


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="seed for the files, spans and typing rhythm (default 0)")
    parser.add_argument(
        "--time-scale",
        type=_positive(float),
        default=0.25,
        metavar="X",
        help="multiply every pause, the typist's and the built-in simulator's, by X (default 0.25: 4x real time)",
    )
    parser.add_argument(
        "--cps", type=_positive(float), default=6.0, metavar="CHARS_PER_S", help="typing speed (default 6)"
    )
    parser.add_argument(
        "--profile",
        choices=("spark", "codex", "llama-0.5b"),
        default="spark",
        help="speed profile of the built-in simulator (llama-0.5b: a local llama-server, one slot, prompt reading "
        "at 120 tokens/s)",
    )
    parser.add_argument(
        "--error-rate",
        type=_fraction,
        default=0.1,
        help="chance that the simulator's answer is wrong (default 0.1); the local profiles follow their error "
        "model fitted to the real models instead, which 0 turns off",
    )
    parser.add_argument(
        "--trace",
        type=pathlib.Path,
        metavar="FILE",
        help="trace file (default: a new temp file; with --next-edits one per strategy, FILE-STRATEGY.jsonl)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    """The `tandem replay` options."""
    parser.add_argument(
        "files",
        nargs="*",
        type=pathlib.Path,
        metavar="FILES",
        help="source files or directories to replay (default: a sample of the Python standard library)",
    )
    parser.add_argument("--sessions", type=_positive(int), default=6, metavar="N", help="spans to type (default 6)")
    _add_common(parser)
    parser.add_argument(
        "--base-url", metavar="URL", default="", help="use this OpenAI-compatible provider instead of the simulator"
    )
    parser.add_argument("--model", default="", help="model name at --base-url")
    parser.add_argument("--provider", choices=("openai-chat", "fim"), default="openai-chat", help="API at --base-url")
    parser.add_argument("--api-key-env", default="", metavar="NAME", help="environment variable holding the API key")
    parser.add_argument("--max-tokens", type=_positive(int), default=96, help="tokens per completion (default 96)")
    parser.add_argument(
        "--fim-template", default="", metavar="NAME", help="with --provider fim: the model's FIM template (raw prompt)"
    )
    parser.add_argument(
        "--completion-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a [completion] setting for the server, as TOML (e.g. early_units=false); repeatable",
    )
    parser.add_argument(
        "--read-first",
        type=_positive(float),
        default=None,
        metavar="S",
        help="after opening each file, wait up to S seconds for a completion at the cursor before typing (the "
        "user reading the file; not counted as a key): a local model reads the file's prompt meanwhile",
    )
    parser.add_argument(
        "--rest",
        type=_positive(float),
        default=None,
        metavar="S",
        help="after opening each file, rest the cursor S seconds before typing (the user looking at the file), "
        "telling the server where it rests (tandem/warm) as the VS Code extension does",
    )
    parser.add_argument(
        "--no-warm",
        action="store_true",
        help="with --rest: do not tell the server where the cursor rests (the editor before tandem/warm)",
    )
    parser.add_argument(
        "--local",
        action="store_true",
        help="the model at --base-url runs on this machine ([models.fast] local = true: stable prompts, one "
        "request at a time, no money)",
    )
    from tandem.eval.replay.edits import add_edit_arguments
    from tandem.eval.replay.next_edits import add_next_edit_arguments

    add_edit_arguments(parser)
    add_next_edit_arguments(parser)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """The `tandem demo` options."""
    parser.add_argument(
        "--seconds",
        type=_positive(float),
        default=DEMO_SECONDS,
        metavar="N",
        help=f"type for about N seconds (default {DEMO_SECONDS:g})",
    )
    parser.add_argument(
        "--local",
        action="store_true",
        help="a real model instead of the simulator: llama-server with Qwen2.5-Coder 0.5B on this machine "
        "(run `tandem local setup` once first), typed at real speed",
    )
    _add_common(parser)


def _expand(paths: list[pathlib.Path]) -> tuple[pathlib.Path, ...]:
    """Files as given; directories as the source files under them, in a stable order."""
    found: list[pathlib.Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())
        else:
            found.append(path)
    return tuple(found)


class ProgressBar:
    """A plain-text progress bar on a stream: redrawn in place on a terminal, a line per tenth otherwise."""

    def __init__(self, *, budget_s: float | None, out: IO[str] = sys.stderr) -> None:
        self._budget_s = budget_s
        self._last: Tally | None = None
        self._out = out
        self._tty = out.isatty()
        # The clock starts at the first key press: the budget counts typing, not start-up.
        self._started: float | None = None
        self._drawn_at = 0.0
        self._tenths_shown = -1

    def _fraction(self, tally: Tally, elapsed_s: float) -> float:
        keys = (tally.typed_chars + tally.accepted_chars) / max(tally.planned_chars, 1)
        if self._budget_s is None:
            return min(keys, 1.0)
        return min(max(keys, elapsed_s / self._budget_s), 1.0)

    def finish(self) -> None:
        """Draw the bar at 100% and end its line."""
        if self._last is not None:
            self(self._last, final=True)

    def __call__(self, tally: Tally, *, final: bool = False) -> None:
        self._last = tally
        now = time.perf_counter()
        if self._started is None:
            self._started = now
        elapsed_s = now - self._started
        fraction = 1.0 if final else self._fraction(tally, elapsed_s)
        tenths = int(fraction * 10)
        if self._tty and not final and now - self._drawn_at < 0.1:
            return
        if not self._tty and not final and tenths <= self._tenths_shown:
            return
        self._drawn_at, self._tenths_shown = now, tenths
        filled = int(fraction * _BAR_WIDTH)
        line = (
            f"[{'#' * filled}{'.' * (_BAR_WIDTH - filled)}] {fraction * 100:3.0f}%  {elapsed_s:5.1f} s  "
            f"requests {tally.requests}  shown {tally.shown}  accepted {tally.accepted}"
        )
        self._out.write(("\r" + line + ("\n" if final else "")) if self._tty else line + "\n")
        self._out.flush()


def _print(summary: Summary, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(summary.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(format_summary(summary))


def _run(options: ReplayOptions, *, command: str, as_json: bool, show_progress: bool) -> int:
    from tandem.eval.replay.client import ServerFailed
    from tandem.eval.replay.sources import SourceError
    from tandem.eval.trace_report import TraceReadError
    from tandem.sim.settings import SimConfigError

    # pygls warns about every server notification the client has no handler for: not for a user to read.
    logging.getLogger("pygls").setLevel(logging.ERROR)
    bar = ProgressBar(budget_s=options.budget_s) if show_progress else None
    try:
        summary = asyncio.run(replay(options, progress=bar))
    except (SourceError, SimConfigError, ServerFailed, TraceReadError, OSError) as error:
        sys.stderr.write(f"tandem {command}: error: {error}\n")
        return 1
    if bar is not None:
        bar.finish()
    _print(summary, as_json)
    return 0


def run_replay(args: argparse.Namespace) -> int:
    """`tandem replay`."""
    if args.edits:
        from tandem.eval.replay.edits import run_edits

        return run_edits(args)
    if args.next_edits:
        from tandem.eval.replay.next_edits import run_next_edits

        return run_next_edits(args)
    if args.base_url and not args.model:
        sys.stderr.write("tandem replay: error: --base-url needs --model (the model to ask at that URL)\n")
        return 1
    options = ReplayOptions(
        files=_expand(args.files),
        sessions=args.sessions,
        seed=args.seed,
        time_scale=args.time_scale,
        chars_per_s=args.cps,
        base_url=args.base_url,
        model=args.model,
        provider=args.provider,
        api_key_env=args.api_key_env,
        profile=args.profile,
        error_rate=args.error_rate,
        max_tokens=args.max_tokens,
        fim_template=args.fim_template,
        local=args.local,
        warm_s=args.read_first or 0.0,
        rest_s=args.rest or 0.0,
        rest_warm=not args.no_warm,
        settings={"completion": _completion_settings(args.completion_setting)} if args.completion_setting else {},
        trace_path=args.trace,
    )
    return _run(options, command="replay", as_json=args.json, show_progress=False)


def run_demo(args: argparse.Namespace) -> int:
    """`tandem demo`: the simulator, the server and a short replay of the standard library, with progress."""
    if args.local:
        return _run_local_demo(args)
    options = ReplayOptions(
        sessions=DEMO_SESSIONS,
        seed=args.seed,
        time_scale=args.time_scale,
        chars_per_s=args.cps,
        profile=args.profile,
        error_rate=args.error_rate,
        trace_path=args.trace,
        budget_s=args.seconds,
    )
    if not args.json:
        sys.stderr.write(
            "tandem demo: typing real standard-library code into `tandem serve`, with completions from the "
            f"built-in simulator (no network, no API key), for about {args.seconds:g} s\n"
        )
    return _run(options, command="demo", as_json=args.json, show_progress=True)


# The local demo types at real speed: a model on this machine does not get faster with the clock.
LOCAL_DEMO_SECONDS = 90.0
LOCAL_DEMO_READ_S = 60.0


def _run_local_demo(args: argparse.Namespace) -> int:
    """`tandem demo --local`: llama-server with the 0.5B, the server, and the replay at real speed."""
    from tandem.local.servers import LocalServerError, free_port, model_settings, running_pair

    seconds = args.seconds if args.seconds != DEMO_SECONDS else LOCAL_DEMO_SECONDS
    if not args.json:
        sys.stderr.write(
            "tandem demo: typing real standard-library code into `tandem serve` at real speed, with completions "
            f"from Qwen2.5-Coder 0.5B on this machine (llama-server), for about {seconds:g} s of typing; before "
            "typing in a file the typist waits for the model's first suggestion there (it reads the file's prompt "
            "first: 10-40 s on two cores)\n"
        )
    try:
        with running_pair(fast_port=free_port(), accurate_port=None) as (fast, _):
            model = model_settings(fast)
            options = ReplayOptions(
                sessions=DEMO_SESSIONS,
                seed=args.seed,
                time_scale=1.0,
                chars_per_s=args.cps,
                base_url=fast.base_url,
                model=str(model["model"]),
                provider="fim",
                fim_template=str(model["fim_template"]),
                local=True,
                max_tokens=int(str(model["max_tokens"])),
                trace_path=args.trace,
                budget_s=seconds,
                # The user reads a file before typing in it; the server reads its prompt meanwhile (the first
                # request in a file reads ~1,500 tokens: 10-40 s on two cores).
                warm_s=LOCAL_DEMO_READ_S,
            )
            return _run(options, command="demo", as_json=args.json, show_progress=True)
    except LocalServerError as error:
        sys.stderr.write(f"tandem demo: error: {error}\n")
        return 1


def _completion_settings(pairs: list[str]) -> dict[str, Any]:
    """`--completion-setting NAME=VALUE` pairs as a `[completion]` table."""
    from tandem.eval.replay.next_edits import toml_table

    try:
        return toml_table(pairs)
    except ValueError as error:
        raise SystemExit(f"tandem replay: error: --completion-setting: {error}") from None
