"""The path of one completion, top to bottom: `Engine.complete`.

    stream reuse -> debounce -> context -> route -> stream -> answer early -> post-process -> trace

Everything before "stream" costs microseconds; a request the user is typing through an existing
suggestion never reaches the model. A newer request for the same document supersedes the older one:
the older is answered empty at once, and model streams the user moved away from are cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

import anyio
import httpx

from completion.backends.base import Backend, ModelRequest
from completion.backends.factory import describe_model, make_backend
from completion.config import Config, ModelConfig
from completion.errors import BackendTimeout, CompletionError, RateLimited, describe
from completion.postprocess import Surroundings, clean
from completion.request import CompletionRequest, CompletionResult
from completion.streams import Stream, StreamStore, log_failure
from completion.trace import Tracer, TraceRecord
from completion.units import UnitContext, useful_unit, wants_multiline

log = logging.getLogger(__name__)

NO_MODEL_NOTICE = (
    "tandem: no model is configured, so there are no AI completions. Add a [models.fast] table "
    "(provider, base_url, model, api_key_env) to ~/.config/tandem/config.toml, or run `tandem demo` to "
    "see tandem work against its built-in simulator."
)
# Following lines compared by post-processing to catch a suggestion that repeats them.
_FOLLOWING_LINES = 3


class Cancelled(CompletionError):
    """The stream was stopped because the user moved on (not a provider failure)."""


@dataclass
class _Tier:
    config: ModelConfig
    backend: Backend
    label: str
    # After a 429 the tier is left alone until this time (perf_counter seconds).
    not_before_s: float = 0.0


@dataclass
class _Ticket:
    """A request in progress; superseding it cancels its current wait and it is answered empty."""

    superseded: bool = False
    _scope: anyio.CancelScope | None = None

    def waiting(self) -> anyio.CancelScope:
        """A fresh scope for one wait (anyio scopes are single-use), cancelled if already superseded."""
        self._scope = anyio.CancelScope()
        if self.superseded:
            self._scope.cancel()
        return self._scope

    def supersede(self) -> None:
        self.superseded = True
        if self._scope is not None:
            self._scope.cancel()


class Engine:
    def __init__(
        self,
        *,
        config: Config,
        client: httpx.AsyncClient,
        tracer: Tracer,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._client = client
        self._tracer = tracer
        self._env = env if env is not None else os.environ
        self._streams = StreamStore()
        self._tickets: dict[str, _Ticket] = {}
        self._tiers: dict[str, _Tier] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.config = config

    # -- configuration -------------------------------------------------------------------------

    def configure(self, config: Config) -> list[str]:
        """Adopt a configuration (call once after construction, then on every change); returns
        problems to show, such as an unusable provider."""
        self.config = config
        problems: list[str] = []
        for name in ("fast", "accurate"):
            model: ModelConfig | None = getattr(config.models, name)
            current = self._tiers.get(name)
            if current is not None and current.config == model:
                continue
            self._tiers.pop(name, None)
            if current is not None:
                self._spawn(current.backend.aclose())
            if model is None or not model.base_url:
                continue
            try:
                backend = make_backend(model, self._client, env=self._env)
            except CompletionError as error:
                problems.append(f"models.{name}: {describe(error)}")
                continue
            self._tiers[name] = _Tier(model, backend, describe_model(model))
        return problems

    @property
    def has_model(self) -> bool:
        return bool(self._tiers)

    async def warm(self) -> None:
        """Open connections to the configured providers before the first keystroke needs them."""
        await asyncio.gather(*(tier.backend.warm() for tier in self._tiers.values()))

    # -- the request path ----------------------------------------------------------------------

    async def complete(self, request: CompletionRequest) -> CompletionResult:
        record = TraceRecord(
            kind=request.kind,
            received_ns=request.received_ns or time.perf_counter_ns(),
            file=request.path.rsplit("/", 1)[-1],
            language=request.language,
            client=request.client,
        )
        ticket = self._supersede(request.uri)
        try:
            return await self._complete(request, record, ticket)
        except asyncio.CancelledError:
            # $/cancelRequest: the client no longer wants an answer; record it and let pygls reply.
            record.outcome = "cancelled"
            self._tracer.write(record)
            raise
        finally:
            if self._tickets.get(request.uri) is ticket:
                del self._tickets[request.uri]

    async def _complete(self, request: CompletionRequest, record: TraceRecord, ticket: _Ticket) -> CompletionResult:
        settings = self.config.completion
        unit_ctx = UnitContext(
            line_before=request.line_before(),
            line_after=request.line_after(),
            multiline=wants_multiline(request.line_before(), request.line_after(), settings.multiline),
            max_lines=settings.max_lines,
        )
        record.mode = "multi" if unit_ctx.multiline else "single"

        # 1. A stream the user is typing through answers before any debounce.
        found = self._streams.find(request)
        if found is not None and found[0].done and found[0].error is not None:
            # A stream that failed part-way serves only units it completed; otherwise ask again.
            if useful_unit(found[0].text[found[1] :], False, unit_ctx) is None:
                found = None
        record.mark("cache_lookup")
        self._streams.cancel_others(request.uri, keep=found[0] if found else None)
        if found is not None:
            stream, typed = found
            record.source, record.stream_id, record.model = "stream", stream.id, stream.model
            return await self._answer(request, record, ticket, stream, typed, unit_ctx, deferred=False)

        tier = self._tiers.get("fast") or self._tiers.get("accurate")
        if tier is None:
            record.outcome = "not-configured"
            self._tracer.write(record)
            return CompletionResult.empty(notice=NO_MODEL_NOTICE, trace_id=record.id)
        record.model, record.tier = tier.label, "fast" if tier is self._tiers.get("fast") else "accurate"
        record.route_reasons = ["completion: inline completions use the fast model"]
        if time.perf_counter() < tier.not_before_s:
            record.outcome, record.error = "error", "rate limited: waiting out the provider's Retry-After"
            self._tracer.write(record)
            return CompletionResult.empty(trace_id=record.id)

        # 2. Debounce: only misses wait, and a newer keystroke cancels the wait.
        if settings.debounce_ms > 0:
            with ticket.waiting():
                await anyio.sleep(settings.debounce_ms / 1000)
            if ticket.superseded:
                record.outcome = "superseded"
                self._tracer.write(record)
                return CompletionResult.empty(trace_id=record.id)
        record.mark("debounce_end")

        # 3. Context: the text around the cursor (token-budgeted windows come with cache/).
        model_request = ModelRequest(
            prefix=request.prefix(settings.prefix_chars),
            suffix=request.suffix(settings.suffix_chars),
            language=request.language,
            path=request.path,
            max_tokens=tier.config.max_tokens,
            temperature=tier.config.temperature,
        )
        record.prompt_chars = len(model_request.prefix) + len(model_request.suffix)
        record.mark("context_built")

        # 4. Stream in the background: it outlives this request and serves the next keystrokes.
        stream = self._streams.add(request, tier.label)
        record.source, record.stream_id = "model", stream.id
        stream.task = asyncio.create_task(self._run_stream(stream, tier, model_request))
        return await self._answer(request, record, ticket, stream, 0, unit_ctx, deferred=True)

    async def _answer(
        self,
        request: CompletionRequest,
        record: TraceRecord,
        ticket: _Ticket,
        stream: Stream,
        typed: int,
        unit_ctx: UnitContext,
        *,
        deferred: bool,
    ) -> CompletionResult:
        """Wait for the first useful unit of `stream` after `typed` characters, clean it, answer."""
        unit: str | None = None
        with ticket.waiting():
            try:
                with anyio.fail_after(self.config.completion.deadline_s):
                    while True:
                        complete = stream.done and stream.error is None
                        unit = useful_unit(stream.text[typed:], complete, unit_ctx)
                        if unit is not None or stream.done:
                            break
                        record.waited_for_model = True
                        await stream.changed()
            except TimeoutError:
                stream.cancel()
                stream.finish(BackendTimeout(f"no answer within {self.config.completion.deadline_s:g} s"))
        if ticket.superseded:
            record.outcome = "superseded"
        elif unit is None:
            record.outcome = "error" if stream.error and not isinstance(stream.error, Cancelled) else "empty"
            record.error = describe(stream.error) if stream.error else ""
        text = self._clean(request, unit_ctx, unit or "") if record.outcome == "" else ""
        if record.outcome == "":
            record.outcome = "shown" if text else "empty"
        record.chars = len(text)
        record.mark("answered")
        if deferred:
            # The request that started the stream is traced when the stream ends, with its usage.
            stream.on_done(lambda s: self._trace_stream(record, s))
        else:
            self._tracer.write(record)
        streaming = not stream.done
        return CompletionResult(text=text, streaming=streaming, source=record.source, trace_id=record.id)  # type: ignore[arg-type]

    def _clean(self, request: CompletionRequest, unit_ctx: UnitContext, unit: str) -> str:
        following = request.suffix(400).split("\n")[1 : 1 + _FOLLOWING_LINES]
        around = Surroundings(
            line_before=unit_ctx.line_before,
            line_after=unit_ctx.line_after,
            previous_line=request.document.line_content(request.line - 1) if request.line > 0 else "",
            following=tuple(following),
        )
        return clean(unit, around)

    def _trace_stream(self, record: TraceRecord, stream: Stream) -> None:
        stats = stream.stats
        record.mark("request_sent", stats.request_sent_ns)
        record.mark("first_byte", stats.first_byte_ns)
        record.mark("first_token", stats.first_token_ns)
        record.mark("first_line", stream.first_line_ns)
        record.mark("done", stream.done_ns)
        record.tokens_in = stats.usage.input_tokens
        record.tokens_out = stats.usage.output_tokens
        record.tokens_cached = stats.usage.cached_tokens
        if stream.error is not None and not isinstance(stream.error, Cancelled) and not record.error:
            record.error = describe(stream.error)
        self._tracer.write(record)

    async def _run_stream(self, stream: Stream, tier: _Tier, model_request: ModelRequest) -> None:
        error: CompletionError | None = None
        try:
            chunks = tier.backend.stream(model_request, stream.stats)
            async with contextlib.aclosing(chunks):  # type: ignore[type-var]
                async for chunk in chunks:
                    stream.append(chunk)
        except RateLimited as exc:
            error = exc
            tier.not_before_s = time.perf_counter() + min(exc.retry_after_s or 1.0, 60.0)
        except CompletionError as exc:
            error = exc
        except asyncio.CancelledError:
            stream.finish(Cancelled("superseded"))
            raise
        except Exception as exc:  # a backend bug must end this stream, never the server
            log.exception("stream %s failed", stream.id)
            error = CompletionError(f"{type(exc).__name__}: {exc}")
        stream.finish(error)
        log_failure(stream)

    # -- lifecycle -----------------------------------------------------------------------------

    def _supersede(self, uri: str) -> _Ticket:
        older = self._tickets.get(uri)
        if older is not None:
            older.supersede()
        ticket = _Ticket()
        self._tickets[uri] = ticket
        return ticket

    def document_closed(self, uri: str) -> None:
        self._streams.forget(uri)
        ticket = self._tickets.pop(uri, None)
        if ticket is not None:
            ticket.supersede()

    def _spawn(self, coro: object) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        self._streams.close()
        for tier in self._tiers.values():
            await tier.backend.aclose()
        self._tiers.clear()
        self._tracer.close()
