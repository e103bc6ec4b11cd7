"""Cross-file snippets for context windows: what they are, how they are made, and what they cost.

A `Snippet` is a run of lines from another file (or a far part of the current one) with its token count
and a content digest. `SnippetMaker` builds them from the symbol index (files indexed in the background)
or from a `TokenIndex` (open documents, whose counts are already known), and memoises each one by
(path, version, range), so a context build after a keystroke counts no tokens for snippets it used before.
"""

from __future__ import annotations

import hashlib
import keyword
import posixpath
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from lru import LRU

if TYPE_CHECKING:
    from tandem.cache.symbols import SymbolIndex
    from tandem.cache.token_index import TokenIndex
    from tandem.cache.tokens import TokenCounter

SnippetKind = Literal["import", "definition", "open_document", "recent_edit"]
# Emission order: the most stable material first, so the provider's prefix cache keeps hitting.
KIND_ORDER: dict[str, int] = {"import": 0, "definition": 1, "open_document": 2, "recent_edit": 3}
_MEMO_SNIPPETS = 4096
_OUTLINE_MAX_INDENT = 4


@dataclass(frozen=True, kw_only=True, slots=True)
class Snippet:
    """Lines [start_line, end_line) of `path`, shown after `header`. `tokens` counts header and text."""

    kind: SnippetKind
    path: str
    start_line: int
    end_line: int
    header: str
    text: str
    tokens: int
    digest: bytes

    def render(self) -> str:
        return f"{self.header}{self.text}\n"


_COMMENT_BY_EXT: dict[str, str] = {
    **dict.fromkeys(
        (
            ".py",
            ".pyi",
            ".sh",
            ".bash",
            ".zsh",
            ".rb",
            ".pl",
            ".r",
            ".toml",
            ".yaml",
            ".yml",
            ".nix",
            ".ex",
            ".exs",
            ".jl",
            ".cmake",
            ".ps1",
            ".tf",
            ".mk",
        ),
        "#",
    ),
    **dict.fromkeys((".lua", ".sql", ".hs", ".elm", ".ada", ".adb"), "--"),
    **dict.fromkeys((".el", ".lisp", ".clj", ".cljs", ".scm", ".rkt"), ";;"),
    **dict.fromkeys((".erl", ".hrl", ".tex", ".m4"), "%"),
    **dict.fromkeys((".vim",), '"'),
}


def comment_marker(path: str) -> str:
    """The line-comment marker for the file type of `path` ('//' when unknown)."""
    return _COMMENT_BY_EXT.get(posixpath.splitext(path)[1].lower(), "//")


def join_lines(lines: Sequence[str]) -> str:
    """Lines as text, each ending in a newline (lines may come with or without their terminators)."""
    if not lines:
        return ""
    if lines[0].endswith("\n"):
        text = "".join(lines)
        return text if text.endswith("\n") else text + "\n"
    return "\n".join(lines) + "\n"


_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_STOP_WORDS = (
    frozenset(keyword.kwlist)
    | frozenset(keyword.softkwlist)
    | frozenset(
        "self cls this super args kwargs new return function const let var typeof instanceof void null "
        "undefined true false int str bool float list dict set tuple len print range isinstance object "
        "Any Optional None True False string number boolean any fn mut pub impl use mod crate struct enum "
        "include define ifdef endif else elif static public private protected final package func go defer "
        "chan err nil".split()
    )
)


_line_names: LRU[str, tuple[str, ...]] = LRU(8192)
_intern = sys.intern


def _names_in(text: str) -> tuple[str, ...]:
    # Lines repeat across keystrokes (only the cursor line changes), so their names are memoised; a name
    # recurs on many lines, so the memo holds one string for it, not one per line.
    names = _line_names.get(text)
    if names is None:
        names = tuple(_intern(n) for n in _IDENTIFIER.findall(text) if len(n) > 1 and n not in _STOP_WORDS)
        _line_names[text] = names
    return names


