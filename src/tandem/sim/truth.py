"""Truth mode: the text that really follows a prompt's prefix in a set of source files.

All files are held in one string, each followed by a NUL separator, and indexed by whole line: a hash of
each line's exact text (indentation included) maps to the offsets where that line starts. A lookup
picks a rare complete line near the end of the prefix as its anchor, checks every place the anchor
occurs against the rest of the prefix, then prefers the place whose preceding text agrees with the
prefix for longest (growing the tail until one place is left); among places that agree equally, it
prefers the one followed by the start of the suffix. The answer runs from there to where the suffix
resumes, or to the end of the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tandem.sim.settings import SimConfigError

_SEPARATOR = "\x00"
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".tox"})
_MAX_FILE_BYTES = 2_000_000
# Lines looked at, from the end of the prefix back, to find a rare anchor.
_ANCHOR_LINES = 16
# An anchor this rare is good enough; no need to look further back.
_RARE_ENOUGH = 4
# Places checked per lookup, at most (a prefix made only of very common lines could have thousands).
_MAX_CANDIDATES = 4096
# Prefix agreement is measured up to this many characters; beyond it, candidates count as equal.
_MAX_TAIL_CHARS = 8192
# The suffix is recognised by its first characters; a shorter suffix only counts at the file's end.
_SUFFIX_HEAD_CHARS = 64


@dataclass(frozen=True, kw_only=True)
class TruthMatch:
    """Where a prefix ends in the truth: `path`, and the text from there (bounded by the suffix)."""

    path: str
    offset: int  # characters into the file
    # The true text after the prefix, up to where the suffix resumes (if found) or the file's end,
    # cut at `max_chars`.
    text: str
    # True if `text` ends where the suffix resumes or where the file ends (not cut at `max_chars`).
    complete: bool


class TruthIndex:
    """Source files indexed for prefix lookup. Build with `TruthIndex.load(paths)`."""

    def __init__(self, files: list[tuple[str, str]]) -> None:
        parts: list[str] = []
        starts: list[int] = []
        lines: dict[int, list[int]] = {}
        offset = 0
        for _path, text in files:
            starts.append(offset)
            line_start = offset
            for line in text.split("\n"):
                lines.setdefault(hash(line), []).append(line_start)
                line_start += len(line) + 1
            parts.append(text)
            parts.append(_SEPARATOR)
            offset += len(text) + 1
        self._corpus = "".join(parts)
        self._paths = [path for path, _ in files]
        self._starts = starts
        self._lines = lines

    @classmethod
    def load(cls, paths: tuple[str, ...] | list[str]) -> TruthIndex:
        """Read every text file under `paths` (files, or directories walked recursively).

        Raises SimConfigError for a path that does not exist or cannot be read, or if no text file
        is found at all.
        """
        files: list[tuple[str, str]] = []
        for raw in paths:
            path = Path(raw)
            if path.is_dir():
                files.extend(_read_tree(path))
            elif path.is_file():
                text = _read_text(path)
                if text is None:
                    raise SimConfigError(f"truth file {raw} is not a readable UTF-8 text file")
                files.append((str(path), text))
            else:
                raise SimConfigError(f"truth path {raw} does not exist")
        if not files:
            raise SimConfigError(f"no readable text files under the truth paths: {', '.join(paths)}")
        return cls(files)

    @property
    def file_count(self) -> int:
        return len(self._paths)

    @property
    def char_count(self) -> int:
        return len(self._corpus) - len(self._paths)

    def lookup(self, prefix: str, suffix: str, *, max_chars: int) -> TruthMatch | None:
        """The true continuation of `prefix` (see the module docstring); None if the prefix's end
        occurs nowhere in the truth."""
        candidates = self._candidates(prefix)
        if not candidates:
            return None
        best: tuple[int, bool, int] | None = None
        best_end = 0
        for cursor in candidates:
            agreed = self._tail_agreement(prefix, cursor)
            end = self._suffix_end(cursor, suffix, max_chars)
            key = (agreed, end is not None, -cursor)
            if best is None or key > best:
                best, best_end = key, end if end is not None else -1
        assert best is not None
        cursor = -best[2]
        file_end = self._corpus.find(_SEPARATOR, cursor)
        if best_end >= 0:
            end, complete = best_end, True
        elif file_end - cursor <= max_chars:
            end, complete = file_end, True
        else:
            end, complete = cursor + max_chars, False
        index = self._file_index(cursor)
        return TruthMatch(
            path=self._paths[index],
            offset=cursor - self._starts[index],
            text=self._corpus[cursor:end],
            complete=complete,
        )

    def _candidates(self, prefix: str) -> list[int]:
        """Offsets in the corpus where the prefix's end could be (each verified against the anchor
        line and everything after it)."""
        last_newline = prefix.rfind("\n")
        if last_newline < 0:
            return self._find_all(prefix)
        anchor_start = -1
        anchor_count = 0
        line_end = last_newline
        for _ in range(_ANCHOR_LINES):
            line_start = prefix.rfind("\n", 0, line_end) + 1
            count = len(self._lines.get(hash(prefix[line_start:line_end]), ()))
            if count == 0:
                # No line before this one can be part of an unbroken match.
                break
            if anchor_start < 0 or count < anchor_count:
                anchor_start, anchor_count = line_start, count
            if count <= _RARE_ENOUGH or line_start == 0:
                break
            line_end = line_start - 1
        found: list[int] = []
        if anchor_start >= 0:
            rest = prefix[anchor_start:]
            places = self._lines[hash(prefix[anchor_start : prefix.find("\n", anchor_start)])]
            corpus = self._corpus
            found = [p + len(rest) for p in places[:_MAX_CANDIDATES] if corpus.startswith(rest, p)]
        if not found and prefix.rfind("\n", 0, last_newline) < 0:
            # The only complete line is the prefix's first, which may be cut anywhere (then it is no
            # whole line of the truth): search for the whole prefix, the slow way.
            return self._find_all(prefix)
        return found

    def _find_all(self, prefix: str) -> list[int]:
        if not prefix:
            return []
        found: list[int] = []
        at = self._corpus.find(prefix)
        while at >= 0 and len(found) < _MAX_CANDIDATES:
            found.append(at + len(prefix))
            at = self._corpus.find(prefix, at + 1)
        return found

    def _tail_agreement(self, prefix: str, cursor: int) -> int:
        """How many characters before `cursor` agree with the end of `prefix` (up to a cap)."""
        limit = min(len(prefix), cursor, _MAX_TAIL_CHARS)
        corpus = self._corpus
        # Double until a disagreement, then narrow down by bisection: O(agreement) characters compared.
        low, high = 0, 64
        while high < limit and corpus[cursor - high : cursor] == prefix[len(prefix) - high :]:
            low, high = high, high * 2
        high = min(high, limit)
        if corpus[cursor - high : cursor] == prefix[len(prefix) - high :]:
            return high
        while high - low > 1:
            middle = (low + high) // 2
            if corpus[cursor - middle : cursor] == prefix[len(prefix) - middle :]:
                low = middle
            else:
                high = middle
        return low

    def _suffix_end(self, cursor: int, suffix: str, max_chars: int) -> int | None:
        """Where the suffix resumes after `cursor` in the same file, within `max_chars`; None if not
        seen. A suffix shorter than the recognisable head (or only whitespace) must run to the file's
        very end."""
        if not suffix:
            return None
        corpus = self._corpus
        file_end = corpus.find(_SEPARATOR, cursor)
        if len(suffix) <= _SUFFIX_HEAD_CHARS or not suffix.strip():
            start = file_end - len(suffix)
            if start >= cursor and start - cursor <= max_chars and corpus.startswith(suffix, start):
                return start
            return None
        at = corpus.find(suffix[:_SUFFIX_HEAD_CHARS], cursor, min(file_end, cursor + max_chars + _SUFFIX_HEAD_CHARS))
        return at if at >= 0 else None

    def _file_index(self, offset: int) -> int:
        low, high = 0, len(self._starts) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self._starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        return low


def _read_tree(root: Path) -> list[tuple[str, str]]:
    files: list[tuple[str, str]] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            path = Path(directory, name)
            text = _read_text(path)
            if text is not None:
                files.append((str(path), text))
    return files


def _read_text(path: Path) -> str | None:
    """The file's text, or None if it is too large, binary, not UTF-8 or unreadable."""
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
