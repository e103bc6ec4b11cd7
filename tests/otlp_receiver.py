"""An OTLP/HTTP trace receiver on loopback for tests: it decodes each export with the official protobuf
definitions (opentelemetry-proto) and keeps the spans, so tests check what a collector would receive."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Received:
    """What the receiver was sent: decoded spans with their resource and scope, and the request paths."""

    spans: list[tuple[Any, Any, Any]] = field(default_factory=list)  # (resource, scope spans, span)
    paths: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def wait_for_spans(self, count: int, timeout_s: float = 30.0) -> list[Any]:
        with self.changed:
            if not self.changed.wait_for(lambda: len(self.spans) >= count, timeout=timeout_s):
                raise AssertionError(f"{len(self.spans)} spans arrived, expected {count}")
            return [span for _, _, span in self.spans]


@contextlib.contextmanager
def otlp_receiver() -> Iterator[tuple[str, Received]]:
    """A receiver on 127.0.0.1; yields its base URL (as OTEL_EXPORTER_OTLP_ENDPOINT takes it) and what
    it received."""
    received = Received()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            with received.changed:
                received.paths.append(self.path)
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            received.spans.append((resource_spans.resource, scope_spans, span))
                received.changed.notify_all()
            payload = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
