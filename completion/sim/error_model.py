"""The simulated model's mistakes: when it errs, and what its wrong text looks like.

Reproducible: the dice are seeded from a hash of the prompt (and the simulator's seed), so the same
request always gets the same answer, right or wrong. Today the chance of a mistake is one flat rate;
`mistake_probability` is the one function to replace for a difficulty-dependent model (the fast profile
erring more on large and cross-file edits).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"\b\d+\b")
# Used when the prompt offers too few names to swap in.
_FALLBACK_NAMES = ("value", "result", "data", "item", "index", "count", "node", "tmp", "other", "key")


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One answer the simulated model is about to give, and what it was asked."""

    prefix: str
    suffix: str
    answer: str
    profile: str
    base_rate: float
    seed: int


def rng_for(attempt: Attempt) -> random.Random:
    """A random generator determined by the prompt and the seed."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(str(attempt.seed).encode())
    digest.update(b"\x00")
    digest.update(attempt.prefix.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(attempt.suffix.encode("utf-8", "surrogatepass"))
    return random.Random(int.from_bytes(digest.digest(), "big"))


def mistake_probability(attempt: Attempt) -> float:
    """The chance that this answer is wrong. Flat for now: the configured rate."""
    return attempt.base_rate


def apply_error_model(attempt: Attempt) -> tuple[str, bool]:
    """The answer as the simulated model gives it, and whether it was corrupted."""
    if not attempt.answer or attempt.base_rate <= 0:
        return attempt.answer, False
    rng = rng_for(attempt)
    if rng.random() >= mistake_probability(attempt):
        return attempt.answer, False
    return corrupt(attempt.answer, prefix=attempt.prefix, rng=rng), True


def corrupt(answer: str, *, prefix: str, rng: random.Random) -> str:
    """`answer` with everything from some point on made plausibly wrong: names swapped for other
    names from the prompt, numbers changed. The first part stays right, as a model's would."""
    start = rng.randrange(0, max(1, (len(answer) * 2) // 3))
    # Begin at a word boundary, so the mistake reads like a model's and not like a cut string.
    while 0 < start < len(answer) and (answer[start - 1].isalnum() or answer[start - 1] == "_"):
        start -= 1
    head, tail = answer[:start], answer[start:]
    vocabulary: list[str] = sorted(set(_IDENTIFIER.findall(prefix[-4000:]))) or list(_FALLBACK_NAMES)
    swapped_any = False

    def swap_name(match: re.Match[str]) -> str:
        nonlocal swapped_any
        word = match.group(0)
        if swapped_any and rng.random() < 0.5:
            return word
        choices = [w for w in vocabulary if w != word] or [w for w in _FALLBACK_NAMES if w != word]
        swapped_any = True
        return rng.choice(choices)

    def bump_number(match: re.Match[str]) -> str:
        return str(int(match.group(0)) + rng.randint(1, 9))

    wrong = _NUMBER.sub(bump_number, _IDENTIFIER.sub(swap_name, tail))
    if wrong == tail:
        # Nothing to swap (punctuation or blank text only): a model that errs here writes a stray name.
        wrong = rng.choice(vocabulary) + tail
    return head + wrong
