"""A lightweight workspace symbol index: where names are defined, and what each file imports.

Built from (path, text) pairs the caller hands in (`update`), one file at a time, so it can be filled in
the background and refreshed on change; it reads no files. Definitions are found with regular expressions
(`def`, `class`, `function`, `fn`, `func`, `struct`, `interface`, ... and top-level assignments); a
definition's extent runs from its line to the last line indented deeper than it (plus a closing bracket
line), capped at `MAX_DEFINITION_LINES`, so Python and brace languages both work without a parser.

A file indexed as its bytes on disk (`update(..., disk=data)`, as the workspace scan does) keeps only a digest
of them: `text()` reads the file again through the reader it was given and answers only if the bytes are
still the ones indexed (and checked by the privacy rules), None otherwise. Any other text (an open editor
buffer) is kept zlib-compressed. `lines()` keeps a small LRU of the files last asked for. (Keeping every
file compressed was 9.1 MB of a 5,000-file workspace's 33.6 MB of source.)
"""

from __future__ import annotations

import hashlib
import re
import sys
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate

from lru import LRU

from tandem.cache.imports import ImportRef, ModuleResolver, extract_imports

MAX_DEFINITION_LINES = 60
# Files whose lines are kept decompressed: snippets of a file are memoised where they are made
# (`cache.snippets`), so its lines are needed again only for a snippet not made before.
_DECOMPRESSED_FILES = 16
# zlib's default level (for the few texts kept: open buffers).
_ZLIB_LEVEL = 6

# Patterns start with the newline before a line (the text gets one prepended): re then scans for that
# literal instead of trying `^` at every character, about 5x faster.
_DEFINITION = re.compile(
    r"\n(?P<indent>[ \t]*)"
    r"(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|abstract|final|"
    r"async|unsafe|extern|inline|virtual|override|sealed|open|data|declare)[ \t]+)*"
    r"(?P<kind>def|class|function\*?|fn|func|struct|enum|trait|interface|type|module|impl|object|"
    r"protocol|record|union|macro_rules!|const|let|var|val)"
    r"[ \t]+(?:\([^)]*\)[ \t]*)?(?P<name>[A-Za-z_$][\w$]*)"
)
# Python and similar: `NAME = ...` or `NAME: type = ...` at column 0.
_ASSIGNMENT = re.compile(r"\n(?P<name>[A-Za-z_]\w*)[ \t]*(?::[^=\n]+)?=(?!=)")
_CLOSERS = ("}", ")", "]", "end")
_TRIPLE_QUOTE = re.compile(r'"""|\'\'\'')


def _python_string_spans(text: str) -> list[int]:
    """Flat [open, close, open, close, ...] offsets of triple-quoted strings (escapes ignored)."""
    spans: list[int] = []
    opened = ""
    for m in _TRIPLE_QUOTE.finditer(text):
        if not opened:
            opened = m.group()
            spans.append(m.start())
        elif m.group() == opened:
            opened = ""
            spans.append(m.end())
    if opened:
        spans.append(len(text))
    return spans


@dataclass(frozen=True, slots=True)
class Definition:
    """A named definition: lines [start_line, end_line) of `path`."""

    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    indent: int


# A definition's kind as a small code in a file's table, and back.
_KINDS: list[str] = []
_KIND_CODES: dict[str, int] = {}
# A reference to a definition in `SymbolIndex._by_name`: its file's version above, its place in the file below.
_REF_BITS = 16
_REF_MASK = (1 << _REF_BITS) - 1
# Definitions kept of one file (a generated file can define more; the rest are not indexed).
MAX_FILE_DEFINITIONS = _REF_MASK


def _kind_code(kind: str) -> int:
    code = _KIND_CODES.get(kind)
    if code is None:
        code = _KIND_CODES[kind] = len(_KINDS)
        _KINDS.append(kind)
    return code


