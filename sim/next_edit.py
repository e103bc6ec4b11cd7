"""The simulator answering next-edit prompts: the editable region rewritten as the truth has it.

A next-edit prompt (chat or raw; its layout is public: `File: PATH`, then a fenced excerpt whose editable
region sits between `<|editable_region_start|>` and `<|editable_region_end|>` lines, the cursor marked by
`<|user_cursor_is_here|>`) is read here with the simulator's own code. Given a truth (the file's text after
the user's real next changes; set at run time with `POST /_sim/next-edit-truth`), the excerpt is aligned
with the truth file line by line and the region is answered as the truth has it: changes wholly inside the
region (and insertions at its edges) are made, anything straddling its edges is left as it is. Without a
truth for the file the region comes back unchanged (the model sees nothing to do).

Whether the answer is wrong is drawn from `error_model` (the completion rate, scaled by tier and by the
lines changed); a wrong answer changes the right lines in a plausible but wrong way. Simulated, all of it.
"""

from __future__ import annotations

import difflib
import hashlib
import random
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
    return NextEditPrompt(
        path=path,
        before=tuple(before_text.split("\n")[:-1]) if before_text else (),
        region=tuple(region_text.replace(CURSOR, "").split("\n")),
        after=tuple(after_text.split("\n")) if after_text else (),
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
