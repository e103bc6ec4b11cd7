"""What a wrong edit answer looks like: the files' texts after each kind of `error_model.Mistake`.

Every mistake starts from the true edit (the shown files and their texts after it) and changes it the way
models get edits wrong: a hunk left unbalanced, one place or one file left out, a change made a few lines
away, a wrong name or number, or the whole file rewritten with other indentation. Simulated, all of it.
"""

from __future__ import annotations

import ast
import difflib
import keyword
import random
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from tandem.sim.error_model import Mistake

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"\b\d+\b")
_FALLBACK_NAMES = ("value", "result", "data", "item", "index", "count", "node", "tmp", "other", "key")


@dataclass(frozen=True)
class Hunk:
    """One place that changes: old lines [i1, i2) become new lines [j1, j2)."""

    i1: int
    i2: int
    j1: int
    j2: int


@lru_cache(maxsize=128)
def _opcodes(old: str, new: str) -> tuple[tuple[str, int, int, int, int], ...]:
    # Cached: one request diffs the same pair for its difficulty, its blocks and its report.
    matcher = difflib.SequenceMatcher(
        None, old.splitlines(keepends=True), new.splitlines(keepends=True), autojunk=False
    )
    return tuple(matcher.get_opcodes())


def hunks_of(old: str, new: str) -> list[Hunk]:
    """The places where `new` differs from `old`, by lines; changes at most 2 equal lines apart are one."""
    hunks: list[Hunk] = []
    for tag, i1, i2, j1, j2 in _opcodes(old, new):
        if tag == "equal":
            continue
        last = hunks[-1] if hunks else None
        if last is not None and i1 - last.i2 <= 2:
            hunks[-1] = Hunk(last.i1, i2, last.j1, j2)
        else:
            hunks.append(Hunk(i1, i2, j1, j2))
    return hunks


def changed_line_count(old: str, new: str) -> int:
    """Lines removed plus lines added."""
    return sum((i2 - i1) + (j2 - j1) for tag, i1, i2, j1, j2 in _opcodes(old, new) if tag != "equal")


def breaks_syntax(path: str, before: str, after: str) -> bool:
    """Whether `after` fails the check `before` passed: Python's parser for .py, bracket balance otherwise."""
    if path.endswith((".py", ".pyi")):
        return _parses(before) and not _parses(after)
    return _imbalance(after) > _imbalance(before)


