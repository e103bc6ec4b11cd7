"""Raw FIM prompts: each family's layout, and `split_fim_prompt` recovering what `render` put in."""

from __future__ import annotations

import pytest

from tandem.completion.providers.backends import fim_templates
from tandem.completion.providers.backends.fim_templates import TEMPLATES, render, split_fim_prompt

SAMPLES: list[tuple[str, str]] = [
    ("def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"),
    ("", ""),
    ("x = 1", ""),
    ("", "y = 2\n"),
    ("  indented\n\t", "  \n"),
    ("# ünïcödé ✓ 漢字\ns = '", "'\n"),
    ("a < b and c > d  # <tag>", "[x] for x in [PREFIX_LIKE]"),
    ("line\r\nwindows\r\n", "\r\nmore\r\n"),
]


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@pytest.mark.parametrize(("prefix", "suffix"), SAMPLES)
def test_render_then_split_gives_back_prefix_and_suffix(name: str, prefix: str, suffix: str) -> None:
    prompt = render(name, prefix, suffix)
    assert split_fim_prompt(prompt) == (prefix, suffix)


def test_layouts_follow_each_family() -> None:
    assert render("qwen2.5-coder", "P", "S") == "<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>"
    assert render("starcoder2", "P", "S") == "<fim_prefix>P<fim_suffix>S<fim_middle>"
    assert render("codellama", "P", "S") == "<PRE> P <SUF>S <MID>"
    # Codestral (Mistral's FIM) puts the suffix first.
    assert render("codestral", "P", "S") == "[SUFFIX]S[PREFIX]P"
    deepseek = TEMPLATES["deepseek-coder"]
    assert render("deepseek-coder", "P", "S") == f"{deepseek.prefix}P{deepseek.suffix}S{deepseek.middle}"


def test_every_template_has_stop_tokens() -> None:
    for template in TEMPLATES.values():
        assert template.stop, template.name


def test_prompts_in_no_template_are_not_split() -> None:
    assert split_fim_prompt("just some text") is None
    assert split_fim_prompt("<|fim_prefix|>no suffix marker<|fim_middle|>") is None
    assert split_fim_prompt("") is None


def test_unknown_template_raises_key_error() -> None:
    with pytest.raises(KeyError):
        fim_templates.render("no-such-family", "a", "b")
