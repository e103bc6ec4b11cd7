"""Context windows: budgets, the split at the cursor, cross-file snippets, stable ordering, reuse."""

from __future__ import annotations

import pathlib
import sysconfig
from typing import Any

import pytest

from tandem.cache.context import MAX_BUDGET_TOKENS, MIN_BUDGET_TOKENS, ContextBuilder, ContextOptions, ContextWindow
from tandem.cache.lines import split_lines
from tandem.cache.symbols import SymbolIndex
from tandem.cache.token_index import TokenIndex
from tandem.cache.tokens import get_counter

STDLIB = pathlib.Path(sysconfig.get_paths()["stdlib"])

GEOMETRY = '''"""Plane geometry."""


class Vector:
    def __init__(self, x: float, y: float) -> None:
        self.x = x
        self.y = y

    def norm(self) -> float:
        return (self.x * self.x + self.y * self.y) ** 0.5


def dot(a: Vector, b: Vector) -> float:
    return a.x * b.x + a.y * b.y
'''
ELSEWHERE = '''def dot(a, b):
    """A different dot, in a file nobody imports."""
    return sum(x * y for x, y in zip(a, b))
'''
PRIVATE = """def shade(v):
    return "secret sauce"
"""
RENDER = """from .geometry import Vector, dot
from .private import shade


def brightness(light: Vector, normal: Vector) -> float:
    value = dot(light, normal) / (light.norm() * normal.norm())
    return max(0.0, shade(value))
"""


def read(relative: str) -> str:
    return (STDLIB / relative).read_text(encoding="utf-8")


def workspace() -> SymbolIndex:
    symbols = SymbolIndex()
    for path, text in {
        "pkg/geometry.py": GEOMETRY,
        "other/vectors.py": ELSEWHERE,
        "pkg/private.py": PRIVATE,
        "pkg/render.py": RENDER,
    }.items():
        symbols.update(path, text)
    return symbols


def rendered(window: ContextWindow) -> str:
    return window.snippet_text + window.prefix + window.suffix


def test_window_fits_its_budget_and_splits_exactly_at_the_cursor() -> None:
    text = read("asyncio/base_events.py")
    lines = text.splitlines()
    index = TokenIndex(get_counter(), lines)
    builder = ContextBuilder(counter=get_counter(), symbols=SymbolIndex())
    line, character = 700, 8
    window = builder.build(path="asyncio/base_events.py", index=index, line=line, character=character)
    assert window.budget_tokens == ContextOptions().budget_tokens
    assert window.total_tokens <= window.budget_tokens
    assert get_counter().count(rendered(window)) <= window.budget_tokens * 1.01
    # The prefix ends at the cursor, the suffix starts there, and together they are a slice of the file.
    assert window.prefix.endswith("\n" + lines[line][:character])
    assert window.suffix.startswith(lines[line][character:] + "\n")
    start = sum(len(x) + 1 for x in lines[: window.prefix_start_line])
    assert text[start:].startswith(window.prefix + window.suffix)
    assert window.prefix_start_line % ContextOptions().prefix_anchor_lines == 0
    # The default split gives the prefix about three times the suffix's share.
    assert window.prefix_tokens > 2 * window.suffix_tokens > 0


def test_suffix_share_zero_keeps_only_the_rest_of_the_cursor_line() -> None:
    lines = read("typing.py").splitlines()
    index = TokenIndex(get_counter(), lines)
    builder = ContextBuilder(counter=get_counter(), symbols=SymbolIndex())
    window = builder.build(
        path="typing.py", index=index, line=2000, character=4, options=ContextOptions(suffix_share=0.0)
    )
    assert window.suffix == lines[2000][4:] + "\n"
    # Near the top of the file the prefix cannot use its share, and the suffix gets what is left.
    top = builder.build(path="typing.py", index=index, line=3, character=0, options=ContextOptions(suffix_share=0.0))
    assert top.prefix_start_line == 0 and top.suffix_end_line > 100


