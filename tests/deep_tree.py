"""A directory tree deeper than anything walks it recursively (made and removed without recursion: pytest's
own clean-up of temporary directories recurses, and would die on it)."""

from __future__ import annotations

import contextlib
import os
import pathlib
from collections.abc import Iterator, Mapping


@contextlib.contextmanager
def deep_tree(root: pathlib.Path, levels: int, files: Mapping[str, str]) -> Iterator[str]:
    """`levels` directories `d/d/...` under `root`, `files` ({name: text}) in the deepest; yields its path
    relative to `root`, and removes the tree afterwards."""
    fds = [os.open(root, os.O_RDONLY)]
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fds[-1])
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        for name, text in files.items():
            with open(os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fds[-1]), "w") as handle:
                handle.write(text)
        yield "/".join(["d"] * levels)
    finally:
        for name in os.listdir(fds[-1]):
            os.unlink(name, dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir("d", dir_fd=fds[-1])
        os.close(fds[0])
