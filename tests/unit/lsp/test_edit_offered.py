"""An edit offered on a selection (a code action) starts the router's read of exactly the lines that edit
would route with: the handler's line range must be the one `edit.service.gather_inputs` computes from the
same range, or the read ahead is never found in the cache."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types

from tandem.completion.edit.service import gather_inputs
from tandem.lsp.handlers.code_action import _offered


@dataclass
class _Session:
    offered: list[tuple[str, int, int]] = field(default_factory=list)

    def edit_offered(self, uri: str, first_line: int, end_line: int) -> None:
        self.offered.append((uri, first_line, end_line))


def _range(a: tuple[int, int], b: tuple[int, int]) -> types.Range:
    return types.Range(start=types.Position(line=a[0], character=a[1]), end=types.Position(line=b[0], character=b[1]))


@pytest.mark.parametrize(
    ("where", "lines"),
    [
        (_range((3, 0), (3, 12)), (3, 4)),  # one line, selected to its end
        (_range((3, 4), (5, 0)), (3, 5)),  # two lines, ending at the start of a third: the third is not in it
        (_range((3, 0), (5, 2)), (3, 6)),  # a last line selected in part counts
    ],
)
def test_the_lines_offered_are_the_lines_the_edit_routes_with(where: types.Range, lines: tuple[int, int]) -> None:
    session = _Session()
    _offered(SimpleNamespace(session=session), "file:///w/a.py", where)  # type: ignore[arg-type]
    assert session.offered == [("file:///w/a.py", *lines)]
    # The same range as the edit's offsets, counted as `gather_inputs` counts them.
    text = "".join(f"line {n} of the file\n" for n in range(8))
    starts = [0, *[i + 1 for i, c in enumerate(text) if c == "\n"]]
    start = starts[where.start.line] + where.start.character
    end = starts[where.end.line] + where.end.character
    assert _lines_of(text, start, end) == lines


def _lines_of(text: str, start: int, end: int) -> tuple[int, int]:
    """What `gather_inputs` asks the router's inputs for (read off its query)."""
    seen: dict[str, Any] = {}

    class _Cache:
        async def gather(self, query: Any, known: Any) -> Any:
            seen["lines"] = (query.first_line, query.end_line)
            raise _Stop

    request = SimpleNamespace(text=text, start=start, end=end, instruction="x", path="a.py")
    files = SimpleNamespace(open_texts=dict, symbols=lambda: None, root=None, current={}, read_text=lambda _: None)
    with pytest.raises(_Stop):
        asyncio.run(gather_inputs(request, files, _Cache()))  # type: ignore[arg-type]
    return seen["lines"]


class _Stop(Exception):
    pass
