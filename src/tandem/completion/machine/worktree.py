"""Which of HEAD's files differ on disk, found without asking git to read the working tree.

`git diff` and `git status` read the working tree through the repository's clean filters and its
fsmonitor, both programs the repository names. Here git only lists HEAD's blobs (`git.head_files`); each
file on disk is read through `files.read_file` (regular, bounded, inside the workspace) and hashed as git
hashes a blob, in-process. A file whose size differs from its blob's is changed without hashing it, and a
hash is remembered by (size, mtime, inode) so that a later edit request stats the files instead of reading
them again.

A file stored through a filter (`git lfs`, `eol` conversion) reads differently on disk than in its blob,
so it counts as changed; a Git LFS pointer blob is recognised and left out.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import stat
import threading

from tandem.completion.machine.containment import Folders
from tandem.completion.machine.files import read_file
from tandem.completion.machine.git import TreeFile

# More tracked files than this: the saved changes are not looked for (the router goes without them).
MAX_TRACKED_FILES = 20_000
# Larger files are not compared (their change would be a mass change anyway).
MAX_COMPARED_BYTES = 1_000_000
# At most this many changed files are reported (and read to be diffed).
MAX_CHANGED_FILES = 200

_hashes: dict[tuple[str, int, int, int], str] = {}
_lock = threading.Lock()


def blob_id(data: bytes, *, length: int = 40) -> str:
    """The id git gives a blob holding `data` (SHA-1, or SHA-256 in a repository of 64-digit ids)."""
    digest = hashlib.sha256() if length == 64 else hashlib.sha1()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def changed_files(top: pathlib.Path, head: dict[str, TreeFile], within: Folders) -> list[str] | None:
    """HEAD's files (relative to `top`, inside `within`) whose content on disk is not their blob's: changed
    or deleted. None when there are too many files to look at."""
    if len(head) > MAX_TRACKED_FILES:
        return None
    changed: list[str] = []
    for path, blob in sorted(head.items()):
        if len(changed) >= MAX_CHANGED_FILES:
            break
        file = top / path
        if not within.lexically_inside(file) or blob.size > MAX_COMPARED_BYTES:
            continue
        try:
            info = os.lstat(file)
        except FileNotFoundError:
            changed.append(path)  # deleted
            continue
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue  # replaced by a link or something else: not compared
        if info.st_size != blob.size:
            changed.append(path)
            continue
        key = (str(file), info.st_size, info.st_mtime_ns, info.st_ino)
        with _lock:
            known = _hashes.get(key)
        if known is None:
            read = read_file(file, max_bytes=MAX_COMPARED_BYTES, within=within)
            if read.data is None:
                continue
            known = blob_id(read.data, length=len(blob.oid))
            with _lock:
                if len(_hashes) > 4 * MAX_TRACKED_FILES:
                    _hashes.clear()
                _hashes[key] = known
        if known != blob.oid:
            changed.append(path)
    return changed


def is_lfs_pointer(blob: bytes) -> bool:
    return blob.startswith(b"version https://git-lfs.github.com/spec/v1\n")
