"""One door to the machine: no product module outside `tandem.completion.machine` reads or lists files,
writes them or starts a process. Judged from every module's source (AST): imports of process and file-tree
modules, the builtin `open`, `os.*` and `io.*` calls that open, list, run or change files, and the
`pathlib` methods that read, list or change them. A new feature that needs the machine asks the room, whose
rules (regular files only, bounded, non-blocking, fail closed; git without the repository's programs;
writes by allow-list) then hold for it too.

`EXCEPTIONS` is short and each entry says why; anything else is a failure naming the module, the line and
the call. The check is shown to catch what it is for (`test_the_check_sees_each_kind_of_door`).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "tandem"
PRODUCT = ("lsp", "completion", "cache")
ROOM = ("completion", "machine")

# Modules whose import is a door by itself: processes, file trees, temporary files.
DOOR_MODULES = frozenset({"subprocess", "glob", "shutil", "pty", "tempfile", "fcntl", "mmap"})
# `os.X(...)` calls that open, list, run or change files.
OS_DOORS = frozenset(
    "walk fwalk scandir listdir open fdopen system popen remove unlink rmdir removedirs makedirs mkdir rename"
    " renames replace symlink link chmod chown truncate mkfifo mknod execv execve execvp execvpe execl execlp"
    " spawnv spawnve spawnvp posix_spawn posix_spawnp startfile kill killpg fork forkpty".split()
)
IO_DOORS = frozenset({"open", "FileIO", "open_code"})
# Method calls that read, list or change files (`pathlib.Path`'s), or start processes (`asyncio`'s).
METHOD_DOORS = frozenset(
    "read_text read_bytes write_text write_bytes iterdir glob rglob walk scandir listdir unlink rmdir mkdir"
    " touch symlink_to hardlink_to chmod lchmod rename create_subprocess_exec create_subprocess_shell".split()
)
BUILTIN_DOORS = frozenset({"open", "exec", "eval", "compile", "__import__", "breakpoint"})

# (module path under src/tandem, the door as reported) -> why it is not the room's business.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("completion/observe/trace.py", ".mkdir("): "the trace writer makes tandem's own state directory "
    "(a workspace's trace path is confined to tandem's state and cache directories by the config loader)",
    ("completion/observe/trace.py", "io.FileIO("): "the trace writer appends to tandem's own trace file",
    ("cache/tokens.py", "import tempfile"): "names tiktoken's default cache directory (read only through "
    "machine.tokenizer_files)",
    ("lsp/handlers/health.py", "os.listdir("): "tandem/health counts the server's own descriptors in /proc/self/fd",
    ("lsp/handlers/health.py", ".read_text("): "tandem/health reads /proc/self/status (the server's memory)",
    ("lsp/server.py", "os.fdopen("): "the protocol's own stdout descriptor, kept apart from stray prints",
    ("completion/edit/flow.py", ".read_text("): "`inputs.read_text` is a callback: the edit's workspace reads "
    "through machine.files (lsp/edit_workspace.py)",
}


def _doors(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name.split(".")[0] in DOOR_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in DOOR_MODULES:
            found.append((node.lineno, f"import {node.module}"))
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "io"):
            names = OS_DOORS if node.module == "os" else IO_DOORS
            found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names if a.name in names]
        elif isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Name) and fn.id in BUILTIN_DOORS:
                found.append((node.lineno, f"{fn.id}("))
            elif isinstance(fn, ast.Attribute):
                owner = fn.value.id if isinstance(fn.value, ast.Name) else ""
                if owner == "os" and fn.attr in OS_DOORS:
                    found.append((node.lineno, f"os.{fn.attr}("))
                elif owner == "io" and fn.attr in IO_DOORS:
                    found.append((node.lineno, f"io.{fn.attr}("))
                elif fn.attr in METHOD_DOORS:
                    found.append((node.lineno, f".{fn.attr}("))
    return found


def _product_modules() -> list[pathlib.Path]:
    modules = [
        path
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] in PRODUCT and path.relative_to(SRC).parts[:2] != ROOM
    ]
    assert len(modules) > 50  # the walk found the product
    return modules


def test_nothing_outside_the_room_opens_lists_runs_or_writes() -> None:
    offenders: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in _product_modules():
        relative = path.relative_to(SRC).as_posix()
        for line, door in _doors(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if (relative, door) in EXCEPTIONS:
                used.add((relative, door))
            else:
                offenders.append(f"{relative}:{line}: {door}")
    assert offenders == [], "ask tandem.completion.machine instead:\n" + "\n".join(offenders)
    assert used == set(EXCEPTIONS), f"exceptions no longer needed: {sorted(set(EXCEPTIONS) - used)}"


@pytest.mark.parametrize(
    "source",
    [
        "import subprocess", "from subprocess import run", "import shutil", "import glob",
        "open('x')", "os.walk('.')", "os.scandir('.')", "os.listdir('.')", "os.open('x', 0)", "os.system('x')",
        "io.open('x')", "io.FileIO('x')", "p.read_text()", "p.read_bytes()", "p.write_text('')", "p.iterdir()",
        "p.rglob('*')", "asyncio.create_subprocess_exec('git')", "from os import scandir", "exec('x')",
    ],
)  # fmt: skip
def test_the_check_sees_each_kind_of_door(source: str) -> None:
    assert _doors(ast.parse(source)), source


def test_the_room_is_where_the_doors_are() -> None:
    """The room itself does what the rest may not (so the check above is about the right place)."""
    room = SRC.joinpath(*ROOM)
    doors = {door for path in room.glob("*.py") for _, door in _doors(ast.parse(path.read_text(encoding="utf-8")))}
    assert {"import subprocess", "os.open(", "os.scandir("} <= doors
