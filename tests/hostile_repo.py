"""A repository whose own modules share names with tandem's parts, each writing a marker file if imported.

An editor launch that puts the workspace on `sys.path` (`python -m tandem` run in the workspace, or a
console script run by a Python that adds the working directory) would import them: the editor tests plant
them in their workspace and assert that no marker appeared while completions worked.
"""

from __future__ import annotations

import pathlib
import shutil
import sysconfig

MODULES = ("cache.py", "lsp/__init__.py", "completion.py", "tandem/__init__.py")
MARKER = "IMPORTED-FROM-THE-WORKSPACE"
_BODY = (
    "# A workspace module named like a part of tandem: importing it leaves a marker beside it.\n"
    "import pathlib\n"
    f"pathlib.Path(__file__).with_name({MARKER!r} + '-' + pathlib.Path(__file__).stem).write_text(__name__)\n"
)


def plant(root: pathlib.Path) -> None:
    for name in MODULES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_BODY, encoding="utf-8")


def imported(root: pathlib.Path) -> list[str]:
    """The markers left in `root`: one per workspace module that ran (none is the only right answer)."""
    return sorted(str(path.relative_to(root)) for path in root.rglob(f"{MARKER}-*"))


def console_script() -> str:
    """The `tandem` console script of the installation under test (what editors run by default)."""
    script = pathlib.Path(sysconfig.get_path("scripts")) / "tandem"
    if script.exists():
        return str(script)
    found = shutil.which("tandem")
    if found is None:
        raise AssertionError("the tandem console script is not installed (pip install .)")
    return found
