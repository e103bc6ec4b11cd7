"""Each editor README's walk to a first completion and a first edit with the simulator, run as written.

The shell blocks, the settings and the model configuration are read out of editors/*/README.md (and
Helix's languages.toml, which its README says to copy), so a README that drifts from what works fails
here. Only what a reader must change is changed: the ports 8123 and 8124 become free ones (so the test
runs beside anything), `path/to/some/project` becomes a project folder the test makes, and an edit
truth's "...the whole file after the edit..." becomes the file after the edit. The simulator commands
run through `bash` as typed, with the `tandem` console script; the printed line must be the one the
README shows. The editors themselves are the real-editor tests' job: here `tandem serve` is driven over
stdio with the capabilities each editor sends and the configuration its README gives. The install step
each README starts with (a venv and `pip install`, a minute of downloads) is run as written by .ci/run.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import textwrap
import tomllib
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_support import serve
from lsprotocol import types
from test_e2e_edits import Editor, execute

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("curl") is None, reason="the READMEs' edit-truth loop needs curl"),
]

EDITORS = pathlib.Path(__file__).resolve().parents[2] / "editors"
README_PORTS = (8123, 8124)
PROJECT_PLACEHOLDER = "path/to/some/project"
TRUTH_PLACEHOLDER = "...the whole file after the edit..."
# Where the VS Code README's walk types `def wr`: textwrap.py cut at this line.
CUT_AT = "def wrap(text, width=70, **kwargs):"
EDIT_COMMENT = "    # Edited as the README's edit truth says."


def _readme(editor: str) -> str:
    return (EDITORS / editor / "README.md").read_text(encoding="utf-8")


def _blocks(text: str, language: str) -> list[str]:
    return [textwrap.dedent(body) for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S) if lang == language]


def _block_with(text: str, language: str, needle: str) -> str:
    found = [block for block in _blocks(text, language) if needle in block]
    assert found, f"no ```{language} block with {needle!r}"
    return found[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Substitutions:
    """What the reader changes: the README's ports, the project placeholder."""

    def __init__(self, project: pathlib.Path) -> None:
        self.ports = {port: _free_port() for port in README_PORTS}
        self.project = project

    def __call__(self, text: str) -> str:
        for readme_port, port in self.ports.items():
            text = re.sub(rf"\b{readme_port}\b", str(port), text)
        return text.replace(PROJECT_PLACEHOLDER, str(self.project))


@contextlib.contextmanager
def shell(script: str, cwd: pathlib.Path) -> Iterator[subprocess.Popen[str]]:
    """A README block run by bash in a session of its own, stopped (the whole session) at the end."""
    with subprocess.Popen(
        ["bash", "-c", script], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, env={**os.environ, "PYTHONSAFEPATH": "1"},
    ) as process:  # fmt: skip
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            process.communicate(timeout=30)


@contextlib.contextmanager
def readme_simulator(block: str, sub: Substitutions, cwd: pathlib.Path) -> Iterator[None]:
    """Runs the README's `tandem sim ...` block; its first line must be the one the README prints."""
    # The README's own command, run as a user runs it, is what is tested: not the fixtures' thread.
    printed = [line[2:] for line in block.splitlines() if line.startswith("# tandem sim ")]
    commands = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
    with shell(sub(commands), cwd) as process:
        assert process.stdout is not None
        first = process.stdout.readline().rstrip("\n")
        if printed:
            assert first == sub(printed[0]), first
        else:
            assert re.fullmatch(r"tandem sim \(simulated provider, profile \w+\) listening on \S+", first), first
        yield


def _truth_project(tmp_path: pathlib.Path, name: str = "project") -> tuple[pathlib.Path, str]:
    project = tmp_path / name
    project.mkdir()
    truth = pathlib.Path(textwrap.__file__).read_text(encoding="utf-8")
    (project / "textwrap.py").write_text(truth, encoding="utf-8")
    return project, truth


async def _first_completion(
    tmp_path: pathlib.Path, client: str, options: dict[str, Any] | None, truth: str, *, user_config: str = ""
) -> None:
    """The READMEs' step "open a file with the end of a line deleted and type": the true rest comes back."""
    before = truth[: truth.index(CUT_AT)] + "def wr"
    async with serve(tmp_path, client, options=options, user_config=user_config) as session:
        uri = session.open("textwrap.py", before)
        at = session.position_at_end(before)
        if client in ("vscode", "neovim"):
            assert await session.inline(uri, at) == "ap(text, width=70, **kwargs):"
            return
        result = await session.client.text_document_completion_async(
            types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri), position=at)
        )
        assert isinstance(result, types.CompletionList)
        tandem = [item for item in result.items if item.detail == "tandem"]
        assert tandem and isinstance(tandem[0].text_edit, types.TextEdit), result
        assert tandem[0].text_edit.new_text == "wrap(text, width=70, **kwargs):"


