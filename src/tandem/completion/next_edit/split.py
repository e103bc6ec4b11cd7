"""Rewriting the editable region in two parts at once, so that the part nearest the cursor answers first.

A model rewrites a region from its top: with the region starting `region_above` lines over the cursor, a
change below the cursor is reached only after those lines are copied. `split` cuts the region at the
cursor's line into a lower part (the cursor's line down) and an upper part (the region's top to the
cursor's line), each asked for with the same prompt material and only the region markers moved, so that a
change below the cursor settles after the lines between the cursor and it alone. Each part costs a
prompt: the request spends twice the prompt tokens. `first_of` waits for the first part that finds a
hunk that may be shown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from tandem.cache.edit_region import Region
from tandem.completion.next_edit.prompt import NextEditPrompt

T = TypeVar("T")

# A part shorter than this is not worth its prompt.
_MIN_PART_LINES = 3


def split(region: Region, prompt: NextEditPrompt, cursor_line: int) -> list[tuple[Region, NextEditPrompt]]:
    """[(lower part, its prompt), (upper part, its prompt)], both holding the cursor's line; [] when the
    cursor is too near an edge of the region for both parts to be worth asking."""
    at = cursor_line - region.start
    if at + 1 < _MIN_PART_LINES or len(region.lines) - at < _MIN_PART_LINES:
        return []
    marked = prompt.region.split("\n")
    if len(marked) != len(region.lines):
        return []
    below = "\n".join(marked[at + 1 :])
    lower = NextEditPrompt(
        path=prompt.path,
        language=prompt.language,
        snippets=prompt.snippets,
        history=prompt.history,
        before=prompt.before + "".join(f"{line}\n" for line in marked[:at]),
        region="\n".join(marked[at:]),
        after=prompt.after,
    )
    upper = NextEditPrompt(
        path=prompt.path,
        language=prompt.language,
        snippets=prompt.snippets,
        history=prompt.history,
        before=prompt.before,
        region="\n".join(marked[: at + 1]),
        after=below + (f"\n{prompt.after}" if prompt.after else ""),
    )
    return [
        (Region(region.start + at, region.lines[at:]), lower),
        (Region(region.start, region.lines[: at + 1]), upper),
    ]


async def first_of(searches: list[Awaitable[T | None]]) -> T | None:
    """The first non-None result of `searches` run at once (on a tie, the earlier in the list); None when
    all end with None. The others are cancelled."""
    tasks = [asyncio.ensure_future(search) for search in searches]
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                if task in done and task.result() is not None:
                    return task.result()
        return None
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
