"""The `openai-responses` backend over a WebSocket (`transport = "websocket"`) against `tandem sim` over a
real loopback socket: warm-up and reuse of one connection, continuation and its fallback, faults (error
events, a socket dropped before and during an answer), and a superseded turn that keeps its connection.
Plus unit tests of the continuation edit and of the configuration."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import aclosing
from typing import TYPE_CHECKING

import pytest
from test_backends_contract import ENV, KEY, MIDDLE, SUFFIX, collect, completion, model
from test_backends_contract import PREFIX as SHORT_PREFIX
from websockets.asyncio.client import connect

from tandem.completion.config.tree import Layer, ModelConfig, merge_layers
from tandem.completion.inline.prompts import FOLLOW_UP, SYSTEM_PROMPT, warm_request
from tandem.completion.observe.trace import TraceRecord
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.backends.continuation import Held, continuation, edit_message
from tandem.completion.providers.backends.factory import make_backend
from tandem.completion.providers.backends.responses_ws import ResponsesWebSocketBackend, websocket_url
from tandem.completion.providers.errors import BackendUnavailable, BadResponse, RateLimited
from tandem.sim.runner import SimHandle

if TYPE_CHECKING:
    import pathlib

    from fixtures_sim import SimFactory

# A file long enough that an edit of its prompt is much shorter than the prompt (as real files are).
PREFIX = "".join(f"def helper_{n}(value):\n    return value * {n}\n\n\n" for n in range(40)) + SHORT_PREFIX
StartSim = Callable[..., SimHandle]


@pytest.fixture
def start_sim(sim_factory: SimFactory, tmp_path: pathlib.Path) -> StartSim:
    """Start simulators knowing the file above as truth, without pacing unless told otherwise."""
    truth = tmp_path / "greet.py"
    truth.write_text(PREFIX + MIDDLE + SUFFIX)

    def start(**settings: object) -> SimHandle:
        settings.setdefault("truth", (str(truth),))
        settings.setdefault("profile", "instant")
        return sim_factory(**settings)

    return start


CONNECTS = "responses.websocket.connect"
TURNS = "responses.websocket"


def ws_backend(sim: SimHandle) -> ResponsesWebSocketBackend:
    backend = make_backend(model(sim, "openai-responses", transport="websocket"), None, env=ENV)  # type: ignore[arg-type]
    assert isinstance(backend, ResponsesWebSocketBackend)
    return backend


def typed(extra: int) -> ModelRequest:
    """The completion's request after typing the first `extra` characters of the true middle."""
    return completion("openai-responses", PREFIX + MIDDLE[:extra], SUFFIX)


@pytest.mark.contract
async def test_warmed_connection_serves_turn_after_turn(start_sim: StartSim) -> None:
    sim = start_sim()
    backend = ws_backend(sim)
    await backend.warm(warm_request())
    assert sim.stats()["requests"] == {CONNECTS: 1, TURNS: 1}  # the generate: false turn
    for extra in (0, 3):
        text, stats, error = await collect(backend, typed(extra))
        assert error is None and text == MIDDLE[extra:]
        assert (stats.transport, stats.connection_reused) == ("websocket", True)
        assert stats.bytes_sent > 0 and 0 < stats.request_sent_ns <= stats.first_byte_ns <= stats.first_token_ns
        assert stats.usage.output_tokens > 0 and stats.finish_reason == "stop"
    assert sim.stats()["requests"] == {CONNECTS: 1, TURNS: 3}
    assert sim.stats()["last_request"]["had_authorization"] is True
    # The simulator's own log of what arrived: every turn's message, never the key.
    logged = sim.state.requests.all()
    assert [r.endpoint for r in logged] == [TURNS] * 3
    assert all(KEY not in r.body for r in logged) and '"generate":false' in logged[0].body
    # The warm-up turn prepares what the completions to come start with: the model and their instructions.
    assert json.loads(logged[0].body)["instructions"] == SYSTEM_PROMPT
    await backend.aclose()


@pytest.mark.contract
async def test_the_next_completion_continues_with_fewer_bytes_and_falls_back_when_forgotten(
    start_sim: StartSim,
) -> None:
    sim = start_sim()
    backend = ws_backend(sim)
    _, first, _ = await collect(backend, typed(0))
    text, second, error = await collect(backend, typed(4))
    # The simulator applied the edit to the prompt it held: it answers from the new cursor.
    assert error is None and text == MIDDLE[4:]
    assert (first.continuation, second.continuation) == ("full", "continued")
    assert second.bytes_sent < first.bytes_sent / 2
    # The held conversation is billed as input: more tokens in, fewer bytes sent.
    assert second.usage.input_tokens > first.usage.input_tokens
    sim.arm_fault("forget", 1)
    text, third, error = await collect(backend, typed(9))
    assert error is None and text == MIDDLE[9:]
    assert third.continuation == "fallback" and sim.stats()["faults_fired"] == {"forget": 1}
    assert sim.stats()["requests"][CONNECTS] == 1
    await backend.aclose()


