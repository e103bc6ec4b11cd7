"""The replay's pure parts: the typing model, cursor positions in utf-16, span choice, and the summary's
figures computed from a constructed tally and trace."""

from __future__ import annotations

import json
import pathlib
import random

import pytest

from tandem.completion.observe.trace import TraceRecord
from tandem.eval.replay.client import OpenDocument
from tandem.eval.replay.keystrokes import Rhythm, key_presses, next_key
from tandem.eval.replay.session import Tally
from tandem.eval.replay.sources import SourceError, choose_span, make_tasks, sample_files
from tandem.eval.replay.summary import Provider, build_summary, format_summary
from tandem.eval.trace_report import parse_records

SOURCE = '''"""Module."""


def area(width, height):
    """The area."""
    result = width * height
    if result < 0:
        raise ValueError("negative area: " + str(result))
    return result


def label(name):
    text = "héllo 🎉 " + name.title()
    return text
'''


def test_enter_inserts_the_next_lines_indentation() -> None:
    span = "x = 1\n    y = 2\n\nz"
    assert next_key(span, 0) == "x"
    assert next_key(span, 5) == "\n    "
    assert next_key(span, 15) == "\n"
    assert key_presses(span) == len("x = 1") + 1 + len("y = 2") + 2 + 1


def test_pauses_follow_the_time_scale_and_the_seed() -> None:
    slow = Rhythm(chars_per_s=5.0, time_scale=1.0)
    fast = Rhythm(chars_per_s=5.0, time_scale=0.25)
    a = [slow.pause_s(random.Random(7), "x") for _ in range(3)]
    b = [fast.pause_s(random.Random(7), "x") for _ in range(3)]
    assert b == pytest.approx([x * 0.25 for x in a])
    # A new line starts after a longer pause than a letter inside a word.
    assert slow.pause_s(random.Random(1), "\n  ") == pytest.approx(3 * slow.pause_s(random.Random(1), "x"))
    with pytest.raises(ValueError, match="time scale"):
        Rhythm(time_scale=0)


def test_cursor_columns_are_utf16_units() -> None:
    document = OpenDocument(uri="file:///x.py", version=1, line=0, line_before="")
    document.advance('s = "é🎉')
    # é is one utf-16 unit, 🎉 two.
    assert document.position().character == len('s = "') + 1 + 2
    document.advance('"\n    t')
    assert (document.position().line, document.position().character) == (1, 5)


def _write(tmp_path: pathlib.Path, name: str, text: str) -> pathlib.Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_tasks_are_deterministic_and_remove_exactly_their_span(tmp_path: pathlib.Path) -> None:
    path = _write(tmp_path, "geometry.py", SOURCE)
    tasks = make_tasks([path], 6, seed=3)
    again = make_tasks([path], 6, seed=3)
    assert [(t.start, t.end, t.kind) for t in tasks] == [(t.start, t.end, t.kind) for t in again]
    assert {t.kind for t in tasks} == {"body", "lines", "inline"}
    for task in tasks:
        assert task.opened_text[: task.start] + task.span + task.opened_text[task.start :] == SOURCE
        assert task.span.strip() == task.span.rstrip()  # spans start at code, not at indentation
    body = next(t for t in tasks if t.kind == "body")
    # The body after the docstring, as if the user had just written the def line and the docstring.
    assert body.span.startswith(("result = width", "text = "))


def test_non_python_files_get_line_spans(tmp_path: pathlib.Path) -> None:
    text = "first line of some prose here\nsecond line of the same prose\n\nfn call(a, b, c) { return a; }\n"
    rng = random.Random(0)
    start, end, kind = choose_span(text, "body", rng, python=False) or (0, 0, "")
    assert kind == "lines"
    assert 0 <= start < end <= len(text)


def test_files_with_bare_carriage_returns_are_refused(tmp_path: pathlib.Path) -> None:
    path = _write(tmp_path, "old.py", "x = 1\r\ny = 2\r\n")
    with pytest.raises(SourceError, match="no span"):
        make_tasks([path], 2, seed=0)


