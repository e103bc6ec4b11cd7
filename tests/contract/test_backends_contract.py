"""Contract tests: each backend against `tandem sim` over real loopback HTTP.

Streaming text (the true continuation, in truth mode), usage, the key header, every fault kind mapped to
its `completion.providers.errors` type with the next request succeeding, kept-alive and pre-warmed connections,
and cancellation releasing the connection at once.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Callable
from contextlib import aclosing

import httpx
import pytest
from fixtures_sim import SimFactory

from tandem.completion.config.tree import ModelConfig, Provider
from tandem.completion.providers.backends.base import Backend, ModelRequest, StreamStats
from tandem.completion.providers.backends.factory import make_backend
from tandem.completion.providers.errors import (
    BackendTimeout,
    BackendUnavailable,
    BadResponse,
    CompletionError,
    RateLimited,
)
from tandem.completion.providers.http import make_client
from tandem.sim.runner import SimHandle
from tandem.sim.settings import parse_fault

pytestmark = pytest.mark.contract

PROVIDERS: list[Provider] = ["openai-chat", "fim"]
KEY = "sk-contract-test-key-0123456789"
ENV = {"TANDEM_CONTRACT_KEY": KEY}

PREFIX = '''"""A small module the simulator knows as truth."""


def add(a, b):
    return a + b


def greet(name):
    '''
MIDDLE = 'message = f"hello, {name}, welcome back"\n    print(message)\n'
SUFFIX = """    return message.upper()


def main():
    print(greet("world"))
