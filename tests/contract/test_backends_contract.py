"""Contract tests: every backend against `tandem sim` over real loopback HTTP.

One list, `PROVIDERS`, names each provider and what the simulator sees of it; every behaviour is checked for
each provider it applies to: streaming text (the true continuation, in truth mode), usage, the key header,
every fault kind mapped to its `completion.providers.errors` type with the next request succeeding, 429
hold-offs, kept-alive and pre-warmed connections, and cancellation releasing the connection at once. The
accurate tier's APIs (`anthropic`, `openai-responses`) add what they do differently: stop strings applied
by the client, edits streamed back raw, errors in their own shape, prompt-cache counts.

A completion is asked as the completion feature asks it (`inline.prompts.completion_request`: a fill for
`fim`, the hole-filling conversation for the chat APIs) and its answer read as the feature reads it
(`inline.answer`: a conversation's answer cleaned).
"""

from __future__ import annotations

import asyncio
import dataclasses
import pathlib
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass

import httpx
import pytest
from fixtures_sim import SimFactory

from tandem.completion.config.tree import ModelConfig, Provider
from tandem.completion.edit.file_edits import apply_all
from tandem.completion.edit.parse import EditTarget, parse_answer
from tandem.completion.edit.prompt import EditPrompt, edit_messages
from tandem.completion.inline.answer import answer_cleaner
from tandem.completion.inline.prompts import completion_request
from tandem.completion.providers.backends.anthropic import AnthropicBackend
from tandem.completion.providers.backends.base import Backend, ModelRequest, StreamStats
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
from tandem.sim.runner import SimHandle
from tandem.sim.settings import parse_fault

pytestmark = pytest.mark.contract

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


def completion(
    provider: str,
    prefix: str = PREFIX,
    suffix: str = SUFFIX,
    *,
    max_tokens: int = 128,
    stop: tuple[str, ...] = (),
    path: str = "greet.py",
    language: str = "python",
    context: str = "",
) -> ModelRequest:
    """A completion's request in the shape `provider`'s API takes, built as the completion feature builds it."""
    config = ModelConfig(provider=provider, max_tokens=max_tokens)  # type: ignore[arg-type]
    request = completion_request(config, prefix=prefix, suffix=suffix, path=path, language=language, context=context)
    return dataclasses.replace(request, stop=stop) if stop else request


StartSim = Callable[..., SimHandle]


@dataclass(frozen=True)
class ProviderCase:
    """A provider under test and what the simulator sees of it."""

    provider: Provider
    endpoint: str  # the simulator's name for the API the backend speaks
    # Output tokens the provider counts before the first text: Anthropic's message_start already counts 1.
    tokens_before_text: int = 0

    def backend(self, sim: SimHandle, client: httpx.AsyncClient, **overrides: object) -> Backend:
        """The backend for this provider, talking to `sim` through `client` with the contract key."""
        return make_backend(model(sim, self.provider, **overrides), client, env=ENV)


OPENAI_CHAT = ProviderCase("openai-chat", "chat.completions")
FIM = ProviderCase("fim", "completions")
ANTHROPIC = ProviderCase("anthropic", "messages", tokens_before_text=1)
OPENAI_RESPONSES = ProviderCase("openai-responses", "responses")
# The accurate tier's APIs: chat-shaped requests with a system text, and no server-side stop strings.
ACCURATE = [ANTHROPIC, OPENAI_RESPONSES]
PROVIDERS = [OPENAI_CHAT, FIM, *ACCURATE]


def every(cases: list[ProviderCase]) -> pytest.MarkDecorator:
    """Parametrise a test's `case` over `cases`, each named by its provider."""
    return pytest.mark.parametrize("case", cases, ids=[case.provider for case in cases])


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


async def collect(
    backend: Backend, request: ModelRequest | None = None, *, clean: bool = True
) -> tuple[str, StreamStats, CompletionError | None]:
    """The text `backend` streams for `request` (by default the completion of the module above, in its API's
    shape), as the completion feature reads it (a conversation's answer cleaned; `clean=False`: as streamed),
    its stats and its error."""
    request = request or completion(backend.name)
    cleaner = answer_cleaner(request) if clean else None
    stats = StreamStats()
    texts: list[str] = []
    error: CompletionError | None = None
    try:
        async with aclosing(backend.stream(request, stats)) as stream:  # type: ignore[type-var]
            async for text in stream:
                texts.append(text)
    except CompletionError as failed:
        assert KEY not in str(failed)
        error = failed
    text = "".join(texts)
    if cleaner is not None:
        text = cleaner.feed(text) + cleaner.finish()
    return text, stats, error


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


async def arm(sim: SimHandle, kind: str, count: int) -> None:
    """Arm a fault the way a test harness outside the process would: over HTTP."""
    root = sim.base_url.removesuffix("/v1")
    async with httpx.AsyncClient() as control:
        response = await control.post(f"{root}/_sim/faults", json={"kind": kind, "count": count})
        response.raise_for_status()
        assert {"kind": kind, "count": count} in response.json()["armed"]


