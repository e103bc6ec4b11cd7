"""How the simulator reads an edit request, and applies a SEARCH/REPLACE answer: its own reading.

Written from the formats as they appear on the wire, never from tandem's code (see `prompt_reading`).

An edit prompt's user message is a run of sections, each opened by a line that starts with a marker and
closed by a line holding only the end marker:

    <|tandem:file|> PATH (LANGUAGE)      the whole file being edited; or, for a file too long to show,
                                         "PATH (LANGUAGE) lines A-B of N": only those lines of its N
    <|tandem:selection|> PATH lines A-B  the selected lines, numbered
    <|tandem:context|> PATH              another file shown for context (any number of these)
    <|tandem:instruction|>               what the user asked
    <|tandem:draft|>                     another model's answer to check (SEARCH/REPLACE blocks), in a
                                         later message: the model answers KEEP or its own blocks

An answer is SEARCH/REPLACE blocks, each group after a line naming its file:

    PATH
    <<<<<<< SEARCH
    lines as they are
    =======
    lines as they should be
    >>>>>>> REPLACE

`apply_blocks` is what the simulator checks its own answers with: blocks that it cannot apply here are
not sent as a right answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

FILE_MARKER = "<|tandem:file|>"
SELECTION_MARKER = "<|tandem:selection|>"
CONTEXT_MARKER = "<|tandem:context|>"
INSTRUCTION_MARKER = "<|tandem:instruction|>"
DRAFT_MARKER = "<|tandem:draft|>"
END_MARKER = "<|tandem:end|>"
_OPENERS = (FILE_MARKER, SELECTION_MARKER, CONTEXT_MARKER, INSTRUCTION_MARKER, DRAFT_MARKER)
_PART = re.compile(r"\s+lines (\d+)-(\d+) of (\d+)$")
# The answer that keeps a draft as it is.
KEEP_ANSWER = "KEEP"

SEARCH_LINE = "<<<<<<< SEARCH"
DIVIDER_LINE = "======="
REPLACE_LINE = ">>>>>>> REPLACE"


@dataclass(frozen=True, kw_only=True)
class EditTask:
    """What an edit request showed: the file being edited, other files, and the instruction."""

    path: str
    text: str
    context: Mapping[str, str] = field(default_factory=dict)
    instruction: str = ""
    # A draft answer the request asks to check (None: write the edit).
    draft: str | None = None
    # When only part of the file was shown: (first line, last line, lines in the file), 1-based; `text`
    # is those lines.
    shown_lines: tuple[int, int, int] | None = None


class BlocksError(ValueError):
    """An answer that does not apply: a malformed block, or a SEARCH that is not exactly once in its file."""


def read_edit_task(content: str) -> EditTask | None:
    """The task an edit prompt's user message shows; None if the message is not an edit prompt."""
    if INSTRUCTION_MARKER not in content:
        return None
    lines = content.split("\n")
    path = text = instruction = ""
    draft: str | None = None
    shown_lines: tuple[int, int, int] | None = None
    seen_file = False
    context: dict[str, str] = {}
    i = 0
    while i < len(lines):
        opener = next((m for m in _OPENERS if lines[i].startswith(m)), None)
        if opener is None:
            i += 1
            continue
        header = lines[i][len(opener) :].strip()
        end = i + 1
        while end < len(lines) and lines[end] != END_MARKER:
            end += 1
        body = "\n".join(lines[i + 1 : end])
        if opener == FILE_MARKER:
            # "PATH (LANGUAGE)", or just "PATH"; either followed by "lines A-B of N" for a part.
            part = _PART.search(header)
            if part is not None:
                header = header[: part.start()]
                shown_lines = (int(part.group(1)), int(part.group(2)), int(part.group(3)))
            if header.endswith(")") and " (" in header:
                header = header[: header.rindex(" (")]
            path, text, seen_file = header, body, True
        elif opener == CONTEXT_MARKER:
            context[header] = body
        elif opener == INSTRUCTION_MARKER:
            instruction = body
        elif opener == DRAFT_MARKER:
            draft = body
        i = end + 1
    if not seen_file or not path:
        return None
    return EditTask(
        path=path, text=text, context=context, instruction=instruction, draft=draft, shown_lines=shown_lines
    )


def apply_blocks(answer: str, files: Mapping[str, str]) -> dict[str, str]:
    """{path: text after the answer} for each file the answer changes; BlocksError if it does not apply.
    An empty SEARCH writes a file that is new or holds only blank lines."""
    lines = answer.split("\n")
    changed: dict[str, str] = {}
    path = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line == SEARCH_LINE:
            if not path:
                raise BlocksError(f"line {i + 1}: a block before any path line")
            divider = _find(lines, DIVIDER_LINE, i + 1)
            replace = _find(lines, REPLACE_LINE, divider + 1)
            current = changed.get(path, files.get(path, ""))
            changed[path] = _apply_one(current, lines[i + 1 : divider], lines[divider + 1 : replace], path)
            i = replace + 1
        elif line.strip():
            if line in (DIVIDER_LINE, REPLACE_LINE):
                raise BlocksError(f"line {i + 1}: {line!r} outside a block")
            path = line.strip()
            i += 1
        else:
            i += 1
    return changed


def _find(lines: list[str], marker: str, start: int) -> int:
    for index in range(start, len(lines)):
        if lines[index] == marker:
            return index
    raise BlocksError(f"a block without its {marker!r} line")


def _apply_one(text: str, search: list[str], replace: list[str], path: str) -> str:
    own = text.splitlines(keepends=True)
    # New lines end as the file's lines do.
    eol = "\r\n" if own and own[0].endswith("\r\n") else "\n"
    new = [line + eol for line in replace]
    if not search:
        if text.strip():
            raise BlocksError(f"{path}: an empty SEARCH for a file that has text")
        return "".join(new)
    keys = [line.rstrip() for line in own]
    wanted = [line.rstrip() for line in search]
    starts = [s for s in range(len(keys) - len(wanted) + 1) if keys[s : s + len(wanted)] == wanted]
    if len(starts) != 1:
        raise BlocksError(f"{path}: SEARCH found {len(starts)} times")
    start, stop = starts[0], starts[0] + len(wanted)
    if stop == len(own) and not own[-1].endswith("\n") and new:
        new[-1] = new[-1].removesuffix(eol)  # the file had no final newline; the answer cannot say to add one
    return "".join(own[:start] + new + own[stop:])
