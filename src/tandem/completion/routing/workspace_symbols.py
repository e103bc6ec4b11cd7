"""The router's `SymbolLookup` over the server's one workspace index (`cache.symbols.SymbolIndex`).

The router asks four things: which files define a name, which files use it, which files have a given
stem, how many files there are. The workspace index answers the first and third directly. "Uses" needs
every file's identifiers, which the index does not keep (a 5,000-file workspace would cost tens of MB
for a question asked once per edit), so `IndexLookup.prepare(names)` finds the users of just the names
an edit can ask about in one pass over the indexed texts, off the event loop, before routing.

Open documents overlay the index: their current text wins over what was indexed from disk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from tandem.cache.symbols import SymbolIndex, extract_definitions
from tandem.completion.routing.symbol_lookup import file_symbols

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD = re.compile(r"\w+")
_FEW = 64  # names up to which substring tests come before reading a file's words


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0].lower()


def candidate_names(selection: str, instruction: str, index: SymbolIndex | None = None) -> set[str]:
    """The names `route_features` may ask `files_using` about: what the selection defines, and the
    instruction's words that look like code (snake_case, camelCase, or defined somewhere in `index`)."""
    words = set(_IDENT.findall(instruction))
    code = {
        w
        for w in words
        if "_" in w.strip("_") or any(c.isupper() for c in w[1:]) or (index is not None and index.defines(w))
    }
    return code | set(file_symbols(selection).defines)


class IndexLookup:
    """A `completion.routing.symbol_lookup.SymbolLookup` over `index`, with `overlay` ({path: current text}) on top.

    `files_using` answers only for names given to `prepare` (others: no files), so call `prepare` with
    `candidate_names(...)` first; it is O(workspace text) and belongs in a worker thread.
    """

    def __init__(self, index: SymbolIndex | None, overlay: Mapping[str, str] | None = None) -> None:
        self._index = index
        self._overlay = dict(overlay or {})
        self._overlay_defs = {
            path: {d.name for d in extract_definitions(path, text.splitlines())} for path, text in self._overlay.items()
        }
        paths = set(index.paths()) if index is not None else set()
        self._paths = paths | set(self._overlay)
        self._stems: dict[str, set[str]] = {}
        for path in self._paths:
            self._stems.setdefault(_stem(path), set()).add(path)
        self._using: dict[str, set[str]] = {}

    def prepare(self, names: Iterable[str]) -> None:
        """Find the files using each of `names` (word matches), in one pass over the workspace's text."""
        wanted = sorted({n for n in names if len(n) >= 3} - set(self._using))
        if not wanted:
            return
        for name in wanted:
            self._using[name] = set()
        names = set(wanted)
        for path in self._paths:
            text = self._text(path)
            # Substring tests first (C speed): most files mention none of a few names. Past a few, the
            # file's words are read once instead (a selection of a whole module defines thousands).
            if text is None or (len(wanted) <= _FEW and not any(name in text for name in wanted)):
                continue
            # A name is used where it is a whole word: a maximal run of word characters (as `\b...\b`).
            for name in names.intersection(_WORD.findall(text)):
                self._using[name].add(path)

    def _text(self, path: str) -> str | None:
        if path in self._overlay:
            return self._overlay[path]
        if self._index is None:
            return None
        return self._index.text(path)

    def files_defining(self, name: str) -> set[str]:
        found = {p for p, names in self._overlay_defs.items() if name in names}
        if self._index is not None:
            found |= {d.path for d in self._index.definitions(name) if d.path not in self._overlay}
        return found

    def files_using(self, name: str) -> set[str]:
        return self._using.get(name, set())

    def files_named(self, stem: str) -> set[str]:
        return self._stems.get(stem, set())

    def file_count(self) -> int:
        return len(self._paths)
