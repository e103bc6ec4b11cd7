"""Running the simulator: `tandem sim` in the foreground, or a background thread for tests and benchmarks.

    serve_forever(settings)      blocks; prints one line with the URL once listening; Ctrl-C or SIGTERM stop it
    start_in_thread(settings)    returns a SimHandle (base_url, root_url, stop(), arm_fault(), stats(),
                                 set_edit_truth(), edit_draws(), requests)
    add_arguments / settings_from_args / main    the command line

The listening socket is bound before uvicorn starts, so the port (0 = any free port) is known at once
and connections made early wait in the backlog instead of being refused.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any

import uvicorn

from tandem.sim.app import build_app
from tandem.sim.edits import EditTruth
from tandem.sim.settings import FAULT_KINDS, PROFILES, SimConfigError, SimSettings, parse_fault
from tandem.sim.state import SimState
from tandem.sim.truth import TruthIndex

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import TracebackType

__all__ = [
    "SimConfigError",
    "SimHandle",
    "SimSettings",
    "add_arguments",
    "main",
    "serve_forever",
    "settings_from_args",
    "start_in_thread",
]

_START_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 10.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `tandem sim` options."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default 0: any free port)")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="spark", help="speed profile")
    parser.add_argument(
        "--truth", nargs="+", action="extend", metavar="PATH", help="files or directories of true source code"
    )
    parser.add_argument(
        "--fault",
        action="append",
        metavar="KIND[:N]",
        help=f"fail the next N requests (no N: all) with KIND, one of {', '.join(FAULT_KINDS)}; repeatable",
    )
    parser.add_argument("--tokens-per-s", type=float, help="override the profile's rate ('inf' for no pacing)")
    parser.add_argument("--ttft-ms", type=float, help="override the profile's time to first token")
    parser.add_argument("--jitter", type=float, default=0.0, help="relative timing spread, e.g. 0.2")
    parser.add_argument("--error-rate", type=float, default=0.0, help="chance that a truth answer is wrong")
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds of the 429 fault")
    parser.add_argument("--seed", type=int, default=0, help="seed for jitter and mistakes")
    parser.add_argument("--chunk-tokens", type=int, default=1, help="tokens per streamed event (default 1)")


def settings_from_args(ns: argparse.Namespace) -> SimSettings:
    """SimSettings from parsed `add_arguments` options; SimConfigError says what is wrong."""
    faults = tuple(parse_fault(text) for text in (ns.fault or ()))
    return SimSettings(
        host=ns.host,
        port=ns.port,
        profile=ns.profile,
        tokens_per_s=ns.tokens_per_s,
        ttft_ms=ns.ttft_ms,
        jitter=ns.jitter,
        truth=tuple(ns.truth or ()),
        error_rate=ns.error_rate,
        faults=faults,
        retry_after_s=ns.retry_after,
        seed=ns.seed,
        chunk_tokens=ns.chunk_tokens,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`tandem sim` as a whole: parse, start, serve until interrupted. Returns the exit status."""
    parser = argparse.ArgumentParser(prog="tandem sim", description="A simulated model provider on loopback.")
    add_arguments(parser)
    ns = parser.parse_args(argv)
    try:
        serve_forever(settings_from_args(ns))
    except (SimConfigError, OSError) as error:
        print(f"tandem sim: error: {error}", file=sys.stderr, flush=True)
        return 2
    return 0