"""
REQUEST = ModelRequest(prefix=PREFIX, suffix=SUFFIX, path="greet.py", language="python", max_tokens=128)

StartSim = Callable[..., SimHandle]


@pytest.fixture
def start_sim(sim_factory: SimFactory, tmp_path: pathlib.Path) -> StartSim:
    """Start simulators (truth mode on the module above and no pacing, unless told otherwise)."""
    truth = tmp_path / "greet.py"
    truth.write_text(PREFIX + MIDDLE + SUFFIX)

    def start(**settings: object) -> SimHandle:
        settings.setdefault("truth", (str(truth),))
        settings.setdefault("profile", "instant")
        return sim_factory(**settings)

    return start


def model(sim: SimHandle, provider: Provider, **overrides: object) -> ModelConfig:
    settings: dict[str, object] = {
        "base_url": sim.base_url,
        "model": "sim-spark",
        "api_key_env": "TANDEM_CONTRACT_KEY",
        "timeout_s": 5.0,
        "connect_timeout_s": 2.0,
    }
    settings.update(overrides)
    return ModelConfig(provider=provider, **settings)  # type: ignore[arg-type]


async def collect(backend: Backend, request: ModelRequest = REQUEST) -> tuple[str, StreamStats, CompletionError | None]:
    stats = StreamStats()
    texts: list[str] = []
    try:
        async with aclosing(backend.stream(request, stats)) as stream:  # type: ignore[type-var]
            async for text in stream:
                texts.append(text)
    except CompletionError as error:
        assert KEY not in str(error)
        return "".join(texts), stats, error
    return "".join(texts), stats, None


def track_local_ports(client: httpx.AsyncClient) -> list[int]:
    """The local port of the connection each response arrived on (same port: same kept-alive connection)."""
    ports: list[int] = []

    async def hook(response: httpx.Response) -> None:
        stream = response.extensions["network_stream"]
        ports.append(stream.get_extra_info("client_addr")[1])

    client.event_hooks = {"response": [hook]}
    return ports


def track_responses(client: httpx.AsyncClient) -> list[httpx.Response]:
    responses: list[httpx.Response] = []

    async def hook(response: httpx.Response) -> None:
        responses.append(response)

    client.event_hooks = {"response": [hook]}
    return responses


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_streams_the_true_middle_with_usage_and_timestamps(start_sim: StartSim, provider: Provider) -> None:
    sim = start_sim(profile="spark")
    async with make_client() as client:
        text, stats, error = await collect(make_backend(model(sim, provider), client, env=ENV))
    assert error is None
    assert text == MIDDLE
    last = sim.stats()["last_request"]
    assert last["had_authorization"] is True
    assert (last["prefix_chars"], last["suffix_chars"]) == (len(PREFIX), len(SUFFIX))
    assert stats.usage.input_tokens == last["prompt_tokens"] > 0
    assert stats.usage.output_tokens == sim.stats()["completion_tokens_sent"] > 0
    # The simulator reports cached_tokens (0 until it simulates a prompt cache); the field must be read.
    assert stats.usage.cached_tokens == 0
    assert stats.finish_reason == "stop"
    assert 0 < stats.request_sent_ns <= stats.first_byte_ns <= stats.first_token_ns


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_long_answer_arrives_in_many_chunks_and_stops_at_max_tokens(
    start_sim: StartSim, provider: Provider
) -> None:
    sim = start_sim(truth=())
    request = ModelRequest(prefix="# notes\n", suffix="", max_tokens=300)
    async with make_client() as client:
        backend = make_backend(model(sim, provider), client, env=ENV)
        stats = StreamStats()
        chunks = [text async for text in backend.stream(request, stats)]
    assert len(chunks) > 10
    assert stats.usage.output_tokens == 300
    assert stats.finish_reason == "length"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_no_key_configured_sends_no_authorization(start_sim: StartSim, provider: Provider) -> None:
    sim = start_sim()
    async with make_client() as client:
        text, _, error = await collect(make_backend(model(sim, provider, api_key_env=""), client, env=ENV))
    assert error is None and text == MIDDLE
    assert sim.stats()["last_request"]["had_authorization"] is False


async def arm(sim: SimHandle, kind: str, count: int) -> None:
    """Arm a fault the way a test harness outside the process would: over HTTP."""
    root = sim.base_url.removesuffix("/v1")
    async with httpx.AsyncClient() as control:
        response = await control.post(f"{root}/_sim/faults", json={"kind": kind, "count": count})
        response.raise_for_status()
        assert {"kind": kind, "count": count} in response.json()["armed"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("kind", "error_type", "words", "partial"),
    [
        ("500", BackendUnavailable, "500", False),
        ("reset", BackendUnavailable, "", False),
        ("truncate", BadResponse, "stream truncated", True),
        ("malformed", BadResponse, "not JSON", True),
        ("stall", BackendTimeout, "stalled", True),
    ],
)
async def test_each_fault_maps_to_its_error_and_the_next_request_succeeds(
    start_sim: StartSim,
    provider: Provider,
    kind: str,
    error_type: type[CompletionError],
    words: str,
    partial: bool,
) -> None:
    sim = start_sim(profile="spark")
    async with make_client() as client:
        # A short stall limit, so that the stall fault fails fast; the retry gets the usual one.
        backend = make_backend(model(sim, provider, timeout_s=1.0), client, env=ENV)
        await arm(sim, kind, 1)
        text, _, error = await collect(backend)
        assert type(error) is error_type, error
        assert words in str(error)
        # What arrived before the failure was handed over, and it is the start of the true answer.
        assert MIDDLE.startswith(text)
        assert bool(text) is partial
        assert sim.stats()["faults_fired"] == {kind: 1}
        again, _, error = await collect(make_backend(model(sim, provider), client, env=ENV))
        assert error is None and again == MIDDLE


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_with_a_short_retry_after_is_retried_once(start_sim: StartSim, provider: Provider) -> None:
    sim = start_sim(retry_after_s=0.0)
    async with make_client() as client:
        backend = make_backend(model(sim, provider), client, env=ENV)
        await arm(sim, "429", 1)
        text, _, error = await collect(backend)
        assert error is None and text == MIDDLE
        assert sim.stats()["faults_fired"] == {"429": 1}
        assert sim.stats()["requests_total"] == 2
        await arm(sim, "429", 2)
        text, _, error = await collect(backend)
        assert isinstance(error, RateLimited) and error.retry_after_s == 0.0
        assert text == ""
        again, _, error = await collect(backend)
        assert error is None and again == MIDDLE


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_with_a_long_retry_after_goes_back_to_the_caller(start_sim: StartSim, provider: Provider) -> None:
    sim = start_sim(faults=(parse_fault("429:1"),), retry_after_s=30.0)
    async with make_client() as client:
        backend = make_backend(model(sim, provider), client, env=ENV)
        _, _, error = await collect(backend)
        assert isinstance(error, RateLimited) and error.retry_after_s == 30.0
        assert sim.stats()["requests_total"] == 1
        text, _, error = await collect(backend)
        assert error is None and text == MIDDLE


async def test_nothing_listening_is_backend_unavailable(start_sim: StartSim) -> None:
    sim = start_sim()
    config = model(sim, "openai-chat")
    sim.stop()
    async with make_client() as client:
        _, _, error = await collect(make_backend(config, client, env=ENV))
    assert type(error) is BackendUnavailable and "could not connect" in str(error)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_warm_opens_the_connection_that_the_first_completion_then_uses(
    start_sim: StartSim, provider: Provider
) -> None:
    sim = start_sim()
    async with make_client() as client:
        ports = track_local_ports(client)
        backend = make_backend(model(sim, provider), client, env=ENV)
        await backend.warm()
        assert sim.stats()["requests"].get("models") == 1
        for _ in range(3):
            text, _, error = await collect(backend)
            assert error is None and text == MIDDLE
    # One connection for the warm-up and every completion after it: each stream was read to its end.
    assert len(ports) == 4 and len(set(ports)) == 1


async def test_error_answers_leave_the_connection_reusable(start_sim: StartSim) -> None:
    sim = start_sim(retry_after_s=30.0)
    async with make_client() as client:
        ports = track_local_ports(client)
        backend = make_backend(model(sim, "openai-chat"), client, env=ENV)
        for kind in ("500", "429", "truncate"):
            await arm(sim, kind, 1)
            _, _, error = await collect(backend)
            assert error is not None
        text, _, error = await collect(backend)
        assert error is None and text == MIDDLE
    assert len(ports) == 4 and len(set(ports)) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("how", ["aclose", "cancel"])
async def test_abandoning_a_stream_releases_its_connection_at_once(
    start_sim: StartSim, provider: Provider, how: str
) -> None:
    # A slow, long stream (about 30 s at 65 tokens/s) abandoned after its first text. The client has one
    # connection and a short pool wait: if the abandoned response held it, the next request would fail
    # with a pool timeout instead of streaming.
    sim = start_sim(truth=(), profile="codex", ttft_ms=0.0)
    long_request = ModelRequest(prefix="# notes\n", suffix="", max_tokens=2000)
    async with make_client(max_connections=1, max_keepalive_connections=1, pool_timeout_s=1.0) as client:
        responses = track_responses(client)
        backend = make_backend(model(sim, provider), client, env=ENV)
        first_text = asyncio.Event()
        stats = StreamStats()

        async def consume() -> None:
            async with aclosing(backend.stream(long_request, stats)) as stream:  # type: ignore[type-var]
                async for _ in stream:
                    first_text.set()
                    if how == "aclose":
                        break

        task = asyncio.create_task(consume())
        await first_text.wait()
        if how == "cancel":
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        else:
            await task
        assert stats.usage.output_tokens == 0  # it really was cut short
        # Closed by the time the consumer is done, not later by the garbage collector's finaliser.
        assert len(responses) == 1 and responses[0].is_closed
        text, _, error = await collect(backend, ModelRequest(prefix="# notes\n", suffix="", max_tokens=8))
        assert error is None, error
        assert text.startswith("# tandem sim")
