"""The user's recent edits across open documents, as a compact diff history (oldest first).

Keystrokes are coalesced into *groups*: a change that touches or adjoins the lines of its document's open
group extends that group; a change elsewhere closes it and opens a new one. A group remembers the lines as
they were before its first keystroke (`old`) and, once closed, as they were when it closed (`new`); the
open group's new lines are read from the document when asked. So one keystroke costs the size of the lines
it touches, never the size of the file.

Callers tell the history about a change twice: `before_change` (the lines about to be replaced, read from
the buffer while they still hold the old text) and `after_change` (how many lines replaced them).
"""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

# Groups remembered across all documents; older ones fall off.
MAX_GROUPS = 16
# A group grows no larger than this many lines (a larger change is split into groups).
MAX_GROUP_LINES = 60


class Lines(Protocol):
    """Read access to a document's lines (`cache.lines.LineBuffer` is one)."""

    @property
    def line_count(self) -> int: ...
    def line_content(self, index: int) -> str: ...


@dataclass
class Group:
    """Lines [start, end) of `uri`'s current text replaced `old`; `new` is set when the group closes."""

    uri: str
    path: str
    start: int
    end: int
    old: tuple[str, ...]
    new: tuple[str, ...] | None = None

    def current(self, buffer: Lines | None) -> tuple[str, ...]:
        if self.new is not None:
            return self.new
        if buffer is None:
            return self.old
        return tuple(buffer.line_content(i) for i in range(self.start, min(self.end, buffer.line_count)))


@dataclass(frozen=True)
class RecentEdit:
    """One group as the model sees it: `path`, where it starts (0-based line), and old -> new lines."""

    uri: str
    path: str
    start: int
    old: tuple[str, ...]
    new: tuple[str, ...]

    def diff(self) -> str:
        """A unified-diff hunk of this edit (no file header: `render` puts the path in front)."""
        context = len(self.old) + len(self.new)
        diff = difflib.unified_diff(list(self.old), list(self.new), n=context, lineterm="")
        body = [line.rstrip("\n") for line in diff][2:]  # drop difflib's ---/+++ lines
        if body and body[0].startswith("@@"):
            body[0] = f"@@ -{self.start + 1},{len(self.old)} +{self.start + 1},{len(self.new)} @@"
        return "\n".join(body)


class EditHistory:
    """Recent edits of every open document. Not thread-safe: call it from the event loop."""

    def __init__(self, *, max_groups: int = MAX_GROUPS) -> None:
        self._closed: deque[Group] = deque(maxlen=max_groups)
        self._open: dict[str, Group] = {}
        # Documents changed since the last time `take_changed` was asked.
        self._changed: set[str] = set()

    def before_change(self, uri: str, path: str, buffer: Lines, start_line: int, end_line: int) -> None:
        """Lines [start_line, end_line] (inclusive, the change's range) of `buffer` are about to change."""
        start_line = max(0, min(start_line, buffer.line_count - 1))
        end_line = max(start_line, min(end_line, buffer.line_count - 1))
        stop = end_line + 1
        group = self._open.get(uri)
        if group is not None:
            adjoins = start_line <= group.end and stop >= group.start - 1
            merged = max(stop, group.end) - min(start_line, group.start)
            if adjoins and merged <= MAX_GROUP_LINES:
                before = tuple(buffer.line_content(i) for i in range(start_line, group.start))
                after = tuple(buffer.line_content(i) for i in range(group.end, stop))
                group.old = before + group.old + after
                group.start = min(start_line, group.start)
                group.end = max(stop, group.end)
                self._changed.add(uri)
                return
            self._close(uri, buffer)
        self._open[uri] = Group(
            uri=uri,
            path=path,
            start=start_line,
            end=stop,
            old=tuple(buffer.line_content(i) for i in range(start_line, stop)),
        )
        self._changed.add(uri)

    def after_change(self, uri: str, old_line_count: int, new_line_count: int) -> None:
        """The change announced by `before_change` replaced `old_line_count` lines by `new_line_count`."""
        group = self._open.get(uri)
        if group is not None:
            group.end = max(group.start, group.end + new_line_count - old_line_count)

    def replaced(self, uri: str) -> None:
        """The document's whole text was replaced (or it was closed): its edits no longer locate."""
        self._open.pop(uri, None)
        self._closed = deque((g for g in self._closed if g.uri != uri), maxlen=self._closed.maxlen)

    def _close(self, uri: str, buffer: Lines) -> None:
        group = self._open.pop(uri, None)
        if group is None:
            return
        group.new = group.current(buffer)
        if group.new != group.old:
            self._closed.append(group)

    def has_edits(self, uri: str) -> bool:
        return uri in self._open or any(g.uri == uri for g in self._closed)

    def last(self, uri: str, buffer: Lines) -> RecentEdit | None:
        """The document's most recent edit, located in its current text (for reversal checks)."""
        group = self._open.get(uri)
        if group is None:
            for closed in reversed(self._closed):
                if closed.uri == uri:
                    group = closed
                    break
        if group is None:
            return None
        return RecentEdit(group.uri, group.path, group.start, group.old, group.current(buffer))

    def recent(
        self, buffer_of: Callable[[str], Lines | None], *, allowed: Callable[[str], bool] | None = None
    ) -> list[RecentEdit]:
        """Edits oldest first (the open groups last), of the documents `allowed` says may be sent; an edit
        the user has undone (new == old) is left out."""
        groups = [*self._closed, *self._open.values()]
        edits: list[RecentEdit] = []
        for group in groups:
            if allowed is not None and not allowed(group.uri):
                continue
            new = group.current(buffer_of(group.uri))
            if new != group.old:
                edits.append(RecentEdit(group.uri, group.path, group.start, group.old, new))
        return edits


def render(edits: list[RecentEdit], *, max_chars: int) -> str:
    """The edits as a compact diff history, oldest first, keeping the newest that fit in `max_chars`."""
    parts: list[str] = []
    size = 0
    for edit in reversed(edits):
        part = f"--- {edit.path}\n+++ {edit.path}\n{edit.diff()}\n"
        if size + len(part) > max_chars:
            break
        parts.append(part)
        size += len(part)
    return "".join(reversed(parts))
