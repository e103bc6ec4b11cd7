"""One door to the machine: no product module outside `tandem.completion.machine` reads or lists files,
writes them, looks at them or starts a process. Judged from every module's source (AST): imports of process
and file-tree modules, the builtin `open`, `os.*` and `io.*` calls that open, list, run or change files,
the `pathlib` methods that read, list, move or change them, and the calls that only look (`os.stat`,
`os.lstat`, `os.path.exists`, `isfile`, `isdir`, `realpath`, ...; pathlib's `stat`, `exists`, `is_file`,
`is_dir`, `resolve`, ...). A new feature that needs the machine asks the room, whose rules (regular files
only, bounded, non-blocking, fail closed; links judged, not followed blindly; git without the repository's
programs; writes by allow-list) then hold for it too.

A method is known by its name alone (the AST has no types), so the rule for the looking methods is
pathlib's signature: they take no positional argument, and a call with one (`resolver.resolve(path, ref)`)
is another object's. `replace` is a move only with one positional argument and no keyword (`str.replace`
takes two, `dataclasses.replace` and `datetime.replace` keywords). A method of another kind called like
pathlib's (`ls.sources.resolve()`) is an entry in `EXCEPTIONS`.

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
# Calls that look at what is on the machine without opening it: whether a path exists, what kind of file it
# is, where its links lead. Each is a question the room answers by its own rules (a link is judged, not
# followed blindly; a named pipe is not a file), so asking it elsewhere is a door too.
OS_LOOKS = frozenset({"stat", "lstat", "fstat", "access", "readlink", "statvfs"})
OS_PATH_LOOKS = frozenset(
    "exists lexists isfile isdir islink ismount isjunction getsize getmtime getatime getctime realpath samefile".split()
)
# `pathlib.Path`'s methods of the same kind. They take no positional argument (`resolve(strict=...)`,
# `stat(follow_symlinks=...)`), so a call with one is another object's method (`resolver.resolve(path, ref)`,
# `cache.exists(key)`) and is not counted. One without is counted whatever its receiver: the name alone does
# not say it is a path, and an object of another kind with such a method is an entry in EXCEPTIONS.
PATH_LOOKS = frozenset(
    "stat lstat exists is_file is_dir is_symlink is_mount is_junction is_socket is_fifo is_block_device"
    " is_char_device resolve readlink".split()
)
# `Path.replace(target)` moves a file over another; `str.replace` and `bytes.replace` take two arguments,
# `dataclasses.replace` and `datetime.replace` take keywords.
PATH_MOVES = frozenset({"replace"})

# (module path under src/tandem, the door as reported) -> why it is not the room's business.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("cache/tokens.py", "import tempfile"): "names tiktoken's default cache directory (read only through "
    "machine.tokenizer_files)",
    ("lsp/server.py", "os.fdopen("): "the protocol's own stdout descriptor, kept apart from stray prints",
    ("lsp/server.py", "os.fstat("): "the protocol's own stdin descriptor (is the editor's end a pipe?)",
    ("lsp/handlers/lifecycle.py", ".resolve("): "`ls.sources.resolve()` merges the configuration layers "
    "(lsp.config_loading.ConfigSources), not a path",
    ("lsp/handlers/configuration.py", ".resolve("): "`ls.sources.resolve()` merges the configuration layers "
    "(lsp.config_loading.ConfigSources), not a path",
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
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "io", "os.path"):
            names = {"os": OS_DOORS | OS_LOOKS, "io": IO_DOORS, "os.path": OS_PATH_LOOKS}[node.module]
            found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names if a.name in names]
        elif isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Name) and fn.id in BUILTIN_DOORS:
                found.append((node.lineno, f"{fn.id}("))
            elif isinstance(fn, ast.Attribute):
                owner = _dotted(fn.value)
                if owner == "os" and fn.attr in OS_DOORS | OS_LOOKS:
                    found.append((node.lineno, f"os.{fn.attr}("))
                elif owner == "os.path" and fn.attr in OS_PATH_LOOKS:
                    found.append((node.lineno, f"os.path.{fn.attr}("))
                elif owner == "io" and fn.attr in IO_DOORS:
                    found.append((node.lineno, f"io.{fn.attr}("))
                elif (
                    fn.attr in METHOD_DOORS
                    or (fn.attr in PATH_LOOKS and not node.args and owner != "os.path")
                    or (fn.attr in PATH_MOVES and len(node.args) == 1 and not node.keywords and owner != "dataclasses")
                ):
                    found.append((node.lineno, f".{fn.attr}("))
    return found


def _dotted(node: ast.expr) -> str:
    """`os`, `os.path`, `a.b.c` for a name or a chain of attributes on one; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


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
        "os.stat('x')", "os.lstat('x')", "os.fstat(0)", "from os import lstat", "os.path.exists('x')",
        "os.path.isfile('x')", "os.path.isdir('x')", "os.path.islink('x')", "os.path.realpath('x')",
        "os.path.getsize('x')", "from os.path import realpath", "p.stat()", "p.lstat()", "p.exists()",
        "p.is_file()", "p.is_dir()", "p.is_symlink()", "p.resolve()", "(root / 'x').resolve(strict=True)",
        "pathlib.Path('x').exists()", "p.readlink()", "p.replace(q)",
    ],
)  # fmt: skip
def test_the_check_sees_each_kind_of_door(source: str) -> None:
    assert _doors(ast.parse(source)), source


@pytest.mark.parametrize(
    "source",
    [
        "resolver.resolve(path, ref)", "cache.exists(key)", "os.path.join('a', 'b')", "os.path.normpath('x')",
        "os.path.isabs('x')", "match.group(1)", "text.strip()", "text.replace('$', '')",
        "dataclasses.replace(window, prefix='')", "when.replace(tzinfo=UTC)",
    ],
)  # fmt: skip
def test_the_check_leaves_other_calls_alone(source: str) -> None:
    """Not every `resolve` is a path's: another object's method with the same name and an argument, and
    the pure string functions of `os.path`, are not doors."""
    assert not _doors(ast.parse(source)), source


def test_the_room_is_where_the_doors_are() -> None:
    """The room itself does what the rest may not (so the check above is about the right place)."""
    room = SRC.joinpath(*ROOM)
    doors = {door for path in room.glob("*.py") for _, door in _doors(ast.parse(path.read_text(encoding="utf-8")))}
    assert {"import subprocess", "os.open(", "os.scandir("} <= doors
