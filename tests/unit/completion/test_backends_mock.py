"""Backends against `httpx.MockTransport`, for the cases a real simulator cannot produce on demand
(an HTTP-date Retry-After, a provider that echoes the key in an error, a JSON body instead of SSE...).
Everything a real provider does routinely is covered against the simulator in test_backends_contract.py."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from tandem.completion.config.tree import ModelConfig, Provider
from tandem.completion.inline.prompts import completion_request, split_chat_prompt
from tandem.completion.providers.backends.base import Backend, ModelRequest, StreamStats
from tandem.completion.providers.backends.factory import make_backend
from tandem.completion.providers.errors import (
    BackendTimeout,
    BackendUnavailable,
    BadResponse,
    CompletionError,
    NotConfigured,
    RateLimited,
)
from tandem.completion.providers.http import make_client

KEY = "sk-test-0123456789abcdef"
ENV = {"TANDEM_TEST_KEY": KEY}
# A completion's prompt, asked of each provider in the shape its API takes (`inline.prompts`).
PREFIX, SUFFIX = "def add(a, b):\n    return ", "\n"
Handler = Callable[[httpx.Request], httpx.Response]


def chat_chunk(text: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


def text_chunk(text: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "text": text, "finish_reason": None}]}


USAGE = {
    "choices": [],
    "usage": {"prompt_tokens": 40, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 32}},
}


def sse(payloads: Iterable[object], *, done: bool = True) -> bytes:
    body = "".join(f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n" for p in payloads)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


def stream_response(body: bytes | AsyncIterator[bytes], status: int = 200, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers={"content-type": "text/event-stream", **headers}, content=body)


class Recorder:
    """A MockTransport handler that answers from a list, one response (or exception) per request."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


async def run(
    handler: Handler,
    *,
    provider: Provider = "openai-chat",
    env: dict[str, str] | None = None,
    **config: object,
) -> tuple[list[str], StreamStats, CompletionError | None]:
    """Stream a completion through a backend on `handler`; the texts yielded, the stats, and the error raised."""
    settings: dict[str, object] = {"base_url": "https://api.example.test/v1", "model": "m-1"}
    settings["api_key_env"] = "TANDEM_TEST_KEY"
    settings.update(config)
    model = ModelConfig(provider=provider, **settings)  # type: ignore[arg-type]
    request = completion_request(model, prefix=PREFIX, suffix=SUFFIX, path="m.py", language="python")
    stats = StreamStats()
    texts: list[str] = []
    async with make_client(transport=httpx.MockTransport(handler)) as client:
        backend: Backend = make_backend(model, client, env=ENV if env is None else env)
        try:
            async for text in backend.stream(request, stats):
                texts.append(text)
        except CompletionError as exc:
            assert KEY not in str(exc)
            return texts, stats, exc
    return texts, stats, None


async def test_chat_streams_text_usage_and_timestamps() -> None:
    recorder = Recorder(stream_response(sse([chat_chunk("a +"), chat_chunk(" b"), USAGE])))
    texts, stats, error = await run(recorder)
    assert error is None
    assert "".join(texts) == "a + b"
    assert (stats.usage.input_tokens, stats.usage.output_tokens, stats.usage.cached_tokens) == (40, 3, 32)
    assert 0 < stats.request_sent_ns <= stats.first_byte_ns <= stats.first_token_ns


async def test_chat_request_body_and_headers() -> None:
    recorder = Recorder(stream_response(sse([chat_chunk("x")])))
    config = ModelConfig(base_url="https://h.test/v1/", model="m-1", api_key_env="TANDEM_TEST_KEY")
    request = dataclasses.replace(
        completion_request(config, prefix="p", suffix="s"),
        stop=("\n\n", "a", "b", "c", "d"),
        max_tokens=64,
        temperature=0.2,
    )
    stats = StreamStats()
    async with make_client(transport=httpx.MockTransport(recorder)) as client:
        backend = make_backend(config, client, env=ENV)
        assert [t async for t in backend.stream(request, stats)] == ["x"]
    (sent,) = recorder.requests
    assert sent.method == "POST" and sent.url == "https://h.test/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["accept"] == "text/event-stream"
    body = json.loads(sent.content)
    assert body["model"] == "m-1" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 64 and body["temperature"] == 0.2
    assert body["stop"] == ["\n\n", "a", "b", "c"]
    assert split_chat_prompt(body["messages"]) == ("p", "s")


