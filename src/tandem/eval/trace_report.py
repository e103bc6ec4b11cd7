"""`tandem trace report FILE... [--json] [--html OUT]`: what trace files say about latency, outcomes and sources.

Reads the JSONL records `completion.observe.trace` writes (one per request; several files, such as a trace and its
rotated predecessors, are read as one) and reports, per phase, the count and
the p50/p90/p99 of its offset from "received" in milliseconds, plus intervals derived from two phases:

    server_overhead      received -> request_sent   (tandem's own work before the model is asked)
    provider_ttft        request_sent -> first_token (the provider's time to first token, as seen by tandem)
    time_to_first_token  received -> first_token
    answered_by_source   received -> answered, split by where the answer came from (model, stream, none)

`--html OUT` also writes a page of plots (see `eval.trace_html`). A line that is not a trace record (not
JSON, or JSON without the record's fields) is skipped and counted.
`read_trace` and `percentile` are also used by the replay summary.
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import json
import math
import pathlib
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tandem.completion.observe.trace import PHASES

QUANTILES: tuple[tuple[str, float], ...] = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))

# Derived intervals: name -> (from phase, to phase).
INTERVALS: dict[str, tuple[str, str]] = {
    "server_overhead": ("received", "request_sent"),
    "provider_ttft": ("request_sent", "first_token"),
    "time_to_first_token": ("received", "first_token"),
}


class TraceReadError(Exception):
    """The trace file cannot be read, or holds no trace record at all; the message says which."""


@dataclass(frozen=True, kw_only=True)
class TraceFile:
    """The records of one trace file, and how many lines were not records."""

    records: list[dict[str, Any]]
    bad_lines: int


_NUMBER_TYPES = frozenset({int, float})


def is_record(value: object) -> bool:
    """True for a JSON object shaped like `TraceRecord.to_json()` (the fields a report relies on)."""
    if not isinstance(value, dict):
        return False
    ms = value.get("ms")
    return (
        isinstance(value.get("outcome"), str)
        and isinstance(value.get("kind"), str)
        and isinstance(ms, dict)
        and not {type(v) for v in ms.values()} - _NUMBER_TYPES
    )


def _json_loads() -> Callable[[str], Any]:
    """orjson's parser where installed (the report extra: several times faster on a large trace), else the
    standard library's; both raise ValueError subclasses on bad JSON."""
    try:
        import orjson
    except ImportError:
        return json.loads
    # Typed here: where orjson is absent (the dev extra alone), mypy sees it as Any.
    loads: Callable[[str], Any] = orjson.loads
    return loads


@contextlib.contextmanager
def _without_gc_passes() -> Iterator[None]:
    """Parsed records are trees of dicts and lists, with no cycles for the collector to find; building a
    100,000-record trace's six million objects set off collector passes that took two thirds of the
    parse (1.0 s of CPU with them, 0.33 s without, orjson alone)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_records(lines: Iterable[str]) -> TraceFile:
    """Records from JSONL text lines; blank lines are ignored, other non-records counted."""
    records: list[dict[str, Any]] = []
    bad = 0
    loads = _json_loads()
    with _without_gc_passes():
        for line in lines:
            if not line.strip():
                continue
            try:
                value = loads(line)
            except ValueError:
                bad += 1
                continue
            if is_record(value):
                records.append(value)
            else:
                bad += 1
    return TraceFile(records=records, bad_lines=bad)


def read_trace(path: pathlib.Path, *, offset_bytes: int = 0) -> TraceFile:
    """The records of `path`, from byte `offset_bytes` on (a replay reads only what its run appended).

    Raises TraceReadError if the file is missing, unreadable or not text.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(offset_bytes)
            data = handle.read()
    except FileNotFoundError:
        raise TraceReadError(f"no such trace file: {path}") from None
    except IsADirectoryError:
        raise TraceReadError(f"{path} is a directory, not a trace file") from None
    except OSError as error:
        raise TraceReadError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceReadError(f"{path} is not a text file (not UTF-8), so not a trace file") from None
    return parse_records(text.splitlines())


def percentile(values: Sequence[float], q: float, *, ordered: bool = False) -> float:
    """The q-quantile (0 <= q <= 1) of `values` (`ordered`: already sorted), interpolating linearly between
    order statistics; NaN for no values."""
    if not values:
        return math.nan
    ordered_values = values if ordered else sorted(values)
    position = q * (len(ordered_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered_values) - 1)
    return ordered_values[low] + (ordered_values[high] - ordered_values[low]) * (position - low)


