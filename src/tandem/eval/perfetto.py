"""`tandem trace export --perfetto OUT.json FILE...`: trace records as Chrome Trace Event JSON.

Perfetto's UI (and chrome://tracing) open the file. Requests are async events ("b"/"e" pairs with an id),
so requests that overlap in time stack up instead of hiding each other, and each request's phases nest
inside it. The tracks, each a process of its own (named by a "process_name" metadata event):

    document <file>       every request made in that document, received -> its last phase, phases nested
    model <label>         every model stream: request_sent -> done (or answered), first token marked
    cache                 every request answered from a running stream or the completion cache

Times are microseconds since the Unix epoch (`received_at` plus the record's phase offsets). Records from
before schema 1 (no `received_at`) are skipped and counted. A request's arguments hold only what the record
holds (ids, outcome, tokens, route reasons): never document text.
"""

from __future__ import annotations

import json
import pathlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tandem.completion.observe.trace import PHASES

CATEGORY = "tandem"


class _Tracks:
    """Process ids for the tracks, in the order they are first needed (the UI sorts by sort index)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def pid(self, name: str) -> int:
        if name not in self.ids:
            self.ids[name] = len(self.ids) + 1
        return self.ids[name]

    def metadata(self) -> Iterator[dict[str, Any]]:
        for name, pid in self.ids.items():
            yield {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
            yield {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}


def _span(name: str, pid: int, span_id: str, start_us: float, end_us: float, args: Mapping[str, Any]) -> list[Any]:
    # id2.local: the id is scoped to the process, so Perfetto puts the slices on that process's tracks (a plain
    # "id" is global: every request would get a track of its own outside any process).
    common = {"cat": CATEGORY, "name": name, "pid": pid, "tid": 0, "id2": {"local": span_id}}
    return [
        {**common, "ph": "b", "ts": round(start_us, 3), "args": dict(args)},
        {**common, "ph": "e", "ts": round(max(end_us, start_us), 3)},
    ]


def _args(record: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("id", "kind", "outcome", "source", "model", "tier", "stream_id", "waited_for_model", "error", "chars")
    args = {key: record[key] for key in keys if record.get(key) not in (None, "")}
    if record.get("route_reasons"):
        args["route_reasons"] = record["route_reasons"]
    if record.get("tokens"):
        args["tokens"] = record["tokens"]
    if record.get("cost_usd"):
        args["cost_usd"] = record["cost_usd"]
    return args


def events(records: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The trace events for `records`, and how many records were skipped (no `received_at`)."""
    tracks = _Tracks()
    out: list[dict[str, Any]] = []
    skipped = 0
    for index, record in enumerate(records):
        start = record.get("received_at")
        ms: Mapping[str, float] = record["ms"]
        if not isinstance(start, int | float):
            skipped += 1
            continue
        origin_us = float(start) * 1e6

        def at(phase: str, origin_us: float = origin_us, ms: Mapping[str, float] = ms) -> float:
            return origin_us + float(ms[phase]) * 1000

        request_id = f"{record.get('id', 'r')}.{index}"
        name = f"{record['kind']} {record.get('id', '')}".strip()
        end_phase = max((p for p in PHASES if p in ms), key=lambda p: ms[p])
        document = tracks.pid(f"document {record.get('file') or '(no file)'}")
        out += _span(name, document, request_id, at("received"), at(end_phase), _args(record))
        previous = "received"
        for phase in PHASES[1:]:
            if phase in ms and ms[phase] > ms[previous]:
                out += _span(phase, document, request_id, at(previous), at(phase), {})
                previous = phase
        source = record.get("source")
        if source == "model" and "request_sent" in ms:
            model = tracks.pid(f"model {record.get('model') or '(unknown)'}")
            stream_end = "done" if "done" in ms else end_phase
            args = {"request": record.get("id"), "stream_id": record.get("stream_id"), "tokens": record.get("tokens")}
            label = f"stream {record.get('stream_id', '')}"
            out += _span(label, model, request_id, at("request_sent"), at(stream_end), args)
            if "first_token" in ms:
                out.append(
                    {"cat": CATEGORY, "name": "first token", "ph": "n", "pid": model, "tid": 0,
                     "id2": {"local": request_id}, "ts": round(at("first_token"), 3)}
                )
        elif source in ("stream", "cache") and "answered" in ms:
            cache = tracks.pid("cache")
            args = {"request": record.get("id"), "source": source, "stream_id": record.get("stream_id")}
            out += _span(f"{source} {record.get('id', '')}", cache, request_id, at("received"), at("answered"), args)
    return [*tracks.metadata(), *out], skipped


def run_export(args: Any) -> int:
    """`tandem trace export --perfetto OUT FILE...`; returns the exit status."""
    from tandem.eval.trace_report import load_for_command

    paths = [pathlib.Path(f) for f in args.files]
    trace = load_for_command("export", paths)
    if trace is None:
        return 1
    trace_events, skipped = events(trace.records)
    if skipped:
        sys.stderr.write(f"tandem trace export: skipped {skipped} records without received_at (before schema 1)\n")
    document = {"traceEvents": trace_events, "displayTimeUnit": "ms", "otherData": {"source": "tandem trace"}}
    try:
        pathlib.Path(args.perfetto).write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
    except OSError as error:
        sys.stderr.write(f"tandem trace export: error: cannot write {args.perfetto}: {error.strerror or error}\n")
        return 1
    sys.stderr.write(f"tandem trace export: wrote {args.perfetto} ({len(trace_events)} events)\n")
    return 0
