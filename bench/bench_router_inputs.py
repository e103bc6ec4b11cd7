"""Command -> first model request for one-line edits in a repository with a long history (real, not simulated).

`tandem serve` runs as a subprocess over stdio with the repository as its workspace folder; both models are
the simulator's `instant` profile on loopback (no model time: what is measured is tandem's own, before it
asks a model). For each of `--edits` Python files of the repository, newest-changed first, the client opens
the file and at once sends `tandem.edit` on one line (the first `def` line, else the middle line): the
edit's git reads (`completion.routing.inputs`) had no head start beyond the open. The figure is each edit's
first model request's start after the server received the command (the trace's `edit.attempts[0].started_ms`),
p50/p95/max, and how many edits named late router inputs in their route reasons. One edit in a file outside
the measured ones runs first, not counted (it waits for the workspace scan).

`--offer-ms MS` first asks for the selection's code actions, as a client does when the user opens its
action menu (VS Code asks on every selection), and sends the command MS ms later (the user picking the edit
and typing its instruction): the server starts the selected lines' history when it offers the edit.

`--pythonpath DIR` starts the server from another checkout staged as `.ci/typecheck` stages one (DIR holds a
`tandem/` package), to measure before and after with the same client.

    python bench/bench_router_inputs.py --repo ../histories-work/flask [--edits 20] [--offer-ms MS] [--json]
        [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
from typing import Any

from lsprotocol import types

from tandem.eval.replay.client import ReplayClient
from tandem.sim.runner import SimSettings, start_in_thread


def _python_files(repo: pathlib.Path, count: int) -> list[str]:
    """The repository's tracked Python files, most recently changed first (the ones being worked on)."""
    out = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=", "--name-only", "-n", "400", "--", "*.py"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    seen: list[str] = []
    for name in out.splitlines():
        if name and name not in seen and (repo / name).is_file():
            seen.append(name)
    return seen[: count + 1]


def _one_line(text: str, second: bool) -> tuple[int, int]:
    """The first `def` line (the second one on the second pass), else the middle line."""
    lines = text.split("\n")
    defs = [number for number, line in enumerate(lines) if line.lstrip().startswith("def ")]
    if len(defs) > int(second):
        return defs[int(second)], len(lines[defs[int(second)]])
    middle = len(lines) // 2 + int(second)
    middle = min(middle, len(lines) - 1)
    return middle, len(lines[middle])


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _edit_records(trace: pathlib.Path) -> list[dict[str, Any]]:
    records = []
    for line in trace.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "edit":
            records.append(record)
    return records


async def _run(repo: pathlib.Path, edits: int, pythonpath: str | None, offer_ms: float | None) -> dict[str, Any]:
    files = _python_files(repo, edits)
    with (
        start_in_thread(SimSettings(profile="instant")) as fast,
        start_in_thread(SimSettings(profile="instant")) as accurate,
        tempfile.TemporaryDirectory(prefix="tandem-bench-") as scratch,
    ):
        trace = pathlib.Path(scratch) / "trace.jsonl"
        env = {**os.environ, "XDG_CONFIG_HOME": scratch, "XDG_STATE_HOME": scratch}
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        client = ReplayClient(trace_path=trace, env=env)
        init = {
            "models": {
                "fast": {"provider": "openai-chat", "base_url": fast.base_url, "model": "sim-instant"},
                "accurate": {"provider": "openai-chat", "base_url": accurate.base_url, "model": "sim-instant"},
            },
            "next_edit": {"enabled": False},
        }
        await client.start(init, root=repo)
        try:
            # Pass 1: each file opened and edited at once (its git reads start at the open). Pass 2: another
            # one-line edit in each (the file's history and the repository's commits are cached by then).
            for second in (False, True):
                for path in files:
                    text = (repo / path).read_text("utf-8")
                    uri = (repo / path).as_uri()
                    if not second:
                        client.open(uri=uri, language_id="python", text=text, cursor=0)
                    line, length = _one_line(text, second)
                    selection = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": length}}
                    argument = {"uri": uri, "range": selection, "instruction": "Fix the typo in this line."}
                    if offer_ms is not None:
                        start, end = types.Position(line=line, character=0), types.Position(line=line, character=length)
                        where = types.Range(start=start, end=end)
                        offered = asyncio.ensure_future(client.code_actions(uri, where))
                        await asyncio.sleep(offer_ms / 1000)  # the user picks the edit and types
                        await asyncio.wait_for(offered, 30)
                    await asyncio.wait_for(client.execute_async("tandem.edit", [argument]), 120)
        finally:
            await client.stop()
        records = _edit_records(trace)
    # The first edit waited for the workspace scan: not counted (nor its second-pass twin).
    passes = {"first edit in a file": records[1 : len(files)], "second edit in it": records[len(files) + 1 :]}
    return {"repo": str(repo), "offer_ms": offer_ms, **{name: _figures(rows) for name, rows in passes.items()}}


def _figures(records: list[dict[str, Any]]) -> dict[str, Any]:
    first_ms = [float(r["ms"]["request_sent"]) for r in records if "request_sent" in r.get("ms", {})]
    late = sum(1 for r in records if any("not read in time" in reason for reason in r.get("route_reasons", [])))
    return {
        "edits": len(first_ms),
        "p50_ms": round(statistics.median(first_ms), 1) if first_ms else None,
        "p95_ms": round(_percentile(first_ms, 0.95), 1) if first_ms else None,
        "max_ms": round(max(first_ms), 1) if first_ms else None,
        "decided_with_late_inputs": late,
        "with_route_reasons": sum(1 for r in records if r.get("route_reasons")),
        "first_request_ms": [round(v, 1) for v in first_ms],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repo", type=pathlib.Path, required=True)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--pythonpath", default=None)
    parser.add_argument("--offer-ms", type=float, default=None, help="ask for code actions this long before")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    # The client answers no window/workDoneProgress/create (progress is not measured): pygls logs each.
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    result = asyncio.run(_run(args.repo.resolve(), args.edits, args.pythonpath, args.offer_ms))
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return
    for name in ("first edit in a file", "second edit in it"):
        f = result[name]
        sys.stdout.write(
            f"command -> first model request, {name}, {f['edits']} one-line edits in {result['repo']}"
            f"{'' if args.offer_ms is None else f', code actions asked {args.offer_ms:g} ms before'} (real; models: "
            f"the simulator's instant profile): p50 {f['p50_ms']} ms, p95 {f['p95_ms']} ms, max {f['max_ms']} ms; "
            f"{f['decided_with_late_inputs']} decided before every router input was read (named in the trace); "
            f"{f['with_route_reasons']} with route reasons in the trace\n"
        )


if __name__ == "__main__":
    main()
