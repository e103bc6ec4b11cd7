"""The chat prompt with a hole marker, its inverse, and `extract_middle` on real-looking answers."""

from __future__ import annotations

import pytest

from tandem.completion.inline.prompts import HOLE, SYSTEM_PROMPT, chat_messages, extract_middle, split_chat_prompt

SAMPLES: list[tuple[str, str]] = [
    ("def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"),
    ("", ""),
    ("x = 1\n", ""),
    ("", "\ny = 2"),
    ("\n\n", "\n\n"),
    ("s = 'ünïcödé ✓'", "  # 漢字\n"),
    ("```python\nx = 1\n", "\n```\n"),
]


@pytest.mark.parametrize(("prefix", "suffix"), SAMPLES)
def test_chat_messages_round_trip(prefix: str, suffix: str) -> None:
    messages = chat_messages(prefix, suffix, path="src/app.py", language="python")
    assert split_chat_prompt(messages) == (prefix, suffix)


def test_chat_messages_shape() -> None:
    system, user = chat_messages("a", "b", path="m.py", language="python")
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    assert user["content"].startswith("File: m.py (python)\n")
    assert f"a{HOLE}b" in user["content"]
    assert chat_messages("a", "b")[1]["content"].startswith("File: untitled\n")


def test_split_chat_prompt_ignores_messages_without_a_hole() -> None:
    messages = chat_messages("p", "s")
    assert split_chat_prompt([*messages, {"role": "assistant", "content": "ok"}]) == ("p", "s")
    assert split_chat_prompt([{"role": "user", "content": "hello"}]) is None
    assert split_chat_prompt([{"role": "user", "content": f"no markers {HOLE} here"}]) is None
    assert split_chat_prompt([]) is None


@pytest.mark.parametrize(
    ("answer", "middle"),
    [
        ("x + y", "x + y"),
        ("x + y\n", "x + y\n"),
        ("```python\nreturn a + b\n```", "return a + b"),
        ("```\nreturn a + b\n```\n", "return a + b"),
        ("```py\nline1\nline2\n```\nThis adds the numbers.", "line1\nline2"),
        ("Here's the code:\n```python\nreturn a + b\n```", "return a + b"),
        ("Sure! Here is the missing code:\n\n```python\nx = 1\n```\nHope it helps.", "x = 1"),
        ("Here is the completion:\nreturn a + b", "return a + b"),
        ("Certainly.\n    return a + b\n", "    return a + b\n"),
        ("The missing code is:\nfoo()", "foo()"),
        ("```python\nunclosed = True\n", "unclosed = True\n"),
        (f"return a{HOLE} + b", "return a + b"),
        ("", ""),
        ("here_is_a_name = 1", "here_is_a_name = 1"),
    ],
)
def test_extract_middle(answer: str, middle: str) -> None:
    assert extract_middle(answer) == middle
