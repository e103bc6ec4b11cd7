"""What a replay types: real source files, and the span removed from each that the "user" types back.

Files are the ones named, or by default a deterministic sample of the Python standard library's own
source on this machine. Each session removes one span, chosen deterministically from the seed:

    body    the body of a function (after its docstring), as if the user had just typed the `def` line
    lines   a few consecutive lines, from the first one's indentation to the last one's end
    inline  part of one line: from an opening bracket, `=` or `.` to the end of its bracketed part or line

Spans are whole characters of the file, so the text before and after them is exactly the file's.
"""

from __future__ import annotations

import ast
import os
import pathlib
import random
import sysconfig
from dataclasses import dataclass

KINDS: tuple[str, ...] = ("body", "lines", "inline")
# Spans longer than this are cut (at a line end), so one session stays short.
MAX_SPAN_CHARS = 480
MIN_SPAN_CHARS = 12
_MIN_FILE_BYTES = 4_000
_MAX_FILE_BYTES = 120_000
# Standard-library directories that are tests, tools, generated data or platform-specific.
_SKIP_DIRS = frozenset(
    {
        "test",
        "tests",
        "idlelib",
        "site-packages",
        "dist-packages",
        "lib2to3",
        "turtledemo",
        "tkinter",
        "pydoc_data",
        "encodings",
        "ensurepip",
        "distutils",
        "lib-dynload",
        "__pycache__",
    }
)


class SourceError(Exception):
    """No usable source file or span; the message says what was wrong."""


@dataclass(frozen=True, kw_only=True)
class Task:
    """One session's work: `path`'s text with `text[start:end]` removed, to be typed back."""

    path: pathlib.Path
    text: str
    start: int
    end: int
    kind: str

    @property
    def span(self) -> str:
        return self.text[self.start : self.end]

    @property
    def opened_text(self) -> str:
        """The document as first opened: the file without the span."""
        return self.text[: self.start] + self.text[self.end :]

    @property
    def uri(self) -> str:
        return self.path.resolve().as_uri()

    @property
    def language_id(self) -> str:
        return _LANGUAGES.get(self.path.suffix, "plaintext")


_LANGUAGES = {".py": "python", ".pyi": "python", ".js": "javascript", ".ts": "typescript", ".rs": "rust"}
_LANGUAGES |= {".go": "go", ".c": "c", ".h": "c", ".java": "java", ".lua": "lua", ".md": "markdown"}
SOURCE_SUFFIXES: frozenset[str] = frozenset(_LANGUAGES)


def stdlib_files() -> list[pathlib.Path]:
    """The standard library's Python sources of moderate size, in a stable order."""
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    found: list[pathlib.Path] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(("config-", ".")))
        for name in sorted(filenames):
            if not name.endswith(".py") or name.startswith("_sysconfigdata"):
                continue
            path = pathlib.Path(directory, name)
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if _MIN_FILE_BYTES <= size <= _MAX_FILE_BYTES:
                found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def sample_files(count: int, *, seed: int) -> list[pathlib.Path]:
    """`count` standard-library files chosen by `seed` (the same on any machine with the same Python)."""
    pool = stdlib_files()
    if not pool:
        raise SourceError(f"found no Python sources under {sysconfig.get_paths()['stdlib']}")
    return random.Random(f"tandem-replay-files:{seed}").sample(pool, min(count, len(pool)))


