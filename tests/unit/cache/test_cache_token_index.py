"""The per-document token index: totals against full encodes of real files, incremental edits that stay
exact, budget queries, and the hook into the document line buffer."""

from __future__ import annotations

import argparse
import asyncio.base_events
import email._header_value_parser
import inspect
import json.decoder
import pathlib
import random
import typing
from collections.abc import Sequence
from types import ModuleType

import pytest

from tandem.cache.lines import LineBuffer
from tandem.cache.token_index import TokenIndex
from tandem.cache.tokens import TokenCounter, get_counter

REAL_MODULES: tuple[ModuleType, ...] = (typing, argparse, json.decoder, asyncio.base_events, email._header_value_parser)


def source_of(module: ModuleType) -> str:
    return pathlib.Path(inspect.getsourcefile(module) or "").read_text(encoding="utf-8")


class RecordingCounter(TokenCounter):
    """A real counter that also records how many lines each encode covered."""

    def __init__(self) -> None:
        base = get_counter()
        super().__init__(base._encoding, name=base.name)
        self.encoded_lines: list[int] = []

    def count_per_segment(self, segments: list[str]) -> list[int]:
        self.encoded_lines.append(len(segments))
        return super().count_per_segment(segments)


def assert_exact(index: TokenIndex, doc: Sequence[str]) -> None:
    """Every line's count equals what encoding its block afresh attributes to it."""
    counter = get_counter()
    assert list(index.lines) == list(doc)
    covered = 0
    for block in index.blocks():
        assert block.start_line == covered
        lines = doc[block.start_line : block.start_line + block.line_count]
        expected = counter.count_per_segment([line if line.endswith("\n") else line + "\n" for line in lines])
        got = [index.line_tokens(i) for i in range(block.start_line, block.start_line + block.line_count)]
        assert got == expected, f"stale counts in block at line {block.start_line}"
        assert block.tokens == sum(expected)
        covered += block.line_count
    assert covered == len(doc)


@pytest.mark.parametrize("module", REAL_MODULES, ids=lambda m: m.__name__)
def test_totals_within_one_percent_of_a_full_encode(module: ModuleType) -> None:
    text = source_of(module)
    index = TokenIndex(get_counter(), text.splitlines())
    full = get_counter().count(text)
    assert abs(index.total_tokens - full) <= 0.01 * full
    assert index.tokens_in(0, index.line_count) == index.total_tokens


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_edits_keep_every_block_exact(seed: int) -> None:
    rng = random.Random(seed)
    text = source_of(REAL_MODULES[seed % len(REAL_MODULES)])
    original = text.splitlines()
    doc = list(original)
    index = TokenIndex(get_counter(), doc, block_lines=32)
    pool = [*original[:400], "", "   ", "\t", "):", "    return {", "  # note  ", "'''", "é = 1"]
    for step in range(1500):
        if rng.random() < 0.6 and doc:
            at = rng.randrange(len(doc))
            line = doc[at]
            column = rng.randrange(len(line) + 1)
            typed = rng.choice(["x", " ", "\t", "(", ")", ":", "", "ü", "\n"])
            new = (line[:column] + typed + line[column + 1 :]).split("\n")
            doc[at : at + 1] = new
            index.replace_lines(at, at + 1, new)
        else:
            start = rng.randrange(len(doc) + 1)
            end = min(len(doc), start + rng.choice([0, 0, 1, 2, 3, 40, 200]))
            new = [rng.choice(pool) for _ in range(rng.choice([0, 1, 1, 2, 5, 50, 120]))]
            doc[start:end] = new
            index.replace_lines(start, end, new)
        if step % 300 == 0:
            assert_exact(index, doc)
    assert_exact(index, doc)
    full = get_counter().count("\n".join(doc) + "\n")
    assert abs(index.total_tokens - full) <= 0.01 * full
    # Blocks stay near their target size: none empty, none far past twice the target.
    sizes = [block.line_count for block in index.blocks()]
    assert min(sizes) > 0 and max(sizes) <= 2 * 32 + 1