def test_budgets_are_clamped_and_say_so() -> None:
    index = TokenIndex(get_counter(), read("json/decoder.py").splitlines())
    builder = ContextBuilder(counter=get_counter(), symbols=SymbolIndex())
    big = builder.build(path="d.py", index=index, line=10, character=0, options=ContextOptions(budget_tokens=10**6))
    assert big.budget_tokens == MAX_BUDGET_TOKENS
    assert any("clamped" in note for note in big.notes)
    small = builder.build(path="d.py", index=index, line=10, character=0, options=ContextOptions(budget_tokens=1))
    assert small.budget_tokens == MIN_BUDGET_TOKENS and small.notes
    assert small.total_tokens <= MIN_BUDGET_TOKENS


def test_snippets_come_from_imports_and_definitions_and_respect_privacy() -> None:
    symbols = workspace()
    lines = RENDER.splitlines()
    builder = ContextBuilder(counter=get_counter(), symbols=symbols, may_send=lambda path: "private" not in path)
    window = builder.build(path="pkg/render.py", index=TokenIndex(get_counter(), lines), line=5, character=12)
    kinds = [(s.kind, s.path) for s in window.snippets]
    assert ("import", "pkg/geometry.py") in kinds
    assert ("definition", "pkg/geometry.py") in kinds
    assert all("private" not in path for _, path in kinds)
    assert all(path != "pkg/render.py" for _, path in kinds)  # the whole file is in the window already
    definition_texts = [s.text for s in window.snippets if s.kind == "definition"]
    assert any(t.startswith("def dot(a: Vector, b: Vector)") for t in definition_texts)
    assert any(t.startswith("class Vector:") for t in definition_texts)
    # Stable material first, in a deterministic order: imports, then definitions, each by path and line.
    order = [(s.kind, s.path, s.start_line) for s in window.snippets]
    rank = {"import": 0, "definition": 1, "open_document": 2, "recent_edit": 3}
    assert order == sorted(order, key=lambda o: (rank[o[0]], o[1], o[2]))
    assert window.snippet_text.startswith("# pkg/geometry.py (outline)\n")
    assert window.snippet_tokens == sum(s.tokens for s in window.snippets)


def test_imported_definition_beats_an_unrelated_one_of_the_same_name() -> None:
    symbols = workspace()
    builder = ContextBuilder(counter=get_counter(), symbols=symbols, options=ContextOptions(budget_tokens=140))
    window = builder.build(
        path="pkg/render.py", index=TokenIndex(get_counter(), RENDER.splitlines()), line=5, character=20
    )
    paths = [s.path for s in window.snippets if s.kind == "definition"]
    assert "other/vectors.py" not in paths


def test_recent_edits_in_other_documents_become_snippets() -> None:
    symbols = workspace()
    builder = ContextBuilder(counter=get_counter(), symbols=symbols)
    other_lines = read("json/decoder.py").splitlines()
    other = TokenIndex(get_counter(), other_lines)
    builder.open_document("json/decoder.py", other)
    other.replace_lines(300, 301, ["    edited_here = True"])
    builder.note_edit("json/decoder.py", 300)
    current = TokenIndex(get_counter(), RENDER.splitlines())
    builder.note_edit("pkg/render.py", 5)  # inside the current window: never a snippet
    window = builder.build(path="pkg/render.py", index=current, line=5, character=4)
    edits = [s for s in window.snippets if s.kind == "recent_edit"]
    assert [s.path for s in edits] == ["json/decoder.py"]
    assert "edited_here = True" in edits[0].text
    assert edits[0].start_line <= 300 < edits[0].end_line
    assert window.snippets[-1].kind == "recent_edit"  # the most volatile material goes last


def test_remembered_edits_move_with_inserted_lines() -> None:
    builder = ContextBuilder(counter=get_counter(), symbols=SymbolIndex())
    other_lines = read("json/decoder.py").splitlines()
    other = TokenIndex(get_counter(), other_lines)
    builder.open_document("json/decoder.py", other)
    other.replace_lines(300, 301, ["    edited_here = True"])
    builder.note_edit("json/decoder.py", 300)
    other.replace_lines(10, 10, ["# one", "# two", "# three"])  # three lines inserted above it
    builder.note_edit("json/decoder.py", 10, lines_added=3)
    current = TokenIndex(get_counter(), RENDER.splitlines())
    window = builder.build(path="pkg/render.py", index=current, line=5, character=4)
    moved = [s for s in window.snippets if s.kind == "recent_edit" and "edited_here = True" in s.text]
    assert moved and moved[0].start_line <= 303 < moved[0].end_line
    # The edit near the top lies in the head of the open document, which the window shows whole.
    assert any("# three" in s.text for s in window.snippets)


