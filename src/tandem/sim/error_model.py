"""The simulated model's mistakes: when it errs, and what its wrong answers look like. All simulated.

Completions (a hole to fill): a flat `error_rate` chance (the simulator's setting); `Attempt.difficulty_scaled`
also scales it by the answer's length and the profile's tier. A wrong completion goes plausibly wrong part
way through (names swapped for other names of the prompt, numbers changed). The local profiles
(`llama-0.5b`, `llama-1.5b`) instead follow `tandem.sim.local_errors`, fitted to the real Qwen2.5-Coder
models: token by token, with what the prompt already shows far likelier right than what it does not, and
the answer wrong from the first wrong token on; there `error_rate` only switches mistakes off (0) or on.

Edits (an edit prompt answered with SEARCH/REPLACE blocks, see `tandem.sim.edits`): the chance of a
wrong answer depends on the tier and on the difficulty of the *true* edit (`EditDifficulty`):

    logit P(right) = BASE_LOGIT[tier] - SIZE_SLOPE * log2(1 + changed_lines / 8)
                                      - FILE_SLOPE * log2(files)
                                      - STEP_SLOPE[tier] * max(0, hunks - STEP_LIMIT)

Calibration (published figures; the model is fitted to them, `calibration_rows` prints fit beside target):

    Terminal-Bench 2.0: GPT-5.3-Codex-Spark (fast, distilled) 58.4% vs GPT-5.3-Codex 77.3%
        -> the fast tier is a constant 0.886 log-odds behind (logit .773 - logit .584), and the accurate
           tier scores 77.3% at REFERENCE (a 60-line, 3-file, 4-hunk edit, our stand-in for a TB2 task)
    SWE-bench Verified (Ganhotra 2025): systems at ~50% overall resolve 8-25% of the multi-file tasks
        (~56% of single-file ones) -> FILE_SLOPE: 56% at 12 lines / 1 file becomes ~24% at 30 lines / 2.5 files
    SWE-Bench Pro (Deng et al. 2025): 107.4 lines over 4.1 files on average vs 11.6 lines / ~1.2 files in
        Verified; GPT-5 74.9% on Verified, 23.3% on Pro -> SIZE_SLOPE and FILE_SLOPE together: -2.29 log-odds
    The fast model "degrades after 6-8 steps" (the issue's figure; no primary source found): each hunk (a
        separate place that changes) past 6 costs the fast tier STEP_SLOPE log-odds; the accurate tier none.

What a wrong edit looks like (`Mistake`), drawn with tier-dependent weights: an assumption, following the
failure analysis of SWE-Bench Pro qualitatively (frontier models fail mostly on semantics and multi-file
coordination, smaller ones more on syntax and format). Some mistakes break syntax (validation can catch
them and escalate), some parse but are wrong (a file or hunk left out, a change in the wrong place, a wrong
name or number), some are far larger than needed (the whole file re-indented); `tandem.sim.edit_mistakes`
makes them.

Reproducible: every draw is seeded from the simulator's seed and a hash of the prompt (edits also from the
profile and the attempt number), so the same request always gets the same answer, right or wrong.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from tandem.sim.local_errors import LOCAL_RATES, calibrated, first_wrong

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"\b\d+\b")
# Used when the prompt offers too few names to swap in.
_FALLBACK_NAMES = ("value", "result", "data", "item", "index", "count", "node", "tmp", "other", "key")

Tier = Literal["fast", "accurate"]
# Profiles that stand in for the accurate tier; every other profile (spark, instant) is the fast one.
ACCURATE_PROFILES = frozenset({"codex"})

# -- the calibration ----------------------------------------------------------------------------------


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


SIZE_SLOPE = 0.35  # log-odds per doubling of (1 + changed_lines / 8)
FILE_SLOPE = 0.8  # log-odds per doubling of the number of files
STEP_LIMIT = 6  # hunks the fast tier handles before it degrades
STEP_SLOPE: dict[Tier, float] = {"fast": 0.4, "accurate": 0.0}
TIER_GAP = _logit(0.773) - _logit(0.584)  # Terminal-Bench 2.0


@dataclass(frozen=True, kw_only=True)
class EditDifficulty:
    """How hard the true edit is: lines removed plus added, files it changes, separate places it changes."""

    changed_lines: int
    files: int
    hunks: int


REFERENCE = EditDifficulty(changed_lines=60, files=3, hunks=4)


def _shape(lines: float, files: float) -> float:
    """The size and span part of the penalty (floats, so published averages can be put in)."""
    return SIZE_SLOPE * math.log2(1.0 + max(0.0, lines) / 8.0) + FILE_SLOPE * math.log2(max(1.0, files))


def _penalty(difficulty: EditDifficulty, tier: Tier) -> float:
    steps = STEP_SLOPE[tier] * max(0, difficulty.hunks - STEP_LIMIT)
    return _shape(difficulty.changed_lines, difficulty.files) + steps


_ACCURATE_BASE = _logit(0.773) + _penalty(REFERENCE, "accurate")
BASE_LOGIT: dict[Tier, float] = {"accurate": _ACCURATE_BASE, "fast": _ACCURATE_BASE - TIER_GAP}
# Even a trivial edit is sometimes wrong, and even a hopeless one sometimes right.
_FLOOR, _CEILING = 0.005, 0.995


def tier_of(profile: str) -> Tier:
    """The tier a simulator profile stands in for."""
    return "accurate" if profile in ACCURATE_PROFILES else "fast"


def edit_success_probability(difficulty: EditDifficulty, tier: Tier) -> float:
    """The simulated chance that `tier` answers an edit of this difficulty right."""
    p = _sigmoid(BASE_LOGIT[tier] - _penalty(difficulty, tier))
    return min(_CEILING, max(_FLOOR, p))


def edit_mistake_probability(difficulty: EditDifficulty, tier: Tier, *, scale: float = 1.0) -> float:
    """The simulated chance of a wrong edit answer; `scale` multiplies it (0: never wrong), capped at 1."""
    if difficulty.files <= 0 or scale <= 0:
        return 0.0
    return min(1.0, scale * (1.0 - edit_success_probability(difficulty, tier)))


@dataclass(frozen=True, kw_only=True)
class CalibrationRow:
    """One published figure beside what the model gives for it."""

    figure: str
    target: str
    model: str


def calibration_rows() -> list[CalibrationRow]:
    """The calibration targets and the fitted model's values, for benchmarks to print (all simulated)."""
    ok = edit_success_probability
    # A system resolving 56% of single-file tasks (~12 lines), moved to multi-file ones (~30 lines, 2-3 files).
    single = _logit(0.56) + _shape(12, 1)
    multi = " .. ".join(f"{_sigmoid(single - _shape(30, files)):.1%}" for files in (2.0, 2.5, 3.0))
    drop = _shape(107.4, 4.1) - _shape(11.6, 1.2)
    small = EditDifficulty(changed_lines=10, files=1, hunks=1)
    steps = [EditDifficulty(changed_lines=40, files=1, hunks=h) for h in (4, 6, 8, 12)]
    return [
        CalibrationRow(
            figure="Terminal-Bench 2.0, fast vs accurate (model: a 60-line, 3-file, 4-hunk edit)",
            target="58.4% vs 77.3%",
            model=f"{ok(REFERENCE, 'fast'):.1%} vs {ok(REFERENCE, 'accurate'):.1%}",
        ),
        CalibrationRow(
            figure="SWE-bench Verified multi-file tasks, systems at ~56% single-file (model: 30 lines, 2/2.5/3 files)",
            target="8-25%",
            model=multi,
        ),
        CalibrationRow(
            figure="SWE-Bench Pro vs Verified in log-odds (107.4 lines / 4.1 files vs 11.6 lines / 1.2 files)",
            target="-2.29 (GPT-5: 74.9% -> 23.3%)",
            model=f"{-drop:.2f} (74.9% -> {_sigmoid(_logit(0.749) - drop):.1%})",
        ),
        CalibrationRow(
            figure="a 10-line edit of one file, fast vs accurate (no published figure: follows from the fit)",
            target="-",
            model=f"{ok(small, 'fast'):.1%} vs {ok(small, 'accurate'):.1%}",
        ),
        CalibrationRow(
            figure="fast tier, 40 lines in one file, 4 / 6 / 8 / 12 hunks (degrades after 6-8 steps)",
            target="drops past 6-8",
            model=" / ".join(f"{ok(d, 'fast'):.1%}" for d in steps),
        ),
    ]