def serve_forever(settings: SimSettings) -> None:
    """Serve until Ctrl-C or SIGTERM (then return normally). Prints exactly one line to stdout once listening:
    `tandem sim (simulated provider, profile NAME) listening on http://HOST:PORT/v1`.

    Raises SimConfigError for an unreadable truth path, OSError if the address cannot be bound.
    """
    server, sock, base_url = _prepare(settings)

    def announce() -> None:
        print(f"tandem sim (simulated provider, profile {settings.profile}) listening on {base_url}", flush=True)

    server.on_ready = announce
    # uvicorn shuts down gracefully on SIGINT or SIGTERM, then raises the signal again for the caller.
    # Both mean "stop" here: turn SIGTERM into the same KeyboardInterrupt, so either ends with status 0.
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if in_main_thread else None
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class SimHandle:
    """A simulator running in a background thread. Stop it with `stop()` or a `with` block."""

    def __init__(self, *, base_url: str, state: SimState, server: _Server, thread: threading.Thread) -> None:
        self.base_url = base_url
        # Where the /_sim/ control API lives: the server's root, without /v1.
        self.root_url = base_url.removesuffix("/v1")
        self.state = state
        # What the simulator was sent (`GET /_sim/requests`); tests may wait on it.
        self.requests = state.requests
        self._server = server
        self._thread = thread

    @property
    def settings(self) -> SimSettings:
        return self.state.settings

    def arm_fault(self, kind: str, count: int | None = None) -> None:
        """Arm a fault, as `POST /_sim/faults` does."""
        self.state.faults.arm(parse_fault(kind if count is None else f"{kind}:{count}"))

    def clear_faults(self) -> None:
        self.state.faults.clear()

    def stats(self) -> dict[str, Any]:
        """The request counters, as `GET /_sim/stats` reports them (without the armed faults)."""
        return self.state.stats.snapshot()

    def set_edit_truth(self, files: Mapping[str, str], *, errors: str = "calibrated", error_scale: float = 1.0) -> None:
        """Replace the edit truth, as `POST /_sim/edit-truth` does: `files` maps each path, as edit prompts
        show it, to its full text after the edit. `errors`: "calibrated", "off", or a mistake kind that
        every answer then makes (`tandem.sim.edits.ERROR_MODES`). Raises ValueError for bad values."""
        self.state.set_edit_truth(EditTruth(files=dict(files), errors=errors, error_scale=error_scale))

    def set_next_edit_truth(self, files: Mapping[str, str]) -> None:
        """Files as they read after the user's real next changes (next-edit prompts are answered from them)."""
        self.state.next_edit_truth.set(files)

    def edit_draws(self) -> list[dict[str, Any]]:
        """What was drawn for each edit request since the last reset, as `GET /_sim/edits` reports it."""
        return self.state.edit_draws()

    def stop(self) -> None:
        """Stop serving: open streams end at once; returns when the server thread is done."""
        self._server.should_exit = True
        self._server.wake()
        self._thread.join(_STOP_TIMEOUT_S)

    def __enter__(self) -> SimHandle:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_in_thread(settings: SimSettings) -> SimHandle:
    """Start a simulator on its own thread and event loop; returns once it is accepting requests.

    Raises SimConfigError for an unreadable truth path, OSError if the address cannot be bound,
    RuntimeError if the server fails to start.
    """
    server, sock, base_url = _prepare(settings)
    ready = threading.Event()
    server.on_ready = ready.set
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as error:  # reported to the starting thread below
            failure.append(error)
        finally:
            sock.close()
            ready.set()  # never leave the starting thread waiting

    thread = threading.Thread(target=run, name=f"tandem-sim-{sock.getsockname()[1]}", daemon=True)
    thread.start()
    if not ready.wait(_START_TIMEOUT_S) or not server.started:
        server.should_exit = True
        thread.join(_STOP_TIMEOUT_S)
        cause = failure[0] if failure else None
        raise RuntimeError(f"tandem sim did not start on {base_url}") from cause
    return SimHandle(base_url=base_url, state=server.state, server=server, thread=thread)


class _Server(uvicorn.Server):
    """uvicorn's server, telling us when it listens and ending open streams when it stops."""

    def __init__(self, config: uvicorn.Config, state: SimState) -> None:
        super().__init__(config)
        self.state = state
        self.on_ready: Callable[[], None] = lambda: None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().startup(sockets=sockets)
        if self.started:
            self.on_ready()

    async def main_loop(self) -> None:
        # uvicorn's own loop checks `should_exit` every 0.1 s; `wake()` lets a stop skip that wait.
        self._wake = asyncio.Event()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=0.1)
            except TimeoutError:
                pass

    def wake(self) -> None:
        """Called from any thread after setting `should_exit`: notice it now."""
        loop, wake = self.loop, self._wake
        if loop is not None and wake is not None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # the loop has already closed
                pass

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.state.stopping.set()
        await super().shutdown(sockets=sockets)


def _prepare(settings: SimSettings) -> tuple[_Server, socket.socket, str]:
    """Load the truth, bind the socket and build the server (nothing served yet)."""
    truth = TruthIndex.load(settings.truth) if settings.truth else None
    state = SimState(settings, truth=truth)
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = _listen(family, settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    config = uvicorn.Config(
        build_app(state),
        loop="asyncio",
        http="h11",
        # The Responses API's WebSocket mode (websockets' sans-I/O core; uvicorn's older wrapper is deprecated).
        ws="websockets-sansio",
        lifespan="off",
        # Leave the process's logging alone (uvicorn's default applies a dictConfig of its own).
        log_config=None,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=2,
    )
    return _Server(config, state), sock, f"http://{shown}:{port}/v1"


def _listen(family: socket.AddressFamily, host: str, port: int) -> socket.socket:
    # The protocol must be named: asyncio sets TCP_NODELAY only on sockets whose `proto` is IPPROTO_TCP,
    # and without it every small response waits ~40 ms for a delayed ACK (Nagle's algorithm).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock
