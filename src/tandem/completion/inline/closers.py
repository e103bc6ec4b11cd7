"""Auto-inserted closing characters after the cursor that a suggestion replaces.

Editors close brackets and quotes as the user types (VS Code by default, Helix by default, Neovim's and
Emacs's autopair plugins): after `def wrap(` the line reads `def wrap(|)`. The model's suggestion for that
cursor is the rest of the line as it will read, `text, width=70, **kwargs):`, closer included. Inserted at
the cursor it leaves the editor's `)` behind (`...**kwargs):)`). A suggestion whose item range covers those
closers replaces them instead, as other completion servers do; VS Code then draws the ghost text around
the closers it keeps (they must appear in the suggestion in order).
"""

from __future__ import annotations

# What editors auto-insert: closing brackets and quotes.
AUTO_CLOSERS = frozenset(")]}\"'`")


def replaced_closers(text: str, line_after: str) -> int:
    """How many characters after the cursor a suggestion `text` replaces (0: it is inserted).

    Only when the rest of the cursor's line is nothing but auto-closed characters (trailing spaces aside)
    and the suggestion's first line holds all of them, in order: then the suggestion, not the editor,
    decides where they go. Text the user wrote after the cursor is never replaced.
    """
    closers = line_after.rstrip()
    if not closers or any(char not in AUTO_CLOSERS for char in closers):
        return 0
    first_line = text.split("\n", 1)[0]
    found = 0
    for char in first_line:
        if found < len(closers) and char == closers[found]:
            found += 1
    return len(closers) if found == len(closers) else 0
