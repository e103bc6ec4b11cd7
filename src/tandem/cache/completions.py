"""The completion cache: answer a keystroke from a completion already received, or miss; never go stale.

An entry is a completion received for an anchor (a cursor position), together with the text it assumed:
the last `prefix_window_chars` characters before the anchor and the first `suffix_window_chars` after
it. A lookup hits when the text before the cursor is exactly the anchor's prefix window followed by the
first k characters of the completion (the user typed them, or accepted them), and the text after the
cursor is exactly the suffix window the entry remembers. The answer is the rest of the completion.
Anything else, an edit above the cursor within the window, a changed suffix, a different model, is a miss.

The windows are kept as 128-bit BLAKE2b digests, not text (a 1 KB prefix window was a third of a full
cache): a lookup digests the same span of the live text and compares. So a lookup is handed
`lookup_prefix_chars` of prefix, the window plus as much as can have been typed through
(`MAX_TYPED_CHARS`); typing further through one completion than that is a miss, never a wrong answer.

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

import hashlib
import sys
from array import array
from dataclasses import dataclass
from itertools import count

from lru import LRU

DEFAULT_MAX_ENTRIES = 4096
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_PREFIX_WINDOW_CHARS = 1024
DEFAULT_SUFFIX_WINDOW_CHARS = 256
# The most of one completion a lookup can find typed through (the prefix it is handed reaches this far
# back beyond the window).
MAX_TYPED_CHARS = 4096
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


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class _Entry:
    __slots__ = (
        "anchor_line",
        "completion",
        "id",
        "keys",
        "model",
        "prefix_digest",
        "prefix_tail",
        "size_bytes",
        "suffix_digest",
    )

    def __init__(
        self, *, entry_id: int, model: str, prefix_window: str, prefix_digest: bytes, suffix_digest: bytes
    ) -> None:
        self.id = entry_id
        self.model = model
        self.prefix_digest = prefix_digest
        self.suffix_digest = suffix_digest
        # What the line keys of the completion's first lines are made from (`_grow`).
        self.prefix_tail = prefix_window[-_LINE_KEY_CHARS:]
        self.completion = ""
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
        # How much prefix `lookup` needs to find a completion typed through up to `MAX_TYPED_CHARS`.
        self.lookup_prefix_chars = prefix_window_chars + MAX_TYPED_CHARS
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
        prefix_digest, suffix_digest = _digest(prefix_window), _digest(suffix[: self.suffix_window_chars])
        self._drop_same_anchor(model, prefix_window, prefix_digest, suffix_digest)
        entry = _Entry(
            entry_id=next(self._ids),
            model=model,
            prefix_window=prefix_window,
            prefix_digest=prefix_digest,
            suffix_digest=suffix_digest,
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
        """The rest of a cached completion the cursor is typing through, or None. Pass `lookup_prefix_chars`
        of `prefix` (all of it, if shorter) and `suffix_window_chars` of `suffix`. Costs one dict lookup on
        the text before the cursor's line, and one window digest per candidate found there."""
        window = prefix[-self.prefix_window_chars :]
        line_start = window.rfind("\n") + 1
        current_line = window[line_start:]
        postings = self._postings(model, window[:line_start])
        if postings:
            suffix_digest = _digest(suffix[: self.suffix_window_chars])
            for posting in reversed(postings):
                entry_id, offset = posting >> _OFFSET_BITS, posting & _OFFSET_MASK
                entry = self._live.get(entry_id)
                if entry is None:
                    continue
                typed = self._typed_through(entry, offset, current_line, prefix, suffix_digest)
                if typed is not None:
                    self._recency[entry_id] = None  # a hit makes the entry recently used
                    self.hits += 1
                    text = entry.completion
                    return CacheHit(text=text[typed:], entry_id=entry_id, typed_chars=typed, completion=text)
        self.misses += 1
        return None

    def _typed_through(
        self, entry: _Entry, offset: int, current_line: str, prefix: str, suffix_digest: bytes
    ) -> int | None:
        """How much of `entry`'s completion lies before the cursor, if the cursor is typing through it
        (the typed text compared, both windows digested); None if the entry does not apply."""
        if entry.suffix_digest != suffix_digest:
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
        before = len(prefix) - typed
        if before < 0 or not prefix.endswith(completion[:typed]):
            return None
        window = prefix[max(0, before - self.prefix_window_chars) : before]
        return typed if _digest(window) == entry.prefix_digest else None

    # -- internals ----------------------------------------------------------------------------------

    def _grow(self, entry: _Entry, completion: str) -> None:
        searched = len(entry.completion)
        entry.completion = completion
        # Every line the completion starts is a place typing can reach: file the entry under it.
        position = completion.find("\n", searched)
        while position != -1:
            start = position + 1
            self._file(entry, (entry.prefix_tail + completion[:start])[-_LINE_KEY_CHARS:], start)
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
        size = (
            _ENTRY_OVERHEAD_BYTES
            + sys.getsizeof(entry.completion)
            + sys.getsizeof(entry.prefix_tail)
            + sys.getsizeof(entry.anchor_line)
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

    def _drop_same_anchor(self, model: str, prefix_window: str, prefix_digest: bytes, suffix_digest: bytes) -> None:
        line_start = prefix_window.rfind("\n") + 1
        for posting in list(self._postings(model, prefix_window[:line_start])):
            entry_id, offset = posting >> _OFFSET_BITS, posting & _OFFSET_MASK
            entry = self._live.get(entry_id)
            if (
                entry is not None
                and offset == 0
                and entry.prefix_digest == prefix_digest
                and entry.suffix_digest == suffix_digest
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
