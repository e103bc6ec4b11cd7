"""The completion prompt for a model on the user's machine: its beginning stays the same from key to key.

A local server (llama.cpp on a laptop's CPU) reads a prompt at ~100-1,000 tokens/s and keeps what it read
in its prompt cache, so a request costs the tokens after the first one that differs from the last prompt.
In the model's own fill-in-the-middle order (prefix, suffix, middle) the usual split puts the cursor at the
end of the prefix: every key changes the prefix, and the suffix after it is read again each time (~500
tokens, ~5 s here). So the split is moved back to an *anchor*, the start of a line on a multiple of
`ANCHOR_LINES`:

    <fim_prefix>[lines from a stepped start to the anchor]<fim_suffix>[text after the cursor]<fim_middle>
    [text from the anchor to the cursor]   <- the model continues this

Typing inserts at the cursor: the prefix and the suffix stay as they were and the middle grows at its end,
which is the end of the prompt; a key costs its own few tokens. Crossing an anchor re-reads the suffix
and the middle once per `ANCHOR_LINES` lines. The prefix's first line moves in steps of `PREFIX_STEP`
lines, so a growing file re-reads its prefix once per step. The suffix is the text after the cursor, up
to `SUFFIX_LINES` lines, which typing does not change. The model is shown exactly what it was trained on:
a middle begun and left to finish.

The window is small: 16-32 lines before the anchor and 8 after the cursor, a few hundred tokens. A file's
first request reads all of it, and on one shared core (~120 prompt tokens/s) a 160-line window took 12-40 s,
longer than the user takes to type the span it was meant for; this one is read in ~2-3 s. Measured with
`tandem replay --local` on the standard-library sample against a real 0.5B (README, "Real beside
simulated: completions"): keystrokes saved 4.0% with 160 + 24 lines, 28.2% with 32 + 8.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.completion.inline.request import TextSource

ANCHOR_LINES = 8
PREFIX_STEP = 16
PREFIX_LINES = 32  # with the step: 16-32 lines before the anchor
SUFFIX_LINES = 8


@dataclass(frozen=True, kw_only=True)
class LocalWindow:
    prefix: str  # the file from a stepped first line to the anchor
    middle: str  # from the anchor to the cursor
    suffix: str  # after the cursor


def local_window(
    document: TextSource, line: int, character: int, *, max_prefix_chars: int, max_suffix_chars: int
) -> LocalWindow:
    """The anchored split of `document` at (`line`, `character`)."""
    anchor = line - line % ANCHOR_LINES
    before = document.text_before(line, character, max_prefix_chars)
    split = _start_of_line_back(before, line - anchor)
    middle, before_anchor = before[split:], before[:split]
    newlines = before_anchor.count("\n")
    whole_file = len(before) < max_prefix_chars
    first_whole = anchor - newlines + (0 if whole_file else 1)
    start = max(anchor - PREFIX_LINES, first_whole, 0)
    start = min(-(-start // PREFIX_STEP) * PREFIX_STEP, anchor)
    prefix = before_anchor[_start_of_line_back(before_anchor, anchor - start) :] if anchor > start else ""
    suffix = document.text_after(line, character, max_suffix_chars)
    suffix = suffix[: _end_of_lines(suffix, SUFFIX_LINES)]
    return LocalWindow(prefix=prefix, middle=middle, suffix=suffix)


def _start_of_line_back(text: str, lines_back: int) -> int:
    """The index in `text` (which ends at a cursor) where the line `lines_back` lines above the cursor's
    line begins (0 when `text` starts after it)."""
    index = len(text)
    for _ in range(lines_back + 1):
        found = text.rfind("\n", 0, index)
        if found < 0:
            return 0
        index = found
    return index + 1


def _end_of_lines(text: str, lines: int) -> int:
    """The index just past the `lines`-th newline of `text` (its length when it has fewer)."""
    index = -1
    for _ in range(lines):
        index = text.find("\n", index + 1)
        if index < 0:
            return len(text)
    return index + 1
