"""The next-edit replay's report: a model on this machine is reported as costing nothing, a cloud one at its
tier's list price."""

from __future__ import annotations

from tandem.eval.replay.next_edit_summary import Tally, render, summarise

RECORD = {
    "kind": "next_edit",
    "source": "model",
    "outcome": "answered",
    "tokens": {"in": 2000, "out": 40, "cached": 0},
    "ms": {"first_token": 900.0},
    "context_tokens": 2000,
    "next_edit": {"fate": "shown", "region_lines": 7, "hunks": 1, "refused": [], "shown": True},
}


def _report(*, local: bool) -> tuple[dict[str, object], str]:
    tally = Tally(tasks=1, later_changes=2, later_keys=10, accepted_chars=8, trace=[RECORD])
    figures = summarise(tally, 10, local=local)
    results = {
        "repo": "r",
        "tasks": 1,
        "commits_scanned": 1,
        "simulated": "a real model",
        "typing": "6 chars/s",
        "baseline": {"later_keys_typed": 10},
        "strategies": ["next-edits"],
        "next-edits": figures,
    }
    return figures, render(results)


def test_a_local_model_costs_nothing_and_a_cloud_one_its_list_price() -> None:
    local, local_text = _report(local=True)
    assert local["cost_usd"] is None and "cost none (a model on this machine costs no money)" in local_text
    cloud, cloud_text = _report(local=False)
    assert isinstance(cloud["cost_usd"], float) and cloud["cost_usd"] > 0
    assert f"${cloud['cost_usd']:.4f}" in cloud_text and "list price" in cloud_text
