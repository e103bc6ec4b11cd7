"""tiktoken's cache, read through the door: the one file of it tandem loads (o200k_base's ranks).

tiktoken reads its cache (by default a shared directory under /tmp, where anyone can put a file or a named
pipe) with a plain `open()`: a pipe there held a thread for ever. So tandem reads the file itself, with
`files.read_file` (regular files only, bounded, never blocking), checks its sha256, and hands tiktoken a
copy in a fresh private directory (`tempfile.mkdtemp`: mode 0700, a name no one can guess) to load from;
the directory is removed once the encoding is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import shutil
import tempfile
from collections.abc import Iterator

from tandem.completion.machine.files import read_file

# o200k_base's file is 3.6 MB; an encoding file is never near this.
MAX_ENCODING_BYTES = 16 * 1024 * 1024


@contextlib.contextmanager
def verified_copy(source: str, sha256: str) -> Iterator[str]:
    """A private directory holding a copy of `source` (same name) whose sha256 is `sha256`, for the
    duration of the block. FileNotFoundError if `source` is missing, ValueError if its hash differs,
    OSError (with why) if it is not a regular file or cannot be read. `source` is never changed."""
    read = read_file(pathlib.Path(source), max_bytes=MAX_ENCODING_BYTES)
    if read.missing:
        raise FileNotFoundError(source)
    if read.data is None:
        raise OSError(f"{source}: {read.refusal}")
    if hashlib.sha256(read.data).hexdigest() != sha256:
        raise ValueError(f"{source}: sha256 mismatch")
    directory = tempfile.mkdtemp(prefix="tandem-tiktoken-")
    try:
        fd = os.open(os.path.join(directory, os.path.basename(source)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(read.data)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
