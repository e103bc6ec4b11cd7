"""Run `llama-server` for a model of the local pair, with the flags tandem was measured with.

- `-t 1`: on two shared cores one thread generates faster than two (measured: the second thread fights
  the editor and tandem for the other core);
- `-np 1`: one slot, so a request never shares the model with another; tandem queues its own requests
  (`completion.providers.slots`) where a superseded one can still be dropped unsent;
- `--cache-reuse 256`: a prompt whose middle moved re-uses cached chunks of at least 256 tokens by
  shifting them, instead of reading everything after the first change again;
- `-c 8192`: room for tandem's prompt (at most ~2,000 tokens for completions, more for edits) and answer;
- `--metrics`: the server's own count of prompt tokens read and served from its cache (`prompt_counts`).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx

from tandem.local.pins import QWEN_05B, QWEN_15B, ModelPin
from tandem.local.setup import model_file, server_binary

Say = Callable[[str], None]
READY_TIMEOUT_S = 120.0
# The servers' context window (`-c`), and so the models' `context_tokens`.
CONTEXT_TOKENS = 8192


class LocalServerError(Exception):
    """The server could not be started, in words the user can act on."""


@dataclass
class LocalServer:
    pin: ModelPin
    port: int
    process: subprocess.Popen[bytes]
    log_path: pathlib.Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def server_command(pin: ModelPin, port: int, *, threads: int = 1, ctx: int | None = None) -> list[str]:
    ctx = ctx or CONTEXT_TOKENS
    binary, weights = server_binary(), model_file(pin)
    for path, how in ((binary, "tandem local setup"), (weights, f"tandem local setup --model {pin.name}")):
        if not path.is_file():
            raise LocalServerError(f"{path} is missing: run `{how}` first")
    return [
        str(binary), "-m", str(weights), "--host", "127.0.0.1", "--port", str(port),
        "-t", str(threads), "-np", "1", "-c", str(ctx), "--cache-reuse", "256", "--no-webui", "--metrics",
    ]  # fmt: skip


def start(pin: ModelPin, port: int, *, threads: int = 1, log_dir: pathlib.Path | None = None) -> LocalServer:
    """Start `llama-server` for `pin` on loopback and wait until it answers its health check."""
    command = server_command(pin, port, threads=threads)
    log_dir = log_dir or pathlib.Path(os.environ.get("TMPDIR", "/tmp"))
    log_path = log_dir / f"tandem-llama-{pin.name}-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = LocalServer(pin, port, process, log_path)
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
                raise LocalServerError(f"llama-server for {pin.name} exited: " + " / ".join(tail))
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    return server
            time.sleep(0.25)
    server.stop()
    raise LocalServerError(f"llama-server for {pin.name} did not answer within {READY_TIMEOUT_S:g} s")


def model_settings(server: LocalServer) -> dict[str, object]:
    """The `[models.*]` table that points tandem at `server`."""
    return {
        "provider": "fim",
        "base_url": server.base_url,
        "model": server.pin.name,
        "fim_template": "qwen2.5-coder",
        "local": True,
        "context_tokens": CONTEXT_TOKENS,
        "max_tokens": 64,
        "timeout_s": 60.0,
    }


def chat_settings(server: LocalServer) -> dict[str, object]:
    """The `[models.*]` table for edits and next edits through the server's chat API."""
    return {
        "provider": "openai-chat",
        "base_url": server.base_url,
        "model": server.pin.name,
        "local": True,
        "context_tokens": CONTEXT_TOKENS,
        "max_tokens": 1024,
        "timeout_s": 120.0,
    }


def toml_for(fast: LocalServer, accurate: LocalServer | None) -> str:
    def table(name: str, values: dict[str, object]) -> str:
        rows = [f"[models.{name}]"]
        for key, value in values.items():
            shown = "true" if value is True else f'"{value}"' if isinstance(value, str) else f"{value}"
            rows.append(f"{key} = {shown}")
        return "\n".join(rows)

    parts = [table("fast", model_settings(fast))]
    if accurate is not None:
        parts.append(table("accurate", chat_settings(accurate)))
    return "\n\n".join(parts) + "\n"


@contextlib.contextmanager
def running_pair(
    *, fast_port: int, accurate_port: int | None, threads: int = 1, log_dir: pathlib.Path | None = None
) -> Iterator[tuple[LocalServer, LocalServer | None]]:
    fast = start(QWEN_05B, fast_port, threads=threads, log_dir=log_dir)
    accurate = None
    try:
        if accurate_port is not None:
            accurate = start(QWEN_15B, accurate_port, threads=threads, log_dir=log_dir)
        yield fast, accurate
    finally:
        if accurate is not None:
            accurate.stop()
        fast.stop()


def serve_pair_forever(*, fast_port: int, accurate_port: int | None, threads: int, say: Say) -> int:
    with running_pair(fast_port=fast_port, accurate_port=accurate_port, threads=threads) as (fast, accurate):
        say(f"{fast.pin.name} at {fast.base_url} (log {fast.log_path})")
        if accurate is not None:
            say(f"{accurate.pin.name} at {accurate.base_url} (log {accurate.log_path})")
        say("put this in ~/.config/tandem/config.toml (or a workspace's tandem.toml); Ctrl-C stops the servers:")
        print(toml_for(fast, accurate), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while fast.process.poll() is None:
                time.sleep(1.0)
    return 0


def prompt_counts(base_url: str) -> tuple[int, int] | None:
    """(prompt tokens the server read, prompt tokens it served from its cache) so far, from llama-server's
    `/metrics` (`--metrics`); None when the server does not expose them."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        text = httpx.get(f"{root}/metrics", timeout=5.0).text
    except httpx.HTTPError:
        return None
    values: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_cached_total"):
            try:
                values[name] = float(value)
            except ValueError:
                return None
    if len(values) != 2:
        return None
    return int(values["llamacpp:prompt_tokens_total"]), int(values["llamacpp:prompt_tokens_cached_total"])
