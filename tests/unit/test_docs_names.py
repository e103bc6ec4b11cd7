"""The words that name the code stay true to it.

1. Every package's `__init__.py` docstring under src/tandem names each of its modules and subpackages
   (`__main__` aside when unnamed: `python -m` says its role), so a reader who opens a package learns every
   room in it. A module counts as named when its name is written as code: in backquotes, alone or as the
   first part of a dotted or path name (`files`, `files.py`, `files.read_file`, `backends/`), after the
   package's own dotted name (`tandem.lsp` in `tandem`'s), or unquoted as a file or folder name
   (`files.py`, `backends/`). The same word in prose ("reads files") does not count.

2. Dotted names in README.md, every other *.md the repository tracks, and the docstrings and comments under
   src/tandem resolve to code that exists. A dotted name is a run of identifiers joined by dots (with or
   without backquotes, a trailing `()` allowed), and it is read as a reference to tandem's code when
   - it starts with `tandem.` and a top-level part of the package (`tandem.completion.machine.git`);
   - or its first part is the name of one of tandem's packages (`completion.providers.tiers`,
     `machine.files.read_file`, `edit.flow.EditFlow.run`);
   - or its first part is the name of one of tandem's modules and its second a class name in CapWords
     (`tiers.Tier.reading`, `engine.Engine.complete`);
   - or its first part is a class defined in tandem and its second a lowercase name (`Tier.reading`).
   Left out, as names of something else: file names (`config.toml`, `trace.jsonl`: the last part is a file
   extension) and VS Code's setting names (`tandem.completion.fallbackToAccurate`, read from the
   extension's package.json). A variable named like a package is therefore not written with a dot in
   prose (`edit.text` reads as the package `edit`; write "the edit's text").
   A reference resolves when, from some package of tandem (or from the top: the name may be written
   relative to any of them, as a README table row is relative to its folder), the longest prefix that
   imports as a module is followed by attributes that exist on it: module attributes, class attributes,
   dataclass fields and annotations, or attributes a class's methods assign on `self`. A class-first name
   resolves when one of the classes of that name has the attribute.

Both checks read the text as it is now and name the file, the place and the name that is wrong.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import io
import json
import pathlib
import re
import subprocess
import tokenize
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tandem"

# File extensions: `config.toml` names a file, not the module `config`.
FILE_EXTENSIONS = frozenset(
    "py pyi toml json jsonl md rst txt ts js mjs cjs lua el vim sh yml yaml ini cfg html css sqlite3 gguf lock"
    " properties gradle kts rs go nix mk log csv svg png".split()
)
DOTTED = re.compile(r"(?<![\w./-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?(?![\w/-])")
BACKQUOTED = re.compile(r"`([^`\n]+)`")
FILE_OR_FOLDER = re.compile(r"(?<![\w./-])([A-Za-z_]\w*)(?:\.py\b|/)")


# -- the layout, read from the source tree ------------------------------------------------------------------


def _packages() -> list[pathlib.Path]:
    return sorted(init.parent for init in SRC.rglob("__init__.py"))


def _dotted_name(path: pathlib.Path) -> str:
    """`tandem.completion.machine` for src/tandem/completion/machine (or its __init__.py), and so on."""
    relative = path.relative_to(SRC.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def _children(package: pathlib.Path) -> list[str]:
    """The modules and subpackages directly in `package`."""
    modules = [p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")]
    subpackages = [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(modules + subpackages)


@functools.cache
def _layout() -> tuple[frozenset[str], frozenset[str], frozenset[str], tuple[str, ...]]:
    """(top-level parts of tandem, package names, module names, every package's dotted name)."""
    top = frozenset(_children(SRC))
    packages = frozenset(p.name for p in _packages() if p != SRC)
    modules = frozenset(p.stem for p in SRC.rglob("*.py") if p.stem not in ("__init__", "__main__"))
    return top, packages, modules, tuple(_dotted_name(p) for p in _packages())


@functools.cache
def _classes() -> dict[str, tuple[str, ...]]:
    """{class name: the dotted names of the modules that define a top-level class of that name}."""
    found: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(_dotted_name(path))
    return {name: tuple(where) for name, where in found.items()}


@functools.cache
def _vscode_settings() -> frozenset[str]:
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    sections = package["contributes"]["configuration"]
    sections = sections if isinstance(sections, list) else [sections]
    return frozenset(name for section in sections for name in section.get("properties", {}))


# -- the texts --------------------------------------------------------------------------------------------


def _markdown() -> Iterator[tuple[str, str]]:
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in listed.stdout.split():
        yield name, (ROOT / name).read_text(encoding="utf-8")


def _source_texts() -> Iterator[tuple[str, str]]:
    """(file:line, text) of every docstring and comment under src/tandem."""
    for path in sorted(SRC.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        relative = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    yield f"{relative}:{getattr(node, 'lineno', 1)}", doc
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                yield f"{relative}:{token.start[0]}", token.string


# -- 1. package docstrings name their modules --------------------------------------------------------------


def _named(doc: str, package: str) -> set[str]:
    """The names `doc` writes as code (see the module docstring), relative to `package`."""
    named = set(FILE_OR_FOLDER.findall(doc))
    for span in BACKQUOTED.findall(doc):
        span = span.strip()
        if span.startswith(package + "."):
            span = span[len(package) + 1 :]
        named.add(re.split(r"[./(\s]", span, maxsplit=1)[0])
    return named


def _unnamed_modules() -> list[str]:
    missing = []
    for package in _packages():
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
        named = _named(doc, _dotted_name(package))
        unnamed = [child for child in _children(package) if child not in named]
        if unnamed:
            where = (package / "__init__.py").relative_to(ROOT).as_posix()
            missing.append(f"{where}: {', '.join(unnamed)}")
    return missing


def test_every_package_docstring_names_each_of_its_modules() -> None:
    missing = _unnamed_modules()
    assert missing == [], "a package's docstring does not name these modules:\n" + "\n".join(missing)


def test_the_package_check_sees_a_missing_module() -> None:
    assert _named("- `files`: reads; `tandem.x.scan` lists; git.py runs; `backends/` speak", "tandem.x") == {
        "files", "scan", "git", "backends",
    }  # fmt: skip
    assert "files" not in _named("it reads files and lists folders", "tandem.x")


# -- 2. dotted names resolve -------------------------------------------------------------------------------


def _references(text: str) -> Iterator[str]:
    """The dotted names in `text` that are read as references to tandem's code (see the module docstring)."""
    top, packages, modules, _ = _layout()
    for match in DOTTED.finditer(text):
        name = match.group(1)
        parts = name.split(".")
        if parts[-1] in FILE_EXTENSIONS or name in _vscode_settings():
            continue
        if parts[0] == "tandem":
            if parts[1] in top:
                yield name
        elif parts[0] in packages or (parts[0] in modules and parts[1][:1].isupper()):
            yield name
        elif parts[0] in _classes() and parts[1][:1].islower():
            yield name


def _self_attributes(cls: type) -> set[str]:
    """The attributes `cls`'s methods assign on `self` (an instance's, which the class does not hold)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] != "tandem":
            continue
        try:
            tree = ast.parse(inspect.getsource(klass).lstrip())  # a nested class is indented
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
    return names


def _has(owner: object, attribute: str) -> tuple[bool, object]:
    if hasattr(owner, attribute):
        return True, getattr(owner, attribute)
    if isinstance(owner, type):
        annotated = any(attribute in getattr(k, "__annotations__", {}) for k in owner.__mro__)
        if annotated or attribute in _self_attributes(owner):
            return True, None
    return False, None


def _resolves_from(full: str) -> bool:
    parts = full.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            owner: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if owner is None:
                return True  # an instance attribute or a field: its own attributes are not checked
            found, owner = _has(owner, attribute)
            if not found:
                return False
        return True
    return False


@functools.cache
def resolves(name: str) -> bool:
    first = name.split(".")[0]
    if first in _classes() and first != "tandem":
        return any(_resolves_from(f"{module}.{name}") for module in _classes()[first])
    bases = ("", *(f"{package}." for package in _layout()[3]))
    return any(_resolves_from(base + name) for base in bases)


def _dangling() -> list[str]:
    texts = [*_markdown(), *_source_texts()]
    return [f"{where}: {name}" for where, text in texts for name in _references(text) if not resolves(name)]


def test_dotted_names_in_docs_docstrings_and_comments_resolve() -> None:
    dangling = _dangling()
    assert dangling == [], "these names point at code that does not exist (moved or renamed?):\n" + "\n".join(dangling)


def test_the_reference_check_reads_what_it_should() -> None:
    text = (
        "`tandem.completion.machine.git` and completion.transport, `tiers.Tier.run`, Tier.read, machine.files,"
        " `config.toml`, `tandem.edit`, `tandem.completion.fallbackToAccurate`, trace.path, e.g. this"
    )
    assert list(_references(text)) == [
        "tandem.completion.machine.git", "completion.transport", "tiers.Tier.run", "Tier.read", "machine.files",
    ]  # fmt: skip
    assert resolves("tandem.completion.machine.git.command") and resolves("machine.files.read_file")
    assert resolves("tiers.Tier.reading") and resolves("Tier.reading") and resolves("service.Edits.run")
    assert not resolves("completion.transport") and not resolves("tiers.Tier.run") and not resolves("Tier.run")
    assert not resolves("Tier.read")
    assert not resolves("tandem.completion.machine.git.no_such_thing")
