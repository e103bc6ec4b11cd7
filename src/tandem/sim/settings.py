"""What a simulator is told at start: speed profiles, faults to inject, truth files.

A profile is a named pair (tokens per second, time to first token) modelled on a class of provider:
`spark` for the 1,000+ tokens/s class, `codex` for an accurate model streaming at ~65 tokens/s.
Explicit `tokens_per_s` / `ttft_ms` settings override the profile's numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class SimConfigError(ValueError):
    """The simulator cannot start as asked (bad setting, unreadable truth path); the message says why."""


@dataclass(frozen=True, kw_only=True)
class Profile:
    """How fast a simulated model answers. `tokens_per_s` may be `math.inf` (no pacing at all)."""

    name: str
    tokens_per_s: float
    ttft_ms: float
    # A server on the user's machine (llama.cpp's llama-server -np 1): it reads the prompt at this rate
    # before the first token, keeps the last prompt it read (one slot: a new prompt costs only the tokens
    # after its common prefix with the last one) and works on one request at a time. inf: a cloud model
    # (time to first token `ttft_ms`, OpenAI-style prompt caching).
    prompt_tokens_per_s: float = math.inf

    @property
    def model_id(self) -> str:
        return f"sim-{self.name}"


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(name="spark", tokens_per_s=1000.0, ttft_ms=100.0),
        Profile(name="codex", tokens_per_s=65.0, ttft_ms=600.0),
        # Qwen2.5-Coder 0.5B (Q4_K_M) in llama-server -t 1 on two shared cores, as measured there: generation
        # 29-31 tokens/s, prompt reading 115-135 tokens/s, ~31 ms to the first token of a cached prompt.
        Profile(name="llama-0.5b", tokens_per_s=30.0, ttft_ms=31.0, prompt_tokens_per_s=120.0),
        # Qwen2.5-Coder 1.5B the same way: generation ~20 tokens/s, prompt reading ~56 tokens/s.
        Profile(name="llama-1.5b", tokens_per_s=20.0, ttft_ms=50.0, prompt_tokens_per_s=56.0),
        # No pacing: for measuring what sits in front of the simulator (tandem's relay ceiling).
        Profile(name="instant", tokens_per_s=math.inf, ttft_ms=0.0),
    )
}


class FaultKind(StrEnum):
    """A way for a request to go wrong, as providers do."""

    RATE_LIMITED = "429"  # 429 with a Retry-After header
    SERVER_ERROR = "500"
    RESET = "reset"  # connection dropped before any response
    TRUNCATE = "truncate"  # stream ends mid-way: no [DONE], no usage
    MALFORMED = "malformed"  # one chunk mid-stream is not JSON
    STALL = "stall"  # first chunk(s) sent, then silence with the connection kept open
    # A WebSocket continuation is answered previous_response_not_found (no effect on other requests).
    FORGET = "forget"


FAULT_KINDS: tuple[str, ...] = tuple(k.value for k in FaultKind)


@dataclass(frozen=True, kw_only=True)
class FaultSpec:
    """Fire `kind` on the next `count` generation requests; `count` None: on every request."""

    kind: FaultKind
    count: int | None = None

    def __str__(self) -> str:
        return self.kind.value if self.count is None else f"{self.kind.value}:{self.count}"


def parse_fault(text: str) -> FaultSpec:
    """`KIND` or `KIND:N` (e.g. `429:2`, `stall`) as a FaultSpec; SimConfigError if it is neither."""
    kind_text, sep, count_text = text.strip().partition(":")
    if kind_text not in FAULT_KINDS:
        raise SimConfigError(f"unknown fault {kind_text!r} (known: {', '.join(FAULT_KINDS)})")
    if not sep:
        return FaultSpec(kind=FaultKind(kind_text))
    try:
        count = int(count_text)
    except ValueError:
        raise SimConfigError(f"fault {text!r}: the count after ':' must be a whole number") from None
    if count < 1:
        raise SimConfigError(f"fault {text!r}: the count after ':' must be at least 1")
    return FaultSpec(kind=FaultKind(kind_text), count=count)


@dataclass(frozen=True, kw_only=True)
class SimSettings:
    """Everything `tandem sim` can be told. None for `tokens_per_s` / `ttft_ms`: the profile's number."""

    host: str = "127.0.0.1"
    port: int = 0  # 0: pick a free port
    profile: str = "spark"
    tokens_per_s: float | None = None
    ttft_ms: float | None = None
    # Relative spread of TTFT and of each token's gap, e.g. 0.2 = +-20%, drawn from a seeded RNG.
    jitter: float = 0.0
    truth: tuple[str, ...] = ()
    error_rate: float = 0.0
    faults: tuple[FaultSpec, ...] = ()
    retry_after_s: float = 1.0
    seed: int = 0
    # Tokens per SSE event. Providers mostly send one; a benchmark may ask for more.
    chunk_tokens: int = 1
    # How long a `stall` fault keeps a connection open without sending anything.
    stall_s: float = 300.0

    def __post_init__(self) -> None:
        _check(self.profile in PROFILES, f"unknown profile {self.profile!r} (known: {', '.join(PROFILES)})")
        _check(0 <= self.port <= 65535, f"port {self.port} is not between 0 and 65535")
        _check(
            self.tokens_per_s is None or self.tokens_per_s > 0,
            f"tokens per second must be > 0 (or inf), not {self.tokens_per_s}",
        )
        _check(
            self.ttft_ms is None or (self.ttft_ms >= 0 and math.isfinite(self.ttft_ms)),
            f"time to first token must be a finite number of ms >= 0, not {self.ttft_ms}",
        )
        _check(0 <= self.jitter < 1, f"jitter must be a fraction in [0, 1), not {self.jitter}")
        _check(0 <= self.error_rate <= 1, f"error rate must be a probability in [0, 1], not {self.error_rate}")
        _check(
            self.retry_after_s >= 0 and math.isfinite(self.retry_after_s),
            f"retry-after must be >= 0 seconds, not {self.retry_after_s}",
        )
        _check(self.chunk_tokens >= 1, f"tokens per chunk must be >= 1, not {self.chunk_tokens}")
        _check(self.stall_s >= 0, f"stall must be >= 0 seconds, not {self.stall_s}")

    def resolved_profile(self) -> Profile:
        """The default profile with this server's overrides applied."""
        base = PROFILES[self.profile]
        return Profile(
            name=base.name,
            tokens_per_s=base.tokens_per_s if self.tokens_per_s is None else self.tokens_per_s,
            ttft_ms=base.ttft_ms if self.ttft_ms is None else self.ttft_ms,
            prompt_tokens_per_s=base.prompt_tokens_per_s,
        )


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise SimConfigError(message)
