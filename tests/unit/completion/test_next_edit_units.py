"""Next edits, pure parts: the diff history, the region, the rewrite diff and what is refused."""

from __future__ import annotations

from tandem.cache.edit_history import EditHistory, render
from tandem.cache.edit_region import (
    CharEdit,
    Hunk,
    LastEdit,
    Region,
    char_edit,
    ends_a_clause,
    hunks,
    judge,
    region_bounds,
    rewrite_lines,
    settled_hunks,
)
from tandem.cache.lines import LineBuffer


def _type(history: EditHistory, uri: str, buffer: LineBuffer, at: tuple[int, int], end: tuple[int, int], text: str):
    history.before_change(uri, uri, buffer, at[0], end[0])
    edit = buffer.replace(at, end, text)
    history.after_change(uri, edit.old_line_count, edit.new_line_count)


def test_history_coalesces_keystrokes_and_splits_distant_edits() -> None:
    buffer = LineBuffer("def f(a):\n    return a\n\n\nx = 1\n")
    history = EditHistory()
    for i, ch in enumerate("rg"):
        _type(history, "u", buffer, (0, 7 + i), (0, 7 + i), ch)
    _type(history, "u", buffer, (4, 4), (4, 5), "2")
    edits = history.recent({"u": buffer}.get)
    assert [(e.start, e.old, e.new) for e in edits] == [
        (0, ("def f(a):",), ("def f(arg):",)),
        (4, ("x = 1",), ("x = 2",)),
    ]
    text = render(edits, max_chars=1000)
    assert text.index("-def f(a):") < text.index("+def f(arg):") < text.index("-x = 1")
    # The budget keeps the newest edits.
    assert "x = 2" in render(edits, max_chars=60) and "arg" not in render(edits, max_chars=60)


def test_history_tracks_new_lines_and_drops_undone_edits() -> None:
    buffer = LineBuffer("a\nb\n")
    history = EditHistory()
    _type(history, "u", buffer, (0, 1), (0, 1), "\nnew")
    last = history.last("u", buffer)
    assert last is not None and (last.old, last.new) == (("a",), ("a", "new"))
    _type(history, "u", buffer, (0, 1), (1, 3), "")  # the user deletes what they added
    assert history.recent({"u": buffer}.get) == []


def test_region_stays_inside_the_document() -> None:
    assert region_bounds(100, 50, above=5, below=5) == (45, 56)
    assert region_bounds(100, 1, above=5, below=5) == (0, 11)
    assert region_bounds(100, 99, above=5, below=5) == (89, 100)
    assert region_bounds(3, 1, above=5, below=5) == (0, 3)


def test_hunks_and_the_smallest_char_edit() -> None:
    region = Region(10, ("def f(arg):", "    return a", "", "y = 2"))
    found = hunks(region.lines, rewrite_lines("def f(arg):\n    return arg\n\ny = 2\n"))
    assert found == [Hunk(1, ("    return a",), ("    return arg",))]
    assert char_edit(found[0], region, line_count=20) == CharEdit(11, 12, 11, 12, "rg")


def test_char_edits_for_insertion_and_deletion_apply_to_the_rewrite() -> None:
    doc = ["a", "b", "c", "d"]
    region = Region(0, tuple(doc))
    for rewrite in (["a", "b", "x", "c", "d"], ["a", "c", "d"], ["a", "b", "c"], ["a", "b", "c", "d", "e"], ["b"]):
        edits = [char_edit(h, region, line_count=len(doc)) for h in hunks(region.lines, tuple(rewrite))]
        result = list(doc)
        for edit in reversed(edits):
            result = edit.apply(result)
        assert result == rewrite


def test_a_streaming_hunk_is_settled_once_the_rewrite_is_back_in_step() -> None:
    region = ("a", "b", "c", "d", "e")
    assert settled_hunks(region, "a\nB\nc\n", done=False) == []
    assert settled_hunks(region, "a\nB\nc\nd\n", done=False) == [Hunk(1, ("b",), ("B",))]
    assert settled_hunks(region, "a\nB\nc\nd\nE", done=True) == [Hunk(1, ("b",), ("B",)), Hunk(4, ("e",), ("E",))]


