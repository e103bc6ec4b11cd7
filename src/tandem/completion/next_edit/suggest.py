"""Next-edit suggestions, top to bottom: `NextEdits.suggest`.

    after an edit? -> prefetched? -> supersede the older request -> the rewrite under way agrees?
    -> pause -> context -> budget -> stream the region's rewrite (in two parts with `split`)
    -> first settled hunk that passes `judge` -> parse check -> still the same version? -> answer
    -> trace (written when the suggestion's fate is known)

The fast model rewrites an editable region around the cursor, shown the user's recent edits as diffs
(`cache.edit_history`) and the usual cross-file snippets (`completion.next_edit.context`); the rewrite is
diffed against the region (`cache.edit_region`) and the first hunk that is not a no-op, not the undoing of
the user's last edit, not outside the region and does not break the file's parse is the suggestion, sent as
soon as that hunk is settled. The rest of the rewrite streams on and answers the keys that follow while it
agrees with them (`completion.next_edit.rebase`; with `rebase = false` it is stopped). A suggestion is
stamped with the document version it was computed for; one whose document moved on is never returned, and
accepting one whose document moved on is refused by `accepted`. Accepting a suggestion starts the next one
at once.

Model calls share the completions' machinery: the tier (retry hold-off, one HTTP client), the stream
type, the speculation token budget, the tracer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import anyio

from tandem.cache.context import MAX_BUDGET_TOKENS
from tandem.cache.edit_history import EditHistory, Lines
from tandem.cache.edit_region import CharEdit, Hunk, LastEdit, Region
from tandem.completion.gate import Gate, Outbound
from tandem.completion.inline.prefetch import Charge, TokenBudget
from tandem.completion.inline.request import Ticket, Tickets
from tandem.completion.inline.streams import Stream, read_into
from tandem.completion.next_edit.context import (
    NextEditContext,
    build_context,
    count_tokens,
    model_request,
    region_max_chars,
    region_span,
)
from tandem.completion.next_edit.hunks import answered_whole, first_hunk, holds
from tandem.completion.next_edit.pause import NextEditPause
from tandem.completion.next_edit.rebase import Generation, agreement, behind, carried, snapshot
from tandem.completion.next_edit.split import first_of, split
from tandem.completion.next_edit.types import NextEditRecord, NextEditRequest, NextEditResult, Suggestion
from tandem.completion.observe.spend import SpendLedger
from tandem.completion.providers.backends.base import ModelRequest
from tandem.completion.providers.errors import describe

if TYPE_CHECKING:
    from tandem.completion.config.tree import Config
    from tandem.completion.observe.trace import Tracer
    from tandem.completion.providers.tiers import Tier, Tiers
    from tandem.completion.workspace import WorkspaceIndex

log = logging.getLogger(__name__)

T = TypeVar("T")

_LINE_TOO_LONG = (
    "the line at the cursor is longer than a next edit can rewrite ({limit} characters: [next_edit] max_tokens"
    " and budget_tokens)"
)


DocumentLookup = Callable[[str], "tuple[int, Lines] | None"]


@dataclass(frozen=True)
class _Plan:
    """A next edit's model requests: (the part of the region each rewrites, the request, its prompt's
    tokens), and what they may cost."""

    asks: list[tuple[Region, ModelRequest, int]]
    cost: int


class NextEdits:
    """One per server. Call from the event loop."""

    def __init__(
        self,
        *,
        tiers: Tiers,
        tracer: Tracer,
        budget: TokenBudget,
        config: Config,
        documents: DocumentLookup,
        history: EditHistory,
        workspace: WorkspaceIndex | None = None,
        spend: SpendLedger | None = None,
    ) -> None:
        self.tiers = tiers
        self.tracer = tracer
        self.budget = budget
        # The day's spend against `[budget]` (`completion.observe.spend`): past its share, next edits stop.
        self.spend = spend
        self.config = config
        self.workspace = workspace
        # What may be sent: the workspace's gate (completion.gate), as for completions and edits.
        self.gate = workspace.gate if workspace is not None else Gate()
        self.history = history
        self._documents = documents
        self._tickets = Tickets()
        # The answered request per document whose fate is not known yet (written when it is).
        self._open_records: dict[str, NextEditRecord] = {}
        self._records: dict[str, NextEditRecord] = {}
        # Requests started when a suggestion was accepted, by document: (version, task).
        self._prefetched: dict[str, tuple[int, asyncio.Task[NextEditResult]]] = {}
        # The version each document was last asked at: a request at the same version is cursor motion.
        self._asked_version: dict[str, int] = {}
        # The latest rewrite asked for, by document: later keys are answered from it while it agrees
        # with them (`completion.next_edit.rebase`).
        self._generations: dict[str, Generation] = {}
        self._last: dict[str, NextEditResult] = {}
        # The ask under way for each document: (its version, its answer), joined by a second ask of that version.
        self._running: dict[str, tuple[int, asyncio.Future[NextEditResult]]] = {}
        # Learns the typing rhythm, and says how long a request waits for a pause in it.
        self._pause = NextEditPause(debounce_ms=config.next_edit.debounce_ms)

    def configure(self, config: Config) -> None:
        """Adopt a configuration (the session calls this on every change)."""
        self.config = config
        self._pause.configure(debounce_ms=config.next_edit.debounce_ms)

    # -- the request path ----------------------------------------------------------------------

    async def suggest(self, request: NextEditRequest) -> NextEditResult:
        prefetched = None if request.prefetch else self._prefetched.pop(request.uri, None)
        if prefetched is not None and prefetched[0] == request.version:
            # Accepting the previous suggestion started this one: no wait beyond what is left of it.
            result = await asyncio.shield(prefetched[1])
            self._asked_version[request.uri] = request.version
            return result
        if prefetched is not None:
            prefetched[1].cancel()
        running = self._running.get(request.uri)
        joined_cancelled = False
        if running is not None and running[0] == request.version and not request.prefetch:
            # The same version is being asked already (VS Code asks for code actions, which offer the next
            # edit, and for the inline edit at the same version): answer with that ask, not "no edit since".
            try:
                return await asyncio.shield(running[1])
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                joined_cancelled = True  # the other ask was cancelled (its client withdrew it): ask anew
        if self._asked_version.get(request.uri) == request.version and not request.prefetch and not joined_cancelled:
            # No edit since the last request: cursor motion alone asks no model.
            last = self._last.get(request.uri)
            if last is not None and last.suggestion is not None and last.suggestion.version == request.version:
                return last
            return NextEditResult(outcome="skipped", reason="no edit since the last request")
        self._asked_version[request.uri] = request.version
        if not request.prefetch:
            self._pause.keystroke(request.uri, (request.received_ns or time.perf_counter_ns()) / 1e9)
        record = NextEditRecord(
            kind="next_edit",
            received_ns=request.received_ns or time.perf_counter_ns(),
            file=request.path.rsplit("/", 1)[-1],
            language=request.language,
            client=request.client,
            prefetched=request.prefetch,
        )
        self._settle(request.uri, "superseded")
        answer: asyncio.Future[NextEditResult] = asyncio.get_running_loop().create_future()
        self._running[request.uri] = (request.version, answer)
        try:
            with self._tickets.newest(request.uri) as ticket:
                try:
                    result = await self._suggest(request, record, ticket)
                except asyncio.CancelledError:
                    record.outcome = "cancelled"
                    self._write(record)
                    raise
            answer.set_result(result)
        finally:
            if not answer.done():
                answer.cancel()
            if self._running.get(request.uri, (0, None))[1] is answer:
                del self._running[request.uri]
        self._last[request.uri] = result
        if result.suggestion is not None:
            self._open_records[request.uri] = record
            self._records[record.id] = record
        else:
            self._write(record)
        return result

    def _write(self, record: NextEditRecord) -> None:
        """Write `record` now, or when its streams have ended (so that it carries their usage)."""
        running = [stream for stream in record.streams if not stream.done]
        if not running:
            self.tracer.write(record)
            return
        left = [len(running)]

        def ended(_: Stream) -> None:
            left[0] -= 1
            if not left[0]:
                self.tracer.write(record)

        for stream in running:
            stream.on_done(ended)

    async def _suggest(self, request: NextEditRequest, record: NextEditRecord, ticket: Ticket) -> NextEditResult:
        settings = self.config.next_edit

        def done(outcome: str, reason: str = "", suggestion: Suggestion | None = None) -> NextEditResult:
            record.outcome = outcome
            if reason:
                record.error = reason
            record.mark("answered")
            return NextEditResult(suggestion=suggestion, trace_id=record.id, outcome=outcome, reason=reason)

        if not settings.enabled:
            return done("skipped", "next edits are off ([next_edit] enabled = false)")
        verdict = self.gate.document(request.uri)
        if not verdict:
            return done("refused", verdict.reason)
        if not self.history.has_edits(request.uri):
            return done("skipped", "no edit in this document yet")
        if region_span(request.document, request.line, settings) is None:
            return done("skipped", _LINE_TOO_LONG.format(limit=region_max_chars(settings)))
        tier = self.tiers.for_completion()
        if tier is None:
            return done("not-configured")
        record.model, record.tier = tier.label, tier.name
        record.route_reasons = [
            "next edit: the fast model rewrites the region around the cursor"
            if tier.name == "fast"
            else f"next edit: {self.tiers.stand_in_reason(tier)}"
        ]
        if tier.holding_off():
            return done("error", tier.hold_reason())
        generation = self._generations.get(request.uri)
        # The rewrite under way, when it is still a model's time from showing whether it agrees with the
        # user's change (`behind`) and this request would ask at once: a new request goes out beside it,
        # and whichever first has a hunk answers (waiting for it, then asking, put both waits in a row).
        hedge: list[tuple[Region, Region, Stream]] = []
        if generation is not None and settings.rebase:
            parts = self._carried(generation, request)
            # Not beside a local server's rewrite: it reads one prompt at a time, so a second request would
            # only queue behind the first (and be cancelled, unread, by the next key).
            ask_beside = not tier.local and (request.prefetch or self._delay_s(request) <= 0)
            if parts and behind(parts) and ask_beside:
                record.rebased_from, record.hedged, hedge = generation.record_id, True, parts
            else:
                rebased = await self._rebase(generation, parts, request, record, ticket)
                if ticket.superseded:
                    return done("superseded")
                if rebased is not None and (rebased[1] is not None or not request.prefetch):
                    return self._answer(request, record, rebased[1], done)
                # The rewrite disagrees with the user's newer text (or, after an accept, has nothing
                # more): a new request, for what the user has now (the record keeps `rebased_from`).
        try:
            return await self._ask(request, record, ticket, tier, done, generation if hedge else None, hedge)
        finally:
            if hedge and generation is not None and self._generations.get(request.uri) is not generation:
                generation.cancel()  # the new request's rewrite replaced it

    async def _ask(
        self,
        request: NextEditRequest,
        record: NextEditRecord,
        ticket: Ticket,
        tier: Tier,
        done: Callable[..., NextEditResult],
        hedged: Generation | None,
        hedge: list[tuple[Region, Region, Stream]],
    ) -> NextEditResult:
        """A new request to the model for the document as it reads now (beside `hedged`'s rewrite, carried
        over as `hedge`, when given): the region's first hunk that may be shown. Its steps are the calls
        below, in order; what stays here is which rewrite remains the one under way once a hunk settles."""
        settings = self.config.next_edit
        if self.spend is not None and not self.spend.allows("next_edit", tier.name):
            return done("skipped", "the day's spend is near its [budget] limit")
        delay_s = 0.0 if request.prefetch else self._delay_s(request)
        delay_s -= (time.perf_counter_ns() - record.received_ns) / 1e9
        if delay_s > 0:
            with ticket.waiting():
                await anyio.sleep(delay_s)
            if ticket.superseded:
                return done("superseded")
        record.mark("debounce_end")

        context = build_context(
            request,
            settings,
            history_of=self.history,
            workspace=self.workspace,
            buffer=self._buffer,
            may_send=lambda uri: bool(self.gate.document(uri)),
        )
        if context is None:
            return done("skipped", _LINE_TOO_LONG.format(limit=region_max_chars(settings)))
        record.history_edits = context.history_edits
        base = snapshot(request.document)
        record.region_lines = len(context.region.lines)
        planned = self._plan(request, record, tier, context)
        if isinstance(planned, tuple):
            return done(*planned)
        asks, cost = planned.asks, planned.cost
        charge = self.budget.charge(cost)
        record.mark("context_built")

        streams, current = self._start(request, record, tier, asks, base, hedged)
        self._trace_usage(
            record, [(stream, tokens) for stream, (_, _, tokens) in zip(streams, asks, strict=True)], charge
        )
        winner = await self._first_settled(request, record, ticket, asks, streams, hedge)
        if winner is not None and winner[0] == "rebased" and hedged is not None:
            # The earlier rewrite agreed and had a hunk first: it stays the rewrite under way.
            record.source = "rebased"
            for stream in streams:
                stream.cancel()
            if self._generations.get(request.uri) is current:
                self._generations[request.uri] = hedged
        found = winner[1] if winner is not None else None
        if ticket.superseded:
            return done("superseded")
        if found is None:
            errors = [stream.error for stream in streams if stream.error is not None and not stream.cancelled]
            if errors and not record.refused:
                return done("error", describe(errors[0]))
        return self._answer(request, record, found, done)

    async def _first_settled(
        self,
        request: NextEditRequest,
        record: NextEditRecord,
        ticket: Ticket,
        asks: list[tuple[Region, ModelRequest, int]],
        streams: list[Stream],
        hedge: list[tuple[Region, Region, Stream]],
    ) -> tuple[str, tuple[Hunk, CharEdit]] | None:
        """The first hunk that settles, tagged with where it came from ("model": these streams; "rebased":
        the earlier rewrite carried over as `hedge`), within the deadline, unless the request is superseded."""
        settings = self.config.next_edit
        searches: list[Awaitable[tuple[str, tuple[Hunk, CharEdit]] | None]] = [
            _tagged("model", self._first_hunk(request, part_region, stream, record))
            for (part_region, _, _), stream in zip(asks, streams, strict=True)
        ]
        if hedge:
            searches.append(_tagged("rebased", self._rebased(hedge, request, record)))
        winner: tuple[str, tuple[Hunk, CharEdit]] | None = None
        try:
            with ticket.waiting():
                try:
                    with anyio.fail_after(settings.deadline_s):
                        winner = await first_of(searches)
                except TimeoutError:
                    record.error = f"no settled edit within {settings.deadline_s:g} s"
        finally:
            if not settings.rebase:
                for stream in streams:
                    stream.cancel()  # the rest of the rewrite is not needed
        return winner

    def _start(
        self,
        request: NextEditRequest,
        record: NextEditRecord,
        tier: Tier,
        asks: list[tuple[Region, ModelRequest, int]],
        base: tuple[str, ...],
        hedged: Generation | None,
    ) -> tuple[list[Stream], Generation]:
        """Start a stream per request, and make them the document's rewrite under way (the one it replaces
        is cancelled, unless it is the earlier rewrite kept beside this one)."""
        streams: list[Stream] = []
        for _, asked, _ in asks:
            stream = Stream(
                uri=request.uri,
                line=request.line,
                character=request.character,
                before="",
                after="",
                model=tier.label,
                patient=tier.local,
            )
            stream.run(read_into(stream, tier, asked, remember=lambda _: None))
            streams.append(stream)
        record.source, record.stream_id, record.streams = "model", streams[0].id, streams
        replaced = self._generations.get(request.uri)
        if replaced is not None and replaced is not hedged:
            replaced.supersede()
        current = self._generations[request.uri] = Generation(
            uri=request.uri,
            version=request.version,
            lines=base,
            parts=[(part_region, stream) for (part_region, _, _), stream in zip(asks, streams, strict=True)],
            record_id=record.id,
        )
        return streams, current

    def _plan(
        self, request: NextEditRequest, record: NextEditRecord, tier: Tier, context: NextEditContext
    ) -> _Plan | tuple[str, str]:
        """The model requests for the region, each admitted by the gate and counted, within the minute's
        speculation budget; or why none is sent (an outcome and its reason)."""
        settings = self.config.next_edit
        region, prompt, sources = context.region, context.prompt, context.sources
        # The whole region in one request, or (`split`) its part from the cursor down and its part above,
        # asked at once: a change below the cursor then settles without the lines above being copied.
        parts = (split(region, prompt, request.line) if settings.split else []) or [(region, prompt)]
        asks: list[tuple[Region, ModelRequest, int]] = []
        for part_region, part_prompt in parts:
            asked = model_request(settings, tier, part_prompt)
            verdict = self.gate.admit(Outbound(request=asked, document=request.uri, snippet_paths=sources))
            if not verdict:
                return "refused", verdict.reason
            text = asked.raw_prompt or "".join(content for _, content in asked.messages)
            record.prompt_chars += len(text)
            asks.append((part_region, asked, count_tokens(self.workspace, text)))
        cost = sum(tokens for _, _, tokens in asks) + len(asks) * settings.max_tokens
        if len(asks) > 1 and not self.budget.allows(cost + self.budget.per_minute // 2):
            # Two parts only while they leave half the minute's speculation budget: otherwise (and under a
            # tight budget) the whole region in one request, so that splitting never costs a suggestion.
            region_request = model_request(settings, tier, prompt)
            text = region_request.raw_prompt or "".join(content for _, content in region_request.messages)
            record.prompt_chars = len(text)
            asks = [(region, region_request, count_tokens(self.workspace, text))]
            cost = asks[0][2] + settings.max_tokens
        record.context_tokens = sum(tokens for _, _, tokens in asks)
        record.parts = len(asks)
        if max(tokens for _, _, tokens in asks) > MAX_BUDGET_TOKENS:
            # The budget is counted in characters; a text that tokenizes densely could still pass the window.
            return "skipped", f"the prompt is over the {MAX_BUDGET_TOKENS:,}-token window"
        if not self.budget.allows(cost):
            return "skipped", "speculation token budget spent for this minute"
        return _Plan(asks=asks, cost=cost)

    def _answer(
        self,
        request: NextEditRequest,
        record: NextEditRecord,
        found: tuple[Hunk, CharEdit] | None,
        done: Callable[..., NextEditResult],
    ) -> NextEditResult:
        if found is None:
            if record.refused:
                return done("rejected", record.refused[0])
            return done("empty", record.error)
        current = self._documents(request.uri)
        if current is None or current[0] != request.version:
            # Computed for a version the user has since changed: never shown over newer text.
            return done("stale", "the document changed while the model worked")
        suggestion = Suggestion(uri=request.uri, version=request.version, edit=found[1], trace_id=record.id)
        record.chars = len(found[1].text)
        return done("answered", suggestion=suggestion)

    def _carried(self, generation: Generation, request: NextEditRequest) -> list[tuple[Region, Region, Stream]]:
        """`generation`'s parts that carry over to the request's text: (the part's region as asked, as it
        reads now, its stream)."""
        parts = []
        for base_region, stream in generation.parts:
            now = carried(generation.lines, base_region, request.document) if stream.error is None else None
            if now is not None:
                parts.append((base_region, now, stream))
        return parts

    async def _rebase(
        self,
        generation: Generation,
        parts: list[tuple[Region, Region, Stream]],
        request: NextEditRequest,
        record: NextEditRecord,
        ticket: Ticket,
    ) -> tuple[str, tuple[Hunk, CharEdit] | None] | None:
        """The first hunk that may be shown of `generation`'s rewrite, carried over to the request's text
        as `parts` (`completion.next_edit.rebase`): (the generation's record id, the hunk or None when it
        has no more), or None when no part of it agrees with what the user has now."""
        if not parts:
            return None
        record.rebased_from = generation.record_id
        agreed: list[bool] = []
        found: tuple[Hunk, CharEdit] | None = None
        with ticket.waiting():
            found = await self._rebased(parts, request, record, agreed)
        if ticket.superseded or not agreed:
            return None
        record.source = "rebased"
        return generation.record_id, found

    async def _rebased(
        self,
        parts: list[tuple[Region, Region, Stream]],
        request: NextEditRequest,
        record: NextEditRecord,
        agreed: list[bool] | None = None,
    ) -> tuple[Hunk, CharEdit] | None:
        """The first hunk of a rewrite carried over as `parts` that agrees with the request's text
        (`agreed` gets an entry for each part found to agree)."""
        agreed = [] if agreed is None else agreed
        return await first_of(
            [self._rebased_hunk(request, record, base, now, stream, agreed) for base, now, stream in parts]
        )

    async def _rebased_hunk(
        self,
        request: NextEditRequest,
        record: NextEditRecord,
        base: Region,
        now: Region,
        stream: Stream,
        agreed: list[bool],
    ) -> tuple[Hunk, CharEdit] | None:
        """One part of a rewrite carried over: once it is known to agree (`agreed` gets an entry), its first
        hunk that may be shown; None when it disagrees, fails or has none."""
        while True:
            if stream.error is not None:
                return None  # stopped or failed: what it streamed is not the whole rewrite
            verdict = agreement(base, now, stream.text, done=answered_whole(stream))
            if verdict is False:
                return None
            if verdict:
                break
            await stream.changed()
        if not agreed:
            record.mark("debounce_end")
        agreed.append(True)
        found = await self._first_hunk(request, now, stream, record)
        return found if stream.error is None or not stream.done else None

    async def _first_hunk(
        self, request: NextEditRequest, region: Region, stream: Stream, record: NextEditRecord
    ) -> tuple[Hunk, CharEdit] | None:
        last_edit = self.history.last(request.uri, request.document)
        last = LastEdit(last_edit.start, last_edit.old, last_edit.new) if last_edit is not None else None

        earlier = record.hunks  # judged in the other part of a split region

        def judged(count: int) -> None:
            record.hunks = max(record.hunks, earlier + count)

        def waited() -> None:
            record.waited_for_model = True

        found = await first_hunk(
            document=request.document,
            path=request.path,
            region=region,
            stream=stream,
            last=last,
            refused=record.refused,
            distinct=self.config.next_edit.settle == "distinct-line",
            judged=judged,
            waited=waited,
        )
        if found is not None:
            record.mark("first_line")
        return found

    def _delay_s(self, request: NextEditRequest) -> float:
        return self._pause.delay_s(request, self.config.next_edit, self.budget)

    def _buffer(self, uri: str) -> Lines | None:
        found = self._documents(uri)
        return found[1] if found is not None else None

    # -- what became of a suggestion ---------------------------------------------------------------

    def stale(self, path: str, client: str, received_ns: int) -> None:
        """A request for a version the document has already left (the user typed on before the server
        read it): nothing is asked, and it is traced."""
        record = NextEditRecord(
            kind="next_edit", received_ns=received_ns, file=path.rsplit("/", 1)[-1], client=client, outcome="stale"
        )
        record.error = "the request's version is not the document's"
        self.tracer.write(record)

    async def for_version(self, uri: str, version: int) -> Suggestion | None:
        """The suggestion made for `version` of `uri`, if any; one still being made after an accept is
        waited for (without asking anything new)."""
        prefetched = self._prefetched.get(uri)
        if prefetched is not None and prefetched[0] == version:
            return (await asyncio.shield(prefetched[1])).suggestion
        current = self.current(uri)
        return current if current is not None and current.version == version else None

    def current(self, uri: str) -> Suggestion | None:
        """The document's latest suggestion (whatever its version)."""
        last = self._last.get(uri)
        return last.suggestion if last is not None else None

    def shown(self, trace_id: str) -> None:
        record = self._records.get(trace_id)
        if record is not None:
            record.shown = True

    def dismissed(self, trace_id: str) -> None:
        record = self._records.get(trace_id)
        if record is not None:
            self._write_fate(record, "dismissed")

    def accepted(self, trace_id: str, uri: str, *, version: int, cursor: tuple[int, int]) -> bool:
        """The user accepted suggestion `trace_id`, and the document is now at `version` with the cursor
        at `cursor`. False (and traced as stale) when the suggestion was not for the version before."""
        record = self._records.get(trace_id)
        last = self._last.get(uri)
        suggestion = last.suggestion if last is not None else None
        current = self._documents(uri)
        fresh = (
            suggestion is not None
            and suggestion.trace_id == trace_id
            and current is not None
            and current[0] > suggestion.version
            and holds(current[1], suggestion.edit)
        )
        if record is not None:
            self._write_fate(record, "accepted" if fresh else "stale")
        if not fresh or current is None or not self.config.next_edit.prefetch_on_accept:
            return fresh
        self._prefetch(uri, current, cursor)
        return True

    def _prefetch(self, uri: str, current: tuple[int, Lines], cursor: tuple[int, int]) -> None:
        version, buffer = current
        old = self._prefetched.pop(uri, None)
        if old is not None:
            old[1].cancel()
        request = NextEditRequest(
            uri=uri,
            version=version,
            line=cursor[0],
            character=cursor[1],
            document=buffer,
            path=uri.removeprefix("file://"),
            received_ns=time.perf_counter_ns(),
            prefetch=True,
        )
        task = asyncio.ensure_future(self.suggest(request))
        # A prefetch nobody asks for still ends (and is traced) on its own; its failure is only logged.
        task.add_done_callback(_log_failure)
        self._prefetched[uri] = (version, task)

    def _write_fate(self, record: NextEditRecord, fate: str) -> None:
        if record.fate:
            return
        record.fate = fate
        self._records.pop(record.id, None)
        for uri, open_record in list(self._open_records.items()):
            if open_record is record:
                del self._open_records[uri]
        self._write(record)

    def _settle(self, uri: str, fate: str) -> None:
        record = self._open_records.pop(uri, None)
        if record is not None:
            self._write_fate(record, fate)

    # -- lifecycle ---------------------------------------------------------------------------------

    def _trace_usage(self, record: NextEditRecord, streams: list[tuple[Stream, int]], charge: Charge) -> None:
        """Fill in `record` from its streams once all have ended: the phases from the first (the part
        nearest the cursor), the tokens of all of them (and settle the budget's `charge` to them).
        `streams`: each with its prompt's token count."""
        counter = self.workspace.counter if self.workspace is not None else None
        count = counter.count if counter is not None else None
        left = [len(streams)]

        def ended(_: Stream) -> None:
            left[0] -= 1
            if left[0]:
                return
            context_tokens = record.context_tokens
            record.context_tokens = streams[0][1]
            record.stream_ended(streams[0][0], count_tokens=count)
            for stream, tokens in streams[1:]:
                part = NextEditRecord(kind="next_edit", received_ns=record.received_ns, context_tokens=tokens)
                part.stream_ended(stream, count_tokens=count)
                record.tokens_in += part.tokens_in
                record.tokens_out += part.tokens_out
                record.tokens_cached += part.tokens_cached
                record.tokens_estimated = record.tokens_estimated or part.tokens_estimated
            record.context_tokens = context_tokens
            sent = any(stream.stats.request_sent_ns for stream, _ in streams)
            TokenBudget.settle(charge, record.tokens_in + record.tokens_out, sent=sent)

        for stream, _ in streams:
            stream.on_done(ended)

    def document_closed(self, uri: str) -> None:
        self._settle(uri, "")
        generation = self._generations.pop(uri, None)
        if generation is not None:
            generation.cancel()
        self._asked_version.pop(uri, None)
        self._last.pop(uri, None)
        prefetched = self._prefetched.pop(uri, None)
        if prefetched is not None:
            prefetched[1].cancel()
        self._tickets.close(uri)

    async def aclose(self) -> None:
        for generation in self._generations.values():
            generation.cancel()
        self._generations.clear()
        for _, task in self._prefetched.values():
            task.cancel()
        for _, task in list(self._prefetched.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._prefetched.clear()
        for uri in list(self._open_records):
            self._settle(uri, "")


async def _tagged(tag: str, search: Awaitable[T | None]) -> tuple[str, T] | None:
    """`search`'s result with `tag`, so that `first_of` tells which search answered."""
    found = await search
    return (tag, found) if found is not None else None


def _log_failure(task: asyncio.Task[NextEditResult]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("next-edit prefetch failed: %r", task.exception())
