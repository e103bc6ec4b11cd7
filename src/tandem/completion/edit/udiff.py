"""Unified diffs from a model: several files, hunks placed by their content.

Models write diffs loosely: line numbers off by a few (or by a lot), hunk counts that do not add up,
`@@ ... @@` with no numbers at all, the `a/` and `b/` prefixes present or not, blank context lines
whose leading space was lost. So a hunk's old lines (context and removals) are searched for in the
file, nearest to the line the header claims; the counts are only used to notice an answer that was
cut off inside its last hunk (there, counts that do not add up mean the answer stopped early).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tandem.completion.edit.file_edits import AnswerParseError, FileEdit, line_offset
from tandem.completion.edit.locate import locate, resolve_path

_HUNK = re.compile(r"^@@+\s*(?:-(\d+)(?:,(\d+))?\s+\+(\d+)(?:,(\d+))?)?[^@]*@@+")
_OLD = re.compile(r"^---\s+(\S+)")
_NEW = re.compile(r"^\+\+\+\s+(\S+)")
_GIT = re.compile(r"^diff --git\s+(\S+)\s+(\S+)")


def looks_like_diff(answer: str) -> bool:
    """True if `answer` has at least one hunk header and a file header or `diff --git` line."""
    has_hunk = any(_HUNK.match(line) for line in answer.splitlines())
    has_file = any(_NEW.match(line) or _GIT.match(line) for line in answer.splitlines())
    return has_hunk and (has_file or answer.lstrip().startswith("@@"))


@dataclass
class _Hunk:
    old_start: int | None  # 1-based, as the header said
    old_count: int | None
    new_count: int | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    changes: int = 0
    new_ends_without_newline: bool = False
    last_tag: str = ""
    # Bare empty lines at the end: context whose space was lost, or the blank line after the diff.
    trailing_bare: int = 0

    def close(self) -> None:
        """Drop trailing bare empty lines: they are more often the gap after the diff than context."""
        for _ in range(self.trailing_bare):
            self.old.pop()
            self.new.pop()
        self.trailing_bare = 0


@dataclass
class _FileDiff:
    old_path: str | None
    new_path: str | None
    hunks: list[_Hunk] = field(default_factory=list)
    from_git: bool = False


def _strip_prefix(name: str, known: Mapping[str, str]) -> str | None:
    if name == "/dev/null":
        return None
    if name[:2] in ("a/", "b/") and name not in known:
        return name[2:]
    return name


def _parse(answer: str, known: Mapping[str, str]) -> tuple[list[_FileDiff], bool]:
    """The files and hunks of `answer`, and whether the answer ended inside a hunk."""
    files: list[_FileDiff] = []
    current: _FileDiff | None = None
    hunk: _Hunk | None = None
    lines = answer.splitlines()
    for i, line in enumerate(lines):
        git = _GIT.match(line)
        old = _OLD.match(line)
        new = _NEW.match(line) if i > 0 and _OLD.match(lines[i - 1]) else None
        header = _HUNK.match(line)
        if hunk is not None and (git or header or (old and i + 1 < len(lines) and _NEW.match(lines[i + 1]))):
            hunk.close()
        if git:
            old_name, new_name = (_strip_prefix(git.group(n), known) for n in (1, 2))
            current, hunk = _FileDiff(old_name, new_name, from_git=True), None
            files.append(current)
        elif old and i + 1 < len(lines) and _NEW.match(lines[i + 1]):
            if current is None or current.hunks or not current.from_git:
                current = _FileDiff(None, None)
                files.append(current)
            current.old_path = _strip_prefix(old.group(1), known)
            hunk = None
        elif new and current is not None:
            current.new_path = _strip_prefix(new.group(1), known)
        elif header:
            if current is None:
                current = _FileDiff(None, None)
                files.append(current)
            numbers = header.groups()
            hunk = _Hunk(
                old_start=int(numbers[0]) if numbers[0] else None,
                old_count=int(numbers[1]) if numbers[1] else (1 if numbers[0] else None),
                new_count=int(numbers[3]) if numbers[3] else (1 if numbers[2] else None),
            )
            current.hunks.append(hunk)
        elif hunk is not None and (line[:1] in (" ", "-", "+", "\\") or line == ""):
            _add_line(hunk, line)
        else:
            if hunk is not None:
                hunk.close()
            hunk = None  # prose, a fence or an `index` line ends the hunk
    ended_inside = hunk is not None
    if hunk is not None:
        hunk.close()
    return files, ended_inside


def _add_line(hunk: _Hunk, line: str) -> None:
    tag, body = (line[0], line[1:]) if line else (" ", "")
    hunk.trailing_bare = hunk.trailing_bare + 1 if line == "" else 0
    if tag == "\\":
        # "\ No newline at end of file" speaks of the line before it.
        if hunk.last_tag in ("+", " "):
            hunk.new_ends_without_newline = True
        return
    hunk.last_tag = tag
    if tag == " ":
        hunk.old.append(body)
        hunk.new.append(body)
        hunk.new_ends_without_newline = False
    elif tag == "-":
        hunk.old.append(body)
        hunk.changes += 1
    else:
        hunk.new.append(body)
        hunk.changes += 1
        hunk.new_ends_without_newline = False


def parse_unified_diff(answer: str, originals: Mapping[str, str], *, primary: str) -> list[FileEdit]:
    """The edits of a unified diff over `originals`; hunks without file headers go to `primary`."""
    files, ended_inside = _parse(answer, originals)
    if ended_inside and files and files[-1].hunks:
        last = files[-1].hunks[-1]
        old_seen = len(last.old)
        new_seen = len(last.new)
        # Counts elsewhere may be miscounted and are forgiven; at the very end of the answer a mismatch
        # (short, or a stray partial line) means the answer was cut off.
        if (last.old_count is not None and old_seen != last.old_count) or (
            last.new_count is not None and new_seen != last.new_count
        ):
            raise AnswerParseError("the diff is cut off inside its last hunk (truncated?)")
        if not answer.endswith("\n") and answer.splitlines()[-1].startswith("+"):
            # An added line with no newline after it may be only the start of that line.
            raise AnswerParseError("the diff may be cut off: its last added line does not end")
    edits: list[FileEdit] = []
    for diff in files:
        edits.extend(_file_edits(diff, originals, primary))
    return edits


def _file_edits(diff: _FileDiff, originals: Mapping[str, str], primary: str) -> list[FileEdit]:
    if diff.old_path is None and diff.new_path is None:
        path: str | None = primary
    elif diff.new_path is None:
        raise AnswerParseError(f"the diff deletes {diff.old_path}; deleting files is not supported")
    else:
        path = diff.new_path if diff.old_path is None else diff.old_path
    assert path is not None
    hunks = [h for h in diff.hunks if h.changes]
    if diff.old_path is None and diff.new_path is not None and resolve_path(path, originals) is None:
        text = "".join(line + "\n" for h in hunks for line in h.new)
        return [FileEdit(path=path, start=0, end=0, new_text=text, creates=True)]
    resolved = resolve_path(path, originals)
    if resolved is None:
        raise AnswerParseError(f"the diff edits {path!r}, a file the model was not shown")
    original = originals[resolved]
    edits: list[FileEdit] = []
    for number, hunk in enumerate(hunks, 1):
        try:
            edits.append(_hunk_edit(resolved, original, hunk))
        except AnswerParseError as error:
            raise AnswerParseError(f"hunk {number} for {resolved}: {error}") from None
    return edits


def _hunk_edit(path: str, original: str, hunk: _Hunk) -> FileEdit:
    replace = "".join(line + "\n" for line in hunk.new)
    if hunk.new_ends_without_newline and replace:
        replace = replace[:-1]
    if not any(line.strip() for line in hunk.old):
        # Nothing to search for: only the header can place it ("-N,0" inserts after line N).
        if hunk.old_start is None:
            raise AnswerParseError("a hunk with no context lines and no line numbers cannot be placed")
        first = hunk.old_start if not hunk.old else hunk.old_start - 1
        start, end = line_offset(original, first), line_offset(original, first + len(hunk.old))
        if original[start:end].strip():
            raise AnswerParseError(f"a hunk with only blank context does not fit line {hunk.old_start}")
        return FileEdit(path=path, start=start, end=end, new_text=replace)
    quote = "".join(line + "\n" for line in hunk.old)
    near = line_offset(original, hunk.old_start - 1) if hunk.old_start else None
    found = locate(original, quote, replace, near=near)
    return FileEdit(path=path, start=found.start, end=found.end, new_text=found.replace)
