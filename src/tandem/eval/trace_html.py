"""`tandem trace report FILE... --html OUT`: one self-contained HTML page of plots from trace records.

Made with plotly (the `report` extra), its JavaScript inlined so the page opens offline and the plots stay
interactive (hover a bar to see the request, zoom into a time range). The plots, in page order:

    latency CDF per path      ms from received to answered, completions only, one curve per path:
                              stream reuse (source "stream"), cache (source "cache"), model (source "model")
    slowest requests          a waterfall of the 25 slowest requests' phases (one bar segment per phase)
    TTFT vs waited            time to first token against what the user waited (received -> answered)
    answered without a wait   share of completion requests answered from model output that already
                              existed, without waiting (the replay summary's definition), per time bucket
    route mix                 requests per route reason, coloured by tier
    acceptance                suggestions shown, accepted; edits applied, rejected, failed
    tokens and cost per model prompt (uncached, cached) and output tokens; estimated cost (cost_usd)
    cached-token share        cached / prompt tokens per model, per time bucket

Every plot area sits in a fixed-size cell (`CELL_WIDTH_PX` x `CELL_HEIGHT_PX`, two per row, under a header of
`HEADER_HEIGHT_PX`), so a screenshot's plot areas are at known places. Large traces are sampled for drawing
(curves to `_CDF_POINTS` points, scatters to `_SCATTER_POINTS`); the header's figures use every record.
"""

from __future__ import annotations

import datetime
import html
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tandem.completion.observe.trace import PHASES

if TYPE_CHECKING:
    import plotly.graph_objects as go

HEADER_HEIGHT_PX = 120
CELL_WIDTH_PX = 690
CELL_HEIGHT_PX = 440
CELL_GAP_PX = 10
PLOTS: tuple[str, ...] = (
    "latency-cdf",
    "waterfall",
    "ttft-vs-waited",
    "no-wait-share",
    "route-mix",
    "acceptance",
    "tokens-cost",
    "cached-share",
)

COMPLETION_KINDS = frozenset({"inline", "completion"})
PATHS: dict[str, str] = {"stream": "stream reuse", "cache": "cache", "model": "model"}
_CDF_POINTS = 400
_SCATTER_POINTS = 5_000
_SLOWEST = 25
_TIME_BUCKETS = 40
_REASONS_SHOWN = 12


class ReportExtraMissing(Exception):
    """plotly is not installed; the message says how to install it."""


def _ms(record: Mapping[str, Any], phase: str) -> float | None:
    value = record["ms"].get(phase)
    return float(value) if value is not None else None


def _completions(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in records if r["kind"] in COMPLETION_KINDS]


def _no_wait(record: Mapping[str, Any]) -> bool:
    return (
        record.get("source") in ("stream", "cache")
        and record.get("outcome") in ("shown", "empty")
        and record.get("waited_for_model") is not True
    )


def _sample(values: Sequence[Any], limit: int) -> list[Any]:
    if len(values) <= limit:
        return list(values)
    step = len(values) / limit
    return [values[int(i * step)] for i in range(limit)]


