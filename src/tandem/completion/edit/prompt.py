"""The chat messages that ask a model for an edit, and reading them back (for `tandem sim`).

Stable material first, so a provider's prompt cache serves it again on the next edit: the system prompt,
then a user message with the other files given as context (when there are any), then one with the file
being edited in full (the same for every edit in that file until one is applied; a file too long for
the window shows the lines around the selection that fit, `excerpt_span`, its header saying which lines
of how many, and the answer is looked for in those lines only), then a last user
message with what changes every time: the selected lines again with their numbers, and the instruction.
The model must answer with SEARCH/REPLACE blocks, each after a line naming its file;
`completion.edit.parse` reads the answer. A backend that marks cache breakpoints (Anthropic's
`cache_control`, which serves a marked prefix only whole) marks each message before the last: the
context files stay cached when an applied edit changes the file.

The draft check ("draft-check" plan): `draft_check_message` follows the edit prompt with a fast model's
draft for the accurate model to keep (`KEEP_ANSWER`, read by `keeps_draft`) or replace with its own blocks.

`read_edit_prompt` recovers the task from the messages (tests check what was sent with it); the simulator
reads the layout its own way (`tandem.sim.edit_reading`), so a change here is noticed by the contract tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tandem.completion.edit.file_edits import line_col

_FILE = "<|tandem:file|>"
_CONTEXT = "<|tandem:context|>"
_END = "<|tandem:end|>"
_SELECTION = "<|tandem:selection|>"
_INSTRUCTION = "<|tandem:instruction|>"
DRAFT_MARKER = "<|tandem:draft|>"
KEEP_ANSWER = "KEEP"
_CHECK_REQUEST = (
    "A faster model answered the request above with the draft between the markers. If the draft makes the "
    f"change the instruction asks for, correctly and completely, answer with the one word {KEEP_ANSWER}. "
    "Otherwise answer with your own SEARCH/REPLACE blocks for the whole change, as asked above."
)

EDIT_SYSTEM_PROMPT = """\
You are a careful code editor. The user shows you a file, a selected range in it, possibly other files
for context, and an instruction. Make the change the instruction asks for, mostly inside the selection;
change other files only when the instruction needs it (callers of a renamed function, for example).

Answer with one or more SEARCH/REPLACE blocks and nothing else. Each block starts with a line holding
only the file's path, then:

<<<<<<< SEARCH
the exact existing lines to change, copied character for character, with enough lines to be unique
=======
the new lines
>>>>>>> REPLACE

Rules: SEARCH must match the file exactly, indentation included. Keep blocks small: one per place that
changes. To create a new file, use an empty SEARCH. Do not explain, do not repeat unchanged code outside
the blocks."""


@dataclass(frozen=True, kw_only=True)
class EditPrompt:
    """What an edit request shows the model: the file, the selected lines, context files, the task."""

    path: str
    text: str
    # 0-based line numbers of the selection in `text`, end exclusive.
    first_line: int
    end_line: int
    instruction: str
    context: Mapping[str, str] = field(default_factory=dict)
    language: str = ""
    # The 0-based, end-exclusive lines of `text` the file message shows (`excerpt_span`); None: all of it.
    # A file too long for the window is shown in part, its header saying which lines of how many. Read
    # back (`read_edit_prompt`), `text` is the lines shown and `shown` where they were.
    shown: tuple[int, int] | None = None


def selection_lines(text: str, start: int, end: int) -> tuple[int, int]:
    """The 0-based, end-exclusive line span covering offsets `[start, end)` of `text`."""
    first, _ = line_col(text, start)
    last, col = line_col(text, end)
    end_line = last if col == 0 and end > start else last + 1
    return first, max(end_line, first)


def newline_lines(text: str) -> list[str]:
    """`text`'s lines, each with its "\\n": lines as editors and `line_offset` count them (a form feed or a
    U+2028 inside a line, which `str.splitlines` would split at, stays in it)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def excerpt_span(text: str, first_line: int, end_line: int, budget_chars: int) -> tuple[int, int] | None:
    """The lines [a, b) of `text` to show for an edit of lines [first_line, end_line) in `budget_chars`:
    the selection (at least its line), then a line more on each side in turn while they fit, a side ending
    at its first line that does not; None when the selection alone does not fit."""
    lines = newline_lines(text)
    a, b = min(first_line, len(lines)), min(max(end_line, first_line + 1), len(lines))
    used = sum(len(line) for line in lines[a:b])
    if used > budget_chars:
        return None
    up, down = True, True
    while up or down:
        if up:
            if a > 0 and used + len(lines[a - 1]) <= budget_chars:
                a -= 1
                used += len(lines[a])
            else:
                up = False
        if down:
            if b < len(lines) and used + len(lines[b]) <= budget_chars:
                used += len(lines[b])
                b += 1
            else:
                down = False
    return a, b


