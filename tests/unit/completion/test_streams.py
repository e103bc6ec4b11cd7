"""Typing through a suggestion: which streams a request may reuse, and which it must not."""

from __future__ import annotations

import asyncio

from tandem.cache.lines import LineBuffer
from tandem.completion.inline.request import CompletionRequest
from tandem.completion.inline.streams import StreamStore


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