def test_consecutive_keystrokes_share_the_stable_prefix() -> None:
    symbols = workspace()
    lines = read("asyncio/base_events.py").splitlines()
    symbols.update("asyncio/base_events.py", "\n".join(lines))
    index = TokenIndex(get_counter(), lines)
    builder = ContextBuilder(counter=get_counter(), symbols=symbols)
    line = 900
    first = builder.build(path="asyncio/base_events.py", index=index, line=line, character=8)
    assert first.reused_prefix_tokens == 0
    index.replace_lines(line, line + 1, [lines[line][:8] + "x" + lines[line][8:]])
    second = builder.build(path="asyncio/base_events.py", index=index, line=line, character=9)
    assert second.stable_hash == first.stable_hash
    assert second.prefix_start_line == first.prefix_start_line
    expected = second.snippet_tokens + index.tokens_in(second.prefix_start_line, line)
    assert second.reused_prefix_tokens == expected
    # An edit inside the prefix: only what lies above it is reused.
    edit_line = second.prefix_start_line + 5
    index.replace_lines(edit_line, edit_line + 1, ["    # changed"])
    third = builder.build(path="asyncio/base_events.py", index=index, line=line, character=9)
    assert third.stable_hash == second.stable_hash
    assert third.reused_prefix_tokens == third.snippet_tokens + index.tokens_in(third.prefix_start_line, edit_line)


def test_a_128k_window_over_the_standard_library_counts_true() -> None:
    symbols = SymbolIndex()
    for folder in ("asyncio", "email", "json", "concurrent/futures", "collections"):
        for path in sorted((STDLIB / folder).glob("*.py")):
            symbols.update(path.relative_to(STDLIB).as_posix(), path.read_text(encoding="utf-8"))
    builder = ContextBuilder(counter=get_counter(), symbols=symbols)
    for other in ("typing.py", "argparse.py", "inspect.py", "dataclasses.py", "pathlib.py", "subprocess.py"):
        builder.open_document(other, TokenIndex(get_counter(), read(other).splitlines()))
    lines = read("asyncio/base_events.py").splitlines()
    index = TokenIndex(get_counter(), lines)
    window = builder.build(
        path="asyncio/base_events.py",
        index=index,
        line=700,
        character=8,
        options=ContextOptions(budget_tokens=MAX_BUDGET_TOKENS),
    )
    assert window.total_tokens <= MAX_BUDGET_TOKENS
    assert window.total_tokens > 0.8 * MAX_BUDGET_TOKENS  # there is plenty of material to fill it
    actual = get_counter().count(rendered(window))
    assert abs(actual - window.total_tokens) <= 0.01 * actual
    assert {s.kind for s in window.snippets} >= {"import", "definition", "open_document"}


@pytest.mark.parametrize("line", [0, 17, 63])
def test_lines_with_terminators_give_the_same_text(line: int) -> None:
    text = (GEOMETRY * 5).rstrip("\n")
    plain = TokenIndex(get_counter(), text.splitlines())
    kept = TokenIndex(get_counter(), split_lines(text))
    builder = ContextBuilder(counter=get_counter(), symbols=SymbolIndex())
    options = ContextOptions(budget_tokens=300)
    a = builder.build(path="g.py", index=plain, line=line, character=3, options=options)
    b = builder.build(path="g.py", index=kept, line=line, character=3, options=options)
    assert (a.prefix, a.suffix) == (b.prefix, b.suffix)
    assert a.prefix_tokens == b.prefix_tokens and a.suffix_tokens == b.suffix_tokens


