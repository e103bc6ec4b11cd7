"""Turning a model's edit answer into `FileEdit`s over the texts the caller handed in.

Three shapes are understood, tried in this order:

1. SEARCH/REPLACE blocks, each after a line naming its file (the path line may be repeated inside a
   code fence, or left out when there is only one file)::

       app/views.py
       <<<<<<< SEARCH
       def index(request):
       =======
       def index(request, page=1):
       >>>>>>> REPLACE

2. Unified diffs (`completion.edit.udiff`), several files, hunks found by content when the line
   numbers are off.
3. One fenced code block: the new text of the whole range (the selection, or the file).

Anything else, and anything cut off mid-way, is an `AnswerParseError` saying what was wrong; an
answer is never applied by guessing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from tandem.completion.edit.file_edits import AnswerParseError, FileEdit, check_disjoint
from tandem.completion.edit.locate import locate, resolve_path
from tandem.completion.edit.udiff import looks_like_diff, parse_unified_diff

_SEARCH = re.compile(r"^\s*<{5,9} ?SEARCH\b.*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9} ?REPLACE\b.*$")
_MARKER_LIKE = re.compile(r"^\s*(?:<{3,}|>{3,}|={7,})")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# A fence whose info string names the file: "```python app/views.py", "```python:app/views.py". The path
# is one run of path characters, checked apart (`_fence_path`): as one pattern, `[\w.-]*[/.][\w./-]+` tried
# every split of a long run (a 28 KB line took 8-10 s, holding the event loop). Each pattern here is a
# sequence of character classes that cannot overlap their neighbours, so a line is read in linear time.
_FENCE_PATH = re.compile(r"^\s*(?:`{3,}|~{3,})\w*[ :]([\w./-]+)\s*$")
# A line that only names a file: "app/views.py", "`app/views.py`", "File: app/views.py", "### app/views.py:".
_PATH_LINE = re.compile(
    r"^\s*(?:#+\s*)?(?:\*\*)?(?:file(?:name)?:\s*)?`?([\w./\\-]+)`?(?:\*\*)?:?\s*$",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+")


def _fence_path(line: str) -> str | None:
    """The file a fence line names: a run with a '/' or '.' that has more after it."""
    match = _FENCE_PATH.match(line)
    if match is None:
        return None
    run = match.group(1)
    return run if any(c in "/." for c in run[:-1]) else None


def _path_line(line: str) -> str | None:
    """The file a line that only names one names: a run ending in `.ext`, or one with a '/' inside (no
    backslash)."""
    match = _PATH_LINE.match(line)
    if match is None:
        return None
    run = match.group(1)
    dot = run.rfind(".")
    if dot >= 1 and _WORD.fullmatch(run, dot + 1):
        return run
    slash = run.find("/")
    if 1 <= slash < len(run) - 1 and "\\" not in run:
        return run
    return None


@dataclass(frozen=True, kw_only=True)
class EditTarget:
    """What the answer is about: the files the model saw, and the file and range the user selected."""

    originals: Mapping[str, str]
    primary: str
    # Offsets into originals[primary]; None means the whole file.
    selection: tuple[int, int] | None = None
    # Offsets of the part of originals[primary] the model was shown, when it saw only part (a file too
    # long for the window): the answer is read against that part alone. None: the whole file.
    shown: tuple[int, int] | None = None


def parse_answer(answer: str, target: EditTarget) -> list[FileEdit]:
    """The edits a model's `answer` asks for, over `target.originals`.

    Raises `AnswerParseError` for an empty, malformed or truncated answer, for text that cannot be
    found (or is ambiguous) in the file it names, for unknown files, and for overlapping changes.
    """
    if target.primary not in target.originals:
        raise ValueError(f"primary file {target.primary!r} is not among the originals")
    if target.shown is not None:
        return _in_part(answer, target, *target.shown)
    if not answer.strip():
        raise AnswerParseError("the model's answer is empty")
    lines = answer.splitlines()
    if any(_SEARCH.match(line) for line in lines):
        edits = _search_replace(lines, target)
    elif looks_like_diff(answer):
        edits = parse_unified_diff(answer, target.originals, primary=target.primary)
    else:
        edits = [_whole_range(answer, target)]
    if not edits:
        raise AnswerParseError("the answer contains no changes")
    check_disjoint(edits)
    return edits


def _in_part(answer: str, target: EditTarget, start: int, end: int) -> list[FileEdit]:
    """The answer read against the shown part of the primary file, its edits moved to the whole file's
    offsets: text the model quotes is looked for only where it could have read it."""
    primary = target.primary
    selection = None
    if target.selection is not None:
        selection = (max(target.selection[0], start) - start, min(target.selection[1], end) - start)
    part = EditTarget(
        originals={**target.originals, primary: target.originals[primary][start:end]},
        primary=primary,
        selection=selection,
    )
    return [
        replace(e, start=e.start + start, end=e.end + start) if e.path == primary and not e.creates else e
        for e in parse_answer(answer, part)
    ]


def _search_replace(lines: list[str], target: EditTarget) -> list[FileEdit]:
    edits: list[FileEdit] = []
    path: str | None = None
    named: str | None = None  # the last path line as written, for error messages
    i = 0
    block = 0
    while i < len(lines):
        line = lines[i]
        if _SEARCH.match(line):
            block += 1
            search, replace, i = _read_block(lines, i + 1, block)
            label = named or target.primary
            edits.append(_block_edit(path or target.primary, label, search, replace, target, block))
            continue
        if _MARKER_LIKE.match(line) and not _FENCE.match(line):
            raise AnswerParseError(f"malformed edit marker outside a block: {line.strip()[:40]!r}")
        found = _fence_path(line) or (None if _FENCE.match(line) else _path_line(line))
        if found:
            named = found
            resolved = resolve_path(named, target.originals)
            path = resolved if resolved is not None else named
        i += 1
    return edits


def _read_block(lines: list[str], i: int, block: int) -> tuple[str, str, int]:
    """(search text, replace text, index after the block) for the block whose body starts at line `i`."""
    search: list[str] = []
    replace: list[str] = []
    part = search
    while i < len(lines):
        line = lines[i]
        if _SEARCH.match(line):
            raise AnswerParseError(f"block {block}: a new SEARCH starts before the previous one ended")
        if _DIVIDER.match(line) and part is search:
            part = replace
        elif _REPLACE.match(line):
            if part is search:
                raise AnswerParseError(f"block {block}: REPLACE marker without a ======= divider")
            return _joined(search), _joined(replace), i + 1
        else:
            part.append(line)
        i += 1
    missing = "=======" if part is search else ">>>>>>> REPLACE"
    raise AnswerParseError(f"block {block} is cut off: no {missing} before the answer ends (truncated?)")


def _joined(lines: list[str]) -> str:
    return "".join(line + "\n" for line in _unnumbered(lines))


# The prompt shows the selected lines as `{number:>5}| {line}` under a `path lines a-b` header
# (`completion.edit.prompt`); a small model copies that view into its blocks (Qwen2.5-Coder 1.5B in
# llama.cpp did, for every block).
_NUMBERED = re.compile(r"^ *\d+\| ?")
_VIEW_HEADER = re.compile(r"^\S*\s*lines \d+-\d+( of \d+)?\s*$")


def _unnumbered(lines: list[str]) -> list[str]:
    """A block's lines without the prompt's numbered view, when every line of it is in that view."""
    body = lines[1:] if lines and _VIEW_HEADER.match(lines[0]) else lines
    if body and all(_NUMBERED.match(line) for line in body):
        return [_NUMBERED.sub("", line, count=1) for line in body]
    return lines


def _block_edit(path: str, label: str, search: str, replace: str, target: EditTarget, block: int) -> FileEdit:
    original = target.originals.get(path)
    if original is None:
        if search.strip():
            raise AnswerParseError(f"block {block} edits {label!r}, a file the model was not shown")
        return FileEdit(path=path, start=0, end=0, new_text=replace, creates=True)
    if not search.strip():
        if original.strip():
            raise AnswerParseError(f"block {block} for {label}: empty SEARCH on a file that is not empty")
        return FileEdit(path=path, start=0, end=len(original), new_text=replace)
    within = target.selection if path == target.primary else None
    try:
        found = locate(original, search, replace, within=within)
    except AnswerParseError as error:
        raise AnswerParseError(f"block {block} for {label}: {error}") from None
    return FileEdit(path=path, start=found.start, end=found.end, new_text=found.replace)


def _whole_range(answer: str, target: EditTarget) -> FileEdit:
    """The answer's one fenced block as the new text of the selection (or of the whole file)."""
    blocks: list[str] = []
    lines = answer.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence = opening.group(1)
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise AnswerParseError("the code block is cut off: no closing fence (truncated?)")
        blocks.append(_joined(body))
        i += 1
    if not blocks:
        raise AnswerParseError("the answer has no SEARCH/REPLACE blocks, no diff and no code block")
    if len(blocks) > 1:
        raise AnswerParseError(f"the answer has {len(blocks)} code blocks; expected one for the range")
    original = target.originals[target.primary]
    start, end = target.selection if target.selection is not None else (0, len(original))
    new_text = blocks[0]
    if not original[start:end].endswith("\n") and new_text.endswith("\n"):
        new_text = new_text[:-1]
    return FileEdit(path=target.primary, start=start, end=end, new_text=new_text)