def test_with_distinct_a_hunk_settles_after_one_distinctive_matching_line() -> None:
    region = ("def f(a):", "    total = a + 1", ")", "    return total", "", "x = 1")
    changed = "def f(b):\n    total = a + 1\n"
    assert settled_hunks(region, changed, done=False) == []
    first = [Hunk(0, ("def f(a):",), ("def f(b):",))]
    assert settled_hunks(region, changed, done=False, distinct=True) == first
    # A short line, or one the region holds twice, could be a new line that looks like it: two lines needed.
    assert settled_hunks(region, "def f(a):\n    total = b + 1\n)\n", done=False, distinct=True) == []
    twice = ("a = 1", "    value = compute()", "b = 2", "    value = compute()")
    assert settled_hunks(twice, "a = 2\n    value = compute()\n", done=False, distinct=True) == []
    assert settled_hunks(twice, "a = 2\n    value = compute()\nb = 2\n", done=False, distinct=True) == [
        Hunk(0, ("a = 1",), ("a = 2",))
    ]


def test_a_change_often_ends_where_a_clause_or_a_line_ends() -> None:
    for before in ("    return f(a,", "    x = y)", "    d = {'a': 1}", "def f(a):", "    s = 'x'", "        ", ""):
        assert ends_a_clause(before), before
    # Inside a word, or after what must be followed by more: a space, an opening bracket, a dot, an operator.
    for before in ("    retur", "    x = y_2", "    return f(a, ", "    f(", "    self.", "    x ="):
        assert not ends_a_clause(before), before


def test_the_pause_rule_decides_how_long_a_request_waits() -> None:
    import dataclasses

    from tandem.completion.config.tree import NextEditConfig
    from tandem.completion.inline.prefetch import TokenBudget
    from tandem.completion.next_edit.pause import NextEditPause
    from tandem.completion.next_edit.types import NextEditRequest

    buffer = LineBuffer("def f(a):\n    return f(a)\n")

    def waits(pause: str, character: int, gaps: float = 1.5, spent: int = 0) -> float:
        settings = dataclasses.replace(NextEditConfig(), pause=pause, pause_gaps=gaps)
        budget = TokenBudget(per_minute=20_000)
        budget.charge(spent)
        pause = NextEditPause(debounce_ms=settings.debounce_ms)
        for at_s in (0.0, 0.1, 0.2, 0.3):  # a key press every 100 ms
            pause.keystroke("u", at_s)
        request = NextEditRequest(uri="u", version=1, line=1, character=character, document=buffer, path="m.py")
        return pause.delay_s(request, settings, budget)

    after_clause, mid_word = 15, 9  # "    return f(a)|" and "    retu|rn f(a)"
    assert round(waits("interval", after_clause), 3) == round(waits("interval", mid_word), 3) == 0.15
    assert waits("typed", after_clause) == 0.0
    assert round(waits("typed", mid_word), 3) == 0.15
    assert round(waits("typed", mid_word, gaps=2.0), 3) == 0.2
    assert waits("typed", mid_word, gaps=3.0) == 0.25  # never longer than debounce_ms
    assert waits("none", mid_word) == 0.0
    # With more than half the minute's speculation budget spent, a clause's end waits for the pause too,
    # and so does every key under "none".
    assert round(waits("typed", after_clause, spent=12_000), 3) == 0.15
    assert round(waits("none", mid_word, spent=12_000), 3) == 0.15
    assert waits("none", mid_word, spent=10_000) == 0.0
    # ... and the pause may pass debounce_ms as the budget runs down: 250 ms at half spent, 1 s at all of it.
    assert waits("typed", mid_word, gaps=8.0, spent=10_000) == 0.25
    assert round(waits("typed", mid_word, gaps=8.0, spent=15_000), 3) == 0.625
    assert round(waits("typed", mid_word, gaps=8.0, spent=20_000), 3) == 0.8  # 8 intervals of 100 ms
    assert round(waits("typed", mid_word, gaps=20.0, spent=20_000), 3) == 1.0
    assert round(waits("typed", mid_word, gaps=2.5, spent=20_000), 3) == 0.25  # the pause, not the ceiling


