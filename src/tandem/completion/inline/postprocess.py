"""Clean a suggestion before it is shown.

In order: cut at a closing bracket that nothing opened, trim what repeats the text after the cursor,
drop suggestions that repeat the neighbouring lines, drop empty ones.
"""

from __future__ import annotations

from dataclasses import dataclass

_PAIRS = {")": "(", "]": "[", "}": "{"}
_OPENING = set(_PAIRS.values())
# Characters an editor commonly auto-inserts after the cursor and a model repeats at the end of its line.
_TRAILING = set(")]}'\";:,`>")


@dataclass(frozen=True, kw_only=True)
class Surroundings:
    line_before: str
    line_after: str
    previous_line: str = ""
    # The lines after the cursor's line (a few), to catch a suggestion that repeats them.
    following: tuple[str, ...] = ()


def clean(text: str, around: Surroundings) -> str:
    text = cut_repeated_suffix(text, around)
    text = cut_unbalanced(text, around.line_before)
    text = trim_suffix_overlap(text, around)
    if repeats_neighbours(text, around):
        return ""
    return text if text.strip() else ""


# The least of the text after the cursor that must reappear in a suggestion to count as repeated there.
_REPEAT_MIN_CHARS = 6


def cut_repeated_suffix(text: str, around: Surroundings) -> str:
    """Text before the point where the suggestion goes on with the code already after the cursor.

    A small model filling the middle often writes the middle and then the suffix again (Qwen2.5-Coder 0.5B
    through llama.cpp: `total = ▮(values)` answered `sum(values)\nprint(total)`). The repeat is found by
    the first stretch of the text after the cursor that holds at least `_REPEAT_MIN_CHARS` visible
    characters, searched in one pass (`str.find`); a suggestion cut off inside the repeat is caught by its
    end matching the stretch's beginning."""
    after = around.line_after + "\n" + "\n".join(around.following)
    needle = _visible_stretch(after)
    if not needle:
        return text
    at = text.find(needle)
    if at >= 0:
        return text[:at]
    for length in range(len(needle) - 1, 0, -1):
        head = needle[:length]
        if len(head.strip()) >= _REPEAT_MIN_CHARS and text.endswith(head) and len(text) > length:
            return text[: len(text) - length]
    return text


def _visible_stretch(after: str) -> str:
    """The beginning of `after` up to the end of the line where it has `_REPEAT_MIN_CHARS` visible characters
    ("" when it never does)."""
    seen = 0
    for index, char in enumerate(after):
        if not char.isspace():
            seen += 1
        elif char == "\n" and seen >= _REPEAT_MIN_CHARS:
            return after[:index]
    return after if seen >= _REPEAT_MIN_CHARS else ""


def _open_stack(line_before: str) -> list[str]:
    """Brackets still open at the end of `line_before` (strings skipped, roughly)."""
    stack: list[str] = []
    quote = ""
    for char in line_before:
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'`":
            quote = char
        elif char in _OPENING:
            stack.append(char)
        elif char in _PAIRS and stack and stack[-1] == _PAIRS[char]:
            stack.pop()
    return stack


def cut_unbalanced(text: str, line_before: str) -> str:
    """Text up to the first closing bracket that neither the suggestion nor the cursor's line opened."""
    stack = _open_stack(line_before)
    quote = ""
    for index, char in enumerate(text):
        if char == "\n":
            quote = ""
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'`":
            quote = char
        elif char in _OPENING:
            stack.append(char)
        elif char in _PAIRS:
            if not stack or stack[-1] != _PAIRS[char]:
                if "\n" not in text[:index]:
                    # On the cursor's own line a stray closer ends the suggestion; on later lines the
                    # block's own brackets may close what earlier lines of the file opened.
                    return text[:index].rstrip() if text[:index].strip() else ""
                continue
            stack.pop()
    return text


def trim_suffix_overlap(text: str, around: Surroundings) -> str:
    """Remove the end of the suggestion that the text after the cursor already has."""
    after = around.line_after
    if after.strip():
        last_start = text.rfind("\n") + 1
        last = text[last_start:]
        if last.endswith(after.rstrip()) and len(last) > len(after.rstrip()):
            return text[: len(text) - len(after.rstrip())]
        # The longest run of closers/punctuation at the start of `after` that the suggestion repeats.
        run = 0
        while run < len(after) and after[run] in _TRAILING:
            run += 1
        for k in range(run, 0, -1):
            if text.endswith(after[:k]) and len(text) > k:
                return text[: len(text) - k]
        return text
    # Multi-line: drop trailing lines that are the lines right after the cursor.
    lines = text.split("\n")
    following = [line.rstrip() for line in around.following]
    for n in range(min(len(lines) - 1, len(following)), 0, -1):
        if [line.rstrip() for line in lines[-n:]] == following[:n] and any(following[:n]):
            return "\n".join(lines[:-n])
    return text


def repeats_neighbours(text: str, around: Surroundings) -> bool:
    """A suggestion whose new line just repeats the line above or below adds nothing."""
    first = (around.line_before + text.split("\n", 1)[0]).strip()
    if not first or len(first) < 4:
        return False
    neighbours = {around.previous_line.strip()}
    if around.following:
        neighbours.add(around.following[0].strip())
    if text.startswith("\n"):
        new_line = text[1:].split("\n", 1)[0].strip()
        return len(new_line) >= 4 and new_line in neighbours | {around.line_before.strip()}
    return bool(text.strip()) and first in neighbours
