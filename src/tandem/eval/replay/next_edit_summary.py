"""What `tandem replay --next-edits` reports: a strategy's client-side tally (`Tally`), the figures drawn
from it and from the server's trace records (`summarise`), and the report as text (`render`); the
figures are described in `tandem.eval.replay.next_edits`'s docstring.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from tandem.eval.edit_cost import cost_usd

__all__ = ["STRATEGIES", "Tally", "render", "summarise"]

STRATEGIES = ("next-edits", "next-edits+prefetch")
# A request that waited less than this before its context was built was asked at once.
_AT_ONCE_MS = 5.0


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


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def summarise(tally: Tally, baseline_keys: int, *, local: bool = False) -> dict[str, Any]:
    """The figures of one strategy's run (`local`: the model runs on this machine and costs no money)."""
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
    tokens_in, tokens_out = sum(r["tokens"]["in"] for r in records), sum(r["tokens"]["out"] for r in records)
    cost = None if local else cost_usd("fast", tokens_in, tokens_out)
    # Tokens of model requests the next key press overtook before their first token: paid for, never read.
    overtaken = sum(r["tokens"]["in"] + r["tokens"]["out"] for r in asked if "first_token" not in r.get("ms", {}))
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
        "cost_usd": None if cost is None else round(cost, 6),
        "usd_per_1000_accepted_chars": (
            round(cost * 1000 / tally.accepted_chars, 4) if cost is not None and tally.accepted_chars else None
        ),
        "tokens_overtaken_before_first_token": overtaken,
        "overtaken_share_of_tokens": share(overtaken, tokens),
    }


def render(results: dict[str, Any]) -> str:
    lines = [
        f"next edits on {results['repo']}: {results['tasks']} tasks from {results['commits_scanned']} commits "
        f"({results['simulated']}; typing {results['typing']})",
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
            f" {r['tokens_per_accepted_char']}; {r['tokens_overtaken_before_first_token']} of them"
            f" ({_share(r['overtaken_share_of_tokens'])}) on requests overtaken before their first token; "
            + _cost(r),
        ]
    return "\n".join(lines) + "\n"


def _cost(r: dict[str, Any]) -> str:
    if r["cost_usd"] is None:
        return "cost none (a model on this machine costs no money)"
    return (
        f"${r['cost_usd']:.4f}, ${r['usd_per_1000_accepted_chars']} per 1,000 accepted characters at the fast"
        " tier's list price (tandem.eval.edit_cost)"
    )


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"
