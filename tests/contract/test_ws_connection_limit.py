"""The `openai-responses` WebSocket backend against a stand-in written from OpenAI's documentation of the
protocol (`responses_ws_standin`, not tandem's simulator): a turn refused with
`websocket_connection_limit_reached` is sent again, in full, on a new connection; an abandoned edit turn
(the accurate half of a hedged edit the fast answer settled) is not read to its end, while an abandoned
completion turn still is (it keeps its connection and chain)."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import pytest
from responses_ws_standin import StandIn, start
from test_backends_contract import ENV, collect, completion

from tandem.completion.config.tree import ModelConfig
from tandem.completion.providers.backends.base import StreamStats
from tandem.completion.providers.backends.factory import make_backend
from tandem.completion.providers.backends.responses_ws import ResponsesWebSocketBackend

pytestmark = pytest.mark.contract


def _backend(base_url: str, timeout_s: float = 5.0) -> ResponsesWebSocketBackend:
    config = ModelConfig(
        provider="openai-responses",
        base_url=base_url,
        model="gpt-5.3-codex",
        api_key_env="TANDEM_CONTRACT_KEY",
        transport="websocket",
        timeout_s=timeout_s,
        connect_timeout_s=2.0,
    )
    backend = make_backend(config, None, env=ENV)  # type: ignore[arg-type]
    assert isinstance(backend, ResponsesWebSocketBackend)
    return backend


REQUEST = completion("openai-responses", "def add(a, b):\n    ", "", path="m.py", max_tokens=64)


async def test_a_turn_met_by_the_connection_limit_is_sent_again_on_a_new_connection() -> None:
    stand_in = StandIn(refuse_first=1)
    server, base_url = await start(stand_in)
    backend = _backend(base_url)
    try:
        text, stats, error = await collect(backend, REQUEST)
    finally:
        await backend.aclose()
        server.close()
        await server.wait_closed()
    assert error is None and text == stand_in.answer
    generating = [turn for turn in stand_in.turns if turn.get("generate") is not False]
    assert len(generating) == 2  # refused once, then sent again
    assert generating[0]["input"] == generating[1]["input"]  # in full, the same turn
    assert "previous_response_id" not in generating[1]
    assert stand_in.connections >= 2
    assert stats.transport == "websocket"


async def test_a_second_refusal_is_reported_not_retried_forever() -> None:
    stand_in = StandIn(refuse_first=99)
    server, base_url = await start(stand_in)
    backend = _backend(base_url)
    try:
        text, _, error = await collect(backend, REQUEST)
    finally:
        await backend.aclose()
        server.close()
        await server.wait_closed()
    assert text == "" and error is not None and "connection limit" in str(error)
    assert len([turn for turn in stand_in.turns if turn.get("generate") is not False]) == 2


async def test_an_abandoned_edit_turn_is_not_read_to_its_end() -> None:
    """The accurate half of a hedged edit, abandoned after its first text (the fast answer passed): its
    connection is closed, so the stand-in stops sending at once instead of streaming to the end."""
    stand_in = StandIn(answer="x = 1\n" * 40, hold=asyncio.Event())
    server, base_url = await start(stand_in)
    # A read timeout longer than the wait below: a drained turn could not end by timing out either.
    backend = _backend(base_url, timeout_s=60.0)
    request = completion("openai-responses", "def f():\n    ", "", path="m.py", max_tokens=4096)
    try:
        async with aclosing(backend.stream(request, StreamStats())) as texts:  # type: ignore[type-var]
            async for _ in texts:
                break
        # The stand-in's handler ends when the client closes; a drained turn would hold it open.
        await asyncio.wait_for(stand_in.ended.wait(), 10)
    finally:
        assert stand_in.hold is not None
        stand_in.hold.set()
        await backend.aclose()
        server.close()
        await server.wait_closed()
    assert stand_in.completed == 0 and stand_in.closed_mid_turn == 1
    assert stand_in.deltas_sent < len(stand_in.answer) // 4
