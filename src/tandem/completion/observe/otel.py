"""OpenTelemetry export of trace records, live: one span per request, a child span per phase.

Enabled by `[trace] otlp_endpoint` (an OTLP/HTTP base URL such as http://localhost:4318) or by the standard
variables `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` (with `OTEL_EXPORTER_OTLP_HEADERS`,
`OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_SERVICE_NAME`, read by the SDK itself). Needs the `otel` extra
(opentelemetry-sdk and the OTLP/HTTP protobuf exporter); without it, the server says so once and runs on.

Attribute names follow the OpenTelemetry GenAI semantic conventions as released in semantic conventions
1.44.0 (`SCHEMA_URL`; development status there, the names since kept by the GenAI conventions repository):

    span name                               "{gen_ai.operation.name} {gen_ai.request.model}" for a request
                                            that started a model stream; "tandem {kind}" for one that did not
    gen_ai.operation.name                   "text_completion" (provider "fim"), else "chat"
    gen_ai.provider.name                    the vendor, from the base URL's host (openai, anthropic, groq,
                                            deepseek, mistral_ai, x_ai, cerebras), else the provider setting
    gen_ai.request.model                    the configured model name
    gen_ai.usage.input_tokens               prompt tokens (cached ones included)
    gen_ai.usage.output_tokens              generated tokens
    gen_ai.usage.cache_read.input_tokens    prompt tokens the provider served from its cache
    gen_ai.response.time_to_first_chunk     seconds from the request leaving tandem to its first text
    server.address, server.port             the provider's host and port
    tandem.*                                the record's own facts: kind, outcome, source, waited_for_model,
                                            route_reasons, file (base name), request_id, cost_usd

Child spans are the phases (docs/trace.md), each from the previous phase reached to its own time. Document
text and keys are never attributes: spans carry what the trace record carries.

Nothing here runs on the request path but one append to a bounded queue: a worker thread turns records into
spans and the SDK's batch processor exports them from its own thread. An unreachable or slow collector
fills the queue, and records past `QUEUE_RECORDS` are dropped (counted in `dropped`); nothing is printed to
stdout (the SDK logs through `logging`, which the server sends to stderr or its log file).
"""

from __future__ import annotations

import collections
import logging
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tandem.completion.observe.trace import _WALL_OFFSET_NS, PHASES, TraceRecord

if TYPE_CHECKING:
    from tandem.completion.config.tree import ModelConfig

log = logging.getLogger(__name__)

SCHEMA_URL = "https://opentelemetry.io/schemas/1.44.0"
QUEUE_RECORDS = 4096
# How long stopping waits for the last export: a slow collector must not hold up the server's shutdown.
CLOSE_WAIT_S = 1.0
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
# gen_ai.provider.name by the provider's host (the well-known values of the conventions, and cerebras).
_VENDORS = {
    "api.openai.com": "openai",
    "api.anthropic.com": "anthropic",
    "api.groq.com": "groq",
    "api.deepseek.com": "deepseek",
    "api.mistral.ai": "mistral_ai",
    "api.x.ai": "x_ai",
    "api.cerebras.ai": "cerebras",
}


class OtelUnavailable(Exception):
    """The `otel` extra is not installed; the message says how to install it."""


def wanted(endpoint: str, env: Mapping[str, str]) -> bool:
    """Whether spans should be exported: an endpoint is configured, or a standard variable names one."""
    return bool(endpoint or any(env.get(name) for name in ENDPOINT_VARIABLES))


def provider_name(model: ModelConfig) -> str:
    host = urllib.parse.urlsplit(model.base_url).hostname or ""
    return _VENDORS.get(host, model.provider)


def _attributes(record: TraceRecord, model: ModelConfig | None) -> tuple[str, dict[str, Any]]:
    attributes: dict[str, Any] = {
        "tandem.kind": record.kind,
        "tandem.request_id": record.id,
        "tandem.outcome": record.outcome,
        "tandem.source": record.source,
        "tandem.waited_for_model": record.waited_for_model,
    }
    if record.file:
        attributes["tandem.file"] = record.file
    if record.route_reasons:
        attributes["tandem.route_reasons"] = list(record.route_reasons)
    if record.cost_usd:
        attributes["tandem.cost_usd"] = record.cost_usd
    if record.error:
        attributes["error.type"] = record.error.split(":", 1)[0]
    if record.source != "model" or model is None:
        return f"tandem {record.kind}", attributes
    operation = "text_completion" if model.provider == "fim" else "chat"
    attributes |= {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": provider_name(model),
        "gen_ai.request.model": model.model,
        "gen_ai.usage.input_tokens": record.tokens_in,
        "gen_ai.usage.output_tokens": record.tokens_out,
        "gen_ai.usage.cache_read.input_tokens": record.tokens_cached,
    }
    sent, first = record.marks_ns.get("request_sent"), record.marks_ns.get("first_token")
    if sent is not None and first is not None:
        attributes["gen_ai.response.time_to_first_chunk"] = (first - sent) / 1e9
    url = urllib.parse.urlsplit(model.base_url)
    if url.hostname:
        attributes["server.address"] = url.hostname
        attributes["server.port"] = url.port or (443 if url.scheme == "https" else 80)
    return f"{operation} {model.model}", attributes


