"""How the simulator reads a completion request: its own reading of what arrives on the wire.

Written from the formats as they appear in requests, never from tandem's code, so that a contract test
against the simulator checks tandem against something tandem did not write: if tandem's prompt changes,
the simulator stops recognising it, answers without its truth, and the test notices.

Chat prompts (Chat Completions, Responses, Messages): the last message that holds the hole marker shows
the file as a block between a line with the file marker and a line with the end marker, the hole marker
standing where the answer goes:

    <|tandem:file|>
    {text before the cursor}<|tandem:hole|>{text after the cursor}
    <|tandem:end|>

Raw fill-in-the-middle prompts (`/v1/completions` without a `suffix` field): the special tokens that each
model family publishes, prefix-suffix-middle order, except Codestral's suffix-first order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

HOLE_MARKER = "<|tandem:hole|>"
FILE_MARKER = "<|tandem:file|>"
END_MARKER = "<|tandem:end|>"

# (family, begin token, middle separator token, end token) in prefix-suffix-middle order: begin + prefix +
# separator + suffix + end.
_PSM_FAMILIES: tuple[tuple[str, str, str, str], ...] = (
    ("qwen2.5-coder", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),
    ("starcoder2", "<fim_prefix>", "<fim_suffix>", "<fim_middle>"),
    ("codellama", "<PRE> ", " <SUF>", " <MID>"),
    # DeepSeek Coder's tokens are spelled with FULLWIDTH VERTICAL LINE and LOWER ONE EIGHTH BLOCK.
    ("deepseek-coder", "<\uff5cfim\u2581begin\uff5c>", "<\uff5cfim\u2581hole\uff5c>", "<\uff5cfim\u2581end\uff5c>"),
)
# Codestral: [SUFFIX] + suffix + [PREFIX] + prefix, the answer continuing the prefix.
_CODESTRAL = ("[SUFFIX]", "[PREFIX]")


def read_chat(messages: Sequence[Mapping[str, str]]) -> tuple[str, str] | None:
    """(text before the hole, text after it) of a chat prompt in tandem's layout; None if it is not one."""
    for message in reversed(messages):
        content = message.get("content", "")
        if HOLE_MARKER not in content:
            continue
        opening = content.find(FILE_MARKER + "\n")
        closing = content.rfind("\n" + END_MARKER)
        if opening < 0 or closing < opening:
            return None
        shown = content[opening + len(FILE_MARKER) + 1 : closing]
        if shown.count(HOLE_MARKER) != 1:
            return None
        before, _, after = shown.partition(HOLE_MARKER)
        return before, after
    return None


def read_fim(prompt: str) -> tuple[str, str] | None:
    """(prefix, suffix) of a raw FIM prompt in one of the families' token layouts; None if in none."""
    for _family, begin, separator, end in _PSM_FAMILIES:
        if prompt.startswith(begin) and end and end in prompt:
            # Text after the middle token is the middle's beginning, already written: the model continues
            # it, so for the answer it belongs to the prefix.
            body, _, begun = prompt[len(begin) :].rpartition(end)
            if separator in body:
                before, _, after = body.rpartition(separator)
                return before + begun, after
    first, second = _CODESTRAL
    if prompt.startswith(first) and second in prompt:
        after, _, before = prompt[len(first) :].partition(second)
        return before, after
    return None
