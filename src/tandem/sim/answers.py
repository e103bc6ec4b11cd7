"""What the simulated model answers: the true continuation (truth mode) or labelled filler text.

Every API module turns its request body into one `Ask`; `compose_answer` turns an Ask into an `Answer`
(text cut into token pieces, and why it ended), the same way whichever API asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from tandem.sim.error_model import Attempt, apply_error_model
from tandem.sim.tokens import split_tokens

if TYPE_CHECKING:
    from tandem.sim.truth import TruthIndex

FINISH_STOP = "stop"
FINISH_LENGTH = "length"
LABEL = "tandem sim: simulated text, not a model's answer (start the simulator with --truth for real code)"


@dataclass(frozen=True, kw_only=True)
class Ask:
    """One generation request, whichever API it came through."""

    endpoint: str  # "chat.completions", "completions", ...
    model: str
    prefix: str
    suffix: str
    # All the prompt's text (messages, template markers): what prompt tokens are counted on.
    prompt_text: str
    max_tokens: int
    stop: tuple[str, ...] = ()
    stream: bool = False
    include_usage: bool = False
    had_authorization: bool = False
    # The prompt's content blocks in order, system first, for APIs that cache only what the client marks
    # (Anthropic's `cache_control`): (role, text, marked as a cache breakpoint) each; None where the
    # provider caches automatically.
    cache_blocks: tuple[tuple[str, str, bool], ...] | None = None


@dataclass(frozen=True, kw_only=True)
class Answer:
    """The answer's text as token pieces, and its finish reason ("stop" or "length")."""

    pieces: tuple[str, ...]
    finish_reason: str
    truth_matched: bool | None  # None: no truth files loaded
    corrupted: bool = False

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def compose_answer(ask: Ask, *, truth: TruthIndex | None, profile: str, error_rate: float, seed: int) -> Answer:
    """The simulated model's answer to `ask`."""
    if truth is None:
        return _filler_answer(ask)
    max_chars = max(256, ask.max_tokens * 16)
    while True:
        match = truth.lookup(ask.prefix, ask.suffix, max_chars=max_chars)
        if match is None:
            return Answer(pieces=(), finish_reason=FINISH_STOP, truth_matched=False)
        text, stopped = _cut_at_stop(match.text, ask.stop)
        cut = split_tokens(text, max_tokens=ask.max_tokens)
        # Rare: tokens averaging over 16 characters (long runs of spaces); read further into the file.
        if stopped or cut.truncated or match.complete:
            break
        max_chars *= 4
    finish = FINISH_LENGTH if cut.truncated else FINISH_STOP
    attempt = Attempt(
        prefix=ask.prefix, suffix=ask.suffix, answer=cut.text, profile=profile, base_rate=error_rate, seed=seed
    )
    given, corrupted = apply_error_model(attempt)
    if corrupted:
        recut = split_tokens(given, max_tokens=ask.max_tokens)
        cut = recut
        finish = FINISH_LENGTH if recut.truncated else finish
    return Answer(pieces=cut.pieces, finish_reason=finish, truth_matched=True, corrupted=corrupted)


def _filler_answer(ask: Ask) -> Answer:
    """Labelled comment lines up to `max_tokens` (or a stop string): clearly not code, yet as long as
    asked, so benchmarks can draw large outputs without truth files. Filler never ends by itself."""
    # Tokenising thousands of tokens costs milliseconds, so filler is cut from a cached stock.
    stock = _filler_pieces(*filler_style(ask.prefix), 1 << max(0, ask.max_tokens).bit_length())
    pieces = stock[: ask.max_tokens]
    if ask.stop:
        text, stopped = _cut_at_stop("".join(pieces), ask.stop)
        if stopped:
            return Answer(pieces=split_tokens(text).pieces, finish_reason=FINISH_STOP, truth_matched=None)
    return Answer(pieces=pieces, finish_reason=FINISH_LENGTH, truth_matched=None)


def filler_style(prefix: str) -> tuple[str, str, str]:
    """(comment marker, indentation, indentation still missing on the cursor's line) for filler."""
    current_line = prefix[prefix.rfind("\n") + 1 :]
    indent = _indent_of(prefix)
    # The first line starts at the cursor: indent it only as far as the cursor's line still needs.
    needs_indent = not current_line.strip() and indent.startswith(current_line)
    return _comment_marker(prefix), indent, indent[len(current_line) :] if needs_indent else ""


def filler_text(marker: str, indent: str, first_indent: str, *, min_chars: int) -> str:
    """At least `min_chars` of comment lines, the first one saying that this is simulated; every fifth
    line is blank (so a "\\n\\n" stop ends a block)."""
    lines = [f"{first_indent}{marker} {LABEL}"]
    size = len(lines[0])
    number = 1
    while size < min_chars:
        line = f"{indent}{marker} simulated line {number} of a made-up answer" if number % 5 else ""
        lines.append(line)
        size += len(line) + 1
        number += 1
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=64)
def _filler_pieces(marker: str, indent: str, first_indent: str, tokens: int) -> tuple[str, ...]:
    """At least `tokens` token pieces of filler."""
    min_chars = tokens * 4 + 200
    while True:
        pieces = split_tokens(filler_text(marker, indent, first_indent, min_chars=min_chars)).pieces
        if len(pieces) >= tokens:
            return pieces
        min_chars *= 2


def _comment_marker(prefix: str) -> str:
    tail = prefix[-4000:]
    slashes = tail.count("\n//") + tail.count("\n    //") + tail.count(";\n")
    hashes = tail.count("\n#") + tail.count("\n    #") + tail.count(":\n")
    return "//" if slashes > hashes else "#"


def _indent_of(prefix: str) -> str:
    """The indentation of the last line of `prefix` that has any text."""
    for line in reversed(prefix[-4000:].split("\n")):
        if line.strip():
            return line[: len(line) - len(line.lstrip())]
    return ""


def _cut_at_stop(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    """`text` up to (not including) the earliest stop string, and whether one was found."""
    earliest = -1
    for s in stop:
        if s:
            at = text.find(s)
            if at >= 0 and (earliest < 0 or at < earliest):
                earliest = at
    return (text, False) if earliest < 0 else (text[:earliest], True)
