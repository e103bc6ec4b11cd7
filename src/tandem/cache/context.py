"""Context windows: what the model sees around the cursor, under a token budget.

A window has two parts, in this order (`order = "stable-first"`, the default):

    stable     cross-file snippets, ranked by relevance but emitted in a deterministic order
               (imports' outlines, definitions of names used near the cursor, open documents, recent
               edits; then by path and line), so consecutive prompts share a long identical prefix and
               the provider's prompt cache hits
    volatile   the current file: `prefix` (lines before the cursor, starting at a line snapped to a
               multiple of `prefix_anchor_lines` so it moves rarely) and `suffix` (after the cursor)

`order = "naive"` exists to measure what that order is worth: the cursor's neighbourhood first (the
prefix starts wherever the budget says, not snapped, so it slides as the file grows), then the snippets
in relevance order, after the suffix (`snippet_text` is empty; the snippets end `suffix`).

Token counts come from the documents' `TokenIndex` and from memoised snippets, so a build after a
keystroke encodes only the cursor line. `ContextWindow.reused_prefix_tokens` says how many leading tokens
are identical to the previous window this builder made (what a provider's prefix cache could reuse).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from tandem.cache.candidates import Candidate, CandidateFinder, CandidateOptions
from tandem.cache.snippets import KIND_ORDER, Snippet, SnippetMaker, comment_marker, join_lines, names_near

if TYPE_CHECKING:
    from tandem.cache.symbols import SymbolIndex
    from tandem.cache.token_index import TokenIndex
    from tandem.cache.tokens import TokenCounter

# 128K-token windows are the largest the fast models take; anything larger is clamped (and said so).
MAX_BUDGET_TOKENS = 128_000
MIN_BUDGET_TOKENS = 64
# Above this many characters the cursor line is not encoded: its index count is split proportionally.
_LONG_LINE_CHARS = 2000
_RECENT_EDITS = 32


@dataclass(frozen=True, kw_only=True)
class ContextOptions:
    budget_tokens: int = 2048
    # Of the tokens the current file gets, the share that goes after the cursor.
    suffix_share: float = 0.25
    # The most of the budget cross-file snippets may take (what they leave unused goes to the file).
    snippet_share: float = 0.3
    # One snippet's ceiling, as a share of the budget (never below 256 tokens).
    max_snippet_share: float = 0.125
    prefix_anchor_lines: int = 16
    # "stable-first" (see the module docstring), or "naive": neighbourhood first, snippets last.
    order: Literal["stable-first", "naive"] = "stable-first"
    # Where snippets come from: names scanned near the cursor, definitions per name, lines per edit.
    candidates: CandidateOptions = field(default_factory=CandidateOptions)


@dataclass(frozen=True, kw_only=True)
class ContextWindow:
    """One built window. Send `snippet_text`, then `prefix`, [hole], `suffix` (in the prompt's format).
    In naive order `snippet_text` is empty and the snippets are rendered at the end of `suffix`."""

    path: str
    line: int
    character: int
    snippets: tuple[Snippet, ...]
    prefix: str
    suffix: str
    prefix_start_line: int
    suffix_end_line: int
    snippet_tokens: int
    prefix_tokens: int
    suffix_tokens: int
    budget_tokens: int
    # The stable part (the snippets, in order): its length in tokens and a digest of its content.
    stable_tokens: int
    stable_hash: str
    # Leading tokens identical to the previous window from the same builder.
    reused_prefix_tokens: int
    notes: tuple[str, ...] = ()
    order: Literal["stable-first", "naive"] = "stable-first"

    @property
    def total_tokens(self) -> int:
        return self.snippet_tokens + self.prefix_tokens + self.suffix_tokens

    @property
    def snippet_text(self) -> str:
        """The snippets as sent before the current file ('' in naive order: they end the suffix)."""
        return "" if self.order == "naive" else "".join(s.render() for s in self.snippets)


@dataclass
class _Previous:
    path: str
    digests: list[bytes]
    tokens: list[int]
    prefix_start: int
    line: int
    index_uid: int
    generation: int


@dataclass(frozen=True, kw_only=True)
class _Cursor:
    """The cursor line as a window sends it: `head` before the cursor, `tail` after (both possibly cut)."""

    line: int
    character: int
    head: str
    tail: str
    # The line's terminator ('' for the last line without one, and for a cut line).
    ending: str
    head_tokens: int
    tail_tokens: int
    # The document's lines as the window sees them (a cut line ends the document).
    line_count: int
    # What the budget leaves after the cursor line, for the file's other lines and the snippets.
    rest_tokens: int


@dataclass(frozen=True, kw_only=True)
class _FileSpan:
    """The current file's part of a window: lines [prefix_start, suffix_end) around the cursor line."""

    prefix_start: int
    suffix_end: int
    prefix_tokens: int
    suffix_tokens: int


def _clamped_budget(budget: int, notes: list[str]) -> int:
    """`budget` within [MIN_BUDGET_TOKENS, MAX_BUDGET_TOKENS], with a note if it had to move."""
    if budget > MAX_BUDGET_TOKENS:
        notes.append(f"budget {budget} tokens clamped to the maximum {MAX_BUDGET_TOKENS}")
        return MAX_BUDGET_TOKENS
    if budget < MIN_BUDGET_TOKENS:
        notes.append(f"budget {budget} tokens raised to the minimum {MIN_BUDGET_TOKENS}")
        return MIN_BUDGET_TOKENS
    return budget


def _suffix_text(lines: Sequence[str], cursor: _Cursor, suffix_end: int) -> str:
    """The text after the cursor: the rest of its line, then the lines up to `suffix_end`."""
    if cursor.ending:  # lines carry their terminators
        return cursor.tail + cursor.ending + "".join(lines[cursor.line + 1 : suffix_end])
    suffix = cursor.tail
    if cursor.line + 1 < suffix_end:
        suffix += "\n" + "\n".join(lines[cursor.line + 1 : suffix_end])
    if suffix_end < cursor.line_count:
        suffix += "\n"
    return suffix


def _stable_hash(snippets: list[Snippet]) -> str:
    """A digest of the stable part: the snippets' contents, in order."""
    h = hashlib.blake2b(digest_size=16)
    for snippet in snippets:
        h.update(snippet.digest)
    return h.hexdigest()


class ContextBuilder:
    """Builds context windows for one workspace. Not thread-safe: call it from one thread or task."""

    def __init__(
        self,
        *,
        counter: TokenCounter,
        symbols: SymbolIndex,
        options: ContextOptions | None = None,
        may_send: Callable[[str], bool] | None = None,
    ) -> None:
        self.options = options or ContextOptions()
        self._counter = counter
        self._symbols = symbols
        self._may_send = may_send or (lambda _path: True)
        self._finder = CandidateFinder(
            symbols=symbols,
            maker=SnippetMaker(counter=counter, symbols=symbols),
            may_send=self._may_send,
        )
        self._open: dict[str, TokenIndex] = {}
        self._edits: deque[tuple[str, int]] = deque(maxlen=_RECENT_EDITS)
        self._previous: _Previous | None = None
        # The last cursor's snippet candidates, under the key of everything they were found from
        # (`_candidates_key`): consecutive keystrokes on one line usually find the same ones.
        self._found: tuple[tuple[object, ...], tuple[Candidate, ...]] | None = None

    # -- what the editor is doing -------------------------------------------------------------------

    def open_document(self, path: str, index: TokenIndex) -> None:
        self._open[path] = index

    def close_document(self, path: str) -> None:
        self._open.pop(path, None)

    def forget(self) -> None:
        """Drop memoised rankings: call when `may_send` starts answering differently."""
        self._finder.forget()
        self._found = None

    def note_edit(self, path: str, line: int, *, lines_added: int = 0) -> None:
        """Remember an edit at `line` of `path` (recent edits become snippets in other windows).
        `lines_added` (negative for removed lines) moves the remembered edits below it along."""
        if lines_added:
            self._edits = deque(
                ((p, n + lines_added if p == path and n > line else n) for p, n in self._edits), maxlen=_RECENT_EDITS
            )
        if self._edits and self._edits[-1][0] == path and abs(self._edits[-1][1] - line) <= 2:
            self._edits.pop()  # the same place again: keep one entry, the newest
        self._edits.append((path, line))

    # -- building -----------------------------------------------------------------------------------

    def build(
        self,
        *,
        path: str,
        index: TokenIndex,
        line: int,
        character: int,
        options: ContextOptions | None = None,
    ) -> ContextWindow:
        """The window for a cursor at (`line`, `character`) of `path`, whose lines `index` holds.
        `character` counts code points."""
        opts = options or self.options
        naive = opts.order == "naive"
        notes: list[str] = []
        budget = _clamped_budget(opts.budget_tokens, notes)
        cursor = self._cursor(index, line, character, budget, opts, notes)
        chosen, snippet_tokens, span = self._share_budget(path, index, cursor, budget, opts)
        if not naive:
            chosen.sort(key=lambda s: (KIND_ORDER[s.kind], s.path, s.start_line))
        prefix = join_lines(index.lines[span.prefix_start : cursor.line]) + cursor.head
        suffix = _suffix_text(index.lines, cursor, span.suffix_end)
        if naive and chosen:
            suffix += ("" if not suffix or suffix.endswith("\n") else "\n") + "".join(s.render() for s in chosen)
        reused = self._reused(path, index, chosen, span.prefix_start, cursor.line, naive=naive)
        return ContextWindow(
            path=path,
            line=cursor.line,
            character=cursor.character,
            snippets=tuple(chosen),
            prefix=prefix,
            suffix=suffix,
            prefix_start_line=span.prefix_start,
            suffix_end_line=max(span.suffix_end, cursor.line + 1) if cursor.line_count else 0,
            snippet_tokens=snippet_tokens,
            prefix_tokens=span.prefix_tokens,
            suffix_tokens=span.suffix_tokens,
            budget_tokens=budget,
            stable_tokens=snippet_tokens,
            stable_hash=_stable_hash(chosen),
            reused_prefix_tokens=reused,
            notes=tuple(notes),
            order=opts.order,
        )

    def _cursor(
        self, index: TokenIndex, line: int, character: int, budget: int, opts: ContextOptions, notes: list[str]
    ) -> _Cursor:
        """The cursor line (the position clamped into the document) split at the cursor and counted, cut
        to the budget if it is longer, and the tokens left for the file's other lines and the snippets."""
        lines = index.lines
        line_count = len(lines)
        line = max(0, min(line, line_count - 1)) if line_count else 0
        raw = lines[line] if line_count else ""
        text = raw.rstrip("\r\n")
        ending = raw[len(text) :]
        character = max(0, min(character, len(text)))
        head, tail = text[:character], text[character:]
        head_tokens, tail_tokens = self._split_line_tokens(index, line, head, tail)
        if head_tokens + tail_tokens <= budget:
            return _Cursor(
                line=line,
                character=character,
                head=head,
                tail=tail,
                ending=ending,
                head_tokens=head_tokens,
                tail_tokens=tail_tokens,
                line_count=line_count,
                rest_tokens=budget - head_tokens - tail_tokens,
            )
        head, tail, head_tokens, tail_tokens = self._cut_line(head, tail, head_tokens, tail_tokens, budget, opts)
        notes.append("the cursor line is longer than the budget: only the part around the cursor is sent")
        # Other lines would not join a cut line contiguously: the window is that part alone, with nothing
        # after the cut tail, not even the line's newline.
        return _Cursor(
            line=line,
            character=character,
            head=head,
            tail=tail,
            ending="",
            head_tokens=head_tokens,
            tail_tokens=tail_tokens,
            line_count=line + 1,
            rest_tokens=0,
        )

    def _share_budget(
        self, path: str, index: TokenIndex, cursor: _Cursor, budget: int, opts: ContextOptions
    ) -> tuple[list[Snippet], int, _FileSpan]:
        """Share what the cursor line leaves between cross-file snippets and the current file: snippets
        first, up to their share; the file's lines around the cursor in what they leave; and, when the
        whole file fits, the rest to more snippets. Returns the snippets (in relevance order), their
        tokens and the file's span."""
        line = cursor.line
        # The largest current-file window we could take: snippets never repeat what it may show.
        far_window = self._local_window(index, line, cursor.rest_tokens, opts)
        per_snippet = max(256, int(budget * opts.max_snippet_share))
        candidates = self._candidates(path, index, cursor, far_window, per_snippet, opts.candidates)
        chosen: list[Snippet] = []
        taken: dict[str, list[Snippet]] = {}
        snippet_cap = min(cursor.rest_tokens, int(budget * opts.snippet_share))
        used = self._select(candidates, snippet_cap, per_snippet, chosen, taken)
        prefix_start, suffix_end = self._local_window(index, line, cursor.rest_tokens - used, opts)
        lines_before = index.tokens_in(prefix_start, line)
        lines_after = index.tokens_in(line + 1, suffix_end)
        if prefix_start == 0 and suffix_end >= cursor.line_count:
            # The whole file fits: what is left of the budget goes to more snippets.
            left = cursor.rest_tokens - used - lines_before - lines_after
            used += self._select(candidates, left, max(per_snippet, left), chosen, taken)
        span = _FileSpan(
            prefix_start=prefix_start,
            suffix_end=suffix_end,
            prefix_tokens=cursor.head_tokens + lines_before,
            suffix_tokens=cursor.tail_tokens + lines_after,
        )
        return chosen, used, span

    def _candidates(
        self,
        path: str,
        index: TokenIndex,
        cursor: _Cursor,
        far_window: tuple[int, int],
        per_snippet: int,
        opts: CandidateOptions,
    ) -> list[Candidate]:
        """The snippet candidates for the cursor (`CandidateFinder.find`), the last cursor's again when
        nothing they were found from has changed."""
        key = self._candidates_key(path, index, cursor, far_window, per_snippet, opts)
        if self._found is not None and self._found[0] == key:
            return list(self._found[1])
        found = self._finder.find(
            path=path,
            index=index,
            line=cursor.line,
            character=cursor.character,
            local_window=far_window,
            comment=comment_marker(path),
            per_snippet_tokens=per_snippet,
            open_documents=self._open,
            recent_edits=reversed(self._edits),
            opts=opts,
        )
        self._found = (key, tuple(found))
        return found

    def _candidates_key(
        self,
        path: str,
        index: TokenIndex,
        cursor: _Cursor,
        far_window: tuple[int, int],
        per_snippet: int,
        opts: CandidateOptions,
    ) -> tuple[object, ...]:
        """Everything `CandidateFinder.find` reads for a cursor, in a form cheaper to compare than finding:
        the names near the cursor that have definitions (with their weights and the versions of their
        definitions; typing a new name, which has none, leaves it as it was), the imported files, the recent
        edits, the other open documents with their versions, and what `may_send` says of every file among
        them. A candidate's snippet is made when selection reaches it, from the file as it is then (and
        memoised by its version), so the texts the candidates would show are not part of the key."""
        symbols = self._symbols
        answers: dict[str, bool] = {}

        def may_send(file: str) -> bool:  # asked once per file: the recent edits are often in one or two
            answer = answers.get(file)
            if answer is None:
                answer = answers[file] = bool(self._may_send(file))
            return answer

        names = names_near(
            index.lines,
            cursor.line,
            cursor.character,
            before=opts.neighbourhood_lines,
            after=opts.neighbourhood_lines // 4,
        )
        defined = tuple(
            (name, weight, symbols.name_version(name)) for name, weight in names.items() if symbols.defines(name)
        )
        imported = tuple(target for target in symbols.imported_paths(path) if may_send(target))
        edits = tuple((edit_path, edit_line, may_send(edit_path)) for edit_path, edit_line in self._edits)
        others = tuple(
            (other, open_index.uid, open_index.generation, may_send(other))
            for other, open_index in sorted(self._open.items())
            if other != path
        )
        return (path, index.uid, cursor.line, far_window, per_snippet, opts, defined, imported, edits, others)

    def _split_line_tokens(self, index: TokenIndex, line: int, head: str, tail: str) -> tuple[int, int]:
        if len(head) + len(tail) <= _LONG_LINE_CHARS:
            return self._counter.count(head), self._counter.count(tail)
        # Encoding a minified megabyte line per keystroke would cost more than the whole build.
        total = index.line_tokens(line)
        head_tokens = total * len(head) // max(1, len(head) + len(tail))
        return head_tokens, total - head_tokens

    def _cut_line(
        self, head: str, tail: str, head_tokens: int, tail_tokens: int, budget: int, opts: ContextOptions
    ) -> tuple[str, str, int, int]:
        """Keep the part of an over-long cursor line nearest the cursor, split as the options say."""
        head_budget = min(head_tokens, max(budget - tail_tokens, int(budget * (1 - opts.suffix_share))))
        tail_budget = min(tail_tokens, budget - head_budget)
        if head_tokens > head_budget:
            head, head_tokens = self._fit(head, head_tokens, head_budget, keep_end=True)
        if tail_tokens > tail_budget:
            tail, tail_tokens = self._fit(tail, tail_tokens, tail_budget, keep_end=False)
        return head, tail, head_tokens, tail_tokens

    def _fit(self, text: str, tokens: int, budget: int, *, keep_end: bool) -> tuple[str, int]:
        """Cut `text` (of `tokens` tokens) to at most `budget` tokens, keeping its end or its start."""
        # Characters per token vary along a line, so cut by the ratio, count, and cut again if needed.
        for _ in range(4):
            if tokens <= budget:
                break
            keep = len(text) * budget * 97 // (tokens * 100)
            text = text[len(text) - keep :] if keep_end else text[:keep]
            tokens = self._counter.count(text)
        return text, tokens

    def _local_window(self, index: TokenIndex, line: int, budget: int, opts: ContextOptions) -> tuple[int, int]:
        """(prefix start, suffix end) for `budget` tokens of whole lines around `line`."""
        n = index.line_count
        prefix_budget = int(budget * (1 - opts.suffix_share))
        suffix_budget = budget - prefix_budget
        start = index.start_within(line, prefix_budget)
        if start == 0:
            suffix_budget += prefix_budget - index.tokens_in(0, line)
        end = index.end_within(line + 1, suffix_budget)
        if end >= n and start > 0:
            spare = suffix_budget - index.tokens_in(line + 1, n)
            start = index.start_within(line, prefix_budget + spare)
        anchor = max(1, opts.prefix_anchor_lines)
        if start > 0 and opts.order != "naive":
            # Snap forward to an anchor line: the prefix then starts at the same line for many keystrokes.
            start = min(line, -(-start // anchor) * anchor)
        return start, max(end, min(n, line + 1))

    def _select(
        self,
        candidates: list[Candidate],
        budget: int,
        per_snippet: int,
        chosen: list[Snippet],
        taken: dict[str, list[Snippet]],
    ) -> int:
        """Take candidates best first while they fit; returns the change in tokens taken. Candidates
        left out for size stay in `candidates` (a later pass may have room for them)."""
        used = 0
        keep: list[Candidate] = []
        for candidate in candidates:
            if budget - used < 16:
                keep.append(candidate)
                continue
            snippet = candidate.make()
            if snippet is None:
                continue
            overlapping: list[Snippet] = []
            # An outline summarises a whole file; it neither covers nor is covered by its lines.
            if snippet.kind != "import":
                same_file = taken.setdefault(snippet.path, [])
                overlapping = [
                    s for s in same_file if s.start_line < snippet.end_line and snippet.start_line < s.end_line
                ]
                # A snippet may swallow the ones it contains (a class after its method), nothing else.
                if any(s.start_line < snippet.start_line or s.end_line > snippet.end_line for s in overlapping):
                    continue
            freed = sum(s.tokens for s in overlapping)
            if snippet.tokens > per_snippet or used - freed + snippet.tokens > budget:
                keep.append(candidate)
                continue
            for old in overlapping:
                taken[snippet.path].remove(old)
                chosen.remove(old)
            if snippet.kind != "import":
                taken[snippet.path].append(snippet)
            chosen.append(snippet)
            used += snippet.tokens - freed
        candidates[:] = keep
        return used

    def _reused(
        self, path: str, index: TokenIndex, chosen: list[Snippet], prefix_start: int, line: int, *, naive: bool
    ) -> int:
        previous = self._previous
        digests = [s.digest for s in chosen]
        tokens = [s.tokens for s in chosen]
        self._previous = _Previous(
            path=path,
            digests=digests,
            tokens=tokens,
            prefix_start=prefix_start,
            line=line,
            index_uid=index.uid,
            generation=index.generation,
        )
        if previous is None:
            return 0
        if naive:
            # The file comes first: its unchanged lines before the cursor, if the window starts where it did.
            if previous.index_uid != index.uid or previous.prefix_start != prefix_start:
                return 0
            unchanged = index.unchanged_prefix_lines(previous.generation)
            return index.tokens_in(prefix_start, min(line, previous.line, unchanged))
        reused = 0
        for i, digest in enumerate(digests):
            if i >= len(previous.digests) or previous.digests[i] != digest:
                return reused
            reused += tokens[i]
        if len(previous.digests) != len(digests):
            return reused
        if previous.index_uid != index.uid or previous.prefix_start != prefix_start:
            return reused
        unchanged = index.unchanged_prefix_lines(previous.generation)
        return reused + index.tokens_in(prefix_start, min(line, previous.line, unchanged))
