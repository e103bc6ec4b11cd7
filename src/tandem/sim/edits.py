"""The simulator answering edit prompts: SEARCH/REPLACE blocks that turn each file shown into its edit truth.

An edit prompt is read by `sim.edit_reading.read_edit_task`. Given `EditTruth` (set at run time:
`POST /_sim/edit-truth`, `SimHandle.set_edit_truth`), the answer changes every file the prompt showed whose
truth differs, as SEARCH/REPLACE blocks.
A file in the truth that the prompt did not show cannot be edited by SEARCH/REPLACE: it is left out, and
the answer is then incomplete (and counted as a harder edit: one more file). A file shown in part (its
header says "lines A-B of N") is answered for those lines: its truth is taken as the truth's lines between
as many as the file had before the part and as many as it had after (`truth_of_part`).

Whether the answer is right is drawn from `tandem.sim.error_model` (tier, true diff size, files,
hunks); a wrong answer is one of its `Mistake`s.

A prompt that shows a draft to check (`EditTask.draft`) is answered KEEP or with the model's own blocks.
The draft is applied with the simulator's reader and compared with the truth. One draw decides, with the
probability the model would have written this edit right itself: a model that could have written it keeps
a right draft and replaces a wrong one with the right edit; one that could not keeps the draft, right or
wrong. An assumption, and a kind one: no published figure at hand says how well a model checks another's
edit, and a real checker may also miss a mistake it would not have made, or rewrite a right draft.

Every answer is checked by applying it back with the simulator's own reader (`edit_reading.apply_blocks`),
so a right answer applies to exactly the truth (the one exception: a change of the final newline alone,
which SEARCH/REPLACE blocks cannot express).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from tandem.sim import edit_mistakes as mistakes
from tandem.sim import error_model as em
from tandem.sim.edit_reading import (
    DIVIDER_LINE,
    KEEP_ANSWER,
    REPLACE_LINE,
    SEARCH_LINE,
    BlocksError,
    EditTask,
    apply_blocks,
)

# What an edit truth may say about errors: the calibrated model, never wrong, or always this mistake.
ERROR_MODES: tuple[str, ...] = ("calibrated", "off", *(m.value for m in em.Mistake))
NO_CHANGE_ANSWER = "No change is needed: the files shown already do what the instruction asks."


@dataclass(frozen=True, kw_only=True)
class EditTruth:
    """What edits should produce: `files` maps a path, as the prompt shows it, to its full text after the
    edit. `errors` is "calibrated" (the error model, its probability times `error_scale`), "off", or a
    `Mistake` value: every answer is wrong, in that way where it can be, else in the next likeliest way."""

    files: Mapping[str, str] = field(default_factory=dict)
    errors: str = "calibrated"
    error_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.errors not in ERROR_MODES:
            raise ValueError(f"errors must be one of {', '.join(ERROR_MODES)}, not {self.errors!r}")
        if not (self.error_scale >= 0 and math.isfinite(self.error_scale)):
            raise ValueError(f"error_scale must be a number >= 0, not {self.error_scale!r}")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.files.items()):
            raise ValueError("files must map paths to texts (strings)")


@dataclass(frozen=True, kw_only=True)
class EditDraw:
    """What the simulator decided for one edit request. Simulated, all of it."""

    profile: str
    attempt: int
    changed_lines: int
    files: int
    hunks: int
    unseen_files: tuple[str, ...]
    mistake_probability: float
    mistake: str | None
    # Would a validating client catch it (a file that no longer parses, or whose brackets no longer balance)?
    breaks_syntax: bool
    # Lines removed plus added by the answer, as validation counts them.
    answer_changed_lines: int
    # Does the answer, parsed and applied, give exactly the truth of every file it could reach?
    exact: bool
    endpoint: str = ""
    # For a draft to check: whether the draft gives the truth, and whether the answer kept it.
    draft_exact: bool | None = None
    kept_draft: bool | None = None
    simulated: bool = True


def difficulty_of(
    shown: Mapping[str, str], truth: EditTruth
) -> tuple[em.EditDifficulty, dict[str, str], tuple[str, ...]]:
    """(difficulty of the true edit, truth of the shown files that change, truth paths the prompt did not show)."""
    changed = {path: truth.files[path] for path in shown if path in truth.files and truth.files[path] != shown[path]}
    unseen = tuple(sorted(path for path in truth.files if path not in shown))
    lines = hunks = 0
    for path, after in changed.items():
        lines += mistakes.changed_line_count(shown[path], after)
        hunks += len(mistakes.hunks_of(shown[path], after))
    difficulty = em.EditDifficulty(changed_lines=lines, files=len(changed) + len(unseen), hunks=hunks + len(unseen))
    return difficulty, changed, unseen


def truth_of_part(prompt: EditTask, truth: EditTruth) -> EditTruth:
    """The truth as the prompt's part of its file, when only part was shown: the truth's lines between as
    many as the file had before the part and as many as it had after it. A truth that does not keep that
    many is left whole (the answer is then wrong: the change reaches where the model could not see)."""
    part = getattr(prompt, "shown_lines", None)  # (tests hand in other prompt types with the same fields)
    if part is None or prompt.path not in truth.files:
        return truth
    first, last, total = part
    after = [line + "\n" for line in truth.files[prompt.path].split("\n")]  # lines as "\n" ends them
    after[-1] = after[-1][:-1]
    if not after[-1]:
        after.pop()
    before, tail = first - 1, total - last
    if before + tail > len(after):
        return truth
    inner = "".join(after[before : len(after) - tail])
    return dataclasses.replace(truth, files={**truth.files, prompt.path: inner})


def answer_edit(
    prompt: EditTask, truth: EditTruth, *, profile: str, attempt: int, seed: int, prompt_text: str
) -> tuple[str, EditDraw]:
    """The simulated model's answer to an edit prompt, and what was drawn for it."""
    shown = {prompt.path: prompt.text, **{p: t for p, t in prompt.context.items() if p != prompt.path}}
    truth = truth_of_part(prompt, truth)
    difficulty, changed, unseen = difficulty_of(shown, truth)
    tier = em.tier_of(profile)
    rng = em.edit_rng(seed=seed, profile=profile, prompt_text=prompt_text, attempt=attempt)
    if truth.errors == "off":
        probability = 0.0
    elif truth.errors == "calibrated":
        probability = em.edit_mistake_probability(difficulty, tier, scale=truth.error_scale)
    else:
        probability = 1.0
    after: dict[str, str] = changed
    mistake: em.Mistake | None = None
    draft = getattr(prompt, "draft", None)  # (tests hand in other prompt types with the same fields)
    if draft is not None:
        draft_exact = _draft_gives_truth(draft, shown, changed) and not unseen
        capable = not (changed and rng.random() < probability)
        if draft_exact or not capable:
            draw = EditDraw(
                profile=profile,
                attempt=attempt,
                changed_lines=difficulty.changed_lines,
                files=difficulty.files,
                hunks=difficulty.hunks,
                unseen_files=unseen,
                mistake_probability=probability if changed or unseen else 0.0,
                mistake=None,
                breaks_syntax=False,
                answer_changed_lines=0,
                exact=draft_exact,
                draft_exact=draft_exact,
                kept_draft=True,
            )
            return KEEP_ANSWER, draw
        # A wrong draft, seen for what it is: the model's own edit, right.
        text, reached = render_answer(prompt.path, shown, changed)
        draw = EditDraw(
            profile=profile,
            attempt=attempt,
            changed_lines=difficulty.changed_lines,
            files=difficulty.files,
            hunks=difficulty.hunks,
            unseen_files=unseen,
            mistake_probability=probability if changed or unseen else 0.0,
            mistake=None,
            breaks_syntax=any(mistakes.breaks_syntax(p, shown[p], t) for p, t in reached.items()),
            answer_changed_lines=sum(mistakes.changed_line_count(shown[p], t) for p, t in reached.items()),
            exact=not unseen and all(reached.get(p, shown[p]) == t for p, t in changed.items()),
            draft_exact=False,
            kept_draft=False,
        )
        return text, draw
    if changed and rng.random() < probability:
        kinds = em.mistake_order(tier, rng)
        if truth.errors != "calibrated":
            # The mistake asked for first; where it cannot happen (one hunk to drop...), the next likeliest.
            kinds = [em.Mistake(truth.errors), *(k for k in kinds if k != truth.errors)]
        for kind in kinds:
            wrong = mistakes.make_mistake(kind, shown, changed, rng)
            if wrong is not None:
                after, mistake = wrong, kind
                break
    text, reached = render_answer(prompt.path, shown, after)
    exact = mistake is None and not unseen and all(reached.get(p, shown[p]) == t for p, t in changed.items())
    draw = EditDraw(
        profile=profile,
        attempt=attempt,
        changed_lines=difficulty.changed_lines,
        files=difficulty.files,
        hunks=difficulty.hunks,
        unseen_files=unseen,
        mistake_probability=probability if changed or unseen else 0.0,
        mistake=mistake.value if mistake is not None else None,
        breaks_syntax=any(mistakes.breaks_syntax(p, shown[p], t) for p, t in reached.items()),
        answer_changed_lines=sum(mistakes.changed_line_count(shown[p], t) for p, t in reached.items()),
        exact=exact,
    )
    return text, draw