def test_builds_are_deterministic_across_builders() -> None:
    windows = []
    for _ in range(2):
        builder = ContextBuilder(counter=get_counter(), symbols=workspace())
        windows.append(
            builder.build(
                path="pkg/render.py", index=TokenIndex(get_counter(), RENDER.splitlines()), line=6, character=10
            )
        )
    assert windows[0].stable_hash == windows[1].stable_hash
    assert rendered(windows[0]) == rendered(windows[1])


def test_a_cursor_line_longer_than_the_budget_is_cut_around_the_cursor() -> None:
    lines = ["x = [" + ", ".join(str(i) for i in range(20000)) + "]", "y = 1"]
    index = TokenIndex(get_counter(), lines)
    builder = ContextBuilder(counter=get_counter(), symbols=SymbolIndex())
    window = builder.build(path="big.py", index=index, line=0, character=50000)
    assert window.total_tokens <= window.budget_tokens
    assert get_counter().count(window.prefix + window.suffix) <= window.budget_tokens * 1.02
    assert lines[0][:50000].endswith(window.prefix) and len(window.prefix) > 1000
    assert lines[0][50000:].startswith(window.suffix) and window.suffix
    assert any("longer than the budget" in note for note in window.notes)


def test_naive_order_puts_the_file_first_unsnapped_and_the_snippets_after_the_suffix() -> None:
    symbols = workspace()
    lines = RENDER.splitlines()
    index = TokenIndex(get_counter(), lines)
    stable = ContextBuilder(counter=get_counter(), symbols=symbols).build(
        path="pkg/render.py", index=index, line=5, character=12
    )
    builder = ContextBuilder(counter=get_counter(), symbols=symbols, options=ContextOptions(order="naive"))
    window = builder.build(path="pkg/render.py", index=index, line=5, character=12)
    assert window.order == "naive" and window.snippets
    assert window.snippet_text == ""
    assert window.prefix == stable.prefix
    # The suffix is the file's, then every snippet, rendered as the stable order would send them.
    assert window.suffix.startswith(stable.suffix)
    tail = window.suffix[len(stable.suffix) :]
    assert sorted(s.render() for s in window.snippets) == sorted(s.render() for s in stable.snippets)
    # (a newline first when the file's suffix does not end with one)
    assert tail.removeprefix("" if stable.suffix.endswith("\n") else "\n") == "".join(
        s.render() for s in window.snippets
    )


def test_naive_order_does_not_snap_the_prefix_start_and_reuses_only_unchanged_file_lines() -> None:
    lines = read("asyncio/base_events.py").splitlines()
    index = TokenIndex(get_counter(), lines)
    options = ContextOptions(order="naive", budget_tokens=1024)
    builder = ContextBuilder(counter=get_counter(), symbols=SymbolIndex(), options=options)
    starts = set()
    for line in range(700, 716):
        window = builder.build(path="asyncio/base_events.py", index=index, line=line, character=0)
        starts.add(window.prefix_start_line)
    assert any(start % ContextOptions().prefix_anchor_lines for start in starts)  # not snapped to anchors
    assert len(starts) > 2  # it slides with the cursor
    # The same cursor again: the file's lines before the cursor are the reusable start; nothing else is.
    again = builder.build(path="asyncio/base_events.py", index=index, line=715, character=0)
    assert again.reused_prefix_tokens == index.tokens_in(again.prefix_start_line, 715) > 0


