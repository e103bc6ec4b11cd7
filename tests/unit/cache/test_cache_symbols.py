"""The workspace symbol index and import resolution, on small examples and on the standard library."""

from __future__ import annotations

import pathlib
import sysconfig

import pytest

from tandem.cache.imports import ImportRef, ModuleResolver, extract_imports
from tandem.cache.symbols import SymbolIndex, extract_definitions

PY = '''import os, sys as system
from . import sibling
from ..pkg.mod import (
    alpha,
    beta as b,
)
from json import decoder

CONSTANT = 3
limit: int = 10

def top(a,
        b):
    """Example in a docstring:
x = 1
def not_a_definition(): pass
"""
    return a

class Widget(Base):
    size = 2

    async def grow(self):
        pass
'''


def test_python_definitions_and_extents() -> None:
    found = {d.name: d for d in extract_definitions("pkg/a.py", PY.splitlines())}
    assert set(found) == {"CONSTANT", "limit", "top", "Widget", "grow"}
    assert (found["top"].start_line, found["top"].end_line) == (11, 18)  # the docstring does not end it
    assert found["Widget"].kind == "class" and found["Widget"].end_line == 24
    assert found["grow"].indent == 4 and found["grow"].kind == "def"


def test_brace_language_definitions() -> None:
    js = (
        "export function foo(a) {\n  return a;\n}\n"
        "const bar = () => {\n  let local = 1;\n};\n"
        "class Baz {\n  m() {}\n}\n"
    )
    found = {d.name: d for d in extract_definitions("a.ts", js.splitlines())}
    assert set(found) == {"foo", "bar", "Baz"}  # `local` is not top level
    assert (found["foo"].start_line, found["foo"].end_line) == (0, 3)
    rust = "pub struct Point {\n    x: i32,\n}\n\nimpl Point {\n    pub fn norm(&self) -> i32 {\n        0\n    }\n}\n"
    names = {d.name for d in extract_definitions("a.rs", rust.splitlines())}
    assert {"Point", "norm"} <= names
    go = "func (s *Server) Serve() error {\n\treturn nil\n}\ntype Handler interface {\n}\n"
    assert {d.name for d in extract_definitions("a.go", go.splitlines())} == {"Serve", "Handler"}


def test_extract_python_imports() -> None:
    refs = extract_imports("pkg/a.py", PY)
    assert ImportRef(module="os", line=0) in refs
    assert ImportRef(module="sys", line=0) in refs
    assert ImportRef(module="", level=1, names=("sibling",), line=1) in refs
    assert ImportRef(module="pkg.mod", level=2, names=("alpha", "beta"), line=2) in refs
    assert ImportRef(module="json", names=("decoder",), line=6) in refs


def test_extract_other_languages() -> None:
    js = "import x from './util';\nimport { y } from \"../lib/y\";\nconst z = require('./z');\nimport 'react';\n"
    assert [r.spec for r in extract_imports("src/a.ts", js)] == ["./util", "../lib/y", "./z", "react"]
    c = '#include <stdio.h>\n#include "local.h"\n'
    assert [r.spec for r in extract_imports("a.c", c)] == ["local.h"]
    rust = "mod parser;\npub mod lexer;\nuse std::io;\n"
    assert [r.spec for r in extract_imports("src/main.rs", rust)] == ["parser", "lexer"]


def test_resolver_python_absolute_relative_and_closest() -> None:
    resolver = ModuleResolver(
        [
            "src/app/__init__.py",
            "src/app/core.py",
            "src/app/util/__init__.py",
            "src/app/util/text.py",
            "other/app/core.py",
            "tests/test_core.py",
        ]
    )
    importer = "src/app/main.py"
    assert resolver.resolve(importer, ImportRef(module="app.core")) == ("src/app/core.py",)
    assert resolver.resolve("other/app/x.py", ImportRef(module="app.core")) == ("other/app/core.py",)
    assert resolver.resolve(importer, ImportRef(module="app.util", names=("text",))) == (
        "src/app/util/text.py",
        "src/app/util/__init__.py",
    )
    assert resolver.resolve(importer, ImportRef(level=1, names=("core",))) == ("src/app/core.py", "src/app/__init__.py")
    assert resolver.resolve("src/app/util/text.py", ImportRef(module="core", level=2)) == ("src/app/core.py",)
    assert resolver.resolve(importer, ImportRef(module="numpy")) == ()
    resolver.remove("src/app/core.py")
    assert resolver.resolve(importer, ImportRef(module="app.core")) == ("other/app/core.py",)


