"""The local profiles' completion mistakes, fitted to the real Qwen2.5-Coder models on this machine.

A small local model gets a completion right token by token, and what it gets right is mostly what the
prompt already shows: a name, a call, an indentation it has seen before. The model here:

    each token piece of the true answer is *seen* if the piece, with the piece before it (CONTEXT_PIECES),
    occurs in the prompt's window (the last WINDOW_PREFIX_CHARS of the prefix, the first WINDOW_SUFFIX_CHARS
    of the suffix), else *new*; the model writes each piece right with chance `seen` or `new` (`TokenRates`), in
    order, and from its first wrong piece on the answer goes wrong (`error_model.corrupt`).

So the chance that a shown suggestion is exactly right is seen^(seen pieces) * new^(new pieces): short
answers and answers the file already spells out are right far more often than long or novel ones, as
with the real model. Fitted by maximum likelihood to the suggestions a real replay showed (`fit_rates`:
every piece up to the first wrong one counts as right, the piece where the suggestion left the true text
as wrong; a suggestion that ran on past the span's end counts as wrong at the end), which is closed-form:
the share of right pieces in each class.

The fit (bench/bench_local_calibrate.py prints it from replay JSON): tuned on the standard-library sample
only, validated on flask without further tuning (README, "Real beside simulated").
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from tandem.sim.tokens import split_tokens

# The part of the prompt a piece is looked for in (a local prompt is ~1,000-2,000 tokens).
WINDOW_PREFIX_CHARS = 4000
WINDOW_SUFFIX_CHARS = 1000
# Pieces before a piece that must come with it for it to count as seen. Chosen on the standard-library fit
# alone, by likelihood: 1 -111.5, 0 -114.4, 2 -115.3, 3 -115.6, 4 -116.4 (one rate for all pieces: -116.4).
CONTEXT_PIECES = 1


@dataclass(frozen=True, kw_only=True)
class TokenRates:
    """The chance that a model writes one piece of the true answer right, by whether the prompt shows it."""

    seen: float
    new: float


# Fitted to the real models' answers on the standard-library sample (see the module docstring and README).
# The 0.5B: 79 answers (67 asked at every 6th character of the replay's six spans, waiting for each, and 12
# shown in a replay at typing speed): 78 of 109 seen pieces right, 32 of 67 new ones. The 1.5B: asked at the
# same 73 places, 44 non-empty answers: 107 of 116 seen pieces right, 39 of 62 new ones (the 0.5B on the
# same places alone: 0.718 and 0.481).
LOCAL_RATES: dict[str, TokenRates] = {
    "llama-0.5b": TokenRates(seen=0.716, new=0.478),
    "llama-1.5b": TokenRates(seen=0.922, new=0.629),
}


def calibrated(profile: str) -> bool:
    """Whether `profile`'s completion mistakes follow this fitted model (else the flat error rate)."""
    return profile in LOCAL_RATES


def window(prefix: str, suffix: str) -> str:
    """The prompt text a piece is looked for in."""
    return prefix[-WINDOW_PREFIX_CHARS:] + "\x00" + suffix[:WINDOW_SUFFIX_CHARS]


def seen_flags(answer: str, prefix: str, suffix: str) -> list[tuple[str, bool]]:
    """The answer's token pieces, each with whether the prompt's window shows it in the same context."""
    shown = window(prefix, suffix)
    before = split_tokens(prefix[-200:]).pieces[-CONTEXT_PIECES:] if CONTEXT_PIECES else ()
    history = list(before)
    flags: list[tuple[str, bool]] = []
    for piece in split_tokens(answer).pieces:
        if not piece:
            continue
        context = "".join(history[-CONTEXT_PIECES:]) + piece
        flags.append((piece, context in shown))
        history.append(piece)
    return flags


def right_chance(answer: str, prefix: str, suffix: str, rates: TokenRates) -> float:
    """The chance that all of `answer` comes out right."""
    chance = 1.0
    for _piece, seen in seen_flags(answer, prefix, suffix):
        chance *= rates.seen if seen else rates.new
    return chance


def first_wrong(answer: str, prefix: str, suffix: str, rates: TokenRates, rng: random.Random) -> int | None:
    """Where (characters into `answer`) the model first goes wrong; None if it writes all of it right."""
    at = 0
    for piece, seen in seen_flags(answer, prefix, suffix):
        if rng.random() >= (rates.seen if seen else rates.new):
            return at
        at += len(piece)
    return None


# -- the fit ------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Observed:
    """One suggestion a real model showed: the text before and after the cursor, what it suggested, and
    what the user typed next (at least as long as the suggestion where the span went on that far)."""

    prefix: str
    suffix: str
    text: str
    truth: str


@dataclass
class Counts:
    """Right and wrong pieces per class, over a set of observed suggestions."""

    seen_right: int = 0
    seen_wrong: int = 0
    new_right: int = 0
    new_wrong: int = 0
    # Suggestions that were right as far as the span went and ran on past its end.
    ran_past_end: int = 0

    def rates(self) -> TokenRates:
        seen_total = self.seen_right + self.seen_wrong
        new_total = self.new_right + self.new_wrong
        return TokenRates(
            seen=self.seen_right / seen_total if seen_total else 1.0,
            new=self.new_right / new_total if new_total else 1.0,
        )


def count_pieces(observed: Iterable[Observed]) -> Counts:
    """Each suggestion read as the model's token-by-token attempt at the true text (module docstring)."""
    counts = Counts()
    for item in observed:
        agree = 0
        limit = min(len(item.text), len(item.truth))
        while agree < limit and item.text[agree] == item.truth[agree]:
            agree += 1
        exact = agree == len(item.text)
        # The true text the model was attempting: all of it if right, else up to the piece it got wrong.
        target = item.text if exact else item.truth
        at = 0
        for piece, seen in seen_flags(target, item.prefix, item.suffix):
            end = at + len(piece)
            wrong = not exact and end > agree
            if seen:
                counts.seen_wrong += wrong
                counts.seen_right += not wrong
            else:
                counts.new_wrong += wrong
                counts.new_right += not wrong
            if wrong:
                break
            at = end
        else:
            if not exact:
                # The truth ran out (the span ended) before the suggestion left it: it did not stop.
                counts.ran_past_end += 1
                counts.new_wrong += 1
    return counts


def fit_rates(observed: Iterable[Observed]) -> TokenRates:
    """The maximum-likelihood rates for these suggestions."""
    return count_pieces(observed).rates()
