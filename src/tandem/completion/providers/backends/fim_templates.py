"""Raw fill-in-the-middle prompts with each model family's special tokens.

Used when a `/v1/completions` server takes a raw prompt (llama.cpp, vLLM without a `suffix` field).
`split_fim_prompt` reverses any of them (for tests; the simulator reads them its own way).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FimTemplate:
    name: str
    prefix: str
    suffix: str
    middle: str
    stop: tuple[str, ...] = ()

    def render(self, prefix: str, suffix: str) -> str:
        return f"{self.prefix}{prefix}{self.suffix}{suffix}{self.middle}"


TEMPLATES: dict[str, FimTemplate] = {
    t.name: t
    for t in (
        FimTemplate(
            "qwen2.5-coder",
            "<|fim_prefix|>",
            "<|fim_suffix|>",
            "<|fim_middle|>",
            stop=("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>"),
        ),
        FimTemplate("starcoder2", "<fim_prefix>", "<fim_suffix>", "<fim_middle>", stop=("<|endoftext|>", "<file_sep>")),
        FimTemplate("codellama", "<PRE> ", " <SUF>", " <MID>", stop=("<EOT>",)),
        # DeepSeek's tokens really use FULLWIDTH VERTICAL LINE and LOWER ONE EIGHTH BLOCK characters.
        FimTemplate(
            "deepseek-coder",
            "<｜fim▁begin｜>",  # noqa: RUF001
            "<｜fim▁hole｜>",  # noqa: RUF001
            "<｜fim▁end｜>",  # noqa: RUF001
            stop=("<｜end▁of▁sentence｜>",),  # noqa: RUF001
        ),
        FimTemplate("codestral", "[SUFFIX]", "[PREFIX]", "", stop=("</s>",)),
    )
}


def render(template: str, prefix: str, suffix: str, middle: str = "") -> str:
    """The raw prompt for `template`; `middle` is the answer's beginning, already written, which the model
    continues. Codestral puts the suffix first: [SUFFIX]s[PREFIX]p."""
    t = TEMPLATES[template]
    if t.name == "codestral":
        return f"{t.prefix}{suffix}{t.suffix}{prefix}{middle}"
    return t.render(prefix, suffix) + middle


def split_fim_prompt(prompt: str) -> tuple[str, str] | None:
    """(prefix, suffix) of a raw FIM prompt in any known template; None if it is in none."""
    for t in TEMPLATES.values():
        if t.name == "codestral":
            if prompt.startswith(t.prefix) and t.suffix in prompt:
                suffix, _, prefix = prompt[len(t.prefix) :].partition(t.suffix)
                return prefix, suffix
            continue
        if prompt.startswith(t.prefix) and prompt.endswith(t.middle) and t.suffix in prompt:
            body = prompt[len(t.prefix) : len(prompt) - len(t.middle)]
            prefix, _, suffix = body.rpartition(t.suffix)
            return prefix, suffix
    return None