async def test_fim_sends_prompt_and_suffix_and_streams_text() -> None:
    recorder = Recorder(stream_response(sse([text_chunk("a + b"), text_chunk("\n"), USAGE])))
    texts, stats, error = await run(recorder, provider="fim")
    assert error is None and texts == ["a + b", "\n"]
    assert stats.usage.cached_tokens == 32
    (sent,) = recorder.requests
    assert sent.url.path == "/v1/completions"
    body = json.loads(sent.content)
    assert (body["prompt"], body["suffix"]) == (PREFIX, SUFFIX)
    assert body["stream_options"] == {"include_usage": True} and "stop" not in body


async def test_fim_with_a_template_sends_a_raw_prompt_and_its_stop_tokens() -> None:
    recorder = Recorder(stream_response(sse([text_chunk("a + b")])))
    texts, _, error = await run(recorder, provider="fim", fim_template="qwen2.5-coder")
    assert error is None and texts == ["a + b"]
    body = json.loads(recorder.requests[0].content)
    assert body["prompt"] == f"<|fim_prefix|>{PREFIX}<|fim_suffix|>{SUFFIX}<|fim_middle|>"
    assert "suffix" not in body
    assert "<|endoftext|>" in body["stop"]


async def test_a_chat_answer_streams_as_the_model_wrote_it_to_its_end() -> None:
    # Cleaning a completion's answer is the completion's (inline.answer, tested in test_answer_cleaner and
    # test_streams): the backend hands on every text, and reads on to the usage at the end.
    pieces = ["Here is the code:\n", "```py", "thon\n", "a + b\n", "``", "`\n", "Done!"]
    recorder = Recorder(stream_response(sse([*[chat_chunk(t) for t in pieces], USAGE])))
    texts, stats, error = await run(recorder)
    assert error is None
    assert texts == pieces
    assert stats.usage.output_tokens == 3


@pytest.mark.parametrize("provider", ["openai-chat", "anthropic", "openai-responses"])
async def test_a_chat_api_refuses_a_fill_before_sending(provider: Provider) -> None:
    recorder = Recorder(stream_response(sse([chat_chunk("x")])))
    async with make_client(transport=httpx.MockTransport(recorder)) as client:
        backend = make_backend(ModelConfig(provider=provider, base_url="https://h.test/v1"), client)
        with pytest.raises(CompletionError, match="takes a conversation"):
            async for _ in backend.stream(ModelRequest(prefix="a = ", suffix="\n"), StreamStats()):
                pass
    assert recorder.requests == []


async def test_no_key_variable_configured_sends_no_authorization() -> None:
    recorder = Recorder(stream_response(sse([chat_chunk("x")])))
    _, _, error = await run(recorder, api_key_env="")
    assert error is None
    assert "authorization" not in recorder.requests[0].headers


async def test_key_variable_unset_is_not_configured_and_sends_nothing() -> None:
    recorder = Recorder(stream_response(sse([chat_chunk("x")])))
    _, _, error = await run(recorder, env={})
    assert isinstance(error, NotConfigured) and "TANDEM_TEST_KEY" in str(error)
    assert recorder.requests == []


async def test_429_with_short_retry_after_is_retried_once_inside_the_backend() -> None:
    recorder = Recorder(
        httpx.Response(429, headers={"retry-after": "0"}, json={"error": {"message": "slow down"}}),
        stream_response(sse([chat_chunk("ok")])),
    )
    texts, stats, error = await run(recorder)
    assert error is None and texts == ["ok"]
    assert len(recorder.requests) == 2
    assert stats.first_byte_ns >= stats.request_sent_ns > 0


async def test_429_twice_raises_rate_limited_after_one_retry() -> None:
    recorder = Recorder(httpx.Response(429, headers={"retry-after": "0"}))
    texts, _, error = await run(recorder)
    assert isinstance(error, RateLimited) and error.retry_after_s == 0.0
    assert texts == [] and len(recorder.requests) == 2


async def test_429_with_long_retry_after_goes_back_to_the_caller_at_once() -> None:
    recorder = Recorder(httpx.Response(429, headers={"retry-after": "30"}))
    _, _, error = await run(recorder)
    assert isinstance(error, RateLimited) and error.retry_after_s == 30.0
    assert isinstance(error, BackendUnavailable)
    assert len(recorder.requests) == 1