@dataclass(frozen=True, slots=True)
class FileSymbols:
    """What the index knows about one file. `version` changes whenever its text does. Its text is either
    kept (`compressed_text`) or on disk, as the bytes whose digest is `disk_digest`.

    Its definitions are packed: `names[i]` and four ints of `table` from 4*i (start line, line count,
    indent, kind code); `definitions` and `definition(i)` make `Definition`s of them when asked (one object
    and two ints per definition were 8 MB of a 5,000-file workspace's 57,000)."""

    path: str
    version: int
    line_count: int
    names: tuple[str, ...]
    table: array[int]
    imports: tuple[ImportRef, ...]
    compressed_text: bytes | None
    disk_digest: bytes | None

    def definition(self, i: int) -> Definition:
        start, count, indent, kind = self.table[4 * i : 4 * i + 4]
        return Definition(
            name=self.names[i],
            kind=_KINDS[kind],
            path=self.path,
            start_line=start,
            end_line=start + count,
            indent=indent,
        )

    @property
    def definitions(self) -> tuple[Definition, ...]:
        return tuple(self.definition(i) for i in range(len(self.names)))


def _pack(definitions: tuple[Definition, ...]) -> tuple[tuple[str, ...], array[int]]:
    definitions = definitions[:MAX_FILE_DEFINITIONS]
    table = array("i")
    for d in definitions:
        table.extend((d.start_line, d.end_line - d.start_line, d.indent, _kind_code(d.kind)))
    return tuple(d.name for d in definitions), table


def _disk_digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


# Reads a file's bytes again (by its index path); None if it cannot be read.
Reader = Callable[[str], "bytes | None"]


def _indents(lines: list[str], skip: set[int]) -> list[int]:
    """Each line's indentation width (tabs as 4), or -1 for blank lines and lines in `skip`."""
    out: list[int] = []
    for i, line in enumerate(lines):
        body = line.lstrip(" \t")
        if not body or i in skip:
            out.append(-1)
            continue
        lead = line[: len(line) - len(body)]
        out.append(len(lead.expandtabs(4)) if "\t" in lead else len(lead))
    return out


def _block_ends(indents: list[int]) -> list[int]:
    """For each line, the first later line indented no deeper (ignoring -1 lines); len(indents) if none."""
    n = len(indents)
    ends = [n] * n
    open_lines: list[int] = []
    for j, width in enumerate(indents):
        if width < 0:
            continue
        while open_lines and indents[open_lines[-1]] >= width:
            ends[open_lines.pop()] = j
        open_lines.append(j)
    return ends


# A workspace's definitions share a few kinds and many names (`__init__`, `main`, `setUp`): one string each.
_intern = sys.intern


def extract_definitions(path: str, lines: list[str]) -> tuple[Definition, ...]:
    """The definitions in `lines` (lines without terminators), in source order."""
    text = "\n" + "\n".join(lines)
    is_python = path.endswith((".py", ".pyi"))
    # Docstrings hold example code (`x = f()` at column 0); it defines nothing.
    strings = _python_string_spans(text) if is_python else []
    # newline_at[i]: offset in `text` of the newline that opens line i.
    newline_at = [0, *accumulate(len(line) + 1 for line in lines)]

    def line_of(offset: int) -> int:
        return bisect_right(newline_at, offset - 1) - 1

    found: dict[int, tuple[str, str, int]] = {}
    for m in _DEFINITION.finditer(text):
        if bisect_right(strings, m.start() + 1) % 2:
            continue
        kind = _intern(m.group("kind").rstrip("*!"))
        # `const`/`let`/`var`/`val`/`type` only count at the top level; inside bodies they are locals.
        if kind in ("const", "let", "var", "val", "type") and m.group("indent"):
            continue
        found.setdefault(line_of(m.start() + 1), (_intern(m.group("name")), kind, len(m.group("indent").expandtabs(4))))
    if is_python:
        for m in _ASSIGNMENT.finditer(text):
            if bisect_right(strings, m.start() + 1) % 2:
                continue
            found.setdefault(line_of(m.start() + 1), (_intern(m.group("name")), "variable", 0))
    if not found:
        return ()
    # Lines that continue a triple-quoted string never end a definition, whatever their indentation.
    in_string: set[int] = set()
    for i in range(0, len(strings) - 1, 2):
        in_string.update(range(line_of(strings[i]) + 1, line_of(strings[i + 1]) + 1))
    indents = _indents(lines, in_string)
    ends = _block_ends(indents)
    definitions: list[Definition] = []
    n = len(lines)
    for start in sorted(found):
        name, kind, indent = found[start]
        end = ends[start] if indents[start] >= 0 else start + 1
        if end > start + MAX_DEFINITION_LINES:
            end = start + MAX_DEFINITION_LINES
        elif end < n and indents[end] == indent and lines[end].lstrip().startswith(_CLOSERS):
            end += 1
        # Trailing blank lines are not part of the definition.
        while end > start + 1 and indents[end - 1] < 0 and not lines[end - 1].strip():
            end -= 1
        definitions.append(Definition(name=name, kind=kind, path=path, start_line=start, end_line=end, indent=indent))
    return tuple(definitions)