def read_source(path: pathlib.Path) -> str:
    """The file's text (UTF-8); SourceError if it cannot be read or is not text."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SourceError(f"cannot read {path}: {error.strerror or error}") from None
    if b"\x00" in data:
        raise SourceError(f"{path} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceError(f"{path} is not UTF-8 text") from None


def make_tasks(paths: list[pathlib.Path], sessions: int, *, seed: int) -> list[Task]:
    """`sessions` tasks over `paths` (cycling through them), each with a span chosen by `seed`."""
    texts = {path: read_source(path) for path in paths}
    tasks: list[Task] = []
    for index in range(sessions * 4 + len(paths)):
        if len(tasks) == sessions:
            break
        path = paths[index % len(paths)]
        if "\r" in texts[path]:
            continue  # editors disagree on what a lone \r means, so positions would not be comparable
        rng = random.Random(f"tandem-replay-span:{seed}:{index}:{path.name}")
        span = choose_span(texts[path], KINDS[index % len(KINDS)], rng, python=path.suffix in (".py", ".pyi"))
        if span is not None:
            start, end, kind = span
            tasks.append(Task(path=path, text=texts[path], start=start, end=end, kind=kind))
    if not tasks:
        raise SourceError("no span to type in the given files (they may be empty or have only short lines)")
    return tasks


def choose_span(text: str, kind: str, rng: random.Random, *, python: bool) -> tuple[int, int, str] | None:
    """(start, end, kind) of a span of `text` of the wanted kind, else of another kind; None if none fits."""
    order = [kind] + [k for k in KINDS if k != kind]
    line_starts = _line_starts(text)
    tree = _parse(text) if python else None
    # In Python, spans start on lines where a statement starts (never inside a docstring).
    code_lines = {n.lineno - 1 for n in ast.walk(tree) if isinstance(n, ast.stmt)} if tree is not None else None
    for wanted in order:
        if wanted == "body":
            candidates = _body_spans(text, line_starts, tree) if tree is not None else []
        elif wanted == "lines":
            candidates = _line_spans(text, line_starts, code_lines)
        else:
            candidates = _inline_spans(text, line_starts, code_lines)
        if candidates:
            start, end = rng.choice(candidates)
            return start, _cap(text, start, end), wanted
    return None


def _line_starts(text: str) -> list[int]:
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def _line_end(text: str, line_starts: list[int], line: int) -> int:
    """Offset of the end of 0-based `line` (before its newline)."""
    if line + 1 < len(line_starts):
        return line_starts[line + 1] - 1
    return len(text)


def _cap(text: str, start: int, end: int) -> int:
    """`end`, or an earlier line end if the span would be longer than MAX_SPAN_CHARS."""
    if end - start <= MAX_SPAN_CHARS:
        return end
    cut = text.rfind("\n", start, start + MAX_SPAN_CHARS)
    return cut if cut > start + MIN_SPAN_CHARS else start + MAX_SPAN_CHARS


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _body_spans(text: str, line_starts: list[int], tree: ast.Module) -> list[tuple[int, int]]:
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        if (
            len(body) > 1
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body = body[1:]
        first, last = body[0], body[-1]
        if first.lineno == node.lineno or last.end_lineno is None:
            continue  # a one-line `def f(): return x` has no body of its own lines
        # ast columns count UTF-8 bytes; the line's own indentation is the same in characters.
        line_text = text[line_starts[first.lineno - 1] : _line_end(text, line_starts, first.lineno - 1)]
        start = line_starts[first.lineno - 1] + len(line_text) - len(line_text.lstrip())
        end = _line_end(text, line_starts, last.end_lineno - 1)
        if MIN_SPAN_CHARS <= end - start and 1 <= last.end_lineno - first.lineno < 14:
            spans.append((start, end))
    return spans


def _line_spans(text: str, line_starts: list[int], code_lines: set[int] | None) -> list[tuple[int, int]]:
    lines = text.split("\n")
    spans = []
    for index, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#") or (code_lines is not None and index not in code_lines):
            continue
        start = line_starts[index] + len(line) - len(line.lstrip())
        last = index
        # Up to four lines, stopping before a blank line so a span never runs into the next block.
        while last + 1 < len(lines) and last - index < 3 and lines[last + 1].strip():
            last += 1
        end = _line_end(text, line_starts, last)
        if end - start >= MIN_SPAN_CHARS * 2:
            spans.append((start, end))
    return spans[::3]


_OPENERS = "([{"
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def _inline_spans(text: str, line_starts: list[int], code_lines: set[int] | None) -> list[tuple[int, int]]:
    spans = []
    for index, line in enumerate(text.split("\n")):
        content = line.strip()
        if len(content) < 24 or content.startswith("#") or (code_lines is not None and index not in code_lines):
            continue
        base = line_starts[index]
        for column, char in enumerate(line):
            if column < len(line) - len(line.lstrip()):
                continue
            if char in _OPENERS:
                close = _matching(line, column)
                end = close if close is not None and close - column > MIN_SPAN_CHARS else len(line)
                spans.append((base + column + 1, base + end))
                break
            if char in "=." and 0 < column < len(line) - MIN_SPAN_CHARS:
                # After `x = ` rather than `x =`: the space is typed before anything is suggested.
                start = column + 1 + len(line[column + 1 :]) - len(line[column + 1 :].lstrip(" "))
                spans.append((base + start, base + len(line)))
                break
    return [(s, e) for s, e in spans if e - s >= MIN_SPAN_CHARS]


def _matching(line: str, column: int) -> int | None:
    """Column of the bracket that closes the one at `column` on the same line (quotes not parsed)."""
    depth = 0
    for at in range(column, len(line)):
        if line[at] in _OPENERS:
            depth += 1
        elif line[at] in _CLOSERS.values():
            depth -= 1
            if depth == 0:
                return at
    return None
