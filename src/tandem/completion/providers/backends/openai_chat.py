"""The `openai-chat` backend: `POST {base_url}/chat/completions`, streamed.

Works with any OpenAI-compatible chat API (Cerebras, Groq, OpenAI, vLLM, llama.cpp server, `tandem sim`).
The model is asked for the missing middle (`completion.inline.prompts.chat_messages`); what it streams goes
through `AnswerCleaner`, the streaming form of `prompts.extract_middle`, because chat models wrap code
in fences and open with a sentence of chatter even when told not to.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING

from tandem.completion.inline.prompts import HOLE, chat_messages
from tandem.completion.providers.backends.http_backend import HttpBackend
from tandem.completion.providers.backends.streaming import now_ns, stream_chunks
from tandem.completion.providers.errors import CompletionError

if TYPE_CHECKING:
    from tandem.completion.providers.backends.base import ModelRequest, StreamStats

# The OpenAI API takes at most 4 stop sequences; several compatible servers enforce the same limit.
MAX_STOP_SEQUENCES = 4


class OpenAIChatBackend(HttpBackend):
    """Streams the hole's text from a chat-completions API. Implements `base.Backend`."""

    name = "openai-chat"
    path = "/chat/completions"

    def body(self, request: ModelRequest) -> dict[str, object]:
        """The JSON body for `request` (public so tests and traces can see what is sent)."""
        return chat_body(request, self._config.model)

    async def stream(self, request: ModelRequest, stats: StreamStats) -> AsyncIterator[str]:
        """Yield cleaned text as it arrives; see `base.Backend.stream`."""
        call = self._call(request)
        cleaner = AnswerCleaner(raw=bool(request.messages))
        try:
            async with aclosing(stream_chunks(self._client, call, stats)) as chunks:
                async for chunk in chunks:
                    if cleaner.done:
                        # Past the closing fence: read on (not shown) for the usage chunk, and so that
                        # the connection ends cleanly and goes back to the pool for the next keystroke.
                        continue
                    text = cleaner.feed(chunk.text)
                    if text:
                        if not stats.first_token_ns:
                            stats.first_token_ns = now_ns()
                        yield text
        except CompletionError:
            # What arrived before the failure is still the model's text: hand it over, then fail.
            tail = cleaner.finish()
            if tail:
                yield tail
            raise
        tail = cleaner.finish()
        if tail:
            if not stats.first_token_ns:
                stats.first_token_ns = now_ns()
            yield tail


_FENCE = "```"
# First words of the sentence chat models put before code (the same list as prompts.extract_middle).
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
    """`prompts.extract_middle`, one chunk at a time.

    At the start it holds text back only while it could still be a fence line (```lang) or a line of
    chatter ("Here is the code:"); once the first line is plainly code it passes text straight through.
    Inside a fence it stops at the closing fence and sets `done`. Echoed hole markers are removed.

    Differences from `extract_middle`: a fence is only recognised at the start of the answer (after
    chatter and blank lines), since a streamed answer cannot wait to see whether one comes later; several
    chatter lines are dropped, not one; an answer that is only an opening fence line gives "".
    """

    def __init__(self, *, raw: bool = False) -> None:
        # raw: pass everything through untouched (the edit path parses whole answers itself).
        self._state = "plain" if raw else "head"  # head -> plain | fenced -> done
        self._raw = raw
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
        if self._raw:
            return text
        if self._state == "plain":
            return self._holes.feed(text)
        if self._state == "fenced":
            return self._holes.feed(self._fenced(text))
        return self._holes.feed(self._head(text))

    def finish(self) -> str:
        """The rest, at the end of the answer (or when the stream failed)."""
        if self._raw:
            self._state = "done"
            return ""
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


def chat_body(request: ModelRequest, model: str) -> dict[str, object]:
    """A Chat Completions body for `request`: its conversation as given, or the hole-filling prompt."""
    body: dict[str, object] = {
        "messages": (
            [{"role": role, "content": content} for role, content in request.messages]
            if request.messages
            else chat_messages(
                request.prefix,
                request.suffix,
                path=request.path,
                language=request.language,
                context=request.context,
            )
        ),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if model:
        body["model"] = model
    if request.stop:
        body["stop"] = list(request.stop[:MAX_STOP_SEQUENCES])
    return body
