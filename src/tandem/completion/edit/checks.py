"""Checking a model's answer to an edit against the files as they are now, off the event loop.

`check_answer` reads the current texts on the loop (the versions recorded are those of these texts), then
parses, validates and rebases the answer in a worker thread (`answer.checked_edits`): parsing and
name-checking a large file takes a noticeable time, and completions must not wait. A fast model's answer
is held to more than an accurate one's: to the route's predicted size, to defined names, and to the names
other files still import from what it removed (`check_references`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import TypeVar

import anyio

from tandem.completion.edit.answer import CheckedEdit, checked_edits
from tandem.completion.edit.file_edits import EditInvalid, FileEdit, apply_all
from tandem.completion.edit.parse import EditTarget
from tandem.completion.edit.references import dangling_references, removed_names
from tandem.completion.edit.types import EditInputs

_T = TypeVar("_T")

__all__ = ["check_answer", "check_references", "one_at_a_time"]

# Checks that parse (ast, pyflakes) run in worker threads one at a time: CPython 3.11's ast module keeps
# its recursion depth in state the threads share, so two parses at once can fail with "SystemError: AST
# constructor recursion depth mismatch" (https://github.com/python/cpython/issues/106905); a hedged edit
# checks two answers at nearly the same time.
_PARSING = threading.Lock()


def one_at_a_time(work: Callable[[], _T]) -> _T:
    with _PARSING:
        return work()


async def check_answer(
    answer: str, target: EditTarget, inputs: EditInputs, *, fast: bool, predicted_lines: int | None
) -> tuple[CheckedEdit, Mapping[str, str]]:
    """Check `answer` against the files of `target` as they are now; (the checked edits, the texts they
    apply to). `fast`: the answer is the fast model's, and `predicted_lines` the route's expected size.
    Raises the check's `CompletionError`."""
    current = inputs.current_texts(list(target.originals))
    check = functools.partial(
        checked_edits,
        answer,
        target,
        current=current,
        # Only the fast model's answers are held to the predicted size and to defined names: it is the
        # one that rambles or guesses when a task is beyond it, and its rejected answer has somewhere to go.
        predicted_lines=predicted_lines if fast else None,
        check_names=fast,
    )
    result = await anyio.to_thread.run_sync(one_at_a_time, check)
    if fast:
        await check_references(result.edits, current, inputs)
    return result, current


async def check_references(edits: tuple[FileEdit, ...], current: Mapping[str, str], inputs: EditInputs) -> None:
    """Raise `EditInvalid` if the edits remove a module-level name that another file still imports
    (`completion.edit.references`): the change was made in one file and forgotten in another."""
    symbols = inputs.route.symbols
    if symbols is None:
        return
    after = apply_all(current, edits)
    before = {path: current[path] for path in after if path in current}
    removed = await anyio.to_thread.run_sync(one_at_a_time, functools.partial(removed_names, before, after))
    if not removed:
        return
    problems = dangling_references(removed, after, files_using=symbols.files_using, read_text=inputs.read_text)
    if problems:
        more = f" (and {len(problems) - 2} more)" if len(problems) > 2 else ""
        raise EditInvalid("; ".join(problems[:2]) + more)
