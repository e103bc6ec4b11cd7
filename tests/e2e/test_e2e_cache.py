"""Reuse and speculation end to end: the completion cache outlives streams, prefetch runs after an
acceptance, and files that look like secrets never reach the provider."""

from __future__ import annotations

import json
import pathlib

import pytest
from e2e_support import Session, fast_model, serve
from fixtures_sim import SimFactory
from injected_model import InjectedModel
from lsprotocol import types
from test_e2e_server import TRUTH, _cut, _until

from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.e2e


@pytest.fixture
def sim(tmp_path: pathlib.Path, sim_factory: SimFactory) -> SimHandle:
    truth = tmp_path / "truth" / "sample.py"
    truth.parent.mkdir()
    truth.write_text(TRUTH)
    handle = sim_factory(profile="spark", ttft_ms=5, truth=(str(truth),))
    return handle


def _chat_calls(sim: SimHandle) -> int:
    return int(sim.stats()["requests"].get("chat.completions", 0))


async def _the_suggestion(session: Session, uri: str, cursor: types.Position) -> types.InlineCompletionItem:
    """The one inline suggestion at `cursor`, with the accept command every suggestion carries."""
    result = await session.client.text_document_inline_completion_async(session.inline_params(uri, cursor))
    assert isinstance(result, types.InlineCompletionList)
    [item] = result.items
    assert item.command is not None
    return item


async def _tab(session: Session, uri: str, cursor: types.Position, item: types.InlineCompletionItem) -> None:
    """The user presses Tab: the editor inserts the text, then runs the item's command."""
    assert isinstance(item.insert_text, str) and item.command is not None
    session.insert(uri, cursor, item.insert_text)
    await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=item.command.command, arguments=item.command.arguments)
    )


async def test_finished_completion_is_served_from_the_cache_after_moving_away(
    tmp_path: pathlib.Path, sim: SimHandle
) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    options = fast_model(sim.base_url, max_tokens=8) | {"prefetch": {"enabled": False}}
    async with serve(tmp_path, "vscode", options=options) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        assert await session.inline(uri, cursor) == "fibonacci(n - 2)"
        await _until(lambda: any("done" in r["ms"] for r in session.records()))
        # Type ahead, then come back: the live stream is gone from the store's reach, the cache is not.
        session.insert(uri, cursor, "fibo")
        ahead = types.Position(line=cursor.line, character=cursor.character + 4)
        assert await session.inline(uri, ahead) == "nacci(n - 2)"
        calls = _chat_calls(sim)
        assert await session.inline(uri, ahead) == "nacci(n - 2)"
        assert _chat_calls(sim) == calls
    served = [r for r in session.records() if r["kind"] == "inline" and r["source"] in ("stream", "cache")]
    assert served and all(not r["waited_for_model"] for r in served)


async def test_secret_looking_files_are_never_sent(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        env_uri = session.open(".env", "API_TOKEN=", language="dotenv")
        assert await session.inline(env_uri, types.Position(line=0, character=10)) == ""
        key = "AKIA" + "ABCDEFGHIJKLMNOP"
        leaky = session.open("leaky.py", f"KEY = '{key}'\nx = ", language="python")
        assert await session.inline(leaky, types.Position(line=1, character=4)) == ""
        assert _chat_calls(sim) == 0


async def test_accepting_a_suggestion_prefetches_what_follows(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    # A short stream that ends at the suggestion, so only a prefetch can know what comes next.
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url, max_tokens=8)) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        item = await _the_suggestion(session, uri, cursor)
        assert item.insert_text == "fibonacci(n - 2)"
        await _tab(session, uri, cursor, item)
        await _until(lambda: any(r["kind"] == "prefetch" for r in session.records()))
        end = types.Position(line=cursor.line, character=cursor.character + len("fibonacci(n - 2)"))
        session.insert(uri, end, "\n")
        text = await session.inline(uri, types.Position(line=cursor.line + 1, character=0))
    assert TRUTH.startswith(before + "fibonacci(n - 2)\n" + text), text
    assert text.strip() == "def greet(name):"
    records = session.records()
    assert [r["kind"] for r in records].count("accept") == 1
    prefetches = [r for r in records if r["kind"] == "prefetch"]
    assert prefetches and prefetches[0]["tokens"]["out"] > 0
    # The request after Enter was answered from the prefetched stream, without waiting for a model.
    [after_enter] = [r for r in records if r["kind"] == "inline" and r["stream_id"] == prefetches[0]["stream_id"]]
    assert after_enter["prefetched"] and not after_enter["waited_for_model"]


async def test_an_accept_while_the_suggestion_is_still_streaming_prefetches_when_it_ends(
    tmp_path: pathlib.Path,
    sim_factory: SimFactory,
) -> None:
    """The suggestion is answered at its first complete piece while its last tokens are still coming (a
    slow model here); Tab is pressed before the stream ends, and the stream then ends without a next line
    (its `max_tokens`). What follows is prefetched when it ends, not never."""
    truth = tmp_path / "truth.py"
    truth.write_text(TRUTH)
    (tmp_path / "ws").mkdir()
    before, _ = _cut("return fibonacci(n - 1) + ")
    sim = sim_factory(profile="spark", ttft_ms=5, tokens_per_s=40, truth=(str(truth),))
    async with serve(tmp_path / "ws", "vscode", options=fast_model(sim.base_url, max_tokens=8)) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        item = await _the_suggestion(session, uri, cursor)
        await _tab(session, uri, cursor, item)  # at 40 tokens a second the stream is still running
        await _until(lambda: any(r["kind"] == "prefetch" for r in session.records()), attempts=1000)
    assert item.insert_text is not None and TRUTH.startswith(before + item.insert_text)
    [prefetch] = [r for r in session.records() if r["kind"] == "prefetch"]
    assert prefetch["tokens"]["out"] > 0


