"""Framing of the client's byte stream: each failure a hostile or buggy client can cause is skipped or
repaired, and well-framed messages after it are read (unit cases, then hypothesis fuzzing; the example count
comes from the active profile in tests/conftest.py)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tandem.lsp.framing import FrameReader, Message, Problem


def frame(value: Any, *, length_delta: int = 0, header: str = "Content-Length", eol: str = "\r\n") -> bytes:
    body = json.dumps(value).encode()
    return f"{header}: {len(body) + length_delta}{eol}{eol}".encode() + body


def read(data: bytes, *, chunk: int = 1 << 16) -> tuple[list[Any], list[Problem]]:
    reader = FrameReader(max_header_line=1024)
    events = []
    for start in range(0, len(data), chunk):
        events += reader.feed(data[start : start + chunk])
    events += reader.give_up()
    return [e.value for e in events if isinstance(e, Message)], [e for e in events if isinstance(e, Problem)]


def msg(n: int, text: str = "") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "m", "params": {"text": text}}


def test_plain_messages_in_any_chunking() -> None:
    data = frame(msg(1)) + frame(msg(2, "é 日 😀")) + frame(msg(3))
    for chunk in (1, 7, 1 << 16):
        values, problems = read(data, chunk=chunk)
        assert values == [msg(1), msg(2, "é 日 😀"), msg(3)] and problems == []


def test_lower_case_header_bare_newlines_and_other_headers() -> None:
    body = json.dumps(msg(2)).encode()
    typed = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: %d\r\n\r\n" % len(body)
    values, problems = read(frame(msg(1), header="content-length", eol="\n") + typed + body)
    assert values == [msg(1), msg(2)] and problems == []


def test_oversize_header_line_is_skipped() -> None:
    values, problems = read(b"X-Junk: " + b"a" * 5000 + b"\r\n" + frame(msg(1)), chunk=100)
    assert values == [msg(1)] and [p.kind for p in problems] == ["header-too-long"]


def test_garbage_between_messages_is_skipped() -> None:
    values, problems = read(frame(msg(1)) + b"\r\nnot a header at all\r\n" + b"}}garbage" + frame(msg(2)))
    assert values == [msg(1), msg(2)] and {p.kind for p in problems} == {"garbage"}


def test_too_short_length_on_a_large_body_is_repaired() -> None:
    big = msg(1, "x" * 200_000)
    values, problems = read(frame(big, length_delta=-150_000) + frame(msg(2)), chunk=4096)
    assert values == [big, msg(2)] and [p.kind for p in problems] == ["length-too-small"]


def test_too_large_length_is_repaired_by_the_next_header_or_when_idle() -> None:
    values, problems = read(frame(msg(1), length_delta=500) + frame(msg(2)))
    assert values == [msg(1), msg(2)] and [p.kind for p in problems] == ["length-too-large"]
    # The last message before the client waits: settled when no more bytes come.
    values, problems = read(frame(msg(3), length_delta=10))
    assert values == [msg(3)] and [p.kind for p in problems] == ["length-too-large"]


def test_unusable_lengths_are_reported_and_the_next_message_read() -> None:
    for bad in (b"abc", b"-5", b"99999999999999999999"):
        data = b"Content-Length: " + bad + b"\r\n\r\n" + json.dumps(msg(1)).encode() + frame(msg(2))
        values, problems = read(data)
        assert values == [msg(2)], bad
        assert problems[0].kind == "bad-length" and problems[0].lost


def test_missing_length_is_reported() -> None:
    values, problems = read(b"Content-Type: x\r\n\r\n" + json.dumps(msg(1)).encode() + frame(msg(2)))
    assert values == [msg(2)] and problems[0].kind == "no-length" and problems[0].lost


def test_a_body_mentioning_content_length_is_not_cut() -> None:
    value = msg(1, "}\r\nContent-Length: 12\r\n\r\n{}")
    values, problems = read(frame(value) + frame(msg(2)), chunk=16)
    assert values == [value, msg(2)] and problems == []


# -- fuzzing ------------------------------------------------------------------------------------------

PIECES = ["a", " ", "\n", "\r", '"', "\\", "é", "😀", "{", "}", "Content-Length: 3", "}\r\nContent-Length: 2\r\n"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)
HEADER = st.sampled_from(["Content-Length", "content-length", "CONTENT-LENGTH", "Content-length"])
# Garbage that cannot be mistaken for a header: no "length", and it never ends a JSON value.
GARBAGE = st.binary(max_size=40).filter(lambda b: b"ength" not in b.lower() and b"{" not in b and b"[" not in b)


@st.composite
def _stream(draw: st.DrawFn) -> tuple[bytes, list[Any]]:
    """Messages with benign variations (header case, line ends, garbage between, wrong lengths)."""
    values = [msg(n, draw(TEXT)) for n in range(draw(st.integers(1, 5)))]
    data = b""
    for value in values:
        if draw(st.booleans()):
            data += draw(GARBAGE) + b"\r\n"
        body_len = len(json.dumps(value).encode())
        delta = draw(st.sampled_from([0, 0, 0, -1, 1, 7, -(body_len // 2)]))
        data += frame(value, length_delta=delta, header=draw(HEADER), eol=draw(st.sampled_from(["\r\n", "\n"])))
    return data, values


@given(stream=_stream(), chunk=st.integers(1, 300))
def test_fuzz_messages_survive_benign_damage(stream: tuple[bytes, list[Any]], chunk: int) -> None:
    data, values = stream
    reader = FrameReader(max_header_line=1024)
    got = []
    for start in range(0, len(data), chunk):
        got += [e.value for e in reader.feed(data[start : start + chunk]) if isinstance(e, Message)]
    got += [e.value for e in reader.give_up() if isinstance(e, Message)]
    assert got == values


@given(garbage=st.binary(max_size=300), chunk=st.integers(1, 64))
def test_fuzz_any_bytes_then_a_good_message_is_read(garbage: bytes, chunk: int) -> None:
    """Whatever came before (any bytes at all), a well-framed message after a pause is read."""
    reader = FrameReader(max_header_line=128)
    events = []
    for start in range(0, len(garbage), chunk):
        events += reader.feed(garbage[start : start + chunk])
    events += reader.give_up()
    events += reader.feed(b"\r\n\r\n" + frame(msg(99)))
    events += reader.give_up()
    assert msg(99) in [e.value for e in events if isinstance(e, Message)]
    assert all(isinstance(e, Message | Problem) for e in events)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_value_nested_past_the_limit_is_cut_and_the_message_still_read() -> None:
    # Helix and Emacs forward a repository's settings: 1,200 levels raised RecursionError out of the loop.
    deep = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"initializationOptions":{"x":' + _nested(1200)
    deep += ',"s":"[[[[ \\" {{{{"},"capabilities":{}}}'
    body = deep.encode()
    data = f"Content-Length: {len(body)}\r\n\r\n".encode() + body + frame(msg(2))
    values, problems = read(data)
    assert [v["id"] for v in values] == [1, 2]
    options = values[0]["params"]["initializationOptions"]
    assert options["s"] == '[[[[ " {{{{'  # brackets inside strings are text, not nesting
    depth, value = 0, options["x"]
    while isinstance(value, list):
        depth, value = depth + 1, value[0]
    assert value is None and depth == 64 - 3  # cut where the whole message reaches 64 levels
    assert [p.kind for p in problems] == ["too-deep"]


def test_an_unclosed_deep_value_is_skipped_and_the_next_message_read() -> None:
    body = ('{"jsonrpc":"2.0","method":"x","params":' + "[" * 5000).encode()
    data = f"Content-Length: {len(body)}\r\n\r\n".encode() + body + frame(msg(3))
    values, problems = read(data)
    assert [v["id"] for v in values] == [3] and problems


def _events(data: bytes, chunk: int, *, whole: bool) -> list[Any]:
    reader = FrameReader(max_header_line=1024)
    if not whole:
        reader._whole_message = lambda events: False  # type: ignore[method-assign]
    events = []
    for start in range(0, len(data), chunk):
        events += reader.feed(data[start : start + chunk])
    events += reader.give_up()
    return events


@given(
    stream=_stream(),
    extra=st.lists(
        st.sampled_from(
            [
                b"Content-Length: 5\r\n\r\n[1, ",
                b"Content-Length: 2\r\n\r\n  ",
                b"\r\n",
                b"Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}",
                b"Content-Length: 2\r\nContent-Type: a\nb\r\n\r\n[]",
                b"Content-Length: 2\r\nContent-Type: \r\n\r\n[]",
                b"Content-Length: 2\r\nX-Other: 1\r\n\r\n[]",
            ]
        )
    ),
    chunk=st.integers(1, 300),
)
def test_a_whole_message_read_in_one_go_is_read_as_line_by_line(
    stream: tuple[bytes, list[Any]], extra: list[bytes], chunk: int
) -> None:
    """`FrameReader` reads a plainly framed message in one go; every stream (damaged ones too, a body that is
    not JSON, one cut short) gives the events that reading it line by line gives."""
    data = stream[0] + b"".join(extra) + frame(msg(7, "[deep]" * 3)) + frame(json.loads(_nested(70)))
    assert _events(data, chunk, whole=True) == _events(data, chunk, whole=False)
