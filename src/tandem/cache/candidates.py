"""Which cross-file snippets a context window could use, scored by relevance.

Sources, with their base scores (a score decides whether a snippet is included, never where it goes):

    import         outline of each workspace module the file imports          0.9, falling with import order
    definition     definitions (in other files) of names used near the cursor closeness-weighted name count,
                                                                               x2 in an imported file,
                                                                               / (1 + log #definitions)
    recent_edit    lines around recent edits elsewhere                        0.8, falling with age
    open_document  the head of each other open document                      0.2

Candidates are lazy (`make()` builds the snippet only when selection reaches it), and the ranking of a
name's definitions is memoised until that name's definitions change in the symbol index.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lru import LRU

from tandem.cache.snippets import Snippet, SnippetMaker, names_near

if TYPE_CHECKING:
    from tandem.cache.symbols import SymbolIndex
    from tandem.cache.token_index import TokenIndex

# Names with more definitions than this are too ambiguous to be worth a snippet outside imported files.
AMBIGUOUS_DEFINITIONS = 24
_RANKING_MEMO = 8192
# A ranked definition: its score factor, path, start line and end line.
_Ranked = tuple[float, str, int, int]


@dataclass(frozen=True, kw_only=True)
class CandidateOptions:
    neighbourhood_lines: int = 24
    max_definitions_per_name: int = 2
    recent_edit_lines: int = 6
    outline_lines: int = 40


@dataclass(slots=True)
class Candidate:
    score: float
    make: Callable[[], Snippet | None]


class CandidateFinder:
    """Lists snippet candidates for a cursor. `may_send(path)` filters out files that must stay local."""

    def __init__(self, *, symbols: SymbolIndex, maker: SnippetMaker, may_send: Callable[[str], bool]) -> None:
        self._symbols = symbols
        self._maker = maker
        self._may_send = may_send
        # (name, importer, limit) -> (name version, imported paths, the ranked definitions: their factors and
        # lines, not `Definition`s, which the index makes when asked and this would keep)
        self._ranking: LRU[tuple[str, str, int], tuple[int, tuple[str, ...], list[_Ranked]]] = LRU(_RANKING_MEMO)

    def forget(self) -> None:
        """Drop memoised rankings (call when `may_send`'s answers change, e.g. new ignore rules)."""
        self._ranking.clear()

    def find(
        self,
        *,
        path: str,
        index: TokenIndex,
        line: int,
        character: int,
        local_window: tuple[int, int],
        comment: str,
        per_snippet_tokens: int,
        open_documents: dict[str, TokenIndex],
        recent_edits: Iterable[tuple[str, int]],
        opts: CandidateOptions,
    ) -> list[Candidate]:
        """Every snippet worth considering for a cursor in `path`, best first. `local_window` is the
        largest range of the current file the window could show (snippets never repeat it);
        `recent_edits` runs newest first."""
        maker = self._maker
        out: list[Candidate] = []
        imported = tuple(p for p in self._symbols.imported_paths(path) if self._may_send(p))
        for rank, target in enumerate(imported):
            out.append(Candidate(0.9 / (1 + 0.1 * rank), _outline(maker, target, comment, opts.outline_lines)))

        names = names_near(
            index.lines, line, character, before=opts.neighbourhood_lines, after=opts.neighbourhood_lines // 4
        )
        for name, weight in names.items():
            for factor, target, start, end in self._ranked(name, path, imported, opts.max_definitions_per_name):
                out.append(Candidate(weight * factor, _definition(maker, target, start, end, comment)))

        seen: set[tuple[str, int]] = set()
        margin = opts.recent_edit_lines
        for age, (edit_path, edit_line) in enumerate(recent_edits):
            if (edit_path, edit_line) in seen or not self._may_send(edit_path):
                continue
            seen.add((edit_path, edit_line))
            if edit_path == path and local_window[0] - margin <= edit_line < local_window[1] + margin:
                continue
            start, end = edit_line - margin, edit_line + margin + 1
            edit_index = index if edit_path == path else open_documents.get(edit_path)
            score = 0.8 / (1 + 0.2 * age)
            if edit_index is not None:
                out.append(
                    Candidate(score, _from_index(maker, "recent_edit", edit_path, edit_index, start, end, comment))
                )
            else:
                out.append(Candidate(score, _from_symbols(maker, edit_path, start, end, comment)))

        for rank, open_path in enumerate(sorted(open_documents)):
            if open_path == path or not self._may_send(open_path):
                continue
            open_index = open_documents[open_path]
            end = open_index.end_within(0, per_snippet_tokens - 16)
            make = _from_index(maker, "open_document", open_path, open_index, 0, end, comment)
            out.append(Candidate(0.2 / (1 + 0.01 * rank), make))

        out.sort(key=lambda c: -c.score)
        return out

    def _ranked(
        self, name: str, path: str, imported: tuple[str, ...], limit: int
    ) -> Sequence[_Ranked]:
        """The best `limit` definitions of `name` for a file `path` that imports `imported`, each with
        its score factor."""
        key = (name, path, limit)
        version = self._symbols.name_version(name)
        memo = self._ranking.get(key)
        if memo is not None and memo[0] == version and memo[1] == imported:
            return memo[2]
        result: list[_Ranked] = []
        if 0 < self._symbols.definition_count(name) <= AMBIGUOUS_DEFINITIONS * 8:
            definitions = self._symbols.definitions(name)
            others = [d for d in definitions if d.path != path and self._may_send(d.path)]
            imported_set = set(imported)
            ambiguous = len(others) > AMBIGUOUS_DEFINITIONS
            ranked = sorted(others, key=lambda d: (d.path not in imported_set, -_shared_dirs(d.path, path), d.path))
            for d in ranked[:limit]:
                in_import = d.path in imported_set
                if ambiguous and not in_import:
                    continue
                factor = (2.0 if in_import else 1.0) / (1 + math.log(len(others)))
                result.append((factor, d.path, d.start_line, d.end_line))
        self._ranking[key] = (version, imported, result)
        return result


def _shared_dirs(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if x != y:
            break
        n += 1
    return n


# Small factories rather than lambdas in loops: each closure binds its own arguments.
def _outline(maker: SnippetMaker, path: str, comment: str, max_lines: int) -> Callable[[], Snippet | None]:
    return lambda: maker.outline(path, comment, max_lines)


def _definition(maker: SnippetMaker, path: str, start: int, end: int, comment: str) -> Callable[[], Snippet | None]:
    return lambda: maker.from_symbols("definition", path, start, end, comment)


def _from_symbols(maker: SnippetMaker, path: str, start: int, end: int, comment: str) -> Callable[[], Snippet | None]:
    return lambda: maker.from_symbols("recent_edit", path, start, end, comment)


def _from_index(
    maker: SnippetMaker, kind: str, path: str, index: TokenIndex, start: int, end: int, comment: str
) -> Callable[[], Snippet | None]:
    if kind == "recent_edit":
        return lambda: maker.from_index("recent_edit", path, index, start, end, comment)
    return lambda: maker.from_index("open_document", path, index, start, end, comment)
