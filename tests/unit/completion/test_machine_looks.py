"""The room's answers to the questions that only look: what is at a path now (`files.identity`), whether a
path really lies below a directory (`containment.really_inside`), the trace file's rotation
(`trace_files`), and the server's own descriptors and memory (`own_process`)."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

from tandem.completion.machine import own_process
from tandem.completion.machine.containment import really_inside
from tandem.completion.machine.files import identity
from tandem.completion.machine.trace_files import open_trace, rotate_trace


def test_identity_changes_when_a_file_is_swapped_for_a_link(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "a.py"
    assert identity(path) is None
    path.write_text("a = 1\n")
    first = identity(path)
    assert first is not None and first == identity(path)
    path.unlink()
    path.symlink_to(tmp_path / "missing.py")  # a dangling link is still something there
    swapped = identity(path)
    assert swapped is not None and swapped != first


def test_really_inside_follows_links_and_excludes_the_directory_itself(tmp_path: pathlib.Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (state / "out").symlink_to(tmp_path / "elsewhere")
    assert really_inside(state / "trace.jsonl", [str(state)])
    assert not really_inside(state / "out" / "trace.jsonl", [str(state)])
    assert not really_inside(state / ".." / "trace.jsonl", [str(state)])
    assert not really_inside(state, [str(state)])
    assert not really_inside(state / "trace.jsonl", [])


def test_a_trace_rotates_onto_numbered_names_and_keeps_keep_of_them(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "new" / "trace.jsonl"
    file, size = open_trace(path)
    file.write(b"1\n")
    file.close()
    assert size == 0
    for n in range(2, 5):
        rotate_trace(path, keep=2)
        file, size = open_trace(path)
        assert size == 0
        file.write(f"{n}\n".encode())
        file.close()
    assert sorted(p.name for p in path.parent.iterdir()) == ["trace.jsonl", "trace.jsonl.1", "trace.jsonl.2"]
    assert [(path.parent / name).read_text() for name in ("trace.jsonl", "trace.jsonl.1", "trace.jsonl.2")] == [
        "4\n", "3\n", "2\n",
    ]  # fmt: skip
    file, size = open_trace(path)
    assert size == 2
    file.close()
    file, size = open_trace(path, truncate=True)
    assert size == 0 and path.read_bytes() == b""
    file.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self is Linux's")
def test_the_process_figures_come_from_proc() -> None:
    before = own_process.open_descriptors()
    fd = os.open(os.devnull, os.O_RDONLY)
    try:
        assert own_process.open_descriptors() == before + 1
    finally:
        os.close(fd)
    assert own_process.resident_kb() > 1000
