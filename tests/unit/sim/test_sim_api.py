"""`tandem sim` speaks the OpenAI Chat Completions and Completions APIs over real loopback HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fixtures_sim import SimFactory, sse_data

from tandem.completion.inline.prompts import chat_messages
from tandem.sim.answers import LABEL
from tandem.sim.runner import SimHandle
from tandem.sim.tokens import count_tokens

PREFIX = "def area(width, height):\n    "
SUFFIX = "\n\n\nprint(area(2, 3))\n"


def stream_lines(sim: SimHandle, path: str, body: dict[str, Any]) -> tuple[httpx.Response, list[str]]:
    with httpx.Client(base_url=sim.base_url) as client, client.stream("POST", path, json=body) as response:
        return response, list(response.iter_lines())


def chat_body(**extra: Any) -> dict[str, Any]:
    return {"model": "anything", "messages": chat_messages(PREFIX, SUFFIX, path="area.py"), **extra}


def test_chat_stream_is_shaped_like_openai_and_ends_with_usage_then_done(spark_sim: SimHandle) -> None:
    body = chat_body(max_tokens=40, stream=True, stream_options={"include_usage": True})
    response, lines = stream_lines(spark_sim, "/chat/completions", body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-tandem-simulated"] == "true"
    data = sse_data(lines)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["model"] == "sim-spark"
        assert chunk["system_fingerprint"] == "tandem-sim"
        assert chunk["id"] == chunks[0]["id"] and chunk["id"].startswith("chatcmpl-")
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    deltas = chunks[1:-2]
    assert len(deltas) > 10  # one token per event by default
    assert all(c["usage"] is None and c["choices"][0]["finish_reason"] is None for c in deltas)
    text = "".join(c["choices"][0]["delta"]["content"] for c in deltas)
    assert text.startswith(f"# {LABEL}")
    finish, usage_chunk = chunks[-2], chunks[-1]
    assert finish["choices"][0]["finish_reason"] == "length"
    assert finish["choices"][0]["delta"] == {}
    assert usage_chunk["choices"] == []
    usage = usage_chunk["usage"]
    assert usage["completion_tokens"] == 40
    assert usage["total_tokens"] == usage["prompt_tokens"] + 40
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0}
    assert usage["prompt_tokens"] >= count_tokens(PREFIX + SUFFIX)


def test_chat_whole_response_carries_the_same_text_and_usage(spark_sim: SimHandle) -> None:
    _, lines = stream_lines(spark_sim, "/chat/completions", chat_body(max_tokens=25, stream=True))
    streamed = "".join(
        json.loads(d)["choices"][0]["delta"].get("content", "") for d in sse_data(lines) if d != "[DONE]"
    )
    response = httpx.post(f"{spark_sim.base_url}/chat/completions", json=chat_body(max_tokens=25))
    assert response.status_code == 200
    assert response.headers["x-tandem-simulated"] == "true"
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "sim-spark"
    assert body["system_fingerprint"] == "tandem-sim"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == streamed
    assert choice["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 25


def test_stream_without_include_usage_has_no_usage_chunk(spark_sim: SimHandle) -> None:
    _, lines = stream_lines(spark_sim, "/chat/completions", chat_body(max_tokens=5, stream=True))
    chunks = [json.loads(d) for d in sse_data(lines)[:-1]]
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_completions_stream_with_prompt_and_suffix_fields(spark_sim: SimHandle) -> None:
    body = {"prompt": PREFIX, "suffix": SUFFIX, "max_tokens": 30, "stream": True}
    body["stream_options"] = {"include_usage": True}
    response, lines = stream_lines(spark_sim, "/completions", body)
    assert response.headers["x-tandem-simulated"] == "true"
    data = sse_data(lines)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "text_completion" and c["model"] == "sim-spark" for c in chunks)
    assert chunks[0]["id"].startswith("cmpl-")
    text = "".join(c["choices"][0]["text"] for c in chunks[:-1])
    assert text.startswith(f"# {LABEL}")
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 30
    last = spark_sim.stats()["last_request"]
    assert (last["prefix_chars"], last["suffix_chars"]) == (len(PREFIX), len(SUFFIX))


def test_completions_whole_response_defaults_to_16_tokens(spark_sim: SimHandle) -> None:
    response = httpx.post(f"{spark_sim.base_url}/completions", json={"prompt": PREFIX})
    body = response.json()
    assert body["object"] == "text_completion"
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 16
    assert body["usage"]["prompt_tokens"] == count_tokens(PREFIX)
    assert body["choices"][0]["text"].startswith("# tandem sim")


def test_filler_follows_the_files_comment_syntax_and_indentation(spark_sim: SimHandle) -> None:
    prefix = "int main() {\n    int x = 1;\n    "
    response = httpx.post(f"{spark_sim.base_url}/completions", json={"prompt": prefix, "max_tokens": 60})
    lines = response.json()["choices"][0]["text"].split("\n")
    assert lines[0] == f"// {LABEL}"
    assert lines[1].startswith("    // simulated line 1")


def test_a_large_answer_without_truth(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant", chunk_tokens=4)
    body = {"prompt": "x = 1\n", "max_tokens": 4000, "stream": True, "stream_options": {"include_usage": True}}
    _, lines = stream_lines(sim, "/completions", body)
    chunks = [json.loads(d) for d in sse_data(lines)[:-1]]
    assert chunks[-1]["usage"]["completion_tokens"] == 4000
    assert len(chunks) - 2 <= 1000  # four tokens per event
    assert sim.stats()["completion_tokens_sent"] == 4000


def test_stop_string_ends_the_filler_with_finish_stop(spark_sim: SimHandle) -> None:
    body = {"prompt": "x = 1\n", "max_tokens": 500, "stop": ["\n\n"]}
    choice = httpx.post(f"{spark_sim.base_url}/completions", json=body).json()["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert "\n\n" not in choice["text"]
    assert choice["text"].count("\n") == 4


def test_models_lists_the_simulated_model(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="codex", ttft_ms=0.0)
    response = httpx.get(f"{sim.base_url}/models")
    assert response.headers["x-tandem-simulated"] == "true"
    assert response.json() == {
        "object": "list",
        "data": [{"id": "sim-codex", "object": "model", "created": 0, "owned_by": "tandem-sim"}],
    }
    assert sim.stats()["requests"] == {"models": 1}


@pytest.mark.parametrize(
    ("path", "content", "param"),
    [
        ("/chat/completions", b"{not json", None),
        ("/chat/completions", b"[1, 2]", None),
        ("/chat/completions", b'{"messages": []}', "messages"),
        ("/chat/completions", b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}', "max_tokens"),
        ("/chat/completions", b'{"messages": [{"role": "user", "content": "hi"}], "stop": 3}', "stop"),
        ("/completions", b'{"prompt": 7}', "prompt"),
        ("/completions", b'{"prompt": "x", "suffix": 1}', "suffix"),
        ("/completions", b'{"prompt": "x", "stream": "yes"}', "stream"),
    ],
)
def test_bad_requests_get_an_openai_error_body(spark_sim: SimHandle, path: str, content: bytes, param: str) -> None:
    response = httpx.post(f"{spark_sim.base_url}{path}", content=content)
    assert response.status_code == 400
    assert response.headers["x-tandem-simulated"] == "true"
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert error["message"]


def test_content_parts_are_read_as_text(spark_sim: SimHandle) -> None:
    messages = chat_messages(PREFIX, SUFFIX)
    parts = [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in messages]
    response = httpx.post(f"{spark_sim.base_url}/chat/completions", json={"messages": parts, "max_tokens": 3})
    assert response.status_code == 200
    last = spark_sim.stats()["last_request"]
    assert (last["prefix_chars"], last["suffix_chars"]) == (len(PREFIX), len(SUFFIX))


def test_authorization_is_noted_but_never_kept(spark_sim: SimHandle) -> None:
    secret = "sk-do-not-keep-0123456789"
    url = f"{spark_sim.base_url}/completions"
    httpx.post(url, json={"prompt": "x", "max_tokens": 1}, headers={"authorization": f"Bearer {secret}"})
    stats = httpx.get(f"{spark_sim.root_url}/_sim/stats")
    assert stats.json()["last_request"]["had_authorization"] is True
    assert secret not in stats.text
    httpx.post(url, json={"prompt": "x", "max_tokens": 1})
    assert spark_sim.stats()["last_request"]["had_authorization"] is False
