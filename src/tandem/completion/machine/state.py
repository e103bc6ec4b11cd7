"""tandem's own state files (the day's spend): read through `files.read_file` like any other file, written
whole and atomically (a temporary file in the same directory, then a rename), so a crash mid-write leaves
the old state rather than half a file. Only paths tandem chose in its state directory come here."""

from __future__ import annotations

import os
import pathlib
import tempfile

from tandem.completion.machine.files import FileRead, read_file

# A state file is small; anything larger is not tandem's.
MAX_STATE_BYTES = 1024 * 1024


def read_state(path: pathlib.Path) -> FileRead:
    return read_file(path, max_bytes=MAX_STATE_BYTES)


def write_state(path: pathlib.Path, text: str) -> None:
    """Replace `path` with `text` (OSError if it cannot be written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(handle.name, path)
