"""Armed faults, and the counters that `GET /_sim/stats` reports.

Faults are armed in order (from `--fault` at start, or `POST /_sim/faults` at run time); each
generation request takes the first armed fault that has requests left. Both objects are shared between
the server's event loop and the thread that started it (tests arm faults directly), hence the locks.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from tandem.sim.settings import FaultKind, FaultSpec

if TYPE_CHECKING:
    from collections.abc import Iterable


class FaultPlan:
    """The faults still to fire, first armed first."""

    def __init__(self, specs: Iterable[FaultSpec] = ()) -> None:
        self._lock = threading.Lock()
        # [kind, requests left or None for every request]
        self._armed: list[tuple[FaultKind, int | None]] = [(s.kind, s.count) for s in specs]

    def arm(self, spec: FaultSpec) -> None:
        with self._lock:
            self._armed.append((spec.kind, spec.count))

    def clear(self) -> None:
        with self._lock:
            self._armed.clear()

    def take(self) -> FaultKind | None:
        """The fault for the request now arriving (and one request fewer left on it), or None."""
        with self._lock:
            if not self._armed:
                return None
            kind, left = self._armed[0]
            if left is None:
                return kind
            if left <= 1:
                self._armed.pop(0)
            else:
                self._armed[0] = (kind, left - 1)
            return kind

    def armed(self) -> list[FaultSpec]:
        with self._lock:
            return [FaultSpec(kind=kind, count=left) for kind, left in self._armed]


@dataclass(frozen=True, kw_only=True)
class RequestRecord:
    """What the simulator noted about one request. Never the Authorization header's value."""

    endpoint: str
    model: str
    stream: bool
    prefix_chars: int
    suffix_chars: int
    prompt_tokens: int
    max_tokens: int
    had_authorization: bool
    truth_matched: bool | None  # None: no truth files loaded
    corrupted: bool
    fault: str | None


class Stats:
    """Counters since start (or the last reset)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Counter[str] = Counter()
        self._faults: Counter[str] = Counter()
        self._completion_tokens = 0
        self._last: RequestRecord | None = None

    def count_request(self, endpoint: str) -> None:
        with self._lock:
            self._requests[endpoint] += 1

    def record(self, record: RequestRecord) -> None:
        with self._lock:
            self._last = record
            if record.fault is not None:
                self._faults[record.fault] += 1

    def count_tokens_sent(self, tokens: int) -> None:
        with self._lock:
            self._completion_tokens += tokens

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._faults.clear()
            self._completion_tokens = 0
            self._last = None

    def snapshot(self) -> dict[str, Any]:
        """The counters as JSON-ready data (the body of `GET /_sim/stats`)."""
        with self._lock:
            return {
                "requests": dict(self._requests),
                "requests_total": sum(self._requests.values()),
                "faults_fired": dict(self._faults),
                "completion_tokens_sent": self._completion_tokens,
                "last_request": asdict(self._last) if self._last is not None else None,
            }
