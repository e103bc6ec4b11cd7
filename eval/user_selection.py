"""The selection a user would make for an edit: the function or block they are working in.

A history's changed region (first to last changed line) is derived from the answer: its size says how
much the commit changed. A user selects before the answer exists, usually the function they mean to
change. `enclosing_block` finds it by indentation, so it works across languages: the innermost
`def`/`class`/`function`/... header above the first changed line with less indentation, from its
decorators to the last line indented under it (and a closing brace at its own indentation). A change
outside any function (module level), or in a block over `max_lines`, selects the paragraph around it
(the run of non-blank lines).
"""

from __future__ import annotations

import re

_HEADER = re.compile(
    r"^\s*(?:@|(?:export\s+)?(?:default\s+)?(?:pub(?:\(\w+\))?\s+)?(?:async\s+)?"
    r"(?:def|class|function|func|fn|impl|struct|enum|trait|interface|module|sub)\b)"
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _blank(line: str) -> bool:
    return not line.strip()


def enclosing_block(text: str, first_line: int, *, max_lines: int = 150) -> tuple[int, int]:
    """Lines [first, end) (0-based) of the function or block enclosing line `first_line` of `text`."""
    lines = text.splitlines()
    if not lines:
        return 0, 0
    anchor = min(max(0, first_line), len(lines) - 1)
    while anchor < len(lines) - 1 and _blank(lines[anchor]):
        anchor += 1
    header = _header_at_or_above(lines, anchor)
    if header is not None:
        first, end = _block(lines, header)
        if end - first <= max_lines:
            return first, end
    return _paragraph(lines, anchor)


def _header_at_or_above(lines: list[str], anchor: int) -> int | None:
    """The innermost definition header enclosing `anchor` (the anchor itself if it is one)."""
    if _HEADER.match(lines[anchor]) and not lines[anchor].lstrip().startswith("@"):
        return anchor
    limit = _indent(lines[anchor])
    for i in range(anchor - 1, -1, -1):
        line = lines[i]
        if _blank(line) or _indent(line) >= limit:
            continue
        if _HEADER.match(line) and not line.lstrip().startswith("@"):
            return i
        limit = _indent(line)
        if limit == 0:
            return None
    return None


def _block(lines: list[str], header: int) -> tuple[int, int]:
    depth = _indent(lines[header])
    first = header
    while first > 0 and _indent(lines[first - 1]) == depth and lines[first - 1].lstrip().startswith("@"):
        first -= 1
    end = header + 1
    last = header
    # A signature spread over several lines: its continuation lines may sit at the header's indentation.
    while end < len(lines) and (_blank(lines[end]) or _indent(lines[end]) > depth or lines[end].lstrip()[:1] in ")]"):
        if not _blank(lines[end]):
            last = end
        end += 1
    if end < len(lines) and _indent(lines[end]) == depth and lines[end].lstrip()[:1] in "}":
        last = end
    return first, last + 1


def _paragraph(lines: list[str], anchor: int) -> tuple[int, int]:
    if _blank(lines[anchor]):
        return anchor, anchor
    first = anchor
    while first > 0 and not _blank(lines[first - 1]):
        first -= 1
    end = anchor + 1
    while end < len(lines) and not _blank(lines[end]):
        end += 1
    return first, end
