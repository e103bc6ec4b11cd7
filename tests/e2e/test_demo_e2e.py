"""`tandem demo --json`: the simulator, the server and a short replay of the standard library, run as the
command a newcomer types; its JSON summary has the documented fields and shows completions at work."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e


def test_demo_json_reports_completions_shown_and_accepted(tmp_path: pathlib.Path) -> None:
    trace = tmp_path / "demo-trace.jsonl"
    done = subprocess.run(
        [sys.executable, "-P", "-m", "tandem", "demo", "--json", "--seconds", "3", "--trace", str(trace)],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for field in (
        "requests",
        "answered_without_model_wait",
        "latency_ms",
        "keystrokes_saved",
        "accepted_chars_fraction",
        "accepted_chars",
        "typed_chars",
        "tokens_out",
        "tokens_per_accepted_char",
        "trace_file",
    ):
        assert field in data, field
    assert set(data["latency_ms"]) >= {"p50", "p95"}
    assert data["simulated_provider"] is True
    assert "simulated provider" in data["provider"]["label"]
    assert data["trace_file"] == str(trace)
    assert data["trace_records"] == data["requests"] > 0
    # Real work: suggestions shown and accepted, and some answered from a stream without waiting.
    assert data["shown"] > 0 and data["accepted"] > 0
    assert 0 < data["accepted_chars_fraction"] <= 1
    assert 0 <= data["answered_without_model_wait"] <= 1
    # The progress bar is plain text on stderr (no terminal here), ending at 100%.
    assert "100%" in done.stderr.splitlines()[-1]


def test_demo_help_says_what_it_does() -> None:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "tandem", "demo", "--help"], capture_output=True, text=True, check=True
    )
    assert "simulator" in done.stdout and "--seconds" in done.stdout