def test_a_keystroke_encodes_a_few_lines_and_an_insert_at_most_a_block() -> None:
    counter = RecordingCounter()
    lines = source_of(typing).splitlines()
    index = TokenIndex(counter, lines, block_lines=48)
    counter.encoded_lines.clear()
    line = lines[1500]
    index.replace_lines(1500, 1501, [line + "x"])
    assert sum(counter.encoded_lines) <= 8, counter.encoded_lines
    counter.encoded_lines.clear()
    index.replace_lines(1600, 1601, [lines[1600], "    new_line = 1"])
    assert sum(counter.encoded_lines) <= 2 * 48 + 2, counter.encoded_lines
    assert_exact(index, [*lines[:1500], line + "x", *lines[1501:1601], "    new_line = 1", *lines[1601:]])


def test_budget_queries_pick_the_most_lines_that_fit() -> None:
    rng = random.Random(5)
    index = TokenIndex(get_counter(), source_of(argparse).splitlines())
    n = index.line_count
    for _ in range(300):
        end = rng.randrange(n + 1)
        budget = rng.randrange(0, 6000)
        start = index.start_within(end, budget)
        assert index.tokens_in(start, end) <= budget
        assert start == 0 or index.tokens_in(start - 1, end) > budget
        begin = rng.randrange(n + 1)
        stop = index.end_within(begin, budget)
        assert index.tokens_in(begin, stop) <= budget
        assert stop == n or index.tokens_in(begin, stop + 1) > budget


def test_unchanged_prefix_lines_follows_edits() -> None:
    lines = [f"line_{i} = {i}" for i in range(200)]
    index = TokenIndex(get_counter(), lines)
    g0 = index.generation
    assert index.unchanged_prefix_lines(g0) == 200
    index.replace_lines(120, 121, ["line_120 = 0"])
    index.replace_lines(150, 150, ["extra = 1"])
    assert index.unchanged_prefix_lines(g0) == 120
    g2 = index.generation
    index.replace_lines(10, 12, [])
    assert index.unchanged_prefix_lines(g2) == 10
    assert index.unchanged_prefix_lines(g0) == 10
    assert index.unchanged_prefix_lines(-5) == 0  # older than anything remembered


def test_edge_cases_empty_documents_and_bad_ranges() -> None:
    index = TokenIndex(get_counter(), [])
    assert index.total_tokens == 0 and index.line_count == 0
    index.replace_lines(0, 0, ["def f():", "    return 1"])
    assert_exact(index, ["def f():", "    return 1"])
    index.replace_lines(0, 2, [])
    assert index.total_tokens == 0 and list(index.blocks()) == []
    index.replace_lines(0, 0, ["x = 1"])
    index.replace_lines(1, 1, ["y = 2"])  # append at the end
    assert_exact(index, ["x = 1", "y = 2"])
    with pytest.raises(ValueError, match="bad edit range"):
        index.replace_lines(1, 5, [])
    with pytest.raises(ValueError):
        TokenIndex(get_counter(), [], block_lines=1)


def test_follows_the_line_buffer_of_the_document_store() -> None:
    """The hook the server uses: LineBuffer.replace() says which lines changed; the index takes them."""
    rng = random.Random(11)
    text = source_of(json.decoder)
    buffer = LineBuffer(text)
    index = TokenIndex(get_counter(), buffer.lines(0, buffer.line_count))
    for _ in range(400):
        line = rng.randrange(buffer.line_count)
        char = rng.randrange(len(buffer.line_content(line)) + 1)
        end_line = min(buffer.line_count - 1, line + rng.choice([0, 0, 0, 1, 3]))
        end_char = rng.randrange(len(buffer.line_content(end_line)) + 1)
        if (end_line, end_char) < (line, char):
            end_line, end_char = line, char
        typed = rng.choice(["a", "", "\n", "x = 1\n    ", "  ", "\n\n"])
        edit = buffer.replace((line, char), (end_line, end_char), typed)
        new_lines = buffer.lines(edit.start_line, edit.start_line + edit.new_line_count)
        index.replace_lines(edit.start_line, edit.start_line + edit.old_line_count, new_lines)
    assert_exact(index, buffer.lines(0, buffer.line_count))
    full = get_counter().count(buffer.text())
    assert abs(index.total_tokens - full) <= 0.01 * full
