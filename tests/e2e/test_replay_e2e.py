"""`tandem replay` end to end: the replay client drives a real `tandem serve` subprocess over stdio, with the
simulator (truth = the replayed file) as the provider."""

from __future__ import annotations

import json
import pathlib

import pytest

from tandem.cli import main
from tandem.eval.replay.client import ReplayClient, ServerFailed
from tandem.eval.replay.runner import ReplayOptions, replay
from tandem.eval.replay.sources import Task

pytestmark = pytest.mark.e2e

SOURCE = '''"""Shapes, to be typed back."""


def area(width, height):
    """The area."""
    result = width * height
    if result < 0:
        raise ValueError("negative area: " + str(result))
    return result


def label(name):
    text = "héllo 🎉 " + name.title()
    return text


class Box:
    def __init__(self, width, height):
        self.width = width
        self.height = height

    def scaled(self, factor):
        return Box(self.width * factor, self.height * factor)
'''


@pytest.fixture
def source(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "shapes.py"
    path.write_text(SOURCE, encoding="utf-8")
    return path


def _options(tmp_path: pathlib.Path, source: pathlib.Path, **overrides: object) -> ReplayOptions:
    fields: dict[str, object] = {
        "files": (source,),
        "sessions": 3,
        "time_scale": 0.05,
        "error_rate": 0.0,
        "patient": True,
        "trace_path": tmp_path / "trace.jsonl",
    }
    fields.update(overrides)
    return ReplayOptions(**fields)  # type: ignore[arg-type]


async def test_replay_types_spans_back_and_accepts_matching_suggestions(
    tmp_path: pathlib.Path, source: pathlib.Path
) -> None:
    summary = await replay(_options(tmp_path, source))
    assert summary.sessions == 3
    assert summary.requests > 0
    # A patient typist waits for every answer: nothing withdrawn, nothing lost.
    assert summary.answered == summary.requests
    assert summary.errors == 0
    assert summary.trace_records == summary.requests
    assert summary.shown > 0 and summary.accepted > 0
    assert summary.accepted_chars > 0
    assert summary.tokens_out > 0
    assert summary.answered_without_model_wait is not None and summary.answered_without_model_wait > 0
    assert summary.keystrokes_saved is not None and 0 < summary.keystrokes_saved < 1
    assert summary.provider.simulated
    records = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    # Speculative streams and acceptances have records of their own kinds.
    records = [r for r in records if r["kind"] in ("inline", "completion")]
    assert len(records) == summary.requests
    assert all(r["client"] == "code-server" for r in records)


async def test_positions_after_astral_characters_are_utf16(tmp_path: pathlib.Path, source: pathlib.Path) -> None:
    # The span starts after "é" (one utf-16 unit) and "🎉" (two): a column counted any other way would put
    # the keystrokes in the wrong place, and the simulator would find no true continuation to suggest.
    start = SOURCE.index("name.title()")
    end = SOURCE.index("\n", start)
    task = Task(path=source, text=SOURCE, start=start, end=end, kind="inline")
    summary = await replay(_options(tmp_path, source, sessions=1), tasks=[task])
    assert summary.accepted >= 1
    assert summary.accepted_chars + summary.typed_chars == len("name.title()")


async def test_a_typist_faster_than_the_model_withdraws_requests(tmp_path: pathlib.Path, source: pathlib.Path) -> None:
    # Keys every ~10 ms against a model 50 times slower: each request is overtaken by the next key press and
    # withdrawn with $/cancelRequest, which the server records as cancelled.
    options = _options(tmp_path, source, patient=False, profile="codex", time_scale=1.0, chars_per_s=100.0, sessions=1)
    summary = await replay(options)
    assert summary.cancelled > 0
    assert summary.trace_outcomes.get("cancelled", 0) > 0
    assert summary.trace_records == summary.requests


def test_replay_command_prints_json(
    tmp_path: pathlib.Path, source: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "cli-trace.jsonl"
    argv = ["replay", str(source), "--sessions", "2", "--time-scale", "0.05", "--trace", str(trace), "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sessions"] == 2
    assert data["trace_file"] == str(trace)
    assert data["simulated_provider"] is True
    assert trace.exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["replay", "/nonexistent/file.py"], "cannot read /nonexistent/file.py"),
        (["replay", "--base-url", "http://127.0.0.1:9/v1"], "--base-url needs --model"),
    ],
)
def test_replay_errors_are_one_line(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err


async def test_a_server_that_dies_at_start_is_one_clear_error(tmp_path: pathlib.Path) -> None:
    crash = "import sys; sys.stderr.write('cannot start: broken install\\n'); sys.exit(3)"
    client = ReplayClient(trace_path=tmp_path / "t.jsonl", python_args=("-c", crash))
    with pytest.raises(ServerFailed, match=r"did not answer initialize.*cannot start: broken install"):
        await client.start({})


async def test_accepting_runs_the_items_command(tmp_path: pathlib.Path, source: pathlib.Path) -> None:
    # VS Code runs an accepted item's command; tandem's (workspace/executeCommand tandem.accepted) must succeed.
    summary = await replay(_options(tmp_path, source, sessions=1))
    assert summary.accepted > 0
    assert summary.accept_commands == summary.accepted
    assert not [note for note in summary.notes if "accept commands failed" in note]
