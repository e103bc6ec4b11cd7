"""Turning a chat model's answer to a completion's prompt back into code, whole (`extract_middle`) or as it
streams (`AnswerCleaner`).

A chat model asked for a hole's middle (`inline.prompts.chat_messages`) still wraps its answer in code fences
or opens with a sentence of chatter, and may echo the hole marker: both functions strip them. The backends
stream what the model wrote; the completion's stream (`inline.streams.read_into`) cleans it here, and only
an answer to a conversation (`answer_cleaner`): a fill's answer is code already, and next edits and edits
read their answers whole, each in its own way.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tandem.completion.inline.prompts import HOLE

if TYPE_CHECKING:
    from tandem.completion.providers.backends.base import ModelRequest


def answer_cleaner(request: ModelRequest) -> AnswerCleaner | None:
    """The cleaner for the answer to a completion's `request`: one for a conversation, None for a fill."""
    return AnswerCleaner() if request.messages else None


_FENCED_BLOCK = re.compile(r"```[^\n`]*\n(.*?)(?:\n?```|\Z)", re.DOTALL)
_CHATTER = re.compile(
    r"^\s*(?:here(?:'s| is)\b|sure\b|certainly\b|the (?:missing|completed?) code\b|this (?:code|completes)\b)"
    r"[^\n]*\n",
    re.IGNORECASE,
)


def extract_middle(answer: str) -> str:
    """The code in a chat model's answer: the first fenced block if there is one, minus a leading
    sentence of chatter and any hole marker echoed back."""
    match = _FENCED_BLOCK.search(answer)
    text = match.group(1) if match else answer
    if not match:
        text = _CHATTER.sub("", text, count=1)
    return text.replace(HOLE, "")


_FENCE = "```"
# First words of the sentence chat models put before code (the same list as `extract_middle`'s).
_CHATTER_STARTS = (
    "here's",
    "here is",
    "sure",
    "certainly",
    "the missing code",
    "the complete code",
    "the completed code",
    "this code",
    "this completes",
)
_CHATTER_LINE = re.compile(
    r"\s*(?:here(?:'s| is)\b|sure\b|certainly\b|the (?:missing|completed?) code\b|this (?:code|completes)\b)",
    re.IGNORECASE,
)


# The most the head of an answer is held while it may still be a fence line, chatter or blank lines.
HEAD_MAX_CHARS = 1000


class AnswerCleaner:
    """`extract_middle`, one chunk at a time.

    At the start it holds text back only while it could still be a fence line (```lang) or a line of
    chatter ("Here is the code:"); once the first line is plainly code it passes text straight through.
    Inside a fence it stops at the closing fence and sets `done`. Echoed hole markers are removed.

    Differences from `extract_middle`: a fence is only recognised at the start of the answer (after
    chatter and blank lines), since a streamed answer cannot wait to see whether one comes later; several
    chatter lines are dropped, not one; an answer that is only an opening fence line gives "".
    """

    def __init__(self) -> None:
        self._state = "head"  # head -> plain | fenced -> done
        self._blank = ""  # blank lines seen at the head; code if the answer turns out plain
        self._line = ""  # the head's current, unfinished line
        self._pending = ""  # fenced text that might be the start of the closing fence
        self._holes = _HoleFilter()

    @property
    def done(self) -> bool:
        """True once the closing fence has been seen: nothing more will be returned."""
        return self._state == "done"

    def feed(self, text: str) -> str:
        """The part of the answer that is certain now, given the next piece of it."""
        if self._state == "done" or not text:
            return ""
        if self._state == "plain":
            return self._holes.feed(text)
        if self._state == "fenced":
            return self._holes.feed(self._fenced(text))
        return self._holes.feed(self._head(text))

    def finish(self) -> str:
        """The rest, at the end of the answer (or when the stream failed)."""
        out = ""
        if self._state == "head":
            if not self._line.strip().startswith(_FENCE):
                out = self._blank + self._line
            self._blank = self._line = ""
            self._state = "plain"
        elif self._state == "fenced":
            out, self._pending = self._pending, ""
        self._state = "done"
        return self._holes.feed(out) + self._holes.finish()

    def _head(self, text: str) -> str:
        # Read from `at` rather than slicing what is left after each line: one pass over the text, however
        # many lines a chunk holds.
        line = self._line + text
        at = 0
        while True:
            newline = line.find("\n", at)
            if newline < 0:
                self._line = line[at:]
                start = self._line.lstrip()
                if len(self._line) > HEAD_MAX_CHARS or (
                    start and not _could_be_fence(start) and not _could_be_chatter(start)
                ):
                    # No fence line or sentence of chatter runs this long: held on, each chunk would
                    # re-read the whole line (a 28 KB first line held the loop for 0.2 s).
                    return self._become_plain("")
                return ""
            current = line[at : newline + 1]
            stripped = current.strip()
            if not stripped:
                self._blank += current
                at = newline + 1
                if len(self._blank) > HEAD_MAX_CHARS:
                    self._line = line[at:]
                    return self._become_plain("")
            elif stripped.startswith(_FENCE):
                self._state = "fenced"
                self._blank = self._line = ""
                return self._fenced(line[newline + 1 :])
            elif _CHATTER_LINE.match(current):
                # The chatter pattern starts with \s*, so it takes the blank lines before it too.
                self._blank = ""
                at = newline + 1
            else:
                self._line = line[at:]
                return self._become_plain("")

    def _become_plain(self, extra: str) -> str:
        out = self._blank + self._line + extra
        self._blank = self._line = ""
        self._state = "plain"
        return out

    def _fenced(self, text: str) -> str:
        buffer = self._pending + text
        end = buffer.find(_FENCE)
        if end >= 0:
            self._pending = ""
            self._state = "done"
            body = buffer[:end]
            return body[:-1] if body.endswith("\n") else body
        keep = _fence_start_len(buffer)
        self._pending = buffer[len(buffer) - keep :] if keep else ""
        return buffer[: len(buffer) - keep]


def _could_be_fence(start: str) -> bool:
    return _FENCE.startswith(start[:3])


def _could_be_chatter(start: str) -> bool:
    lowered = start.lower()
    return any(word.startswith(lowered) or lowered.startswith(word) for word in _CHATTER_STARTS)


def _fence_start_len(buffer: str) -> int:
    """Length of the tail of `buffer` that could begin a closing fence (with its newline)."""
    ticks = len(buffer) - len(buffer.rstrip("`"))
    ticks = min(ticks, len(_FENCE) - 1)
    before = len(buffer) - ticks
    if before > 0 and buffer[before - 1] == "\n":
        return ticks + 1
    return ticks


class _HoleFilter:
    """Removes the hole marker from a stream, holding back a tail that may be the start of one."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        buffer = self._held + text
        self._held = ""
        if "<" not in buffer:
            return buffer
        buffer = buffer.replace(HOLE, "")
        # A proper prefix of the marker holds its only "<" at its start, so a tail to hold starts at the last "<".
        at = buffer.rfind("<", max(0, len(buffer) - len(HOLE) + 1))
        if at >= 0 and HOLE.startswith(buffer[at:]):
            self._held = buffer[at:]
            return buffer[:at]
        return buffer

    def finish(self) -> str:
        out, self._held = self._held, ""
        return out