def _vscode_options(block: str) -> dict[str, Any]:
    """The README's settings, mapped as the extension maps them (tandem.models.fast.baseUrl -> base_url)."""
    settings = json.loads("{" + block.strip().rstrip(",") + "}")
    options: dict[str, Any] = {}
    for key, value in settings.items():
        *path, leaf = key.removeprefix("tandem.").split(".")
        node = options
        for part in path:
            node = node.setdefault(part, {})
        node[re.sub(r"([A-Z])", r"_\1", leaf).lower()] = value
    return options


def _lua_fast(text: str) -> dict[str, Any]:
    match = re.search(r'fast = \{ provider = "([^"]+)", base_url = "([^"]+)", model = "([^"]+)" \}', text)
    assert match, "no fast model in the Neovim README's setup"
    return {"models": {"fast": dict(zip(("provider", "base_url", "model"), match.groups(), strict=True))}}


def _user_config(text: str) -> str:
    """The README's `~/.config/tandem/config.toml` (Emacs and Helix: their editor settings may come from
    the workspace, so the model is set there)."""
    block = _block_with(text, "toml", "# ~/.config/tandem/config.toml")
    assert "fast" in tomllib.loads(block)["models"], "no fast model in the README's config.toml"
    return block


@pytest.mark.parametrize("editor", ["vscode", "neovim", "emacs", "helix"])
async def test_the_readmes_simulator_and_configuration_give_the_first_completion(
    tmp_path: pathlib.Path, editor: str
) -> None:
    text = _readme(editor)
    project, truth = _truth_project(tmp_path)
    sub = Substitutions(project)
    simulator = _block_with(text, "sh", "tandem sim ")
    options: dict[str, Any] | None = None
    user = ""
    if editor == "vscode":
        options = _vscode_options(_block_with(text, "json", "tandem.models.fast.provider"))
        client = "vscode"
    elif editor == "neovim":
        options, client = _lua_fast(text), "neovim"
    else:
        user, client = _user_config(text), "eglot" if editor == "emacs" else "helix"
    with readme_simulator(simulator, sub, tmp_path):
        options = json.loads(sub(json.dumps(options))) if options is not None else None
        await _first_completion(tmp_path, client, options, truth, user_config=sub(user))


def _accurate_and_truth_blocks(editor: str, text: str, after: str) -> tuple[dict[str, Any], str, str]:
    """The README's accurate model, its command for the second simulator, and its edit-truth block with
    the reader's part filled in."""
    truth_block = _block_with(text, "sh", "_sim/edit-truth")
    if editor == "vscode":
        accurate = _vscode_options(_block_with(text, "json", "tandem.models.accurate.provider"))["models"]["accurate"]
        return accurate, _block_with(text, "sh", "--profile codex"), truth_block
    model = re.search(
        r'accurate = \{ provider = "([^"]+)", base_url = "([^"]+)",\s*model = "([^"]+)" \}', text
    ) or re.search(r':accurate \(:provider "([^"]+)"\s+:base_url "([^"]+)"\s+:model "([^"]+)"\)', text)
    # Emacs' README names the accurate model's keys only as "same keys" as :fast: the simulator's model.
    fields = model.groups() if model else ("openai-chat", "http://127.0.0.1:8124/v1", "sim-codex")
    accurate = dict(zip(("provider", "base_url", "model"), fields, strict=True))
    filled = truth_block.replace('"app.py"', '"textwrap.py"').replace(
        TRUTH_PLACEHOLDER, json.dumps(after)[1:-1].replace("'", "'\\''")
    )
    in_block = [b for b in _blocks(text, "sh") if "--profile codex" in b]
    if in_block:
        return accurate, in_block[0], filled
    inline = re.search(r"`(tandem sim --profile codex --port 8124)`", text)
    assert inline, "the README names no command for the second simulator"
    return accurate, inline.group(1), filled