async def test_429_with_an_http_date_retry_after() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    recorder = Recorder(httpx.Response(429, headers={"retry-after": later}))
    _, _, error = await run(recorder)
    assert isinstance(error, RateLimited)
    assert error.retry_after_s is not None and 60 < error.retry_after_s <= 120
    assert len(recorder.requests) == 1


async def test_429_with_a_past_http_date_is_retried() -> None:
    earlier = format_datetime(datetime.now(UTC) - timedelta(seconds=5), usegmt=True)
    recorder = Recorder(httpx.Response(429, headers={"retry-after": earlier}), stream_response(sse([chat_chunk("ok")])))
    texts, _, error = await run(recorder)
    assert error is None and texts == ["ok"] and len(recorder.requests) == 2


async def test_429_without_retry_after_is_not_retried() -> None:
    recorder = Recorder(httpx.Response(429))
    _, _, error = await run(recorder)
    assert isinstance(error, RateLimited) and error.retry_after_s is None
    assert len(recorder.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 529])
async def test_5xx_is_backend_unavailable_with_the_status(status: int) -> None:
    _, _, error = await run(Recorder(httpx.Response(status, text="upstream exploded")))
    assert type(error) is BackendUnavailable
    assert str(status) in str(error) and "upstream exploded" in str(error)


async def test_4xx_is_bad_response_with_a_key_free_excerpt() -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}. Bearer {KEY} rejected", "type": "auth"}}
    _, _, error = await run(Recorder(httpx.Response(401, json=body)))
    assert isinstance(error, BadResponse)
    assert "401" in str(error) and "Incorrect API key provided" in str(error)
    assert KEY not in str(error)


async def test_a_long_error_body_is_cut_short() -> None:
    _, _, error = await run(Recorder(httpx.Response(400, text="x" * 100_000)))
    assert isinstance(error, BadResponse)
    assert len(str(error)) < 400


async def test_json_instead_of_a_stream_is_bad_response() -> None:
    _, _, error = await run(Recorder(httpx.Response(200, json={"choices": [{"message": {"content": "x"}}]})))
    assert isinstance(error, BadResponse) and "instead of an event stream" in str(error)


@pytest.mark.parametrize(
    ("exception", "kind"),
    [
        (httpx.ConnectError("connection refused"), BackendUnavailable),
        (httpx.ConnectTimeout("timed out"), BackendTimeout),
        (httpx.ReadTimeout("timed out"), BackendTimeout),
        (httpx.WriteTimeout("timed out"), BackendTimeout),
        (httpx.PoolTimeout("timed out"), BackendTimeout),
        (httpx.RemoteProtocolError("Server disconnected without sending a response."), BackendUnavailable),
        (httpx.ReadError("connection reset by peer"), BackendUnavailable),
    ],
)
async def test_transport_failures_before_any_answer(exception: Exception, kind: type[CompletionError]) -> None:
    _, _, error = await run(Recorder(exception))
    assert type(error) is kind


async def failing_body(parts: list[bytes], failure: Exception | None) -> AsyncIterator[bytes]:
    for part in parts:
        yield part
    if failure is not None:
        raise failure


@pytest.mark.parametrize(
    ("failure", "kind", "words"),
    [
        (None, BadResponse, "stream truncated"),
        (httpx.RemoteProtocolError("incomplete chunked read"), BadResponse, "stream truncated"),
        (httpx.ReadTimeout("timed out"), BackendTimeout, "stalled"),
        (httpx.ReadError("connection reset by peer"), BackendUnavailable, "mid-stream"),
    ],
)
async def test_failures_mid_stream_come_after_the_text_that_arrived(
    failure: Exception | None, kind: type[CompletionError], words: str
) -> None:
    parts = [sse([chat_chunk("a +")], done=False), sse([chat_chunk(" b")], done=False), b'data: {"choi']
    texts, stats, error = await run(Recorder(stream_response(failing_body(parts, failure))))
    assert "".join(texts) == "a + b"
    assert type(error) is kind and words in str(error)
    assert stats.usage.output_tokens == 0


async def test_a_chunk_that_is_not_json_is_bad_response_after_earlier_text() -> None:
    body = sse([chat_chunk("a"), "{not json", chat_chunk("never")])
    texts, _, error = await run(Recorder(stream_response(body)))
    assert texts == ["a"]
    assert isinstance(error, BadResponse) and "not JSON" in str(error)