class SymbolIndex:
    """Definitions by name across the workspace, each file's imports, and its text (kept compressed, or
    read again by `reader` and checked against the digest of what was indexed)."""

    def __init__(self, reader: Reader | None = None) -> None:
        self._reader = reader
        self._files: dict[str, FileSymbols] = {}
        # The same files by version (what a definition's reference names).
        self._by_version: dict[int, FileSymbols] = {}
        # name -> references to its definitions (`_REF_BITS`), in indexing order: most names have one, kept
        # as the int itself (a list for each was 2 MB of a 5,000-file workspace's index); a second makes a list.
        self._by_name: dict[str, int | list[int]] = {}
        self._versions = 0
        self.resolver = ModuleResolver()
        # Bumped per name whenever the set of its definitions changes (for callers' caches). A name's first
        # definition is version 1 without an entry here (`name_version`): most names are defined once and never
        # change, and an entry for each was 1 MB of a 5,000-file workspace's index (5,000 entries, not 33,000).
        self._name_versions: dict[str, int] = {}
        self._imports_memo: dict[str, tuple[int, int, tuple[str, ...]]] = {}
        # path -> (version, its lines, or None when its file no longer holds the bytes indexed)
        self._decompressed: LRU[str, tuple[int, list[str] | None]] = LRU(_DECOMPRESSED_FILES)

    def __len__(self) -> int:
        return len(self._files)

    def __contains__(self, path: str) -> bool:
        return path in self._files

    def paths(self) -> Iterator[str]:
        return iter(self._files)

    def update(self, path: str, text: str, *, disk: bytes | None = None) -> FileSymbols:
        """Index (or re-index) `path` with content `text`. Cost O(len(text)). `disk`: the bytes `text` was
        decoded from, as the index's reader reads them; then only their digest is kept, not the text."""
        lines = text.splitlines()
        self._drop_definitions(path)
        self._versions += 1
        digest = _disk_digest(disk) if disk is not None and self._reader is not None else None
        names, table = _pack(extract_definitions(path, lines))
        symbols = FileSymbols(
            path=path,
            version=self._versions,
            line_count=len(lines),
            names=names,
            table=table,
            imports=extract_imports(path, text),
            compressed_text=None if digest else zlib.compress(text.encode("utf-8", "surrogatepass"), _ZLIB_LEVEL),
            disk_digest=digest,
        )
        self._files[path] = symbols
        self._by_version[symbols.version] = symbols
        by_name = self._by_name
        base = symbols.version << _REF_BITS
        for i, name in enumerate(names):
            held = by_name.get(name)
            if held is None:
                by_name[name] = base | i
                if name not in self._name_versions:
                    continue  # from 0 (not defined) to 1 (defined), with no entry (`name_version`)
            elif isinstance(held, int):
                by_name[name] = [held, base | i]
            else:
                held.append(base | i)
            self._bump(name)
        self.resolver.add(path)
        # Not kept decompressed: the workspace scan indexes thousands of files, an open document is held by
        # its buffer, and most files are never asked for their lines.
        if path in self._decompressed:
            del self._decompressed[path]
        return symbols

    def remove(self, path: str) -> None:
        self._drop_definitions(path)
        self._files.pop(path, None)
        self._imports_memo.pop(path, None)
        self.resolver.remove(path)
        if path in self._decompressed:
            del self._decompressed[path]

    def file(self, path: str) -> FileSymbols | None:
        return self._files.get(path)

    def name_version(self, name: str) -> int:
        """Changes whenever the definitions of `name` change."""
        version = self._name_versions.get(name)
        if version is not None:
            return version
        return 1 if name in self._by_name else 0

    def defines(self, name: str) -> bool:
        """Whether `name` has a definition in the workspace."""
        return name in self._by_name

    def definition_count(self, name: str) -> int:
        held = self._by_name.get(name)
        return 0 if held is None else 1 if isinstance(held, int) else len(held)

    def definitions(self, name: str) -> list[Definition]:
        """Every definition of `name` in the workspace, in indexing order (made when asked: a name defined
        in thousands of files costs that many objects; `definition_count` first)."""
        held = self._by_name.get(name)
        if held is None:
            return []
        files = self._by_version
        if isinstance(held, int):
            return [files[held >> _REF_BITS].definition(held & _REF_MASK)]
        return [files[ref >> _REF_BITS].definition(ref & _REF_MASK) for ref in held]

    def text(self, path: str) -> str | None:
        """The indexed text of `path`; None if it is not indexed, or if it was indexed from disk and the file
        no longer holds those bytes (the index is then stale for it: nothing of it is answered). Safe to call
        from a worker thread."""
        symbols = self._files.get(path)
        if symbols is None:
            return None
        if symbols.compressed_text is not None:
            return zlib.decompress(symbols.compressed_text).decode("utf-8", "surrogatepass")
        data = self._reader(path) if self._reader is not None else None
        if data is None or _disk_digest(data) != symbols.disk_digest:
            return None
        return data.decode("utf-8")

    def lines(self, path: str) -> list[str] | None:
        """The indexed text of `path` as lines (without terminators), or None (as `text`; a file found changed
        is remembered as such, not read again on every keystroke that would like a snippet of it)."""
        symbols = self._files.get(path)
        if symbols is None:
            return None
        cached = self._decompressed.get(path)
        if cached is not None and cached[0] == symbols.version:
            return cached[1]
        text = self.text(path)
        lines = text.splitlines() if text is not None else None
        self._decompressed[path] = (symbols.version, lines)
        return lines

    def imported_paths(self, path: str) -> tuple[str, ...]:
        """Workspace files that `path` imports (resolved now, against the files indexed now)."""
        symbols = self._files.get(path)
        if symbols is None:
            return ()
        memo = self._imports_memo.get(path)
        if memo is not None and memo[0] == symbols.version and memo[1] == self.resolver.generation:
            return memo[2]
        found: dict[str, None] = {}
        for ref in symbols.imports:
            for target in self.resolver.resolve(path, ref):
                if target != path:
                    found[target] = None
        result = tuple(found)
        self._imports_memo[path] = (symbols.version, self.resolver.generation, result)
        return result

    def _bump(self, name: str) -> None:
        self._name_versions[name] = self.name_version(name) + 1

    def _drop_definitions(self, path: str) -> None:
        old = self._files.get(path)
        if old is None:
            return
        version = old.version
        del self._by_version[version]
        for name in old.names:
            self._bump(name)
            held = self._by_name.get(name)
            if held is None:
                continue
            if isinstance(held, int):
                if held >> _REF_BITS == version:
                    del self._by_name[name]
                continue
            held[:] = [ref for ref in held if ref >> _REF_BITS != version]
            if len(held) == 1:
                self._by_name[name] = held[0]
            elif not held:
                del self._by_name[name]
