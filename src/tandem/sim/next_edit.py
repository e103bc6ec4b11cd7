"""The simulator answering next-edit prompts: the editable region rewritten as the truth has it.

A next-edit prompt (chat or raw; its layout is public: `File: PATH`, then a fenced excerpt whose editable
region sits between `<|editable_region_start|>` and `<|editable_region_end|>` lines, the cursor marked by
`<|user_cursor_is_here|>`) is read here with the simulator's own code. Given a truth (the file's text after
the user's real next changes; set at run time with `POST /_sim/next-edit-truth`), the excerpt is aligned
with the truth file line by line and the region is answered as the truth has it: changes wholly inside the
region (and insertions at its edges) are made, anything straddling its edges is left as it is. Without a
truth for the file the region comes back unchanged (the model sees nothing to do).

Whether the answer is wrong is drawn from `error_model` (the completion rate, scaled by tier and by the
lines changed); a wrong answer changes the right lines in a plausible but wrong way.

A change still being typed is harder: when the truth goes on from the cursor with the rest of the change
the user is typing (the user has typed "ra" of "radius"), the truth knows how it ends and a model must
guess it. The simulator gets the rest (and with it the rest of the answer) right with the error model's
chance times the share typed so far: the letters of the word left of the cursor over those and the rest
of the change on the line (two of six for "ra" of "radius"; none after a bracket or a space, so then it
never guesses). That is an assumption of this simulator, not a measured rate: the more of a name is
typed, the likelier a model finishes it. A miss ends the word as another name from the excerpt that
starts the same way (or types nothing more) and leaves the region's other changes out (a model on the
wrong track sees no others). With an error rate of 0 the simulator is an oracle, here too. Simulated,
all of it.
"""

from __future__ import annotations

import difflib
import hashlib
import random
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from tandem.sim.error_model import completion_mistake_probability, corrupt, tier_of

REGION_START = "<|editable_region_start|>"
REGION_END = "<|editable_region_end|>"
CURSOR = "<|user_cursor_is_here|>"
_FILE = "File: "
_FENCE = "```"


@dataclass(frozen=True, kw_only=True)
class NextEditPrompt:
    """What the simulator reads from a next-edit prompt (lines without terminators)."""

    path: str
    before: tuple[str, ...]
    region: tuple[str, ...]
    after: tuple[str, ...]
    # The cursor's (line in the region, column), when the region marks it.
    cursor: tuple[int, int] | None = None


def read_prompt(text: str) -> NextEditPrompt | None:
    """The excerpt of a next-edit prompt, or None if `text` is not one."""
    start = text.rfind(REGION_START)
    end = text.find(REGION_END, start + 1) if start >= 0 else -1
    if start < 0 or end < 0:
        return None
    file_at = text.rfind(_FILE, 0, start)
    if file_at < 0:
        return None
    header_end = text.find("\n", file_at)
    path = text[file_at + len(_FILE) : header_end].strip()
    fence = text.find(_FENCE + "\n", header_end)
    if fence < 0 or fence > start:
        return None
    before_text = text[fence + len(_FENCE) + 1 : start]
    region_text = text[start + len(REGION_START) : end].removeprefix("\n").removesuffix("\n")
    closing = text.find("\n" + _FENCE, end)
    after_text = text[end + len(REGION_END) : closing if closing >= 0 else len(text)].removeprefix("\n")
    marked = region_text.split("\n")
    cursor = next(((n, line.index(CURSOR)) for n, line in enumerate(marked) if CURSOR in line), None)
    return NextEditPrompt(
        path=path,
        before=tuple(before_text.split("\n")[:-1]) if before_text else (),
        region=tuple(region_text.replace(CURSOR, "").split("\n")),
        after=tuple(after_text.split("\n")) if after_text else (),
        cursor=cursor,
    )


@dataclass
class NextEditTruth:
    """Files as they read after the user's real next changes, by path. Safe to use from any thread."""

    files: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def set(self, files: Mapping[str, str]) -> None:
        with self._lock:
            self.files = dict(files)

    def find(self, path: str) -> str | None:
        """The truth for `path`: the same path, else the one path that ends with it (or it with them)."""
        with self._lock:
            if path in self.files:
                return self.files[path]
            found = [
                text for known, text in self.files.items() if known.endswith("/" + path) or path.endswith("/" + known)
            ]
            return found[0] if len(found) == 1 else None


