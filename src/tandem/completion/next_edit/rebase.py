"""Carrying a rewrite over the user's newer keys, so that one model request serves a whole change.

A next-edit request asks the model to rewrite the region as it read at one version of the document. The
user does not stop for it: by the time the rewrite streams, a few more keys may have been typed. The
rewrite is not lost with them. It is diffed against the region as it reads *now* (`carried`: the same
lines, shifted by what the user's changes added or removed, when every change since lies inside the
region), and it serves the newer version when it *agrees* with what the user did since (`agreement`):
where the user changed the region, the rewrite has it as the user has it, or as the user has it with more
typed at the cursor (the rewrite is the rest of the change the user is making, and then the next one). A
rewrite that has the user's lines otherwise (it would change what the user just typed) serves nothing,
and a new request is made.

So a model that sees a change coming is asked once for it, not once for each key of it, and when the user
finishes the change, the next change is on screen from a rewrite that is already streaming or done. After
an accept the same holds: the accepted hunk is in the rewrite, and its other hunks are the next edits.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from tandem.cache.edit_history import Lines
from tandem.cache.edit_region import SETTLE_LINES, Region, common_ends, rewrite_lines
from tandem.completion.inline.streams import Stream
from tandem.completion.next_edit.hunks import answered_whole
from tandem.completion.next_edit.prompt import read_rewrite

# Documents longer than this are not carried over (comparing them each key costs more than it saves).
_MAX_LINES = 20_000


@dataclass(kw_only=True)
class Generation:
    """A rewrite in flight (or done) for one version of a document: each part's region and its stream."""

    uri: str
    version: int
    # The whole document at `version`.
    lines: tuple[str, ...]
    parts: list[tuple[Region, Stream]] = field(default_factory=list)
    # The trace record of the request that made it.
    record_id: str = ""

    def cancel(self) -> None:
        for _, stream in self.parts:
            stream.cancel()

    def supersede(self) -> None:
        """A newer rewrite replaces this one: its streams stop, except a patient one that a local server is
        still reading, which stops at its first token (its prompt, cached by then, begins the next one's)."""
        for _, stream in self.parts:
            stream.supersede()


def snapshot(document: Lines) -> tuple[str, ...]:
    return tuple(document.line_content(i) for i in range(document.line_count))


def carried(base: tuple[str, ...], region: Region, document: Lines) -> Region | None:
    """`region` (lines of `base`) as it reads in `document`: the same start, its end moved by the lines the
    changes added or removed; None unless every line outside the region is as in `base`."""
    count = document.line_count
    if count > _MAX_LINES or len(base) > _MAX_LINES:
        return None
    delta = count - len(base)
    end = region.end + delta
    if end < region.start:
        return None
    for index in range(region.start):
        if document.line_content(index) != base[index]:
            return None
    for index in range(region.end, len(base)):
        if document.line_content(index + delta) != base[index]:
            return None
    return Region(region.start, tuple(document.line_content(i) for i in range(region.start, end)))


def agreement(base: Region, now: Region, partial: str, *, done: bool) -> bool | None:
    """Whether a rewrite of `base`, streamed as far as `partial` (`done`: all of it), agrees with the
    user's changes that made `base` into `now` (see the module docstring): the rewrite may change the
    region anywhere but in the text the user changed, and may add to that text only at its ends (the
    rest of a word being typed). None while the rewrite has not settled past the user's change."""
    if base.lines == now.lines:
        return True
    old, new = base.text, now.text
    prefix, suffix = common_ends(old, new)
    # The user's text: characters [low, high) of `now`, on its lines [first, last).
    low, high = prefix, len(new) - suffix
    first, last = _user_lines(base, now)
    rewrite, finished = read_rewrite(partial, done=done)
    finished = finished or done
    if finished:
        lines = rewrite_lines(rewrite)
    else:
        complete = rewrite[: rewrite.rfind("\n") + 1]
        lines = tuple(complete[:-1].split("\n")) if complete else ()
    opcodes = difflib.SequenceMatcher(None, now.lines, lines, autojunk=False).get_opcodes()
    if not finished and not any(tag == "equal" and i2 - max(i1, last) >= SETTLE_LINES for tag, i1, i2, _, _ in opcodes):
        return None
    starts = [0]
    for line in now.lines:
        starts.append(starts[-1] + len(line) + 1)
    removed = old[prefix : len(old) - suffix] if low == high else None
    for tag, i1, i2, k1, k2 in opcodes:
        if tag == "equal":
            continue
        added = "\n".join(lines[k1:k2])
        if tag == "insert":
            # Whole lines put before line i1: inside the user's text, or back where the user removed some.
            at = starts[i1] if i1 < len(now.lines) else len(new)
            text = added + "\n" if i1 < len(now.lines) else "\n" + added
            if low < at < high or (at == low and text == removed):
                return False
            continue
        if i2 <= first or i1 >= last:
            continue
        if not _keeps("\n".join(now.lines[i1:i2]), added, low - starts[i1], high - starts[i1], removed):
            return False
    return True


def behind(parts: list[tuple[Region, Region, Stream]]) -> bool:
    """Whether no part of a rewrite carried over as (its region as asked, as it reads now, its stream) is
    yet known to agree with the user's changes, and some part that is not yet known either way has not
    yet streamed as far as them (it is waiting for its first token, or copying the lines above them): its
    verdict is a model's time away, not a line's."""
    verdicts = [agreement(base, now, stream.text, done=answered_whole(stream)) for base, now, stream in parts]
    if True in verdicts:
        return False
    for (base, now, stream), verdict in zip(parts, verdicts, strict=True):
        if verdict is None and not stream.done:
            rewrite, _ = read_rewrite(stream.text, done=False)
            if not rewrite or rewrite.count("\n") < _user_lines(base, now)[0]:
                return True
    return False


def _user_lines(base: Region, now: Region) -> tuple[int, int]:
    """The lines [first, last) of `now` that hold what the user changed since `base`."""
    old, new = base.text, now.text
    prefix, suffix = common_ends(old, new)
    return new.count("\n", 0, prefix), new.count("\n", 0, len(new) - suffix) + 1


def _keeps(old: str, new: str, low: int, high: int, removed: str | None) -> bool:
    """Whether changing `old` into `new` leaves the user's characters [low, high) of `old` as they are,
    adding text only after them (the rest of what is being typed). Where the user removed text
    (`removed`; low == high), nothing may straddle that point nor put the removed text back."""
    for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if low < high:
            if (tag == "insert" and low <= a1 < high) or (tag != "insert" and a1 < high and low < a2):
                return False
        elif a1 < low < a2 or (a1 == a2 == low and new[b1:b2] == removed):
            return False
    return True
