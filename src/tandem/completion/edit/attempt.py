"""One model's try at an edit (`ask_model`): ask, stream through the gate, check the answer, account for it.

Every plan (`escalation`, `hedged`, `draft_check`) asks its models through here: the edit's conversation as
one `ModelRequest`, `Gate.admit` just before it is sent, the tier's one read path (`Tier.reading`, its hold-off
and breaker), progress every few hundred characters, then the answer checked in a worker thread
(`checks.check_answer`: parse, validate, rebase). What every attempt of one edit shares is an `Ask`; what a
plan needs of the flow is `Asking` (`flow.EditFlow` is one).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import anyio

from tandem.cache.tokens import EncodingUnavailable, get_counter
from tandem.completion.config.tree import Config
from tandem.completion.edit.answer import CheckedEdit
from tandem.completion.edit.checks import check_answer
from tandem.completion.edit.file_edits import AnswerParseError, EditConflict, EditError, FileEdit
from tandem.completion.edit.parse import EditTarget
from tandem.completion.edit.types import (
    Attempt,
    AttemptOutcome,
    EditInputs,
    EditProgress,
    EditRequest,
    ModelSource,
    ModelTier,
    ProgressSink,
)
from tandem.completion.gate import Gate, Outbound
from tandem.completion.observe.trace import EditTraceRecord, estimate_cost_usd
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.errors import (
    BackendTimeout,
    BackendUnavailable,
    CompletionError,
    NotConfigured,
    NotSent,
    describe,
)
from tandem.completion.routing.router import RouteDecision, Tier

# Progress is reported at most every this many characters of answer (a report per token floods the client).
_PROGRESS_EVERY_CHARS = 400

# An attempt's usable answer: (edits, the texts they apply to, whether they were rebased).
Checked = tuple[tuple[FileEdit, ...], Mapping[str, str], bool]


@dataclass(frozen=True, kw_only=True)
class Ask:
    """What every attempt of one edit shares."""

    messages: tuple[tuple[str, str], ...]
    target: EditTarget
    request: EditRequest
    decision: RouteDecision
    inputs: EditInputs
    record: EditTraceRecord
    progress: ProgressSink
    deadline_s: float
    started_ns: int


class Asking(Protocol):
    """What a plan needs of the flow: the configured models, one attempt, and telling the user once."""

    @property
    def models(self) -> ModelSource: ...

    async def attempt(
        self, tier_name: Tier, tier: ModelTier, ask: Ask, *, cancel: anyio.CancelScope | None = None
    ) -> tuple[Attempt, Checked | None]: ...

    def tell_once(self, tier: Tier, why: str) -> list[str]: ...


def other_tier(tier: Tier) -> Tier:
    return "accurate" if tier == "fast" else "fast"


class Cancelled(CompletionError):
    """A hedged attempt stopped because the other answer was used."""


def classify(error: CompletionError) -> AttemptOutcome:
    if isinstance(error, Cancelled):
        return "cancelled"
    if isinstance(error, EditConflict):
        return "conflict"
    if isinstance(error, AnswerParseError):
        return "unparsable"
    if isinstance(error, EditError):
        return "invalid"
    if isinstance(error, BackendUnavailable | NotConfigured):
        return "unavailable"
    if isinstance(error, BackendTimeout):
        return "timeout"
    if isinstance(error, NotSent):
        return "refused"
    return "failed"


async def ask_model(
    tier_name: Tier,
    tier: ModelTier,
    ask: Ask,
    *,
    config: Config,
    gate: Gate,
    cancel: anyio.CancelScope | None = None,
) -> tuple[Attempt, Checked | None]:
    """Ask `tier`, then check its answer; (what happened, (edits, current texts, rebased) or None).
    `cancel`, when cancelled, stops the attempt wherever it is (a hedged accurate answer no longer
    needed): it then ends as "cancelled", with the tokens spent until then."""
    record, progress = ask.record, ask.progress
    model_request = _model_request(ask, tier, config)
    stats = StreamStats()
    parts: list[str] = []
    started_ns = time.perf_counter_ns()
    # Short enough for a status bar: the route's reasons were the report before this one.
    where = f"{tier_name} model ({tier.config.model or tier.label})"
    progress(EditProgress(message=f"{where}: asking", tier=tier_name))
    error: CompletionError | None = None
    checked = None
    changed = 0
    scope = cancel or anyio.CancelScope()
    with scope:
        error = await _stream(tier_name, tier, model_request, stats, parts, ask, where, config=config, gate=gate)
        if error is None:
            progress(EditProgress(message=f"{where}: checking the answer", tier=tier_name))
            try:
                result, current = await check("".join(parts), tier_name, ask)
            except CompletionError as exc:
                error = exc
            else:
                changed = result.validation.changed_lines
                checked = (result.edits, dict(current), result.rebased)
    estimated = False
    if scope.cancelled_caught:
        error, checked = Cancelled("not needed: the fast answer passed its checks"), None
        if not stats.usage.input_tokens and not stats.usage.output_tokens:
            stats.usage.input_tokens, stats.usage.output_tokens = await count_tokens(
                config.context.encoding, ask.messages, parts
            )
            estimated = True
    answer = "".join(parts)
    account(record, stats, tier, answer_chars=None if estimated else len(answer))
    attempt = Attempt(
        tier=tier_name,
        model=tier.label,
        outcome="ok" if error is None else classify(error),
        error="" if error is None else str(error) or describe(error),
        answer_chars=len(answer),
        changed_lines=changed,
        elapsed_ms=round((time.perf_counter_ns() - started_ns) / 1e6, 3),
        started_ms=round((started_ns - ask.started_ns) / 1e6, 3),
        tokens_in=stats.usage.input_tokens,
        tokens_out=stats.usage.output_tokens,
        tokens_estimated=estimated,
        transport=stats.transport if stats.request_sent_ns else "",
        connection_reused=stats.connection_reused if stats.request_sent_ns else False,
        continuation=stats.continuation if stats.request_sent_ns else "",
        answer=answer,
    )
    return attempt, checked


def _model_request(ask: Ask, tier: ModelTier, config: Config) -> ModelRequest:
    """The edit's conversation, as one model request of `tier`."""
    request = ask.request
    return ModelRequest(
        prefix="",
        suffix="",
        language=request.language,
        path=request.path,
        max_tokens=config.edit.max_tokens,
        temperature=tier.config.temperature,
        instruction=request.instruction,
        messages=ask.messages,
    )


