"""What the server's own process holds, read from `/proc/self` (Linux; elsewhere -1): its open file
descriptors and its resident memory, for `tandem/health` and the soak benchmark."""

from __future__ import annotations

import os
import pathlib

_PROC = pathlib.Path("/proc/self")


def open_descriptors() -> int:
    """How many file descriptors the process has open, or -1 when `/proc` cannot say."""
    try:
        return len(os.listdir(_PROC / "fd"))
    except OSError:
        return -1


def resident_kb() -> int:
    """The process's resident memory in KiB (`VmRSS`), or -1 when `/proc` cannot say."""
    try:
        status = (_PROC / "status").read_text()
    except OSError:
        return -1
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1
