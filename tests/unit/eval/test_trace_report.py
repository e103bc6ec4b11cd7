"""`tandem trace report`: percentiles per phase and derived intervals from constructed trace files, and one
clear error line for files that are missing, unreadable or hold no trace records."""

from __future__ import annotations

import json
import math
import pathlib

import pytest

from tandem.cli import main
from tandem.completion.observe.trace import TraceRecord
from tandem.eval.trace_report import parse_records, percentile, summarise

MS = 1_000_000  # nanoseconds per millisecond


def _record(index: int, *, source: str, outcome: str, waited: bool, out_tokens: int) -> dict[str, object]:
    """A record whose request was sent `index` ms after it was received and answered 2 ms later."""
    record = TraceRecord(kind="inline", received_ns=1_000 * MS, source=source, outcome=outcome)
    record.waited_for_model = waited
    record.tokens_out = out_tokens
    record.mark("cache_lookup", 1_000 * MS + MS // 10)
    if source == "model":
        record.mark("request_sent", 1_000 * MS + index * MS)
        record.mark("first_token", 1_000 * MS + (index + 100) * MS)
    record.mark("answered", 1_000 * MS + (index + 2) * MS)
    return record.to_json()


def _write(path: pathlib.Path, lines: list[str]) -> pathlib.Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def trace_file(tmp_path: pathlib.Path) -> pathlib.Path:
    records = [_record(i, source="model", outcome="shown", waited=True, out_tokens=10) for i in range(1, 101)]
    records += [_record(0, source="stream", outcome="empty", waited=False, out_tokens=0) for _ in range(5)]
    return _write(tmp_path / "trace.jsonl", [json.dumps(r) for r in records])


def test_percentile_interpolates_between_order_statistics() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([5.0], 0.99) == 5.0
    assert percentile([3.0, 1.0, 2.0], 0.0) == 1.0
    assert math.isnan(percentile([], 0.5))


def test_report_json_has_phase_percentiles_intervals_and_counts(
    trace_file: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", "report", str(trace_file), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["records"] == 105
    assert report["skipped_lines"] == 0
    # request_sent at 1..100 ms after received: p50 50.5, p90 90.1, p99 99.01.
    assert report["phases_ms"]["request_sent"] == {"count": 100, "p50": 50.5, "p90": 90.1, "p99": 99.01}
    assert report["intervals_ms"]["server_overhead"]["p50"] == 50.5
    assert report["intervals_ms"]["provider_ttft"] == {"count": 100, "p50": 100.0, "p90": 100.0, "p99": 100.0}
    assert report["intervals_ms"]["time_to_first_token"]["count"] == 100
    assert report["intervals_ms"]["answered_by_source"]["stream"]["p99"] == 2.0
    assert report["phases_ms"]["answered"]["count"] == 105
    assert report["outcomes"] == {"empty": 5, "shown": 100}
    assert report["sources"] == {"model": 100, "stream": 5}
    assert report["waited_for_model"] == 100
    assert report["tokens"]["out"] == 1000


def test_report_text_names_phases_and_intervals(trace_file: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "report", str(trace_file)]) == 0
    out = capsys.readouterr().out
    assert "105 records" in out
    for name in ("request_sent", "first_token", "answered", "server_overhead", "provider_ttft", "answered (stream)"):
        assert name in out
    assert "shown 100" in out


def test_bad_lines_are_skipped_and_counted(trace_file: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = trace_file.read_text().splitlines()[:3]
    mixed = _write(trace_file.parent / "mixed.jsonl", [*good, "not json", '{"json": "but not a record"}', "", "[1, 2]"])
    assert main(["trace", "report", str(mixed), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["records"] == 3
    assert captured.err.strip() == "tandem trace report: skipped 3 lines that are not trace records"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such trace file"),
        (b"", "holds nothing"),
        (b"hello\nworld\n", "holds 2 lines, none of them a trace record"),
        (b"\xff\xfe\x00binary", "not a text file"),
    ],
)
def test_unusable_file_is_one_error_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], content: bytes | None, expected: str
) -> None:
    path = tmp_path / "trace.jsonl"
    if content is not None:
        path.write_bytes(content)
    assert main(["trace", "report", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("tandem trace report: error: ")
    assert expected in captured.err


def test_directory_is_one_error_line(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "report", str(tmp_path)]) == 1
    assert "is a directory" in capsys.readouterr().err


def test_summarise_empty_phases_have_no_percentiles() -> None:
    record = TraceRecord(kind="inline", received_ns=MS, outcome="cancelled").to_json()
    report = summarise(parse_records([json.dumps(record)]))
    assert report["phases_ms"]["request_sent"] == {"count": 0, "p50": None, "p90": None, "p99": None}
    assert report["outcomes"] == {"cancelled": 1}
