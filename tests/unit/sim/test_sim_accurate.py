"""`tandem sim` speaks Anthropic's Messages API and OpenAI's Responses API over real loopback HTTP:
event names and order, usage, whole (non-streamed) bodies, each API's error shape, and requests the
real APIs refuse."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import httpx
import pytest
from fixtures_sim import SimFactory

from tandem.completion.inline.prompts import chat_messages
from tandem.sim.answers import LABEL
from tandem.sim.runner import SimHandle
from tandem.sim.tokens import count_tokens

PREFIX = "def area(width, height):\n    "
SUFFIX = "\n\n\nprint(area(2, 3))\n"
MESSAGES = chat_messages(PREFIX, SUFFIX, path="area.py")
VERSION = {"anthropic-version": "2023-06-01"}


def events(
    sim: SimHandle, path: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[httpx.Response, list[tuple[str, Any]]]:
    """(response, [(event name, parsed data)]) of a streamed request."""
    with httpx.Client(base_url=sim.base_url) as client, client.stream("POST", path, json=body, headers=headers) as r:
        lines = list(r.iter_lines())
    out: list[tuple[str, Any]] = []
    name = ""
    for line in lines:
        if line.startswith("event:"):
            name = line[len("event:") :].strip()
        elif line.startswith("data:"):
            out.append((name, json.loads(line[len("data:") :])))
    return r, out


def messages_body(**extra: Any) -> dict[str, Any]:
    return {"model": "claude-x", "max_tokens": 40, "system": MESSAGES[0]["content"], "messages": MESSAGES[1:], **extra}


def responses_body(**extra: Any) -> dict[str, Any]:
    return {"model": "gpt-x", "instructions": MESSAGES[0]["content"], "input": MESSAGES[1:], **extra}


def test_messages_stream_has_anthropics_events_in_order(spark_sim: SimHandle) -> None:
    response, stream = events(spark_sim, "/messages", messages_body(stream=True), VERSION)
    assert response.status_code == 200 and response.headers["x-tandem-simulated"] == "true"
    assert response.headers["content-type"].startswith("text/event-stream")
    names = [name for name, _ in stream]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"} and len(names) - 6 == 40
    assert all(data["type"] == name for name, data in stream)
    start = stream[0][1]["message"]
    assert start["model"] == "sim-spark" and start["role"] == "assistant" and start["id"].startswith("msg-")
    assert start["usage"]["input_tokens"] >= count_tokens(PREFIX + SUFFIX)
    assert start["usage"]["cache_read_input_tokens"] == 0
    text = "".join(data["delta"]["text"] for name, data in stream if name == "content_block_delta")
    assert text.startswith(f"# {LABEL}")
    delta = stream[-2][1]
    assert delta["delta"]["stop_reason"] == "max_tokens" and delta["usage"]["output_tokens"] == 40
    assert spark_sim.stats()["requests"] == {"messages": 1}


def test_messages_whole_body_carries_the_same_text(spark_sim: SimHandle) -> None:
    _, stream = events(spark_sim, "/messages", messages_body(stream=True), VERSION)
    streamed = "".join(data["delta"]["text"] for name, data in stream if name == "content_block_delta")
    body = httpx.post(f"{spark_sim.base_url}/messages", json=messages_body(), headers=VERSION).json()
    assert body["type"] == "message" and body["content"] == [{"type": "text", "text": streamed}]
    assert body["stop_reason"] == "max_tokens" and body["usage"]["output_tokens"] == 40


@pytest.mark.parametrize(
    ("body", "headers", "words"),
    [
        (messages_body(), {}, "anthropic-version"),
        ({k: v for k, v in messages_body().items() if k != "max_tokens"}, VERSION, "max_tokens"),
        ({k: v for k, v in messages_body().items() if k != "model"}, VERSION, "model"),
        (messages_body(stop_sequences=["\n"]), VERSION, "non-whitespace"),
        (messages_body(messages=[{"role": "system", "content": "x"}]), VERSION, "role"),
    ],
)
def test_messages_refuses_what_anthropic_refuses_in_its_error_shape(
    spark_sim: SimHandle, body: dict[str, Any], headers: dict[str, str], words: str
) -> None:
    response = httpx.post(f"{spark_sim.base_url}/messages", json=body, headers=headers)
    assert response.status_code == 400
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert words in error["error"]["message"]


@pytest.mark.parametrize(("fault", "status", "kind"), [("429", 429, "rate_limit_error"), ("500", 500, "api_error")])
def test_messages_faults_answer_in_anthropics_error_shape(
    spark_sim: SimHandle, fault: str, status: int, kind: str
) -> None:
    spark_sim.arm_fault(fault, 1)
    response = httpx.post(f"{spark_sim.base_url}/messages", json=messages_body(), headers=VERSION)
    assert response.status_code == status and response.json()["error"]["type"] == kind
    if status == 429:
        assert response.headers["retry-after"] == "1"


def test_responses_stream_has_openais_events_numbered_in_order(spark_sim: SimHandle) -> None:
    response, stream = events(spark_sim, "/responses", responses_body(stream=True, max_output_tokens=40), {})
    assert response.status_code == 200 and response.headers["x-tandem-simulated"] == "true"
    names = [name for name, _ in stream]
    assert names[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert names[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.incomplete",  # max_output_tokens cut it
    ]
    assert [data["sequence_number"] for _, data in stream] == list(range(len(stream)))
    assert all(data["type"] == name for name, data in stream)
    deltas = [data["delta"] for name, data in stream if name == "response.output_text.delta"]
    assert len(deltas) == 40 and "".join(deltas).startswith(f"# {LABEL}")
    assert stream[-4][1]["text"] == "".join(deltas)
    final = stream[-1][1]["response"]
    assert final["status"] == "incomplete" and final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["model"] == "sim-spark" and final["output"][0]["content"][0]["text"] == "".join(deltas)
    usage = final["usage"]
    assert usage["output_tokens"] == 40 and usage["input_tokens_details"] == {"cached_tokens": 0}
    assert usage["total_tokens"] == usage["input_tokens"] + 40


def test_responses_ends_completed_when_the_answer_ends_by_itself(
    sim_factory: SimFactory, tmp_path: pathlib.Path
) -> None:
    truth = tmp_path / "area.py"
    truth.write_text(PREFIX + "return width * height" + SUFFIX)
    sim = sim_factory(truth=(str(truth),), profile="instant")
    _, stream = events(sim, "/responses", responses_body(stream=True), {})
    assert stream[-1][0] == "response.completed"
    assert "".join(d["delta"] for n, d in stream if n == "response.output_text.delta") == "return width * height"
    body = httpx.post(f"{sim.base_url}/responses", json=responses_body(input="plain text")).json()
    assert body["object"] == "response" and body["status"] == "completed"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (responses_body(stop=["\n"]), "stop"),
        (responses_body(max_output_tokens=8), "max_output_tokens"),
        ({k: v for k, v in responses_body().items() if k != "model"}, "model"),
        (responses_body(input=[]), "input"),
    ],
)
def test_responses_refuses_what_openai_refuses(spark_sim: SimHandle, body: dict[str, Any], param: str) -> None:
    response = httpx.post(f"{spark_sim.base_url}/responses", json=body)
    assert response.status_code == 400 and response.json()["error"]["param"] == param
