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
import textwrap

import hostile_repo
import pytest
from test_editor_neovim import NVIM, NVIM_MISSING, PLUGIN, ROOT, _rest_of_line, choose_cuts, choose_edit_targets

from tandem.sim.runner import SimSettings, start_in_thread

SCREEN = PLUGIN / "tests" / "screen.lua"
RUN_TIMEOUT_S = 120

pytestmark = [pytest.mark.editor, pytest.mark.timeout(RUN_TIMEOUT_S + 30)]


def test_the_readme_statusline_follows_the_ghost_text(tmp_path: pathlib.Path) -> None:
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
    with start_in_thread(SimSettings(profile="spark", truth=(str(truth),))) as sim:
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


def test_at_the_bottom_row_tab_inserts_only_lines_that_were_on_screen(tmp_path: pathlib.Path) -> None:
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
    with start_in_thread(SimSettings(profile="spark", truth=(str(truth),))) as sim:
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


def test_the_readme_statusline_leaves_editing_when_the_edit_is_done(tmp_path: pathlib.Path) -> None:
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
    with start_in_thread(fast) as sim, start_in_thread(accurate) as accurate_sim:
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
