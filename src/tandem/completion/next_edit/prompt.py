"""Next-edit prompts (a chat form and a raw form for FIM/next-edit models), and reading the answer.

Both forms show cross-file snippets, the user's recent edits as diffs (oldest first) and the file excerpt,
with the editable region between `REGION_START` and `REGION_END` lines and the cursor marked by `CURSOR`.
The model answers with the region rewritten, between the same markers; `read_rewrite` takes the rewrite out
of an answer as far as it has streamed (fences and an echoed start marker dropped, cut at the end marker).

The order is chosen for a provider's prompt cache, which reuses the longest prefix a recent prompt shares.
The chat form puts the excerpt before the recent edits: while the user types, the newest edit changes at
every key press and the excerpt only from the line being typed on, so snippets, the excerpt's lines above
the region and the region's lines above the cursor stay a cached prefix (with the edits first, everything
after the newest edit, the whole excerpt, was sent anew each time). The raw form keeps the edits before the
excerpt, the order next-edit models are trained on (Zed's Zeta uses these three markers).

The layout is public: a next-edit model trained on these markers can be served raw, and `tandem sim` reads
it with its own code.
"""

from __future__ import annotations

from dataclasses import dataclass

REGION_START = "<|editable_region_start|>"
REGION_END = "<|editable_region_end|>"
CURSOR = "<|user_cursor_is_here|>"

SYSTEM_PROMPT = (
    "You predict a programmer's next edit. You are shown an excerpt of the file they are in, where the lines "
    f"between {REGION_START} and {REGION_END} may be rewritten and {CURSOR} marks the cursor, and after it "
    "the edits they just made (as diffs, oldest first). Rewrite that region, making the change the programmer is "
    "most likely to make next (continue a rename, update the uses of what they changed, finish the pattern "
    "they started); change nothing if no change follows. Reply with only the rewritten region, starting "
    f"with {REGION_START} and ending with {REGION_END}, without the cursor marker and without comments."
)

_RAW_HEADER = (
    "### Instruction:\nRewrite the editable region of the excerpt with the edit the user is most likely to "
    "make next, given their recent edits.\n\n"
)


@dataclass(frozen=True, kw_only=True)
class NextEditPrompt:
    """The material of one prompt, already checked and budgeted by the caller."""

    path: str
    language: str = ""
    snippets: str = ""
    history: str = ""
    before: str = ""  # excerpt lines before the region (ending in a newline, or empty)
    region: str = ""  # the region, with `CURSOR` at the cursor
    after: str = ""  # excerpt lines after the region (starting right after the region's last line)

    def excerpt(self) -> str:
        after = f"\n{self.after}" if self.after else ""
        return f"File: {self.path}\n```\n{self.before}{REGION_START}\n{self.region}\n{REGION_END}{after}\n```\n"


def chat_messages(prompt: NextEditPrompt) -> tuple[tuple[str, str], ...]:
    related = f"Related code from other files:\n{prompt.snippets}\n\n" if prompt.snippets else ""
    edits = f"Recent edits:\n{prompt.history}\n" if prompt.history else "Recent edits: none\n\n"
    user = f"{related}{prompt.excerpt()}\n{edits}Rewrite the editable region."
    return (("system", SYSTEM_PROMPT), ("user", user))


def raw_prompt(prompt: NextEditPrompt) -> str:
    related = f"### Related code:\n\n{prompt.snippets}\n\n" if prompt.snippets else ""
    return (
        f"{_RAW_HEADER}{related}### User Edits:\n\n{prompt.history or 'none'}\n\n### User Excerpt:\n\n"
        f"{prompt.excerpt()}\n### Response:\n"
    )


def read_rewrite(answer: str, *, done: bool) -> tuple[str, bool]:
    """(the rewritten region as far as it is known, whether it is complete). Text after the end marker
    (or a closing fence) is ignored; before the first line is whole, nothing is returned."""
    text = answer
    start = text.find(REGION_START)
    if start >= 0:
        text = text[start + len(REGION_START) :]
        text = text.removeprefix("\r").removeprefix("\n")
    else:
        # No start marker (yet): skip a leading fence line; wait for the first whole line.
        first_end = text.find("\n")
        if first_end < 0 and not done:
            return "", False
        if text.lstrip().startswith("```"):
            text = text[first_end + 1 :] if first_end >= 0 else ""
    finished = done
    end = text.find(REGION_END)
    if end >= 0:
        text, finished = text[:end], True
    else:
        fence = text.find("\n```")
        if fence >= 0:
            text, finished = text[: fence + 1], True
        elif not done:
            # A marker may be arriving: hold back a partial one at the end.
            for size in range(min(len(REGION_END), len(text)), 0, -1):
                if REGION_END.startswith(text[-size:]) or "```".startswith(text[-size:]):
                    text = text[:-size]
                    break
    return text.replace(CURSOR, ""), finished
