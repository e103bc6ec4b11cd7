"""A selection's shape, read from the selected text alone: whether it is one whole definition (a function or
a class with all of its body), part of one, or module-level code. The router scores the two shapes with
their own weights (`router_weights.RouterModel`); `eval.user_selection` finds the block a user would select
by the same reading."""

from __future__ import annotations

import re
from collections.abc import Sequence

# A definition's first line (or a decorator above one), across languages: where a whole function or class
# starts (`partial_selection`; `eval.user_selection` finds the user's block by it).
DEFINITION_HEADER = re.compile(
    r"^\s*(?:@|(?:export\s+)?(?:default\s+)?(?:pub(?:\(\w+\))?\s+)?(?:async\s+)?"
    r"(?:def|class|function|func|fn|impl|struct|enum|trait|interface|module|sub)\b)"
)


def is_partial(selection: str) -> bool:
    """Whether a selection is not a whole definition: its first line that is not blank or a decorator is
    no definition header (`DEFINITION_HEADER`). Nothing selected is not partial."""
    first = next((line for line in selection.splitlines() if line.strip() and not line.lstrip().startswith("@")), "")
    return bool(first) and not DEFINITION_HEADER.match(first)


def definition_end(lines: Sequence[str], header: int) -> int:
    """The line after the last of the definition whose header is `lines[header]`: the lines indented under
    it (blank lines within it), a signature's continuation lines starting with a closing bracket, and a
    closing brace at the header's indentation."""
    depth = _indent(lines[header])
    last = header
    end = header + 1

    def inside(line: str) -> bool:
        return not line.strip() or _indent(line) > depth or line.lstrip()[:1] in ")]"

    while end < len(lines) and inside(lines[end]):
        if lines[end].strip():
            last = end
        end += 1
    if end < len(lines) and _indent(lines[end]) == depth and lines[end].lstrip()[:1] == "}":
        last = end
    return last + 1


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def is_whole_definition(selection: str) -> bool:
    """Whether a selection is exactly one whole definition: decorators and blank lines, then a definition
    header (`DEFINITION_HEADER`), then its body to the end (`definition_end`), and nothing after it. Read
    from the selected text alone: a selection of a function's first lines that ends where an inner block
    ends reads as whole."""
    lines = selection.splitlines()
    header = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("@")), None)
    if header is None or not DEFINITION_HEADER.match(lines[header]):
        return False
    return not any(line.strip() for line in lines[definition_end(lines, header) :])
