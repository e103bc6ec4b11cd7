"""What the simulator was sent: each generation request's body (each WebSocket message), as it arrived,
for tests to read.

A provider's own record of what reached it is the honest place to check that something was never sent:
`GET /_sim/requests` returns the bodies (oldest first), `POST /_sim/reset` forgets them, and a test in the
same process can wait for a request with `RequestLog.wait_for`. Headers are not kept (the Authorization
header holds a key). Only the newest `KEPT` requests are kept, so a long benchmark cannot grow it without
bound.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

KEPT = 5_000


@dataclass(frozen=True, kw_only=True)
class LoggedRequest:
    endpoint: str
    body: str  # decoded as UTF-8, undecodable bytes escaped


class RequestLog:
    """Shared by the server's loop (which appends) and other threads (which read and wait)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._requests: deque[LoggedRequest] = deque(maxlen=KEPT)
        self._total = 0

    def add(self, endpoint: str, body: bytes) -> None:
        with self._changed:
            self._requests.append(LoggedRequest(endpoint=endpoint, body=body.decode("utf-8", "backslashreplace")))
            self._total += 1
            self._changed.notify_all()

    def all(self) -> list[LoggedRequest]:
        with self._changed:
            return list(self._requests)

    def clear(self) -> None:
        with self._changed:
            self._requests.clear()

    def wait_for(self, predicate: Callable[[list[LoggedRequest]], bool], timeout_s: float) -> bool:
        """Block until `predicate(requests)` holds (True) or `timeout_s` passes (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(list(self._requests)), timeout=timeout_s)
