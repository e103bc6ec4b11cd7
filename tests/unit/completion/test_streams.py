"""Typing through a suggestion: which streams a request may reuse, and which it must not; and what a model's
answer becomes in a stream (`read_into`): cleaned when the completion asked by a conversation, as written
otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tandem.cache.lines import LineBuffer
from tandem.completion.config.tree import ModelConfig
from tandem.completion.inline.answer import AnswerCleaner, answer_cleaner
from tandem.completion.inline.prompts import completion_request
from tandem.completion.inline.request import CompletionRequest
from tandem.completion.inline.streams import Stream, StreamStore, read_into
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.errors import BadResponse, CompletionError
from tandem.completion.providers.tiers import Tier


def _request(buffer: LineBuffer, line: int, char: int, uri: str = "file:///a.py") -> CompletionRequest:
    return CompletionRequest(uri=uri, version=1, line=line, character=char, document=buffer)


async def test_typing_through_serves_the_rest() -> None:
    buffer = LineBuffer("def f(x):\n    return \n\nprint(f(1))\n")
    store = StreamStore()
    stream = store.add(_request(buffer, 1, 11), "m")
    stream.append("x + 1\n    # done")
    buffer.replace((1, 11), (1, 11), "x +")
    found = store.find(_request(buffer, 1, 14))
    assert found is not None and found[0] is stream
    assert stream.text[found[1] :] == " 1\n    # done"


async def test_typing_across_a_newline() -> None:
    buffer = LineBuffer("a = 1\n")
    store = StreamStore()
    stream = store.add(_request(buffer, 0, 5), "m")
    stream.append("\nb = 2\nc = 3")
    buffer.replace((0, 5), (0, 5), "\nb = 2\nc")
    found = store.find(_request(buffer, 2, 1))
    assert found is not None and stream.text[found[1] :] == " = 3"


async def test_a_different_keystroke_or_an_edit_nearby_misses() -> None:
    buffer = LineBuffer("x = \ny = 2\n")
    store = StreamStore()
    stream = store.add(_request(buffer, 0, 4), "m")
    stream.append("42")
    buffer.replace((0, 4), (0, 4), "5")  # typed something else
    assert store.find(_request(buffer, 0, 5)) is None
    buffer.replace((0, 4), (0, 5), "4")
    assert store.find(_request(buffer, 0, 5)) is not None
    buffer.replace((1, 4), (1, 5), "3")  # the text after the cursor changed
    assert store.find(_request(buffer, 0, 5)) is None


async def test_other_documents_and_cursor_moves_miss() -> None:
    buffer = LineBuffer("x = \n")
    store = StreamStore()
    stream = store.add(_request(buffer, 0, 4), "m")
    stream.append("1")
    assert store.find(_request(buffer, 0, 4, uri="file:///b.py")) is None
    assert store.find(_request(buffer, 0, 2)) is None
    assert stream.typed_through(_request(buffer, 0, 4)) == 0


async def test_waiters_wake_on_growth_and_on_finish() -> None:
    buffer = LineBuffer("")
    stream = StreamStore().add(_request(buffer, 0, 0), "m")
    waiter = asyncio.ensure_future(stream.changed())
    await asyncio.sleep(0)  # sleep-ok: one loop turn so the waiter is parked before the append
    assert not waiter.done()
    stream.append("a")
    await asyncio.wait_for(waiter, 1)
    waiter = asyncio.ensure_future(stream.changed())
    stream.finish()
    await asyncio.wait_for(waiter, 1)
    assert stream.done


async def test_a_wait_is_for_the_next_change_and_one_waiter_leaving_does_not_wake_the_others() -> None:
    buffer = LineBuffer("")
    stream = StreamStore().add(_request(buffer, 0, 0), "m")
    stream.append("a")  # a change with nobody waiting
    leaving = asyncio.ensure_future(stream.changed())
    staying = asyncio.ensure_future(stream.changed())
    await asyncio.sleep(0)  # sleep-ok: one loop turn so both waiters are parked
    assert not leaving.done() and not staying.done()  # the change before the wait does not count
    leaving.cancel()
    await asyncio.sleep(0)  # sleep-ok: one loop turn for the cancellation to land
    assert not staying.done()
    stream.append("b")
    await asyncio.wait_for(staying, 1)


async def test_typing_ahead_of_a_live_stream_is_recognised_only_when_it_agrees() -> None:
    buffer = LineBuffer("x = \n")
    store = StreamStore()
    stream = store.add(_request(buffer, 0, 4), "m")
    stream.append("fo")  # the model has produced less than the user has typed
    buffer.replace((0, 4), (0, 4), "foo")
    assert store.find(_request(buffer, 0, 7)) is None  # nothing to type through yet
    found = store.find_ahead(_request(buffer, 0, 7))
    assert found is not None and found[0] is stream and found[1] == 3
    buffer.replace((0, 4), (0, 7), "fun")  # typing that the stream's text so far contradicts
    assert store.find_ahead(_request(buffer, 0, 7)) is None
    stream.finish()
    buffer.replace((0, 4), (0, 7), "foo")
    assert store.find_ahead(_request(buffer, 0, 7)) is None  # a finished stream will not catch up


class Scripted:
    """A backend that streams the given pieces as they are (stamping its first, as backends do), then raises
    `error` if one is given."""

    name = "scripted"

    def __init__(self, *pieces: str, error: CompletionError | None = None) -> None:
        self.pieces = pieces
        self.error = error

    async def stream(self, request: ModelRequest, stats: StreamStats) -> AsyncIterator[str]:
        for piece in self.pieces:
            stats.first_token_ns = stats.first_token_ns or 1
            yield piece
        if self.error is not None:
            raise self.error

    async def warm(self, like: ModelRequest | None = None) -> None:
        pass

    async def aclose(self) -> None:
        pass


CHAT = completion_request(ModelConfig(provider="openai-chat"), prefix="def add(a, b):\n    return ", suffix="\n")


async def _read(backend: Scripted, request: ModelRequest = CHAT) -> Stream:
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m"), backend, "m")
    stream = Stream(uri="file:///a.py", line=1, character=11, before="", after="", model="m")
    await read_into(stream, tier, request, remember=lambda _: None, cleaner=answer_cleaner(request))
    return stream


@pytest.mark.parametrize(
    "pieces",
    [
        ("Here is the code:\n", "```py", "thon\n", "a + b\n", "``", "`\n", "Done!"),
        ("Sure.\n```\na", " + b\n```"),
        ("a + b",),
        ("a <|tandem:", "hole|>+ b"),
    ],
)
async def test_a_conversations_answer_goes_into_the_stream_cleaned(pieces: tuple[str, ...]) -> None:
    stream = await _read(Scripted(*pieces))
    assert stream.error is None and stream.text.replace(" ", "") == "a+b"
    # The first token is the answer's first text, not the fence or the chatter the backend saw first.
    assert stream.stats.first_token_ns > 1


async def test_an_answer_that_is_only_a_fence_line_has_no_first_token() -> None:
    stream = await _read(Scripted("```python"))
    assert stream.text == "" and stream.stats.first_token_ns == 0


async def test_text_held_back_is_handed_over_before_a_failure() -> None:
    # "Here" might have been the start of chatter, so the cleaner held it; the failure must not lose it.
    stream = await _read(Scripted("Here", error=BadResponse("stream truncated")))
    assert stream.text == "Here" and isinstance(stream.error, BadResponse)


async def test_a_fills_answer_and_a_conversation_without_a_cleaner_go_in_as_written() -> None:
    fill = completion_request(ModelConfig(provider="fim"), prefix="x = ", suffix="\n")
    assert answer_cleaner(fill) is None
    stream = await _read(Scripted("```\n", "x\n"), fill)
    assert stream.text == "```\nx\n" and stream.stats.first_token_ns == 1
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m"), Scripted("Sure: x"), "m")
    raw = Stream(uri="file:///a.py", line=0, character=0, before="", after="", model="m")
    await read_into(raw, tier, CHAT, remember=lambda _: None)  # next edits read their answers whole
    assert raw.text == "Sure: x"
    assert isinstance(answer_cleaner(CHAT), AnswerCleaner)
