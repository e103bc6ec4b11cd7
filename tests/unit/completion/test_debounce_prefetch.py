"""Adaptive debounce, the view of a document after accepting a suggestion, and the prefetch budget."""

from __future__ import annotations

from tandem.cache.lines import LineBuffer
from tandem.completion.inline.debounce import AdaptiveDebounce
from tandem.completion.inline.prefetch import AfterAccepting, TokenBudget


def test_a_model_that_keeps_up_with_the_typing_is_asked_at_once() -> None:
    debounce = AdaptiveDebounce(ceiling_s=0.3)
    assert debounce.delay_s() == 0  # nothing learnt yet
    at = 0.0
    for _ in range(20):
        at += 0.1
        debounce.keystroke("a", at)
    debounce.model_answered(0.15)  # faster than three keystrokes
    assert debounce.delay_s() == 0


def test_a_model_slower_than_the_typing_waits_for_a_pause_within_the_ceiling() -> None:
    debounce = AdaptiveDebounce(ceiling_s=0.3)
    at = 0.0
    for _ in range(20):
        at += 0.1
        debounce.keystroke("a", at)
    debounce.model_answered(0.9)
    assert 0.1 < debounce.delay_s() <= 0.3
    slow_typist = AdaptiveDebounce(ceiling_s=0.3)
    at = 0.0
    for _ in range(20):
        at += 0.5
        slow_typist.keystroke("a", at)
    slow_typist.model_answered(2.0)
    assert slow_typist.delay_s() == 0.3  # capped
    debounce.keystroke("a", at + 5.0)  # a pause is not rhythm
    assert debounce.typing_gap_s is not None and debounce.typing_gap_s < 0.2


def test_fixed_mode_ignores_rhythm() -> None:
    fixed = AdaptiveDebounce(ceiling_s=0.35, fixed=True)
    assert fixed.delay_s() == 0.35


def test_after_accepting_reads_as_if_the_text_were_inserted() -> None:
    buffer = LineBuffer("def f(x):\n    return \n\nprint(f(1))\n")
    view = AfterAccepting(buffer, 1, 11, "x + 1\n    # done")
    line, character = view.cursor
    assert (line, character) == (2, 10)
    assert view.text_before(line, character, 100) == "def f(x):\n    return x + 1\n    # done"
    assert view.text_before(line, character, 6) == "# done"
    assert view.text_after(line, character, 6) == "\n\nprin"
    assert view.line_content(1) == "    return x + 1"
    assert view.line_content(2) == "    # done"
    assert view.line_content(3) == ""
    assert view.line_content(4) == "print(f(1))"
    single = AfterAccepting(buffer, 3, 6, "f(2)")
    assert single.cursor == (3, 10)
    assert single.line_content(3) == "print(f(2)f(1))"


def test_token_budget_is_a_sliding_minute() -> None:
    budget = TokenBudget(per_minute=1000)
    assert budget.allows(1000, now_s=0)
    budget.charge(800, now_s=0)
    assert not budget.allows(300, now_s=30)
    assert budget.allows(200, now_s=30)
    assert budget.allows(1000, now_s=61)


def test_token_budget_settles_a_charge_to_what_was_spent() -> None:
    budget = TokenBudget(per_minute=1000)
    charge = budget.charge(900, now_s=0)  # the estimate: a prompt and the whole max_tokens
    assert not budget.allows(200, now_s=1)
    TokenBudget.settle(charge, 300)  # cancelled after a few tokens
    assert budget.spent(now_s=1) == 300 and budget.allows(700, now_s=1)
    assert budget.spent(now_s=61) == 0  # still counted at the time it was charged
    unreported = budget.charge(500, now_s=70)
    TokenBudget.settle(unreported, 0)  # went out, no usage reported: the estimate stands
    assert budget.spent(now_s=71) == 500
    TokenBudget.settle(unreported, 0, sent=False)  # never went out: nothing spent
    assert budget.spent(now_s=71) == 0


def test_the_median_typing_interval_is_not_lengthened_by_pauses() -> None:
    debounce = AdaptiveDebounce(ceiling_s=0.25)
    at_s = 0.0
    for gap_s in (0.1, 0.1, 0.6, 0.1, 0.1, 0.1):  # a pause at the end of a line
        at_s += gap_s
        debounce.keystroke("u", at_s)
    assert debounce.typing_gap_s is not None and debounce.typing_gap_s > 0.15  # the moving average is
    assert debounce.median_gap_s is not None and round(debounce.median_gap_s, 6) == 0.1


def test_one_slow_answer_among_fast_ones_does_not_hold_the_next_misses_back() -> None:
    # A local server reading a whole window once (a file's first request) answers in seconds; the keys
    # after it, whose prompt it has cached, in ~0.1 s. The model keeps up with the typing again at once.
    debounce = AdaptiveDebounce(ceiling_s=0.15)
    at = 0.0
    for _ in range(20):
        at += 0.17
        debounce.keystroke("a", at)
    debounce.model_answered(2.8)
    assert debounce.delay_s() > 0  # one answer: the model looks slow
    debounce.model_answered(0.1)
    debounce.model_answered(0.12)
    assert debounce.delay_s() == 0


def test_a_model_on_this_machine_is_asked_at_once_unless_the_wait_is_fixed() -> None:
    debounce = AdaptiveDebounce(ceiling_s=0.15)
    at = 0.0
    for _ in range(20):
        at += 0.17
        debounce.keystroke("a", at)
    debounce.model_answered(2.0)
    assert debounce.delay_s() > 0  # a cloud model this slow waits for a pause
    assert debounce.delay_s(local=True) == 0
    debounce.fixed = True
    assert debounce.delay_s(local=True) == 0.15