def distribution(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, p50, p90, p99 (ms, rounded to microseconds; None when there are no values)."""
    result: dict[str, float | int | None] = {"count": len(values)}
    ordered = sorted(values)  # once, not once per quantile
    for name, q in QUANTILES:
        result[name] = round(percentile(ordered, q, ordered=True), 3) if values else None
    return result


def summarise(trace: TraceFile) -> dict[str, Any]:
    """The report as a JSON-ready dict."""
    records = trace.records
    # One pass over the records (a 100,000-record trace is read in well under a second).
    at: dict[str, list[float]] = {phase: [] for phase in PHASES}
    between: dict[str, list[float]] = {name: [] for name in INTERVALS}
    by_source: dict[str, list[float]] = {}
    for r in records:
        ms = r["ms"]
        for phase, value in ms.items():
            if phase in at:
                at[phase].append(float(value))
        for name, (start, end) in INTERVALS.items():
            if start in ms and end in ms:
                between[name].append(float(ms[end]) - float(ms[start]))
        if "answered" in ms:
            by_source.setdefault(str(r.get("source", "none")), []).append(float(ms["answered"]))
    phases = {phase: distribution(at[phase]) for phase in PHASES if phase != "received"}
    intervals: dict[str, Any] = {name: distribution(between[name]) for name in INTERVALS}
    intervals["answered_by_source"] = {source: distribution(v) for source, v in sorted(by_source.items())}
    tokens = Counter[str]()
    # Spend per local calendar day (the day `[budget]` counts), from each record's estimated cost.
    spend: dict[str, float] = {}
    for r in records:
        cost, at_s = r.get("cost_usd"), r.get("t")
        if isinstance(cost, (int, float)) and cost and isinstance(at_s, (int, float)):
            day = datetime.date.fromtimestamp(at_s).isoformat()
            spend[day] = spend.get(day, 0.0) + float(cost)
        usage = r.get("tokens")
        if isinstance(usage, dict):
            for key in ("in", "out", "cached"):
                value = usage.get(key)
                if isinstance(value, int):
                    tokens[key] += value
    return {
        "records": len(records),
        "skipped_lines": trace.bad_lines,
        "kinds": dict(sorted(Counter(str(r["kind"]) for r in records).items())),
        "outcomes": dict(sorted(Counter(str(r["outcome"]) for r in records).items())),
        "sources": dict(sorted(Counter(str(r.get("source", "none")) for r in records).items())),
        "waited_for_model": sum(1 for r in records if r.get("waited_for_model") is True),
        "tokens": {key: tokens[key] for key in ("in", "out", "cached")},
        "spend_usd_by_day": {day: round(usd, 6) for day, usd in sorted(spend.items())},
        "phases_ms": phases,
        "intervals_ms": intervals,
    }


def _cell(value: float | int | None) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _table_rows(rows: Iterable[tuple[str, Mapping[str, Any]]]) -> list[str]:
    lines = []
    for name, dist in rows:
        if dist["count"]:
            cells = "".join(f"{_cell(dist[q]):>11}" for q, _ in QUANTILES)
            lines.append(f"  {name:<28}{dist['count']:>7}{cells}")
    return lines


def format_text(report: Mapping[str, Any], *, path: pathlib.Path | str) -> str:
    """The report as an aligned plain-text table."""

    def header(label: str) -> str:
        return f"  {label:<28}{'count':>7}" + "".join(f"{q:>11}" for q, _ in QUANTILES)

    lines = [f"trace report: {path} ({report['records']} records)", "", "phases", header("ms since received")]
    lines += _table_rows((phase, report["phases_ms"][phase]) for phase in report["phases_ms"])
    lines += ["", "derived intervals", header("ms")]
    intervals = report["intervals_ms"]
    lines += _table_rows((name, intervals[name]) for name in INTERVALS)
    lines += _table_rows((f"answered ({source})", d) for source, d in intervals["answered_by_source"].items())

    def counts(name: str) -> str:
        return ", ".join(f"{k} {v}" for k, v in report[name].items()) or "-"

    tokens = report["tokens"]
    lines += [
        "",
        f"kinds:    {counts('kinds')}",
        f"outcomes: {counts('outcomes')}",
        f"sources:  {counts('sources')}",
        f"waited for a model: {report['waited_for_model']} of {report['records']}",
        f"tokens:   in {tokens['in']}, out {tokens['out']}, cached {tokens['cached']}",
        "spend:    "
        + (
            ", ".join(f"{day} ${usd:.4f}" for day, usd in report.get("spend_usd_by_day", {}).items())
            or "- (no model has prices: [models.X] price_*_per_mtok)"
        ),
    ]
    return "\n".join(lines) + "\n"


def read_traces(paths: Sequence[pathlib.Path]) -> TraceFile:
    """The records of several files, in the order given (raises TraceReadError for the first bad one)."""
    records: list[dict[str, Any]] = []
    bad = 0
    for path in paths:
        trace = read_trace(path)
        records += trace.records
        bad += trace.bad_lines
    return TraceFile(records=records, bad_lines=bad)


def load_for_command(command: str, paths: Sequence[pathlib.Path]) -> TraceFile | None:
    """The records of `paths` for a `tandem trace` subcommand, or None after one error line on stderr."""
    try:
        trace = read_traces(paths)
    except TraceReadError as error:
        sys.stderr.write(f"tandem trace {command}: error: {error}\n")
        return None
    if not trace.records:
        what = f"{trace.bad_lines} lines, none of them a trace record" if trace.bad_lines else "nothing"
        names = ", ".join(str(p) for p in paths)
        sys.stderr.write(f"tandem trace {command}: error: {names} {'holds' if len(paths) == 1 else 'hold'} {what}\n")
        return None
    if trace.bad_lines:
        sys.stderr.write(f"tandem trace {command}: skipped {trace.bad_lines} lines that are not trace records\n")
    return trace


def run_report(args: Any) -> int:
    """The `tandem trace report` command (`args.files`: Paths, `args.json`: bool, `args.html`: Path or None);
    returns the exit status."""
    paths = [pathlib.Path(f) for f in args.files]
    trace = load_for_command("report", paths)
    if trace is None:
        return 1
    report = summarise(trace)
    if args.html is not None:
        from tandem.eval.trace_html import ReportExtraMissing, render_html

        try:
            page = render_html(report, trace.records, files=[str(p) for p in paths])
        except ReportExtraMissing as error:
            sys.stderr.write(f"tandem trace report: error: {error}\n")
            return 1
        try:
            pathlib.Path(args.html).write_text(page, encoding="utf-8")
        except OSError as error:
            sys.stderr.write(f"tandem trace report: error: cannot write {args.html}: {error.strerror or error}\n")
            return 1
        sys.stderr.write(f"tandem trace report: wrote {args.html}\n")
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        sys.stdout.write(format_text(report, path=", ".join(str(p) for p in paths)))
    return 0
