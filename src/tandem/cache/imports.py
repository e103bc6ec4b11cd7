"""What a source file imports, and which workspace file each import names.

`extract_imports(path, text)` reads import statements with regular expressions (no parser, no file
reading): Python `import` / `from ... import`, JavaScript/TypeScript `import ... from './x'`,
`require('./x')` and `export ... from`, C/C++ `#include "x.h"`, Rust `mod x;`.

`ModuleResolver` maps them to paths from a set of workspace paths handed in: Python modules by dotted
name (absolute, from any directory that could be a source root, preferring the candidate closest to the
importing file; and relative, by package level), the other languages by relative path with the usual
extension and index-file candidates. Paths are POSIX strings; whatever form the caller uses (absolute or
workspace-relative) comes back out.
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Collection, Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ImportRef:
    """One import statement's target: a Python module (`level` dots for relative imports, `names` from
    `from m import a, b`) or, for other languages, a path `spec` as written (`./util`, `foo.h`)."""

    module: str = ""
    level: int = 0
    names: tuple[str, ...] = ()
    spec: str = ""
    line: int = 0


_PY_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.MULTILINE)
_PY_IMPORT = re.compile(
    r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*)",
    re.MULTILINE,
)
_JS_SPEC = re.compile(
    r"""(?:^|[^\w$.])(?:import|export)\b[^'"`;]*?\bfrom[ \t]*['"]([^'"]+)['"]"""
    r"""|(?:^|[^\w$.])import[ \t]*\(?[ \t]*['"]([^'"]+)['"]"""
    r"""|\brequire[ \t]*\([ \t]*['"]([^'"]+)['"][ \t]*\)""",
    re.MULTILINE,
)
_C_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)
_RUST_MOD = re.compile(r"^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?mod[ \t]+(\w+)[ \t]*;", re.MULTILINE)

_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".vue", ".svelte")
_C_EXTENSIONS = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".m", ".mm")


def language_of(path: str) -> str:
    """A coarse language family from the file extension: python, js, c, rust, or ''."""
    ext = posixpath.splitext(path)[1].lower()
    if ext in (".py", ".pyi"):
        return "python"
    if ext in _JS_EXTENSIONS:
        return "js"
    if ext in _C_EXTENSIONS:
        return "c"
    if ext == ".rs":
        return "rust"
    return ""


