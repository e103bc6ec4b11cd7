"""A completion's request in each provider's shape, the chat prompt with a hole marker, its inverse, and
`extract_middle` on real-looking answers."""

from __future__ import annotations

import pytest

from tandem.completion.config.tree import ModelConfig
from tandem.completion.inline.answer import extract_middle
from tandem.completion.inline.prompts import (
    FOLLOW_UP,
    HOLE,
    SYSTEM_PROMPT,
    chat_messages,
    completion_request,
    split_chat_prompt,
    warm_request,
)
from tandem.completion.providers.backends.fim_templates import TEMPLATES

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


def test_a_chat_provider_is_asked_by_the_hole_filling_conversation() -> None:
    config = ModelConfig(provider="anthropic", max_tokens=64, temperature=0.2)
    asked = completion_request(config, prefix="a = ", suffix="\n", context="# b.py\n", path="m.py", language="python")
    assert asked.messages == tuple(
        (m["role"], m["content"])
        for m in chat_messages("a = ", "\n", path="m.py", language="python", context="# b.py\n")
    )
    assert (asked.prefix, asked.suffix, asked.raw_prompt) == ("", "", "")
    assert (asked.max_tokens, asked.temperature, asked.path, asked.follow_up) == (64, 0.2, "m.py", FOLLOW_UP)


def test_a_fim_provider_is_asked_by_a_fill_with_other_files_first_in_the_prefix() -> None:
    for template in ("", "qwen2.5-coder"):
        asked = completion_request(
            ModelConfig(provider="fim", fim_template=template), prefix="a = ", suffix="\n", context="# b.py\n"
        )
        # The backend adds a template's tokens to a fill; the prompt is the feature's.
        assert (asked.prefix, asked.suffix, asked.raw_prompt, asked.stop) == ("# b.py\na = ", "\n", "", ())
        assert not asked.messages and not asked.follow_up


def test_a_local_window_begun_in_the_middle() -> None:
    fim = ModelConfig(provider="fim", fim_template="qwen2.5-coder")
    asked = completion_request(fim, prefix="def f():\n", middle="    re", suffix="\n")
    assert asked.raw_prompt == "<|fim_prefix|>def f():\n<|fim_suffix|>\n<|fim_middle|>    re"
    assert asked.stop == TEMPLATES["qwen2.5-coder"].stop
    assert (asked.prefix, asked.suffix) == ("def f():\n    re", "\n")
    # Without a template the middle ends the prefix, for a fill and a conversation alike.
    plain = completion_request(ModelConfig(provider="fim"), prefix="def f():\n", middle="    re", suffix="\n")
    assert (plain.prefix, plain.raw_prompt) == ("def f():\n    re", "")
    chat = completion_request(ModelConfig(provider="openai-chat"), prefix="def f():\n", middle="    re", suffix="\n")
    assert split_chat_prompt([{"role": r, "content": c} for r, c in chat.messages]) == ("def f():\n    re", "\n")


def test_the_warm_up_request_carries_the_completions_system_text() -> None:
    assert warm_request().messages[0] == ("system", SYSTEM_PROMPT)
