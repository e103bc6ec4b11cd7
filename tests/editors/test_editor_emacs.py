"""Emacs 28 + eglot (batch mode) with editors/emacs/tandem.el, against `tandem serve` and the simulator.

editors/emacs/tests/run-completion.el visits copies of a real source file (from the Python standard
library) cut at chosen points, types the character before the cut, starts eglot through tandem.el,
collects completion-at-point candidates and runs `completion-at-point`. The simulator answers in truth
mode from the uncut file, so tandem's candidate must insert exactly the file's true continuation.

Then edits of a function in whole copies of the file, by `tandem-edit` and by a preset code action picked
in `eglot-code-actions`: two simulators (spark as the fast model, codex as the accurate one) answer from
the edit truth the driver gives them before each edit, errors off, and eglot applies the server's
workspace/applyEdit, so the buffer must end equal to the truth. One more edit, of a visited file whose
truth changes only a file Emacs does not visit, checks what the user reads: eglot's question, then the
server's message naming that file "not open" as the last line of *Messages*.
"""

from __future__ import annotations

import itertools
import json
import os
import pathlib
import re
import shutil
import subprocess
import textwrap
from dataclasses import dataclass
from typing import Any

import hostile_repo
import pytest
from fixtures_sim import SimFactory
from test_e2e_edit_unopened import DOCUMENTED as UNOPENED_TRUTH
from test_e2e_edits import MODELS, VIEWS
from test_e2e_next_edit import BEFORE as NEXT_EDIT_BEFORE
from test_e2e_next_edit import TRUTH as NEXT_EDIT_TRUTH
from test_editor_neovim import _def_line_with_arguments

from tandem.sim.runner import SimSettings

NEXT_EDIT_REPLACE_TRUTH = NEXT_EDIT_BEFORE.replace("w", "size")
FAR_BEFORE = "def scale(w, factor):\n    total = 0\n" + "".join(f"    total += {i}\n" for i in range(1, 46))
FAR_BEFORE += "    return w * factor + total\n"
FAR_TRUTH = FAR_BEFORE.replace("scale(w,", "scale(width,").replace("return w *", "return width *")

ROOT = pathlib.Path(__file__).resolve().parents[2]
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
class EditTarget:
    """A top-level function of the truth (lines `line1`..`line2`, 1-based) and the file after the edit."""

    line1: int
    line2: int
    after: str


def choose_edit_targets(truth: str, count: int) -> list[EditTarget]:
    """The first `count` short top-level functions of `truth`, each with a comment inserted before its
    last line (chosen by rule, so any version of the file works)."""
    lines = truth.split("\n")
    # Lines that start a top-level statement: a function runs until the next one.
    tops = [i for i, line in enumerate(lines) if re.match(r"[A-Za-z_@]", line)] + [len(lines)]
    targets: list[EditTarget] = []
    for start, following in itertools.pairwise(tops):
        end = following - 1
        while end > start and not lines[end].strip():
            end -= 1
        if lines[start].startswith("def ") and 4 <= end - start + 1 <= 25:
            indent = lines[end][: len(lines[end]) - len(lines[end].lstrip())]
            after = [*lines[:end], indent + "# Edited by tandem from Emacs.", *lines[end:]]
            targets.append(EditTarget(line1=start + 1, line2=end + 1, after="\n".join(after)))
            if len(targets) == count:
                return targets
    raise AssertionError("the truth file has too few short top-level functions to edit")


