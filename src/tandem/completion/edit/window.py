"""What an edit prompt shows within the largest window a model takes (128K tokens).

The file being edited is shown whole when the prompt fits, the answer's `max_tokens` kept free. A file too
long for that (one under the privacy gate's size limit can still be several windows long) is shown in
part: the lines around the selection that fit (`excerpt_span`), sized from the whole prompt's tokens per
character and counted again before it is sent. When even the selection does not fit, nothing is sent and
the user is told why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from tandem.cache.context import MAX_BUDGET_TOKENS
from tandem.completion.edit.prompt import EditPrompt, edit_messages, excerpt_span

Messages = tuple[tuple[str, str], ...]  # (role, content) of each message, as sent


def messages_of(prompt: EditPrompt) -> Messages:
    return tuple((m["role"], m["content"]) for m in edit_messages(prompt))


async def fit_window(
    prompt: EditPrompt,
    *,
    answer_tokens: int,
    count: Callable[[Messages], Awaitable[int]],
    window_tokens: int = MAX_BUDGET_TOKENS,
) -> tuple[EditPrompt, Messages, str]:
    """The prompt as it is sent, its messages, and why it cannot be ("" when it can). `count` gives a
    prompt's tokens; it is asked only when they could be over the room (a token is at least a character).
    `window_tokens`: the smallest context window of the models that may be asked."""
    window_tokens = min(window_tokens, MAX_BUDGET_TOKENS)
    room = window_tokens - min(answer_tokens, window_tokens // 4)

    async def over(messages: Messages) -> int:
        if sum(len(content) for _, content in messages) <= room:
            return 0
        tokens = await count(messages)
        return tokens if tokens > room else 0

    messages = messages_of(prompt)
    tokens = await over(messages)
    if not tokens:
        return prompt, messages, ""
    chars = sum(len(content) for _, content in messages)
    others = chars - len(prompt.text)
    for share in (0.9, 0.6):  # the part's own tokens per character may be more than the file's
        budget = int(room * share * chars / tokens) - others
        span = excerpt_span(prompt.text, prompt.first_line, prompt.end_line, budget) if budget > 0 else None
        if span is None:
            break
        part = dataclasses.replace(prompt, shown=span)
        shown = messages_of(part)
        if not await over(shown):
            return part, shown, ""
    return (
        prompt,
        messages,
        f"not sent to a model: the edit's prompt would be about {tokens:,} tokens, over the "
        f"{window_tokens:,}-token window, and the selected lines with the other files shown do not fit "
        "in it alone: select fewer lines",
    )
