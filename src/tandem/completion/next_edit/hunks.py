"""Judging a next-edit rewrite as it streams: the first settled hunk that may be shown.

`first_hunk` reads the model's stream, takes each hunk once it is settled (`cache.edit_region.settled_hunks`),
and returns the first one `judge` lets through whose character edit keeps the file parsing (`parses`); the
reason each earlier hunk was refused is appended to `refused`. A rewrite is whole only when the model
closed it (the end marker) or stopped of its own accord (`answered_whole`): one cut at `max_tokens` or
broken off ends mid-region, and read as whole its missing tail would be a deletion of the region's rest.
`holds` says whether a document still holds an edit where it was suggested (an accept is refused
otherwise).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable

from tandem.cache.edit_history import Lines
from tandem.cache.edit_region import CharEdit, Hunk, LastEdit, Region, char_edit, judge, settled_hunks
from tandem.completion.edit.validate import balance_issues
from tandem.completion.inline.streams import Stream
from tandem.completion.next_edit.prompt import read_rewrite

# Documents larger than this are not parsed to check a suggestion (the check would cost more than it saves).
_PARSE_CHECK_CHARS = 400_000


def answered_whole(stream: Stream) -> bool:
    """The stream has ended with the model's own stop: not cut at `max_tokens` ("length"), not failed or
    cancelled."""
    return stream.done and stream.error is None and stream.stats.finish_reason != "length"


async def first_hunk(
    *,
    document: Lines,
    path: str,
    region: Region,
    stream: Stream,
    last: LastEdit | None,
    refused: list[str],
    distinct: bool = False,
    judged: Callable[[int], None] = lambda _: None,
    waited: Callable[[], None] = lambda: None,
) -> tuple[Hunk, CharEdit] | None:
    """Wait for the first settled hunk that may be shown; None when the rewrite ends without one.
    `distinct`: a hunk settles after one matching line when that line is distinctive (see
    `settled_hunks`). `judged(n)` is told how many hunks were judged so far, `waited()` each time the
    stream is waited for."""
    before = tuple(document.line_content(i) for i in range(max(0, region.start - 3), region.start))
    after = tuple(document.line_content(i) for i in range(region.end, min(document.line_count, region.end + 3)))
    count = 0
    while True:
        rewrite, finished = read_rewrite(stream.text, done=answered_whole(stream))
        settled = settled_hunks(region.lines, rewrite, done=finished, distinct=distinct)
        for hunk in settled[count:]:
            count += 1
            reason = judge(hunk, region, last=last, before=before, after=after)
            edit = char_edit(hunk, region, line_count=document.line_count) if not reason else None
            if edit is not None and not parses(document, path, edit):
                reason = "parse"
            if reason:
                refused.append(reason)
                continue
            assert edit is not None
            judged(count)
            return hunk, edit
        judged(count)
        if finished or stream.done:
            return None
        waited()
        await stream.changed()


def parses(document: Lines, path: str, edit: CharEdit) -> bool:
    """False when the edit breaks a file that parsed (Python) or unbalances its brackets (others)."""
    if document.line_count * 80 > _PARSE_CHECK_CHARS:
        return True
    before = [document.line_content(i) for i in range(document.line_count)]
    old_text, new_text = "\n".join(before), "\n".join(edit.apply(before))
    if len(old_text) > _PARSE_CHECK_CHARS:
        return True
    if path.endswith((".py", ".pyi")):
        return not (_parses(old_text) and not _parses(new_text))
    return balance_issues(new_text, path) <= balance_issues(old_text, path)


def holds(lines: Lines, edit: CharEdit) -> bool:
    """Whether the document holds the edit's text where the edit put it (the edit was applied as suggested)."""
    parts = edit.text.split("\n")
    for offset, part in enumerate(parts):
        index = edit.start_line + offset
        if index >= lines.line_count:
            return False
        line = lines.line_content(index)
        column = edit.start_char if offset == 0 else 0
        segment = line[column:]
        if offset < len(parts) - 1 and segment != part:
            return False
        if offset == len(parts) - 1 and not segment.startswith(part):
            return False
    return True


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True