def test_a_split_region_moves_only_the_markers() -> None:
    from tandem.completion.next_edit.prompt import CURSOR, NextEditPrompt, chat_messages
    from tandem.completion.next_edit.split import split

    lines = tuple(f"line {i}" for i in range(10, 20))
    region = Region(10, lines)
    marked = list(lines)
    marked[4] = "line " + CURSOR + "14"
    prompt = NextEditPrompt(path="m.py", history="h", before="line 9\n", region="\n".join(marked), after="line 20")
    (lower_region, lower), (upper_region, upper) = split(region, prompt, cursor_line=14)
    assert (lower_region.start, lower_region.lines) == (14, lines[4:])
    assert (upper_region.start, upper_region.lines) == (10, lines[:5])
    # The same excerpt, the markers moved: both parts hold the cursor's line, and the cursor.
    strip = lambda text: text.replace("<|editable_region_start|>\n", "").replace("\n<|editable_region_end|>", "")  # noqa: E731
    assert strip(lower.excerpt()) == strip(upper.excerpt()) == strip(prompt.excerpt())
    assert CURSOR in lower.region and CURSOR in upper.region
    assert chat_messages(lower)[0] == chat_messages(prompt)[0]
    # Too near an edge for two parts worth their prompts.
    assert split(region, prompt, cursor_line=11) == [] and split(region, prompt, cursor_line=18) == []


def test_judge_refuses_reversals_and_rewrites_past_the_region() -> None:
    region = Region(5, ("def f(arg):", "    return a"))
    last = LastEdit(5, ("def f(a):",), ("def f(arg):",))
    assert judge(Hunk(0, ("def f(arg):",), ("def f(a):",)), region, last=last) == "reversal"
    assert judge(Hunk(1, ("    return a",), ("    return arg",)), region, last=last) == ""
    assert judge(Hunk(2, (), ("z = 3",)), region, last=None, after=("z = 3", "w")) == "outside"
    assert judge(Hunk(1, ("x",), ("x",)), region, last=None) == "no-op"


def test_history_tasks_need_several_small_changes_close_together() -> None:
    from tandem.eval.next_edit_tasks import TaskLimits, qualifies

    before = "\n".join(f"line {i}" for i in range(60))
    two = before.replace("line 3\n", "line three\n").replace("line 9\n", "line nine\n")
    assert qualifies(before, two, TaskLimits()) == 2
    assert qualifies(before, before.replace("line 3\n", "line three\n"), TaskLimits()) == 0  # one change
    far = before.replace("line 3\n", "line three\n").replace("line 55\n", "line 55!\n")
    assert qualifies(before, far, TaskLimits()) == 0  # a screen apart
    big = two.replace("line nine\n", "x\n" * 10)
    assert qualifies(before, big, TaskLimits()) == 0  # too much to type


def _prompt_after(history: EditHistory, buffer: LineBuffer, cursor: tuple[int, int], budget_tokens: int) -> str:
    import dataclasses

    from tandem.completion.config.tree import Config
    from tandem.completion.next_edit.context import build_context
    from tandem.completion.next_edit.prompt import chat_messages
    from tandem.completion.next_edit.types import NextEditRequest

    settings = dataclasses.replace(Config().next_edit, budget_tokens=budget_tokens)
    request = NextEditRequest(uri="u", version=1, line=cursor[0], character=cursor[1], document=buffer, path="m.py")
    context = build_context(
        request,
        settings,
        history_of=history,
        workspace=None,
        buffer=lambda uri: buffer if uri == "u" else None,
        may_send=lambda uri: True,
    )
    return "\n".join(content for _, content in chat_messages(context.prompt))