@pytest.mark.parametrize("editor", ["vscode", "neovim", "emacs"])
async def test_the_readmes_two_simulators_and_edit_truth_give_the_first_edit(
    tmp_path: pathlib.Path, editor: str
) -> None:
    text = _readme(editor)
    project, truth = _truth_project(tmp_path)
    sub = Substitutions(project)
    start = truth.index("def fill(")
    last = truth.index("    return w.fill(text)", start)
    after = truth[:last] + EDIT_COMMENT + "\n" + truth[last:]
    (project / "textwrap_after.py").write_text(after, encoding="utf-8")  # the VS Code README's hand-made file
    accurate, accurate_command, truth_block = _accurate_and_truth_blocks(editor, text, after)
    fast = {"provider": "openai-chat", "base_url": "http://127.0.0.1:8123/v1", "model": "sim-spark"}
    options = json.loads(sub(json.dumps({"models": {"fast": fast, "accurate": accurate}})))
    # The first simulator as in step 2, the second as the README starts it; the loop once both listen (a
    # README that starts the second in the loop's own block with `&` posts before it listens: curl fails).
    assert "&" not in accurate_command, "the README starts the second simulator in the background"
    with (
        readme_simulator(_block_with(text, "sh", "tandem sim "), sub, project),
        readme_simulator(accurate_command, sub, project),
        shell(sub(truth_block), project) as loop,
    ):
        assert loop.wait(timeout=60) == 0, "the README's edit-truth loop failed"
        async with serve(tmp_path, "vscode", options=options) as session:
            editor_side = Editor(session)
            uri = editor_side.open("textwrap.py", truth)
            first, end = truth[:start].count("\n"), truth[:last].count("\n") + 1
            selection = {"start": {"line": first, "character": 0}, "end": {"line": end, "character": 0}}
            result = await execute(session, {"uri": uri, "range": selection, "instruction": "add a comment"})
    assert result["applied"] is True, result
    assert result["message"].startswith("tandem: ") and "textwrap.py (+1 -0 lines)" in result["message"], result
    assert editor_side.texts[uri] == after


def _read(path: pathlib.Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("editor", ["neovim", "emacs"])
async def test_the_readmes_next_edit_step_gives_a_next_edit(tmp_path: pathlib.Path, editor: str) -> None:
    """Issue 36 item 13: with the simulator a newcomer saw no next edit, because it predicts one only from
    a next-edit truth no README gave. The README's block (a small file and its truth) is run as written in
    the project; the change it describes (`w` -> `width` on the def line) is made, and the next edit asked
    for is the rest of the rename, as the README says."""
    text = _readme(editor)
    project, _ = _truth_project(tmp_path, "workspace")  # where `serve` runs the server: the project's root
    sub = Substitutions(project)
    block = _block_with(text, "sh", "_sim/next-edit-truth")
    printed = [line[2:] for line in block.splitlines() if line.startswith("# {")]
    commands = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
    options: dict[str, Any] | None = None
    user = ""
    if editor == "neovim":
        options, client = _lua_fast(text), "neovim"
    else:
        user, client = _user_config(text), "eglot"
    with readme_simulator(_block_with(text, "sh", "tandem sim "), sub, tmp_path), shell(sub(commands), tmp_path) as run:
        out, _ = run.communicate(timeout=60)
        assert run.returncode == 0 and [out.strip()] == printed, (out, printed)
        before = _read(project / "area.py")
        assert before.startswith("def area(w, h):\n")
        options = json.loads(sub(json.dumps(options))) if options is not None else None
        async with serve(tmp_path, client, options=options, user_config=sub(user)) as session:
            uri = session.open("area.py", before)
            # The README's change: the `w` of `def area(w, h)` becomes `width`.
            session.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                    content_changes=[
                        types.TextDocumentContentChangePartial(
                            range=types.Range(
                                start=types.Position(line=0, character=9), end=types.Position(line=0, character=10)
                            ),
                            text="width",
                        )
                    ],
                )
            )
            result = await session.client.protocol.send_request_async(
                "textDocument/copilotInlineEdit",
                {"textDocument": {"uri": uri, "version": 2}, "position": {"line": 0, "character": 13}},
            )
    edits = result.edits if hasattr(result, "edits") else result["edits"]
    assert len(edits) == 1, result
    edit = edits[0]
    changed = before.replace("def area(w,", "def area(width,")
    lines = changed.split("\n")
    start, end = edit.range.start, edit.range.end
    offset = sum(len(line) + 1 for line in lines[: start.line]) + start.character
    stop = sum(len(line) + 1 for line in lines[: end.line]) + end.character
    # The rest of the rename, as the README's truth has it (the docstring and the return line).
    assert changed[:offset] + edit.text + changed[stop:] == before.replace("w", "width"), edit