@pytest.mark.contract
async def test_error_events_map_to_completion_errors_and_keep_the_socket(start_sim: StartSim) -> None:
    sim = start_sim()
    backend = ws_backend(sim)
    sim.arm_fault("500", 1)
    sim.arm_fault("429", 1)
    _, _, error = await collect(backend, typed(0))
    assert isinstance(error, BackendUnavailable) and not isinstance(error, RateLimited)
    _, _, error = await collect(backend, typed(0))
    assert isinstance(error, RateLimited)
    text, _, error = await collect(backend, typed(0))
    assert error is None and text == MIDDLE
    assert sim.stats()["requests"][CONNECTS] == 1
    await backend.aclose()


@pytest.mark.contract
async def test_a_socket_dropped_mid_answer_ends_it_and_the_next_is_served(start_sim: StartSim) -> None:
    sim = start_sim()
    backend = ws_backend(sim)
    sim.arm_fault("truncate", 1)
    text, _, error = await collect(backend, typed(0))
    assert isinstance(error, BadResponse) and "truncated" in str(error)
    assert text and MIDDLE.startswith(text) and text != MIDDLE
    text, stats, error = await collect(backend, typed(0))
    assert error is None and text == MIDDLE and stats.continuation == "full"
    assert sim.stats()["requests"][CONNECTS] == 2
    await backend.aclose()


@pytest.mark.contract
async def test_a_socket_dropped_before_answering_is_replaced_and_the_turn_sent_again(start_sim: StartSim) -> None:
    sim = start_sim()
    backend = ws_backend(sim)
    sim.arm_fault("reset", 1)
    text, _, error = await collect(backend, typed(0))
    assert error is None and text == MIDDLE
    assert sim.stats()["faults_fired"] == {"reset": 1} and sim.stats()["requests"][CONNECTS] == 2
    await backend.aclose()


@pytest.mark.contract
async def test_a_superseded_turn_is_read_out_and_its_connection_serves_again(start_sim: StartSim) -> None:
    sim = start_sim(truth=(), profile="spark", tokens_per_s=2000.0, ttft_ms=1.0)
    backend = ws_backend(sim)
    long = completion("openai-responses", "# notes\n", "", path="notes.py", language="", max_tokens=400)
    async with aclosing(backend.stream(long, StreamStats())) as stream:  # type: ignore[type-var]
        async for _ in stream:
            break  # the user typed on: the completion is abandoned after its first text
    # The next one does not wait for the abandoned turn: it takes a second connection.
    _, _, error = await collect(backend, typed(0))
    assert error is None
    await backend.pool.settled()
    assert backend.pool.idle == 2 and backend.pool.opened == 2
    # Both connections are kept: no socket was dropped to stop the abandoned turn.
    assert sim.stats()["requests"][CONNECTS] == 2
    await backend.aclose()


@pytest.mark.contract
async def test_a_connection_the_server_closes_while_idle_is_reopened_in_the_background(start_sim: StartSim) -> None:
    first = start_sim()
    backend = ws_backend(first)
    await backend.warm(warm_request())
    port = int(first.base_url.rsplit(":", 1)[1].split("/")[0])
    [idle] = backend.pool.idle_sockets
    first.stop()  # the server goes away (a restart, a connection time limit): the idle connection closes
    await idle.ws.wait_closed()  # the pool's watcher, waiting on the same, notices first
    second = start_sim(port=port)
    await backend.pool.settled()  # the replacement opened, after a back-off if the server was still down
    assert backend.pool.opened == 2 and backend.pool.idle == 1
    assert second.stats()["requests"] == {CONNECTS: 1}
    text, _, error = await collect(backend, typed(0))
    assert error is None and text == MIDDLE
    assert second.stats()["requests"] == {CONNECTS: 1, TURNS: 1}
    await backend.aclose()


@pytest.mark.contract
async def test_the_simulator_refuses_a_second_turn_in_flight_and_a_stream_flag(start_sim: StartSim) -> None:
    sim = start_sim(truth=(), profile="spark", tokens_per_s=2000.0, ttft_ms=1.0)
    create = {"type": "response.create", "model": "m", "input": "# notes\n", "max_output_tokens": 200}
    async with connect(websocket_url(sim.base_url)) as ws:
        await ws.send(json.dumps(create))
        await ws.send(json.dumps(create))
        await ws.send(json.dumps({**create, "stream": True}))
        events = []
        while not any(e["type"] in ("response.completed", "response.incomplete") for e in events):
            events.append(json.loads(await ws.recv()))
        errors = [e["error"]["code"] for e in events if e["type"] == "error"]
        # Both refused while the first turn streams on; the stream flag would have been refused anyway.
        assert errors == ["response_already_in_flight", "response_already_in_flight"]
        await ws.send(json.dumps({**create, "stream": True}))
        refused = json.loads(await ws.recv())
        assert refused["type"] == "error" and refused["error"]["param"] == "stream"
        assert refused["status"] == 400


