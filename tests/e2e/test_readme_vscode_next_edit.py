"""The VS Code README's step 3c, run as written (issue 36 item 13): its simulator block, then its block
that writes area.py and gives the simulator the next-edit truth; then, with the README's settings,
`tandem serve` driven over stdio as VS Code drives it: `w` typed into `width` on the def line, the next
edit asked for, and it is the docstring's rename the README says appears."""

from __future__ import annotations

import asyncio
import pathlib
import shutil

import pytest
from e2e_support import serve
from lsprotocol import types
from test_e2e_next_edit import _ask
from test_readme_walkthrough import Substitutions, _block_with, _readme, _vscode_options, readme_simulator

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("curl") is None, reason="the README's next-edit truth is posted with curl"),
]


async def test_the_vscode_readmes_next_edit_step(tmp_path: pathlib.Path) -> None:
    text = _readme("vscode")
    project = tmp_path / "project"
    project.mkdir()
    sub = Substitutions(project)
    options = _vscode_options(_block_with(text, "json", "tandem.models.fast.provider"))
    options["models"]["fast"]["base_url"] = sub(options["models"]["fast"]["base_url"])
    truth_block = _block_with(text, "sh", "_sim/next-edit-truth")
    with readme_simulator(_block_with(text, "sh", "tandem sim "), sub, project):
        posted = await asyncio.create_subprocess_exec(
            "bash", "-euo", "pipefail", "-c", sub(truth_block), cwd=project, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await posted.communicate()
        assert posted.returncode == 0 and b'"area.py"' in out, out
        before = (project / "area.py").read_text()
        async with serve(tmp_path, "vscode", options=options) as session:
            uri = session.open("area.py", before)
            # "put the cursor just after the `w` of `def area(w` and type `idth`"
            at = len("def area(w")
            for i, char in enumerate("idth"):
                session.insert(uri, types.Position(line=0, character=at + i), char)
            [edit] = await _ask(session, uri, 1 + len("idth"), 0, at + len("idth"))
    lines = before.split("\n")
    start, end = edit["range"]["start"], edit["range"]["end"]
    assert start["line"] == end["line"] == 1, edit
    changed = lines[1][: start["character"]] + edit["text"] + lines[1][end["character"] :]
    assert changed == '    """Area of a width by h rectangle."""'