_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _imbalance(text: str) -> int:
    """Brackets left open, closed without an opener, or closed by the wrong kind, outside quotes and
    comments (`//`, `#`, `/* */`): a rough, language-blind count, enough to tell that a hunk broke a file."""
    stack: list[str] = []
    issues = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "#" or text.startswith("//", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0:
                return issues + len(stack) + 1
            i = close + 2
        elif ch in "\"'`":
            i += 1
            while i < n and text[i] != ch and (ch == "`" or text[i] != "\n"):
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif ch in "([{":
            stack.append(ch)
            i += 1
        elif ch in _CLOSERS:
            if stack and stack[-1] == _CLOSERS[ch]:
                stack.pop()
            else:
                issues += 1
            i += 1
        else:
            i += 1
    return issues + len(stack)


@lru_cache(maxsize=64)
def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the code are not our concern here
            ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


Texts = Mapping[str, str]


def make_mistake(kind: Mistake, originals: Texts, truth: Texts, rng: random.Random) -> dict[str, str] | None:
    """The files' texts after a wrong edit of this kind, or None when this kind cannot happen here.

    `originals` are the files as shown; `truth` their texts after the right edit (changed files only)."""
    lines = {
        path: (originals[path].splitlines(keepends=True), text.splitlines(keepends=True))
        for path, text in truth.items()
    }
    hunks = [(path, hunk) for path, text in truth.items() for hunk in hunks_of(originals[path], text)]
    rng.shuffle(hunks)
    wrong = dict(truth)
    if kind is Mistake.MISSING_FILE:
        if len(truth) < 2:
            return None
        del wrong[rng.choice(sorted(truth))]
        return wrong
    if kind is Mistake.DROPPED_HUNK:
        if len(hunks) < 2:
            return None
        path, hunk = hunks[0]
        old, new = lines[path]
        wrong[path] = "".join(new[: hunk.j1] + old[hunk.i1 : hunk.i2] + new[hunk.j2 :])
        return wrong
    if kind is Mistake.OVERSIZED:
        path = max(truth, key=lambda p: len(truth[p]))
        wrong[path] = _reindent(truth[path])
        return wrong if wrong[path] != truth[path] else None
    for path, hunk in hunks:
        old, new = lines[path]
        changed = _change_hunk(kind, path, old, new, hunk, originals[path], rng)
        if changed is not None and changed != truth[path]:
            wrong[path] = changed
            return wrong
    return None


def _change_hunk(
    kind: Mistake, path: str, old: list[str], new: list[str], hunk: Hunk, original: str, rng: random.Random
) -> str | None:
    added = new[hunk.j1 : hunk.j2]
    if kind is Mistake.SYNTAX:
        for at in rng.sample(range(len(added)), len(added)):
            for variant in (_cut_closing(added[at]), _dangling_open(added[at])):
                if variant is None:
                    continue
                text = "".join([*new[: hunk.j1 + at], variant, *new[hunk.j1 + at + 1 :]])
                if breaks_syntax(path, original, text):
                    return text
        return None
    if kind is Mistake.WRONG_VALUE:
        if not added:
            # A pure deletion: delete one line too many.
            return "".join(new[: hunk.j1] + new[hunk.j1 + 1 :]) if hunk.j1 < len(new) else None
        vocabulary = sorted({w for w in _IDENTIFIER.findall(original) if not keyword.iskeyword(w)}) or list(
            _FALLBACK_NAMES
        )
        for at in rng.sample(range(len(added)), len(added)):
            line = _wrong_value(added[at], vocabulary, rng)
            if line is not None:
                return "".join([*new[: hunk.j1 + at], line, *new[hunk.j1 + at + 1 :]])
        return None
    # WRONG_PLACE: the same change, made a few lines away.
    reverted = new[: hunk.j1] + old[hunk.i1 : hunk.i2] + new[hunk.j2 :]
    span = hunk.i2 - hunk.i1
    here = hunk.j1
    indent = _indent(reverted[here] if here < len(reverted) else reverted[-1] if reverted else "")
    places = [
        k
        for k in range(max(0, here - 12), min(len(reverted) - span, here + 12) + 1)
        if (k + span <= here or k >= here + span) and k != here and k < len(reverted)
        and reverted[k].strip() and _indent(reverted[k]) == indent
    ]  # fmt: skip
    if not places or not added:
        return None
    k = rng.choice(places)
    return "".join(reverted[:k] + added + reverted[k + span :])


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _split_eol(line: str) -> tuple[str, str]:
    body = line.rstrip("\r\n")
    return body, line[len(body) :]


def _cut_closing(line: str) -> str | None:
    """The line cut just before its last closing bracket: `print(message)` -> `print(message`."""
    body, eol = _split_eol(line)
    at = max(body.rfind(")"), body.rfind("]"), body.rfind("}"))
    if at <= 0 or body.lstrip().startswith(("#", "//")):
        return None
    return body[:at] + eol


def _dangling_open(line: str) -> str | None:
    """The line with an unclosed call started at its end, as a model cut off mid-expression writes it."""
    body, eol = _split_eol(line)
    if not body.strip() or body.lstrip().startswith(("#", "//", "*", "/*")):
        return None
    return body + " (" + eol


def _wrong_value(line: str, vocabulary: list[str], rng: random.Random) -> str | None:
    body, eol = _split_eol(line)
    if body.lstrip().startswith(("#", "//")):
        return None
    numbers = list(_NUMBER.finditer(body))
    names = [m for m in _IDENTIFIER.finditer(body) if not keyword.iskeyword(m.group(0))]
    if numbers and (not names or rng.random() < 0.4):
        m = rng.choice(numbers)
        return body[: m.start()] + str(int(m.group(0)) + rng.randint(1, 9)) + body[m.end() :] + eol
    if not names:
        return None
    m = rng.choice(names)
    choices = [w for w in vocabulary if w != m.group(0)]
    if not choices:
        return None
    return body[: m.start()] + rng.choice(choices) + body[m.end() :] + eol


def _reindent(text: str) -> str:
    """`text` re-indented as a model that rewrites a whole file might: 4-space levels halved (2-space
    levels doubled), tabs as 4 spaces."""
    lines = text.splitlines(keepends=True)
    widths = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip() and line.startswith(" ")]
    four = sum(1 for w in widths if w % 4 == 0) >= len(widths) / 2 and bool(widths)
    out: list[str] = []
    for line in lines:
        stripped = line.lstrip(" \t")
        lead = line[: len(line) - len(stripped)]
        width = len(lead.expandtabs(4))
        if not stripped.strip() or not lead:
            out.append(line)
            continue
        out.append(" " * (width // 2 if four else width * 2) + stripped)
    return "".join(out)