@dataclass(frozen=True, kw_only=True)
class EmacsRun:
    truth: str
    cuts: dict[str, Cut]
    edits: dict[str, EditTarget]
    results: dict[str, Any]
    server_log: str
    stderr: str
    # Markers of workspace modules that ran (tests/hostile_repo.py).
    imported: list[str]

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
def emacs_run(tmp_path_factory: pytest.TempPathFactory, module_sim_factory: SimFactory) -> EmacsRun:
    if EMACS is None:
        pytest.skip("Emacs is not installed (apt-get install emacs-nox elpa-eglot)")
    base = tmp_path_factory.mktemp("emacs")
    truth_text = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    truth_path = base / "truth" / "textwrap.py"
    truth_path.parent.mkdir()
    truth_path.write_text(truth_text, encoding="utf-8")
    work = base / "work"
    work.mkdir()
    hostile_repo.plant(work)
    cuts = choose_cuts(truth_text)
    scenarios: list[dict[str, Any]] = []
    for name, cut in cuts.items():
        path = work / f"{name}_textwrap.py"
        path.write_text(truth_text[: cut.typed_at], encoding="utf-8")
        scenario = {"name": name, "path": str(path), "type": truth_text[cut.typed_at : cut.end]}
        # After the word's line is completed: completion-at-point again at its end, with no RET.
        scenarios.append(scenario | {"next_line": True} if name == "word" else scenario)
    # Issue 28 item 1 with electric-pair-mode: `(` typed after `def wrap` closes itself.
    _, electric_at = _def_line_with_arguments(truth_text)
    (work / "electric_textwrap.py").write_text(truth_text[:electric_at], encoding="utf-8")
    scenarios.append(
        {"name": "electric", "path": str(work / "electric_textwrap.py"), "type": "(", "electric_pair": True}
    )
    edit_runs = (
        ("edit", {"instruction": "add a comment before the last line"}),
        ("code_action", {"action": "tandem: Add type hints"}),
    )
    edits = dict(zip([name for name, _ in edit_runs], choose_edit_targets(truth_text, len(edit_runs)), strict=True))
    for name, fields in edit_runs:
        # Each edit has its own whole copy of the file, and its own truth (set by the driver before it runs).
        path = work / f"{name}_textwrap.py"
        path.write_text(truth_text, encoding="utf-8")
        scenarios.append(
            {
                "name": name,
                "kind": "edit",
                "path": str(path),
                "line1": edits[name].line1,
                "line2": edits[name].line2,
                # Paths as the server shows them to the model: relative to the workspace root.
                "edit_truth": {path.name: edits[name].after},
                **fields,
            }
        )
    # An edit of models.py (visited) whose truth changes only views.py, a file Emacs does not visit.
    (work / "models.py").write_text(MODELS, encoding="utf-8")
    (work / "views.py").write_text(VIEWS, encoding="utf-8")
    scenarios.append(
        {
            "name": "unopened",
            "kind": "edit",
            "path": str(work / "models.py"),
            "line1": 1,
            "line2": MODELS.count("\n"),
            "edit_truth": {"views.py": UNOPENED_TRUTH},
            "instruction": "document where compute_total is shown",
            "unopened": str(work / "views.py"),
        }
    )
    next_edit_path = work / "next_edit_area.py"
    next_edit_path.write_text(NEXT_EDIT_BEFORE, encoding="utf-8")
    # The user renames `w` on the def line; the truth renames its two uses too: two suggestions to accept.
    scenarios.append(
        {"name": "next_edit", "kind": "next_edit", "path": str(next_edit_path), "line": 0, "column": 10}
        | {"type": "idth", "accepts": 2}
    )
    replace_path = work / "next_edit_replace.py"
    replace_path.write_text(NEXT_EDIT_BEFORE, encoding="utf-8")
    # The user replaces `w` with `size`; each follow-up replaces a `w` (struck through) with `size`.
    scenarios.append(
        {"name": "next_edit_replace", "kind": "next_edit", "path": str(replace_path), "line": 0, "column": 9}
        | {"delete": 1, "type": "size", "accepts": 2}
    )
    # Issue 28 item 4: `w` renamed on the def line, its use 46 lines below, off the 23-line window.
    far_path = work / "next_edit_far.py"
    far_path.write_text(FAR_BEFORE, encoding="utf-8")
    scenarios.append(
        {"name": "next_edit_far", "kind": "next_edit", "path": str(far_path), "line": 0, "column": 11}
        | {"type": "idth", "accepts": 1}
    )
    # Last: a project whose `tandem-command' names a program that is not installed.
    missing = base / "missing"
    (missing / ".git").mkdir(parents=True)
    (missing / "example.py").write_text("x = 1\n", encoding="utf-8")
    scenarios.append({"name": "missing", "kind": "missing", "path": str(missing / "example.py")})
    server_log = base / "server.log"
    result_path = base / "result.json"
    fast_settings = SimSettings(profile="spark", truth=(str(truth_path),))
    # The accurate model answers only edits, from the edit truth: no need to wait at codex speed.
    accurate_settings = SimSettings(profile="codex", ttft_ms=50.0, tokens_per_s=20_000.0)
    sim = module_sim_factory(fast_settings)
    accurate = module_sim_factory(accurate_settings)
    sim.set_next_edit_truth(
        {next_edit_path.name: NEXT_EDIT_TRUTH, replace_path.name: NEXT_EDIT_REPLACE_TRUTH, far_path.name: FAR_TRUTH}
    )
    spec = {
        "result_path": str(result_path),
        "plugin_dir": str(PLUGIN),
        # The console script, as tandem.el's default `tandem-command' runs it.
        "command": [hostile_repo.console_script(), "serve", "--log-file", str(server_log)],
        # eglot sends a repository's .dir-locals.el eglot-workspace-configuration unasked, and says
        # nothing of who it is: tandem holds its settings to the workspace's rules, so the models are
        # the user's own, in tandem's config.toml (written below).
        "init_options": {},
        "sim_roots": [sim.root_url, accurate.root_url],
        # Text captures of the first completion, the accepted suggestion and an edit's result.
        "artifacts": str(ROOT / "artifacts" / "emacs"),
        "scenarios": scenarios,
    }
    spec_path = base / "spec.json"
    spec_path.write_text(json.dumps(spec))
    (base / "config" / "tandem").mkdir(parents=True, exist_ok=True)
    (base / "config" / "tandem" / "config.toml").write_text(
        f'[models.fast]\nprovider = "openai-chat"\nbase_url = "{sim.base_url}"\nmodel = "sim-spark"\n'
        f'[models.accurate]\nprovider = "openai-chat"\nbase_url = "{accurate.base_url}"\nmodel = "sim-codex"\n'
        # The far next edit's use is 46 lines below the cursor.
        "[next_edit]\nregion_below = 60\n"
    )
    env = {
        **os.environ,
        "TANDEM_TEST_SPEC": str(spec_path),
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
    return EmacsRun(
        truth=truth_text,
        cuts=cuts,
        edits=edits,
        results=results,
        server_log=log_text,
        stderr=stderr,
        imported=hostile_repo.imported(work),
    )


def _rest_of_line(truth: str, at: int) -> str:
    newline = truth.find("\n", at)
    return truth[at : newline if newline >= 0 else len(truth)]


def test_eglot_runs_tandem_and_installs_its_capf(emacs_run: EmacsRun) -> None:
    record = emacs_run.scenario("word")
    assert record["server"] == "tandem"
    assert record["capf_installed"] is True


def test_the_workspaces_own_modules_never_run(emacs_run: EmacsRun) -> None:
    """The workspace holds cache.py, lsp/, completion.py and tandem/; completions worked (above), and none
    of them was imported."""
    emacs_run.scenario("word")
    assert emacs_run.imported == []


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


def _next_line(truth: str, at: int) -> str:
    """From the end of `at`'s line through the next line with content (blank lines between included)."""
    rest = truth[truth.find("\n", at) :]
    start = len(rest) - len(rest.lstrip("\n \t"))
    return rest[: rest.find("\n", start)]


def test_at_the_end_of_a_completed_line_the_menu_offers_the_next_line(emacs_run: EmacsRun) -> None:
    """Issue 16, item 12: after the word's line is completed, completion-at-point at its end (no RET)
    offers the next line, and the real command inserts it."""
    record = emacs_run.scenario("word")
    cut = emacs_run.cuts["word"]
    line_end = emacs_run.truth.find("\n", cut.end)
    want = _next_line(emacs_run.truth, cut.end)
    assert want.startswith("\n") and want.strip()
    offered = record["next_line"]
    word = re.search(r"\w+$", emacs_run.truth[:line_end])
    assert word is not None
    assert offered["new_texts"] == [word.group() + want], emacs_run.context(offered)
    # The menu's label ends with the next line (after `↵`), so the user sees what comes.
    assert any(c.startswith(word.group() + "↵") and c.endswith(want.strip()) for c in offered["candidates"]), offered
    assert offered["after"] == emacs_run.truth[:line_end] + want
    capture = (ROOT / "artifacts" / "emacs" / "emacs-word-next-line.txt").read_text()
    assert want.strip() in capture


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


def test_mode_line_shows_the_servers_tandem_status(emacs_run: EmacsRun) -> None:
    record = emacs_run.scenario("word")
    status = record["status"]
    # The notification as the server sent it, as eglot handed it to tandem.el.
    assert status["state"] == "ready" and "sim-spark" in status["model"], status
    assert status["route"] == "fast" and isinstance(status["cache_hit"], bool), status
    assert isinstance(status["latency_ms"], int | float) and status["latency_ms"] >= 0, status
    # The mode line is the server's own text; M-x tandem-status says its sentence, not a plist.
    shown = {"cache": "cached", "stream": "reused"}.get(status["source"], "fast")
    assert record["mode_line"] == f" {status['text']} " == f" tandem {round(status['latency_ms'])} ms {shown} "
    assert record["status_message"] == f"{status['text']}: {status['tooltip']}", record["status_message"]
    assert status["tooltip"].startswith("Last suggestion in "), status
    capture = (ROOT / "artifacts" / "emacs" / "emacs-word-accepted.txt").read_text()
    assert f"[mode line] {status['text']} " in capture and record["status_message"] in capture
    assert record["mode_line_installed"] is True


def _edited(emacs_run: EmacsRun, name: str) -> dict[str, Any]:
    """The edit scenario's record, after checking the edit was applied and the buffer is its truth."""
    record = emacs_run.scenario(name)
    result = record["result"]
    assert result["applied"] is True, f"{result}\nserver log (tail): {emacs_run.server_log[-2000:]}"
    assert result["tier"] in ("fast", "accurate") and result["files"] == [f"{name}_textwrap.py"], result
    assert record["after"] == emacs_run.edits[name].after
    assert record["modified"] is True  # applied to the buffer, not saved behind the user's back
    # The answer's message (also the server's window/showMessage) names the model, the file and the size.
    assert result["message"].startswith(f"tandem: {result['tier']} model (sim-"), result
    assert f"{name}_textwrap.py (+" in result["message"], result
    return record


def test_tandem_edit_applies_the_servers_edit_to_the_region(emacs_run: EmacsRun) -> None:
    _edited(emacs_run, "edit")


def test_a_preset_code_action_applies_the_servers_edit(emacs_run: EmacsRun) -> None:
    record = _edited(emacs_run, "code_action")
    assert {"tandem: Fix", "tandem: Add type hints"} <= set(record["offered"]), record["offered"]


def test_an_edit_of_only_a_file_not_visited_says_so_in_the_echo_area(emacs_run: EmacsRun) -> None:
    """Issue 16, item 4: the edit changes only views.py, which Emacs does not visit. eglot asks first
    (it always does for a file not visited), then the server's message, naming views.py "not open", is
    in the echo area (*Messages*). eglot edits the file in a buffer it visits, unsaved, as it does any
    edit: the disk keeps the old text until the user saves."""
    record = emacs_run.scenario("unopened")
    result = record["result"]
    context = f"{record}\nserver log (tail): {emacs_run.server_log[-2000:]}"
    assert result["applied"] is True, context
    assert result["files"] == ["views.py"], context
    shown = r"tandem: (fast|accurate) model \(sim-\w+\) edited views\.py \(\+1 -0 lines, not open\)"
    assert re.fullmatch(shown, result["message"]), context
    # What the user read: eglot's question naming the file, then the server's message in the echo area.
    [prompt] = record["prompts"]
    assert "Server wants to edit" in prompt and "views.py" in prompt, prompt
    # The echo area's last line, in tandem's words (eglot's own "[eglot] Server reports (type=3): " gone).
    assert record["messages"].splitlines()[-1] == result["message"], record["messages"]
    unopened = record["unopened"]
    assert unopened["visited"] is True and unopened["modified"] is True, unopened
    assert unopened["text"] == UNOPENED_TRUTH
    assert unopened["on_disk"] == VIEWS  # not saved behind the user's back
    assert record["after"] == MODELS and record["modified"] is False  # the visited file is unchanged


def test_next_edits_show_as_overlays_and_accept_in_a_chain(emacs_run: EmacsRun) -> None:
    record = emacs_run.scenario("next_edit")
    first, second = record["shown"]
    # Each suggestion inserts the rest of "width" after a "w" (nothing to strike through), then the next.
    # (json-encode writes an empty list as null.)
    assert (first["inserted"], first["struck"]) == (["idth"], None)
    assert (second["inserted"], second["struck"]) == (["idth"], None)
    assert record["after"] == NEXT_EDIT_TRUTH


def test_a_next_edit_that_replaces_text_strikes_it_through(emacs_run: EmacsRun) -> None:
    record = emacs_run.scenario("next_edit_replace")
    first, second = record["shown"]
    # The replaced "w" carries the strike-through face; below its line, the line as it will read (issue 28
    # item 4: "size" drawn right after the "w" read "a wsize by h").
    lines = NEXT_EDIT_REPLACE_TRUTH.split("\n")
    assert (first["inserted"], first["struck"]) == (["\n" + lines[1]], ["w"])
    assert (second["inserted"], second["struck"]) == (["\n" + lines[3]], ["w"])
    capture = (ROOT / "artifacts" / "emacs" / "emacs-next_edit_replace-1.txt").read_text()
    assert 'def area(size, h):\n    """Area of a ~~w~~ by h rectangle."""\n' + lines[1] + "\n" in capture
    assert record["after"] == NEXT_EDIT_REPLACE_TRUTH


def test_a_missing_tandem_is_said_in_words(emacs_run: EmacsRun) -> None:
    """Issue 28 item 7: eglot's own message quoted the whole contact ("can't form an interactive prompt"
    with the initialization options in it)."""
    message = emacs_run.scenario("missing")["message"]
    # Emacs quotes `like this' with curved quotes.
    assert message.startswith("tandem: cannot run \u2018tandem-not-installed\u2019"), message
    assert "initializationOptions" not in message and "interactive prompt" not in message, message


def test_the_connected_line_names_the_language_not_twenty_modes(emacs_run: EmacsRun) -> None:
    """Issue 28 item 8: eglot's "Connected!" line listed every mode of `tandem-modes` over three lines."""
    emacs_run.scenario("word")
    messages = emacs_run.results["messages"]
    connected = [line for line in messages.splitlines() if "Connected!" in line]
    assert connected, messages[-2000:]
    for line in connected:
        assert "rust-mode" not in line and len(line) <= 160, line


def test_completion_after_an_electric_pair_leaves_no_stray_bracket(emacs_run: EmacsRun) -> None:
    """Issue 28 item 1 in Emacs: with `electric-pair-mode` the line reads `def wrap()` when
    `completion-at-point` runs; tandem's item replaces the `)` it holds, and the line is the true one."""
    record = emacs_run.scenario("electric")
    line, at = _def_line_with_arguments(emacs_run.truth)
    assert record["line_typed"] == line[: line.index("(") + 1] + ")"
    assert record["after"].split("\n")[emacs_run.truth[:at].count("\n")] == line


def test_a_next_edit_off_screen_is_pointed_to_and_the_first_press_goes_there(emacs_run: EmacsRun) -> None:
    """Issue 28 item 4 in Emacs: the use of the renamed `w` is 46 lines below, off the window; a hint at the
    end of point's line names its line, M-l goes there, M-l again applies it."""
    record = emacs_run.scenario("next_edit_far")
    [shown] = record["shown"]
    line = FAR_TRUTH.split("\n").index("    return width * factor + total") + 1
    assert shown["hints"] == [f"  ⇥ next edit at line {line} (M-l)"], shown
    assert shown["jumped_to"] == line
    assert shown["inserted"] == ["idth"], shown
    assert record["after"] == FAR_TRUTH


def test_edits_and_next_edits_echo_only_tandems_own_lines(emacs_run: EmacsRun) -> None:
    """Issue 36 item 11: eglot echoed "[eglot] applying 1 edits to `file'...done" for every accepted next
    edit and, beside tandem's message about an edit, that line and "[eglot] Edit successful!". Over the
    whole run (three edits, three chains of next edits): none of eglot's lines about applying, and each
    edit's message once."""
    messages = emacs_run.results["messages"]
    for name in ("edit", "code_action", "next_edit", "next_edit_far"):
        emacs_run.scenario(name)
    assert "[eglot] applying" not in messages and "Edit successful" not in messages, messages[-3000:]
    for name in ("edit", "code_action", "unopened"):
        message = emacs_run.scenario(name)["result"]["message"]
        assert messages.count(message) == 1, (message, messages[-3000:])
