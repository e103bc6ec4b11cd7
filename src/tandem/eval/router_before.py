"""The router as it was before its weights were fitted: hand-set pressure terms, tuned on tandem's own
history (as of commit 5e63bee). Kept only to be printed beside the fitted router on the same tasks.

Each feature adds a "pressure" scaled by its threshold so that 1.0 alone is enough for the accurate model;
the score is `score_of_pressure` of their sum.
"""

from __future__ import annotations

import dataclasses

from tandem.completion.routing.router import (
    BROAD_SCOPE,
    SMALL_SCOPE,
    WHOLE_SELECTION,
    WIDE_SCOPE,
    RouteFeatures,
    RouterThresholds,
    score_of_pressure,
)
from tandem.completion.routing.router import _phrases as phrases


def before_score(features: RouteFeatures, thresholds: RouterThresholds) -> float:
    """The score the router before this change gave `features` (0 for inline completions)."""
    if features.mode == "inline":
        return 0.0
    return score_of_pressure(sum(p for p, _ in before_terms(before_words(features), thresholds)))


def before_words(f: RouteFeatures) -> RouteFeatures:
    """`f` with the instruction's scope words found as the router before this change found them: also
    inside file paths and dotted names ("Delete scripts/migrate-black.py" was a broad instruction)."""
    lowered = f.instruction.lower()
    broad = phrases(lowered, BROAD_SCOPE)
    wide = tuple(w for w in phrases(lowered, WIDE_SCOPE) if not any(w in b for b in broad))
    whole = bool(broad or wide or phrases(lowered, WHOLE_SELECTION))
    return dataclasses.replace(
        f, broad_words=broad, wide_words=wide, small_words=phrases(lowered, SMALL_SCOPE), whole_selection=whole
    )


def before_terms(f: RouteFeatures, t: RouterThresholds) -> list[tuple[float, str]]:
    """(pressure, reason) per feature; 1.0 alone reaches the accurate model."""
    terms: list[tuple[float, str]] = []
    if f.selection_lines:
        change = f.expected_change(t)
        about = "" if f.whole_selection else f", about {max(1, round(change))} to change"
        terms.append((min(2.0, change / t.large_selection_lines), f"{f.selection_lines}-line selection{about}"))
    if f.new_file:
        terms.append((0.5, "writes a new file"))
    # Callers need changing only if the interface they call changes: without a word that says so they
    # are capped below one threshold, so a body edit of a popular function is not sent on that alone.
    interface = bool(f.broad_words or f.wide_words)
    callers = len(f.caller_files) / t.span_files
    span = (
        len(f.mentioned_files) / t.span_files
        + (callers if interface else min(0.5, 0.5 * callers))
        + min(0.25, 0.25 * len(f.dependency_files) / t.span_files)
    )
    reach = f.mentioned_files + f.caller_files
    if span:
        n = len(reach) + len(f.dependency_files)
        terms.append((min(2.0, span), f"reaches {n} other file{'s' * (n != 1)}"))
    if f.broad_words:
        terms.append((1.0, f"broad instruction ({', '.join(repr(w) for w in f.broad_words[:2])})"))
    elif f.wide_words:
        terms.append((0.35, f"instruction asks to {', '.join(f.wide_words[:2])}"))
    if f.instruction_items > 1:
        terms.append((min(0.45, 0.15 * (f.instruction_items - 1)), f"instruction lists {f.instruction_items} things"))
    if f.small_words and not f.broad_words:
        terms.append((-0.5, f"small-scope instruction ({', '.join(f.small_words[:2])})"))
    files = len(f.working_diff.files)
    if files > 1 or f.working_diff.lines:
        by_files = (files - 1) / max(1, t.working_diff_files - 1)
        by_lines = f.working_diff.lines / t.working_diff_lines
        terms.append((min(2.0, max(by_files, by_lines)), f"your change in progress spans {files} file(s), "
                      f"{f.working_diff.lines} lines"))  # fmt: skip
    return terms