def describe_edit_model() -> str:
    """The edit error model and its calibration as a few lines of text, labelled simulated."""
    lines = [
        "simulated edit error model (tandem sim): logit P(right) = base[tier] - "
        f"{SIZE_SLOPE:g}*log2(1 + lines/8) - {FILE_SLOPE:g}*log2(files) - step[tier]*max(0, hunks - {STEP_LIMIT})",
        f"  base: accurate {BASE_LOGIT['accurate']:.3f}, fast {BASE_LOGIT['fast']:.3f} (gap {TIER_GAP:.3f}); "
        f"step: fast {STEP_SLOPE['fast']:g}, accurate {STEP_SLOPE['accurate']:g}",
    ]
    for row in calibration_rows():
        lines.append(f"  {row.figure}: published {row.target}; simulated {row.model}")
    return "\n".join(lines)


# -- completions ----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One completion answer the simulated model is about to give, and what it was asked."""

    prefix: str
    suffix: str
    answer: str
    profile: str
    base_rate: float
    seed: int
    # Scale `base_rate` (the accurate tier's rate for a one-line answer) by tier and answer length.
    difficulty_scaled: bool = False


def rng_for(attempt: Attempt) -> random.Random:
    """A random generator determined by the prompt and the seed."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(str(attempt.seed).encode())
    digest.update(b"\x00")
    digest.update(attempt.prefix.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(attempt.suffix.encode("utf-8", "surrogatepass"))
    return random.Random(int.from_bytes(digest.digest(), "big"))


def completion_mistake_probability(base_rate: float, *, answer_lines: int, tier: Tier) -> float:
    """`base_rate` for a one-line answer from the accurate tier; more for the fast tier (the same log-odds
    gap as edits) and for longer answers (the edit model's size slope)."""
    if base_rate <= 0:
        return 0.0
    if base_rate >= 1:
        return 1.0
    shift = (TIER_GAP if tier == "fast" else 0.0) + SIZE_SLOPE * math.log2(1.0 + max(0, answer_lines - 1) / 8.0)
    return _sigmoid(_logit(base_rate) + shift)


def mistake_probability(attempt: Attempt) -> float:
    """The chance that this completion is wrong: the configured rate, scaled by difficulty if asked."""
    if not attempt.difficulty_scaled:
        return attempt.base_rate
    lines = attempt.answer.count("\n") + (0 if attempt.answer.endswith("\n") else 1)
    return completion_mistake_probability(attempt.base_rate, answer_lines=lines, tier=tier_of(attempt.profile))


def apply_error_model(attempt: Attempt) -> tuple[str, bool]:
    """The answer as the simulated model gives it, and whether it was corrupted."""
    if not attempt.answer or attempt.base_rate <= 0:
        return attempt.answer, False
    rng = rng_for(attempt)
    if calibrated(attempt.profile):
        wrong_at = first_wrong(attempt.answer, attempt.prefix, attempt.suffix, LOCAL_RATES[attempt.profile], rng)
        if wrong_at is None:
            return attempt.answer, False
        return corrupt(attempt.answer, prefix=attempt.prefix, rng=rng, start=wrong_at), True
    if rng.random() >= mistake_probability(attempt):
        return attempt.answer, False
    return corrupt(attempt.answer, prefix=attempt.prefix, rng=rng), True


def corrupt(answer: str, *, prefix: str, rng: random.Random, start: int | None = None) -> str:
    """`answer` with everything from some point on (`start`, else a random one in its first two thirds)
    made plausibly wrong: names swapped for other names from the prompt, numbers changed. The first part
    stays right, as a model's would."""
    if start is None:
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


# -- edits: what a wrong answer looks like --------------------------------------------------------------


class Mistake(StrEnum):
    """A way for an edit answer to be wrong."""

    SYNTAX = "syntax"  # a hunk left unbalanced: the file no longer parses
    OVERSIZED = "oversized"  # the edit plus the whole file re-indented: far larger than needed
    MISSING_FILE = "missing-file"  # one changed file left out
    DROPPED_HUNK = "dropped-hunk"  # one place that should change left as it was
    WRONG_PLACE = "wrong-place"  # one change made a few lines away from where it belongs
    WRONG_VALUE = "wrong-value"  # a wrong name or number in one changed line


# Given that an answer is wrong, how it is wrong (an assumption; see the module docstring).
MISTAKE_WEIGHTS: dict[Tier, dict[Mistake, float]] = {
    "fast": {
        Mistake.SYNTAX: 0.35,
        Mistake.OVERSIZED: 0.10,
        Mistake.MISSING_FILE: 0.20,
        Mistake.DROPPED_HUNK: 0.15,
        Mistake.WRONG_PLACE: 0.10,
        Mistake.WRONG_VALUE: 0.10,
    },
    "accurate": {
        Mistake.SYNTAX: 0.15,
        Mistake.OVERSIZED: 0.05,
        Mistake.MISSING_FILE: 0.25,
        Mistake.DROPPED_HUNK: 0.20,
        Mistake.WRONG_PLACE: 0.10,
        Mistake.WRONG_VALUE: 0.25,
    },
}


def edit_rng(*, seed: int, profile: str, prompt_text: str, attempt: int) -> random.Random:
    """The dice for one edit request: the same prompt, profile and attempt number always draw the same."""
    digest = hashlib.blake2b(digest_size=8)
    for part in (str(seed), profile, str(attempt)):
        digest.update(part.encode())
        digest.update(b"\x00")
    digest.update(prompt_text.encode("utf-8", "surrogatepass"))
    return random.Random(int.from_bytes(digest.digest(), "big"))


def mistake_order(tier: Tier, rng: random.Random) -> list[Mistake]:
    """Every mistake kind, in the order to try them: weighted random, without replacement."""
    weights = dict(MISTAKE_WEIGHTS[tier])
    order: list[Mistake] = []
    while weights:
        kinds = list(weights)
        kind = rng.choices(kinds, weights=[weights[k] for k in kinds])[0]
        order.append(kind)
        del weights[kind]
    return order