def _draft_gives_truth(draft: str, shown: Mapping[str, str], changed: Mapping[str, str]) -> bool:
    """Whether the draft, applied to the files shown, gives exactly the truth of each (and changes nothing
    else)."""
    try:
        result = apply_blocks(draft, shown)
    except BlocksError:
        return False
    if not changed:
        return all(result[p] == shown.get(p) for p in result)
    return all(result.get(p, shown.get(p)) == changed.get(p, shown.get(p)) for p in {*result, *changed})


def render_answer(primary: str, shown: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """SEARCH/REPLACE blocks turning `shown` into `after` (the files that differ), and the texts the answer
    really gives once parsed and applied. The primary file comes first. A file whose blocks do not parse
    back to its text (its lines look like block markers, or its path cannot be written on a path line) is
    given as one whole-file block, or else as near as blocks can bring it, or else left out."""
    sections: list[str] = []
    paths = sorted((p for p in after if after[p] != shown[p]), key=lambda p: (p != primary, p))
    for path in paths:
        blocks = _section(path, shown[path], after[path], whole_file=False)
        given = _gives(blocks, shown, path)
        if given != after[path]:
            whole = _section(path, shown[path], after[path], whole_file=True)
            if _gives(whole, shown, path) == after[path]:
                sections.append(whole)
                continue
        if given is not None:
            # Exact, or (a change of the final newline alone) as near as blocks can bring the file.
            sections.append(blocks)
    if not sections:
        return NO_CHANGE_ANSWER, {}
    text = "\n".join(sections)
    try:
        reached = apply_blocks(text, shown)
    except BlocksError:  # cannot happen for sections that apply alone; never fail a request over it
        return text, {}
    return text, reached


def _gives(section: str, shown: Mapping[str, str], path: str) -> str | None:
    """The text of `path` after `section` is applied; None if it does not apply as an edit of it alone."""
    try:
        result = apply_blocks(section, shown)
    except BlocksError:
        return None
    return result[path] if set(result) == {path} else None


def _section(path: str, old: str, new: str, *, whole_file: bool) -> str:
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    whole = whole_file or not old.strip()
    blocks = [(0, len(old_lines), 0, len(new_lines))] if whole else _blocks(old, new)
    parts = [path]
    for a, b, c, d in blocks:
        parts.append(SEARCH_LINE)
        parts.extend(line.rstrip("\r\n") for line in old_lines[a:b])
        parts.append(DIVIDER_LINE)
        parts.extend(line.rstrip("\r\n") for line in new_lines[c:d])
        parts.append(REPLACE_LINE)
    return "\n".join(parts) + "\n"


def _blocks(old_text: str, new_text: str) -> list[tuple[int, int, int, int]]:
    """(old start, old end, new start, new end) of each block: a hunk with just enough unchanged lines
    around it that its SEARCH text has code in it and occurs once in the file; hunks whose context would
    meet are merged."""
    # [i1, i2, j1, j2, lines of context before, after]
    old, new = old_text.splitlines(keepends=True), new_text.splitlines(keepends=True)
    blocks = [[h.i1, h.i2, h.j1, h.j2, 0, 0] for h in mistakes.hunks_of(old_text, new_text)]
    keys = [line.rstrip() for line in old]
    grow_after = False
    changed = True
    while changed:
        changed = False
        for n, block in enumerate(blocks):
            i1, i2, _, _, before, after = block
            if _unique(keys, i1 - before, i2 + after):
                continue
            changed = True
            room_before = i1 - before - (blocks[n - 1][1] + blocks[n - 1][5] if n else 0)
            room_after = (blocks[n + 1][0] - blocks[n + 1][4] if n + 1 < len(blocks) else len(old)) - (i2 + after)
            grow_after = not grow_after  # alternate, so context sits on both sides
            if room_after > 0 and (grow_after or room_before <= 0):
                block[5] += 1
            elif room_before > 0:
                block[4] += 1
            elif n + 1 < len(blocks):
                _merge(blocks, n)  # no room left: the context would run into the next block
            elif n:
                _merge(blocks, n - 1)
            else:
                return [(0, len(old), 0, len(new))]
            break
    return [(i1 - before, i2 + after, j1 - before, j2 + after) for i1, i2, j1, j2, before, after in blocks]


def _merge(blocks: list[list[int]], n: int) -> None:
    first, second = blocks[n], blocks[n + 1]
    blocks[n : n + 2] = [[first[0], second[1], first[2], second[3], first[4], second[5]]]


def _unique(keys: list[str], a: int, b: int) -> bool:
    """Whether lines [a, b) have code in them and occur once in the file (trailing spaces ignored, as
    the answer parser may ignore them)."""
    quote = keys[a:b]
    if not any(line.strip() for line in quote):
        return False
    count = 0
    for start in range(len(keys) - len(quote) + 1):
        if keys[start] == quote[0] and keys[start : start + len(quote)] == quote:
            count += 1
            if count > 1:
                return False
    return count == 1