class _LineOf:
    """Line numbers of increasing offsets in one text, counted incrementally (not from 0 each time)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offset = 0
        self._line = 0

    def __call__(self, offset: int) -> int:
        if offset < self._offset:
            self._offset, self._line = 0, 0
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line


# The same modules and names are imported all over a workspace (`os`, `typing`, `Any`): one string each,
# not one per import statement (2 MB of a 5,000-file workspace's index).
_intern = sys.intern


def extract_imports(path: str, text: str) -> tuple[ImportRef, ...]:
    """The imports in `text`, in source order."""
    language = language_of(path)
    refs: list[ImportRef] = []
    line_of = _LineOf(text)
    if language == "python":
        for m in _PY_FROM.finditer(text):
            names_text = m.group(3).strip().strip("()")
            names = tuple(_intern(part.split()[0]) for part in names_text.replace("\n", " ").split(",") if part.strip())
            module = _intern(m.group(2))
            refs.append(ImportRef(module=module, level=len(m.group(1)), names=names, line=line_of(m.start())))
        for m in _PY_IMPORT.finditer(text):
            line = line_of(m.start())
            for part in m.group(1).split(","):
                refs.append(ImportRef(module=_intern(part.split()[0]), line=line))
    elif language == "js":
        for m in _JS_SPEC.finditer(text):
            spec = m.group(1) or m.group(2) or m.group(3)
            refs.append(ImportRef(spec=_intern(spec), line=line_of(m.start())))
    elif language == "c":
        refs.extend(ImportRef(spec=_intern(m.group(1)), line=line_of(m.start())) for m in _C_INCLUDE.finditer(text))
    elif language == "rust":
        refs.extend(ImportRef(spec=_intern(m.group(1)), line=line_of(m.start())) for m in _RUST_MOD.finditer(text))
    refs.sort(key=lambda ref: ref.line)
    return tuple(refs)


def _norm(path: str) -> str:
    """`path` normalized; the string passed in when it already is (the resolver keeps every workspace path,
    which the index holds already: normpath's copy of each was 0.5 MB of a 5,000-file workspace)."""
    if not path:
        return path
    normalized = posixpath.normpath(path)
    return path if normalized == path else normalized


class ModuleResolver:
    """Resolves `ImportRef`s to workspace paths. Update it as files appear and disappear."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._paths: set[str] = set()
        # Bumped whenever the set of paths changes, so callers can cache resolutions.
        self.generation = 0
        # dotted module name (every suffix of the file's directory chain) -> paths
        self._modules: dict[str, _Paths] = {}
        # file name -> paths, for includes that are not relative to the includer
        self._by_name: dict[str, _Paths] = {}
        for path in paths:
            self.add(path)

    def __contains__(self, path: str) -> bool:
        return _norm(path) in self._paths

    def __len__(self) -> int:
        return len(self._paths)

    def add(self, path: str) -> None:
        path = _norm(path)
        if path in self._paths:
            return
        self._paths.add(path)
        self.generation += 1
        _put(self._by_name, posixpath.basename(path), path)
        for name in _module_names(path):
            _put(self._modules, name, path)

    def remove(self, path: str) -> None:
        path = _norm(path)
        if path not in self._paths:
            return
        self._paths.discard(path)
        self.generation += 1
        for table, keys in (
            (self._by_name, [posixpath.basename(path)]),
            (self._modules, _module_names(path)),
        ):
            for key in keys:
                _take(table, key, path)

    def resolve(self, importer: str, ref: ImportRef) -> tuple[str, ...]:
        """The workspace files `ref` (imported by `importer`) names, best first; empty if none."""
        importer = _norm(importer)
        language = language_of(importer)
        if language == "python":
            return self._resolve_python(importer, ref)
        if not ref.spec:
            return ()
        base = posixpath.dirname(importer)
        if language == "js":
            if not ref.spec.startswith("."):
                return ()  # a package from node_modules, not workspace code
            target = _norm(posixpath.join(base, ref.spec))
            candidates = [target, *(target + ext for ext in _JS_EXTENSIONS)]
            candidates += [posixpath.join(target, "index" + ext) for ext in _JS_EXTENSIONS]
            return self._first_existing(candidates)
        if language == "c":
            found = self._first_existing([_norm(posixpath.join(base, ref.spec))])
            if found:
                return found
            tail = "/" + ref.spec.lstrip("./")
            matches = [p for p in _paths(self._by_name, posixpath.basename(ref.spec)) if p.endswith(tail)]
            return tuple(sorted(matches, key=lambda p: (-_shared_depth(p, importer), p)))[:1]
        if language == "rust":
            stem = posixpath.splitext(posixpath.basename(importer))[0]
            # `mod x;` in main.rs/lib.rs/mod.rs looks beside the file; elsewhere in a folder named after it.
            folder = base if stem in ("main", "lib", "mod") else posixpath.join(base, stem)
            return self._first_existing(
                [posixpath.join(folder, ref.spec + ".rs"), posixpath.join(folder, ref.spec, "mod.rs")]
            )
        return ()

    def _first_existing(self, candidates: list[str]) -> tuple[str, ...]:
        for candidate in candidates:
            if candidate in self._paths:
                return (candidate,)
        return ()

    def _resolve_python(self, importer: str, ref: ImportRef) -> tuple[str, ...]:
        if ref.level:
            base = posixpath.dirname(importer)
            for _ in range(ref.level - 1):
                base = posixpath.dirname(base)
            parts = [p for p in ref.module.split(".") if p]
            package = posixpath.join(base, *parts) if parts else base
            found: list[str] = []
            # `from .pkg import mod` may name submodules; fall back to the package itself.
            for name in ref.names:
                found.extend(self._first_existing([package + f"/{name}.py", package + f"/{name}/__init__.py"]))
            found.extend(self._first_existing([package + ".py", package + "/__init__.py"]))
            return tuple(dict.fromkeys(found))
        found = []
        for name in ref.names:
            found.extend(self._closest(f"{ref.module}.{name}", importer))
        found.extend(self._closest(ref.module, importer))
        return tuple(dict.fromkeys(found))

    def _closest(self, module: str, importer: str) -> list[str]:
        paths = _paths(self._modules, module)
        if not paths:
            return []
        best = min(paths, key=lambda p: (-_shared_depth(p, importer), len(p), p))
        return [best]


# The paths under one name: most names (a module's dotted suffixes, a file name) have one path, kept as the
# string itself (a set for each was 5 MB of a 5,000-file workspace); a second path makes it a set.
_Paths = str | set[str]


def _put(table: dict[str, _Paths], key: str, path: str) -> None:
    held = table.get(key)
    if held is None:
        table[key] = path
    elif isinstance(held, str):
        if held != path:
            table[key] = {held, path}
    else:
        held.add(path)


def _take(table: dict[str, _Paths], key: str, path: str) -> None:
    held = table.get(key)
    if held is None:
        return
    if isinstance(held, str):
        if held == path:
            del table[key]
        return
    held.discard(path)
    if len(held) == 1:
        table[key] = next(iter(held))


def _paths(table: dict[str, _Paths], key: str) -> Collection[str]:
    held = table.get(key)
    if held is None:
        return ()
    return (held,) if isinstance(held, str) else held


def _module_names(path: str) -> list[str]:
    """Dotted names a Python file could be imported as: `a/b/c.py` -> c, b.c, a.b.c."""
    if language_of(path) != "python":
        return []
    parts = path.strip("/").split("/")
    stem = posixpath.splitext(parts[-1])[0]
    parts = parts[:-1] if stem == "__init__" else [*parts[:-1], stem]
    if not parts or not all(p.isidentifier() for p in parts[-1:]):
        return []
    names: list[str] = []
    for i in range(len(parts) - 1, -1, -1):
        if not parts[i].isidentifier():
            break
        names.append(".".join(parts[i:]))
    return names


def _shared_depth(a: str, b: str) -> int:
    depth = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if x != y:
            break
        depth += 1
    return depth
