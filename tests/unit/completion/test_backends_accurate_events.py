"""The accurate tier's backends against `httpx.MockTransport`, for events the simulator does not send on
demand: cached-token usage, thinking deltas, error events mid-stream, `response.failed`, unknown events.
Everything routine is covered against the simulator in tests/contract/test_backends_contract.py."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tandem.completion.config.tree import ModelConfig, Provider
from tandem.completion.inline.prompts import completion_request
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.backends.factory import make_backend
from tandem.completion.providers.backends.sse_stream import StopCutter
from tandem.completion.providers.errors import BackendUnavailable, BadResponse, CompletionError, RateLimited
from tandem.completion.providers.http import make_client

KEY = "sk-test-0123456789abcdef"
ENV = {"TANDEM_TEST_KEY": KEY}
# A completion's prompt as both APIs take it: a conversation (`inline.prompts`).
REQUEST = completion_request(
    ModelConfig(provider="anthropic"), prefix="def add(a, b):\n    return ", suffix="\n", path="m.py", language="python"
)


def events(*pairs: tuple[str, dict[str, Any] | str]) -> bytes:
    return "".join(
        f"event: {name}\ndata: {data if isinstance(data, str) else json.dumps(data)}\n\n" for name, data in pairs
    ).encode()


def anthropic_text(text: str) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }


def responses_text(text: str) -> tuple[str, dict[str, Any]]:
    return "response.output_text.delta", {"type": "response.output_text.delta", "delta": text}


MESSAGE_START = (
    "message_start",
    {
        "type": "message_start",
        "message": {
            "usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": 5,
                "cache_read_input_tokens": 30,
                "output_tokens": 1,
            }
        },
    },
)
MESSAGE_END: list[tuple[str, dict[str, Any] | str]] = [
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}),
    ("message_stop", {"type": "message_stop"}),
]


def completed(status: str = "completed", **extra: Any) -> tuple[str, dict[str, Any]]:
    usage = {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 48}, "output_tokens": 4}
    response = {"status": status, "usage": usage, **extra}
    return f"response.{status}", {"type": f"response.{status}", "response": response}


async def run(
    provider: Provider, body: bytes, request: ModelRequest = REQUEST
) -> tuple[list[str], StreamStats, CompletionError | None]:
    def handler(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    config = ModelConfig(
        provider=provider, base_url="https://api.example.com/v1", model="m", api_key_env="TANDEM_TEST_KEY"
    )
    stats = StreamStats()
    texts: list[str] = []
    async with make_client(transport=httpx.MockTransport(handler)) as client:
        try:
            async for text in make_backend(config, client, env=ENV).stream(request, stats):
                texts.append(text)
        except CompletionError as error:
            assert KEY not in str(error)
            return texts, stats, error
    return texts, stats, None


async def test_anthropic_usage_counts_cache_reads_as_cached_input() -> None:
    body = events(MESSAGE_START, ("ping", {"type": "ping"}), anthropic_text("a + b"), *MESSAGE_END)
    texts, stats, error = await run("anthropic", body)
    assert error is None and "".join(texts) == "a + b"
    assert (stats.usage.input_tokens, stats.usage.cached_tokens, stats.usage.output_tokens) == (45, 30, 7)
    assert stats.finish_reason == "stop"


async def test_anthropic_skips_thinking_and_unknown_events_and_reads_a_first_block_text() -> None:
    thinking = (
        "content_block_delta",
        {"type": "content_block_delta", "delta": {"type": "thinking_delta", "thinking": "hmm"}},
    )
    start = ("content_block_start", {"type": "content_block_start", "content_block": {"type": "text", "text": "a"}})
    body = events(
        MESSAGE_START, thinking, start, ("future_event", {"type": "future_event"}), anthropic_text(" + b"), *MESSAGE_END
    )
    texts, _, error = await run("anthropic", body)
    assert error is None and "".join(texts) == "a + b"


async def test_anthropic_max_tokens_is_length() -> None:
    end = (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 3}},
    )
    body = events(MESSAGE_START, anthropic_text("a +"), end, ("message_stop", {"type": "message_stop"}))
    _, stats, error = await run("anthropic", body)
    assert error is None and stats.finish_reason == "length"


@pytest.mark.parametrize(
    ("kind", "error_type"),
    [
        ("overloaded_error", BackendUnavailable),
        ("rate_limit_error", RateLimited),
        ("invalid_request_error", BadResponse),
    ],
)
async def test_anthropic_error_event_comes_after_the_text_that_arrived(kind: str, error_type: type[Exception]) -> None:
    error_event = ("error", {"type": "error", "error": {"type": kind, "message": f"Overloaded (key {KEY})"}})
    texts, _, error = await run("anthropic", events(MESSAGE_START, anthropic_text("a + b"), error_event))
    assert "".join(texts) == "a + b"
    assert type(error) is error_type and kind in str(error)


async def test_anthropic_body_ending_without_message_stop_is_truncated() -> None:
    texts, _, error = await run("anthropic", events(MESSAGE_START, anthropic_text("a +")))
    assert "".join(texts) == "a +"
    assert isinstance(error, BadResponse) and "stream truncated" in str(error) and "message_stop" in str(error)


async def test_anthropic_answer_streams_as_written_to_the_usage_at_its_end() -> None:
    # Cleaning a completion's answer of fences is the completion's (inline.answer; test_streams).
    answer = "```python\na + b\n```\nThat adds them."
    texts, stats, error = await run("anthropic", events(MESSAGE_START, anthropic_text(answer), *MESSAGE_END))
    assert error is None and "".join(texts) == answer
    assert stats.usage.output_tokens == 7


async def test_responses_usage_has_cached_tokens_and_incomplete_is_length() -> None:
    body = events(responses_text("a + b"), completed("incomplete", incomplete_details={"reason": "max_output_tokens"}))
    texts, stats, error = await run("openai-responses", body)
    assert error is None and "".join(texts) == "a + b"
    assert (stats.usage.input_tokens, stats.usage.cached_tokens, stats.usage.output_tokens) == (50, 48, 4)
    assert stats.finish_reason == "length"


async def test_responses_skips_reasoning_and_unknown_events() -> None:
    reasoning = (
        "response.reasoning_summary_text.delta",
        {"type": "response.reasoning_summary_text.delta", "delta": "x"},
    )
    body = events(("response.created", {"type": "response.created"}), reasoning, responses_text("a + b"), completed())
    texts, stats, error = await run("openai-responses", body)
    assert error is None and "".join(texts) == "a + b" and stats.finish_reason == "stop"


@pytest.mark.parametrize(
    ("event", "error_type", "words"),
    [
        (
            (
                "response.failed",
                {"type": "response.failed", "response": {"error": {"code": "server_error", "message": "boom"}}},
            ),
            BackendUnavailable,
            "boom",
        ),
        (("error", {"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}), RateLimited, "slow down"),
        (("error", {"type": "error", "code": "invalid_prompt", "message": "no"}), BadResponse, "invalid_prompt"),
    ],
)
async def test_responses_failures_mid_stream(
    event: tuple[str, dict[str, Any]], error_type: type[Exception], words: str
) -> None:
    texts, _, error = await run("openai-responses", events(responses_text("a +"), event))
    assert "".join(texts) == "a +"
    assert type(error) is error_type and words in str(error)


async def test_an_event_that_is_not_json_is_bad_response() -> None:
    texts, _, error = await run(
        "openai-responses", events(responses_text("a"), ("response.output_text.delta", "{oops"))
    )
    assert texts == ["a"]
    assert isinstance(error, BadResponse) and "not JSON" in str(error)


def test_stop_cutter_finds_a_stop_split_over_chunks() -> None:
    cutter = StopCutter(("\n\n", "END"))
    out = cutter.feed("a = 1\n") + cutter.feed("\nb = 2")
    assert out == "a = 1" and cutter.stopped
    assert cutter.feed("more") == "" and cutter.finish() == ""


def test_stop_cutter_earliest_stop_wins_and_held_text_comes_at_the_end() -> None:
    cutter = StopCutter(("END", "\n"))
    assert cutter.feed("xEN") == "x"  # "EN" may start "END"
    assert cutter.feed("Dy\n") == "" and cutter.stopped  # "END" comes before the newline
    fresh = StopCutter(("END",))
    assert fresh.feed("abE") == "a"
    assert fresh.finish() == "bE"
    assert StopCutter(()).feed("anything") == "anything"