def rewrite_region(prompt: NextEditPrompt, truth: str) -> tuple[str, ...]:
    """The region as `truth` has it (see the module docstring)."""
    excerpt = (*prompt.before, *prompt.region, *prompt.after)
    target = tuple(truth.split("\n"))
    low, high = len(prompt.before), len(prompt.before) + len(prompt.region)
    matcher = difflib.SequenceMatcher(None, excerpt, target, autojunk=False)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "insert":
            if low <= i1 <= high:
                out += target[j1:j2]
            continue
        a, b = max(i1, low), min(i2, high)
        if a >= b:
            continue
        if tag == "equal":
            out += target[j1 + (a - i1) : j1 + (b - i1)]
        elif low <= i1 and i2 <= high:
            out += target[j1:j2]
        else:
            out += excerpt[a:b]  # straddles an edge of the region: left as it is
    return tuple(out)


def answer(
    prompt_text: str, prompt: NextEditPrompt, truth: NextEditTruth, *, profile: str, error_rate: float, seed: int
) -> tuple[str, bool, bool]:
    """(the answer's text, whether a truth was found, whether the error model made it wrong)."""
    known = truth.find(prompt.path)
    rewrite = prompt.region if known is None else rewrite_region(prompt, known)
    corrupted = False
    progress = _change_in_progress(prompt, rewrite) if error_rate > 0 else None
    if progress is not None:
        at, typed, rest = progress
        probability = completion_mistake_probability(error_rate, answer_lines=1, tier=tier_of(profile))
        digest = hashlib.blake2b(f"{seed}\0word\0{prompt_text}".encode("utf-8", "surrogatepass"), digest_size=8)
        rng = random.Random(int.from_bytes(digest.digest(), "big"))
        if rng.random() >= (1.0 - probability) * len(typed) / (len(typed) + len(rest)):
            # Missed: inside a word, another name from the excerpt that starts so; else nothing more.
            names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join((*prompt.before, *prompt.region, *prompt.after)))
            word = typed + rest[: len(rest) - len(rest.lstrip(_WORD))]
            others = sorted({n for n in names if typed and n.startswith(typed) and len(n) > len(typed) and n != word})
            guess = rng.choice(others)[len(typed) :] if others and word != typed else ""
            line, column = prompt.region[at], prompt.cursor[1] if prompt.cursor else 0
            region = list(prompt.region)
            region[at] = line[:column] + guess + line[column:]
            return f"{REGION_START}\n" + "\n".join(region) + f"\n{REGION_END}", known is not None, True
    if rewrite != prompt.region:
        matcher = difflib.SequenceMatcher(None, prompt.region, rewrite, autojunk=False)
        changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
        lines = sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in changed)
        probability = completion_mistake_probability(error_rate, answer_lines=lines, tier=tier_of(profile))
        digest = hashlib.blake2b(f"{seed}\0{prompt_text}".encode("utf-8", "surrogatepass"), digest_size=8)
        rng = random.Random(int.from_bytes(digest.digest(), "big"))
        if changed and rng.random() < probability:
            _, _, _, j1, j2 = changed[0]
            if j2 > j1:
                new = "\n".join(rewrite[j1:j2])
                wrong = corrupt(new, prefix="\n".join((*prompt.before, *prompt.region)), rng=rng)
                rewrite = (*rewrite[:j1], *wrong.split("\n"), *rewrite[j2:])
                corrupted = wrong != new
    body = "\n".join(rewrite)
    return f"{REGION_START}\n{body}\n{REGION_END}", known is not None, corrupted


def _change_in_progress(prompt: NextEditPrompt, rewrite: tuple[str, ...]) -> tuple[int, str, str] | None:
    """When the rewrite goes on from the cursor with the rest of a change being typed: (the cursor's
    region line, the word typed left of the cursor, the rest of the change)."""
    if prompt.cursor is None:
        return None
    at, column = prompt.cursor
    matcher = difflib.SequenceMatcher(None, prompt.region, rewrite, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace" or not i1 <= at < i2:
            continue
        line = prompt.region[at]
        head = "\n".join((*prompt.region[i1:at], line[:column]))
        new = "\n".join(rewrite[j1:j2])
        if not new.startswith(head):
            return None
        # The rest of the change on the cursor's line: the truth's line after the cursor, less the end it
        # shares with the user's line.
        after, current = new[len(head) :].split("\n")[0], line[column:]
        same = 0
        while same < min(len(after), len(current)) and after[len(after) - 1 - same] == current[len(current) - 1 - same]:
            same += 1
        rest = after[: len(after) - same]
        typed = line[len(line[:column].rstrip(_WORD)) : column]
        return (at, typed, rest) if rest else None
    return None


_WORD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
