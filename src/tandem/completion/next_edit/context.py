"""What the model is shown for a next edit: the editable region around the cursor (the cursor marked),
the text around it, the user's recent edits as diffs and the cross-file snippets, within the prompt's
token budget (`[next_edit] budget_tokens`): snippets and recent edits a quarter each at most, the
excerpt's unchanged lines what is left. The prompt's layout is `completion.next_edit.prompt`'s.

The region is rewritten whole, so it is held to what an answer can hold (`region_span`): long lines
(minified code, data) shrink it, and a cursor's line that alone does not fit asks nothing. An excerpt line
that does not fit what is left ends that side of the excerpt: no prompt outgrows its budget."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tandem.cache.context import MAX_BUDGET_TOKENS
from tandem.cache.edit_history import EditHistory, Lines, render
from tandem.cache.edit_region import Region, region_bounds
from tandem.completion.next_edit.prompt import CURSOR, NextEditPrompt, chat_messages, raw_prompt
from tandem.completion.next_edit.types import NextEditRequest
from tandem.completion.providers.backends.base import ModelRequest

if TYPE_CHECKING:
    from tandem.completion.config.tree import NextEditConfig
    from tandem.completion.providers.tiers import Tier
    from tandem.completion.workspace import WorkspaceIndex

CHARS_PER_TOKEN = 4
# The step the prompt's changing parts are counted in when the excerpt's lines are chosen (~128 tokens).
_STABLE_CHARS = 512


@dataclass(frozen=True, kw_only=True)
class NextEditContext:
    region: Region
    prompt: NextEditPrompt
    # The recent edits the prompt shows.
    history_edits: int
    # The paths its snippets and recent edits come from (for the gate).
    sources: tuple[str, ...]


def budget_tokens(settings: NextEditConfig) -> int:
    """The prompt's budget: `[next_edit] budget_tokens`, never over the largest window (128K tokens)."""
    return min(settings.budget_tokens, MAX_BUDGET_TOKENS)