def _buckets(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Records grouped into up to `_TIME_BUCKETS` equal spans of `received_at` (ISO start time, records)."""
    timed = [r for r in records if isinstance(r.get("received_at"), int | float)]
    if not timed:
        return []
    start = min(float(r["received_at"]) for r in timed)
    end = max(float(r["received_at"]) for r in timed)
    width = max((end - start) / _TIME_BUCKETS, 1e-3)
    groups: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for r in timed:
        groups[min(int((float(r["received_at"]) - start) / width), _TIME_BUCKETS - 1)].append(r)

    def iso(index: int) -> str:
        moment = datetime.datetime.fromtimestamp(start + index * width, tz=datetime.UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "")

    return [(iso(i), groups[i]) for i in sorted(groups)]


def _layout(fig: go.Figure, title: str, **axes: Any) -> go.Figure:
    fig.update_layout(
        title={"text": title, "font": {"size": 15}},
        width=CELL_WIDTH_PX,
        height=CELL_HEIGHT_PX,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.15},
        template="plotly_white",
        **axes,
    )
    return fig


def _empty(fig: go.Figure, why: str) -> go.Figure:
    fig.add_annotation(text=why, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    return fig


def latency_cdf(go: Any, records: Sequence[Mapping[str, Any]]) -> go.Figure:
    fig = go.Figure()
    by_path: dict[str, list[float]] = defaultdict(list)
    for r in _completions(records):
        answered = _ms(r, "answered")
        if answered is not None and r.get("source") in PATHS:
            by_path[PATHS[r["source"]]].append(max(answered, 0.001))
    for name in PATHS.values():
        values = sorted(by_path.get(name, ()))
        if not values:
            continue
        n = len(values)
        points = [*_sample(list(enumerate(values)), _CDF_POINTS), (n - 1, values[-1])]
        fig.add_trace(
            go.Scatter(
                x=[v for _, v in points],
                y=[(i + 1) / n for i, _ in points],
                mode="lines",
                name=f"{name} ({n})",
                line={"shape": "hv"},
            )
        )
    if not by_path:
        _empty(fig, "no answered completion requests")
    return _layout(
        fig,
        "Latency CDF per path (received → answered)",
        xaxis={"title": "ms (log)", "type": "log"},
        yaxis={"title": "share of requests", "range": [0, 1.02]},
    )


def waterfall(go: Any, records: Sequence[Mapping[str, Any]]) -> go.Figure:
    def end(r: Mapping[str, Any]) -> float:
        return max((float(v) for v in r["ms"].values()), default=0.0)

    timed = (r for r in records if r["kind"] != "accept" and end(r) > 0)  # a record of no phase draws no bar
    slowest = sorted(timed, key=end, reverse=True)[:_SLOWEST]
    slowest.reverse()  # slowest at the top
    labels = [f"{r.get('id', '?')} {r['kind']} {r.get('file', '')}" for r in slowest]
    segments: dict[str, tuple[list[str], list[float], list[float]]] = {p: ([], [], []) for p in PHASES[1:]}
    for label, r in zip(labels, slowest, strict=True):
        previous = 0.0
        for phase in PHASES[1:]:
            at = _ms(r, phase)
            if at is None:
                continue
            ys, bases, widths = segments[phase]
            ys.append(label)
            bases.append(previous)
            widths.append(max(at - previous, 0.0))
            previous = max(previous, at)
    fig = go.Figure()
    for phase, (ys, bases, widths) in segments.items():
        if ys:
            fig.add_trace(
                go.Bar(
                    y=ys,
                    x=widths,
                    base=bases,
                    orientation="h",
                    name=f"→ {phase}",
                    hovertemplate="%{y}<br>" + phase + ": %{base:.1f} → %{x:.1f} ms later<extra></extra>",
                )
            )
    if not slowest:
        _empty(fig, "no requests")
    return _layout(
        fig,
        f"The {len(slowest)} slowest requests, phase by phase",
        barmode="overlay",
        xaxis={"title": "ms since received"},
        # The rows in this order: plotly otherwise orders categories as the traces first name them, so a
        # request without the first phases (a next edit or an edit has no cache lookup) went to the top.
        yaxis={"tickfont": {"size": 8}, "automargin": True, "categoryorder": "array", "categoryarray": labels},
    )


def ttft_vs_waited(go: Any, records: Sequence[Mapping[str, Any]]) -> go.Figure:
    points = [
        (ttft, waited, r)
        for r in records
        if r["kind"] != "accept"
        and (ttft := _ms(r, "first_token")) is not None
        and (waited := _ms(r, "answered")) is not None
    ]
    fig = go.Figure()
    by_kind: dict[str, list[tuple[float, float, Mapping[str, Any]]]] = defaultdict(list)
    for p in points:
        by_kind[str(p[2]["kind"])].append(p)
    for kind, group in sorted(by_kind.items()):
        shown = _sample(group, _SCATTER_POINTS)
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in shown],
                y=[p[1] for p in shown],
                mode="markers",
                marker={"size": 5, "opacity": 0.6},
                name=f"{kind} ({len(group)})",
                text=[str(p[2].get("id", "")) for p in shown],
            )
        )
    if points:
        top = max(max(p[0], p[1]) for p in points)
        fig.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="waited = TTFT", line={"dash": "dot"}))
    else:
        _empty(fig, "no request reached a first token")
    return _layout(
        fig,
        "Time to first token vs what the user waited",
        xaxis={"title": "time to first token, ms"},
        yaxis={"title": "received → answered, ms"},
    )


def no_wait_share(go: Any, records: Sequence[Mapping[str, Any]]) -> go.Figure:
    buckets = [(start, group) for start, group in _buckets(_completions(records)) if group]
    fig = go.Figure()
    if buckets:
        fig.add_trace(
            go.Scatter(
                x=[start for start, _ in buckets],
                y=[sum(1 for r in g if _no_wait(r)) / len(g) for _, g in buckets],
                mode="lines+markers",
                name="answered without a model wait",
                text=[f"{len(g)} requests" for _, g in buckets],
            )
        )
    else:
        _empty(fig, "no completion requests")
    return _layout(
        fig,
        "Share answered without waiting for a model, over time",
        xaxis={"title": "time (UTC)"},
        yaxis={"title": "share of completion requests", "range": [0, 1.02]},
    )


_NUMBERS = re.compile(r"\d+(\.\d+)?")
_PARENS = re.compile(r"\s*\([^)]*\)")


def _reason_kind(reason: str) -> str:
    """A reason with its particulars (numbers, file lists) taken out, so like reasons group together."""
    return _NUMBERS.sub("N", _PARENS.sub("", reason))[:70]


def route_mix(go: Any, records: Sequence[Mapping[str, Any]]) -> go.Figure:
    counts: Counter[tuple[str, str]] = Counter()
    for r in records:
        reasons = r.get("route_reasons") or []
        if reasons and r["kind"] != "accept":
            counts[(str(r.get("tier") or "none"), _reason_kind(str(reasons[0])))] += 1
    top = counts.most_common(_REASONS_SHOWN)
    fig = go.Figure()
    for tier in sorted({t for (t, _), _ in top}):
        rows = [(reason, n) for (t, reason), n in reversed(top) if t == tier]
        fig.add_trace(go.Bar(y=[r for r, _ in rows], x=[n for _, n in rows], orientation="h", name=tier))
    if not top:
        _empty(fig, "no routed requests")
    return _layout(
        fig,
        "Route mix: requests per reason, by tier",
        barmode="stack",
        xaxis={"title": "requests"},
        yaxis={"tickfont": {"size": 9}, "automargin": True},
    )


def acceptance(go: Any, records: Sequence[Mapping[str, Any]]) -> go.Figure:
    shown = sum(1 for r in records if r["kind"] != "prefetch" and r.get("outcome") == "shown")
    accepted = sum(1 for r in records if r["kind"] == "accept")
    edits = Counter(str(r.get("outcome")) for r in records if r["kind"] == "edit")
    names = ["suggestions shown", "accepted"] + [f"edits {o}" for o in sorted(edits)]
    values = [shown, accepted] + [edits[o] for o in sorted(edits)]
    fig = go.Figure(go.Bar(x=names, y=values, text=values, textposition="outside", name="requests"))
    rate = f"{accepted / shown:.1%} of shown accepted" if shown else "nothing shown"
    return _layout(fig, f"Acceptance: {rate}", yaxis={"title": "count"}, showlegend=False)


def _per_model(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    models: dict[str, dict[str, float]] = defaultdict(lambda: {"in": 0, "cached": 0, "out": 0, "cost": 0.0})
    for r in records:
        tokens = r.get("tokens") or {}
        if not r.get("model") or not isinstance(tokens, dict):
            continue
        totals = models[str(r["model"])]
        for key in ("in", "cached", "out"):
            value = tokens.get(key)
            totals[key] += value if isinstance(value, int) else 0
        cost = r.get("cost_usd")
        totals["cost"] += float(cost) if isinstance(cost, int | float) else 0.0
    return dict(models)


def tokens_cost(go: Any, make_subplots: Any, records: Sequence[Mapping[str, Any]]) -> go.Figure:
    models = _per_model(records)
    names = sorted(models)
    fig = make_subplots(rows=1, cols=2, column_widths=[0.65, 0.35], subplot_titles=("tokens", "estimated cost, USD"))
    series = (
        ("prompt, uncached", [models[m]["in"] - models[m]["cached"] for m in names]),
        ("prompt, cached", [models[m]["cached"] for m in names]),
        ("output", [models[m]["out"] for m in names]),
    )
    for label, values in series:
        fig.add_trace(go.Bar(x=names, y=values, name=label), row=1, col=1)
    costs = [models[m]["cost"] for m in names]
    labels = [f"${c:.4f}" for c in costs] if any(costs) else None  # no "$0.0000" over the note below
    fig.add_trace(go.Bar(x=names, y=costs, name="cost", text=labels, textposition="outside"), row=1, col=2)
    if not names:
        _empty(fig, "no model was asked")
    elif not any(costs):
        fig.add_annotation(
            text="no prices configured<br>([models.X] price_*_per_mtok)",
            showarrow=False,
            x=0.88,
            y=0.6,
            xref="paper",
            yref="paper",
            font={"size": 10},
        )
    _layout(fig, "Tokens and estimated cost per model", barmode="stack")
    fig.update_layout(margin={"t": 80})  # room for the subplot titles under the figure's own
    return fig


def cached_share(go: Any, records: Sequence[Mapping[str, Any]]) -> go.Figure:
    fig = go.Figure()
    by_model: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        tokens = r.get("tokens") or {}
        if r.get("model") and isinstance(tokens, dict) and tokens.get("in"):
            by_model[str(r["model"])].append(r)
    for model, group in sorted(by_model.items()):
        xs, ys = [], []
        for start, bucket in _buckets(group):
            prompt = sum(int(r["tokens"]["in"]) for r in bucket)
            if prompt:
                xs.append(start)
                ys.append(sum(int(r["tokens"].get("cached") or 0) for r in bucket) / prompt)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=model))
    if not by_model:
        _empty(fig, "no prompt tokens recorded")
    return _layout(
        fig,
        "Cached-token share (provider prompt cache)",
        xaxis={"title": "time (UTC)"},
        yaxis={"title": "cached / prompt tokens", "range": [0, 1.02]},
    )


def _header(report: Mapping[str, Any], files: Sequence[str], records: Sequence[Mapping[str, Any]]) -> str:
    completions = _completions(records)
    no_wait = sum(1 for r in completions if _no_wait(r))
    answered = report["phases_ms"].get("answered", {})
    cost = sum(float(r.get("cost_usd") or 0.0) for r in records)

    def cell(value: Any) -> str:
        return "-" if value is None else f"{value:.1f}"

    facts = [
        f"{report['records']} records",
        f"answered p50 {cell(answered.get('p50'))} ms, p99 {cell(answered.get('p99'))} ms",
        f"answered without a model wait: {no_wait / len(completions):.1%}" if completions else "no completions",
        f"tokens in {report['tokens']['in']}, out {report['tokens']['out']}, cached {report['tokens']['cached']}",
        f"estimated cost ${cost:.4f}" if cost else "estimated cost: no prices configured",
    ]
    return (
        f'<header><h1>tandem latency report</h1><p class="files">{html.escape(", ".join(files))}</p>'
        f"<p>{html.escape(' · '.join(facts))}</p></header>"
    )


_STYLE = f"""
body {{ margin: 0; font-family: sans-serif; background: #fff; color: #222;
  width: {2 * CELL_WIDTH_PX + 3 * CELL_GAP_PX}px; }}
header {{ height: {HEADER_HEIGHT_PX}px; overflow: hidden; padding: 0 {CELL_GAP_PX}px; box-sizing: border-box; }}
header h1 {{ font-size: 20px; margin: 12px 0 4px; }}
header p {{ margin: 4px 0; font-size: 13px; }}
header .files {{ color: #666; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }}
.grid {{ display: grid; grid-template-columns: repeat(2, {CELL_WIDTH_PX}px); gap: {CELL_GAP_PX}px;
  padding: 0 {CELL_GAP_PX}px {CELL_GAP_PX}px; }}
.cell {{ width: {CELL_WIDTH_PX}px; height: {CELL_HEIGHT_PX}px; overflow: hidden; }}
"""


def _inert(value: Any) -> Any:
    """`value` with every string in it HTML-escaped (plotly shows `&lt;a&gt;` as the text `<a>`)."""
    if isinstance(value, str):
        return html.escape(value)
    if isinstance(value, Mapping):
        return {key: _inert(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_inert(item) for item in value]
    return value


def render_html(report: Mapping[str, Any], records: Sequence[Mapping[str, Any]], *, files: Sequence[str]) -> str:
    """The page: header figures, then the plots in `PLOTS` order, plotly.js inlined once."""
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise ReportExtraMissing(
            "the HTML report needs plotly: pip install 'tandem-lsp[report]' (or pip install plotly)"
        ) from None
    # Every string a plot shows comes from the records (file names, models, route reasons, kinds), and
    # plotly draws a subset of HTML in its labels (links, bold, styled spans): each is escaped, here, once.
    records = [_inert(record) for record in records]
    figures = {
        "latency-cdf": latency_cdf(go, records),
        "waterfall": waterfall(go, records),
        "ttft-vs-waited": ttft_vs_waited(go, records),
        "no-wait-share": no_wait_share(go, records),
        "route-mix": route_mix(go, records),
        "acceptance": acceptance(go, records),
        "tokens-cost": tokens_cost(go, make_subplots, records),
        "cached-share": cached_share(go, records),
    }
    cells = []
    for index, name in enumerate(PLOTS):
        div = figures[name].to_html(
            full_html=False,
            include_plotlyjs=index == 0,
            div_id=f"plot-{name}",
            config={"displaylogo": False, "responsive": False},
        )
        cells.append(f'<div class="cell" data-plot="{name}">{div}</div>')
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>tandem latency report</title>'
        f"<style>{_STYLE}</style></head><body>{_header(report, files, records)}"
        f'<div class="grid">{"".join(cells)}</div></body></html>\n'
    )