def test_the_prompt_keeps_its_start_from_one_keystroke_to_the_next_and_stays_in_budget() -> None:
    """The excerpt comes before the recent edits, and its lines are chosen in steps, so a keystroke in the
    open edit changes the prompt only from the line typed on: the instructions, the excerpt's lines above
    the region and the region's lines above the cursor are shared; a small budget trims the excerpt's
    unchanged lines, not the region."""
    from tandem.completion.next_edit.prompt import REGION_START, SYSTEM_PROMPT

    text = "".join(f"def f{i}(a):\n    return a + {i}\n\n" for i in range(200))
    buffer = LineBuffer(text)
    history = EditHistory()
    _type(history, "u", buffer, (0, 7), (0, 8), "arg")  # def f0(arg):
    line = 300  # def f100(a):
    _type(history, "u", buffer, (line, 9), (line, 10), "ar")
    first = _prompt_after(history, buffer, (line, 11), budget_tokens=2048)
    for column, key in enumerate("g_name", start=11):
        _type(history, "u", buffer, (line, column), (line, column), key)
        second = _prompt_after(history, buffer, (line, column + 1), budget_tokens=2048)
        shared = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), len(first))
        # The prompts part on the cursor's line, after the region's lines above it, before the edits.
        assert first.index(REGION_START) < first.index("    return a + 99\n") < shared
        assert shared == first.index("def f100(ar") + len("def f100(ar")
        assert shared < first.index("+def f0(arg):")
    # The budget is reckoned at 4 characters a token, the fixed instructions not counted.
    assert len(second) - len(SYSTEM_PROMPT) - 200 <= 2048 * 4
    small = _prompt_after(history, buffer, (line, 17), budget_tokens=150)
    assert "def f100(arg_name<|user_cursor_is_here|>):" in small and "def f117(a):" not in small
    assert small.count("\n") < second.count("\n") - 40


def test_the_region_is_held_to_what_an_answer_can_rewrite() -> None:
    from tandem.cache.edit_region import region_bounds
    from tandem.completion.config.tree import NextEditConfig
    from tandem.completion.next_edit.context import region_max_chars, region_span

    settings = NextEditConfig()
    limit = region_max_chars(settings)
    assert limit == min(settings.budget_tokens * 4 // 2, settings.max_tokens * 4 * 3 // 4)
    code = LineBuffer("".join(f"line_{n} = {n}\n" for n in range(60)))
    # Ordinary lines: the region is `region_bounds`' whole.
    bounds = region_bounds(code.line_count, 30, above=settings.region_above, below=settings.region_below)
    assert region_span(code, 30, settings) == bounds
    # A long line two below the cursor: the region ends before it, and keeps its lines above.
    lines = [f"line_{n} = {n}" for n in range(60)]
    lines[32] = "x = [" + "1, " * limit + "]"
    long_below = LineBuffer("\n".join(lines) + "\n")
    assert region_span(long_below, 30, settings) == (bounds[0], 32)
    # The cursor on the long line: nothing to rewrite.
    assert region_span(long_below, 32, settings) is None
    # Long lines everywhere: the region is what fits, nearest the cursor first.
    wide = LineBuffer("\n".join("y" * (limit // 5) for _ in range(60)) + "\n")
    start, end = region_span(wide, 30, settings) or (0, 0)
    assert (start, end) == (29, 33) and (end - start) * (limit // 5 + 1) <= limit  # a line below first


def test_the_next_edit_budget_never_passes_the_largest_window() -> None:
    import dataclasses

    from tandem.cache.context import MAX_BUDGET_TOKENS
    from tandem.completion.config.tree import NextEditConfig
    from tandem.completion.next_edit.context import budget_tokens, region_max_chars

    huge = dataclasses.replace(NextEditConfig(), budget_tokens=10**9, max_tokens=10**9)
    assert budget_tokens(huge) == MAX_BUDGET_TOKENS
    assert region_max_chars(huge) == MAX_BUDGET_TOKENS * 4 // 2
    assert budget_tokens(NextEditConfig()) == NextEditConfig().budget_tokens
