"""Tracing's own costs (issue 14): the report of a 100,000-record trace, and what tracing adds per request.

1. Report time: writes a trace of N records (default 100,000) and times `tandem trace report FILE` (text)
   and `tandem trace report FILE --html OUT` as a user runs them (a new process each, interpreter start-up
   included), median of `--runs` runs, wall clock and CPU time (the latter is what a busy machine does not
   stretch). The records are synthetic, made with the product's own TraceRecord:
   a seeded mix of completions served from a stream, the cache and new model requests (with phase times
   drawn around 0.3 ms / 40 ms), prefetches, accepts and edits, spread over an hour, three models, 40 files.

2. Cost per request: the request path's tracing work for one completion (build the record, mark its ten
   phases, write it through the tracer with its sinks: the live status figures always), timed per request
   with perf_counter_ns over `--requests` requests, in four set-ups run interleaved in blocks:
       off      tracing disabled ([trace] enabled = false: the record is still built for the status)
       jsonl    the JSONL file (tandem's own rotation by byte count, one unbuffered write per record)
       jsonl+otlp  the file and the OpenTelemetry export to an OTLP/HTTP receiver on loopback (the
                request path queues the record; spans are made and sent on other threads, whose CPU is
                not in this figure, though their share of the GIL is)
       jsonl+otlp-down  the same with the collector unreachable (a loopback port nothing listens on):
                what a dead collector costs the request path
   It prints p50 and p99 in microseconds, and the records the export dropped (its queue holds 4,096; this
   loop writes far faster than any editor). It passes or fails nothing.

    python bench/bench_trace.py [--records N] [--runs R] [--requests M] [--json]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import pathlib
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from tandem.completion.observe.live_stats import LiveStats
from tandem.completion.observe.trace import PHASES, Tracer, TraceRecord

MS = 1_000_000
MODELS = ("openai-chat gpt-oss-120b @ api.cerebras.ai", "openai-responses gpt-5.3-codex @ api.openai.com", "fim qwen")


def synthetic_record(rng: random.Random, index: int, start_ns: int) -> dict[str, Any]:
    kind = rng.choices(["inline", "completion", "prefetch", "accept", "edit"], [70, 10, 8, 10, 2])[0]
    received = start_ns + index * 36 * MS  # 100,000 records over an hour
    record = TraceRecord(kind=kind, received_ns=received, file=f"module_{rng.randrange(40)}.py", client="vscode")
    if kind == "accept":
        record.outcome, record.chars = "accepted", rng.randrange(1, 80)
        return record.to_json()
    source = "model" if kind in ("prefetch", "edit") else rng.choices(["stream", "cache", "model"], [60, 10, 30])[0]
    record.source, record.tier = source, "accurate" if kind == "edit" else "fast"
    record.model = MODELS[1] if kind == "edit" else rng.choice((MODELS[0], MODELS[2]))
    record.route_reasons = [f"{kind}: the {record.tier} model"]
    record.mark("cache_lookup", received + MS // 20)
    if source == "model":
        at = received + MS // 10
        scale = 600 if kind == "edit" else 40
        for phase in PHASES[2:]:
            at += int(rng.expovariate(1 / (scale * MS / 8)))
            record.mark(phase, at)
        record.tokens_in, record.tokens_out = rng.randrange(500, 3000), rng.randrange(5, 400)
        record.tokens_cached = rng.randrange(0, record.tokens_in)
        record.cost_usd = (record.tokens_in * 0.25 + record.tokens_out * 0.69) / 1e6
        record.waited_for_model = kind != "prefetch"
    else:
        record.mark("answered", received + int(rng.expovariate(1 / (0.3 * MS))))
    record.outcome = rng.choices(["shown", "empty", "superseded"], [60, 30, 10])[0] if kind != "edit" else "applied"
    return record.to_json()


def time_report(path: pathlib.Path, runs: int, html: pathlib.Path | None) -> tuple[float, float]:
    """Median wall-clock and CPU seconds (user + system, from the child's rusage) of the report command.
    CPU time is what the machine's load does not stretch: on a shared machine it says what the wall
    clock would be on an idle core."""
    command = [sys.executable, "-P", "-m", "tandem", "trace", "report", str(path)]
    if html is not None:
        command += ["--html", str(html)]
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def one_request(tracer: Tracer, at_ns: int) -> int:
    """The tracing work of one completion that asked a model; returns its duration in ns."""
    started = time.perf_counter_ns()
    record = TraceRecord(kind="inline", received_ns=at_ns, file="app.py", language="python", client="vscode")
    record.source, record.model, record.tier, record.stream_id = "model", MODELS[0], "fast", "s1"
    record.route_reasons = ["completion: inline completions use the fast model"]
    for phase in PHASES[1:]:
        record.mark(phase)
    record.tokens_in, record.tokens_out, record.tokens_cached, record.outcome = 1200, 40, 800, "shown"
    tracer.write(record)
    return time.perf_counter_ns() - started


class _Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def cost_per_request(requests: int, directory: pathlib.Path) -> dict[str, dict[str, float]]:
    from tandem.completion.observe.otel import OtelExport

    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    tracers: dict[str, Tracer] = {
        "off": Tracer(None),
        "jsonl": Tracer(directory / "jsonl" / "trace.jsonl"),
        "jsonl+otlp": Tracer(directory / "otlp" / "trace.jsonl"),
    }
    export = OtelExport(endpoint=f"http://127.0.0.1:{receiver.server_address[1]}")
    tracers["jsonl+otlp"].sinks.append(export.send)
    with socket.socket() as probe:  # a loopback port with nothing listening: the collector is down
        probe.bind(("127.0.0.1", 0))
        down_port = probe.getsockname()[1]
    tracers["jsonl+otlp-down"] = Tracer(directory / "down" / "trace.jsonl")
    down = OtelExport(endpoint=f"http://127.0.0.1:{down_port}")
    tracers["jsonl+otlp-down"].sinks.append(down.send)
    for tracer in tracers.values():
        tracer.sinks.insert(0, LiveStats().record)
    samples: dict[str, list[int]] = {name: [] for name in tracers}
    block = 500
    for _ in range(requests // block):  # interleaved blocks: every set-up sees the same machine load
        for name, tracer in tracers.items():
            for _ in range(block):
                samples[name].append(one_request(tracer, time.perf_counter_ns()))
        export.converted(30.0)  # keep the export queue from overflowing (its threads' work is not timed)
        down.converted(30.0)
    export.close()
    down.close()
    for tracer in tracers.values():
        tracer.close()
    receiver.shutdown()
    result = {}
    for name, values in samples.items():
        ordered = sorted(values)
        result[name] = {
            "p50_us": round(ordered[len(ordered) // 2] / 1000, 1),
            "p99_us": round(ordered[int(len(ordered) * 0.99)] / 1000, 1),
        }
    result["jsonl+otlp"]["records_dropped"] = export.dropped
    result["jsonl+otlp-down"]["records_dropped"] = down.dropped
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        directory = pathlib.Path(temp)
        trace = directory / "trace.jsonl"
        rng = random.Random(14)
        start_ns = time.perf_counter_ns()
        with trace.open("w", encoding="utf-8") as handle:
            for index in range(args.records):
                handle.write(json.dumps(synthetic_record(rng, index, start_ns), separators=(",", ":")) + "\n")
        size_mb = trace.stat().st_size / 1e6
        text_s, text_cpu_s = time_report(trace, args.runs, None)
        html_s, html_cpu_s = time_report(trace, args.runs, directory / "report.html")
        html_mb = (directory / "report.html").stat().st_size / 1e6
        costs = cost_per_request(args.requests, directory)
    result = {
        "records": args.records,
        "trace_mb": round(size_mb, 1),
        "report_text_s": round(text_s, 2),
        "report_text_cpu_s": round(text_cpu_s, 2),
        "report_html_s": round(html_s, 2),
        "report_html_cpu_s": round(html_cpu_s, 2),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "html_mb": round(html_mb, 1),
        "tracing_cost_per_request": costs,
        "note": "synthetic records (seeded mix); report times are whole processes, median of runs",
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"trace: {args.records} synthetic records, {size_mb:.1f} MB")
    runs = f"median of {args.runs}, whole process"
    print(f"tandem trace report (text):  {text_s:.2f} s, CPU {text_cpu_s:.2f} s   ({runs})")
    print(f"tandem trace report --html:  {html_s:.2f} s, CPU {html_cpu_s:.2f} s   (page {html_mb:.1f} MB)")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"tracing cost per request over {args.requests} requests (record, 10 phase marks, write):")
    for name, figures in costs.items():
        dropped = f"   ({figures['records_dropped']:.0f} dropped by the export)" if "records_dropped" in figures else ""
        print(f"  {name:<15} p50 {figures['p50_us']:>6.1f} us   p99 {figures['p99_us']:>7.1f} us{dropped}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
