"""The path of one completion, top to bottom: `Engine.complete`.

    may it be sent? -> reuse (live streams, then the completion cache) -> debounce -> context -> route
    -> gate -> stream -> answer early -> post-process -> speculate -> trace

Whether anything of a document may reach a provider is the gate's decision (`completion.gate`): a refused
document is answered empty before any work, and every prompt, speculative ones included, passes
`Gate.admit` in `_start`, the one place a completion stream begins.

Everything before "stream" costs microseconds; a request the user is typing through an existing
suggestion never waits for a model. A newer request for the same document supersedes the older one:
the older is answered empty at once, and model streams the user moved away from are cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from tandem.cache.completions import CompletionCache
from tandem.completion.config.tree import Config
from tandem.completion.gate import Gate, Outbound
from tandem.completion.inline.answer import answer_cleaner
from tandem.completion.inline.debounce import AdaptiveDebounce
from tandem.completion.inline.local_prompt import local_window
from tandem.completion.inline.postprocess import Surroundings, clean
from tandem.completion.inline.prefetch import AfterAccepting, Charge, TokenBudget
from tandem.completion.inline.prompts import completion_request
from tandem.completion.inline.request import CompletionRequest, CompletionResult, Ticket, Tickets
from tandem.completion.inline.streams import Stream, StreamStore, read_into
from tandem.completion.inline.units import UnitContext, useful_unit, wants_multiline
from tandem.completion.observe.live_stats import LiveFigures, LiveStats
from tandem.completion.observe.spend import SpendLedger, limit_notice
from tandem.completion.observe.trace import Tracer, TraceRecord, estimate_cost_usd
from tandem.completion.providers.errors import BackendTimeout, describe
from tandem.completion.providers.tiers import Tier, Tiers
from tandem.completion.workspace import WorkspaceIndex

log = logging.getLogger(__name__)

NO_MODEL_NOTICE = (
    "tandem: no model is configured, so there are no AI completions. Add a [models.fast] table "
    "(provider, base_url, model, api_key_env) to ~/.config/tandem/config.toml, or run `tandem demo` to "
    "see tandem work against its built-in simulator."
)
# Following lines compared by post-processing to catch a suggestion that repeats them.
_FOLLOWING_LINES = 3
# Rough prompt size when no token count is at hand (prefetch budgeting only).
_CHARS_PER_TOKEN = 4
# How long a warm read (`Engine.warm`) waits for a local model's slot to come free before it gives up.
WARM_WAIT_S = 10.0


def _priced(tier: Tier | None) -> bool:
    """Whether a configured model has a price (without one its spend is known in tokens only)."""
    if tier is None:
        return False
    config = tier.config
    return config.price_input_per_mtok > 0 or config.price_output_per_mtok > 0


@dataclass(frozen=True)
class _Reuse:
    """Where a request's answer comes from without a new model call."""

    stream: Stream | None  # a live or finished stream to read (and maybe wait for)
    typed: int  # characters of it the user has typed through
    text: str = ""  # a finished cache entry's text, when there is no stream


