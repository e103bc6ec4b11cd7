"""The streaming answer cleaner of a completion asked as a conversation (`inline.answer`): same result as
`extract_middle`, however the answer is split into chunks, and text released as early as it is certain."""

from __future__ import annotations

import pytest

from tandem.completion.config.tree import ModelConfig
from tandem.completion.inline.answer import AnswerCleaner, answer_cleaner, extract_middle
from tandem.completion.inline.prompts import HOLE, completion_request

# Answers where the streaming cleaner must agree with extract_middle exactly.
ANSWERS = [
    "x + y",
    "x + y\n",
    "\n    return a + b\n",
    "```python\nreturn a + b\n```",
    "```\nreturn a + b\n```\n",
    "```py\nline1\nline2\n```\nThis adds the numbers.",
    "```py\nline1\n\n\nline2\n```",
    "Here's the code:\n```python\nreturn a + b\n```",
    "Sure! Here is the missing code:\n\n```python\nx = 1\n```\nHope it helps.",
    "Here is the completion:\nreturn a + b",
    "Certainly.\n    return a + b\n",
    "The missing code is:\nfoo()",
    "```python\nunclosed = True\n",
    "```python\ns = 'a `tick` and ``two``'\n```",
    f"return a{HOLE} + b",
    f"```\n{HOLE}value\n```",
    "<|tandem:not-a-hole|> stays",
    "",
    "here_is_a_name = 1\n",
    "surely_done = True",
    "```python\n```",
    "`inline` code",
    "a = '<|'",
]


def clean_in_chunks(answer: str, cuts: list[int]) -> tuple[str, bool]:
    cleaner = AnswerCleaner()
    out: list[str] = []
    start = 0
    for cut in [*cuts, len(answer)]:
        out.append(cleaner.feed(answer[start:cut]))
        start = cut
    done_before_finish = cleaner.done
    out.append(cleaner.finish())
    return "".join(out), done_before_finish


@pytest.mark.parametrize("answer", ANSWERS)
def test_whole_answer_matches_extract_middle(answer: str) -> None:
    assert clean_in_chunks(answer, [])[0] == extract_middle(answer)


@pytest.mark.parametrize("answer", ANSWERS)
def test_split_at_every_pair_of_positions_matches_extract_middle(answer: str) -> None:
    expected = extract_middle(answer)
    for first in range(len(answer) + 1):
        for second in range(first, len(answer) + 1):
            assert clean_in_chunks(answer, [first, second])[0] == expected, (first, second)


@pytest.mark.parametrize("answer", ANSWERS)
def test_one_character_at_a_time(answer: str) -> None:
    assert clean_in_chunks(answer, list(range(1, len(answer))))[0] == extract_middle(answer)


def test_plain_code_is_released_before_its_line_ends() -> None:
    cleaner = AnswerCleaner()
    assert cleaner.feed("    retu") == "    retu"
    assert cleaner.feed("rn a") == "return a"[4:]


def test_a_possible_fence_or_chatter_is_held_until_its_line_ends() -> None:
    cleaner = AnswerCleaner()
    assert cleaner.feed("``") == ""
    assert cleaner.feed("`python") == ""
    assert cleaner.feed("\nx = 1") == "x = 1"
    chatter = AnswerCleaner()
    assert chatter.feed("Here is") == ""
    assert chatter.feed(" the code:\n") == ""
    assert chatter.feed("y = 2") == "y = 2"


def test_closing_fence_sets_done_and_later_text_is_dropped() -> None:
    cleaner = AnswerCleaner()
    assert cleaner.feed("```\nx = 1\n") == "x = 1"
    assert not cleaner.done
    assert cleaner.feed("``") == ""
    assert cleaner.feed("`\nExplanation follows.") == ""
    assert cleaner.done
    assert cleaner.feed("more") == ""
    assert cleaner.finish() == ""


def test_done_is_seen_before_finish_for_fenced_answers() -> None:
    assert clean_in_chunks("```py\na\n```\ntrailing chatter", [5, 9]) == ("a", True)
    assert clean_in_chunks("plain", [2]) == ("plain", False)


def test_answer_that_is_only_an_opening_fence_gives_nothing() -> None:
    # extract_middle would return the fence line itself; a streamed fence line is never code.
    assert clean_in_chunks("```python", [3]) == ("", False)


def test_several_chatter_lines_before_a_fence_are_all_dropped() -> None:
    answer = "Sure.\nHere is the code:\n```python\nx = 1\n```"
    assert clean_in_chunks(answer, [4, 12, 30]) == ("x = 1", True)


def test_hole_marker_split_across_chunks_is_removed() -> None:
    cleaner = AnswerCleaner()
    out = cleaner.feed("a<|tan") + cleaner.feed("dem:ho") + cleaner.feed("le|>b") + cleaner.finish()
    assert out == "ab"


def test_only_an_answer_to_a_conversation_is_cleaned() -> None:
    # A chat API is asked for the hole's middle in a conversation: its answer is cleaned. A fill's answer (a
    # completions API) is the code itself, as are next edits' and edits' answers, which never come here.
    for provider in ("openai-chat", "anthropic", "openai-responses"):
        asked = completion_request(ModelConfig(provider=provider), prefix="a = ", suffix="\n")  # type: ignore[arg-type]
        assert isinstance(answer_cleaner(asked), AnswerCleaner)
    assert answer_cleaner(completion_request(ModelConfig(provider="fim"), prefix="a = ", suffix="\n")) is None
