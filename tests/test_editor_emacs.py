"""Emacs 28 + eglot (batch mode) with editors/emacs/tandem.el, against `tandem serve` and the simulator.

editors/emacs/tests/run-completion.el visits copies of a real source file (from the Python standard
library) cut at chosen points, types the character before the cut, starts eglot through tandem.el,
collects completion-at-point candidates and runs `completion-at-point`. The simulator answers in truth
mode from the uncut file, so tandem's candidate must insert exactly the file's true continuation.
"""

from __future__ import annotations

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
PLUGIN = ROOT / "editors" / "emacs"
DRIVER = PLUGIN / "tests" / "run-completion.el"
EMACS_RUN_TIMEOUT_S = 200

pytestmark = [pytest.mark.editor, pytest.mark.timeout(EMACS_RUN_TIMEOUT_S + 30)]

EMACS = os.environ.get("TANDEM_EMACS") or shutil.which("emacs")


@dataclass(frozen=True, kw_only=True)
class Cut:
    """The buffer holds the truth up to `typed_at`; the user types up to `end`; the truth continues."""

    typed_at: int
    end: int


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth < 0:
            return False
    return depth == 0


def choose_cuts(truth: str) -> dict[str, Cut]:
    """A cut inside an identifier after `= ` (single-line mode, a word before the cursor), and the `:`
    ending a one-line `def` whose body follows (multi-line mode, no word before the cursor)."""
    lines = truth.split("\n")
    offset = 0
    word: list[Cut] = []
    block: Cut | None = None
    for index, line in enumerate(lines[:-1]):
        start = offset
        offset += len(line) + 1
        if lines.count(line) != 1 or not line.startswith(" ") or any(c in line for c in "\"'#\\"):
            continue
        body = lines[index + 1 : index + 3]
        if block is None and re.fullmatch(r"\s*def \w+\([^()]*\):", line) and all(b.strip() for b in body):
            block = Cut(typed_at=start + len(line) - 1, end=start + len(line))
            continue
        match = re.search(r" = ([A-Za-z_]\w{5,})", line)
        if not match or not _balanced(line[: match.start(1)]) or not _balanced(line[match.start(1) :]):
            continue
        if line.rstrip().endswith((":", ",")):
            continue
        end = start + match.start(1) + 4
        word.append(Cut(typed_at=end - 1, end=end))
    if block is None or not word:
        raise AssertionError("the truth file has no usable places for the scenarios")
    return {"word": word[len(word) // 2], "block": block}


@dataclass(frozen=True, kw_only=True)
class EmacsRun:
    truth: str
    cuts: dict[str, Cut]
    results: dict[str, Any]
    server_log: str
    stderr: str

    def scenario(self, name: str) -> dict[str, Any]:
        """The scenario's record; fails the test with Emacs's own message if the run went wrong."""
        for record in self.results.get("scenarios") or []:
            if record["name"] == name and record.get("done"):
                return dict(record)
        raise AssertionError(
            f"scenario {name!r} did not finish in Emacs.\n"
            f"emacs error: {self.results.get('error')}\n"
            f"emacs stderr: {self.stderr[-3000:]}\n"
            f"server log (tail): {self.server_log[-3000:]}"
        )

    def context(self, record: dict[str, Any]) -> str:
        """What Emacs was offered, and the server's log, for an assertion message."""
        return f"candidates: {record['candidates']!r}\nserver log (tail): {self.server_log[-2000:]}"


@pytest.fixture(scope="module")
def emacs_run(tmp_path_factory: pytest.TempPathFactory) -> EmacsRun:
    if EMACS is None:
        pytest.skip("Emacs is not installed (apt-get install emacs-nox elpa-eglot)")
    base = tmp_path_factory.mktemp("emacs")
    truth_text = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    truth_path = base / "truth" / "textwrap.py"
    truth_path.parent.mkdir()
    truth_path.write_text(truth_text, encoding="utf-8")
    work = base / "work"
    work.mkdir()
    cuts = choose_cuts(truth_text)
    scenarios = []
    for name, cut in cuts.items():
        path = work / f"{name}_textwrap.py"
        path.write_text(truth_text[: cut.typed_at], encoding="utf-8")
        scenarios.append({"name": name, "path": str(path), "type": truth_text[cut.typed_at : cut.end]})
    server_log = base / "server.log"
    result_path = base / "result.json"
    with start_in_thread(SimSettings(profile="spark", truth=(str(truth_path),))) as sim:
        spec = {
            "result_path": str(result_path),
            "plugin_dir": str(PLUGIN),
            "command": [sys.executable, "-m", "lsp.cli", "serve", "--log-file", str(server_log)],
            "init_options": {
                "models": {"fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"}}
            },
            "scenarios": scenarios,
        }
        spec_path = base / "spec.json"
        spec_path.write_text(json.dumps(spec))
        env = {
            **os.environ,
            "TANDEM_TEST_SPEC": str(spec_path),
            "PYTHONPATH": str(ROOT),
            "HOME": str(base / "home"),
            "XDG_CONFIG_HOME": str(base / "config"),
            "XDG_STATE_HOME": str(base / "state"),
        }
        command = [EMACS, "-Q", "--batch", "-l", str(DRIVER)]
        try:
            proc = subprocess.run(
                command, cwd=work, env=env, capture_output=True, text=True, timeout=EMACS_RUN_TIMEOUT_S, check=False
            )
            stderr = proc.stderr
        except subprocess.TimeoutExpired as error:
            stderr = f"Emacs did not exit within {EMACS_RUN_TIMEOUT_S} s: {error.stderr!r}"
    results = json.loads(result_path.read_text()) if result_path.exists() else {"error": "no result file"}
    log_text = server_log.read_text(errors="replace") if server_log.exists() else ""
    return EmacsRun(truth=truth_text, cuts=cuts, results=results, server_log=log_text, stderr=stderr)


def _rest_of_line(truth: str, at: int) -> str:
    newline = truth.find("\n", at)
    return truth[at : newline if newline >= 0 else len(truth)]


def test_eglot_runs_tandem_and_installs_its_capf(emacs_run: EmacsRun) -> None:
    record = emacs_run.scenario("word")
    assert record["server"] == "tandem"
    assert record["capf_installed"] is True


def test_completion_at_point_completes_the_word_to_the_true_line(emacs_run: EmacsRun) -> None:
    record = emacs_run.scenario("word")
    cut = emacs_run.cuts["word"]
    word = record["typed_word"]
    assert word and emacs_run.truth[: cut.end].endswith(word), word
    rest = _rest_of_line(emacs_run.truth, cut.end)
    # The menu item replaces the word before the cursor with the word plus the completion.
    assert record["new_texts"] == [word + rest], emacs_run.context(record)
    assert word + rest in record["candidates"]
    assert record["after"] == emacs_run.truth[: cut.end] + rest


def test_completion_at_point_inserts_a_multiline_block(emacs_run: EmacsRun) -> None:
    record = emacs_run.scenario("block")
    cut = emacs_run.cuts["block"]
    assert record["typed_word"] == ""
    assert record["new_texts"] and len(record["new_texts"]) == 1, emacs_run.context(record)
    new_text = record["new_texts"][0]
    continuation = emacs_run.truth[cut.end :]
    assert "\n" in new_text and continuation.startswith(new_text), new_text
    assert new_text.split("\n")[1] == continuation.split("\n")[1], "the first body line"
    assert record["after"] == emacs_run.truth[: cut.end] + new_text