def names_near(lines: Sequence[str], line: int, character: int, *, before: int, after: int) -> dict[str, float]:
    """Identifiers around the cursor, weighted by closeness (1 on the cursor line, falling with distance)."""
    weights: dict[str, float] = {}
    first = max(0, line - before)
    last = min(len(lines), line + after + 1)
    for i in range(first, last):
        text = lines[i]
        if i == line:
            found: tuple[str, ...] = _names_in(text[:character]) + _names_in(text[character:])
        else:
            found = _names_in(text)
        weight = 1.0 / (1 + abs(line - i))
        for name in found:
            weights[name] = weights.get(name, 0.0) + weight
    return weights


def _digest(*parts: str) -> bytes:
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.digest()


class SnippetMaker:
    """Makes and memoises snippets. Texts come from the symbol index or an open document's TokenIndex."""

    def __init__(self, *, counter: TokenCounter, symbols: SymbolIndex) -> None:
        self._counter = counter
        self._symbols = symbols
        self._memo: LRU[tuple[object, ...], Snippet] = LRU(_MEMO_SNIPPETS)

    def _header(self, kind: SnippetKind, path: str, start: int, end: int, comment: str) -> str:
        if kind == "import":
            return f"{comment} {path} (outline)\n"
        if kind == "open_document" and start == 0:
            return f"{comment} {path}\n"
        return f"{comment} {path}:{start + 1}-{end}\n"

    def from_index(
        self, kind: SnippetKind, path: str, index: TokenIndex, start: int, end: int, comment: str
    ) -> Snippet | None:
        """Lines [start, end) of an open document; its token index supplies the count (no encoding)."""
        start = max(0, start)
        end = min(end, index.line_count)
        if end <= start:
            return None
        key = (kind, path, index.uid, index.generation, start, end, comment)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        header = self._header(kind, path, start, end, comment)
        text = join_lines(index.lines[start:end])[:-1]
        snippet = Snippet(
            kind=kind,
            path=path,
            start_line=start,
            end_line=end,
            header=header,
            text=text,
            tokens=index.tokens_in(start, end) + self._counter.count(header),
            digest=_digest(header, text),
        )
        self._memo[key] = snippet
        return snippet

    def from_symbols(self, kind: SnippetKind, path: str, start: int, end: int, comment: str) -> Snippet | None:
        """Lines [start, end) of an indexed file (counted once, then memoised)."""
        symbols = self._symbols.file(path)
        if symbols is None:
            return None
        key = (kind, path, symbols.version, start, end, comment)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        lines = self._symbols.lines(path) or []
        start = max(0, start)
        end = min(end, len(lines))
        if end <= start:
            return None
        header = self._header(kind, path, start, end, comment)
        text = "\n".join(lines[start:end])
        snippet = Snippet(
            kind=kind,
            path=path,
            start_line=start,
            end_line=end,
            header=header,
            text=text,
            tokens=self._counter.count(header + text + "\n"),
            digest=_digest(header, text),
        )
        self._memo[key] = snippet
        return snippet

    def outline(self, path: str, comment: str, max_lines: int) -> Snippet | None:
        """The header lines of `path`'s top-level and member definitions: a module at a glance."""
        symbols = self._symbols.file(path)
        if symbols is None:
            return None
        key = ("import", path, symbols.version, comment, max_lines)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        lines = self._symbols.lines(path) or []
        picked = [
            lines[d.start_line].rstrip()
            for d in symbols.definitions
            if d.indent <= _OUTLINE_MAX_INDENT and d.start_line < len(lines)
        ][:max_lines]
        if not picked:
            return None
        header = self._header("import", path, 0, symbols.line_count, comment)
        text = "\n".join(picked)
        snippet = Snippet(
            kind="import",
            path=path,
            start_line=0,
            end_line=symbols.line_count,
            header=header,
            text=text,
            tokens=self._counter.count(header + text + "\n"),
            digest=_digest(header, text),
        )
        self._memo[key] = snippet
        return snippet
