"""tandem's own trace file: its directory made, the file opened for appending, rotated by renaming.

The trace is tandem's own output, not a workspace file: its path is the user's choice (a workspace's is
confined to tandem's state and cache directories by the config loader, and none may be one of tandem's
state files: `state.is_state_file`). The trace writer (`completion/observe/trace.py`) keeps the open file
and decides when to rotate; this module is where it touches the disk.
"""

from __future__ import annotations

import io
import os
import pathlib


def open_trace(path: pathlib.Path, *, truncate: bool = False) -> tuple[io.FileIO, int]:
    """`path` opened unbuffered for appending (emptied first with `truncate`), its directory made if
    missing, and its size. OSError as `open` raises it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    file = io.FileIO(path, "wb" if truncate else "ab")
    return file, file.seek(0, os.SEEK_END)


def rotate_trace(path: pathlib.Path, keep: int) -> None:
    """`path.1` ... `path.{keep-1}` each moved one up (`path.{keep}` is overwritten, so `keep` old files
    stay), then `path` itself to `path.1`: the names the standard library's rotating log handler uses."""
    for n in range(keep - 1, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        if older.exists():
            older.replace(path.with_name(f"{path.name}.{n + 1}"))
    path.replace(path.with_name(f"{path.name}.1"))
