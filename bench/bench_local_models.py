"""Real models beside the simulator: edits on a git history with the local pair (Qwen2.5-Coder 0.5B as fast,
1.5B as accurate, each in its own `llama-server`), through tandem's real edit path.

    python bench/bench_local_models.py edits --repo ../histories-work/flask --limit 6 [--json]

Needs `tandem local setup` (both models). Starts the two servers on loopback (`-t 1 -np 1`), asks every
task of the history's last `--limit` commits once with the fast model alone and once with the accurate model
alone (the baselines the strategies are built from), and prints per task the router's score and what each
model did, then: correct edits, wait (wall clock, p50 and total), whether the accurate model fixed what the
fast one got wrong, and how the router's score separates the tasks the fast model got wrong.

The judge: after the edit is applied, every file the commit changed reads as the commit left it once all runs
of whitespace are one space. It sees only text: an edit that works but differs from the commit is "wrong",
and nothing is run. Real model output; nothing here is simulated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import statistics
import sys
import tempfile

from tandem.completion.config.tree import ModelConfig
from tandem.eval.edit_eval import Models, evaluate_edits
from tandem.local.servers import chat_settings, running_pair

STRATEGIES = ("always-fast", "always-accurate")


def _model(values: dict[str, object]) -> ModelConfig:
    return ModelConfig(
        provider="openai-chat",
        base_url=str(values["base_url"]),
        model=str(values["model"]),
        local=True,
        max_tokens=int(str(values["max_tokens"])),
        context_tokens=int(str(values["context_tokens"])),
        timeout_s=600.0,
    )


def run_edits(repo: pathlib.Path, limit: int, *, fast_port: int, accurate_port: int) -> dict[str, object]:
    with (
        tempfile.TemporaryDirectory(prefix="tandem-bench-local-") as logs,
        running_pair(fast_port=fast_port, accurate_port=accurate_port, log_dir=pathlib.Path(logs)) as (fast, acc),
    ):
        assert acc is not None
        models = Models(
            fast_url=fast.base_url,
            accurate_url=acc.base_url,
            fast_config=_model(chat_settings(fast)),
            accurate_config=_model(chat_settings(acc)),
        )
        result = asyncio.run(
            evaluate_edits(
                repo,
                models,
                set_truth=lambda _url, _files: None,
                limit=limit,
                strategies=STRATEGIES,
                progress=lambda done, total: sys.stderr.write(f"  task {done + 1}/{total}\n"),
            )
        )
    rows = []
    for run in result.runs:
        rows.append(
            {
                "commit": run.commit,
                "instruction": run.instruction[:60],
                "changed_lines": run.changed_lines,
                "score": round(run.score, 3),
                "fast": run.results.get("always-fast"),
                "accurate": run.results.get("always-accurate"),
                "fast_s": run.simulated_s.get("always-fast"),
                "accurate_s": run.simulated_s.get("always-accurate"),
                "tokens": run.tokens,
            }
        )
    return {"repo": str(repo), "tasks": rows, "summary": summarise(rows)}


def summarise(rows: list[dict[str, object]]) -> dict[str, object]:
    def count(model: str) -> int:
        return sum(1 for r in rows if r[model] == "correct")

    def waits(model: str) -> list[float]:
        return [float(str(r[f"{model}_s"])) for r in rows if r[f"{model}_s"] is not None]

    fast_wrong = [r for r in rows if r["fast"] != "correct"]
    fixed = sum(1 for r in fast_wrong if r["accurate"] == "correct")
    scores_wrong = [float(str(r["score"])) for r in fast_wrong]
    scores_right = [float(str(r["score"])) for r in rows if r["fast"] == "correct"]
    return {
        "tasks": len(rows),
        "fast_correct": count("fast"),
        "accurate_correct": count("accurate"),
        "fast_wait_s_p50": round(statistics.median(waits("fast")), 1) if waits("fast") else None,
        "accurate_wait_s_p50": round(statistics.median(waits("accurate")), 1) if waits("accurate") else None,
        "fast_wait_s_total": round(sum(waits("fast")), 1),
        "accurate_wait_s_total": round(sum(waits("accurate")), 1),
        "accurate_fixed_fast_wrong": f"{fixed} of {len(fast_wrong)}",
        "router_score_mean_fast_wrong": round(statistics.mean(scores_wrong), 3) if scores_wrong else None,
        "router_score_mean_fast_right": round(statistics.mean(scores_right), 3) if scores_right else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    edits = commands.add_parser("edits", help="edits on a git history with the local pair")
    edits.add_argument("--repo", type=pathlib.Path, required=True)
    edits.add_argument("--limit", type=int, default=6)
    edits.add_argument("--fast-port", type=int, default=8022)
    edits.add_argument("--accurate-port", type=int, default=8023)
    edits.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = run_edits(args.repo, args.limit, fast_port=args.fast_port, accurate_port=args.accurate_port)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"real models (not simulated): edits on {data['repo']}, 0.5B fast, 1.5B accurate, llama-server -t 1")
    for row in data["tasks"]:  # type: ignore[attr-defined]
        print(
            f"  {row['commit']} {row['changed_lines']:4d} lines  score {row['score']:.2f}  fast {row['fast']:8s} "
            f"{row['fast_s']:6.1f} s  accurate {row['accurate']:8s} {row['accurate_s']:6.1f} s  {row['instruction']}"
        )
    for key, value in data["summary"].items():  # type: ignore[attr-defined]
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