def test_stdlib_sample_is_deterministic() -> None:
    first = sample_files(4, seed=11)
    assert first == sample_files(4, seed=11)
    assert len(set(first)) == 4
    assert all(p.suffix == ".py" and "test" not in p.parts for p in first)


def _trace_line(
    *, source: str, outcome: str, waited: bool, tokens_out: int = 0, kind: str = "inline", estimated: bool = False
) -> str:
    record = TraceRecord(kind=kind, received_ns=1, source=source, outcome=outcome)
    record.waited_for_model = waited
    record.tokens_out = tokens_out
    record.tokens_estimated = estimated
    return json.dumps(record.to_json())


def test_summary_figures_from_a_constructed_trace() -> None:
    lines = [
        _trace_line(source="model", outcome="shown", waited=True, tokens_out=40),
        _trace_line(source="stream", outcome="shown", waited=False),  # without model wait
        _trace_line(source="stream", outcome="empty", waited=False),  # without model wait
        _trace_line(source="stream", outcome="shown", waited=True),  # a stream not yet far enough
        _trace_line(source="model", outcome="cancelled", waited=True, tokens_out=10, estimated=True),
        _trace_line(source="stream", outcome="superseded", waited=False),
        _trace_line(source="none", outcome="shown", waited=False, kind="menu"),  # not an inline request
        _trace_line(source="cache", outcome="shown", waited=False),  # without model wait, from the cache
        _trace_line(source="model", outcome="done", waited=False, tokens_out=25, kind="prefetch"),
        "garbage",
    ]
    tally = Tally(
        sessions=2,
        requests=7,
        answered=5,
        cancelled=1,
        shown=3,
        accepted=2,
        accepted_chars=75,
        typed_chars=25,
        key_presses=20,
        key_presses_unassisted=80,
        latencies_ms=[1.0, 2.0, 3.0, 4.0, 100.0],
    )
    provider = Provider(simulated=True, label="simulated provider (test)", base_url="http://x/v1", model="sim-spark")
    summary = build_summary(
        tally=tally,
        trace=parse_records(lines),
        trace_path=pathlib.Path("/tmp/t.jsonl"),
        provider=provider,
        files=[pathlib.Path("/a.py"), pathlib.Path("/a.py")],
        time_scale=0.5,
        duration_s=1.234,
    )
    data = summary.to_json()
    assert data["requests"] == 7
    assert data["trace_records"] == 7
    assert data["answered_without_model_wait"] == pytest.approx(3 / 7, abs=1e-4)
    assert data["latency_ms"] == {"p50": 3.0, "p95": 80.8, "count": 5}
    assert data["keystrokes_saved"] == 0.75
    assert data["accepted_chars_fraction"] == 0.75
    # Prefetch streams spend tokens too: they count.
    assert data["tokens_out"] == 75
    assert data["prefetch_tokens_out"] == 25
    assert data["tokens_per_accepted_char"] == 1.0
    assert data["simulated_provider"] is True
    assert data["files"] == ["/a.py"]
    assert data["trace_outcomes"] == {"cancelled": 1, "empty": 1, "shown": 4, "superseded": 1}
    assert data["trace_kinds"] == {"inline": 7, "menu": 1, "prefetch": 1}
    assert any("not trace records" in note for note in data["notes"])
    # The withdrawn request's stream was stopped before the provider's usage: its tokens were counted.
    assert any(note.startswith("1 streams were stopped before the provider reported usage") for note in data["notes"])
    text = format_summary(summary)
    assert "simulated provider" in text and "75.0%" in text and "42.9%" in text


def test_summary_of_nothing_has_no_fractions() -> None:
    provider = Provider(simulated=False, label="real", base_url="http://x/v1", model="m")
    summary = build_summary(
        tally=Tally(),
        trace=parse_records([]),
        trace_path=pathlib.Path("t"),
        provider=provider,
        files=[],
        time_scale=1.0,
        duration_s=0.0,
    )
    assert summary.answered_without_model_wait is None
    assert summary.keystrokes_saved is None
    assert summary.latency_ms["p50"] is None
    assert "simulated" not in format_summary(summary)
