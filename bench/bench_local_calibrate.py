"""Fit the simulator's local-model error model to what a real model got right, and check it.

    python bench/bench_local_calibrate.py fit REPLAY.json [...]
        Every suggestion a replay showed (`tandem replay --json`'s `shown_log`, from a real model) read as the
        model's token-by-token attempt at the true text (`tandem.sim.local_errors`): right and wrong pieces,
        seen in the prompt or new, the fitted rates, and by suggestion length the share of suggestions that
        were exactly right beside the share the fitted model predicts for the same true text.

    python bench/bench_local_calibrate.py probe --base-url URL --out FILE.json [--every N] [FILES...]
        Ask a llama-server (Qwen2.5-Coder FIM template, greedy, 64 tokens) for a completion at every N-th
        character of the replay's spans (the same spans as `tandem replay --sessions 6 --seed 0`), one request
        at a time, waiting for each: what the model gets right when speed does not decide which keys are
        answered. Writes the answers in the `shown_log` form (`fit` reads it). The answer is cut to its first
        line when the cursor is inside a line (as a ghost is), and where it repeats the text after the span.

    python bench/bench_local_calibrate.py check --profile llama-0.5b REPLAY.json [...]
        The fitted rates of `profile` against the suggestions in REPLAY.json (no fitting): predicted and
        observed share exactly right, and the log-likelihood.

All figures come from real model output in the files given; the model's fit is printed labelled as such.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time
from collections.abc import Iterable

import httpx

from tandem.eval.replay.sources import SOURCE_SUFFIXES, make_tasks, read_source, sample_files
from tandem.sim.local_errors import LOCAL_RATES, Observed, TokenRates, count_pieces, right_chance

_QWEN = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")
_STOP = ["<|endoftext|>", "<|fim_pad|>", "<|file_sep|>"]
_PROMPT_PREFIX_CHARS = 3000
_PROMPT_SUFFIX_CHARS = 400


def _files(paths: list[pathlib.Path], sessions: int, seed: int) -> list[pathlib.Path]:
    if not paths:
        return sample_files(sessions, seed=seed)
    found: list[pathlib.Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())
        else:
            found.append(path)
    return found


def distinct(items: Iterable[dict[str, object]]) -> list[dict[str, object]]:
    """The entries that are a model's own answer: one answer shown again while the typist types into it
    (the same end, each a tail of the last) counts once, where it was first shown."""
    out: list[dict[str, object]] = []
    last: dict[str, object] | None = None
    for item in items:
        if last is not None and (last["file"], last["span_start"]) == (item["file"], item["span_start"]):
            end = int(str(item["at"])) + len(str(item["text"]))
            last_end = int(str(last["at"])) + len(str(last["text"]))
            if end == last_end and str(last["text"]).endswith(str(item["text"])):
                continue
        out.append(item)
        last = item
    return out


def observed_from(items: Iterable[dict[str, object]]) -> list[Observed]:
    """`shown_log` entries as Observed (the file's text read again; the document is the file with the span
    typed up to `at`), one per distinct answer."""
    texts: dict[str, str] = {}
    out: list[Observed] = []
    for item in distinct(items):
        path = str(item["file"])
        if path not in texts:
            texts[path] = read_source(pathlib.Path(path))
        text = texts[path]
        start, at = int(str(item["span_start"])), int(str(item["at"]))
        end = int(str(item["span_end"]))
        out.append(
            Observed(
                prefix=text[: start + at],
                suffix=text[end:],
                text=str(item["text"]),
                truth=str(item["truth"]),
            )
        )
    return out


def _load(paths: list[str]) -> list[Observed]:
    items: list[dict[str, object]] = []
    for name in paths:
        data = json.loads(pathlib.Path(name).read_text())
        items += data["shown_log"]
    return observed_from(items)


def _bucket(item: Observed) -> str:
    tokens = len(item.text) / 4
    if tokens <= 3:
        return "1-3 tokens"
    if tokens <= 8:
        return "4-8 tokens"
    if tokens <= 20:
        return "9-20 tokens"
    return "21+ tokens"


def _exact(item: Observed) -> bool:
    return item.truth.startswith(item.text)


def report(observed: list[Observed], rates: TokenRates, *, label: str) -> list[str]:
    """Observed and predicted share exactly right, overall and by suggestion length."""
    lines = [f"{label}: seen {rates.seen:.3f}, new {rates.new:.3f} (chance a piece is right)"]
    groups: dict[str, list[Observed]] = {}
    for item in observed:
        groups.setdefault(_bucket(item), []).append(item)
    log_likelihood = 0.0
    for item in observed:
        # The chance of the observed outcome for the true text as long as the suggestion.
        target = item.truth[: len(item.text)]
        p = right_chance(target, item.prefix, item.suffix, rates)
        p = min(max(p, 1e-6), 1 - 1e-6)
        log_likelihood += math.log(p if _exact(item) else 1 - p)
    for name in ("1-3 tokens", "4-8 tokens", "9-20 tokens", "21+ tokens", "all"):
        group = observed if name == "all" else groups.get(name, [])
        if not group:
            continue
        right = sum(_exact(i) for i in group)
        predicted = sum(right_chance(i.truth[: len(i.text)], i.prefix, i.suffix, rates) for i in group)
        lines.append(
            f"  {name:>12}: {len(group):4} shown, exactly right {right / len(group):6.1%} (real), "
            f"{predicted / len(group):6.1%} predicted by the fitted model"
        )
    lines.append(f"  log-likelihood of exactly-right/wrong under the model: {log_likelihood:.1f}")
    return lines


def cmd_fit(args: argparse.Namespace) -> int:
    observed = _load(args.replays)
    counts = count_pieces(observed)
    rates = counts.rates()
    print(f"{len(observed)} suggestions from real model output in {', '.join(args.replays)}")
    print(
        f"pieces: seen {counts.seen_right} right / {counts.seen_wrong} wrong; new {counts.new_right} right / "
        f"{counts.new_wrong} wrong; {counts.ran_past_end} ran on past the span's end"
    )
    print("\n".join(report(observed, rates, label="fitted (maximum likelihood)")))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    observed = _load(args.replays)
    print(f"{len(observed)} suggestions from real model output in {', '.join(args.replays)}")
    print("\n".join(report(observed, LOCAL_RATES[args.profile], label=f"the simulator's {args.profile} rates")))
    return 0


def _first_line_if_inside(prefix: str, answer: str) -> str:
    line = prefix[prefix.rfind("\n") + 1 :]
    return answer.split("\n", 1)[0] if line.strip() else answer


def cmd_probe(args: argparse.Namespace) -> int:
    tasks = make_tasks(_files(args.files, args.sessions, args.seed), args.sessions, seed=args.seed)
    log: list[dict[str, object]] = []
    started = time.perf_counter()
    with httpx.Client(timeout=120) as client:
        for task in tasks:
            text, span = task.text, task.span
            # The window starts at one place for the whole span (at a line start), so that each prompt
            # extends the last one and the server's cache serves all but the new characters and the suffix.
            window_start = text.rfind("\n", 0, max(0, task.start - _PROMPT_PREFIX_CHARS)) + 1
            for at in range(0, len(span), args.every):
                prefix = text[: task.start + at]
                suffix = text[task.end :]
                prompt = f"{_QWEN[0]}{prefix[window_start:]}{_QWEN[1]}{suffix[:_PROMPT_SUFFIX_CHARS]}{_QWEN[2]}"
                inside = bool(prefix[prefix.rfind("\n") + 1 :].strip())
                response = client.post(
                    f"{args.base_url}/completions",
                    json={
                        "prompt": prompt,
                        "max_tokens": 48,
                        "temperature": 0,
                        # Inside a line a ghost is one line: the rest is not needed.
                        "stop": [*_STOP, "\n"] if inside else _STOP,
                        "cache_prompt": True,
                    },
                )
                response.raise_for_status()
                answer = str(response.json()["choices"][0]["text"])
                answer = _first_line_if_inside(prefix, answer)
                # What repeats the text after the span is no part of a suggestion (tandem drops it).
                rest = span[at:]
                if answer.startswith(rest) and suffix.startswith(answer[len(rest) :]):
                    answer = rest
                if not answer.strip():
                    continue
                log.append(
                    {
                        "file": str(task.path),
                        "span_start": task.start,
                        "span_end": task.end,
                        "at": at,
                        "text": answer,
                        "truth": span[at : at + len(answer) + 80],
                        "accepted": span.startswith(answer, at),
                    }
                )
                print(f"{task.path.name}:{at} {answer[:60]!r} {'right' if log[-1]['accepted'] else 'wrong'}")
    pathlib.Path(args.out).write_text(
        json.dumps(
            {"base_url": args.base_url, "every": args.every, "seconds": time.perf_counter() - started, "shown_log": log}
        )
    )
    right = sum(bool(item["accepted"]) for item in log)
    print(f"{len(log)} answers, {right} exactly right, in {time.perf_counter() - started:.0f} s -> {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    fit = sub.add_parser("fit")
    fit.add_argument("replays", nargs="+")
    check = sub.add_parser("check")
    check.add_argument("--profile", default="llama-0.5b", choices=sorted(LOCAL_RATES))
    check.add_argument("replays", nargs="+")
    probe = sub.add_parser("probe")
    probe.add_argument("--base-url", required=True)
    probe.add_argument("--out", required=True)
    probe.add_argument("--every", type=int, default=8)
    probe.add_argument("--sessions", type=int, default=6)
    probe.add_argument("--seed", type=int, default=0)
    probe.add_argument("files", nargs="*", type=pathlib.Path)
    args = parser.parse_args(argv)
    return {"fit": cmd_fit, "check": cmd_check, "probe": cmd_probe}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
