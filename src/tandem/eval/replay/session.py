"""One replay session: open a file with a span removed and type the span back, as a person in VS Code would.

Each key press is an incremental didChange followed by an inline completion request. Between key presses
the typist pauses (`keystrokes.Rhythm`); a suggestion that arrives during the pause is shown, and if it is
exactly what the typist would type next, the next key press is Tab instead: the whole suggestion is
inserted (one didChange, as accepting ghost text does). A suggestion that only partly matches is ignored.
A request still unanswered when the next key is pressed is withdrawn with `$/cancelRequest`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tandem.eval.replay.keystrokes import Rhythm, key_presses, next_key

if TYPE_CHECKING:
    from lsprotocol import types

    from tandem.eval.replay.client import Pending, ReplayClient
    from tandem.eval.replay.sources import Task

# After the last key, how long to wait for the last request's answer before withdrawing it.
_LAST_ANSWER_WAIT_S = 2.0
# How long a patient typist waits for an answer before typing on regardless.
_PATIENT_WAIT_S = 10.0
# Characters of the true text after the cursor kept beside each shown suggestion, past its own length.
_TRUTH_MARGIN_CHARS = 80


@dataclass(frozen=True, kw_only=True)
class Shown:
    """One suggestion the typist saw, beside what the typist was about to type: what the simulator's error
    model is fitted to (`tandem.sim.error_model`)."""

    file: str
    span_start: int  # where the span starts in the file
    span_end: int
    at: int  # characters of the span typed when it was shown
    text: str  # the suggestion
    truth: str  # the span's text from `at`, the suggestion's length and a margin long
    accepted: bool  # the suggestion is exactly what came next (the typist took it)

    def to_json(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in ("file", "span_start", "span_end", "at", "text", "truth", "accepted")}


@dataclass
class Tally:
    """What the client saw over a whole replay."""

    sessions: int = 0
    # Characters in all the spans the replay set out to type.
    planned_chars: int = 0
    requests: int = 0
    answered: int = 0  # responses received for requests the client had not withdrawn
    cancelled: int = 0  # requests withdrawn with $/cancelRequest
    errors: int = 0  # error responses other than to a withdrawn request
    shown: int = 0  # answered with a suggestion
    accepted: int = 0
    accepted_chars: int = 0
    # Accept commands of accepted items sent to the server (workspace/executeCommand), as VS Code runs them.
    commands: int = 0
    command_errors: list[str] = field(default_factory=list)
    typed_chars: int = 0
    key_presses: int = 0
    # Key presses the typed text would have taken with no suggestions at all.
    key_presses_unassisted: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    shown_log: list[Shown] = field(default_factory=list)


Progress = Callable[[Tally], None]


def _settle(pending: Pending, tally: Tally) -> tuple[str, types.Command | None]:
    """Account for an answered request; the suggestion it shows ('' for none) and its accept command."""
    if pending.future.exception() is not None:
        tally.errors += 1
        return "", None
    tally.answered += 1
    tally.latencies_ms.append(pending.latency_ms)
    text, command = pending.suggestion()
    if text:
        tally.shown += 1
    return text, command


async def type_span(
    client: ReplayClient,
    task: Task,
    *,
    rhythm: Rhythm,
    rng: random.Random,
    tally: Tally,
    stop_at: float | None = None,
    patient: bool = False,
    progress: Progress | None = None,
    warm_s: float = 0.0,
    rest_s: float = 0.0,
    rest_warm: bool = True,
) -> bool:
    """Type `task.span` back into its file; False if `stop_at` (event-loop time) came first. A `patient`
    typist waits for each answer before pausing for the next key, so no request races the model."""
    loop = asyncio.get_running_loop()
    document = client.open(uri=task.uri, language_id=task.language_id, text=task.opened_text, cursor=task.start)
    span = task.span
    at = 0
    previous = "\n"
    pending: Pending | None = None
    if rest_s > 0:
        # The user looks at the file with the cursor where they will type; the editor says where it rests.
        if rest_warm:
            client.notify(
                "tandem/warm",
                {"textDocument": {"uri": document.uri}, "position": _position(document.position())},
            )
        await asyncio.sleep(rest_s)  # sleep-ok: the user's rest before typing, what this option measures
    if warm_s > 0:
        # The user opens the file and reads it before typing: one completion at the cursor, waited for (up
        # to `warm_s`) and not counted among the keys; a local model reads the file's prompt meanwhile.
        first = client.request_inline(document)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(first.answered.wait(), warm_s)
        if not first.answered.is_set():
            client.cancel(first)
    while at < len(span):
        if stop_at is not None and loop.time() >= stop_at:
            break
        if patient and pending is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(pending.answered.wait(), _PATIENT_WAIT_S)
        due = loop.time() + rhythm.pause_s(rng, previous)
        if pending is not None and not pending.answered.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(pending.answered.wait(), max(0.0, due - loop.time()))
        if (remaining := due - loop.time()) > 0:
            await asyncio.sleep(remaining)  # sleep-ok: the typist's pause between key presses
        client.check_alive()
        suggestion, command = "", None
        if pending is not None:
            if pending.answered.is_set():
                suggestion, command = _settle(pending, tally)
            else:
                client.cancel(pending)
                tally.cancelled += 1
        accepting = bool(suggestion) and span.startswith(suggestion, at)
        if suggestion:
            tally.shown_log.append(
                Shown(
                    file=str(task.path),
                    span_start=task.start,
                    span_end=task.end,
                    at=at,
                    text=suggestion,
                    truth=span[at : at + len(suggestion) + _TRUTH_MARGIN_CHARS],
                    accepted=accepting,
                )
            )
        if accepting:
            inserted = suggestion
            tally.accepted += 1
            tally.accepted_chars += len(inserted)
        else:
            inserted = next_key(span, at)
            tally.typed_chars += len(inserted)
        client.insert(document, inserted)
        if accepting and client.run_command(command, on_error=tally.command_errors.append):
            tally.commands += 1
        tally.key_presses += 1
        at += len(inserted)
        previous = inserted
        pending = client.request_inline(document)
        tally.requests += 1
        if progress is not None:
            progress(tally)
    if pending is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(pending.answered.wait(), _LAST_ANSWER_WAIT_S)
        if pending.answered.is_set():
            _settle(pending, tally)
        else:
            client.cancel(pending)
            tally.cancelled += 1
    client.close(document)
    tally.sessions += 1
    tally.key_presses_unassisted += key_presses(span[:at])
    return at >= len(span)


def _position(at: types.Position) -> dict[str, int]:
    return {"line": at.line, "character": at.character}
