"""The completion cache: answer a keystroke from a completion already received, or miss; never go stale.

An entry is a completion received for an anchor (a cursor position), together with the text it assumed:
the last `prefix_window_chars` characters before the anchor and the first `suffix_window_chars` after
it. A lookup hits when the text before the cursor is exactly the anchor's prefix window followed by the
first k characters of the completion (the user typed them, or accepted them), and the text after the
cursor is exactly the suffix window the entry remembers. The answer is the rest of the completion.
Anything else, an edit above the cursor within the window, a changed suffix, a different model, is a miss.

Lookups do not scan entries. Each entry is filed under the text just before the start of each line it
can be typed into (the anchor's line, and every line the completion starts), keyed with the model; a
lookup hashes the same text for the cursor's line, then verifies its few candidates exactly. The index
keeps only that hash and packed ints (entry id and line offset in one), not the text: a hash that two texts
share only adds a candidate, which the exact check turns away. (It held each key's text and two tuples per
line: 60% of a server's cache, whose completions run to ten lines.)

Bounded by entries (LRU, lru-dict) and by bytes: the sizes of the strings an entry holds plus measured
per-entry and per-line overheads, within a few per cent of what tracemalloc counts (a 4,096-entry cache of
one-to-ten-line completions holds 7-14 MB).
"""

from __future__ import annotations

import sys
from array import array
from dataclasses import dataclass
from itertools import count

from lru import LRU

DEFAULT_MAX_ENTRIES = 4096
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_PREFIX_WINDOW_CHARS = 1024
DEFAULT_SUFFIX_WINDOW_CHARS = 256
# Characters before a line start that identify it; longer only costs hashing, shorter only costs
# more candidates to verify.
_LINE_KEY_CHARS = 96
_ENTRY_OVERHEAD_BYTES = 350
_KEY_OVERHEAD_BYTES = 56
# A posting is `entry_id << _OFFSET_BITS | offset`: one int instead of a tuple of two.
_OFFSET_BITS = 32
_OFFSET_MASK = (1 << _OFFSET_BITS) - 1


@dataclass(frozen=True, kw_only=True, slots=True)
class CacheHit:
    """What to show now (`text`, the rest of the cached completion) and where it came from."""

    text: str
    entry_id: int
    typed_chars: int
    completion: str


class _Entry:
    __slots__ = (
        "anchor_line",
        "completion",
        "id",
        "keys",
        "model",
        "prefix_window",
        "size_bytes",
        "suffix_window",
    )

    def __init__(self, *, entry_id: int, model: str, prefix_window: str, suffix_window: str, completion: str) -> None:
        self.id = entry_id
        self.model = model
        self.prefix_window = prefix_window
        self.suffix_window = suffix_window
        self.completion = completion
        # The anchor's line up to the anchor: typed-through text on that line must extend it.
        self.anchor_line = prefix_window[prefix_window.rfind("\n") + 1 :]
        # Where the entry is filed: [key hash, offset, key hash, offset, ...].
        self.keys = array("q")
        self.size_bytes = 0