def test_resolver_relative_paths_for_other_languages() -> None:
    resolver = ModuleResolver(
        [
            "web/src/util.ts",
            "web/src/lib/index.tsx",
            "c/include/defs.h",
            "c/src/local.h",
            "r/src/parser.rs",
            "r/src/net/mod.rs",
            "r/src/net/tcp.rs",
        ]
    )
    assert resolver.resolve("web/src/app.ts", ImportRef(spec="./util")) == ("web/src/util.ts",)
    assert resolver.resolve("web/src/app.ts", ImportRef(spec="./lib")) == ("web/src/lib/index.tsx",)
    assert resolver.resolve("web/src/app.ts", ImportRef(spec="react")) == ()
    assert resolver.resolve("c/src/main.c", ImportRef(spec="local.h")) == ("c/src/local.h",)
    assert resolver.resolve("c/src/main.c", ImportRef(spec="defs.h")) == ("c/include/defs.h",)
    assert resolver.resolve("r/src/main.rs", ImportRef(spec="parser")) == ("r/src/parser.rs",)
    assert resolver.resolve("r/src/main.rs", ImportRef(spec="net")) == ("r/src/net/mod.rs",)
    assert resolver.resolve("r/src/net/mod.rs", ImportRef(spec="tcp")) == ("r/src/net/tcp.rs",)


def test_symbol_index_update_remove_and_versions() -> None:
    index = SymbolIndex()
    index.update("pkg/a.py", "def helper():\n    return 1\n")
    index.update("pkg/b.py", "from .a import helper\n\ndef user():\n    return helper()\n")
    assert [d.path for d in index.definitions("helper")] == ["pkg/a.py"]
    assert index.imported_paths("pkg/b.py") == ("pkg/a.py",)
    version = index.name_version("helper")
    index.update("pkg/a.py", "def other():\n    pass\n")
    assert index.definitions("helper") == []
    assert index.name_version("helper") > version
    assert index.lines("pkg/a.py") == ["def other():", "    pass"]
    index.remove("pkg/a.py")
    assert "pkg/a.py" not in index and index.lines("pkg/a.py") is None
    assert index.imported_paths("pkg/b.py") == ()
    assert [d.name for d in index.definitions("user")] == ["user"]


