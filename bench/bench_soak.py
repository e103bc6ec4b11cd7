"""A day of typing in one sitting: `tandem serve` over stdio, N keystrokes against `tandem sim` on loopback.

Each keystroke is a didChange (one character of real code: the standard library's files, typed in order)
followed by an inline completion request. Modes:

- `--cancel`: the client does not wait for answers; a request still unanswered when the next key comes is
  withdrawn with $/cancelRequest (as VS Code does), so the server supersedes a stream on almost every key;
  without it, each key waits for its answer.
- `--mispredict`: the simulator gets no truth files, so every completion is its labelled filler (comment
  lines) that the typed code never extends: no key types through a completion, and every key that is not
  superseded first goes to the model (the benchmark turns the debounce off: `[completion] debounce = "fixed"`,
  `debounce_ms = 0`, so that what reaches the model does not depend on the machine's load). (The
  simulator's `error_rate` is not used for this: a wrong completion goes wrong part way through, so most
  keys still type through its right start.)

Every `--every` keys it asks the server `tandem/health` and prints: RSS, open file descriptors, asyncio
tasks, pygls' pending request futures, and the HTTP pool (connections, idle, active, stuck, orphaned,
usable). At the end: RSS growth per 10,000 keys after warm-up (the first 20% of keys, at least 1,000), the
provider's request count, and the pool's usable slots. The model output is simulated; the server and the transport are
real. It passes or fails nothing.

    python bench/bench_soak.py --keys 10000 [--cancel] [--mispredict] [--rate KEYS_PER_S] [--every 1000]
        [--cache-max-bytes N]

The completion cache is bounded (4,096 entries, 32 MiB): with a mispredicting model it fills for ~200k keys,
and its growth is in the RSS growth until then; the summary gives its bytes beside RSS, and
`--cache-max-bytes` reaches the bound sooner (a benchmark setting, not a product default).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import pathlib
import sys
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

import user_config  # noqa: E402

from tandem.eval.replay.sources import stdlib_files  # noqa: E402
from tandem.lsp.framing import FrameReader, Message  # noqa: E402
from tandem.sim.runner import SimSettings, start_in_thread  # noqa: E402


class Client:
    """A minimal LSP client over the server's stdio: requests by id, notifications fire and forget."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.frames = FrameReader()
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.ids = itertools.count(1)
        self.reader = asyncio.create_task(self._read())

    def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._write({"method": method, "params": params})

    def request(self, method: str, params: Any) -> tuple[int, asyncio.Future[Any]]:
        msg_id = next(self.ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[msg_id] = future
        self._write({"id": msg_id, "method": method, "params": params})
        return msg_id, future

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while data := await self.process.stdout.read(1 << 16):
            for event in self.frames.feed(data):
                if isinstance(event, Message) and "method" not in event.value:
                    future = self.pending.pop(event.value.get("id"), None)
                    if future is not None and not future.done():
                        future.set_result(event.value)
                elif isinstance(event, Message) and "id" in event.value:
                    self._write({"id": event.value["id"], "result": None})  # server-to-client requests


def typed_text(chars: int) -> str:
    parts: list[str] = []
    size = 0
    for path in stdlib_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        size += len(text)
        if size >= chars + 1000:
            break
    return "".join(parts)


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    text = typed_text(args.keys)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tandem-soak-"))
    truth = tmp / "truth.py"
    truth.write_text(text)
    settings = SimSettings(profile="spark", ttft_ms=5, truth=() if args.mispredict else (str(truth),))
    home = tmp / "home"
    (home / ".config" / "tandem").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")} | {"HOME": str(home)}
    rows: list[dict[str, Any]] = []
    with start_in_thread(settings) as sim:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-P", "-m", "tandem", "serve", "--trace", str(tmp / "trace.jsonl"),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env=env, limit=1 << 20,
        )  # fmt: skip
        client = Client(process)
        options = {
            "models": {"fast": {"provider": "openai-chat", "base_url": sim.base_url, "model": "sim-spark"}},
            # No debounce: the adaptive one waits for a pause once the model's recent latency passes three
            # typing intervals (75 ms at 40 keys/s, reached on a loaded machine), and a typist who never
            # pauses then never reaches the model again; the workload would depend on the machine's load.
            "completion": {"debounce": "fixed", "debounce_ms": 0},
        }
        if args.cache_max_bytes:
            options["cache"] = {"max_bytes": args.cache_max_bytes}
        user_config.write(home, options)
        init = {"processId": None, "capabilities": {}, "rootUri": None}
        await client.request("initialize", init)[1]
        client.notify("initialized", {})
        uri = (tmp / "typed.py").as_uri()
        doc = {"uri": uri, "languageId": "python", "version": 0, "text": ""}
        client.notify("textDocument/didOpen", {"textDocument": doc})
        line = character = 0
        previous: tuple[int, asyncio.Future[Any]] | None = None
        cancelled = answered = 0
        started = time.perf_counter()
        for key in range(1, args.keys + 1):
            char = text[key - 1]
            at = {"line": line, "character": character}
            change = {"range": {"start": at, "end": at}, "text": char}
            client.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": key}, "contentChanges": [change]},
            )
            if char == "\n":
                line, character = line + 1, 0
            else:
                character += len(char.encode("utf-16-le")) // 2
            if previous is not None and args.cancel and not previous[1].done():
                client.notify("$/cancelRequest", {"id": previous[0]})
                cancelled += 1
            position = {"line": line, "character": character}
            params = {"textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 2}}
            previous = client.request("textDocument/inlineCompletion", params)
            if not args.cancel:
                await previous[1]
                answered += 1
            else:
                await asyncio.sleep(0)
            if args.rate:
                # Pacing a typist (a benchmark's clock, not a test's wait).
                await asyncio.sleep(max(0.0, started + key / args.rate - time.perf_counter()))
            if key % args.every == 0:
                health = (await client.request("tandem/health", None)[1])["result"]
                row = {"keys": key, "s": round(time.perf_counter() - started, 1)} | health
                row["provider_requests"] = sim.stats().get("requests", sim.stats())
                rows.append(row)
                print(json.dumps(row), flush=True)
        if previous is not None:
            await previous[1]
        await client.request("shutdown", None)[1]
        client.notify("exit", None)
        await process.wait()
        client.reader.cancel()
    warm = max(1000, args.keys // 5)
    after = [r for r in rows if r["keys"] >= warm]
    growth = None
    if len(after) >= 2:
        growth = (after[-1]["rss_mb"] - after[0]["rss_mb"]) / (after[-1]["keys"] - after[0]["keys"]) * 10_000
    return {
        "keys": args.keys,
        "cancel": args.cancel,
        "mispredict": args.mispredict,
        "rate_keys_per_s": args.rate or "unpaced",
        "seconds": round(time.perf_counter() - started, 1),
        "requests_cancelled_by_client": cancelled,
        "rss_mb_first": rows[0]["rss_mb"] if rows else None,
        "rss_mb_last": rows[-1]["rss_mb"] if rows else None,
        "rss_growth_mb_per_10k_keys_after_warmup": None if growth is None else round(growth, 2),
        "warmup_keys": warm,
        "cache_max_bytes": args.cache_max_bytes or "default",
        "cache_bytes_first_after_warmup": after[0]["completion_cache"]["bytes"] if after else None,
        "cache_bytes_last": rows[-1]["completion_cache"]["bytes"] if rows else None,
        "pool_last": rows[-1]["pool"] if rows else None,
        "request_futures_last": rows[-1]["request_futures"] if rows else None,
        "provider_requests_last": rows[-1]["provider_requests"] if rows else None,
        "note": "model output simulated (tandem sim, spark profile, ttft 5 ms)",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--cancel", action="store_true")
    parser.add_argument("--mispredict", action="store_true")
    parser.add_argument("--rate", type=float, default=0.0, help="keys per second (0: as fast as the client can)")
    parser.add_argument(
        "--cache-max-bytes",
        type=int,
        default=0,
        help="the completion cache's byte bound ([cache] max_bytes; 0: the default, 32 MiB), to reach it sooner",
    )
    args = parser.parse_args()
    print(json.dumps({"summary": asyncio.run(soak(args))}))


if __name__ == "__main__":
    main()
