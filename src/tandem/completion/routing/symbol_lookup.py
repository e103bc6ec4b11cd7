"""The workspace's symbol index as the router sees it: which files define or use a name (`SymbolLookup`).

`file_symbols` reads a file's definitions (by a language-agnostic pattern) and the identifiers it
mentions; `SymbolIndex` is a simple in-memory lookup over (path, text) pairs, for evaluations and tests
(the server's is `completion.routing.workspace_symbols`, kept up to date as files change).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = ["IDENT", "KEYWORDS", "FileSymbols", "SymbolIndex", "SymbolLookup", "file_stem", "file_symbols"]

# Words of the languages' own, never a name that points somewhere.
KEYWORDS = frozenset(
    "and as assert async await break case catch class const continue def default del elif else enum "
    "except export extends false final finally fn for from func function if impl import in interface "
    "is lambda let match mod module new nil none not null or package pass private protected pub public "
    "raise return self static struct super switch this throw true try type typeof use var void while "
    "with yield int str bool float dict list set tuple len print range string object".split()
)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFINITION = re.compile(
    r"\b(?:def|class|function|func|fn|struct|enum|trait|interface|type|typedef|macro|defun|defmacro|"
    r"procedure|sub)\s+(?:\([^)]*\)\s*)?\*?([A-Za-z_]\w*)"
    r"|^(?:export\s+)?(?:(?:const|let|var)\s+)?([A-Za-z_]\w*)\s*(?::[^=\n]+)?=(?!=)",
    re.MULTILINE,
)


class SymbolLookup(Protocol):
    """The workspace symbol index, as far as the router needs it. Paths are workspace-relative."""

    def files_defining(self, name: str) -> set[str]: ...

    def files_using(self, name: str) -> set[str]: ...

    def files_named(self, stem: str) -> set[str]:
        """Files whose name without extension is `stem` ("views" -> {"app/views.py"})."""
        ...

    def file_count(self) -> int: ...


@dataclass(frozen=True)
class FileSymbols:
    """The names one file defines and the identifiers it mentions."""

    defines: frozenset[str]
    uses: frozenset[str]


def file_symbols(text: str) -> FileSymbols:
    """Definitions (by a language-agnostic pattern) and identifiers of `text`."""
    defines = {a or b for a, b in _DEFINITION.findall(text)} - KEYWORDS
    uses = {word for word in IDENT.findall(text) if len(word) >= 3} - KEYWORDS
    return FileSymbols(frozenset(defines), frozenset(uses))


class SymbolIndex:
    """An in-memory `SymbolLookup` over a fixed set of files; lookups scan the files (cached per name)."""

    def __init__(self, files: Mapping[str, FileSymbols]) -> None:
        self._files = dict(files)
        self._stems: dict[str, set[str]] = {}
        for path in self._files:
            self._stems.setdefault(file_stem(path), set()).add(path)
        self._defining: dict[str, set[str]] = {}
        self._using: dict[str, set[str]] = {}

    @classmethod
    def from_texts(cls, files: Iterable[tuple[str, str]], *, max_file_chars: int = 200_000) -> SymbolIndex:
        """Index (path, text) pairs; each text is cut at `max_file_chars` to bound the cost."""
        return cls({path: file_symbols(text[:max_file_chars]) for path, text in files})

    def files_defining(self, name: str) -> set[str]:
        if name not in self._defining:
            self._defining[name] = {p for p, s in self._files.items() if name in s.defines}
        return self._defining[name]

    def files_using(self, name: str) -> set[str]:
        if name not in self._using:
            self._using[name] = {p for p, s in self._files.items() if name in s.uses}
        return self._using[name]

    def files_named(self, stem: str) -> set[str]:
        return self._stems.get(stem, set())

    def file_count(self) -> int:
        return len(self._files)


def file_stem(path: str) -> str:
    """A file's name without its directory or extensions, lowered ("app/Views.py" -> "views")."""
    return path.rsplit("/", 1)[-1].split(".", 1)[0].lower()
