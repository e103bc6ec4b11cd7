"""Fault injection and the `/_sim/` control API, seen from a client over loopback HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fixtures_sim import SimFactory, sse_data

from tandem.sim.runner import SimHandle
from tandem.sim.settings import SimConfigError, parse_fault

STREAM: dict[str, Any] = {
    "prompt": "x = 1\n",
    "max_tokens": 40,
    "stream": True,
    "stream_options": {"include_usage": True},
}


def arm(sim: SimHandle, kind: str, count: int | None = None) -> httpx.Response:
    body: dict[str, Any] = {"kind": kind} if count is None else {"kind": kind, "count": count}
    return httpx.post(f"{sim.root_url}/_sim/faults", json=body)


def completions(sim: SimHandle, **body: Any) -> httpx.Response:
    return httpx.post(f"{sim.base_url}/completions", json={"prompt": "x = 1\n", "max_tokens": 5, **body})


def stream_data(sim: SimHandle) -> list[str]:
    with httpx.Client() as client, client.stream("POST", f"{sim.base_url}/completions", json=STREAM) as response:
        assert response.status_code == 200
        return sse_data(response.iter_lines())


def text_of(data: list[str]) -> str:
    return "".join(json.loads(d)["choices"][0]["text"] for d in data if d.startswith("{") and '"text"' in d)


def test_429_carries_retry_after_and_fires_only_as_often_as_armed(spark_sim: SimHandle) -> None:
    assert arm(spark_sim, "429", 2).json() == {"armed": [{"kind": "429", "count": 2}]}
    for _ in range(2):
        response = completions(spark_sim)
        assert response.status_code == 429
        assert response.headers["retry-after"] == "1"
        assert response.headers["x-tandem-simulated"] == "true"
        assert response.json()["error"]["code"] == "rate_limit_exceeded"
    assert completions(spark_sim).status_code == 200
    stats = spark_sim.stats()
    assert stats["faults_fired"] == {"429": 2}
    assert stats["requests"] == {"completions": 3}


def test_retry_after_is_configurable(sim_factory: SimFactory) -> None:
    sim = sim_factory(faults=(parse_fault("429:1"),), retry_after_s=2.5, profile="instant")
    assert completions(sim).headers["retry-after"] == "2.5"


def test_a_fault_without_count_fires_on_every_request(sim_factory: SimFactory) -> None:
    sim = sim_factory(faults=(parse_fault("500"),), profile="instant")
    for _ in range(3):
        response = completions(sim)
        assert response.status_code == 500
        assert response.json()["error"]["type"] == "server_error"
    # Not on the simulator's own endpoints.
    assert httpx.get(f"{sim.base_url}/models").status_code == 200
    assert sim.stats()["faults_fired"] == {"500": 3}


def test_faults_fire_in_the_order_they_were_armed(spark_sim: SimHandle) -> None:
    arm(spark_sim, "500", 1)
    arm(spark_sim, "429", 1)
    assert [completions(spark_sim).status_code for _ in range(3)] == [500, 429, 200]


def test_reset_drops_the_connection_without_a_response(spark_sim: SimHandle) -> None:
    arm(spark_sim, "reset", 1)
    with pytest.raises(httpx.TransportError):
        completions(spark_sim)
    assert completions(spark_sim).status_code == 200
    assert spark_sim.stats()["faults_fired"] == {"reset": 1}


def test_truncate_stops_mid_stream_without_done_or_usage(spark_sim: SimHandle) -> None:
    whole = stream_data(spark_sim)
    arm(spark_sim, "truncate", 1)
    cut = stream_data(spark_sim)
    assert whole[-1] == "[DONE]" and "[DONE]" not in cut
    assert not any('"usage":{' in d for d in cut)
    assert 0 < len(text_of(cut)) < len(text_of(whole))
    assert text_of(whole).startswith(text_of(cut))


def test_malformed_sends_one_chunk_that_is_not_json_mid_stream(spark_sim: SimHandle) -> None:
    arm(spark_sim, "malformed", 1)
    data = stream_data(spark_sim)
    broken = []
    for d in data[:-1]:
        try:
            json.loads(d)
        except json.JSONDecodeError:
            broken.append(d)
    assert len(broken) == 1
    at = data.index(broken[0])
    assert 0 < at < len(data) - 3  # text before and after it
    assert data[-1] == "[DONE]"


def test_stall_sends_the_first_chunk_then_nothing(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant", faults=(parse_fault("stall:1"),))
    timeout = httpx.Timeout(5.0, read=0.5)
    with (
        httpx.Client(timeout=timeout) as client,
        client.stream("POST", f"{sim.base_url}/completions", json=STREAM) as r,
    ):
        lines = r.iter_lines()
        first = next(line for line in lines if line.startswith("data:"))
        assert json.loads(first[len("data:") :])["choices"][0]["text"]
        with pytest.raises(httpx.ReadTimeout):
            for line in lines:
                assert not line.startswith("data:")
    assert completions(sim).status_code == 200


@pytest.mark.parametrize("kind", ["truncate", "malformed"])
def test_whole_responses_can_be_broken_too(spark_sim: SimHandle, kind: str) -> None:
    arm(spark_sim, kind, 1)
    response = completions(spark_sim)
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


def test_stats_clear_and_reset(spark_sim: SimHandle) -> None:
    arm(spark_sim, "500")
    arm(spark_sim, "stall", 3)
    stats = httpx.get(f"{spark_sim.root_url}/_sim/stats").json()
    assert stats["faults_armed"] == [{"kind": "500", "count": None}, {"kind": "stall", "count": 3}]
    assert stats["profile"] == "spark" and stats["truth"] is None
    assert httpx.delete(f"{spark_sim.root_url}/_sim/faults").json() == {"armed": []}
    assert completions(spark_sim, suffix="\nend").status_code == 200
    stats = httpx.get(f"{spark_sim.root_url}/_sim/stats").json()
    assert stats["requests_total"] == 1
    assert stats["completion_tokens_sent"] == 5
    assert stats["last_request"]["suffix_chars"] == 4
    assert stats["last_request"]["fault"] is None
    assert httpx.post(f"{spark_sim.root_url}/_sim/reset").status_code == 200
    stats = httpx.get(f"{spark_sim.root_url}/_sim/stats").json()
    assert (stats["requests_total"], stats["completion_tokens_sent"], stats["last_request"]) == (0, 0, None)


@pytest.mark.parametrize(
    "body", [{"kind": "teapot"}, {"kind": "429", "count": 0}, {"count": 1}, {"kind": "500", "count": "2"}]
)
def test_arming_nonsense_is_refused(spark_sim: SimHandle, body: dict[str, Any]) -> None:
    response = httpx.post(f"{spark_sim.root_url}/_sim/faults", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["message"]
    assert spark_sim.state.faults.armed() == []


@pytest.mark.parametrize(
    ("text", "message"), [("boom", "unknown fault"), ("429:x", "whole number"), ("500:0", "at least 1")]
)
def test_fault_specs_are_checked(text: str, message: str) -> None:
    with pytest.raises(SimConfigError, match=message):
        parse_fault(text)
