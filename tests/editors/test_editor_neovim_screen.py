"""The Neovim plugin on a real screen: a headless Neovim runs a second Neovim (the plugin, the README's
statusline) in a terminal buffer, and reads what it drew (editors/neovim/tests/screen.lua).

Issue 28 item 5: the README's statusline said `tandem …` all through insert mode after the ghost text was
drawn: the plugin changed its status from a callback and nothing redrew the statusline. Item 2: on the
window's bottom row Tab inserted lines drawn below the window. Item 7: a missing `tandem` was said only in
the statusline. Screens are kept in artifacts/neovim/neovim-screen-*.txt.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap
from typing import Any

import hostile_repo
import pytest
from fixtures_sim import SimFactory
from test_editor_neovim import (
    NEXT_EDIT_BEFORE,
    NEXT_EDIT_FAR_TRUTH,
    NVIM,
    NVIM_MISSING,
    PLUGIN,
    ROOT,
    _def_line_with_arguments,
    _rest_of_line,
    choose_cuts,
    choose_edit_targets,
)

from tandem.sim.runner import SimSettings

SCREEN = PLUGIN / "tests" / "screen.lua"
RUN_TIMEOUT_S = 120

pytestmark = [pytest.mark.editor, pytest.mark.timeout(RUN_TIMEOUT_S + 30)]


def test_the_readme_statusline_follows_the_ghost_text(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    truth_text = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    truth = tmp_path / "truth" / "textwrap.py"
    truth.parent.mkdir()
    truth.write_text(truth_text, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").mkdir()
    cut = choose_cuts(truth_text)["line"]
    path = work / "line_textwrap.py"
    path.write_text(truth_text[: cut.typed_at], encoding="utf-8")
    ghost = _rest_of_line(truth_text, cut.end)
    result_path = tmp_path / "result.json"
    sim = sim_factory(profile="spark", truth=(str(truth),))
    spec = {
        "result_path": str(result_path),
        "nvim": NVIM,
        "plugin": str(PLUGIN),
        "path": str(path),
        "keys": cut.typed(truth_text),
        "ghost": ghost.strip()[:30],
        "artifacts": str(ROOT / "artifacts" / "neovim"),
        "server_log": str(tmp_path / "server.log"),
        "setup": {
            "cmd": [hostile_repo.console_script(), "serve", "--log-file", str(tmp_path / "server.log")],
            "init_options": {
                "models": {"fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"}}
            },
        },
    }
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {
        **os.environ,
        "TANDEM_TEST_SPEC": str(spec_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    subprocess.run(
        [NVIM, "--headless", "--clean", "-c", f"luafile {SCREEN}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    results = json.loads(result_path.read_text()) if result_path.exists() else {"error": "no result file"}
    assert "error" not in results, results.get("error")
    # On screen with the ghost text: the statusline shows the answer's latency, not the waiting mark.
    assert re.search(r"tandem \d+ ms (fast|reused|cached)$", results["status_after"]), results


def test_a_missing_server_is_reported_on_screen(tmp_path: pathlib.Path) -> None:
    """Issue 28 item 7: with no `tandem` to run, the user is told in a message, not only in a statusline they
    may not have set up (here: none)."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    path = tmp_path / "example.py"
    path.write_text("x = 1\n", encoding="utf-8")
    missing = "tandem-not-installed"  # on no PATH
    result_path = tmp_path / "result.json"
    spec = {
        "result_path": str(result_path),
        "nvim": NVIM,
        "plugin": str(PLUGIN),
        "path": str(path),
        "expect_on_screen": f"tandem: cannot run {missing}",
        "artifacts": str(ROOT / "artifacts" / "neovim"),
        "setup": {"cmd": [missing, "serve"]},
        "statusline": False,
    }
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {**os.environ, "TANDEM_TEST_SPEC": str(spec_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    subprocess.run(
        [NVIM, "--headless", "--clean", "-c", f"luafile {SCREEN}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    results = json.loads(result_path.read_text()) if result_path.exists() else {"error": "no result file"}
    assert "error" not in results, results.get("error")
    assert results["error_framing"] is False, results["screen"]
    assert not any("Press ENTER" in line for line in results["screen"]), results["screen"]


def test_at_the_bottom_row_tab_inserts_only_lines_that_were_on_screen(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    """Issue 28 item 2 on the drawn screen: the file's last line on the window's bottom row (`Gzb`), `:` typed
    after a `def`; every line Tab inserts was on the screen when Tab was pressed."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    truth_text = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    truth = tmp_path / "truth" / "textwrap.py"
    truth.parent.mkdir()
    truth.write_text(truth_text, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").mkdir()
    cut = choose_cuts(truth_text)["block"]
    path = work / "bottom_textwrap.py"
    before = truth_text[: cut.typed_at]
    path.write_text(before, encoding="utf-8")
    result_path = tmp_path / "result.json"
    sim = sim_factory(profile="spark", truth=(str(truth),))
    spec = {
        "result_path": str(result_path),
        "nvim": NVIM,
        "plugin": str(PLUGIN),
        "path": str(path),
        "before_keys": "Gzb",
        "last_line": before.rstrip("\n").split("\n")[-1].strip(),
        "keys": cut.typed(truth_text),
        # The first body line of the block, drawn as a virtual line below the cursor's line.
        "ghost": truth_text[cut.end :].split("\n")[1].strip()[:30],
        "accept_and_write": True,
        "artifacts": str(ROOT / "artifacts" / "neovim"),
        "server_log": str(tmp_path / "server.log"),
        "setup": {
            "cmd": [hostile_repo.console_script(), "serve", "--log-file", str(tmp_path / "server.log")],
            "init_options": {
                "models": {"fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"}}
            },
        },
    }
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {
        **os.environ,
        "TANDEM_TEST_SPEC": str(spec_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    subprocess.run(
        [NVIM, "--headless", "--clean", "-c", f"luafile {SCREEN}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    results = json.loads(result_path.read_text()) if result_path.exists() else {"error": "no result file"}
    assert "error" not in results, results.get("error")
    written = path.read_text(encoding="utf-8")
    assert written.startswith(before + cut.typed(truth_text)), written[-300:]
    inserted = written[len(before) + len(cut.typed(truth_text)) :].split("\n")
    assert len([line for line in inserted if line.strip()]) >= 1, inserted
    on_screen = [line.rstrip() for line in results["screen_at_tab"]]
    for line in inserted:
        if line.strip():
            assert line.rstrip() in on_screen, (line, on_screen)


def test_the_readme_statusline_leaves_editing_when_the_edit_is_done(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    """Issue 28 item 5: after an edit's message the statusline said `tandem editing…` until the cursor moved."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    truth_text = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").mkdir()
    path = work / "edit_textwrap.py"
    path.write_text(truth_text, encoding="utf-8")
    [target] = choose_edit_targets(truth_text, 1)
    result_path = tmp_path / "result.json"
    fast = SimSettings(profile="spark")
    accurate = SimSettings(profile="codex", ttft_ms=50.0, tokens_per_s=20_000.0)
    sim = sim_factory(fast)
    accurate_sim = sim_factory(accurate)
    for handle in (sim, accurate_sim):
        handle.set_edit_truth({path.name: target.after}, errors="off")
    spec = {
        "result_path": str(result_path),
        "nvim": NVIM,
        "plugin": str(PLUGIN),
        "path": str(path),
        "edit_keys": f"{target.line1}GV{target.line2}G:TandemEdit add a comment\r",
        "edit_message": f"edited {path.name}",
        "artifacts": str(ROOT / "artifacts" / "neovim"),
        "server_log": str(tmp_path / "server.log"),
        "setup": {
            "cmd": [hostile_repo.console_script(), "serve", "--log-file", str(tmp_path / "server.log")],
            "init_options": {
                "models": {
                    "fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"},
                    "accurate": {
                        "provider": "openai-chat",
                        "base_url": accurate_sim.base_url,
                        "model": "sim-codex",
                    },
                }
            },
        },
    }
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {
        **os.environ,
        "TANDEM_TEST_SPEC": str(spec_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    subprocess.run(
        [NVIM, "--headless", "--clean", "-c", f"luafile {SCREEN}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    results = json.loads(result_path.read_text()) if result_path.exists() else {"error": "no result file"}
    assert "error" not in results, results.get("error")
    assert "editing" not in results["status_after"], results
    assert results["status_after"].endswith("tandem"), results


def _run_steps(
    tmp_path: pathlib.Path,
    path: pathlib.Path,
    steps: list[dict[str, Any]],
    *,
    models: dict[str, Any],
    init_lua: list[str] | None = None,
    setup: dict[str, Any] | None = None,
    default_cmd: bool = False,
) -> dict[str, Any]:
    """Open `path` in the inner Neovim (the README's statusline, tandem set up with `models`), run `steps`
    (screen.lua: send keys, wait for the screen or the editor, record), and return the records.
    `default_cmd`: the plugin's own `cmd` runs the `tandem` found on PATH (the installation under test)."""
    result_path = tmp_path / "result.json"
    server_log = tmp_path / "server.log"
    cmd = {} if default_cmd else {"cmd": [hostile_repo.console_script(), "serve", "--log-file", str(server_log)]}
    spec = {
        "result_path": str(result_path),
        "nvim": NVIM,
        "plugin": str(PLUGIN),
        "path": str(path),
        "steps": steps,
        "init_lua": init_lua or [],
        "artifacts": str(ROOT / "artifacts" / "neovim"),
        **({} if default_cmd else {"server_log": str(server_log)}),
        "setup": {**cmd, "init_options": {"models": models}, **(setup or {})},
    }
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    scripts = str(pathlib.Path(hostile_repo.console_script()).parent)
    env = {
        **os.environ,
        "PATH": scripts + os.pathsep + os.environ.get("PATH", ""),
        "TANDEM_TEST_SPEC": str(spec_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    subprocess.run(
        [NVIM, "--headless", "--clean", "-c", f"luafile {SCREEN}"],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    results = json.loads(result_path.read_text()) if result_path.exists() else {"error": "no result file"}
    assert "error" not in results, results.get("error")
    records: dict[str, Any] = results["records"]
    return records


# Clears the simulator's armed faults (its control API): the model answers again.
CLEAR_FAULTS = """
import sys, urllib.request
request = urllib.request.Request(sys.argv[1] + "/_sim/faults", method="DELETE")
urllib.request.urlopen(request, timeout=30).read()
"""

# The inner Neovim shows a suggestion (checked over its socket, beside what the screen shows).
VISIBLE = "require('tandem').is_visible()"
SUGGESTION = "require('tandem').suggestion()"


def _sim_fast(sim: Any) -> dict[str, Any]:
    return {"fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"}}


def test_a_crlf_file_gets_no_carriage_return_from_a_suggestion(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    """Issue 36 item 1: in a file with CRLF line ends (Neovim's fileformat=dos) the ghost showed `…:^M`
    and Tab wrote a carriage return into the line. The truth is the file with CRLF line ends, as the server
    sees it; the ghost reads without `^M`, and the file written after Tab is the truth's bytes."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    truth_lf = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    truth_text = truth_lf.replace("\n", "\r\n")
    truth = tmp_path / "truth" / "textwrap.py"
    truth.parent.mkdir()
    truth.write_bytes(truth_text.encode())
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").mkdir()
    cuts = choose_cuts(truth_lf)
    # The block cut: `:` typed after a `def`, the suggestion is the body on the lines below.
    block = cuts["block"]
    path = work / "crlf_block.py"
    path.write_bytes(truth_lf[: block.typed_at].replace("\n", "\r\n").encode())
    body = truth_lf[block.end :].split("\n")[1]
    # The line cut: a character typed mid-line, the suggestion is the rest of the line (single-line mode).
    line = cuts["line"]
    line_path = work / "crlf_line.py"
    line_path.write_bytes(truth_lf[: line.typed_at].replace("\n", "\r\n").encode())
    rest = _rest_of_line(truth_lf, line.end)
    sim = sim_factory(profile="spark", truth=(str(truth),))
    records = _run_steps(
        tmp_path,
        path,
        [
            {"wait_eval": "vim.bo.fileformat == 'dos'"},
            {"send": "GA:"},
            {"wait": body.strip()[:30]},
            {"wait_eval": VISIBLE, "record": "block_ghost", "eval": SUGGESTION},
            {"send": "\t\x1b:w\r"},
            {"wait_eval": "not vim.bo.modified and vim.fn.mode() == 'n'"},
            {"send": f":e {line_path.name}\r"},
            {"wait_eval": f"vim.fn.expand('%:t') == '{line_path.name}' and vim.bo.fileformat == 'dos'"},
            {"send": "GA" + line.typed(truth_lf)},
            {"wait_eval": VISIBLE, "record": "line_ghost", "eval": SUGGESTION},
            {"send": "\t\x1b:w\r"},
            {"wait_eval": "not vim.bo.modified and vim.fn.mode() == 'n'"},
        ],
        models=_sim_fast(sim),
    )
    assert records["line_ghost"]["eval"] == rest
    assert truth_lf[block.end :].startswith(records["block_ghost"]["eval"]), records["block_ghost"]["eval"]
    for name, file, cut in (("block_ghost", path, block), ("line_ghost", line_path, line)):
        assert "^M" not in "\n".join(records[name]["screen"]), records[name]["screen"]
        written = file.read_bytes()
        # CRLF line ends only: no carriage return inside a line.
        assert b"\r" not in written.replace(b"\r\n", b""), written[-300:]
        head = truth_lf[: cut.end].replace("\n", "\r\n").encode()
        assert written.startswith(head) and len(written) > len(head) + 2, written[-300:]
        assert truth_text.encode().startswith(written), written[-300:]


def test_the_next_edit_keys_with_no_next_edit_type_nothing(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    """Issue 36 item 2: `<M-l>` (accept the next edit) with none shown typed into the buffer (`y = 2l`): the
    key was fed back, and Neovim reads an unmapped Alt key in insert mode as <Esc> and the letter, so insert
    mode ended and what the user typed next became commands. With no next edit, `<M-l>` and `<M-h>` do
    nothing: in insert mode what is typed after them is inserted after what was typed before; in normal mode
    the cursor stays where it was."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    path = tmp_path / "keys.py"
    path.write_text("x = 1\n", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    no_next_edit = "require('tandem.next_edit').shown(vim.api.nvim_get_current_buf()) == nil"
    # Alt-l and Alt-h as a terminal sends them.
    alt_l, alt_h = "\x1bl", "\x1bh"
    sim = sim_factory(profile="spark")
    records = _run_steps(
        tmp_path,
        path,
        [
            {"send": "Go"},
            {"send": "y = 2"},
            {"wait_eval": f"vim.fn.getline('.') == 'y = 2' and {no_next_edit}"},
            {"send": alt_l + "Z"},
            {"wait_eval": "vim.fn.getline('.'):find('Z') ~= nil or vim.fn.mode() ~= 'i'", "record": "insert"},
            {"send": "\x1b0"},
            {"wait_eval": f"vim.fn.mode() == 'n' and vim.fn.col('.') == 1 and {no_next_edit}"},
            {"send": alt_h + alt_l + "x"},
            {"wait_eval": "#vim.fn.getline('.') < 6", "record": "normal", "eval": no_next_edit},
        ],
        models=_sim_fast(sim),
    )
    assert (records["insert"]["mode"], records["insert"]["buffer"]) == ("i", "x = 1\ny = 2Z"), records["insert"]
    assert records["normal"]["eval"] is True, records["normal"]
    # `x` at the line's start, and the cursor still there: the keys before it did not move it.
    assert (records["normal"]["buffer"], records["normal"]["cursor"]) == ("x = 1\n = 2Z", [2, 0]), records["normal"]


def _window_rows(screen: list[str], name: str) -> list[str]:
    """The rows of the file's window below an empty one: between the empty window's statusline and the
    file's."""
    top = next((i for i, row in enumerate(screen) if row.startswith("[No Name]")), None)
    end = next((i for i, row in enumerate(screen) if row.startswith(name)), None)
    assert top is not None and end is not None, screen
    return screen[top + 1 : end]


def test_a_next_edit_jumped_to_is_drawn_whole_before_it_is_applied(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    """Issue 36 item 3: after `<M-l>` jumped to a next edit below the window, its first line was on the
    window's bottom row and the line it becomes (a virtual line below) under the window; the next `<M-l>`
    applied text never drawn. Here, in a window of three rows: after the jump the struck line and the
    line below it are both in the window. Shrunk to one row, `<M-l>` applies nothing and says why; grown
    again, the edit is drawn whole and `<M-l>` applies it."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    (tmp_path / ".git").mkdir()
    path = tmp_path / "next_far.py"
    path.write_text(NEXT_EDIT_BEFORE, encoding="utf-8")
    alt_l = "\x1bl"
    replaced = "    return size * h * scale"
    edit_shown = "require('tandem.next_edit').shown(vim.api.nvim_get_current_buf()) ~= nil"
    sim = sim_factory(profile="spark")
    sim.set_next_edit_truth({path.name: NEXT_EDIT_FAR_TRUTH})
    records = _run_steps(
        tmp_path,
        path,
        [
            # The file in a window of three rows, below an empty window.
            {"send": ":new | wincmd j | resize 3\r"},
            {"wait_eval": "vim.api.nvim_win_get_height(0) == 3"},
            # `w` on the def line becomes `size`; the docstring's `w` is the first next edit (on screen).
            {"send": "gg0f(ls" + "size" + "\x1b"},
            {"wait_eval": edit_shown},
            {"send": alt_l},
            {"wait": "next edit at line 4", "record": "hint"},
            {"send": alt_l},
            {"wait_eval": "vim.fn.line('.') == 4"},
            {"wait": replaced, "record": "jumped"},
            {"send": ":resize 1\r"},
            {"wait_eval": "vim.api.nvim_win_get_height(0) == 1"},
            {"send": alt_l},
            {"wait": "next edit taller than the window", "record": "too_tall"},
            {"send": ":resize 3\r"},
            {"wait_eval": "vim.api.nvim_win_get_height(0) == 3"},
            # Drawn whole again (the empty window above shows nothing): now the key applies it.
            {"wait": replaced, "record": "in_view_again"},
            {"send": alt_l},
            {"wait_eval": "vim.fn.getline(4) == '" + replaced + "'", "record": "applied"},
        ],
        models=_sim_fast(sim),
    )
    before = NEXT_EDIT_FAR_TRUTH.replace(replaced, "    return w * h * scale").rstrip("\n")
    jumped = _window_rows(records["jumped"]["screen"], path.name)
    assert len(jumped) == 3 and "return w * h * scale" in jumped[-2] and jumped[-1].rstrip() == replaced, jumped
    assert records["jumped"]["buffer"] == before
    assert records["too_tall"]["buffer"] == before, records["too_tall"]
    assert records["in_view_again"]["buffer"] == before
    assert replaced in _window_rows(records["in_view_again"]["screen"], path.name)
    assert records["applied"]["buffer"] == NEXT_EDIT_FAR_TRUTH.rstrip("\n")


def test_a_session_leaves_no_error_in_neovims_lsp_log(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    """Issue 36 item 11: Neovim's lsp.log gained 277 ERROR lines in 15 minutes. Neovim records everything a
    server writes to stderr as an ERROR (tandem's routine INFO lines among them), and the plugin cancelled
    requests already answered (the server warned of each on stderr). With the plugin's own `cmd`: a
    suggestion accepted, then a burst of keys typed through the next one (each key supersedes the last
    request), and the log holds no ERROR line."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    truth_text = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    truth = tmp_path / "truth" / "textwrap.py"
    truth.parent.mkdir()
    truth.write_text(truth_text, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").mkdir()
    cut = choose_cuts(truth_text)["line"]
    path = work / "log_textwrap.py"
    path.write_text(truth_text[: cut.typed_at], encoding="utf-8")
    following = truth_text[cut.end :].split("\n", 2)[1]
    attached = "require('tandem.client').get(vim.api.nvim_get_current_buf())"
    sim = sim_factory(profile="spark", truth=(str(truth),))
    records = _run_steps(
        tmp_path,
        path,
        [
            {"wait_eval": f"{attached} ~= nil and {attached}.initialized == true"},
            {"send": "GA" + cut.typed(truth_text)},
            {"wait_eval": VISIBLE},
            {"send": "\t\r"},
            {"wait_eval": "vim.fn.getline('.'):match('^%s*$') ~= nil and vim.fn.line('.') == vim.fn.line('$')"},
            # The next line (after the indentation Neovim keeps) typed as fast as a terminal delivers it.
            {"send": following.strip()},
            {"wait_eval": "vim.trim(vim.fn.getline('.')) == " + json.dumps(following.strip())},
            {"send": "\x1b:w\r"},
            {"wait_eval": "not vim.bo.modified", "record": "written", "eval": "vim.lsp.get_log_path()"},
        ],
        models=_sim_fast(sim),
        default_cmd=True,
    )
    log_path = pathlib.Path(records["written"]["eval"])
    assert log_path.is_relative_to(tmp_path), log_path
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    errors = [line for line in log.splitlines() if "[ERROR]" in line]
    assert errors == [], errors[:10]
    assert path.read_text(encoding="utf-8").rstrip().endswith(following.strip())


def test_a_request_already_answered_is_not_cancelled(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    """Issue 36 item 11: Neovim's `cancel_request` sends `$/cancelRequest` for a request already answered,
    and the server warned of each ("Cancel notification for unknown message id"), on stderr, which Neovim's
    lsp.log keeps as an ERROR. The plugin's cancel after the answer arrived sends nothing: the server's log
    (written before it answers the next request) has no such warning."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    (tmp_path / ".git").mkdir()
    path = tmp_path / "cancel.py"
    path.write_text("x = 1\n", encoding="utf-8")
    ask = (
        "local client_mod = require('tandem.client'); local bufnr = vim.api.nvim_get_current_buf();"
        " _G.answers = _G.answers or 0;"
        " _G.asked = client_mod.inline_completion(client_mod.get(bufnr), bufnr, true,"
        " function() _G.answers = _G.answers + 1 end)"
    )
    attached = "require('tandem.client').get(vim.api.nvim_get_current_buf())"
    sim = sim_factory(profile="spark")
    _run_steps(
        tmp_path,
        path,
        [
            {"wait_eval": f"{attached} ~= nil and {attached}.initialized == true"},
            {"send": "GA"},
            {"wait_eval": "vim.fn.mode() == 'i'"},
            {"run": ask},
            {"wait_eval": "_G.answers == 1 and " + attached + ".requests[_G.asked] == nil"},
            {"run": f"require('tandem.client').cancel({attached}, _G.asked)"},
            # A second request: the server reads the cancel (and logs any warning) before answering it.
            {"run": ask},
            {"wait_eval": "_G.answers == 2"},
        ],
        models=_sim_fast(sim),
        setup={
            "cmd": [
                hostile_repo.console_script(),
                "serve",
                "--log-to-client",
                "--log-file",
                str(tmp_path / "server.log"),
            ]
        },
    )
    log = (tmp_path / "server.log").read_text(errors="replace")
    assert "tandem serving" in log
    assert "unknown message id" not in log, log[-2000:]


# The cells of the cursor's screen row in the inner Neovim, as drawn: [text, attributes] each.
CURSOR_ROW_CELLS = (
    "(function() local row = vim.fn.win_screenpos(0)[1] + vim.fn.winline() - 2; local cells = {};"
    " for col = 0, vim.o.columns - 1 do local cell = vim.api.nvim__inspect_cell(1, row, col);"
    " cells[#cells + 1] = { cell[1], cell[2] } end; return cells end)()"
)


def test_the_ghost_between_autopaired_brackets_is_drawn_as_a_ghost(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    """Issue 36 item 4: with an auto-pair mapping, `(` gives `()` with the cursor between, and Neovim's
    matchparen highlights the pair (MatchParen: bold, underlined in the default scheme). The ghost drawn
    between them took MatchParen's look and read as typed text. Every cell of the ghost on the screen is in
    TandemGhost's look: italic, its grey, neither bold nor underlined."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    truth_text = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    truth = tmp_path / "truth" / "textwrap.py"
    truth.parent.mkdir()
    truth.write_text(truth_text, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").mkdir()
    line, at = _def_line_with_arguments(truth_text)
    path = work / "pairs_textwrap.py"
    path.write_text(truth_text[:at], encoding="utf-8")
    inside = line[line.index("(") + 1 : line.rindex(")")]
    sim = sim_factory(profile="spark", truth=(str(truth),))
    records = _run_steps(
        tmp_path,
        path,
        [
            {"send": "GA("},
            {"wait_eval": VISIBLE + " and vim.fn.getline('.'):sub(-2) == '()'"},
            {"wait": line[: line.index("(") + 1] + inside},
            # The inner Neovim's grid holds the drawn row (the terminal's copy may lag it or lead it).
            {
                "wait_eval": "table.concat(vim.tbl_map(function(c) return c[1] end, "
                + CURSOR_ROW_CELLS
                + ")):find("
                + json.dumps(line[: line.index("(") + 1] + inside)
                + ", 1, true) ~= nil",
                "record": "ghost",
                "eval": CURSOR_ROW_CELLS,
            },
        ],
        models=_sim_fast(sim),
        # nvim-autopairs' and mini.pairs' mapping, as the Neovim scenarios have it.
        # MatchParen as the report saw it (bold and underlined, as colour schemes often draw it).
        init_lua=[
            'vim.keymap.set("i", "(", "()<C-g>U<Left>")',
            'vim.api.nvim_set_hl(0, "MatchParen", { bold = true, underline = true })',
        ],
    )
    cells = records["ghost"]["eval"]
    text = "".join(cell[0] for cell in cells)
    start = text.index(line[: line.index("(") + 1]) + line.index("(") + 1
    ghost = cells[start : start + len(inside)]
    assert "".join(cell[0] for cell in ghost) == inside, text
    # matchparen is on: the `(` before the ghost is drawn as MatchParen.
    assert cells[start - 1][1].get("bold") and cells[start - 1][1].get("underline"), cells[start - 1]
    looks = {json.dumps(cell[1], sort_keys=True) for cell in ghost}
    for look in map(json.loads, looks):
        assert look.get("italic") is True and not look.get("bold") and not look.get("underline"), (looks, text)
        assert look.get("foreground") == 0x7F848E, (looks, text)  # TandemGhost's grey


# Types `x` in the inner Neovim every 200 ms (a user typing on), until `_G.stop_typing` is set.
TYPE_ON = (
    "_G.stop_typing = false; local timer = vim.uv.new_timer(); timer:start(0, 200, vim.schedule_wrap(function()"
    " if _G.stop_typing then timer:stop(); timer:close(); return end;"
    " vim.api.nvim_feedkeys('x', 't', false) end))"
)


def test_the_statusline_warning_goes_when_the_model_answers_again(
    tmp_path: pathlib.Path, sim_factory: SimFactory
) -> None:
    """Issue 36 item 9: after one outage of the model the README's statusline kept `⚠` for good. The
    model answers 500 while the user types until the outage is announced (`⚠` shown), then answers again:
    once a suggestion comes, the statusline is the server's text without `⚠`."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    (tmp_path / ".git").mkdir()
    path = tmp_path / "outage.py"
    path.write_text("x = 1\n", encoding="utf-8")
    status = "require('tandem.status').get()"
    sim = sim_factory(profile="spark")
    sim.arm_fault("500", 1000)
    clear = [sys.executable, "-c", CLEAR_FAULTS, sim.root_url]
    records = _run_steps(
        tmp_path,
        path,
        [
            {"send": "GA = "},
            {"wait_eval": "vim.fn.mode() == 'i'"},
            {"run": TYPE_ON},
            {"wait_eval": f"{status}.message ~= nil", "timeout_ms": 30000},
            {"wait": "⚠", "record": "outage"},
            {"shell": clear},
            {
                "wait_eval": f"{status}.server ~= nil and {status}.server.state == 'ready'"
                f" and ({status}.server.latency_ms or 0) > 0",
                "timeout_ms": 40000,
            },
            {"run": "_G.stop_typing = true"},
            {"wait_eval": "true", "record": "recovered", "eval": "require('tandem').statusline()"},
        ],
        models=_sim_fast(sim),
        # Room for the outage's message (two rows at this width) without a hit-enter prompt.
        init_lua=["vim.o.cmdheight = 4"],
    )
    assert "⚠" in records["outage"]["statusline"], records["outage"]["statusline"]
    # For a while after an outage the server says the model is back (" ✓ back"); the warning is gone either way.
    assert re.fullmatch(r"tandem \d+ ms \w+( ✓ back)?", records["recovered"]["eval"]), records["recovered"]["eval"]


def test_the_readmes_next_edit_step_in_neovim(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    """Issue 36 item 13 in the real editor: the README's next-edit block run as written (its port made the
    simulator's), then its keys: the cursor on the `w` of `def area(w, h)`, `cwwidth`, Esc. The next edit
    is drawn (struck text, the lines as they will read), and Alt-l leaves the file as the README's truth."""
    if NVIM is None:
        pytest.skip(NVIM_MISSING)
    readme = (PLUGIN / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```sh\n(.*?)```", readme, re.S) if "_sim/next-edit-truth" in b]
    work = tmp_path / "project"
    work.mkdir()
    (work / ".git").mkdir()
    truth = 'def area(width, h):\n    """Area of a width by h rectangle."""\n    return width * h\n'
    sim = sim_factory(profile="spark")
    port = sim.base_url.split(":")[2].split("/")[0]
    script = textwrap.dedent(block).replace("8123", port).replace("path/to/some/project", str(work))
    subprocess.run(["bash", "-euo", "pipefail", "-c", script], check=True, capture_output=True, timeout=60)
    path = work / "area.py"
    records = _run_steps(
        tmp_path,
        path,
        [
            {"wait_eval": "require('tandem.client').get(vim.api.nvim_get_current_buf()) ~= nil"},
            {"send": "gg0fw"},
            {"wait_eval": "vim.fn.col('.') == 10"},
            {"send": "cwwidth\x1b"},
            {"wait": "    return width * h", "record": "shown"},
            {"send": "\x1bl"},
            {"wait_eval": "vim.fn.getline(3) == '    return width * h'", "record": "applied"},
            {"send": ":w\r"},
            {"wait_eval": "not vim.bo.modified"},
        ],
        models=_sim_fast(sim),
    )
    shown = [row.rstrip() for row in records["shown"]["screen"]]
    assert '    """Area of a width by h rectangle."""' in shown and "    return w * h" in shown, shown
    assert path.read_text(encoding="utf-8") == truth
