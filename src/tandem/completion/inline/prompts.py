"""Prompts for chat models, and turning their answers back into code.

A chat model is asked for the missing middle only: the file is shown with a hole marker at the cursor,
and the model must answer with the text that fills the hole. Models still wrap answers in code fences
or add a sentence of chatter; `extract_middle` strips both.

`split_chat_prompt` reads the layout back (tests check what was sent with it). The simulator has its own
reading of the layout (`tandem.sim.prompt_reading`), so that a change here is noticed by the contract tests.
"""

from __future__ import annotations

import re

HOLE = "<|tandem:hole|>"
_OPEN = "<|tandem:file|>"
_CLOSE = "<|tandem:end|>"

SYSTEM_PROMPT = (
    "You are a code completion engine. The user sends a file with exactly one hole marked "
    f"{HOLE}. Reply with only the code that belongs in the hole: no explanation, no code fences, "
    "no repetition of the code before or after the hole. Reply with nothing if nothing belongs there."
)


def chat_messages(
    prefix: str, suffix: str, *, path: str = "", language: str = "", context: str = ""
) -> list[dict[str, str]]:
    """The system and user messages that ask for the text between `prefix` and `suffix`.

    `context` (snippets from other files) comes first: it changes least from one keystroke to the next,
    so the provider's prompt cache keeps hitting on it; the cursor's neighbourhood comes last."""
    header = f"File: {path or 'untitled'}" + (f" ({language})" if language else "")
    related = f"Related code from other files:\n{context}\n" if context else ""
    user = f"{related}{header}\n{_OPEN}\n{prefix}{HOLE}{suffix}\n{_CLOSE}\nFill the hole."
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def split_chat_prompt(messages: list[dict[str, str]]) -> tuple[str, str] | None:
    """Recover (prefix, suffix) from messages built by `chat_messages`; None if they are not ours."""
    for message in reversed(messages):
        content = message.get("content", "")
        if not isinstance(content, str) or HOLE not in content:
            continue
        start = content.find(_OPEN)
        end = content.rfind(_CLOSE)
        if start < 0 or end < 0:
            return None
        body = content[start + len(_OPEN) + 1 : end - 1]
        prefix, _, suffix = body.partition(HOLE)
        return prefix, suffix
    return None


_FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:\n?```|\Z)", re.DOTALL)
_CHATTER = re.compile(
    r"^\s*(?:here(?:'s| is)\b|sure\b|certainly\b|the (?:missing|completed?) code\b|this (?:code|completes)\b)"
    r"[^\n]*\n",
    re.IGNORECASE,
)


def extract_middle(answer: str) -> str:
    """The code in a chat model's answer: the first fenced block if there is one, minus a leading
    sentence of chatter and any hole marker echoed back."""
    match = _FENCE.search(answer)
    text = match.group(1) if match else answer
    if not match:
        text = _CHATTER.sub("", text, count=1)
    return text.replace(HOLE, "")