@every(PROVIDERS)
async def test_streams_the_true_middle_with_usage_and_timestamps(start_sim: StartSim, case: ProviderCase) -> None:
    sim = start_sim(profile="spark")
    async with make_client() as client:
        text, stats, error = await collect(case.backend(sim, client))
    assert error is None
    assert text == MIDDLE
    last = sim.stats()["last_request"]
    assert last["endpoint"] == case.endpoint
    assert last["had_authorization"] is True
    assert (last["prefix_chars"], last["suffix_chars"]) == (len(PREFIX), len(SUFFIX))
    assert stats.usage.input_tokens == last["prompt_tokens"] > 0
    assert stats.usage.output_tokens == sim.stats()["completion_tokens_sent"] > 0
    # The simulator reports cached_tokens (0 until it simulates a prompt cache); the field must be read.
    assert stats.usage.cached_tokens == 0
    assert stats.finish_reason == "stop"
    assert 0 < stats.request_sent_ns <= stats.first_byte_ns <= stats.first_token_ns


@every(PROVIDERS)
async def test_long_answer_arrives_in_many_chunks_and_stops_at_max_tokens(
    start_sim: StartSim, case: ProviderCase
) -> None:
    sim = start_sim(truth=())
    request = completion(case.provider, "# notes\n", "", max_tokens=300, path="", language="")
    async with make_client() as client:
        backend = case.backend(sim, client)
        stats = StreamStats()
        chunks = [text async for text in backend.stream(request, stats)]
    assert len(chunks) > 10
    assert stats.usage.output_tokens == 300
    assert stats.finish_reason == "length"


@every(PROVIDERS)
async def test_no_key_configured_sends_no_key(start_sim: StartSim, case: ProviderCase) -> None:
    sim = start_sim()
    async with make_client() as client:
        text, _, error = await collect(case.backend(sim, client, api_key_env=""))
    assert error is None and text == MIDDLE
    assert sim.stats()["last_request"]["had_authorization"] is False


@every(PROVIDERS)
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
    case: ProviderCase,
    kind: str,
    error_type: type[CompletionError],
    words: str,
    partial: bool,
) -> None:
    sim = start_sim(profile="spark")
    async with make_client() as client:
        # A short stall limit, so that the stall fault fails fast; the retry gets the usual one.
        backend = case.backend(sim, client, timeout_s=1.0)
        await arm(sim, kind, 1)
        text, _, error = await collect(backend)
        assert type(error) is error_type, error
        assert words in str(error)
        assert KEY not in str(error)
        # What arrived before the failure was handed over, and it is the start of the true answer.
        assert MIDDLE.startswith(text)
        assert bool(text) is partial
        assert sim.stats()["faults_fired"] == {kind: 1}
        again, _, error = await collect(case.backend(sim, client))
        assert error is None and again == MIDDLE


@every(PROVIDERS)
async def test_429_with_a_short_retry_after_is_retried_once(start_sim: StartSim, case: ProviderCase) -> None:
    sim = start_sim(retry_after_s=0.0)
    async with make_client() as client:
        backend = case.backend(sim, client)
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


@every(PROVIDERS)
async def test_429_with_a_long_retry_after_goes_back_to_the_caller(start_sim: StartSim, case: ProviderCase) -> None:
    sim = start_sim(faults=(parse_fault("429:1"),), retry_after_s=30.0)
    async with make_client() as client:
        backend = case.backend(sim, client)
        _, _, error = await collect(backend)
        assert isinstance(error, RateLimited) and error.retry_after_s == 30.0
        assert "429" in str(error)
        assert sim.stats()["requests_total"] == 1
        text, _, error = await collect(backend)
        assert error is None and text == MIDDLE


@every(PROVIDERS)
async def test_nothing_listening_is_backend_unavailable(start_sim: StartSim, case: ProviderCase) -> None:
    sim = start_sim()
    config = model(sim, case.provider)
    await asyncio.to_thread(sim.stop)  # joining the simulator's thread is not for the event loop
    async with make_client() as client:
        _, _, error = await collect(make_backend(config, client, env=ENV))
    assert type(error) is BackendUnavailable and "could not connect" in str(error)


@every(PROVIDERS)
async def test_warm_opens_the_connection_that_completions_then_use(start_sim: StartSim, case: ProviderCase) -> None:
    sim = start_sim()
    async with make_client() as client:
        ports = track_local_ports(client)
        backend = case.backend(sim, client)
        await backend.warm()
        assert sim.stats()["requests"].get("models") == 1
        for _ in range(3):
            text, _, error = await collect(backend)
            assert error is None and text == MIDDLE
    # One connection for the warm-up and every completion after it: each stream was read to its end.
    assert len(ports) == 4 and len(set(ports)) == 1


@every(PROVIDERS)
async def test_error_answers_leave_the_connection_reusable(start_sim: StartSim, case: ProviderCase) -> None:
    sim = start_sim(retry_after_s=30.0)
    async with make_client() as client:
        ports = track_local_ports(client)
        backend = case.backend(sim, client)
        for kind in ("500", "429", "truncate"):
            await arm(sim, kind, 1)
            _, _, error = await collect(backend)
            assert error is not None
        text, _, error = await collect(backend)
        assert error is None and text == MIDDLE
    assert len(ports) == 4 and len(set(ports)) == 1


