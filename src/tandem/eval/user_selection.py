"""The selection a user would make for an edit: the function or block they are working in.

A history's changed region (first to last changed line) is derived from the answer: its size says how
much the commit changed. A user selects before the answer exists, usually the function they mean to
change. `enclosing_block` finds it by indentation, so it works across languages: the innermost
`def`/`class`/`function`/... header above its anchor (below) with less indentation, from its
decorators to the last line indented under it (and a closing brace at its own indentation). A change
outside any function (module level), or in a block over `max_lines`, selects the paragraph around it
(the run of non-blank lines).

Its anchor, the changed line the user would be working at, is `code_anchor`: the hunk of the primary
file with the most changed lines of code (removed plus added lines that are not blank, a comment or part
of an import statement; the first of equals), at its first removed line of code, or where it inserts when
it removes none. A commit that also adds an import changes the import paragraph first, but a user asks for
the change in the function; the first changed line (the anchor before this rule) is the import. A commit
whose hunks hold no code line at all is anchored at its first hunk, as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tandem.completion.routing.selection_shape import DEFINITION_HEADER, definition_end

# The first line of an import statement, in the languages whose syntax is this regular.
_IMPORT = re.compile(
    r"^\s*(?:import\b|from\s+\S+\s+import\b|#\s*include\b|use\s+[\w:]+|(?:const|let|var)\s+\S+\s*=\s*require\()"
)
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|--)")


def code_line_flags(text: str) -> list[bool]:
    """Per line of `text`: is it a line of code (not blank, not a comment, not in an import statement)?
    An import's parenthesised continuation lines (`from x import (` ... `)`) count as the import."""
    flags: list[bool] = []
    open_parens = 0
    for line in text.splitlines():
        if open_parens > 0:
            open_parens += line.count("(") - line.count(")")
            flags.append(False)
        elif _IMPORT.match(line):
            open_parens = max(0, line.count("(") - line.count(")"))
            flags.append(False)
        else:
            flags.append(bool(line.strip()) and not _COMMENT.match(line))
    return flags


def code_anchor(parent_text: str, truth_text: str, hunks: Sequence[tuple[int, int, int, int]]) -> int | None:
    """The line of `parent_text` a user would select around for a commit with these hunks (each: its lines
    [first, end) in the parent and [first, end) in the truth, 0-based), by the module docstring's rule;
    None without hunks."""
    if not hunks:
        return None
    old, new = code_line_flags(parent_text), code_line_flags(truth_text)

    def code(flags: list[bool], first: int, end: int) -> list[int]:
        return [i for i in range(first, min(end, len(flags))) if flags[i]]

    counts = [len(code(old, h[0], h[1])) + len(code(new, h[2], h[3])) for h in hunks]
    best = max(range(len(hunks)), key=lambda i: (counts[i], -i))
    removed = code(old, hunks[best][0], hunks[best][1])
    return removed[0] if removed else hunks[best][0]


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
    if DEFINITION_HEADER.match(lines[anchor]) and not lines[anchor].lstrip().startswith("@"):
        return anchor
    limit = _indent(lines[anchor])
    for i in range(anchor - 1, -1, -1):
        line = lines[i]
        if _blank(line) or _indent(line) >= limit:
            continue
        if DEFINITION_HEADER.match(line) and not line.lstrip().startswith("@"):
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
    return first, definition_end(lines, header)


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