async def test_an_error_object_mid_stream_is_bad_response() -> None:
    body = sse([text_chunk("a"), {"error": {"message": "context length exceeded"}}])
    texts, _, error = await run(Recorder(stream_response(body)), provider="fim")
    assert texts == ["a"]
    assert isinstance(error, BadResponse) and "context length exceeded" in str(error)


async def test_text_before_a_failure_is_handed_over_as_it_came() -> None:
    texts, _, error = await run(Recorder(stream_response(sse([chat_chunk("Here")], done=False))))
    assert texts == ["Here"] and isinstance(error, BadResponse)


async def test_warm_asks_for_the_model_list_and_ignores_failures() -> None:
    recorder = Recorder(httpx.Response(200, json={"data": []}))
    async with make_client(transport=httpx.MockTransport(recorder)) as client:
        backend = make_backend(
            ModelConfig(base_url="https://h.test/v1", api_key_env="TANDEM_TEST_KEY"), client, env=ENV
        )
        await backend.warm()
        assert [(r.method, str(r.url)) for r in recorder.requests] == [("GET", "https://h.test/v1/models")]
        recorder.answers = [httpx.ConnectError("refused")]
        await backend.warm()
        unset = make_backend(ModelConfig(base_url="https://h.test/v1", api_key_env="UNSET_VAR"), client, env={})
        recorder.answers = [httpx.Response(401)]
        await unset.warm()
        assert "authorization" not in recorder.requests[-1].headers


async def test_a_closed_backend_refuses_to_stream() -> None:
    recorder = Recorder(stream_response(sse([chat_chunk("x")])))
    async with make_client(transport=httpx.MockTransport(recorder)) as client:
        backend = make_backend(ModelConfig(base_url="https://h.test/v1"), client)
        await backend.aclose()
        with pytest.raises(BackendUnavailable, match="closed"):
            async for _ in backend.stream(completion_request(ModelConfig(), prefix="a", suffix=""), StreamStats()):
                pass
    assert recorder.requests == []


async def test_a_closed_client_is_backend_unavailable_not_a_runtime_error() -> None:
    recorder = Recorder(stream_response(sse([chat_chunk("x")])))
    client = make_client(transport=httpx.MockTransport(recorder))
    backend = make_backend(ModelConfig(base_url="https://h.test/v1"), client)
    await client.aclose()
    with pytest.raises(BackendUnavailable, match="closed"):
        async for _ in backend.stream(completion_request(ModelConfig(), prefix="a", suffix=""), StreamStats()):
            pass


async def test_a_model_request_is_sent_as_the_client_would_send_it_and_keeps_its_cookies() -> None:
    """`streaming.posted` hands the request to the transport itself: the bytes sent are those of
    `client.stream` (headers in order, body, timeout), the client's cookies go with it, and a cookie the
    provider sets is sent back on the next request, as the client's own way would."""
    from tandem.completion.providers.backends.streaming import StreamCall, posted

    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return stream_response(sse([chat_chunk("x")]), **{"set-cookie": "affinity=node-7; Path=/"})

    call = StreamCall(
        url="https://api.example.test/v1/chat/completions",
        body={"messages": [{"role": "user", "content": "é ✓"}], "stream": True},
        timeout=httpx.Timeout(3.0, read=7.0),
        api_key=KEY,
    )
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {KEY}"}
    async with make_client(transport=httpx.MockTransport(handler)) as client:
        for _ in range(2):
            expected = client.build_request(
                "POST", call.url, json=dict(call.body), headers=headers, timeout=call.timeout
            )
            async with posted(client, call, headers) as response:
                assert response.status_code == 200
                assert (await response.aread()).startswith(b"data: ")
            got = sent[-1]
            assert got.headers.raw == expected.headers.raw
            assert got.content == expected.content
            assert (got.method, got.url, got.extensions) == (expected.method, expected.url, expected.extensions)
    assert "cookie" not in sent[0].headers
    assert sent[1].headers["cookie"] == "affinity=node-7"


async def test_a_model_url_with_a_password_is_sent_with_basic_auth_as_the_client_sends_it() -> None:
    from tandem.completion.providers.backends.streaming import StreamCall, posted

    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return stream_response(sse([chat_chunk("x")]))

    call = StreamCall(url="https://user:secret@api.example.test/v1/chat/completions", body={}, timeout=httpx.Timeout(3))
    async with make_client(transport=httpx.MockTransport(handler)) as client:
        async with posted(client, call, {}) as response:
            await response.aread()
    assert sent[0].headers["authorization"] == httpx.BasicAuth("user", "secret")._auth_header
