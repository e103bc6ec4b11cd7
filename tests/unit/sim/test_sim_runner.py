"""Starting and stopping the simulator: the command line, the background thread, and token pacing."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from fixtures_sim import SimFactory

from tandem.sim.pacing import MAX_BATCH_TOKENS, Pace, Pacer
from tandem.sim.runner import SimSettings, add_arguments, settings_from_args, start_in_thread
from tandem.sim.settings import FaultKind, FaultSpec, SimConfigError

ROOT = Path(__file__).resolve().parents[3]
LISTENING = re.compile(r"^tandem sim \(simulated provider, profile (\w+)\) listening on (http://127\.0\.0\.1:\d+/v1)$")


def run_cli(*args: str) -> subprocess.Popen[str]:
    # The command line itself is under test (the line it prints, its exit status on a signal, its errors):
    # a process of its own, not the fixtures' thread; `start_in_thread` is tested below the same way.
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "tandem.sim", *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_cli_prints_its_url_serves_and_exits_0_when_stopped(tmp_path: Path, stop_signal: signal.Signals) -> None:
    (tmp_path / "truth.py").write_text("def one():\n    return 1\n")
    process = run_cli("--port", "0", "--profile", "codex", "--ttft-ms", "0", "--truth", str(tmp_path))
    try:
        assert process.stdout is not None
        match = LISTENING.match(process.stdout.readline().rstrip("\n"))
        assert match is not None
        assert match.group(1) == "codex"
        base_url = match.group(2)
        body = {"prompt": "def one():\n", "max_tokens": 20}
        choice = httpx.post(f"{base_url}/completions", json=body).json()["choices"][0]
        assert choice["text"] == "    return 1\n"
        assert httpx.get(f"{base_url}/models").json()["data"][0]["id"] == "sim-codex"
        process.send_signal(stop_signal)
        stdout, _ = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0
    assert stdout == ""  # exactly one line was printed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fault", "teapot"], "unknown fault 'teapot'"),
        (["--truth", "/nonexistent/tandem-truth"], "truth path /nonexistent/tandem-truth does not exist"),
        (["--jitter", "1.5"], "jitter must be a fraction"),
        (["--tokens-per-s", "0"], "tokens per second must be > 0"),
    ],
)
def test_cli_refuses_bad_settings_in_one_line(args: list[str], message: str) -> None:
    process = run_cli(*args)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert stdout == ""
    assert stderr.splitlines() == [f"tandem sim: error: {stderr.split('error: ', 1)[1].strip()}"]
    assert message in stderr


def test_cli_reports_a_port_in_use(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant")
    port = sim.base_url.rsplit(":", 1)[1].removesuffix("/v1")
    process = run_cli("--port", port)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert len(stderr.splitlines()) == 1 and "tandem sim: error:" in stderr


def test_arguments_become_settings() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    ns = parser.parse_args(
        "--port 8123 --profile codex --truth a b --truth c --fault 429:2 --fault stall"
        " --tokens-per-s inf --ttft-ms 50 --jitter 0.1 --error-rate 0.2".split()
    )
    settings = settings_from_args(ns)
    assert settings == SimSettings(
        port=8123,
        profile="codex",
        truth=("a", "b", "c"),
        faults=(FaultSpec(kind=FaultKind.RATE_LIMITED, count=2), FaultSpec(kind=FaultKind.STALL)),
        tokens_per_s=math.inf,
        ttft_ms=50.0,
        jitter=0.1,
        error_rate=0.2,
    )
    profile = settings.resolved_profile()
    assert (profile.name, profile.tokens_per_s, profile.ttft_ms, profile.model_id) == (
        "codex",
        math.inf,
        50.0,
        "sim-codex",
    )
    defaults = settings_from_args(parser.parse_args([])).resolved_profile()
    assert (defaults.name, defaults.tokens_per_s, defaults.ttft_ms) == ("spark", 1000.0, 100.0)


@pytest.mark.parametrize(
    "fields",
    [
        {"profile": "warp"},
        {"port": 70000},
        {"tokens_per_s": math.nan},
        {"ttft_ms": -1.0},
        {"error_rate": 1.5},
        {"retry_after_s": -1.0},
        {"chunk_tokens": 0},
    ],
)
def test_settings_refuse_nonsense(fields: dict[str, object]) -> None:
    with pytest.raises(SimConfigError):
        SimSettings(**fields)  # type: ignore[arg-type]


def test_start_in_thread_serves_until_stopped() -> None:
    with start_in_thread(SimSettings(profile="instant")) as sim:
        assert sim.base_url.startswith("http://127.0.0.1:") and sim.base_url.endswith("/v1")
        assert httpx.get(f"{sim.base_url}/models").status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{sim.base_url}/models")


def test_start_in_thread_refuses_an_unreadable_truth_path(tmp_path: Path) -> None:
    with pytest.raises(SimConfigError, match="does not exist"):
        start_in_thread(SimSettings(truth=(str(tmp_path / "missing"),)))


def test_stop_ends_a_stalled_stream(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant", faults=(FaultSpec(kind=FaultKind.STALL),))
    first_chunk = threading.Event()
    outcome: list[str] = []

    def read() -> None:
        body = {"prompt": "x", "max_tokens": 50, "stream": True}
        with httpx.Client(timeout=30.0) as client, client.stream("POST", f"{sim.base_url}/completions", json=body) as r:
            lines = r.iter_lines()
            for line in lines:
                if line.startswith("data:"):
                    first_chunk.set()
                    break
            try:
                outcome.extend(line for line in lines if line)
                outcome.append("ended")
            except httpx.TransportError:
                outcome.append("cut")

    reader = threading.Thread(target=read)
    reader.start()
    assert first_chunk.wait(30)
    sim.stop()
    reader.join(30)
    assert not reader.is_alive()
    assert outcome[-1] in ("ended", "cut")
    assert "data: [DONE]" not in outcome


def test_two_simulators_run_side_by_side(sim_factory: SimFactory) -> None:
    fast = sim_factory(profile="spark", ttft_ms=0.0, tokens_per_s=math.inf)
    slow = sim_factory(profile="codex", ttft_ms=0.0, tokens_per_s=math.inf)
    assert fast.base_url != slow.base_url
    body = {"prompt": "x", "max_tokens": 2}
    assert httpx.post(f"{fast.base_url}/completions", json=body).json()["model"] == "sim-spark"
    assert httpx.post(f"{slow.base_url}/completions", json=body).json()["model"] == "sim-codex"


async def collect(pacer: Pacer, total: int) -> list[int]:
    await pacer.wait_first()
    return [batch async for batch in pacer.batches(total)]


async def test_a_fast_pace_hands_over_several_tokens_per_wake_up() -> None:
    pacer = Pacer(Pace(tokens_per_s=1_000_000.0, ttft_ms=0.0), rng=random.Random(0))
    batches = await collect(pacer, 2000)
    assert sum(batches) == 2000
    assert all(b > 0 for b in batches)
    assert len(batches) < 2000


async def test_an_instant_pace_sends_everything_in_capped_batches() -> None:
    pacer = Pacer(Pace(tokens_per_s=math.inf, ttft_ms=0.0), rng=random.Random(0))
    batches = await collect(pacer, 1000)
    assert sum(batches) == 1000
    assert max(batches) == MAX_BATCH_TOKENS


async def test_a_slow_pace_sends_tokens_one_by_one() -> None:
    # 25-75 ms between tokens: only a loop held up for that long could see two tokens due at once.
    pacer = Pacer(Pace(tokens_per_s=20.0, ttft_ms=0.0, jitter=0.5), rng=random.Random(0))
    batches = await collect(pacer, 5)
    assert sum(batches) == 5
    assert len(batches) >= 4


async def test_a_stopping_server_ends_the_pace_early() -> None:
    stop = asyncio.Event()
    pacer = Pacer(Pace(tokens_per_s=1.0, ttft_ms=0.0), rng=random.Random(0), stop=stop)
    batches = pacer.batches(100)
    assert await anext(batches) == 1
    stop.set()
    assert [b async for b in batches] == []


def test_stream_events_arrive_in_order_with_one_token_each(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="spark", ttft_ms=1.0, tokens_per_s=5000.0)
    body = {"prompt": "x = 1\n", "max_tokens": 200, "stream": True, "stream_options": {"include_usage": True}}
    with httpx.Client() as client, client.stream("POST", f"{sim.base_url}/completions", json=body) as r:
        data = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    chunks = [json.loads(d) for d in data[:-1]]
    texts = [c["choices"][0]["text"] for c in chunks[:-2]]
    assert len(texts) == 200  # the filler is ASCII: one event per token
    assert chunks[-1]["usage"]["completion_tokens"] == 200
