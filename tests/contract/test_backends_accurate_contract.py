"""Contract tests of the accurate tier's backends (`anthropic`, `openai-responses`) against `tandem sim`
over real loopback HTTP: the same checks test_backends_contract.py makes of the others (true text, usage,
key header, every fault mapped, 429 retry, kept-alive and pre-warmed connections, abandonment), plus what
these two APIs do differently (stop strings applied by the client, edits streamed back raw)."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import httpx
import pytest
from test_backends_contract import (
    ENV,
    KEY,
    MIDDLE,
    PREFIX,
    SUFFIX,
    StartSim,
    arm,
    collect,
    model,
    start_sim,
    track_local_ports,
    track_responses,
)

from tandem.completion.config.tree import ModelConfig, Provider
from tandem.completion.edit.file_edits import apply_all
from tandem.completion.edit.parse import EditTarget, parse_answer
from tandem.completion.edit.prompt import EditPrompt, edit_messages
from tandem.completion.providers.backends.anthropic import AnthropicBackend
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.backends.factory import make_backend
from tandem.completion.providers.backends.openai_responses import OpenAIResponsesBackend
from tandem.completion.providers.errors import (
    BackendTimeout,
    BackendUnavailable,
    BadResponse,
    CompletionError,
    RateLimited,
)
from tandem.completion.providers.http import make_client
from tandem.sim.settings import parse_fault

pytestmark = pytest.mark.contract
__all__ = ["start_sim"]  # the fixture, imported so that pytest finds it here

PROVIDERS: list[Provider] = ["anthropic", "openai-responses"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_streams_the_true_middle_with_usage_and_timestamps(start_sim: StartSim, provider: Provider) -> None:
    sim = start_sim(profile="spark")
    async with make_client() as client:
        text, stats, error = await collect(make_backend(model(sim, provider), client, env=ENV))
    assert error is None
    assert text == MIDDLE
    last = sim.stats()["last_request"]
    assert last["endpoint"] == {"anthropic": "messages", "openai-responses": "responses"}[provider]
    assert last["had_authorization"] is True
    assert (last["prefix_chars"], last["suffix_chars"]) == (len(PREFIX), len(SUFFIX))
    assert stats.usage.input_tokens == last["prompt_tokens"] > 0
    assert stats.usage.output_tokens == sim.stats()["completion_tokens_sent"] > 0
    assert stats.usage.cached_tokens == 0
    assert stats.finish_reason == "stop"
    assert 0 < stats.request_sent_ns <= stats.first_byte_ns <= stats.first_token_ns


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_long_answer_arrives_in_many_chunks_and_stops_at_max_tokens(
    start_sim: StartSim, provider: Provider
) -> None:
    sim = start_sim(truth=())
    request = ModelRequest(prefix="# notes\n", suffix="", max_tokens=300)
    async with make_client() as client:
        stats = StreamStats()
        chunks = [t async for t in make_backend(model(sim, provider), client, env=ENV).stream(request, stats)]
    assert len(chunks) > 10
    assert stats.usage.output_tokens == 300
    assert stats.finish_reason == "length"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_no_key_configured_sends_no_key(start_sim: StartSim, provider: Provider) -> None:
    sim = start_sim()
    async with make_client() as client:
        text, _, error = await collect(make_backend(model(sim, provider, api_key_env=""), client, env=ENV))
    assert error is None and text == MIDDLE
    assert sim.stats()["last_request"]["had_authorization"] is False


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_stop_strings_end_the_text_where_the_provider_would_have(start_sim: StartSim, provider: Provider) -> None:
    # Anthropic refuses a whitespace-only stop sequence and the Responses API has none: the backend cuts.
    sim = start_sim(profile="spark")
    request = ModelRequest(prefix=PREFIX, suffix=SUFFIX, path="greet.py", max_tokens=128, stop=("\n",))
    async with make_client() as client:
        text, stats, error = await collect(make_backend(model(sim, provider), client, env=ENV), request)
    assert error is None
    assert text == MIDDLE.split("\n")[0]
    assert stats.finish_reason == "stop"


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
        backend = make_backend(model(sim, provider, timeout_s=1.0), client, env=ENV)
        await arm(sim, kind, 1)
        text, _, error = await collect(backend)
        assert type(error) is error_type, error
        assert words in str(error)
        assert KEY not in str(error)
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
        assert sim.stats()["requests_total"] == 2
        await arm(sim, "429", 2)
        text, _, error = await collect(backend)
        assert isinstance(error, RateLimited) and error.retry_after_s == 0.0
        assert text == ""


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_with_a_long_retry_after_goes_back_to_the_caller(start_sim: StartSim, provider: Provider) -> None:
    sim = start_sim(faults=(parse_fault("429:1"),), retry_after_s=30.0)
    async with make_client() as client:
        backend = make_backend(model(sim, provider), client, env=ENV)
        _, _, error = await collect(backend)
        assert isinstance(error, RateLimited) and error.retry_after_s == 30.0
        assert "429" in str(error)
        text, _, error = await collect(backend)
        assert error is None and text == MIDDLE


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_warm_opens_the_connection_that_completions_then_use(start_sim: StartSim, provider: Provider) -> None:
    sim = start_sim()
    async with make_client() as client:
        ports = track_local_ports(client)
        backend = make_backend(model(sim, provider), client, env=ENV)
        await backend.warm()
        assert sim.stats()["requests"].get("models") == 1
        for _ in range(3):
            text, _, error = await collect(backend)
            assert error is None and text == MIDDLE
    # Every stream was read to its end (past the last event), so one connection served them all.
    assert len(ports) == 4 and len(set(ports)) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_error_answers_leave_the_connection_reusable(start_sim: StartSim, provider: Provider) -> None:
    sim = start_sim(retry_after_s=30.0)
    async with make_client() as client:
        ports = track_local_ports(client)
        backend = make_backend(model(sim, provider), client, env=ENV)
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
        # It really was cut short: no stop reason came (Anthropic's message_start already counts 1 output token).
        assert stats.finish_reason == "" and stats.usage.output_tokens <= 1
        assert len(responses) == 1 and responses[0].is_closed
        text, _, error = await collect(backend, ModelRequest(prefix="# notes\n", suffix="", max_tokens=16))
        assert error is None, error
        assert text.startswith("# tandem sim")


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_edit_conversation_streams_back_raw_and_applies_to_the_truth(
    start_sim: StartSim, provider: Provider
) -> None:
    sim = start_sim(truth=(), profile="codex")
    views = "def index(request):\n    return render(request, 'index.html')\n"
    urls = "from views import index\n\nurlpatterns = [path('', index)]\n"
    truth = {
        "views.py": "def index(request, page=1):\n    return render(request, 'index.html', {'page': page})\n",
        "urls.py": "from views import index\n\nurlpatterns = [path('', index), path('<int:page>', index)]\n",
    }
    sim.set_edit_truth(truth, errors="off")
    prompt = EditPrompt(
        path="views.py", text=views, first_line=0, end_line=2, instruction="add paging", context={"urls.py": urls}
    )
    messages = tuple((m["role"], m["content"]) for m in edit_messages(prompt))
    request = ModelRequest(prefix="", suffix="", path="views.py", max_tokens=2000, messages=messages)
    async with make_client() as client:
        text, stats, error = await collect(make_backend(model(sim, provider), client, env=ENV), request)
    assert error is None
    # Raw: no fence or chatter cleanup, the SEARCH/REPLACE markers and path lines arrive as sent.
    assert text.startswith("views.py\n<<<<<<< SEARCH\n")
    edits = parse_answer(text, EditTarget(originals={"views.py": views, "urls.py": urls}, primary="views.py"))
    assert apply_all({"views.py": views, "urls.py": urls}, edits) == truth
    assert stats.finish_reason == "stop"
    assert stats.usage.output_tokens > 20


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_provider_refusing_a_request_is_bad_response_in_its_words(
    start_sim: StartSim, provider: Provider
) -> None:
    sim = start_sim()
    async with make_client() as client:
        # No model: both APIs require one, and answer 400 in their own error shape.
        _, _, error = await collect(make_backend(model(sim, provider, model=""), client, env=ENV))
    assert isinstance(error, BadResponse)
    assert "400" in str(error) and "model" in str(error)


async def test_anthropic_sends_its_headers_and_a_top_level_system(start_sim: StartSim) -> None:
    sim = start_sim()
    seen: list[httpx.Request] = []

    async def hook(request: httpx.Request) -> None:
        seen.append(request)

    async with make_client() as client:
        client.event_hooks = {"request": [hook]}
        text, _, error = await collect(make_backend(model(sim, "anthropic"), client, env=ENV))
    assert error is None and text == MIDDLE
    headers = seen[0].headers
    assert headers["x-api-key"] == KEY and "authorization" not in headers
    assert headers["anthropic-version"] == "2023-06-01"
    assert seen[0].url.path == "/v1/messages"


async def test_the_bodies_follow_each_api() -> None:
    async with make_client() as client:
        anthropic_backend = make_backend(ModelConfig(provider="anthropic", base_url="http://x/v1", model="m"), client)
        responses_backend = make_backend(
            ModelConfig(provider="openai-responses", base_url="http://x/v1", model="m"), client
        )
    assert isinstance(anthropic_backend, AnthropicBackend)
    assert isinstance(responses_backend, OpenAIResponsesBackend)
    request = ModelRequest(
        prefix="a = ",
        suffix="\n",
        context="def helper():\n    return 1\n",
        max_tokens=8,
        stop=("\n", "\n\n", "```"),
        temperature=0.2,
    )
    anthropic = anthropic_backend.body(request)
    # The system text is one block marked for the prompt cache (a single message carries no breakpoint).
    [system] = anthropic["system"]  # type: ignore[misc]
    assert system["text"] and system["cache_control"] == {"type": "ephemeral"}
    assert [m["role"] for m in anthropic["messages"]] == ["user"]  # type: ignore[attr-defined]
    assert "def helper()" in anthropic["messages"][0]["content"]  # type: ignore[index]
    assert anthropic["stop_sequences"] == ["```"]  # whitespace-only ones are cut by the client
    assert anthropic["temperature"] == 0.2 and anthropic["max_tokens"] == 8 and anthropic["stream"] is True
    responses = responses_backend.body(request)
    assert isinstance(responses["instructions"], str) and responses["instructions"]
    assert [m["role"] for m in responses["input"]] == ["user"]  # type: ignore[attr-defined]
    assert "def helper()" in responses["input"][0]["content"]  # type: ignore[index]
    assert "stop" not in responses and "temperature" not in responses
    assert responses["max_output_tokens"] == 16  # the API's minimum
    assert responses["store"] is False and responses["stream"] is True


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_repeated_long_prompt_reports_the_providers_cached_tokens(
    start_sim: StartSim, provider: Provider
) -> None:
    # The simulator caches OpenAI-shaped prompts of 1,024+ tokens; Anthropic caches only blocks marked
    # cache_control (tandem marks none), so its cached count stays 0, as it would for real.
    sim = start_sim(truth=())
    long_prefix = "".join(f"value_{n} = compute({n}, factor={n * 7})\n" for n in range(300))
    request = ModelRequest(prefix=long_prefix, suffix="", max_tokens=16)
    async with make_client() as client:
        backend = make_backend(model(sim, provider), client, env=ENV)
        _, first, error = await collect(backend, request)
        assert error is None
        _, second, error = await collect(backend, request)
        assert error is None
    assert first.usage.cached_tokens == 0
    assert second.usage.input_tokens == first.usage.input_tokens > 1024
    if provider == "openai-responses":
        assert 1024 <= second.usage.cached_tokens < second.usage.input_tokens
    else:
        assert second.usage.cached_tokens == 0