async def test_an_accept_that_sees_an_unfinished_next_line_still_prefetches_when_the_stream_drops_it(
    tmp_path: pathlib.Path,
) -> None:
    """Tab is pressed while the stream holds the suggestion and the start of a next line ("def"); the
    stream then ends cut by `max_tokens`, which drops that unfinished line. Nothing follows the
    suggestion after all, so what follows is prefetched. The model here (not tandem's simulator) holds its
    response open until the accept has been handled, so the order does not depend on timing."""
    before, _ = _cut("return fibonacci(n - 1) + ")
    model = InjectedModel()
    try:
        model.hold("fibonacci(n - 2)\n\n\ndef")
        model.answer = "\n\n\ndef greet(name):\n"  # the prefetch's answer, from the accepted cursor on
        async with serve(tmp_path, "vscode", options=fast_model(model.base_url)) as session:
            uri = session.open("sample.py", before)
            cursor = session.position_at_end(before)
            item = await _the_suggestion(session, uri, cursor)
            assert item.insert_text == "fibonacci(n - 2)"
            await _tab(session, uri, cursor, item)  # the command's reply: the accept has been handled
            model.release()
            await _until(lambda: any(r["kind"] == "prefetch" for r in session.records()))
            end = types.Position(line=cursor.line, character=cursor.character + len("fibonacci(n - 2)"))
            session.insert(uri, end, "\n")
            text = await session.inline(uri, types.Position(line=cursor.line + 1, character=0))
            await _until(lambda: len(model.requests) == 3)
    finally:
        model.stop()
    assert text == "\n\ndef greet(name):"  # the blank lines before the next definition, then its first line
    prompts = [json.dumps(body) for body in model.requests]
    assert json.dumps(before + "fibonacci(n - 2)<|tandem:hole|>")[1:-1] in prompts[1]  # the state after the accept
    records = session.records()
    prefetch = next(r for r in records if r["kind"] == "prefetch")
    [after_enter] = [r for r in records if r["kind"] == "inline" and r["stream_id"] == prefetch["stream_id"]]
    assert after_enter["prefetched"] and not after_enter["waited_for_model"]  # Enter asked no model
    # That suggestion came from a finished stream with nothing after it, so the state after accepting it
    # was prefetched too: the model was asked with the shown text already in place.
    shown = before + "fibonacci(n - 2)\n\n\ndef greet(name):<|tandem:hole|>"
    assert len(prompts) == 3 and json.dumps(shown)[1:-1] in prompts[2], prompts[2:]


async def test_a_partial_acceptance_is_traced_with_its_length(tmp_path: pathlib.Path, sim: SimHandle) -> None:
    before, _ = _cut("return fibonacci(n - 1) + ")
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        item = await _the_suggestion(session, uri, cursor)
        assert item.command is not None  # narrowed for the notification below
        session.insert(uri, cursor, "fibonacci")
        # Copilot-style clients report a word accepted out of the suggestion.
        session.client.protocol.notify(
            "textDocument/didPartiallyAcceptCompletion",
            {
                "item": {
                    "insertText": item.insert_text,
                    "command": {"title": "", "command": item.command.command, "arguments": item.command.arguments},
                },
                "acceptedLength": 9,
            },
        )
        await _until(lambda: any(r["kind"] == "accept" for r in session.records()))
    [accept] = [r for r in session.records() if r["kind"] == "accept"]
    assert accept["chars"] == 9


async def test_at_the_end_of_an_accepted_line_the_next_line_is_suggested(
    tmp_path: pathlib.Path, sim: SimHandle
) -> None:
    """Issue 16, item 12: after accepting the rest of a line, the next suggestion is there without Enter."""
    before, _ = _cut("        return")
    async with serve(tmp_path, "vscode", options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", before)
        cursor = session.position_at_end(before)
        item = await _the_suggestion(session, uri, cursor)
        assert item.insert_text == " n"
        await _tab(session, uri, cursor, item)
        end = session.position_at_end(before + " n")
        assert await session.inline(uri, end) == "\n    return fibonacci(n - 1) + fibonacci(n - 2)"


async def test_the_menu_offers_the_next_line_at_the_end_of_a_complete_one(
    tmp_path: pathlib.Path, sim: SimHandle
) -> None:
    before, _ = _cut("        return n")
    async with serve(tmp_path, "eglot", options=fast_model(sim.base_url)) as session:
        uri = session.open("sample.py", before)
        end = session.position_at_end(before)
        params = types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri), position=end)
        result = await session.client.text_document_completion_async(params)
        assert isinstance(result, types.CompletionList)
        [item] = [i for i in result.items if i.detail == "tandem"]
        assert isinstance(item.text_edit, types.TextEdit)
        assert item.text_edit.new_text == "n\n    return fibonacci(n - 1) + fibonacci(n - 2)"
        assert item.label == "n↵ return fibonacci(n - 1) + fibonacci(n - 2)"
