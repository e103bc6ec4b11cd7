"""The router's git inputs for an edit, under one total deadline, cached per file and HEAD.

The router reads, besides the request: the change in progress (`working_diff`), the edited file's history,
its selected lines' history and the repository's last commits (`file_history`). Each is a bounded git call
(`file_history.TIMEOUT_S` each); in a long history they took seconds between the command and the first model
request. Here they are gathered by `gather_router_inputs`, one call taking one `RouterInputsQuery`:

- one total deadline (`DEADLINE_S`) for all of them: the router then decides with what it has, and the
  inputs not read in time are named (`router.RouteInputs.late`), which the edit's trace carries as a reason;
- reads that do not depend on the working tree are cached per repository HEAD (the file's history and the
  repository's last commits before HEAD; the selected lines' history per line range), so the second edit
  in a file waits for none of them; a read that missed the deadline keeps running in the cache's worker
  threads and serves the next edit;
- `RouterInputsCache.warm` starts the file's and the repository's reads when a document is opened or saved,
  before any edit needs them, and the selected lines' history when an edit of a selection is offered (a
  code action), which clients ask for before the user picks the edit and types its instruction.

The git commands are `file_history`'s and `working_diff`'s, unchanged: this module decides only when they
run and how long an edit waits for them. HEAD is read from the repository's files, without running git
(`machine.git.head_commit`); when it cannot be read nothing is cached.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tandem.completion.machine import git
from tandem.completion.routing.change_in_progress import WorkingDiff
from tandem.completion.routing.file_history import (
    file_history,
    past_commits,
    selected_lines_history,
)
from tandem.completion.routing.router import RouteInputs
from tandem.completion.routing.working_diff import working_diff

log = logging.getLogger(__name__)

# The router's inputs may hold the edit up this long in all. A one-line edit's git reads
# take 17-76 ms in most repositories; past this the router decides without what is still missing.
DEADLINE_S = 0.2
# Cached reads kept (each a few KB): files x line ranges of a working day.
MAX_ENTRIES = 512
# Worker threads for git reads: a read that misses the deadline occupies one until its own timeout.
WORKERS = 4

# The names of the inputs, as the trace says them.
WORKING_DIFF = "your change in progress"
FILE_HISTORY = "the file's history"
LINES_HISTORY = "the selected lines' history"
PAST_COMMITS = "similar past commits"


@dataclass(frozen=True, kw_only=True)
class RouterInputsQuery:
    """What one edit needs read: the workspace root, the edited file (relative to it), the selected lines
    [first_line, end_line), and the open documents ({absolute path: text}) for the working diff."""

    root: Path | None
    path: str
    first_line: int
    end_line: int
    open_files: Mapping[str, str] = field(default_factory=dict)
    deadline_s: float = DEADLINE_S


class RouterInputsCache:
    """Git reads for the router, by (what, root, path, lines, HEAD), shared by the edits and `warm`."""

    def __init__(self, *, max_entries: int = MAX_ENTRIES, workers: int = WORKERS) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="router-git")
        self._reads: OrderedDict[tuple[Any, ...], concurrent.futures.Future[Any]] = OrderedDict()
        self._max_entries = max_entries
        # The selected lines' history started by `warm` (one at a time).
        self._lines_warming: concurrent.futures.Future[Any] | None = None

    def _read(
        self, key: tuple[Any, ...] | None, read: Callable[[], Any]
    ) -> tuple[concurrent.futures.Future[Any], bool]:
        """The read's future (started now, or the cached one) and whether it came from the cache."""
        if key is not None and (known := self._reads.get(key)) is not None:
            if not known.cancelled() and (not known.done() or known.exception() is None):
                self._reads.move_to_end(key)
                return known, True
        future = self._pool.submit(read)
        if key is not None:
            self._reads[key] = future
            while len(self._reads) > self._max_entries:
                self._reads.popitem(last=False)
        return future, False

    def _file_reads(
        self, root: Path, path: str, head: str | None
    ) -> dict[str, tuple[concurrent.futures.Future[Any], bool]]:
        keyed = head is not None
        return {
            FILE_HISTORY: self._read(("file", root, path, head) if keyed else None, lambda: file_history(root, path)),
            PAST_COMMITS: self._read(("past", root, head) if keyed else None, lambda: past_commits(root)),
        }

    def warm(self, root: Path | None, path: str, lines: tuple[int, int] | None = None) -> None:
        """Start the file's history and the repository's last commits for `path` (no wait): on open, on save.
        With `lines` ([first, end), an edit of them offered), their history too, one such read at a time:
        selections swept over quickly do not queue reads ahead of an edit's."""
        if root is None or not path:
            return
        head = git.head_commit(root)
        try:
            self._file_reads(root, path, head)
            if lines is None or head is None or lines[1] <= lines[0]:
                return
            if self._lines_warming is not None and not self._lines_warming.done():
                return
            first, end = lines
            self._lines_warming, _ = self._read(
                ("lines", root, path, first, end, head), lambda: selected_lines_history(root, path, first, end)
            )
        except RuntimeError:  # the pool was shut down: the server is leaving
            pass

    async def gather(self, query: RouterInputsQuery, known: RouteInputs) -> RouteInputs:
        """See `gather_router_inputs`."""
        started = time.perf_counter()
        root = query.root
        if root is None:
            return replace(known, working_diff=working_diff(None, query.open_files))
        head = git.head_commit(root)
        reads = self._file_reads(root, query.path, head)
        first, end = query.first_line, query.end_line
        reads[LINES_HISTORY] = self._read(
            ("lines", root, query.path, first, end, head) if head is not None else None,
            lambda: selected_lines_history(root, query.path, first, end),
        )
        # The change in progress depends on the files on disk: read for every edit.
        reads[WORKING_DIFF] = (self._pool.submit(working_diff, root, dict(query.open_files)), False)
        waiting = {name: asyncio.wrap_future(future) for name, (future, _) in reads.items()}
        remaining = max(0.0, query.deadline_s - (time.perf_counter() - started))
        if remaining > 0:
            await asyncio.wait(waiting.values(), timeout=remaining)
        values: dict[str, Any] = {}
        late: list[str] = []
        for name, future in waiting.items():
            if future.done() and not future.cancelled() and future.exception() is None:
                values[name] = future.result()
            else:
                late.append(name)
                if future.done() and not future.cancelled() and (error := future.exception()) is not None:
                    log.debug("router input %s failed: %s", name, error)
                else:
                    # Keep reading in the worker thread (it fills the cache); stop only the wait. The
                    # done callback reads the result so that asyncio does not warn of an unread one.
                    future.add_done_callback(lambda f: f.cancelled() or f.exception())
        return replace(
            known,
            working_diff=values.get(WORKING_DIFF, WorkingDiff()),
            history=values.get(FILE_HISTORY),
            lines_history=values.get(LINES_HISTORY),
            past_commits=values.get(PAST_COMMITS),
            late=tuple(late),
            waited_ms=(time.perf_counter() - started) * 1000,
            cached=tuple(name for name, (_, hit) in reads.items() if hit and name not in late),
        )

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


async def gather_router_inputs(
    query: RouterInputsQuery, cache: RouterInputsCache, known: RouteInputs | None = None
) -> RouteInputs:
    """`known` (the request's part of the router's one input: its mode, selection, instruction, symbols)
    with the git inputs for one edit added: all started at once (or taken from `cache`), waited for at most
    `query.deadline_s` in all; what is not read by then is left out and named in `RouteInputs.late`."""
    return await cache.gather(query, known or RouteInputs(mode="edit", path=query.path))
