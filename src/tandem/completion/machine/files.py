"""Reading one file of the workspace: regular files only, bounded, never blocking, inside the workspace.

Every read of a workspace file (context, ignore files, `tandem.toml`, the working diff's disk side, an
edit's files that are not open) is `read_file`. A repository is written by someone else, and its files may
be anything a file system can hold: a named pipe (an open for reading waits for a writer: for ever), a link
to `/dev/zero` (a read never ends) or to the terminal or to the server's own stdin (a read takes the
editor's next message), a 10 GB file. So:

- the path's real location is found first (every link and `..` resolved) and must lie inside `within`
  (when given); the real path is then stat'ed and anything but a regular file is refused before it is
  opened (opening some devices has effects of its own);
- it is opened with `O_NONBLOCK | O_NOFOLLOW | O_NOCTTY`, and the opened descriptor is `fstat`'ed again (a
  file swapped for a pipe or a link between the stat and the open is refused, not waited on);
- at most `max_bytes` are read; a larger file is refused as a whole (part of a file is not that file).

The answer is a `FileRead`: the bytes, or why not.
"""

from __future__ import annotations

import os
import pathlib
import stat
from collections.abc import Callable
from dataclasses import dataclass

from tandem.completion.machine.containment import Folders, real_path

# The largest file read for anything (a caller's own bound is usually far smaller).
MAX_READ_BYTES = 16 * 1024 * 1024
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class FileRead:
    """A file's bytes (None when refused or unreadable) and, if None, why."""

    data: bytes | None
    refusal: str = ""
    missing: bool = False

    def text(self) -> str | None:
        """The bytes as UTF-8, or None (refused, or not UTF-8)."""
        if self.data is None:
            return None
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None


def _kind(mode: int) -> str:
    kind = "other"
    if stat.S_ISDIR(mode):
        kind = "a directory"
    elif stat.S_ISFIFO(mode):
        kind = "a named pipe"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    return f"not a regular file ({kind})"


def reader(root: pathlib.Path, *, max_bytes: int) -> Callable[[str], bytes | None]:
    """Reads files under `root` by their relative paths with `read_file`: their bytes, or None (refused,
    missing, unreadable). The symbol index reads a scanned file back with it when it needs the text."""

    def read(relative: str) -> bytes | None:
        return read_file(root / relative, max_bytes=max_bytes).data

    return read


def read_file(path: pathlib.Path, *, max_bytes: int, within: Folders | None = None) -> FileRead:
    """`path`'s bytes if it is (after its links) a regular file of at most `max_bytes` inside `within`."""
    max_bytes = min(max_bytes, MAX_READ_BYTES)
    real = real_path(path)
    if within is not None and within and not within.contains(real):
        return FileRead(None, "outside the workspace (through a link)")
    try:
        before = os.stat(real)
    except FileNotFoundError:
        return FileRead(None, "missing", missing=True)
    except OSError as error:
        return FileRead(None, f"unreadable ({error.strerror})")
    if not stat.S_ISREG(before.st_mode):
        return FileRead(None, _kind(before.st_mode))
    if before.st_size > max_bytes:
        return FileRead(None, f"too large ({before.st_size} bytes > {max_bytes})")
    try:
        fd = os.open(real, _FLAGS)
    except FileNotFoundError:
        return FileRead(None, "missing", missing=True)
    except OSError as error:
        return FileRead(None, f"unreadable ({error.strerror})")
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            return FileRead(None, _kind(opened.st_mode))
        if opened.st_size > max_bytes:
            return FileRead(None, f"too large ({opened.st_size} bytes > {max_bytes})")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            return FileRead(None, f"too large (over {max_bytes} bytes)")
        return FileRead(b"".join(chunks))
    except OSError as error:
        return FileRead(None, f"unreadable ({error.strerror})")
    finally:
        os.close(fd)


def read_text(path: pathlib.Path, *, max_bytes: int, within: Folders | None = None) -> str | None:
    """`read_file` as UTF-8 text, or None (refused, missing, unreadable or not UTF-8)."""
    return read_file(path, max_bytes=max_bytes, within=within).text()


def exists(path: pathlib.Path) -> bool:
    """True if something (a file, a link, anything) is at `path`, without following a last link."""
    return os.path.lexists(path)


def is_directory(path: pathlib.Path) -> bool:
    """True if `path` is a directory (after links)."""
    return os.path.isdir(path)


def is_link(path: pathlib.Path) -> bool:
    return os.path.islink(path)


def identity(path: pathlib.Path) -> tuple[int, int, int] | None:
    """What is at `path` now, without following a last link: (device, inode, mode), or None for nothing
    (or nothing tandem may look at). Two equal answers mean the same file, of the same kind, is still there."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino, found.st_mode
