"""Continuing a completion from the previous response on a Responses API WebSocket: what the server
holds, and the short message that turns the prompt it holds into the new one.

Over a WebSocket the server keeps the connection's most recent response in memory, so a turn can send
`previous_response_id` and only new input (`store: false` included). For consecutive completions in one
document the new input is an edit of the previous prompt: the lines around the cursor, before and
after, fenced so that a model (and the simulator, which reads it with its own code) can apply it:

    The code changed since my previous message. In that message, replace
    ~~~~
        return sel<hole>
    ~~~~
    with
    ~~~~
        return self.<hole>
    ~~~~
    Then fill the hole in the changed code, answering as before (your previous answer no longer applies).

The last sentence is the request's `follow_up`, worded by the feature whose prompts these are (completions:
`completion.inline.prompts.FOLLOW_UP`); only a request that has one is continued. The fence is four tildes
or more: longer than any run of tildes in either block. The replaced block is whole lines, widened until it
occurs exactly once in the previous message.

A continuation is sent only where it is cheaper than the whole prompt, and the conversation the server
holds (every prompt, edit and answer since the last whole prompt) is billed as input on each turn, cached
or not, so a chain ends (the next prompt goes in full) once that conversation outgrows the prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EDIT_INTRO = "The code changed since my previous message. In that message, replace"
MIN_FENCE = 4
# An edit is sent only when it is at most this share of the whole prompt (else the prompt goes in full).
MAX_EDIT_SHARE = 0.25
# The conversation held server-side may grow to this multiple of the prompt before a chain restarts:
# past it, every turn is billed more input than a fresh prompt would be.
MAX_HELD_GROWTH = 2.0
# Continuations in a row at most, whatever their size.
MAX_CHAIN_TURNS = 16

_TILDES = re.compile(r"~+")


@dataclass(frozen=True, kw_only=True)
class Held:
    """What the server holds for a connection's most recent response, as far as continuing goes."""

    response_id: str
    path: str
    instructions: str
    # The whole user message the held conversation amounts to now (the latest document state).
    user_text: str
    # Characters of the whole conversation held: prompts, edits and answers since the last whole prompt.
    held_chars: int
    turns: int = 0

    def after(self, response_id: str, *, user_text: str, sent_chars: int, answer_chars: int) -> Held:
        """The state after a continuation that sent `sent_chars` and was answered with `answer_chars`."""
        return Held(
            response_id=response_id,
            path=self.path,
            instructions=self.instructions,
            user_text=user_text,
            held_chars=self.held_chars + sent_chars + answer_chars,
            turns=self.turns + 1,
        )


def continuation(held: Held | None, *, path: str, instructions: str, user_text: str, follow_up: str) -> str | None:
    """The edit message (ending with `follow_up`) that continues `held` into `user_text`, or None when the
    whole prompt should go: no chain, another document or system text, a long chain, or an edit not much
    smaller than the prompt."""
    if held is None or held.path != path or held.instructions != instructions:
        return None
    if held.turns >= MAX_CHAIN_TURNS or held.user_text == user_text:
        return None
    message = edit_message(held.user_text, user_text, follow_up=follow_up)
    if message is None or len(message) > MAX_EDIT_SHARE * len(user_text):
        return None
    if held.held_chars + len(message) > MAX_HELD_GROWTH * len(user_text):
        return None
    return message


def edit_message(old: str, new: str, *, follow_up: str) -> str | None:
    """The message that turns `old` into `new` and ends with `follow_up` (see the module docstring); None if
    they are equal or no block of whole lines short of the whole text is unique in `old`."""
    if old == new:
        return None
    same_start = _common_prefix(old, new)
    same_end = _common_prefix(old[same_start:][::-1], new[same_start:][::-1])
    start = old.rfind("\n", 0, same_start) + 1
    old_end = _line_end(old, len(old) - same_end)
    # Whatever follows the changed line in `old` is unchanged, so it is as long in `new`.
    tail = len(old) - old_end
    while old.count(old[start:old_end]) != 1 or start == old_end:
        if start == 0 and old_end == len(old):
            return None
        if start > 0:
            start = old.rfind("\n", 0, start - 1) + 1
        if old_end < len(old):
            old_end = _line_end(old, old_end + 1)
            tail = len(old) - old_end
    before, after = old[start:old_end], new[start : len(new) - tail]
    if start == 0 and old_end == len(old):
        return None  # the whole text: no smaller than sending it
    longest = max((len(run) for run in _TILDES.findall(before + "\n" + after)), default=0)
    fence = "~" * max(MIN_FENCE, longest + 1)
    return f"{EDIT_INTRO}\n{fence}\n{before}\n{fence}\nwith\n{fence}\n{after}\n{fence}\n{follow_up}"


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    at = 0
    # Compare in halving steps: a prompt is thousands of characters and usually differs near its end.
    step = max(1, limit)
    while step:
        if at + step <= limit and a[at : at + step] == b[at : at + step]:
            at += step
        else:
            step //= 2
    return at


def _line_end(text: str, at: int) -> int:
    """The end (before its newline) of the line holding position `at`."""
    end = text.find("\n", at)
    return len(text) if end < 0 else end
