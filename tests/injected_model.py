"""A prompt-injected model for attack tests: an OpenAI Chat Completions endpoint on loopback that streams
whatever answer the test (the attacker) chose, and keeps every request body it received, so a test can
assert from the provider's side what left the machine."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-response (a cancelled stream) is no error of the test's."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class InjectedModel:
    def __init__(self) -> None:
        self.answer = "pass\n"
        self.requests: list[dict[str, Any]] = []
        # `hold(text)`: the next request is sent `text` and then waits, its response still open, until
        # `release()`; it then ends as cut by max_tokens. The test decides when a stream ends.
        self._held: str | None = None
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with model._lock:
                    model.requests.append(body)
                    model._arrived.notify_all()
                    answer, held, model._held = model.answer, model._held, None
                if held is not None:
                    self._send_held(held)
                    return
                chunks = [{"choices": [{"index": 0, "delta": {"content": answer}}]}]
                chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                payload = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                data = payload.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_held(self, text: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self._event({"choices": [{"index": 0, "delta": {"content": text}}]})
                model._release.wait(timeout=30)
                self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
                self._event("[DONE]")
                self.wfile.write(b"0\r\n\r\n")

            def _event(self, data: object) -> None:
                line = f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()
                self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def hold(self, text: str) -> None:
        with self._lock:
            self._held = text
        self._release.clear()

    def release(self) -> None:
        self._release.set()

    def wait_for_requests(self, count: int, timeout_s: float = 10.0) -> None:
        """Block until `count` requests have arrived (call it from a thread: `asyncio.to_thread`)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.requests) >= count, timeout=timeout_s):
                raise AssertionError(f"{len(self.requests)} requests arrived, not {count}, in {timeout_s} s")

    def sent(self) -> str:
        """Everything every request carried, as one text (to search for what must not be there)."""
        with self._lock:
            return "\n".join(json.dumps(body) for body in self.requests)

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def injected_model() -> Iterator[InjectedModel]:
    model = InjectedModel()
    try:
        yield model
    finally:
        model.stop()
