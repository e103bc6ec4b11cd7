"""Is an edit safe to apply? Parse checks and a size check, before anything reaches the user's files.

- Python files (`.py`, `.pyi`) must still parse with `ast`, unless they did not parse before either.
- Other files get a bracket and quote balance check: the edit may not leave the file less balanced
  than it was (comments and strings are skipped with a small per-language lexer; a file that was
  already unbalanced is judged by whether the edit made it worse).
- With `check_names` (the fast model's answers), a Python file may not gain a name that is used but
  defined nowhere (pyflakes' undefined names): a name swapped for another or made up parses fine and
  fails only when run. Names that were already undefined before the edit do not count.
- A change far larger than predicted is suspicious for a fast model: it is rejected so the caller can
  escalate. The prediction is the selection's (`predicted_lines`: a rewrite of it); the primary file's
  change may be up to 4x that, and at least 40 lines. Nothing selected (an insertion point, a new file)
  predicts no size. Whatever was predicted, an answer that rewrites most of an existing file outside
  the prediction (re-indented, reformatted, regenerated) is far larger than asked.

`validate_edits` returns a value with every problem in words; `require_valid` raises `EditInvalid`.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyflakes import messages as pyflakes_messages
from pyflakes.checker import Checker

from tandem.completion.edit.file_edits import EditInvalid, FileEdit, apply_all, changed_lines, removed_lines

_PAIRS = {")": "(", "]": "[", "}": "{"}
_HASH_COMMENT = (".py", ".pyi", ".sh", ".bash", ".rb", ".toml", ".yaml", ".yml", ".pl", ".r", ".nix", ".cfg")
_DASH_COMMENT = (".lua", ".sql", ".hs", ".elm")
_SEMI_COMMENT = (".el", ".lisp", ".clj", ".scm", ".ini")
# Languages where a single quote is not a string delimiter (lifetimes, quoting, apostrophes in text).
_NO_SINGLE_QUOTE = (".rs", ".el", ".lisp", ".clj", ".scm", ".md", ".txt", ".rst", ".html", ".xml")
# Where a backtick opens a string that may span lines.
_BACKTICK = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".go")
_UNCHECKED = (".md", ".txt", ".rst", ".html", ".xml", ".svg", ".csv")


@dataclass(frozen=True, kw_only=True)
class ValidationLimits:
    """When a change counts as far larger than predicted."""

    growth_factor: float = 4.0
    min_lines: int = 40
    # A file of at least `rewrite_min_lines` lines with at least this share of them removed is rewritten.
    rewrite_share: float = 0.5
    rewrite_min_lines: int = 20
    # Names are checked in files up to this size (pyflakes takes ~0.3 s on 200 KB, before and after).
    names_max_chars: int = 200_000


@dataclass(frozen=True, kw_only=True)
class Validation:
    """The verdict on a set of edits: `ok`, and every problem found, in words."""

    ok: bool
    problems: tuple[str, ...] = ()
    changed_lines: int = 0


def balance_issues(text: str, path: str) -> int:
    """How unbalanced `text` is: unmatched or mismatched brackets plus unterminated strings."""
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if suffix in _UNCHECKED:
        return 0
    line_comment = (
        "#"
        if suffix in _HASH_COMMENT
        else "--"
        if suffix in _DASH_COMMENT
        else ";"
        if suffix in _SEMI_COMMENT
        else "//"
    )
    block_comment = suffix not in _HASH_COMMENT + _DASH_COMMENT + _SEMI_COMMENT
    quotes = '"' + ("" if suffix in _NO_SINGLE_QUOTE else "'") + ("`" if suffix in _BACKTICK else "")
    triple = suffix in (".py", ".pyi")
    stack: list[str] = []
    issues = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith(line_comment, i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
        elif block_comment and text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0:
                return issues + len(stack) + 1
            i = close + 2
        elif ch in quotes:
            delim = ch * 3 if triple and text.startswith(ch * 3, i) else ch
            end, ok = _string_end(text, i + len(delim), delim, multiline=len(delim) == 3 or ch == "`")
            issues += 0 if ok else 1
            i = end
        elif ch in "([{":
            stack.append(ch)
            i += 1
        elif ch in _PAIRS:
            opener = _PAIRS[ch]
            if opener in stack:
                # Close the nearest matching opener; whatever was opened after it is left unclosed.
                depth = len(stack) - 1 - stack[::-1].index(opener)
                issues += len(stack) - 1 - depth
                del stack[depth:]
            else:
                issues += 1
            i += 1
        else:
            i += 1
    return issues + len(stack)


def _string_end(text: str, i: int, delim: str, *, multiline: bool) -> tuple[int, bool]:
    """(index after the string, whether it was closed) for a string whose body starts at `i`."""
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
        elif text.startswith(delim, i):
            return i + len(delim), True
        elif text[i] == "\n" and not multiline:
            return i, False
        else:
            i += 1
    return n, False


def _tree(text: str) -> ast.Module | str:
    """The parsed module, or the syntax error in words."""
    try:
        with warnings.catch_warnings():
            # Invalid escape sequences in the user's code are warnings, not our failure.
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}"
    except ValueError as error:  # null bytes
        return str(error)


def _parses(text: str) -> str | None:
    """None if `text` is valid Python, else the syntax error in words."""
    tree = _tree(text)
    return tree if isinstance(tree, str) else None


_UNDEFINED = (pyflakes_messages.UndefinedName, pyflakes_messages.UndefinedLocal)


def _undefined_names(tree: ast.Module, path: str) -> list[tuple[str, int]]:
    """(name, line) of every use of a name defined nowhere in reach, as pyflakes finds them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = Checker(tree, filename=path).messages
    return [(str(m.message_args[0]), int(m.lineno)) for m in found if isinstance(m, _UNDEFINED)]


