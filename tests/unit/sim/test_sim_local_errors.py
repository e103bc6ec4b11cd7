"""The local profiles' completion mistakes: fitted to the real Qwen2.5-Coder 0.5B (README, "Real beside
simulated"), token by token, and the cloud profiles' flat rate left as it was."""

from __future__ import annotations

import pytest

from tandem.sim.error_model import Attempt, apply_error_model, rng_for
from tandem.sim.local_errors import (
    LOCAL_RATES,
    Observed,
    count_pieces,
    first_wrong,
    right_chance,
    seen_flags,
)

# A fixed piece of code typed back line by line: the answers below are each line's rest from a cursor.
_SOURCE = '''import os
import sys


def read_config(path, defaults=None):
    """Read a key=value file into a dict, over the defaults."""
    values = dict(defaults or {})
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def write_config(path, values):
    with open(path, "w", encoding="utf-8") as handle:
        for key, value in sorted(values.items()):
            handle.write(f"{key}={value}\\n")
    return len(values)


def merge_configs(paths, defaults=None):
    merged = dict(defaults or {})
    for path in paths:
        if os.path.exists(path):
            merged.update(read_config(path))
    print(len(merged), file=sys.stderr)
    return merged
'''


def _attempts(profile: str, *, error_rate: float = 0.1, seeds: int = 8) -> list[Attempt]:
    """At every 5th character of the source: the rest of its line as the true answer, the rest of the file
    after that line as the suffix."""
    out: list[Attempt] = []
    for at in range(0, len(_SOURCE), 5):
        line_end = _SOURCE.find("\n", at)
        answer = _SOURCE[at:line_end]
        if not answer.strip():
            continue
        for seed in range(seeds):
            out.append(
                Attempt(
                    prefix=_SOURCE[:at],
                    suffix=_SOURCE[line_end:],
                    answer=answer,
                    profile=profile,
                    base_rate=error_rate,
                    seed=seed,
                )
            )
    return out


def _right_share(attempts: list[Attempt]) -> float:
    return sum(not apply_error_model(a)[1] for a in attempts) / len(attempts)


def test_the_fitted_05b_gets_as_many_lines_right_as_the_fit_says() -> None:
    attempts = _attempts("llama-0.5b")
    share = _right_share(attempts)
    expected = sum(right_chance(a.answer, a.prefix, a.suffix, LOCAL_RATES["llama-0.5b"]) for a in attempts)
    expected /= len(attempts)
    # The dice follow the fitted rates (about 1,000 draws)...
    assert share == pytest.approx(expected, abs=0.05)
    # ...and the rates are the fitted ones: the real 0.5B gets few such line ends right (15% of these),
    # where the flat rate the local profile used before got 90% right.
    assert 0.08 <= share <= 0.3, share


def test_the_15b_gets_more_right_than_the_05b() -> None:
    assert _right_share(_attempts("llama-1.5b")) > _right_share(_attempts("llama-0.5b")) + 0.05


def test_what_the_prompt_shows_is_right_more_often_than_what_it_does_not() -> None:
    prefix = "values = read_config(path)\nmerged = "
    copied = "read_config(path)"
    novel = "zlib.adler32(blob)"
    rates = LOCAL_RATES["llama-0.5b"]
    assert all(seen for _, seen in seen_flags(copied, prefix, ""))
    assert right_chance(copied, prefix, "", rates) > 2 * right_chance(novel, prefix, "", rates)


def test_a_wrong_local_answer_is_right_up_to_where_it_goes_wrong() -> None:
    wrong = [(a, given) for a in _attempts("llama-0.5b") for given, bad in [apply_error_model(a)] if bad]
    assert wrong
    for attempt, given in wrong:
        rates = LOCAL_RATES["llama-0.5b"]
        at = first_wrong(attempt.answer, attempt.prefix, attempt.suffix, rates, rng_for(attempt))
        assert at is not None
        # Wrong from the start of the word holding the first wrong token; the true text before it.
        start = at
        while start > 0 and (attempt.answer[start - 1].isalnum() or attempt.answer[start - 1] == "_"):
            start -= 1
        assert given[:start] == attempt.answer[:start]
        assert given != attempt.answer


def test_error_rate_zero_turns_the_local_mistakes_off() -> None:
    assert _right_share(_attempts("llama-0.5b", error_rate=0.0, seeds=1)) == 1.0


def test_the_cloud_profiles_keep_their_flat_rate() -> None:
    share = _right_share(_attempts("spark", error_rate=0.1))
    assert share == pytest.approx(0.9, abs=0.04)


def test_the_fit_reads_each_answer_token_by_token_up_to_its_first_wrong_one() -> None:
    prefix = "total = count + 1\nresult = "
    right = Observed(prefix=prefix, suffix="", text="count + 1", truth="count + 1\n")
    # Leaves the true text after "count + ": right pieces up to there, then one wrong piece.
    wrong = Observed(prefix=prefix, suffix="", text="count + 2", truth="count + 1\n")
    # Right as far as the span went, then ran on: wrong at the end.
    ran_on = Observed(prefix=prefix, suffix="", text="count + 1 + x", truth="count + 1")
    counts = count_pieces([right, wrong, ran_on])
    pieces = len(seen_flags("count + 1", prefix, ""))
    assert counts.seen_right + counts.new_right == 3 * pieces - 1
    assert counts.seen_wrong + counts.new_wrong == 2
    assert counts.ran_past_end == 1