def test_standard_library_asyncio_imports_resolve() -> None:
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    index = SymbolIndex()
    for folder in ("asyncio", "concurrent/futures", "collections", "json"):
        for path in sorted((root / folder).glob("*.py")):
            index.update(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8"))
    imported = index.imported_paths("asyncio/base_events.py")
    assert {"asyncio/events.py", "asyncio/futures.py", "asyncio/tasks.py", "collections/__init__.py"} <= set(imported)
    # The real text comes back line for line.
    lines = (root / "asyncio/events.py").read_text(encoding="utf-8").splitlines()
    assert index.lines("asyncio/events.py") == lines
    loop = [d for d in index.definitions("AbstractEventLoop") if d.path == "asyncio/events.py"]
    assert loop and lines[loop[0].start_line].startswith("class AbstractEventLoop")


def test_definitions_by_name_one_or_many_through_updates_and_removals() -> None:
    # One definition of a name is kept bare, more as a list: the answers are the same either way, in the
    # order the files were indexed, through every change between one and many.
    index = SymbolIndex()
    index.update("a.py", "def run():\n    pass\n")
    assert [(d.path, d.start_line) for d in index.definitions("run")] == [("a.py", 0)]
    index.update("b.py", "x = 1\n\ndef run():\n    pass\n")
    index.update("c.py", "def run():\n    pass\n\ndef run():\n    return 2\n")
    assert [(d.path, d.start_line) for d in index.definitions("run")] == [
        ("a.py", 0),
        ("b.py", 2),
        ("c.py", 0),
        ("c.py", 3),
    ]
    index.remove("c.py")
    assert [(d.path, d.start_line) for d in index.definitions("run")] == [("a.py", 0), ("b.py", 2)]
    index.update("a.py", "def walk():\n    pass\n")
    assert [(d.path, d.start_line) for d in index.definitions("run")] == [("b.py", 2)]
    index.update("d.py", "def run():\n    pass\n")
    assert [(d.path, d.start_line) for d in index.definitions("run")] == [("b.py", 2), ("d.py", 0)]
    index.remove("b.py")
    index.remove("d.py")
    assert index.definitions("run") == []
    assert [d.path for d in index.definitions("walk")] == ["a.py"]


def test_imported_names_are_shared_strings() -> None:
    # The same module and name imported by many files is one string (the index of a large workspace).
    first = extract_imports("a.py", "import os\nfrom typing import Any\n")
    second = extract_imports("b.py", "import os\nfrom typing import Any\n")
    assert first == second
    assert first[0].module is second[0].module and first[1].names[0] is second[1].names[0]


def test_the_resolver_keeps_the_path_strings_it_is_given() -> None:
    # Every indexed path is in the resolver too: a normalized path is kept as the index's own string, not a
    # copy of it; one that needs normalizing is still normalized.
    path = "/".join(["pkg", "mod.py"])
    resolver = ModuleResolver([path, "other/./tool.py"])
    (found,) = resolver.resolve("main.py", ImportRef(module="pkg.mod"))
    assert found == "pkg/mod.py" and found is path
    assert resolver.resolve("main.py", ImportRef(module="other.tool")) == ("other/tool.py",)


def test_a_name_defined_once_is_version_one_without_an_entry() -> None:
    # Most names of a workspace are defined once and never change: they cost no entry of their own.
    index = SymbolIndex()
    index.update("a.py", "def one():\n    pass\n\ndef two():\n    pass\n")
    assert (index.name_version("one"), index.name_version("two"), index.name_version("three")) == (1, 1, 0)
    assert index._name_versions == {}
    index.update("b.py", "def one():\n    pass\n")
    assert (index.name_version("one"), index.name_version("two")) == (2, 1)
    assert index._name_versions == {"one": 2}


def test_name_versions_count_every_definition_added_or_dropped() -> None:
    # The numbers are those of one bump per definition added or dropped, through every kind of change:
    # a name's first definition, more of them, re-indexing, removal down to none, and coming back.
    index = SymbolIndex()
    expected: dict[str, int] = {}
    files: dict[str, list[str]] = {}

    def apply(path: str, names: list[str] | None) -> None:
        for name in files.pop(path, []):
            expected[name] = expected.get(name, 0) + 1
        if names is None:
            index.remove(path)
        else:
            index.update(path, "".join(f"def {name}():\n    pass\n\n" for name in names))
            files[path] = names
            for name in names:
                expected[name] = expected.get(name, 0) + 1
        for name in ("run", "walk", "stop", "jump"):
            assert index.name_version(name) == expected.get(name, 0), (path, names, name)

    apply("a.py", ["run"])
    apply("b.py", ["run", "walk"])
    apply("a.py", ["run"])
    apply("a.py", ["stop"])
    apply("b.py", None)
    apply("c.py", ["run", "run", "walk"])
    apply("c.py", None)
    apply("d.py", ["jump", "walk"])
    apply("a.py", None)
    apply("a.py", ["stop", "run"])


def test_a_file_indexed_from_disk_keeps_a_digest_and_answers_only_while_its_bytes_are_the_same() -> None:
    disk = {"pkg/a.py": b"def helper():\n    return 1\n"}
    reads: list[str] = []

    def reader(path: str) -> bytes | None:
        reads.append(path)
        return disk.get(path)

    index = SymbolIndex(reader=reader)
    index.update("pkg/a.py", disk["pkg/a.py"].decode(), disk=disk["pkg/a.py"])
    index.update("open.py", "def buffer_only():\n    pass\n")  # an editor buffer: no bytes on disk to read
    symbols = index.file("pkg/a.py")
    assert symbols is not None and symbols.compressed_text is None and symbols.disk_digest is not None
    assert index.text("pkg/a.py") == "def helper():\n    return 1\n" and reads == ["pkg/a.py"]
    assert index.lines("open.py") == ["def buffer_only():", "    pass"] and reads == ["pkg/a.py"]
    # Changed on disk since it was indexed (and judged): nothing of it is answered, not the new bytes.
    disk["pkg/a.py"] = b"def helper():\n    return 'new'\n"
    assert index.text("pkg/a.py") is None and index.lines("pkg/a.py") is None
    # Found changed once, it is not read again for every snippet that would like its lines.
    reads.clear()
    assert index.lines("pkg/a.py") is None and index.lines("pkg/a.py") is None and reads == []
    del disk["pkg/a.py"]
    assert index.text("pkg/a.py") is None
    # Without a reader, the text is kept (compressed) whatever `disk` says.
    kept = SymbolIndex()
    kept.update("b.py", "x = 1\n", disk=b"x = 1\n")
    assert kept.lines("b.py") == ["x = 1"]


def test_packed_definitions_come_back_as_extracted_through_changes() -> None:
    """The index keeps definitions packed and makes them when asked: the same ones, in the same order, as
    extracting them from the text, for the standard library's asyncio and json, re-indexed and removed."""
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    index = SymbolIndex()
    expected: dict[str, list[tuple[str, int, int, int, str]]] = {}
    for path in sorted([*(root / "asyncio").glob("*.py"), *(root / "json").glob("*.py")]):
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        index.update(relative, text)
        extracted = extract_definitions(relative, text.splitlines())
        symbols = index.file(relative)
        assert symbols is not None and symbols.definitions == extracted
        for d in extracted:
            expected.setdefault(d.name, []).append((d.path, d.start_line, d.end_line, d.indent, d.kind))
    index.update("json/decoder.py", "def scanstring():\n    pass\n")
    index.remove("asyncio/tasks.py")
    for name, found in list(expected.items()):
        found = [f for f in found if f[0] not in ("json/decoder.py", "asyncio/tasks.py")]
        if name == "scanstring":
            found.append(("json/decoder.py", 0, 2, 0, "def"))
        expected[name] = found
    for name, found in expected.items():
        got = [(d.path, d.start_line, d.end_line, d.indent, d.kind) for d in index.definitions(name)]
        assert got == found, name
        assert index.definition_count(name) == len(found) and index.defines(name) == bool(found)


def test_definitions_cost_under_120_bytes_each() -> None:
    """300 files of 40 definitions each (names shared between files, as `__init__` and `main` are): what
    the index holds beyond the files' digests, per definition (81 bytes packed; 172 as one object and two
    ints each)."""
    import sys
    import tracemalloc

    texts = {
        f"pkg{f // 50}/mod{f}.py": "".join(
            f"def function_{i}(value):\n    return value\n\n" + ("\n" * 300 if i == 0 else "") for i in range(40)
        )
        for f in range(300)
    }
    index = SymbolIndex(reader=lambda p: texts[p].encode())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for path, text in texts.items():
            index.update(path, text, disk=text.encode())
        traced = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    digests = sum(sys.getsizeof(index.file(p).disk_digest) for p in texts)  # type: ignore[union-attr]
    assert index.definition_count("function_7") == 300
    assert (traced - digests) / (300 * 40) < 120, traced


def test_a_file_keeps_its_first_definitions_up_to_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem.cache import symbols

    monkeypatch.setattr(symbols, "MAX_FILE_DEFINITIONS", 3)
    index = SymbolIndex()
    index.update("many.py", "".join(f"def f{i}():\n    pass\n" for i in range(5)))
    assert [d.name for d in index.file("many.py").definitions] == ["f0", "f1", "f2"]  # type: ignore[union-attr]
    assert not index.defines("f3")
