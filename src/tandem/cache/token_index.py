"""Per-document token index: token counts kept in blocks of lines, updated incrementally on edits.

A document is split into blocks of about `block_lines` lines. Each block is encoded as one text (so BPE
sees whole lines together, as it would in a prompt) and its tokens are attributed to the lines they start
in; the only approximation against encoding the whole document is at block boundaries, a few tokens per
block (well under 1%). An edit (`replace_lines`) re-encodes only the blocks it touches, splitting a block
that grew past twice the target size and merging one that shrank below half of it.

Queries (`tokens_in`, `start_within`, `end_within`) cost O(log blocks + block_lines) and never encode:
they are how the context builder picks how many lines of prefix and suffix fit a budget.

Lines are handed in with or without their line terminator; a line without one counts as if it ended in
"\n". The index keeps references to the line strings (not copies), so it shares them with the document
store that hands them in.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, count
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tandem.cache.tokens import TokenCounter

DEFAULT_BLOCK_LINES = 48
# Edits remembered for `unchanged_prefix_lines`; older generations answer 0 (nothing known unchanged).
_EDIT_LOG_LENGTH = 256
_uids = count(1)


@dataclass(frozen=True, slots=True)
class BlockInfo:
    """One block as seen from outside (for tests and diagnostics)."""

    start_line: int
    line_count: int
    tokens: int


class _Block:
    __slots__ = ("counts", "n_lines", "total")

    def __init__(self, counts: array[int]) -> None:
        self.counts = counts
        self.n_lines = len(counts)
        self.total = sum(counts)


class TokenIndex:
    """Token counts of one document's lines, in blocks. Not thread-safe: one owner updates it."""

    def __init__(self, counter: TokenCounter, lines: Sequence[str], *, block_lines: int = DEFAULT_BLOCK_LINES) -> None:
        if block_lines < 2:
            raise ValueError("block_lines must be at least 2")
        self._counter = counter
        # Unique per index for the life of the process (unlike id()), so caches keyed on it never alias.
        self.uid = next(_uids)
        self._target = block_lines
        self._lines: list[str] = list(lines)
        self._blocks: list[_Block] = self._encode_span(0, len(self._lines))
        self._generation = 0
        # (generation after the edit, first line the edit touched)
        self._edit_log: list[tuple[int, int]] = []
        self._block_first_line: list[int] = []
        self._block_first_token: list[int] = []
        self._dirty = True

    # -- reading ------------------------------------------------------------------------------------

    @property
    def counter(self) -> TokenCounter:
        return self._counter

    @property
    def lines(self) -> Sequence[str]:
        """The document's lines as the index knows them (do not modify)."""
        return self._lines

    @property
    def line_count(self) -> int:
        return len(self._lines)

    @property
    def generation(self) -> int:
        """Incremented by every edit; lets callers cache what they derived from the document."""
        return self._generation

    @property
    def total_tokens(self) -> int:
        self._refresh()
        return self._block_first_token[-1]

    def tokens_in(self, start_line: int, end_line: int) -> int:
        """Tokens of lines [start_line, end_line), clamped to the document."""
        start_line = max(0, start_line)
        end_line = min(end_line, len(self._lines))
        if end_line <= start_line:
            return 0
        return self._tokens_before(end_line) - self._tokens_before(start_line)

    def line_tokens(self, line: int) -> int:
        return self.tokens_in(line, line + 1)

    def start_within(self, end_line: int, budget_tokens: int) -> int:
        """The smallest start line such that lines [start, end_line) cost at most `budget_tokens`."""
        end_line = max(0, min(end_line, len(self._lines)))
        if budget_tokens <= 0:
            return end_line
        floor = self._tokens_before(end_line) - budget_tokens
        if floor <= 0:
            return 0
        # First line whose tokens-before is >= floor.
        return self._first_line_with_tokens_before_at_least(floor)

    def end_within(self, start_line: int, budget_tokens: int) -> int:
        """The largest end line such that lines [start_line, end) cost at most `budget_tokens`."""
        start_line = max(0, min(start_line, len(self._lines)))
        if budget_tokens <= 0:
            return start_line
        ceiling = self._tokens_before(start_line) + budget_tokens
        self._refresh()
        if ceiling >= self._block_first_token[-1]:
            return len(self._lines)
        # Last line whose tokens-before is <= ceiling.
        return self._first_line_with_tokens_before_at_least(ceiling + 1) - 1

    def unchanged_prefix_lines(self, since_generation: int) -> int:
        """How many leading lines are certainly unchanged since `since_generation` (0 if unknown)."""
        if since_generation == self._generation:
            return len(self._lines)
        if not self._edit_log or since_generation < self._edit_log[0][0] - 1:
            return 0
        lowest = len(self._lines)
        for generation, first_line in reversed(self._edit_log):
            if generation <= since_generation:
                break
            lowest = min(lowest, first_line)
        return lowest

    def blocks(self) -> Iterator[BlockInfo]:
        """The blocks in order (for tests and diagnostics)."""
        line = 0
        for block in self._blocks:
            yield BlockInfo(start_line=line, line_count=block.n_lines, tokens=block.total)
            line += block.n_lines

    # -- editing ------------------------------------------------------------------------------------

    def replace_lines(self, start_line: int, end_line: int, new_lines: Sequence[str]) -> None:
        """Lines [start_line, end_line) were replaced by `new_lines` (end_line == start_line inserts).

        Re-encodes only the blocks the edit touches (plus a neighbour when a block gets too small).
        """
        n_old = len(self._lines)
        if not 0 <= start_line <= end_line <= n_old:
            raise ValueError(f"bad edit range [{start_line}, {end_line}) for {n_old} lines")
        self._lines[start_line:end_line] = new_lines
        self._generation += 1
        self._edit_log.append((self._generation, start_line))
        if len(self._edit_log) > _EDIT_LOG_LENGTH:
            del self._edit_log[: len(self._edit_log) - _EDIT_LOG_LENGTH]
        self._refresh()
        if not self._blocks:
            self._blocks = self._encode_span(0, len(self._lines))
            self._dirty = True
            return
        # Blocks [first, last] hold the old lines [start_line, end_line) (an insertion touches the block
        # its position falls in, or the last block at the end of the document).
        first = self._block_of(min(start_line, n_old - 1))
        last = self._block_of(min(max(end_line - 1, start_line), n_old - 1))
        span_start = self._block_first_line[first]
        span_end_old = self._block_first_line[last + 1]
        delta = len(new_lines) - (end_line - start_line)
        span_end = span_end_old + delta
        new_size = span_end - span_start
        fits = new_size <= 2 * self._target and (new_size >= self._target // 2 or len(self._blocks) == 1)
        if first == last and fits:
            if new_size > 0:
                self._patch_block(first, span_start, span_end, start_line, start_line + len(new_lines), delta)
                self._dirty = True
                return
        # A span that shrank below half a block takes its next (or previous) neighbour along.
        if new_size < self._target // 2 and len(self._blocks) > last - first + 1:
            if last + 1 < len(self._blocks):
                last += 1
                span_end += self._blocks[last].n_lines
            else:
                first -= 1
                span_start -= self._blocks[first].n_lines
        self._blocks[first : last + 1] = self._encode_span(span_start, span_end)
        self._dirty = True

    def _patch_block(self, b: int, block_start: int, block_end: int, start: int, new_end: int, delta: int) -> None:
        """Re-encode only the edited lines of block `b` (now lines [block_start, block_end)).

        Exact, not an estimate: in cl100k/o200k pre-tokenisation a chunk that starts in one line reaches
        into the next only across whitespace-only lines, and a line's leading whitespace always starts a
        chunk. So the counts of lines [lo, hi) depend on no text before `lo` when line `lo` is not blank
        (or starts the block), and on no text past the first non-blank line after them. Encoding that
        window reproduces what encoding the whole block would attribute to those lines.
        """
        lines = self._lines
        lo = start
        while lo > block_start and not lines[lo - 1].strip():
            lo -= 1
        if lo > block_start:
            lo -= 1  # the non-blank line before the edit: its tail may merge with what follows it
        hi = new_end
        while hi < block_end and not lines[hi].strip():
            hi += 1
        window_end = min(hi + 1, block_end)
        segments = [line if line.endswith("\n") else line + "\n" for line in lines[lo:window_end]]
        counts = self._counter.count_per_segment(segments)[: hi - lo]
        block = self._blocks[b]
        old_slice = slice(lo - block_start, hi - delta - block_start)
        block.total += sum(counts) - sum(block.counts[old_slice])
        block.counts[old_slice] = array("I", counts)
        block.n_lines = len(block.counts)

    # -- internals ----------------------------------------------------------------------------------

    def _encode_span(self, start: int, end: int) -> list[_Block]:
        """Blocks for lines [start, end): one block up to twice the target, else even chunks."""
        n = end - start
        if n <= 0:
            return []
        n_blocks = 1 if n <= 2 * self._target else -(-n // self._target)
        blocks: list[_Block] = []
        for i in range(n_blocks):
            a = start + n * i // n_blocks
            b = start + n * (i + 1) // n_blocks
            segments = [line if line.endswith("\n") else line + "\n" for line in self._lines[a:b]]
            blocks.append(_Block(array("I", self._counter.count_per_segment(segments))))
        return blocks

    def _refresh(self) -> None:
        if not self._dirty:
            return
        blocks = self._blocks
        self._block_first_line = [0, *accumulate([block.n_lines for block in blocks])]
        self._block_first_token = [0, *accumulate([block.total for block in blocks])]
        self._dirty = False

    def _block_of(self, line: int) -> int:
        return bisect_right(self._block_first_line, line) - 1

    def _tokens_before(self, line: int) -> int:
        self._refresh()
        if line >= len(self._lines):
            return self._block_first_token[-1]
        b = self._block_of(line)
        within = line - self._block_first_line[b]
        counts = self._blocks[b].counts
        if within <= len(counts) // 2:
            return self._block_first_token[b] + sum(counts[:within])
        return self._block_first_token[b + 1] - sum(counts[within:])

    def _first_line_with_tokens_before_at_least(self, tokens: int) -> int:
        """Smallest line L with tokens_before(L) >= tokens (tokens <= total)."""
        self._refresh()
        # Last block starting strictly below `tokens`: the answer lies in it or at the next block start.
        b = bisect_right(self._block_first_token, tokens - 1) - 1
        b = max(0, min(b, len(self._blocks) - 1))
        running = self._block_first_token[b]
        line = self._block_first_line[b]
        for line_tokens in self._blocks[b].counts:
            if running >= tokens:
                return line
            running += line_tokens
            line += 1
        return line
