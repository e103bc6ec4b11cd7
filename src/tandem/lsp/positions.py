"""The one position codec: client columns (the negotiated encoding) <-> server columns (code points).

Helix and Neovim 0.11 offer utf-8 first, VS Code speaks utf-16; every column that crosses the protocol
goes through `PositionCodec`, never through ad-hoc string indexing. ASCII lines (most code) take a fast
path where all three encodings agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PositionCodec:
    encoding: str = "utf-16"  # "utf-8" | "utf-16" | "utf-32"

    def units(self, text: str) -> int:
        """Length of `text` in client units."""
        if self.encoding == "utf-32" or text.isascii():
            return len(text)
        if self.encoding == "utf-8":
            return len(text.encode("utf-8"))
        return len(text.encode("utf-16-le")) // 2

    def to_server(self, line: str, client_column: int) -> int:
        """Code-point column for a client column on `line` (clamped to the line; a column inside a
        multi-unit character lands before it)."""
        if self.encoding == "utf-32" or line.isascii():
            return min(client_column, len(line))
        used = 0
        for index, char in enumerate(line):
            width = self._width(char)
            if used + width > client_column:
                return index
            used += width
        return len(line)

    def to_client(self, line: str, server_column: int) -> int:
        return self.units(line[:server_column])

    def _width(self, char: str) -> int:
        point = ord(char)
        if self.encoding == "utf-8":
            return 1 if point < 0x80 else 2 if point < 0x800 else 3 if point < 0x10000 else 4
        return 2 if point >= 0x10000 else 1
