"""Unit test: `tandem trace report` gives the spend per local calendar day (what `[budget]` counts)."""

from __future__ import annotations

import datetime
import json
import time

from tandem.completion.observe.trace import TraceRecord
from tandem.eval.trace_report import format_text, parse_records, summarise


def _line(cost_usd: float, at_s: float) -> str:
    record = TraceRecord(kind="inline", received_ns=time.perf_counter_ns())
    record.cost_usd = cost_usd
    data = record.to_json()
    data["t"] = at_s
    return json.dumps(data)


def test_spend_is_summed_per_day() -> None:
    day_one = datetime.datetime(2026, 12, 3, 12, 0).timestamp()
    day_two = datetime.datetime(2026, 12, 4, 12, 0).timestamp()
    trace = parse_records([_line(0.01, day_one), _line(0.02, day_one), _line(0.5, day_two), _line(0.0, day_two)])
    report = summarise(trace)
    assert report["spend_usd_by_day"] == {"2026-12-03": 0.03, "2026-12-04": 0.5}
    assert "spend:    2026-12-03 $0.0300, 2026-12-04 $0.5000" in format_text(report, path="t.jsonl")