def test_edit_message_replaces_whole_unique_lines_inside_a_long_enough_fence() -> None:
    old = "a = 1\nx = 0\nx = 0\nb = ~~~~~ 2<hole>\nend\n"
    new = "a = 1\nx = 0\nx = 0\nb = ~~~~~ 22<hole>\nend\n"
    message = edit_message(old, new, follow_up=FOLLOW_UP)
    assert message is not None and message.endswith(f"\n{FOLLOW_UP}")
    match = re.search(r"\n(~+)\n(.*?)\n\1\nwith\n\1\n(.*?)\n\1\n", message, re.DOTALL)
    assert match is not None and len(match.group(1)) == 6
    before, after = match.group(2), match.group(3)
    assert old.count(before) == 1 and old.replace(before, after) == new
    # A changed line that is not unique is widened until it is.
    old2, new2 = "x = 0\nx = 0\ny\n", "x = 0\nx = 1\ny\n"
    message = edit_message(old2, new2, follow_up=FOLLOW_UP)
    assert message is not None and "x = 0\nx = 0" in message
    assert edit_message(old, old, follow_up=FOLLOW_UP) is None


def test_continuation_only_where_it_is_shorter_and_the_chain_is_short() -> None:
    user = "header\n" + "line\n" * 400 + "cur<hole>sor\n" + "tail\n" * 10
    held = Held(response_id="r1", path="a.py", instructions="sys", user_text=user, held_chars=len(user) + 50)
    typed_on = user.replace("cur<hole>", "curs<hole>")
    assert continuation(held, path="a.py", instructions="sys", user_text=typed_on, follow_up=FOLLOW_UP) is not None
    assert continuation(held, path="b.py", instructions="sys", user_text=typed_on, follow_up=FOLLOW_UP) is None
    assert continuation(held, path="a.py", instructions="other", user_text=typed_on, follow_up=FOLLOW_UP) is None
    rewritten = "something else entirely\n" * 3
    assert continuation(held, path="a.py", instructions="sys", user_text=rewritten, follow_up=FOLLOW_UP) is None
    grown = Held(response_id="r1", path="a.py", instructions="sys", user_text=user, held_chars=2 * len(user))
    assert continuation(grown, path="a.py", instructions="sys", user_text=typed_on, follow_up=FOLLOW_UP) is None


def test_configuration_websocket_transport_and_store() -> None:
    config, problems = merge_layers(
        [Layer("user", {"models": {"fast": {"provider": "openai-chat", "transport": "websocket"}}})]
    )
    assert config.models.fast is not None and config.models.fast.transport == "http"
    assert any(p.key == "models.fast.transport" for p in problems)
    # A workspace may not turn storing on, nor choose the transport that bills held conversations.
    user = Layer("user", {"models": {"accurate": {"provider": "openai-responses", "base_url": "https://x/v1"}}})
    workspace = Layer(
        "tandem.toml", {"models": {"accurate": {"store": True, "transport": "websocket"}}}, from_workspace=True
    )
    config, problems = merge_layers([user, workspace])
    assert config.models.accurate is not None
    assert config.models.accurate.store is False and config.models.accurate.transport == "http"
    assert {"models.accurate.store", "models.accurate.transport"} <= {
        key for p in problems for key in p.key.split(", ")
    }
    assert websocket_url("https://api.openai.com/v1/") == "wss://api.openai.com/v1/responses"
    assert websocket_url("http://127.0.0.1:8000/v1") == "ws://127.0.0.1:8000/v1/responses"


def test_trace_records_transport_reuse_and_continuation() -> None:
    from tandem.completion.inline.streams import Stream

    record = TraceRecord(kind="completion", received_ns=1)
    stream = Stream(uri="file:///a.py", line=0, character=0, before="", after="", model="m")
    stream.stats = StreamStats(
        request_sent_ns=5, transport="websocket", connection_reused=True, continuation="continued", bytes_sent=700
    )
    record.stream_ended(stream)
    assert record.to_json()["transport"] == {
        "kind": "websocket",
        "reused": True,
        "continuation": "continued",
        "bytes_sent": 700,
    }


def test_the_turn_event_is_a_post_body_without_stream_and_without_the_key() -> None:
    config = ModelConfig(
        provider="openai-responses", base_url="http://127.0.0.1:9/v1", model="m", transport="websocket"
    )
    event = ResponsesWebSocketBackend(config, env=ENV).create_event(typed(0))
    assert event["type"] == "response.create" and event["store"] is False and event["model"] == "m"
    assert "stream" not in event and "background" not in event and KEY not in str(event)