async def _stream(
    tier_name: Tier,
    tier: ModelTier,
    model_request: ModelRequest,
    stats: StreamStats,
    parts: list[str],
    ask: Ask,
    where: str,
    *,
    config: Config,
    gate: Gate,
) -> CompletionError | None:
    """Stream `tier`'s answer into `parts` through the tier's one read path (`Tier.reading`: its hold-off and
    breaker, as for completions), reporting progress; the error that ended it, if any."""
    received = reported = 0

    def take(chunk: str) -> None:
        nonlocal received, reported
        parts.append(chunk)
        received += len(chunk)
        if received - reported >= _PROGRESS_EVERY_CHARS:
            reported = received
            lines = sum(part.count("\n") for part in parts)
            ask.progress(EditProgress(message=f"{where}: {lines} lines received", tier=tier_name))

    outbound = Outbound(request=model_request, document=ask.request.uri, files=ask.target.originals)
    verdict = gate.admit(outbound)
    if not verdict:
        return NotSent(verdict.reason)
    async with tier.reading(model_request, stats, limit_s=max(0.0, ask.deadline_s - time.monotonic())) as reading:
        async for chunk in reading:
            take(chunk)
    end = reading.end
    assert end is not None
    if end.timed_out:
        return BackendTimeout(f"no complete answer within {config.edit.deadline_s:g} s")
    return end.error


async def check(answer: str, tier_name: Tier, ask: Ask) -> tuple[CheckedEdit, Mapping[str, str]]:
    predicted = ask.decision.features.expected_lines()
    return await check_answer(answer, ask.target, ask.inputs, fast=tier_name == "fast", predicted_lines=predicted)


async def count_tokens(encoding: str, messages: tuple[tuple[str, str], ...], parts: list[str]) -> tuple[int, int]:
    """(prompt tokens, answer tokens so far) counted here, for a stream cut before its usage arrived."""
    prompt = "".join(content for _, content in messages)
    answer = "".join(parts)

    def count() -> tuple[int, int]:
        # In the worker thread: the first call loads the encoding (a second or more), off the loop.
        try:
            counter = get_counter(encoding)
        except EncodingUnavailable:
            return len(prompt) // 4, len(answer) // 4
        return counter.count(prompt), counter.count(answer)

    return await anyio.to_thread.run_sync(count)


def account(record: EditTraceRecord, stats: StreamStats, tier: ModelTier, *, answer_chars: int | None) -> None:
    """One attempt's phases, tokens, transport and cost, added to the edit's trace record."""
    record.mark("request_sent", stats.request_sent_ns)
    record.mark("first_token", stats.first_token_ns)
    record.mark("answered")
    record.tokens_in += stats.usage.input_tokens
    record.tokens_out += stats.usage.output_tokens
    record.tokens_cached += stats.usage.cached_tokens
    if stats.request_sent_ns:
        # How the (last) model request travelled, as completions' records say it.
        record.transport, record.connection_reused = stats.transport, stats.connection_reused
        record.continuation = stats.continuation
        record.bytes_sent += stats.bytes_sent
    record.cost_usd += estimate_cost_usd(
        tier.config,
        tokens_in=stats.usage.input_tokens,
        tokens_out=stats.usage.output_tokens,
        tokens_cached=stats.usage.cached_tokens,
    )
    if answer_chars is not None:
        record.chars = answer_chars
