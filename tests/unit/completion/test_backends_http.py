"""Pure parts of the backends: the shared client's settings, Retry-After, chunk parsing, the factory."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from tandem.completion.config.tree import ModelConfig
from tandem.completion.providers.backends.factory import describe_model, make_backend
from tandem.completion.providers.backends.fim import FimBackend
from tandem.completion.providers.backends.openai_chat import OpenAIChatBackend
from tandem.completion.providers.backends.streaming import Chunk, api_key, parse_chunk, redact
from tandem.completion.providers.errors import BadResponse, NotConfigured
from tandem.completion.providers.http import make_client, parse_retry_after, request_timeout

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


async def test_make_client_sets_every_timeout_phase_and_limits() -> None:
    async with make_client(
        connect_timeout_s=1.5, read_timeout_s=7.0, write_timeout_s=4.0, pool_timeout_s=0.5
    ) as client:
        assert client.timeout == httpx.Timeout(connect=1.5, read=7.0, write=4.0, pool=0.5)
        assert client.headers["user-agent"].startswith("tandem-lsp/")
        assert client.follow_redirects is False


def test_request_timeout_reads_connect_and_stall_limits_from_the_model() -> None:
    timeout = request_timeout(ModelConfig(connect_timeout_s=0.7, timeout_s=4.0))
    assert timeout.connect == 0.7
    assert timeout.read == 4.0
    assert timeout.write is not None and timeout.pool is not None


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("0", 0.0),
        ("1", 1.0),
        (" 2 ", 2.0),
        ("0.5", 0.5),
        ("-3", 0.0),
        ("", None),
        ("soon", None),
        ("nan", None),
    ],
)
def test_retry_after_as_seconds(header: str, seconds: float | None) -> None:
    assert parse_retry_after(header, now=NOW) == seconds


def test_retry_after_as_http_date() -> None:
    later = format_datetime(NOW + timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(later, now=NOW) == 90.0
    earlier = format_datetime(NOW - timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(earlier, now=NOW) == 0.0
    assert parse_retry_after("Sun, 01 Mar 2026 12:00:30 GMT", now=NOW) == 30.0
    assert parse_retry_after(None) is None


def test_parse_chunk_chat_delta_finish_and_usage_with_cached_tokens() -> None:
    chunk = parse_chunk('{"choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":null}]}')
    assert chunk == Chunk(text="ab")
    final = parse_chunk('{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}')
    assert final.finish_reason == "stop" and final.text == ""
    usage = parse_chunk(
        '{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,'
        '"prompt_tokens_details":{"cached_tokens":64}}}'
    ).usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (100, 7, 64)


def test_parse_chunk_completions_text_and_provider_variants() -> None:
    assert parse_chunk('{"choices":[{"index":0,"text":"x = 1","finish_reason":"length"}]}') == Chunk(
        text="x = 1", finish_reason="length"
    )
    groq = parse_chunk('{"choices":[],"x_groq":{"usage":{"prompt_tokens":5,"completion_tokens":2}}}').usage
    assert groq is not None and groq.input_tokens == 5
    deepseek = parse_chunk('{"usage":{"prompt_tokens":9,"completion_tokens":1,"prompt_cache_hit_tokens":8}}').usage
    assert deepseek is not None and deepseek.cached_tokens == 8
    # Reasoning text is not code.
    assert parse_chunk('{"choices":[{"index":0,"delta":{"reasoning":"hmm","content":null}}]}').text == ""
    # Only choice 0 counts.
    assert parse_chunk('{"choices":[{"index":1,"delta":{"content":"no"}}]}').text == ""


# Chunks of every shape parse_chunk meets or refuses, for the common shape's quicker reading to match.
CHUNK_SHAPES = [
    '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
    '{"choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":null}],"usage":null}',
    '{"choices":[{"index":0,"delta":{"content":"\\u00e9\\n"},"logprobs":null,"finish_reason":null}]}',
    '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
    '{"choices":[{"delta":{"content":"no index"}}]}',
    '{"choices":[{"index":0,"text":"x = 1","finish_reason":"length"}]}',
    '{"choices":[{"index":0,"delta":"not a dict","text":"from text"}]}',
    '{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"}}]}',
    '{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64}}}',
    '{"choices":[],"x_groq":{"usage":{"prompt_tokens":5,"completion_tokens":2}}}',
    '{"usage":{"prompt_tokens":9,"completion_tokens":1,"prompt_cache_hit_tokens":8}}',
    '{"choices":[{"index":0,"delta":{"reasoning":"hmm","content":null}}]}',
    '{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":5}]}',
    '{"choices":[{"index":0.0,"delta":{"content":"float index"}}]}',
    '{"choices":[{"index":true,"delta":{"content":"bool index"}}]}',
    '{"choices":null}',
    '{"choices":0}',
    '{"choices":{}}',
    '{"choices":""}',
    '{"choices":["not a dict"]}',
    '{"error":null,"choices":[{"index":0,"delta":{"content":"e"}}]}',
    '{"error":{"message":"overloaded"}}',
    '{"choices":[{"index":0,"delta":{"content":5}}]}',
    '{"choices":[{"index":0,"delta":{"content":["a"]}}]}',
    '{"a":NaN,"choices":[]}',
    '{"choices":[]} ',
    ' {"choices":[]}',
    '{"choices":[]}{"choices":[]}',
    '{"choices":[',
    "{}",
    "[1, 2]",
    "not json",
    "\ufeff{}",
]


@pytest.mark.parametrize("data", CHUNK_SHAPES)
def test_the_common_chunk_shape_is_read_as_any_chunk_is(data: str) -> None:
    """parse_chunk reads the common shape with fewer calls (`_common_chunk`); whatever it returns or raises
    is what the general reading (`_any_chunk`) returns or raises."""
    from tandem.completion.providers.backends.streaming import _any_chunk

    def outcome(read: Callable[[str], Chunk]) -> object:
        try:
            return read(data)
        except BadResponse as error:
            return ("BadResponse", str(error))

    assert outcome(parse_chunk) == outcome(_any_chunk)


def test_the_common_chunk_shape_takes_the_quick_reading() -> None:
    from tandem.completion.providers.backends.streaming import _common_chunk

    assert _common_chunk(CHUNK_SHAPES[1]) == Chunk(text="ab")
    assert _common_chunk(CHUNK_SHAPES[8]) == parse_chunk(CHUNK_SHAPES[8])


@pytest.mark.parametrize(
    "data",
    ["not json", '{"choices": [', "[1, 2]", '{"choices": "x"}', '{"choices":[{"delta":{"content":5}}]}'],
)
def test_parse_chunk_rejects_what_is_not_a_chunk(data: str) -> None:
    with pytest.raises(BadResponse):
        parse_chunk(data)


def test_parse_chunk_reports_a_provider_error_in_the_stream() -> None:
    with pytest.raises(BadResponse, match="overloaded"):
        parse_chunk('{"error":{"message":"model overloaded","type":"server_error"}}')


def test_api_key_is_read_from_the_named_variable() -> None:
    config = ModelConfig(api_key_env="TANDEM_TEST_KEY", model="m")
    assert api_key(config, {"TANDEM_TEST_KEY": " secret-value \n"}) == "secret-value"
    assert api_key(ModelConfig(), {"TANDEM_TEST_KEY": "x"}) is None
    for env in ({}, {"TANDEM_TEST_KEY": ""}, {"TANDEM_TEST_KEY": "  "}):
        with pytest.raises(NotConfigured, match="TANDEM_TEST_KEY") as caught:
            api_key(config, env)
        assert "secret" not in str(caught.value)


def test_an_unusable_key_is_refused_without_showing_it() -> None:
    config = ModelConfig(api_key_env="TANDEM_TEST_KEY")
    for value in ("clé-secrète", "two words", "tab\tinside"):
        with pytest.raises(NotConfigured, match="TANDEM_TEST_KEY") as caught:
            api_key(config, {"TANDEM_TEST_KEY": value})
        assert value not in str(caught.value)


def test_redact_removes_the_key_and_key_shaped_text() -> None:
    text = "bad key secret-123 (Authorization: Bearer abc.def) try sk-proj-abcdefgh1234 or gsk_abcdefghij"
    out = redact(text, "secret-123")
    for secret in ("secret-123", "abc.def", "sk-proj-abcdefgh1234", "gsk_abcdefghij"):
        assert secret not in out
    assert "bad key" in out


async def test_factory_builds_each_implemented_provider() -> None:
    async with make_client() as client:
        chat = make_backend(ModelConfig(provider="openai-chat", base_url="https://api.cerebras.ai/v1"), client)
        fim = make_backend(ModelConfig(provider="fim", base_url="http://127.0.0.1:8080/v1"), client, env={})
        templated = make_backend(
            ModelConfig(provider="fim", base_url="http://localhost:8080", fim_template="qwen2.5-coder"),
            client,
        )
    assert isinstance(chat, OpenAIChatBackend) and chat.name == "openai-chat"
    assert isinstance(fim, FimBackend) and fim.name == "fim"
    assert isinstance(templated, FimBackend)


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (ModelConfig(provider="ollama", base_url="http://localhost:11434"), "no backend yet"),
        (ModelConfig(provider="openai-chat", base_url=""), "no base_url"),
        (ModelConfig(provider="openai-chat", base_url="api.cerebras.ai/v1"), "http:// or https://"),
        (ModelConfig(provider="fim", base_url="ftp://host/v1"), "http:// or https://"),
        (ModelConfig(provider="fim", base_url="http://h/v1", fim_template="nope"), "unknown fim_template"),
    ],
)
async def test_factory_refuses_what_it_cannot_build_in_words(config: ModelConfig, words: str) -> None:
    async with make_client() as client:
        with pytest.raises(NotConfigured, match=words):
            make_backend(config, client)


def test_describe_model() -> None:
    config = ModelConfig(provider="openai-chat", base_url="https://api.cerebras.ai/v1", model="gpt-oss-120b")
    assert describe_model(config) == "openai-chat gpt-oss-120b @ api.cerebras.ai"
    fim = ModelConfig(provider="fim", base_url="http://127.0.0.1:8080/v1", fim_template="starcoder2")
    assert describe_model(fim) == "fim (default model) [starcoder2] @ 127.0.0.1:8080"