class OtelExport:
    """A tracer sink (`Tracer.sinks.append(export.send)`) that exports records as spans over OTLP/HTTP.

    `model_for(tier)` gives the configuration of the model a record's tier names (for the GenAI attributes).
    `exporter` replaces the OTLP exporter (a test's in-memory exporter); `endpoint` is the OTLP/HTTP base URL
    (empty: the SDK reads the standard variables).
    """

    def __init__(
        self,
        *,
        endpoint: str = "",
        model_for: Callable[[str], ModelConfig | None] = lambda tier: None,
        exporter: Any = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            raise OtelUnavailable("OpenTelemetry export needs the otel extra: pip install 'tandem-lsp[otel]'") from None
        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            traces_url = endpoint.rstrip("/") + "/v1/traces" if endpoint else None
            exporter = OTLPSpanExporter(endpoint=traces_url)
        attributes = {} if (env or {}).get("OTEL_SERVICE_NAME") else {"service.name": "tandem"}
        self._provider = TracerProvider(resource=Resource.create(attributes))
        self._provider.add_span_processor(BatchSpanProcessor(exporter))
        self._tracer = self._provider.get_tracer("tandem", schema_url=SCHEMA_URL)
        self._model_for = model_for
        self._queue: collections.deque[TraceRecord] = collections.deque()
        self._ready = threading.Event()
        self._idle = threading.Event()  # set while the queue is empty and no record is being converted
        self._idle.set()
        self._closed = False
        self.dropped = 0
        self.exported = 0
        self._worker = threading.Thread(target=self._run, name="tandem-otel", daemon=True)
        self._worker.start()

    def send(self, record: TraceRecord) -> None:
        """Queue `record` for export (the request path's whole cost: an append and an event set)."""
        if len(self._queue) >= QUEUE_RECORDS:
            self.dropped += 1
            return
        self._idle.clear()
        self._queue.append(record)
        self._ready.set()

    def _run(self) -> None:
        while True:
            self._ready.wait()
            self._ready.clear()
            while self._queue:
                record = self._queue.popleft()
                try:
                    self._export(record)
                except Exception:  # a bad record must not stop the exporter
                    log.exception("could not turn trace record %s into spans", record.id)
            if not self._queue:
                self._idle.set()
            if self._closed:
                return

    def _export(self, record: TraceRecord) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        marks = record.marks_ns
        start = record.received_ns + _WALL_OFFSET_NS
        end = max(marks.values(), default=record.received_ns) + _WALL_OFFSET_NS
        model = self._model_for(record.tier) if record.tier else None
        name, attributes = _attributes(record, model)
        kind = SpanKind.CLIENT if "gen_ai.operation.name" in attributes else SpanKind.INTERNAL
        root = self._tracer.start_span(name, kind=kind, start_time=start, attributes=attributes)
        if record.error or record.outcome == "error":
            root.set_status(Status(StatusCode.ERROR, record.error))
        context = trace.set_span_in_context(root)
        previous = start
        for phase in PHASES[1:]:
            at = marks.get(phase)
            if at is None:
                continue
            at += _WALL_OFFSET_NS
            self._tracer.start_span(phase, context=context, start_time=previous).end(end_time=max(at, previous))
            previous = max(previous, at)
        root.end(end_time=max(end, start))
        self.exported += 1

    def converted(self, timeout_s: float = 5.0) -> bool:
        """Wait until every queued record has become spans (handed to the SDK's exporter)."""
        return self._idle.wait(timeout_s)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Convert and export everything queued so far; False if that did not finish in time."""
        return self.converted(timeout_s) and bool(self._provider.force_flush(int(timeout_s * 1000)))

    def close(self) -> None:
        """Export what is queued and stop (called when the server shuts down), waiting at most about
        `CLOSE_WAIT_S` for the collector."""
        self._closed = True
        self._ready.set()
        self._worker.join(timeout=CLOSE_WAIT_S)
        stopper = threading.Thread(target=self._provider.shutdown, name="tandem-otel-stop", daemon=True)
        stopper.start()
        stopper.join(timeout=CLOSE_WAIT_S)