class Engine:
    """Inline completions for the session (`completion.session.Session`), which owns the tiers, the gate,
    the tracer and the speculation budget this borrows."""

    def __init__(
        self,
        *,
        config: Config,
        tiers: Tiers,
        tracer: Tracer,
        budget: TokenBudget,
        spend: SpendLedger,
        gate: Gate | None = None,
        workspace: WorkspaceIndex | None = None,
    ) -> None:
        self.tracer = tracer
        self.live = LiveStats()
        tracer.sinks.append(self.live.record)
        # The day's spend against `[budget]` (`completion.observe.spend`): past its shares, speculation and then
        # completions stop.
        self.spend = spend
        self.workspace = workspace
        self.gate = gate or Gate()
        self.tiers = tiers
        self._streams = StreamStore()
        self._tickets = Tickets()
        self._asked = 0  # completion requests so far (a warm read waiting for the slot yields to a newer one)
        self._waiting_warm: set[asyncio.Task[None]] = set()
        self.config = config
        self._cache = self._make_cache(config)
        self._debounce = AdaptiveDebounce(ceiling_s=config.completion.debounce_ms / 1000)
        self._budget = budget

    # -- configuration -------------------------------------------------------------------------

    def configure(self, config: Config) -> None:
        """Adopt a configuration (the session calls this on every change)."""
        if (config.cache.max_entries, config.cache.max_bytes) != (
            self.config.cache.max_entries,
            self.config.cache.max_bytes,
        ):
            self._cache = self._make_cache(config)
        self.config = config
        self._debounce.ceiling_s = config.completion.debounce_ms / 1000
        self._debounce.fixed = config.completion.debounce == "fixed"

    @staticmethod
    def _make_cache(config: Config) -> CompletionCache:
        return CompletionCache(max_entries=config.cache.max_entries, max_bytes=config.cache.max_bytes)

    def cache_figures(self) -> dict[str, int]:
        """The completion cache's size against its bounds (for `tandem/health`)."""
        cache = self._cache
        return {"entries": len(cache), "bytes": cache.bytes_used, "max_bytes": cache.max_bytes}

    def live_figures(self) -> LiveFigures:
        """The last minutes in figures, and the prefetch budget left, for the status display."""
        left = max(self._budget.per_minute - self._budget.spent(), 0)
        spent = self.spend.today().values()
        usd = sum(tier["usd"] for tier in spent)
        priced = usd > 0 or any(_priced(self.tiers.get(name)) for name in ("fast", "accurate"))
        return dataclasses.replace(
            self.live.figures(),
            budget_tokens_left=left,
            spend_today_usd=usd if priced else None,
            spend_today_tokens=int(sum(tier["tokens"] for tier in spent)),
        )

    # -- the request path ----------------------------------------------------------------------

    async def complete(self, request: CompletionRequest) -> CompletionResult:
        record = TraceRecord(
            kind=request.kind,
            received_ns=request.received_ns or time.perf_counter_ns(),
            file=request.path.rsplit("/", 1)[-1],
            language=request.language,
            client=request.client,
        )
        self._asked += 1
        with self._tickets.newest(request.uri) as ticket:
            try:
                return await self._complete(request, record, ticket)
            except asyncio.CancelledError:
                # $/cancelRequest: the client no longer wants an answer; record it and let pygls reply. A
                # stream this request started runs on for the next keystrokes: trace it with its usage.
                record.outcome = "cancelled"
                stream = self._streams.get(record.stream_id) if record.source == "model" else None
                if stream is not None:
                    stream.on_done(lambda s: self._trace_stream(record, s))
                else:
                    self.tracer.write(record)
                raise

    async def _complete(self, request: CompletionRequest, record: TraceRecord, ticket: Ticket) -> CompletionResult:
        settings = self.config.completion
        unit_ctx = UnitContext(
            line_before=request.line_before(),
            line_after=request.line_after(),
            multiline=wants_multiline(request.line_before(), request.line_after(), settings.multiline),
            max_lines=settings.max_lines,
            early=self._early_units(),
        )
        record.mode = "multi" if unit_ctx.multiline else "single"
        verdict = self.gate.document(request.uri)
        if not verdict:
            return self._refused(record, verdict.reason)
        self._debounce.keystroke(request.uri, record.received_ns / 1e9)

        # 1. Reuse: a stream or cached completion the user is typing through answers before any debounce.
        reuse = self._find(request, unit_ctx)
        record.mark("cache_lookup")
        # A local model's stream the user typed ahead of may still say what they typed: wait for it.
        ahead = self._ahead(request) if reuse is None else None
        keep = reuse.stream if reuse is not None else ahead
        self._streams.cancel_others(request.uri, keep=keep, keep_prefetch=reuse is not None)
        if ahead is not None:
            reuse = await self._catch_up(request, ahead, ticket)
            if ticket.superseded:
                record.outcome = "superseded"
                self.tracer.write(record)
                return CompletionResult.empty(trace_id=record.id)
            if reuse is None:
                ahead.supersede()
        if reuse is not None:
            record.source = "stream" if reuse.stream is not None else "cache"
            if reuse.stream is not None:
                record.stream_id, record.model = reuse.stream.id, reuse.stream.model
                record.prefetched = reuse.stream.prefetch
            return await self._answer(request, record, ticket, reuse, unit_ctx, deferred=False)

        tier = self.tiers.for_completion()
        if tier is None:
            record.outcome = "not-configured"
            self.tracer.write(record)
            return CompletionResult.empty(notice=NO_MODEL_NOTICE, trace_id=record.id)
        record.model, record.tier = tier.label, tier.name
        record.route_reasons = [f"completion: {self.tiers.stand_in_reason(tier)}"]
        if tier.holding_off():
            # Said in the status (the model is unreachable), not as "no suggestion here".
            record.outcome, record.error = "error", tier.hold_reason()
            self.tracer.write(record)
            return CompletionResult(
                trace_id=record.id,
                waited_ms=(time.perf_counter_ns() - record.received_ns) / 1e6,
                tier=tier.name,
                model=tier.label,
                error=record.error,
            )
        if not self.spend.allows("completion", tier.name):
            record.outcome, record.error = "skipped", "the day's spend reached its [budget] limit"
            self.tracer.write(record)
            return CompletionResult.empty(notice=limit_notice(tier.name), trace_id=record.id)

        # 2. Debounce: only misses wait, and a newer keystroke cancels the wait.
        delay_s = self._debounce.delay_s(local=tier.local)
        if delay_s > 0:
            with ticket.waiting():
                await anyio.sleep(delay_s)
            if ticket.superseded:
                record.outcome = "superseded"
                self.tracer.write(record)
                return CompletionResult.empty(trace_id=record.id)
        record.mark("debounce_end")

        # 3. Context, 4. stream in the background: it outlives this request and serves the next keystrokes.
        if tier.slots is not None:
            # A server that works one request at a time: a stream of a document the user left would hold
            # its slot (reading or generating for a cursor nobody is at) while this request queues.
            self._streams.cancel_elsewhere(request.uri)
        stream = self._start(request, tier, record)
        if stream is None:
            return self._refused(record, record.error)
        return await self._answer(request, record, ticket, _Reuse(stream, 0), unit_ctx, deferred=True)

    def _early_units(self) -> bool:
        tier = self.tiers.for_completion()
        return tier is not None and tier.local and self.config.completion.early_units

    def _refused(self, record: TraceRecord, reason: str) -> CompletionResult:
        """Nothing of this document may be sent (the gate's reason names a rule, never content)."""
        record.outcome, record.error = "refused", reason
        self.tracer.write(record)
        return CompletionResult.empty(trace_id=record.id)

    def _find(self, request: CompletionRequest, unit_ctx: UnitContext) -> _Reuse | None:
        mode = self.config.cache.reuse
        if mode == "off":
            return None
        exact = mode == "exact"
        found = self._streams.find(request, exact=exact)
        if found is not None:
            stream, typed = found
            # A stream that failed part-way serves only units it completed; otherwise ask again.
            if stream.error is None or useful_unit(stream.text[typed:], False, unit_ctx) is not None:
                return _Reuse(stream, typed)
        tier = self.tiers.for_completion()
        if tier is None:
            return None
        hit = self._cache.lookup(
            model=tier.label,
            prefix=request.prefix(self._cache.lookup_prefix_chars),
            suffix=request.suffix(self._cache.suffix_window_chars),
        )
        if hit is None or (exact and hit.typed_chars):
            return None
        return _Reuse(None, hit.typed_chars, hit.text)

    def _ahead(self, request: CompletionRequest) -> Stream | None:
        """A live stream of a local model (`Stream.patient`) that the user has typed ahead of: its text so far
        begins what they typed. Asking again would queue behind it on the one slot and re-read the prompt."""
        found = self._streams.find_ahead(request)
        if found is None or not found[0].patient or self.config.cache.reuse != "typed-through":
            return None
        return found[0]

    async def _catch_up(self, request: CompletionRequest, stream: Stream, ticket: Ticket) -> _Reuse | None:
        """Wait until `stream` reaches past what the user typed (served from it) or says something else
        (None); a newer key ends the wait."""
        with ticket.waiting():
            while not stream.done and stream.typed_ahead(request) is not None:
                await stream.changed()
        typed = stream.typed_through(request)
        return _Reuse(stream, typed) if typed is not None else None

    def _start(
        self, request: CompletionRequest, tier: Tier, record: TraceRecord, *, prefetch: bool = False
    ) -> Stream | None:
        """Build the prompt for `request` and start its model stream in the background; None (the reason in
        `record.error`) when the gate refuses the prompt."""
        if tier.local:
            return self._start_local(request, tier, record, prefetch=prefetch)
        settings = self.config.completion
        window = None
        if self.workspace is not None:
            view = request.document
            if isinstance(view, AfterAccepting):  # the document as it will read: the window is built for it
                window = self.workspace.window(request.uri, view.line, view.character, inserted=view.inserted)
            else:
                window = self.workspace.window(request.uri, request.line, request.character)
        snippet_paths: tuple[str, ...] = ()
        if window is not None:
            prefix, suffix, context = window.prefix, window.suffix, window.snippet_text
            snippet_paths = tuple(dict.fromkeys(s.path for s in window.snippets))
            record.context_tokens = window.total_tokens
            record.prefix_reuse = (
                round(window.reused_prefix_tokens / window.total_tokens, 4) if window.total_tokens else 0.0
            )
        else:
            # No window yet (the tokenizer is loading) or none for this document: a plain character window,
            # which the gate judges like any other prompt.
            prefix, suffix, context = request.prefix(settings.prefix_chars), request.suffix(settings.suffix_chars), ""
        model_request = completion_request(
            tier.config, prefix=prefix, suffix=suffix, context=context, language=request.language, path=request.path
        )
        record.prompt_chars = len(prefix) + len(suffix) + len(context)
        record.mark("context_built")
        verdict = self.gate.admit(Outbound(request=model_request, document=request.uri, snippet_paths=snippet_paths))
        if not verdict:
            log.info("not sent to a model: %s", verdict.reason)
            record.error = verdict.reason
            return None
        stream = self._streams.add(request, tier.label, prefetch=prefetch)
        record.source, record.stream_id = "model", stream.id
        cleaner = answer_cleaner(model_request)
        stream.run(read_into(stream, tier, model_request, remember=self._remember, cleaner=cleaner))
        return stream

    def _start_local(
        self, request: CompletionRequest, tier: Tier, record: TraceRecord, *, prefetch: bool
    ) -> Stream | None:
        """`_start` for a model on this machine: a prompt whose beginning stays the same from key to key
        (`inline.local_prompt`), in the model's own FIM template when one is set, on a patient stream."""
        settings = self.config.completion
        view = request.document
        line, character = view.cursor if isinstance(view, AfterAccepting) else (request.line, request.character)
        window = local_window(
            view, line, character, max_prefix_chars=settings.prefix_chars, max_suffix_chars=settings.suffix_chars
        )
        model_request = completion_request(
            tier.config,
            prefix=window.prefix,
            middle=window.middle,
            suffix=window.suffix,
            language=request.language,
            path=request.path,
        )
        record.prompt_chars = len(model_request.raw_prompt) or len(window.prefix + window.middle + window.suffix)
        record.mark("context_built")
        verdict = self.gate.admit(Outbound(request=model_request, document=request.uri))
        if not verdict:
            log.info("not sent to a model: %s", verdict.reason)
            record.error = verdict.reason
            return None
        stream = self._streams.add(request, tier.label, prefetch=prefetch, patient=True)
        record.source, record.stream_id = "model", stream.id
        cleaner = answer_cleaner(model_request)
        stream.run(read_into(stream, tier, model_request, remember=self._remember, cleaner=cleaner))
        return stream

    async def _answer(
        self,
        request: CompletionRequest,
        record: TraceRecord,
        ticket: Ticket,
        reuse: _Reuse,
        unit_ctx: UnitContext,
        *,
        deferred: bool,
    ) -> CompletionResult:
        """Wait for the first useful unit after `reuse.typed` characters, clean it, answer."""
        stream = reuse.stream
        if stream is None:
            unit = useful_unit(reuse.text, True, unit_ctx)
        else:
            unit = await self._first_unit(stream, reuse.typed, unit_ctx, ticket, record)
        if ticket.superseded:
            record.outcome = "superseded"
        elif unit is None and stream is not None and stream.error is not None and not stream.cancelled:
            record.outcome, record.error = "error", describe(stream.error)
        text = self._clean(request, unit_ctx, unit or "") if not record.outcome else ""
        record.outcome = record.outcome or ("shown" if text else "empty")
        record.chars = len(text)
        record.mark("answered")
        _log_answer(record)
        if record.source == "model" and record.waited_for_model and text:
            asked_ns = record.marks_ns.get("debounce_end", record.received_ns)
            self._debounce.model_answered((time.perf_counter_ns() - asked_ns) / 1e9)
        if deferred and stream is not None:
            # The request that started the stream is traced when the stream ends, with its usage.
            stream.on_done(lambda s: self._trace_stream(record, s))
        else:
            self.tracer.write(record)
        if text:
            self._after_shown(request, reuse, unit or "", text)
        return CompletionResult(
            text=text,
            streaming=stream is not None and not stream.done,
            source=record.source,  # type: ignore[arg-type]
            trace_id=record.id,
            waited_ms=(time.perf_counter_ns() - record.received_ns) / 1e6,
            tier=record.tier or ("cache" if record.source != "model" else ""),
            model=record.model,
            error=record.error,
            stand_in=self._stand_in(record.tier),
        )

    def _stand_in(self, tier_name: str) -> str:
        """Why the accurate model answered a completion while a fast one is configured ("" otherwise)."""
        tier = self.tiers.get(tier_name) if tier_name == "accurate" else None
        if tier is None or self.tiers.get("fast") is None:
            return ""
        return self.tiers.stand_in_reason(tier)

    async def _first_unit(
        self, stream: Stream, typed: int, unit_ctx: UnitContext, ticket: Ticket, record: TraceRecord
    ) -> str | None:
        """The first useful unit of `stream` after the `typed` characters the user typed through, waiting
        for the stream to grow (within the completion's deadline) unless the request is superseded."""
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
                late = f"no answer within {self.config.completion.deadline_s:g} s"
                if stream.patient and not stream.text:
                    # A local server still reading the prompt: what it reads serves the next request.
                    stream.supersede()
                    record.outcome, record.error = "error", late + " (the model is still reading the prompt)"
                else:
                    stream.cancel()
                    stream.finish(BackendTimeout(late))
        return unit

    def _clean(self, request: CompletionRequest, unit_ctx: UnitContext, unit: str) -> str:
        following = request.suffix(400).split("\n")[1 : 1 + _FOLLOWING_LINES]
        around = Surroundings(
            line_before=unit_ctx.line_before,
            line_after=unit_ctx.line_after,
            previous_line=request.document.line_content(request.line - 1) if request.line > 0 else "",
            following=tuple(following),
        )
        return clean(unit, around)

    # -- the completion cache and speculation ---------------------------------------------------

    def _remember(self, stream: Stream) -> None:
        """Keep the stream's text in the completion cache (called as it grows and when it ends). While
        the stream is live it is found through the stream store, so the cache needs its text only at
        line ends (where typing through can reach it from a shifted position) and at the end."""
        if not stream.done and not stream.text.endswith("\n"):
            return
        text = stream.text
        if stream.done and stream.error is not None:
            # A cut-off stream's last line may be partial: keep only whole lines.
            text = text[: text.rfind("\n") + 1]
            if stream.entry_id is not None:
                self._cache.discard(stream.entry_id)
                stream.entry_id = None
        if not text:
            return
        if stream.entry_id is None or not self._cache.extend(stream.entry_id, text):
            stream.entry_id = self._cache.put(
                model=stream.model, prefix=stream.before, suffix=stream.after, completion=text
            )

    def _after_shown(self, request: CompletionRequest, reuse: _Reuse, raw_unit: str, shown: str) -> None:
        """Speculate on the state after the user accepts `shown`, unless the stream already covers it."""
        settings = self.config.prefetch
        if not (settings.enabled and settings.on_shown):
            return
        stream = reuse.stream
        if stream is not None and not stream.done:
            return  # still streaming: what follows the suggestion is on its way
        rest = stream.text[reuse.typed + len(raw_unit) :] if stream is not None else reuse.text[len(raw_unit) :]
        if "\n" in rest.lstrip("\n"):
            return  # a next line is already there
        self.speculate(request, shown)

    def withdrawn(self, kind: str, received_ns: int) -> None:
        """A request the client cancelled before the server had started on it."""
        record = TraceRecord(kind=kind, received_ns=received_ns, outcome="cancelled")
        record.route_reasons = ["withdrawn by the client before the server started it"]
        self.tracer.write(record)

    def accepted(self, trace_id: str, chars: int) -> None:
        """The user accepted `chars` characters of the suggestion answered by request `trace_id`."""
        record = TraceRecord(kind="accept", received_ns=time.perf_counter_ns(), chars=chars, outcome="accepted")
        record.stream_id = trace_id  # the request whose suggestion was accepted
        self.tracer.write(record)

    def warm(self, request: CompletionRequest) -> bool:
        """The cursor rests at `request` before the user types: a model on this machine reads the prompt
        there now (a prefetch stream, yielding to the user's requests), so the file's first key finds it
        read. Not a cloud model: it would be paid for a guess. False when nothing was started (or waits for the
        slot to start)."""
        tier = self.tiers.for_completion()
        if tier is None or not tier.local:
            return False
        reason = "prefetch: the prompt where the cursor rests"
        slots = tier.slots
        if slots is None:
            return self.speculate(request, after_insert=True, reason=reason)
        # The streams of the document the user left would hold the one slot for a cursor nobody is at.
        self._streams.cancel_elsewhere(request.uri)
        if not (slots.busy or slots.waiting):
            return self.speculate(request, after_insert=True, reason=reason)
        asked = self._asked

        async def when_idle() -> None:
            # Read once the slot is free (the stopped requests end), unless the user has asked something
            # meanwhile: their request goes first and says where the cursor is now.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WARM_WAIT_S):
                    await slots.idle()
                    if self._asked == asked:
                        self.speculate(request, after_insert=True, reason=reason)

        task = asyncio.ensure_future(when_idle())
        self._waiting_warm.add(task)
        task.add_done_callback(self._waiting_warm.discard)
        return True

    def speculate(
        self, request: CompletionRequest, accepted: str = "", *, after_insert: bool = False, reason: str = ""
    ) -> bool:
        """Start a prefetch stream for the state after `accepted` is inserted at `request`'s cursor
        (or at the cursor itself; `after_insert`: the document already holds it). False when the budget,
        the concurrency limit or an existing stream says no."""
        settings = self.config.prefetch
        tier = self.tiers.for_completion()
        if not settings.enabled or tier is None or tier.holding_off() or not self.gate.document(request.uri):
            return False
        if sum(1 for s in self._streams.live(request.uri) if s.prefetch) >= settings.max_concurrent:
            return False
        if tier.slots is not None and (tier.slots.busy or tier.slots.waiting):
            return False  # a server that works one request at a time: speculation never queues before the user
        view = AfterAccepting(request.document, request.line, request.character, accepted)
        line, character = view.cursor
        target = CompletionRequest(
            uri=request.uri,
            version=request.version,
            line=line,
            character=character,
            document=request.document if after_insert else view,
            language=request.language,
            path=request.path,
            kind="inline",
            client=request.client,
        )
        if self._covered(target, lambda: self.speculate(request, accepted, after_insert=after_insert, reason=reason)):
            return False
        estimate = (
            self.config.context.budget_tokens
            if self.workspace
            else self.config.completion.prefix_chars // _CHARS_PER_TOKEN
        ) + tier.config.max_tokens
        if not self._budget.allows(estimate):
            log.debug("prefetch skipped: %d tokens this minute", self._budget.spent())
            return False
        if not self.spend.allows("speculation", tier.name):
            log.debug("prefetch skipped: the day's spend is near its [budget] limit")
            return False
        charge = self._budget.charge(estimate)
        record = TraceRecord(
            kind="prefetch",
            received_ns=time.perf_counter_ns(),
            file=request.path.rsplit("/", 1)[-1],
            language=request.language,
            client=request.client,
            model=tier.label,
            tier=tier.name,
        )
        record.route_reasons = [
            reason or ("prefetch: the state after accepting the suggestion" if accepted else "prefetch: new line")
        ]
        stream = self._start(target, tier, record, prefetch=True)
        if stream is None:
            TokenBudget.settle(charge, 0, sent=False)
            self._refused(record, record.error)
            return False
        stream.on_done(lambda s: self._trace_stream(record, s, charge))
        return True

    def _covered(self, target: CompletionRequest, again: Callable[[], object]) -> bool:
        """Whether a stream already has (or may still produce) what follows `target`'s cursor; `again` is
        called if a running one ends without it (a short `max_tokens`, a stop): an accept often comes while
        the suggestion's last tokens are arriving."""
        found = self._streams.find(target)
        if found is None:
            return False
        live, at = found
        if _follows(live, at):
            return True
        if not live.done:

            def ended(stream: Stream) -> None:
                if stream.error is None and not _follows(stream, at):
                    again()

            live.on_done(ended)
            return True
        return False

    def _trace_stream(self, record: TraceRecord, stream: Stream, charge: Charge | None = None) -> None:
        counter = self.workspace.counter if self.workspace is not None else None
        record.stream_ended(stream, count_tokens=counter.count if counter is not None else None)
        if charge is not None:
            TokenBudget.settle(charge, record.tokens_in + record.tokens_out, sent=bool(stream.stats.request_sent_ns))
        tier = self.tiers.get(record.tier) if record.tier else None
        record.cost_usd = estimate_cost_usd(
            tier.config if tier is not None else None,
            tokens_in=record.tokens_in,
            tokens_out=record.tokens_out,
            tokens_cached=record.tokens_cached,
        )
        self.tracer.write(record)

    # -- lifecycle -----------------------------------------------------------------------------

    def document_closed(self, uri: str) -> None:
        self._streams.forget(uri)
        self._debounce.forget(uri)
        self._tickets.close(uri)

    async def aclose(self) -> None:
        """Stop every stream and let each end properly (its trace record is written as it ends)."""
        for waiting in self._waiting_warm:
            waiting.cancel()
        tasks = self._streams.close()
        await asyncio.gather(*tasks, return_exceptions=True)


def _log_answer(record: TraceRecord) -> None:
    log.debug(
        "%s %s %s: %s from %s in %.1f ms, %d chars%s",
        record.id,
        record.kind,
        record.file,
        record.outcome,
        record.source,
        (record.marks_ns["answered"] - record.received_ns) / 1e6,
        record.chars,
        f" ({record.error})" if record.error else "",
    )


def _follows(stream: Stream, at: int) -> bool:
    """Whether `stream` already holds text after its character `at` that will stay. While it runs, an
    unfinished last line does not count: a stream cut by `max_tokens` drops it when it ends."""
    rest = stream.text[at:]
    if not stream.done:
        rest = rest[: rest.rfind("\n") + 1]
    return bool(rest.strip())