def region_max_chars(settings: NextEditConfig) -> int:
    """The most characters the editable region may hold: its rewrite must fit the answer's `max_tokens`
    (with a quarter to spare for the markers and a changed line or two), and the region at most half the
    prompt's budget."""
    return min(budget_tokens(settings) * CHARS_PER_TOKEN // 2, settings.max_tokens * CHARS_PER_TOKEN * 3 // 4)


def region_span(lines: Lines, line: int, settings: NextEditConfig) -> tuple[int, int] | None:
    """The editable region's lines [start, end) around the cursor's `line`: those of `region_bounds`
    (`region_above` lines over it, `region_below` under it) that fit `region_max_chars`, taken outwards
    from the cursor's line, a side ending at its first line that does not fit. None when the cursor's line
    alone does not."""
    low, high = region_bounds(lines.line_count, line, above=settings.region_above, below=settings.region_below)
    if not low <= line < high:
        return None
    left = region_max_chars(settings) - len(lines.line_content(line)) - 1
    if left < 0:
        return None
    start, end = line, line + 1
    below, above = True, True
    while below or above:
        if below:
            below = end < high and len(lines.line_content(end)) + 1 <= left
            if below:
                left -= len(lines.line_content(end)) + 1
                end += 1
        if above:
            above = start > low and len(lines.line_content(start - 1)) + 1 <= left
            if above:
                start -= 1
                left -= len(lines.line_content(start)) + 1
    return start, end


def build_context(
    request: NextEditRequest,
    settings: NextEditConfig,
    *,
    history_of: EditHistory,
    workspace: WorkspaceIndex | None,
    buffer: Callable[[str], Lines | None],
    may_send: Callable[[str], bool],
) -> NextEditContext | None:
    """The region and the prompt's material for `request` (`buffer`: a document's text by URI, for the
    recent edits; `may_send`: whether the gate lets a document's text out); None when the cursor's line is
    too long to rewrite (`region_span`)."""
    lines = request.document
    span = region_span(lines, request.line, settings)
    if span is None:
        return None
    start, end = span
    region = Region(start, tuple(lines.line_content(i) for i in range(start, end)))
    marked = _marked(region, request)
    budget_chars = budget_tokens(settings) * CHARS_PER_TOKEN
    quarter = budget_chars // 4
    edits = history_of.recent(buffer, allowed=may_send)
    if workspace is not None:
        # Paths as the workspace names them: shorter, and they say nothing of the user's home.
        edits = [dataclasses.replace(edit, path=workspace.relative(edit.uri)) for edit in edits]
    history = render(edits, max_chars=quarter)
    snippets, snippet_paths = _snippets(request, workspace, quarter)
    # The excerpt's unchanged lines take what the other parts leave, each part counted rounded up (the
    # history to a quarter at most): counted exactly, a key press that lengthens the newest edit or the
    # region would drop the excerpt's outermost line now and then, and a line dropped above the region
    # changes the prompt from its start, missing the provider's prompt cache.
    region_chars = sum(len(x) + 1 for x in marked)
    left = (
        budget_chars
        - min(_round_up(len(history), _STABLE_CHARS), quarter)
        - len(snippets)
        - _round_up(region_chars, _STABLE_CHARS)
    )
    above, below = _excerpt(lines, start, end, settings.context_lines, left)
    prompt = NextEditPrompt(
        path=workspace.relative(request.uri) if workspace is not None else request.path,
        language=request.language,
        snippets=snippets,
        history=history,
        before="".join(f"{text}\n" for text in above),
        region="\n".join(marked),
        after="\n".join(below),
    )
    count = history.count("\n--- ") + (1 if history else 0)
    sources = tuple(dict.fromkeys([*(edit.path for edit in edits), *snippet_paths]))
    return NextEditContext(region=region, prompt=prompt, history_edits=count, sources=sources)


def _marked(region: Region, request: NextEditRequest) -> list[str]:
    """The region's lines with the cursor marked."""
    marked = list(region.lines)
    at = request.line - region.start
    if 0 <= at < len(marked):
        column = min(request.character, len(marked[at]))
        marked[at] = marked[at][:column] + CURSOR + marked[at][column:]
    return marked


def _snippets(request: NextEditRequest, workspace: WorkspaceIndex | None, max_chars: int) -> tuple[str, list[str]]:
    """The cross-file snippets of the cursor's context window, their newest `max_chars` from a whole line,
    and the paths they come from."""
    if workspace is None:
        return "", []
    window = workspace.window(request.uri, request.line, request.character)
    if window is None:
        return "", []
    text = window.snippet_text
    if len(text) > max_chars:
        text = text[-max_chars:]
        text = text[text.find("\n") + 1 :]
    return text, [snippet.path for snippet in window.snippets]


def _excerpt(lines: Lines, start: int, end: int, most: int, left: int) -> tuple[list[str], list[str]]:
    """Unchanged lines above and below the region, nearest first on both sides in turn, `most` a side and
    `left` characters in all; a side ends at the document's edge, or at its first line that no longer fits."""
    above: list[str] = []
    below: list[str] = []
    open_sides = {"above": True, "below": True}
    for offset in range(1, most + 1):
        for index, side, name in ((start - offset, above, "above"), (end - 1 + offset, below, "below")):
            if not open_sides[name] or not 0 <= index < lines.line_count:
                continue
            text = lines.line_content(index)
            if len(text) + 1 > left:
                open_sides[name] = False
                continue
            left -= len(text) + 1
            side.append(text)
    above.reverse()
    return above, below


def model_request(settings: NextEditConfig, tier: Tier, prompt: NextEditPrompt) -> ModelRequest:
    """The request for `tier`: the raw prompt for a `fim` provider (with `prompt = "auto"`), chat otherwise."""
    # A local model behind a `fim` provider is asked by chat too: its server serves both, and a small
    # model follows the chat prompt's instructions where the raw one gets it writing code at random.
    raw = settings.prompt == "raw" or (
        settings.prompt == "auto" and tier.config.provider == "fim" and not tier.config.local
    )
    common: dict[str, Any] = {
        "prefix": "",
        "suffix": "",
        "language": prompt.language,
        "path": prompt.path,
        "max_tokens": settings.max_tokens,
        "temperature": tier.config.temperature,
    }
    if raw:
        return ModelRequest(raw_prompt=raw_prompt(prompt), **common)
    return ModelRequest(messages=chat_messages(prompt), **common)


def count_tokens(workspace: WorkspaceIndex | None, text: str) -> int:
    """`text`'s tokens by the workspace's counter (tiktoken), else estimated from its length."""
    counter = workspace.counter if workspace is not None else None
    return counter.count(text) if counter is not None else -(-len(text) // CHARS_PER_TOKEN)


def _round_up(chars: int, step: int) -> int:
    return -(-chars // step) * step
