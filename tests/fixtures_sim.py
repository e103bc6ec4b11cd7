"""Fixtures that start `tandem sim` on loopback, in a background thread of the test process.

    sim_factory   start simulators with given settings; all are stopped at teardown
    spark_sim     one simulator with the spark profile, made quick for tests (5 ms TTFT, 20,000 tokens/s)

`sse_data` reads the `data:` payloads of a streamed response, for tests that look at the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from tandem.sim.runner import SimHandle, SimSettings, start_in_thread

SimFactory = Callable[..., SimHandle]


@pytest.fixture
def sim_factory() -> Iterator[SimFactory]:
    """`sim_factory(settings)` or `sim_factory(**SimSettings fields)` starts a simulator."""
    handles: list[SimHandle] = []

    def start(settings: SimSettings | None = None, **fields: Any) -> SimHandle:
        handle = start_in_thread(settings if settings is not None else SimSettings(**fields))
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        handle.stop()


@pytest.fixture
def spark_sim(sim_factory: SimFactory) -> SimHandle:
    """A spark-profile simulator without truth files, fast enough that tests never wait on it."""
    return sim_factory(profile="spark", ttft_ms=5.0, tokens_per_s=20_000.0)


def sse_data(lines: Iterable[str]) -> list[str]:
    """The `data:` payloads of an SSE stream, in order (`[DONE]` included, as sent)."""
    return [line[len("data:") :].strip() for line in lines if line.startswith("data:")]
