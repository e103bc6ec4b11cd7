"""The configured models, by tier ("fast", "accurate"), and running one model stream.

A tier holds its `ModelConfig`, the backend built for it (sharing the server's one HTTP client), the
time before which it must not be asked again (after a 429's Retry-After), and its circuit breaker
(`completion.providers.breaker`), whose notices go to `Tiers.listener` (the user is told once per outage).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import httpx

from tandem.completion.config.tree import ModelConfig, ModelsConfig
from tandem.completion.providers.backends.base import Backend, ModelRequest, StreamStats
from tandem.completion.providers.backends.factory import describe_model, make_backend
from tandem.completion.providers.breaker import Breaker, Notice, abandoned_error
from tandem.completion.providers.errors import BackendUnavailable, CompletionError, RateLimited, describe
from tandem.completion.providers.slots import SPECULATIVE, USER, Slots
from tandem.completion.providers.transport import ResilientTransport

log = logging.getLogger(__name__)

TIER_NAMES = ("fast", "accurate")
# The longest a Retry-After is honoured for; a provider asking for more is treated as down for this long.
MAX_HOLD_OFF_S = 60.0
# The longest a completion stream is read, whatever the provider sends (inline completions end in seconds;
# a stream still going after this is one nobody will read).
STREAM_MAX_S = 30.0


# The slowest a model is expected to write: Qwen2.5-Coder 1.5B on llama.cpp, one thread of a loaded
# 2-core machine (DESIGN, local models).
MIN_TOKENS_PER_S = 10.0


def stream_char_limit(max_tokens: int) -> int:
    """Characters read from one stream: `max_tokens` at a generous 8 characters a token (code averages
    3-4), at least 4,096 — a provider that ignores max_tokens cannot flood the server."""
    return max(4096, max_tokens * 8)


def stream_piece_limit(max_tokens: int) -> int:
    """Pieces of text read from one stream. Each piece a backend hands on came in its own event and holds
    at least one token, so a provider that keeps to `max_tokens` sends at most that many; a quarter more
    (and 16) is room for providers that count a little differently."""
    return max_tokens + max_tokens // 4 + 16


def stream_time_limit_s(max_tokens: int, read_timeout_s: float, *, capped: bool = True) -> float:
    """How long one stream is read: its first token may take `read_timeout_s`, and `max_tokens` at the
    slowest expected speed after it; never past `STREAM_MAX_S` (read when called) when `capped`."""
    limit_s = read_timeout_s + max_tokens / MIN_TOKENS_PER_S
    return min(STREAM_MAX_S, limit_s) if capped else limit_s


@dataclass
class Tier:
    name: str
    config: ModelConfig
    backend: Backend
    label: str
    # After a 429 the tier is left alone until this time (perf_counter seconds).
    not_before_s: float = 0.0
    breaker: Breaker = field(default_factory=lambda: Breaker("model"))
    # Told when an outage of this model begins or ends (once each).
    on_notice: Callable[[Notice], None] | None = None
    # Requests in flight at once (`ModelConfig.slot_count`; None: no limit).
    slots: Slots | None = None

    def __post_init__(self) -> None:
        self.breaker.model = self.label
        if self.slots is None and self.config.slot_count:
            self.slots = Slots(self.config.slot_count)

    @property
    def local(self) -> bool:
        return self.config.local

    def holding_off(self) -> bool:
        now = time.perf_counter()
        return now < self.not_before_s or not self.breaker.allows(now)

    def hold_reason(self) -> str:
        """Why this tier is not asked now, in the user's words: the first part (before ":") is short
        enough for a status bar ("fast model unreachable"). A reason given for the breaker is remembered:
        whoever was told the model is unreachable is told when it answers again (`Breaker.refuse`)."""
        now = time.perf_counter()
        if not self.breaker.allows(now):
            self.breaker.refuse()
            wait_s = self.breaker.remaining_s(now)
            next_try = f"next try in {wait_s:.0f} s" if wait_s >= 1 else "trying again"
            if self.breaker.kind == "permanent":
                return (
                    f"{self.name} model refuses requests: {self.breaker.last_error}; {next_try} "
                    "(at once after a settings change)"
                )
            return f"{self.name} model unreachable: {self.breaker.last_error}; {next_try}"
        left_s = self.not_before_s - now
        return f"{self.name} model rate limited: waiting out the provider's Retry-After ({left_s:.0f} s)"

    def _notify(self, notice: Notice | None) -> None:
        if notice is not None:
            log.warning("%s", notice.message)
            if self.on_notice is not None:
                self.on_notice(notice)

    @contextlib.asynccontextmanager
    async def reading(
        self,
        request: ModelRequest,
        stats: StreamStats,
        *,
        limit_s: float | None = None,
        speculative: bool = False,
    ) -> AsyncIterator[Reading]:
        """Read one answer of this model: iterate the `Reading` for its chunks, then its `end` says how the read
        ended. The one path to a model, for inline completions, next edits and edits alike, so the hold-off,
        the breaker and the local limits are one code path; the feature pulls the chunks, and nothing here
        calls back into it.

        A tier held off (a 429's Retry-After, or its breaker open) is not asked: the reading yields nothing and
        its end is the error that says why. Reading stops locally after `limit_s` (at most
        `stream_time_limit_s`), after `stream_char_limit(max_tokens)` characters or
        `stream_piece_limit(max_tokens)` pieces of text, whatever the provider does (the response and its
        connection are closed); such a cut is the reader's, not the provider's fault; an explicit `limit_s`
        (an edit's deadline) is the caller's. Cancelling the caller, or leaving the block before the end,
        stops the stream. A tier with `slots` waits for one first (a `speculative` read after every read the
        user waits for), and the time limit starts when the slot is had."""
        async with self.slots.hold(SPECULATIVE if speculative else USER) if self.slots else contextlib.nullcontext():
            reading = Reading(self, request, stats, limit_s=limit_s)
            try:
                yield reading
            finally:
                await reading.close()

    def _finished(self, error: CompletionError | None, probe: bool) -> None:
        if probe:
            self.breaker.probing = False
        self._notify(self.breaker.success() if error is None else self.breaker.failure(error, time.perf_counter()))


class Reading:
    """One answer of a model as it is read (`Tier.reading`): an async iterator of its chunks, each within the
    tier's limits; `end` is set once the iteration has ended (None before).

    The time limit is one timer for the whole read, which cancels the reading task at the deadline (as
    `asyncio.timeout` does, without a timer per chunk): iterate it from the task that made it, and do not
    await anything else in the loop's body."""

    def __init__(self, tier: Tier, request: ModelRequest, stats: StreamStats, *, limit_s: float | None) -> None:
        self._tier = tier
        self._request = request
        self._stats = stats
        if limit_s is None:
            # A local server may read a cold prompt for longer than a cloud model takes to answer whole.
            limit_s = stream_time_limit_s(request.max_tokens, tier.config.read_timeout_s, capped=not tier.local)
        self._limit_s = limit_s
        self._deadline = asyncio.get_running_loop().time() + limit_s
        self._task = asyncio.current_task()
        self._timer: asyncio.TimerHandle | None = None
        self._expired = False
        self._max_chars = stream_char_limit(request.max_tokens)
        self._max_pieces = stream_piece_limit(request.max_tokens)
        self._received = self._pieces = 0
        self._chunks: AsyncIterator[str] | None = None
        self._probe = False
        self._cut = ""
        self.end: ReadEnd | None = None
        now = time.perf_counter()
        if now < tier.not_before_s:
            self.end = ReadEnd(error=RateLimited("waiting out the provider's Retry-After"))
        elif not tier.breaker.allows(now):
            self.end = ReadEnd(error=BackendUnavailable(tier.hold_reason()))
        else:
            self._probe = tier.breaker.failures > 0
            tier.breaker.probing = tier.breaker.probing or self._probe
            self._chunks = tier.backend.stream(request, stats)
            self._timer = asyncio.get_running_loop().call_at(self._deadline, self._expire)

    def __aiter__(self) -> Reading:
        return self

    async def __anext__(self) -> str:
        chunks = self._chunks
        if chunks is None or self._cut:
            if chunks is not None:
                await self._finish(None)
            raise StopAsyncIteration
        tier = self._tier
        try:
            chunk = await anext(chunks)
        except StopAsyncIteration:
            await self._finish(None)
            raise
        except asyncio.CancelledError:
            # The deadline's cancel, and no other (`asyncio.Task.uncancel`, as `asyncio.timeout` tells them apart).
            if self._expired and self._task is not None and self._task.uncancel() == 0:
                self._cut = f"still streaming after {self._limit_s:g} s"
                await self._finish(None, timed_out=True)
                raise StopAsyncIteration from None
            await self.close()
            raise
        except RateLimited as exc:
            tier.not_before_s = time.perf_counter() + min(exc.retry_after_s or 1.0, MAX_HOLD_OFF_S)
            await self._finish(exc)
            raise StopAsyncIteration from None
        except CompletionError as exc:
            await self._finish(exc)
            raise StopAsyncIteration from None
        except Exception as exc:  # a backend bug must end this stream, never the server
            log.exception("a stream of %s failed", tier.label)
            await self._finish(CompletionError(f"{type(exc).__name__}: {exc}"))
            raise StopAsyncIteration from None
        room = self._max_chars - self._received
        self._received += len(chunk)
        self._pieces += 1
        if self._received > self._max_chars:
            self._cut = f"over {self._max_chars} characters"
            return chunk[: max(room, 0)]
        if self._pieces >= self._max_pieces:
            self._cut = f"{self._pieces} pieces of text for max_tokens = {self._request.max_tokens}"
        return chunk

    def _expire(self) -> None:
        self._expired = True
        if self._task is not None:
            self._task.cancel()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _finish(self, error: CompletionError | None, *, timed_out: bool = False) -> None:
        self._stop_timer()
        chunks, self._chunks = self._chunks, None
        if chunks is None:
            return
        await _close(chunks)
        self._tier._finished(error, self._probe)
        if self._cut:
            log.warning("a stream of %s was cut locally: %s", self._tier.label, self._cut)
            self._stats.finish_reason = "length"
        self.end = ReadEnd(error=error, cut=self._cut, timed_out=timed_out)

    async def close(self) -> None:
        """Stop reading (the caller was cancelled or left before the end): the response is closed, and the
        breaker learns nothing from a read nobody finished."""
        self._stop_timer()
        chunks, self._chunks = self._chunks, None
        if self.end is None:
            self.end = ReadEnd(cut=self._cut or "the reader stopped before the end")
        if chunks is None:
            return
        if self._probe:
            self._tier.breaker.probing = False
        await _close(chunks)


async def _close(chunks: AsyncIterator[str]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()


@dataclass(frozen=True, kw_only=True)
class ReadEnd:
    """How one read of a model ended: the error that ended it (None: the answer is whole, or cut by us),
    and why tandem stopped reading early ("" when the provider ended the answer)."""

    error: CompletionError | None = None
    cut: str = ""
    # The cut was `limit_s` running out (an edit reads that as a timeout).
    timed_out: bool = False


class Tiers:
    """The tiers the configuration names, rebuilt only when a tier's configuration changes."""

    def __init__(self, client: httpx.AsyncClient, env: Mapping[str, str]) -> None:
        self._client = client
        self._env = env
        self._tiers: dict[str, Tier] = {}
        self._closing: set[asyncio.Task[None]] = set()
        # Where a model's outage and recovery are announced (the LSP layer: showMessage and logMessage).
        self.listener: Callable[[Notice], None] | None = None
        # `[completion] fallback_to_accurate`: the accurate model serves completions while the fast one is
        # held off (set by the session from the configuration).
        self.fallback = False
        # A superseded request's response still tells whether its provider works (httpx keeps the
        # transport in a private attribute; another transport simply reports nothing).
        transport = getattr(client, "_transport", None)
        if isinstance(transport, ResilientTransport):
            transport.observers.append(self._abandoned)

    def configure(self, models: ModelsConfig) -> list[str]:
        problems: list[str] = []
        for name in TIER_NAMES:
            model: ModelConfig | None = getattr(models, name)
            current = self._tiers.get(name)
            if current is not None and current.config == model:
                current.breaker.settings_changed()  # the user acted: ask the provider again at once
                continue
            self._tiers.pop(name, None)
            if current is not None:
                task = asyncio.ensure_future(current.backend.aclose())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
            if model is None or not model.base_url:
                continue
            try:
                backend = make_backend(model, self._client, env=self._env)
            except CompletionError as error:
                problems.append(f"models.{name}: {describe(error)}")
                continue
            self._tiers[name] = Tier(
                name, model, backend, describe_model(model), on_notice=functools.partial(self._announce, name)
            )
        return problems

    def _abandoned(self, response: httpx.Response) -> None:
        """The response to a request whose stream was superseded before it was read."""
        error = abandoned_error(response)
        if error is None:
            return
        url = str(response.request.url)
        for tier in self._tiers.values():
            if url.startswith(tier.config.base_url.rstrip("/")):
                tier._notify(tier.breaker.failure(error, time.perf_counter()))

    def _announce(self, name: str, notice: Notice) -> None:
        if name == "fast" and not notice.recovered and (accurate := self._tiers.get("accurate")) is not None:
            # What happens to completions meanwhile, and the setting that decides it.
            if self.fallback:
                meanwhile = (
                    f" Meanwhile completions and next edits use the accurate model ({accurate.label}), at its "
                    "prices ([completion] fallback_to_accurate = true)."
                )
            else:
                meanwhile = (
                    " No completions until then ([completion] fallback_to_accurate = true would use the accurate "
                    f"model, {accurate.label}, meanwhile, at its prices)."
                )
            notice = Notice(notice.message + meanwhile, recovered=False)
        if self.listener is not None:
            self.listener(notice)

    def get(self, name: str) -> Tier | None:
        return self._tiers.get(name)

    def for_completion(self) -> Tier | None:
        """Inline completions and next edits use the fast model; the accurate one serves them when it is all
        there is, or, only with `fallback` on (`[completion] fallback_to_accurate`: it costs several times
        the fast model's price per token), while the fast one is held off (its breaker open, or a 429) and
        the accurate one is not. Off, a held-off fast model is returned and its callers answer with why."""
        fast, accurate = self._tiers.get("fast"), self._tiers.get("accurate")
        if (
            self.fallback
            and fast is not None
            and fast.holding_off()
            and accurate is not None
            and not accurate.holding_off()
        ):
            return accurate
        return fast or accurate

    def stand_in_reason(self, tier: Tier) -> str:
        """Why `tier` serves completions (the trace's route reason and the status' words)."""
        fast = self._tiers.get("fast")
        if tier.name == "fast":
            return "the fast model serves completions"
        if fast is None:
            return "no fast model is configured: the accurate model serves completions"
        return (
            f"the fast model is held off ({fast.hold_reason()}): the accurate model stands in, at its prices "
            "([completion] fallback_to_accurate = true)"
        )

    def __bool__(self) -> bool:
        return bool(self._tiers)

    async def warm(self, like: ModelRequest | None = None) -> None:
        """Open each tier's connections; `like` is a request like those to come (`base.Backend.warm`)."""
        await asyncio.gather(*(tier.backend.warm(like) for tier in self._tiers.values()))

    async def aclose(self) -> None:
        for tier in self._tiers.values():
            await tier.backend.aclose()
        self._tiers.clear()