def edit_messages(prompt: EditPrompt) -> list[dict[str, str]]:
    """The system message, the stable user messages (the context files if any, the file) and the volatile
    one (selection, instruction) for `prompt`."""
    lines = [line.rstrip("\r\n") for line in newline_lines(prompt.text)]
    numbered = "\n".join(
        f"{number + 1:>5}| {lines[number]}" for number in range(prompt.first_line, min(prompt.end_line, len(lines)))
    )
    where = (
        f"lines {prompt.first_line + 1}-{prompt.end_line}"
        if prompt.end_line > prompt.first_line
        else f"the cursor before line {prompt.first_line + 1}"
    )
    context: list[str] = []
    for path, text in prompt.context.items():
        context += [f"{_CONTEXT} {path}", text, _END]
    header = f"{_FILE} {prompt.path}" + (f" ({prompt.language})" if prompt.language else "")
    shown = prompt.text
    if prompt.shown is not None:
        a, b = prompt.shown
        every = newline_lines(prompt.text)
        shown = "".join(every[a:b])
        header += f" lines {a + 1}-{b} of {len(every)}"
    file = [header, shown, _END]
    task = [f"{_SELECTION} {prompt.path} {where}", numbered, _END, f"{_INSTRUCTION}", prompt.instruction, _END]
    return [
        {"role": "system", "content": EDIT_SYSTEM_PROMPT},
        *([{"role": "user", "content": "\n".join(context)}] if context else []),
        {"role": "user", "content": "\n".join(file)},
        {"role": "user", "content": "\n".join(task) + "\nAnswer with SEARCH/REPLACE blocks."},
    ]


def draft_check_message(draft: str) -> str:
    """The user message after an edit prompt that asks the accurate model to check a fast model's draft."""
    return f"{DRAFT_MARKER}\n{draft.rstrip()}\n{_END}\n{_CHECK_REQUEST}"


def keeps_draft(answer: str) -> bool:
    """Whether a checker's answer keeps the draft: KEEP on its first line, and no blocks of its own."""
    lines = answer.strip().splitlines()
    return bool(lines) and lines[0].strip().strip(".").upper() == KEEP_ANSWER and "<<<<<<< SEARCH" not in answer


_MARKERS = (_FILE, _CONTEXT, _SELECTION, _INSTRUCTION)
_RANGE = re.compile(r"lines (\d+)-(\d+)$|the cursor before line (\d+)$")
_SHOWN = re.compile(r" lines (\d+)-(\d+) of \d+$")


def _sections(content: str) -> list[tuple[str, str, str]]:
    """(marker, header, body) of each section, in order."""
    sections: list[tuple[str, str, str]] = []
    lines = content.split("\n")
    i = 0
    while i < len(lines):
        marker = next((m for m in _MARKERS if lines[i].startswith(m)), None)
        if marker is None:
            i += 1
            continue
        header = lines[i][len(marker) :].strip()
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i] != _END:
            body.append(lines[i])
            i += 1
        sections.append((marker, header, "\n".join(body)))
        i += 1
    return sections


def _text(content: object) -> str:
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return content if isinstance(content, str) else ""


def read_edit_prompt(messages: list[dict[str, str]]) -> EditPrompt | None:
    """The `EditPrompt` that `edit_messages` built these messages from; None if they are not ours. Contents
    are strings, or lists of text blocks (as Anthropic's Messages API sends them)."""
    texts = [_text(m.get("content", "")) for m in messages if m.get("role") != "system"]
    if not any(_INSTRUCTION in text for text in texts):
        return None
    content = "\n".join(texts)
    path, text, instruction, language = "", "", "", ""
    first = end = 0
    shown: tuple[int, int] | None = None
    context: dict[str, str] = {}
    # Sections are read in order; a file's own text may not contain our markers (they are reserved).
    for marker, header, body in _sections(content):
        if marker == _FILE:
            part = _SHOWN.search(header)
            if part is not None:
                header = header[: part.start()]
                shown = (int(part.group(1)) - 1, int(part.group(2)))
            name, _, lang = header.partition(" (")
            path, text, language = name, body, lang.rstrip(")")
        elif marker == _SELECTION:
            found = _RANGE.search(header)
            if found is None:
                return None
            if found.group(3):
                first = end = int(found.group(3)) - 1
            else:
                first, end = int(found.group(1)) - 1, int(found.group(2))
        elif marker == _CONTEXT:
            context[header] = body
        else:
            instruction = body
    if not path:
        return None
    return EditPrompt(
        path=path,
        text=text,
        first_line=first,
        end_line=end,
        instruction=instruction,
        context=context,
        language=language,
        shown=shown,
    )