@every(PROVIDERS)
@pytest.mark.parametrize("how", ["aclose", "cancel"])
async def test_abandoning_a_stream_releases_its_connection_at_once(
    start_sim: StartSim, case: ProviderCase, how: str
) -> None:
    # A slow, long stream (about 30 s at 65 tokens/s) abandoned after its first text. The client has one
    # connection and a short pool wait: if the abandoned response held it, the next request would fail
    # with a pool timeout instead of streaming.
    sim = start_sim(truth=(), profile="codex", ttft_ms=0.0)
    long_request = completion(case.provider, "# notes\n", "", max_tokens=2000, path="", language="")
    async with make_client(max_connections=1, max_keepalive_connections=1, pool_timeout_s=1.0) as client:
        responses = track_responses(client)
        backend = case.backend(sim, client)
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
        # It really was cut short: no stop reason came, and no output counted past what precedes the text.
        assert stats.finish_reason == "" and stats.usage.output_tokens == case.tokens_before_text
        # Closed by the time the consumer is done, not later by the garbage collector's finaliser.
        assert len(responses) == 1 and responses[0].is_closed
        # 16 tokens: the Responses API's minimum.
        text, _, error = await collect(
            backend, completion(case.provider, "# notes\n", "", max_tokens=16, path="", language="")
        )
        assert error is None, error
        assert text.startswith("# tandem sim")


@every(ACCURATE)
async def test_stop_strings_end_the_text_where_the_provider_would_have(start_sim: StartSim, case: ProviderCase) -> None:
    # Anthropic refuses a whitespace-only stop sequence and the Responses API has none: the backend cuts.
    sim = start_sim(profile="spark")
    request = completion(case.provider, stop=("\n",), language="")
    async with make_client() as client:
        text, stats, error = await collect(case.backend(sim, client), request)
    assert error is None
    assert text == MIDDLE.split("\n")[0]
    assert stats.finish_reason == "stop"


@every(ACCURATE)
async def test_an_edit_conversation_streams_back_raw_and_applies_to_the_truth(
    start_sim: StartSim, case: ProviderCase
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
    request = ModelRequest(path="views.py", max_tokens=2000, messages=messages)
    async with make_client() as client:
        text, stats, error = await collect(case.backend(sim, client), request, clean=False)
    assert error is None
    # Raw: no fence or chatter cleanup, the SEARCH/REPLACE markers and path lines arrive as sent.
    assert text.startswith("views.py\n<<<<<<< SEARCH\n")
    edits = parse_answer(text, EditTarget(originals={"views.py": views, "urls.py": urls}, primary="views.py"))
    assert apply_all({"views.py": views, "urls.py": urls}, edits) == truth
    assert stats.finish_reason == "stop"
    assert stats.usage.output_tokens > 20


@every(ACCURATE)
async def test_the_provider_refusing_a_request_is_bad_response_in_its_words(
    start_sim: StartSim, case: ProviderCase
) -> None:
    sim = start_sim()
    async with make_client() as client:
        # No model: both APIs require one, and answer 400 in their own error shape.
        _, _, error = await collect(case.backend(sim, client, model=""))
    assert isinstance(error, BadResponse)
    assert "400" in str(error) and "model" in str(error)


@every(ACCURATE)
async def test_a_repeated_long_prompt_reports_the_providers_cached_tokens(
    start_sim: StartSim, case: ProviderCase
) -> None:
    # The simulator caches OpenAI-shaped prompts of 1,024+ tokens; Anthropic caches only blocks marked
    # cache_control (tandem marks none), so its cached count stays 0, as it would for real.
    sim = start_sim(truth=())
    long_prefix = "".join(f"value_{n} = compute({n}, factor={n * 7})\n" for n in range(300))
    request = completion(case.provider, long_prefix, "", max_tokens=16, path="", language="")
    async with make_client() as client:
        backend = case.backend(sim, client)
        _, first, error = await collect(backend, request)
        assert error is None
        _, second, error = await collect(backend, request)
        assert error is None
    assert first.usage.cached_tokens == 0
    assert second.usage.input_tokens == first.usage.input_tokens > 1024
    if case is OPENAI_RESPONSES:
        assert 1024 <= second.usage.cached_tokens < second.usage.input_tokens
    else:
        assert second.usage.cached_tokens == 0


async def test_anthropic_sends_its_headers_and_a_top_level_system(start_sim: StartSim) -> None:
    sim = start_sim()
    seen: list[httpx.Request] = []

    async def hook(request: httpx.Request) -> None:
        seen.append(request)

    async with make_client() as client:
        client.event_hooks = {"request": [hook]}
        text, _, error = await collect(ANTHROPIC.backend(sim, client))
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
    request = dataclasses.replace(
        completion(
            "anthropic", "a = ", "\n", context="def helper():\n    return 1\n", max_tokens=8, stop=("\n", "\n\n", "```")
        ),
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
