"""OpenTelemetry export: one span per request with a child span per phase and the GenAI attributes, sent
over OTLP/HTTP to a receiver on loopback that decodes the protobuf; a collector that never answers costs
the request path nothing; `tandem serve` exports with the standard variable and keeps stdout for LSP."""

from __future__ import annotations

import asyncio
import pathlib
import socket

import pytest
from fixtures_sim import SimFactory

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
pytest.importorskip("opentelemetry.proto", reason="opentelemetry-proto (test extra) is not installed")

from otlp_receiver import otlp_receiver

from tandem.completion.config.tree import ModelConfig
from tandem.completion.observe.otel import SCHEMA_URL, OtelExport, wanted
from tandem.completion.observe.trace import TraceRecord

MS = 1_000_000
FAST = ModelConfig(provider="openai-chat", base_url="https://api.cerebras.ai/v1", model="gpt-oss-120b")


def _model_record() -> TraceRecord:
    record = TraceRecord(kind="inline", received_ns=100 * MS, file="app.py", source="model", tier="fast")
    record.model, record.outcome, record.stream_id = "openai-chat gpt-oss-120b @ api.cerebras.ai", "shown", "s1"
    record.route_reasons = ["completion: inline completions use the fast model"]
    for phase, at_ms in (("cache_lookup", 100.1), ("request_sent", 101), ("first_token", 130), ("answered", 131)):
        record.mark(phase, int(at_ms * MS))
    record.mark("done", 160 * MS)
    record.tokens_in, record.tokens_out, record.tokens_cached = 900, 40, 512
    return record


def _attributes(span: object) -> dict[str, object]:
    values: dict[str, object] = {}
    for kv in span.attributes:  # type: ignore[attr-defined]
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            values[kv.key] = [v.string_value for v in value.array_value.values]
        else:
            values[kv.key] = getattr(value, kind)
    return values


def test_a_request_becomes_a_genai_span_with_a_child_per_phase() -> None:
    with otlp_receiver() as (url, received):
        export = OtelExport(endpoint=url, model_for=lambda tier: FAST if tier == "fast" else None)
        hit = TraceRecord(kind="inline", received_ns=200 * MS, file="app.py", source="stream", outcome="shown")
        hit.mark("cache_lookup", 200 * MS + 50_000)
        hit.mark("answered", 200 * MS + 90_000)
        export.send(_model_record())
        export.send(hit)
        assert export.flush()
        spans = received.wait_for_spans(8)  # 1 + 5 phases, 1 + 2 phases
        export.close()
    assert received.paths[0] == "/v1/traces"
    resource, scope, _ = received.spans[0]
    assert {kv.key: kv.value.string_value for kv in resource.attributes}["service.name"] == "tandem"
    assert scope.schema_url == SCHEMA_URL
    by_name = {span.name: span for span in spans}
    root = by_name["chat gpt-oss-120b"]
    attributes = _attributes(root)
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "cerebras"
    assert attributes["gen_ai.request.model"] == "gpt-oss-120b"
    assert attributes["gen_ai.usage.input_tokens"] == 900
    assert attributes["gen_ai.usage.output_tokens"] == 40
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 512
    assert attributes["gen_ai.response.time_to_first_chunk"] == pytest.approx(0.029)
    assert attributes["server.address"] == "api.cerebras.ai" and attributes["server.port"] == 443
    assert attributes["tandem.route_reasons"] == ["completion: inline completions use the fast model"]
    assert root.end_time_unix_nano - root.start_time_unix_nano == 60 * MS
    children = [s for s in spans if s.parent_span_id == root.span_id]
    assert [s.name for s in sorted(children, key=lambda s: s.start_time_unix_nano)] == [
        "cache_lookup", "request_sent", "first_token", "answered", "done"
    ]
    first_token = next(s for s in children if s.name == "first_token")
    assert first_token.end_time_unix_nano - first_token.start_time_unix_nano == 29 * MS
    assert all(s.trace_id == root.trace_id for s in children)
    # A request served from a stream: its own span, no GenAI usage (no model was asked for it).
    reuse = by_name["tandem inline"]
    assert _attributes(reuse)["tandem.source"] == "stream"
    assert not any(key.startswith("gen_ai.") for key in _attributes(reuse))


def test_the_endpoint_comes_from_config_or_the_standard_variables() -> None:
    assert not wanted("", {})
    assert wanted("http://collector:4318", {})
    assert wanted("", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert wanted("", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})


def test_an_unreachable_collector_costs_the_request_path_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")  # the exporter gives up retrying after a second
    with socket.socket() as probe:  # a loopback port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    export = OtelExport(endpoint=f"http://127.0.0.1:{port}")
    for _ in range(200):
        export.send(_model_record())  # a queue append; the export fails (and retries) on other threads
    assert export.converted()
    assert export.exported == 200 and export.dropped == 0
    export.close()  # returns without waiting out the exporter's retries


@pytest.mark.e2e
async def test_serve_exports_spans_to_the_standard_endpoint_and_stdout_stays_lsp(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, sim_factory: SimFactory
) -> None:
    from e2e_support import fast_model, serve

    truth = tmp_path / "truth" / "m.py"
    truth.parent.mkdir()
    truth.write_text("def add(a, b):\n    return a + b\n")
    sim = sim_factory(profile="spark", ttft_ms=5, truth=(str(truth),))
    with otlp_receiver() as (url, received):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # export every 50 ms rather than every 5 s
        async with serve(tmp_path, options=fast_model(sim.base_url)) as session:
            uri = session.open("m.py", "def add(a, b):\n    return ")
            assert await session.inline(uri, session.position_at_end("def add(a, b):\n    return ")) == "a + b"
            spans = await asyncio.to_thread(received.wait_for_spans, 2)
    roots = [s for s in spans if s.name == "chat sim-spark"]
    assert roots, [s.name for s in spans]
    assert _attributes(roots[0])["tandem.outcome"] == "shown"
