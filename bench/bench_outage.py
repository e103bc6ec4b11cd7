"""Provider requests per minute while the provider is broken, and what the user is told.

For each kind of outage, `tandem serve` (over stdio) has its fast model pointed at a broken provider on
loopback, and a user types at `--rate` keys per second for `--seconds`, each key a didChange and an inline
completion request. Printed per kind: requests that reached the provider (counted by the broken server
itself; for refused connections and DNS failures, which reach no server, the trace's failed attempts), that
count per minute, and the window/showMessage and window/logMessage notifications the client received.

Kinds: 401, 403, 404 (JSON error bodies), json (200 with a JSON body instead of a stream), html (200 with
an HTML page), 500, refused (nothing listens), dns (a name under .invalid, which never resolves).

    python bench/bench_outage.py [--seconds 60] [--rate 10] [--kinds 401,json,refused]

The broken provider is a stand-in written here; it passes or fails nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import socket
import sys
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

import user_config  # noqa: E402
from bench_soak import Client  # noqa: E402

RESPONSES = {
    "401": (401, "application/json", b'{"error": {"message": "Incorrect API key provided"}}'),
    "403": (403, "application/json", b'{"error": {"message": "You do not have access to this model"}}'),
    "404": (404, "application/json", b'{"error": {"message": "The model does not exist"}}'),
    "json": (200, "application/json", b'{"id": "x", "choices": [{"message": {"content": "not a stream"}}]}'),
    "html": (200, "text/html", b"<html><body>Welcome to the captive portal</body></html>"),
    "500": (500, "application/json", b'{"error": {"message": "internal error"}}'),
}


class BrokenProvider:
    """Answers every HTTP request with one fixed response, and counts the requests."""

    def __init__(self, status: int, content_type: str, body: bytes) -> None:
        self.response = (
            f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                self.requests += 1
                writer.write(self.response)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def outage(kind: str, seconds: float, rate: float) -> dict[str, Any]:
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tandem-outage-"))
    provider: BrokenProvider | None = None
    server: asyncio.Server | None = None
    if kind in RESPONSES:
        provider = BrokenProvider(*RESPONSES[kind])
        server = await asyncio.start_server(provider.handle, "127.0.0.1", 0)
        base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    elif kind == "refused":
        base_url = f"http://127.0.0.1:{free_port()}/v1"
    else:
        base_url = "http://tandem-outage.invalid/v1"
    home = tmp / "home"
    (home / ".config" / "tandem").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env |= {"HOME": str(home), "BENCH_KEY": "bench-key-0123456789"}
    trace = tmp / "trace.jsonl"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "tandem", "serve", "--trace", str(trace),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env,
    )  # fmt: skip
    client = Client(process)
    shown: list[str] = []
    logged: list[str] = []
    original = client.frames.feed

    def feed(data: bytes) -> list[Any]:
        events = original(data)
        for event in events:
            value = getattr(event, "value", None)
            if isinstance(value, dict) and value.get("method") == "window/showMessage":
                shown.append(value["params"]["message"])
            if isinstance(value, dict) and value.get("method") == "window/logMessage":
                logged.append(value["params"]["message"])
        return events

    client.frames.feed = feed  # type: ignore[method-assign]
    model = {"provider": "openai-chat", "base_url": base_url, "model": "m", "api_key_env": "BENCH_KEY"}
    user_config.write(home, {"models": {"fast": model}})
    init = {"processId": None, "capabilities": {}}
    await client.request("initialize", init)[1]
    client.notify("initialized", {})
    uri = (tmp / "a.py").as_uri()
    item = {"uri": uri, "languageId": "python", "version": 0, "text": ""}
    client.notify("textDocument/didOpen", {"textDocument": item})
    text = "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n" * 1000
    line = character = 0
    started = time.perf_counter()
    keys = 0
    while time.perf_counter() - started < seconds:
        char = text[keys]
        keys += 1
        at = {"line": line, "character": character}
        change = {"textDocument": {"uri": uri, "version": keys}, "contentChanges": [{"range": {"start": at, "end": at}, "text": char}]}  # noqa: E501
        client.notify("textDocument/didChange", change)
        line, character = (line + 1, 0) if char == "\n" else (line, character + 1)
        params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}, "context": {"triggerKind": 2}}  # noqa: E501
        client.request("textDocument/inlineCompletion", params)
        # Pacing a typist (a benchmark's clock).
        await asyncio.sleep(max(0.0, started + keys / rate - time.perf_counter()))
    elapsed = time.perf_counter() - started
    await client.request("shutdown", None)[1]
    client.notify("exit", None)
    await process.wait()
    client.reader.cancel()
    if server is not None:
        server.close()
    records = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()] if trace.exists() else []
    held = ("circuit", "rate")
    attempts = sum(1 for r in records if r.get("outcome") == "error" and not str(r.get("error", "")).startswith(held))
    requests = provider.requests if provider is not None else attempts
    return {
        "kind": kind,
        "seconds": round(elapsed, 1),
        "keys": keys,
        "provider_requests": requests,
        "counted_by": "the broken provider" if provider is not None else "trace (failed attempts)",
        "requests_per_minute": round(requests / elapsed * 60, 1),
        "showMessage": len(shown),
        "logMessage": len(logged),
        "first_message": shown[0] if shown else None,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--kinds", default="401,403,404,json,html,500,refused,dns")
    args = parser.parse_args()
    for kind in args.kinds.split(","):
        print(json.dumps(await outage(kind, args.seconds, args.rate)), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