def _windows_after_edits(builder: ContextBuilder, symbols: SymbolIndex, refused: set[str]) -> list[tuple[str, ...]]:
    """A session of edits through `builder`, each window built by `builder` beside the same window from a
    fresh builder in the same state: the pairs, as text. Each step changes one thing the candidates depend
    on: a name typed that has a definition, an edit noted in a file that is not open, another open document
    that grows, a module the file imports that comes into the workspace, a file no longer sent."""
    counter = get_counter()
    notes = "".join(f"# note {i}: nothing defined here\n" for i in range(60))
    symbols.update("pkg/notes.py", notes)
    symbols.update("pkg/units.py", notes + "def meters(x):\n    return x * 1000\n")
    symbols.update("pkg/render.py", "import pkg.extra\n" + RENDER)  # a module not in the workspace yet
    current = RENDER.splitlines() + [f"# filler line {i}" for i in range(150)]
    index = TokenIndex(counter, current)
    geometry = TokenIndex(counter, GEOMETRY.splitlines())
    builder.open_document("pkg/render.py", index)
    builder.open_document("pkg/geometry.py", geometry)
    edits: list[tuple[str, int, int]] = []
    pairs: list[tuple[str, ...]] = []

    def note(path: str, line: int, added: int = 0) -> None:
        builder.note_edit(path, line, lines_added=added)
        edits.append((path, line, added))

    def compare(line: int, character: int) -> None:
        fresh = ContextBuilder(counter=counter, symbols=symbols, may_send=lambda p: p not in refused)
        fresh.open_document("pkg/render.py", index)
        fresh.open_document("pkg/geometry.py", geometry)
        for path, at, added in edits:
            fresh.note_edit(path, at, lines_added=added)
        for made in (builder, fresh):
            window = made.build(path="pkg/render.py", index=index, line=line, character=character)
            pairs.append((rendered(window), str(window.total_tokens), window.stable_hash))

    def type_at(line: int, text: str) -> None:
        for ch in text:
            column = len(index.lines[line])
            index.replace_lines(line, line + 1, [index.lines[line] + ch])
            note("pkg/render.py", line)
            compare(line, column + 1)

    index.replace_lines(7, 7, ["    "])  # a new line
    note("pkg/render.py", 7, 1)
    compare(7, 4)
    type_at(7, "total = meters")  # new names, found nowhere, then one defined elsewhere
    index.replace_lines(150, 151, ["# far below, edited"])  # outside the window: a recent-edit snippet
    note("pkg/render.py", 150)
    compare(7, 18)
    index.replace_lines(149, 150, ["# far below, edited again"])  # ...whose text changes
    compare(7, 18)
    note("pkg/notes.py", 30)  # an edit in a file that is not open
    compare(7, 18)
    geometry.replace_lines(0, 0, ["# one", "# two"])  # the other open document grows, no edit noted
    compare(7, 18)
    symbols.update("pkg/extra.py", "# the module render.py imports\nLIMIT = 3\n")  # now it resolves
    compare(7, 18)
    refused.add("pkg/geometry.py")  # no longer sent: its outline, definitions and head go
    compare(7, 18)
    return pairs


def test_memoised_candidates_give_the_window_a_fresh_builder_gives() -> None:
    refused: set[str] = set()
    symbols = workspace()
    builder = ContextBuilder(counter=get_counter(), symbols=symbols, may_send=lambda p: p not in refused)
    pairs = _windows_after_edits(builder, symbols, refused)
    assert len(pairs) == 2 * 21
    for memoised, fresh in zip(pairs[::2], pairs[1::2], strict=True):
        assert memoised == fresh
    # The session did move the snippets: the memo had things to miss.
    assert len({stable for _text, _tokens, stable in pairs}) >= 5


# Where each dependency sits in `ContextBuilder._candidates_key`'s tuple.
_KEY_PARTS = {"names with definitions": 6, "imported files": 7, "recent edits": 8, "other open documents": 9}


@pytest.mark.parametrize("left_out", sorted(_KEY_PARTS))
def test_a_stale_candidate_memo_would_be_caught(monkeypatch: pytest.MonkeyPatch, left_out: str) -> None:
    """The test above can fail: a memo keyed without one of the things the candidates depend on gives a
    window a fresh builder does not."""
    original = ContextBuilder._candidates_key
    part = _KEY_PARTS[left_out]

    def stale(self: ContextBuilder, *args: Any) -> tuple[object, ...]:
        key = original(self, *args)
        return key[:part] + key[part + 1 :]

    monkeypatch.setattr(ContextBuilder, "_candidates_key", stale)
    refused: set[str] = set()
    symbols = workspace()
    builder = ContextBuilder(counter=get_counter(), symbols=symbols, may_send=lambda p: p not in refused)
    pairs = _windows_after_edits(builder, symbols, refused)
    assert any(memoised != fresh for memoised, fresh in zip(pairs[::2], pairs[1::2], strict=True))