def new_undefined_names(before: str, after: ast.Module, path: str) -> list[tuple[str, int]]:
    """Uses in `after` (parsed) of undefined names that `before` did not use at all (a name already
    undefined may be defined in ways pyflakes cannot see, such as builtins installed at run time); []
    when `before` does not parse (its names cannot be told apart then)."""
    old_tree = _tree(before)
    if isinstance(old_tree, str):
        return []
    already = {name for name, _ in _undefined_names(old_tree, path)}
    return [(name, line) for name, line in _undefined_names(after, path) if name not in already]


def validate_edits(
    originals: Mapping[str, str],
    edits: Sequence[FileEdit],
    *,
    predicted_lines: int | None = None,
    primary: str | None = None,
    check_names: bool = False,
    limits: ValidationLimits | None = None,
) -> Validation:
    """Check `edits` over `originals`: every edited file still parses (or balances), gains no undefined
    name (with `check_names`), and the change is not far larger than `predicted_lines` (no size checks
    when None). With `primary`, the prediction is about that file's change (other files are held only
    to the rewrite check); without, the total."""
    limits = limits or ValidationLimits()
    problems: list[str] = []
    for path, after in apply_all(originals, edits).items():
        before = originals.get(path, "")
        if path.endswith((".py", ".pyi")):
            tree = _tree(after)
            if isinstance(tree, str):
                if _parses(before) is None:
                    problems.append(f"{path} would no longer parse ({tree})")
            elif check_names and max(len(before), len(after)) <= limits.names_max_chars:
                fresh = new_undefined_names(before, tree, path)
                if fresh:
                    named = ", ".join(f"{name!r} (line {line})" for name, line in fresh[:3])
                    more = f" and {len(fresh) - 3} more" if len(fresh) > 3 else ""
                    problems.append(f"{path} would use undefined name(s) {named}{more}")
        else:
            worse = balance_issues(after, path) - balance_issues(before, path)
            if worse > 0:
                problems.append(f"{path} would have {worse} more unbalanced bracket(s) or quote(s)")
    changed = changed_lines(originals, edits)
    if predicted_lines is not None:
        problems += _size_problems(originals, edits, predicted_lines, primary, limits, changed)
    return Validation(ok=not problems, problems=tuple(problems), changed_lines=changed)


def _size_problems(
    originals: Mapping[str, str],
    edits: Sequence[FileEdit],
    predicted: int,
    primary: str | None,
    limits: ValidationLimits,
    total: int,
) -> list[str]:
    problems: list[str] = []
    measured = total if primary is None else changed_lines(originals, [e for e in edits if e.path == primary])
    allowed = max(limits.min_lines, int(limits.growth_factor * predicted))
    if predicted > 0 and measured > allowed:
        problems.append(f"the change is {measured} lines, far more than the ~{predicted} expected")
    for path in sorted({e.path for e in edits}):
        before = originals.get(path, "")
        lines = before.count("\n") + (not before.endswith("\n") and bool(before))
        if lines < limits.rewrite_min_lines or (path == primary and predicted >= lines):
            continue
        removed = removed_lines(originals, [e for e in edits if e.path == path])
        if removed >= limits.rewrite_share * lines:
            problems.append(f"the change rewrites {removed} of the {lines} lines of {path}, far more than expected")
    return problems


def require_valid(
    originals: Mapping[str, str],
    edits: Sequence[FileEdit],
    *,
    predicted_lines: int | None = None,
    primary: str | None = None,
    check_names: bool = False,
    limits: ValidationLimits | None = None,
) -> Validation:
    """`validate_edits`, raising `EditInvalid` (all problems in its message) when it fails."""
    verdict = validate_edits(
        originals, edits, predicted_lines=predicted_lines, primary=primary, check_names=check_names, limits=limits
    )
    if not verdict.ok:
        raise EditInvalid("; ".join(verdict.problems))
    return verdict