class CompletionCache:
    """Completions by the text they assumed. Not thread-safe: use from the server's event loop."""

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        prefix_window_chars: int = DEFAULT_PREFIX_WINDOW_CHARS,
        suffix_window_chars: int = DEFAULT_SUFFIX_WINDOW_CHARS,
    ) -> None:
        if prefix_window_chars <= _LINE_KEY_CHARS:
            raise ValueError(f"prefix_window_chars must exceed {_LINE_KEY_CHARS}")
        self.max_bytes = max_bytes
        self.prefix_window_chars = prefix_window_chars
        self.suffix_window_chars = suffix_window_chars
        # Recency lives in the LRU; `_live` reads entries without touching it (lru-dict cannot peek).
        self._recency: LRU[int, None] = LRU(max(1, max_entries), callback=self._evicted)
        self._live: dict[int, _Entry] = {}
        # hash((model, text before a line start)) -> the postings filed there (`_OFFSET_BITS`; one is kept as
        # the int itself, more as a list, oldest first); offset is where the line starts in the completion.
        self._lines: dict[int, int | list[int]] = {}
        self._ids = count(1)
        self.bytes_used = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._live)

    # -- filling ------------------------------------------------------------------------------------

    def put(self, *, model: str, prefix: str, suffix: str, completion: str) -> int | None:
        """Remember `completion` for a cursor with `prefix` before and `suffix` after it. Pass at least
        `prefix_window_chars` of prefix and `suffix_window_chars` of suffix (all of it, if shorter).
        Returns the entry id (for `extend`), or None for an empty completion."""
        if not completion:
            return None
        prefix_window = prefix[-self.prefix_window_chars :]
        suffix_window = suffix[: self.suffix_window_chars]
        self._drop_same_anchor(model, prefix_window, suffix_window)
        entry = _Entry(
            entry_id=next(self._ids),
            model=model,
            prefix_window=prefix_window,
            suffix_window=suffix_window,
            completion="",
        )
        self._live[entry.id] = entry
        self._recency[entry.id] = None
        self._file(entry, prefix_window[: len(prefix_window) - len(entry.anchor_line)], 0)
        self._grow(entry, completion)
        return entry.id

    def extend(self, entry_id: int, completion: str) -> bool:
        """The completion of `entry_id` grew (its stream continued): store the longer text. False if the
        entry is gone or `completion` does not extend what it holds."""
        entry = self._live.get(entry_id)
        if entry is None or not completion.startswith(entry.completion):
            return False
        if len(completion) > len(entry.completion):
            self._grow(entry, completion)
        return True

    def discard(self, entry_id: int) -> None:
        if entry_id in self._live:
            del self._recency[entry_id]
            self._unfile(self._live.pop(entry_id))

    def clear(self) -> None:
        self._recency.clear()
        self._live.clear()
        self._lines.clear()
        self.bytes_used = 0

    # -- answering ----------------------------------------------------------------------------------

    def lookup(self, *, model: str, prefix: str, suffix: str) -> CacheHit | None:
        """The rest of a cached completion the cursor is typing through, or None. Costs one dict lookup
        on the text before the cursor's line, and one window compare per candidate found there."""
        window = prefix[-self.prefix_window_chars :]
        line_start = window.rfind("\n") + 1
        current_line = window[line_start:]
        postings = self._postings(model, window[:line_start])
        if postings:
            suffix_window = suffix[: self.suffix_window_chars]
            for posting in reversed(postings):
                entry_id, offset = posting >> _OFFSET_BITS, posting & _OFFSET_MASK
                entry = self._live.get(entry_id)
                if entry is None:
                    continue
                typed = self._typed_through(entry, offset, current_line, window, suffix_window)
                if typed is not None:
                    self._recency[entry_id] = None  # a hit makes the entry recently used
                    self.hits += 1
                    text = entry.completion
                    return CacheHit(text=text[typed:], entry_id=entry_id, typed_chars=typed, completion=text)
        self.misses += 1
        return None

    def _typed_through(
        self, entry: _Entry, offset: int, current_line: str, window: str, suffix_window: str
    ) -> int | None:
        """How much of `entry`'s completion lies before the cursor, if the cursor is typing through it
        (every character of both windows checked); None if the entry does not apply."""
        if entry.suffix_window != suffix_window:
            return None
        completion = entry.completion
        if offset == 0:
            if not current_line.startswith(entry.anchor_line):
                return None
            typed = len(current_line) - len(entry.anchor_line)
        else:
            typed = offset + len(current_line)
        if typed >= len(completion) or completion.find("\n", offset, typed) != -1:
            return None
        expected = (entry.prefix_window + completion[:typed])[-self.prefix_window_chars :]
        return typed if expected == window else None

    # -- internals ----------------------------------------------------------------------------------

    def _grow(self, entry: _Entry, completion: str) -> None:
        searched = len(entry.completion)
        entry.completion = completion
        # Every line the completion starts is a place typing can reach: file the entry under it.
        position = completion.find("\n", searched)
        while position != -1:
            start = position + 1
            self._file(entry, (entry.prefix_window + completion[:start])[-_LINE_KEY_CHARS:], start)
            position = completion.find("\n", start)
        self._resize(entry)

    def _postings(self, model: str, text_before_line: str) -> list[int] | tuple[int, ...]:
        """The postings filed under `text_before_line` (and some filed under another text of equal hash)."""
        held = self._lines.get(hash((model, text_before_line[-_LINE_KEY_CHARS:])))
        if held is None:
            return ()
        return (held,) if isinstance(held, int) else held

    def _file(self, entry: _Entry, text_before_line: str, offset: int) -> None:
        key = hash((entry.model, text_before_line[-_LINE_KEY_CHARS:]))
        posting = entry.id << _OFFSET_BITS | offset
        held = self._lines.get(key)
        if held is None:
            self._lines[key] = posting
        elif isinstance(held, int):
            self._lines[key] = [held, posting]
        else:
            held.append(posting)
        entry.keys.append(key)
        entry.keys.append(offset)

    def _resize(self, entry: _Entry) -> None:
        # The strings an entry holds (its anchor line and each line key are copies), plus per entry and per
        # key the objects around them; the overheads are measured (tests/unit/cache/test_cache_completions.py
        # compares the total with tracemalloc's count).
        anchor_line = entry.anchor_line
        size = (
            _ENTRY_OVERHEAD_BYTES
            + sys.getsizeof(entry.completion)
            + sys.getsizeof(entry.prefix_window)
            + sys.getsizeof(entry.suffix_window)
            + (0 if anchor_line is entry.prefix_window else sys.getsizeof(anchor_line))
            + sys.getsizeof(entry.keys)
            + _KEY_OVERHEAD_BYTES * (len(entry.keys) // 2)
        )
        self.bytes_used += size - entry.size_bytes
        entry.size_bytes = size
        while self.bytes_used > self.max_bytes and len(self._live) > 1:
            oldest = self._recency.peek_last_item()
            if oldest is None or oldest[0] == entry.id:
                break
            self.discard(oldest[0])

    def _drop_same_anchor(self, model: str, prefix_window: str, suffix_window: str) -> None:
        line_start = prefix_window.rfind("\n") + 1
        for posting in list(self._postings(model, prefix_window[:line_start])):
            entry_id, offset = posting >> _OFFSET_BITS, posting & _OFFSET_MASK
            entry = self._live.get(entry_id)
            if (
                entry is not None
                and offset == 0
                and entry.prefix_window == prefix_window
                and entry.suffix_window == suffix_window
            ):
                self.discard(entry_id)

    def _evicted(self, entry_id: int, _value: None) -> None:
        entry = self._live.pop(entry_id, None)
        if entry is not None:
            self._unfile(entry)

    def _unfile(self, entry: _Entry) -> None:
        self.bytes_used -= entry.size_bytes
        entry.size_bytes = 0
        keys = entry.keys
        for i in range(0, len(keys), 2):
            key, posting = keys[i], entry.id << _OFFSET_BITS | keys[i + 1]
            held = self._lines.get(key)
            if held is None:
                continue
            if isinstance(held, int):
                if held == posting:
                    del self._lines[key]
                continue
            try:
                held.remove(posting)
            except ValueError:
                pass
            if len(held) == 1:
                self._lines[key] = held[0]
        del keys[:]
