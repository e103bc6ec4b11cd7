"""Unit tests of the incremental SSE parser: every split point, every line ending, bytes and text."""

from __future__ import annotations

import json

import pytest

from tandem.completion.providers.sse import SseEvent, SseParser


def parse_whole(stream: str | bytes) -> list[SseEvent]:
    parser = SseParser()
    return parser.feed(stream) + parser.close()


def parse_split(stream: str | bytes, cuts: list[int]) -> list[SseEvent]:
    parser = SseParser()
    events: list[SseEvent] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        events += parser.feed(stream[start:cut])
        start = cut
    return events + parser.close()


OPENAI_STREAM = (
    ": keep-alive comment\n\n"
    'data: {"choices":[{"index":0,"delta":{"content":"def "}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{"content":"héllo → ✓"}}]}\n\n'
    'data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2,'
    '"prompt_tokens_details":{"cached_tokens":8}}}\n\n'
    "data: [DONE]\n\n"
)


def test_openai_style_stream_gives_data_events_in_order() -> None:
    events = parse_whole(OPENAI_STREAM)
    assert [e.data for e in events][-1] == "[DONE]"
    payloads = [json.loads(e.data) for e in events[:-1]]
    assert payloads[0]["choices"][0]["delta"]["content"] == "def "
    assert payloads[1]["choices"][0]["delta"]["content"] == "héllo → ✓"
    assert payloads[2]["choices"] == []
    assert payloads[2]["usage"]["prompt_tokens_details"]["cached_tokens"] == 8
    assert all(e.event == "" for e in events)


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_every_line_ending_splits_the_same(ending: str) -> None:
    stream = OPENAI_STREAM.replace("\n", ending)
    assert parse_whole(stream) == parse_whole(OPENAI_STREAM)


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_text_split_at_every_position_gives_the_same_events(ending: str) -> None:
    stream = OPENAI_STREAM.replace("\n", ending)
    expected = parse_whole(stream)
    assert len(expected) == 4
    for cut in range(len(stream) + 1):
        assert parse_split(stream, [cut]) == expected, f"split at {cut}"


def test_bytes_split_at_every_pair_of_positions_including_inside_utf8() -> None:
    stream = OPENAI_STREAM.replace("\n", "\r\n").encode()
    expected = parse_whole(OPENAI_STREAM)
    for first in range(0, len(stream) + 1, 3):
        for second in range(first, len(stream) + 1, 7):
            assert parse_split(stream, [first, second]) == expected, f"split at {first}, {second}"


def test_one_byte_at_a_time() -> None:
    stream = OPENAI_STREAM.encode()
    assert parse_split(stream, list(range(1, len(stream)))) == parse_whole(OPENAI_STREAM)


def test_crlf_split_between_cr_and_lf_is_one_line_end_not_two() -> None:
    # "\r" then "\n" in the next chunk must not count as an extra blank line (which would end the event).
    parser = SseParser()
    assert parser.feed("data: a\r") == []
    assert parser.feed("\ndata: b\r") == []
    assert parser.feed("\n\r\n") == [SseEvent(data="a\nb")]


def test_lf_alone_after_a_cr_chunk_then_a_blank_line() -> None:
    parser = SseParser()
    assert parser.feed("data: a\r") == []
    assert parser.feed("") == []
    assert parser.feed("\n") == []
    assert parser.feed("\n") == [SseEvent(data="a")]


def test_multiline_data_event_and_fields() -> None:
    stream = "event: delta\nid: 7\nretry: 1500\ndata: first\ndata:second\ndata:  two spaces\n\n"
    (event,) = parse_whole(stream)
    assert event == SseEvent(data="first\nsecond\n two spaces", event="delta", id="7", retry_ms=1500)


def test_comments_and_unknown_fields_are_ignored() -> None:
    stream = ":ping\n: another\nfoo: bar\ndata: x\n\n:trailing\n\n"
    assert parse_whole(stream) == [SseEvent(data="x")]


def test_blank_lines_without_data_dispatch_nothing_and_reset_the_event_type() -> None:
    stream = "event: error\n\n\n\ndata: y\n\n"
    assert parse_whole(stream) == [SseEvent(data="y")]


def test_field_without_colon_and_empty_data() -> None:
    # "data" alone is a data line with an empty value; two of them make "\n".
    assert parse_whole("data\ndata\n\n") == [SseEvent(data="\n")]
    assert parse_whole("data:\n\n") == [SseEvent(data="")]


def test_leading_bom_is_dropped_once() -> None:
    assert parse_whole("\ufeffdata: a\n\n") == [SseEvent(data="a")]
    assert parse_whole(b"\xef\xbb\xbfdata: a\n\n") == [SseEvent(data="a")]
    assert parse_split(b"\xef\xbb\xbfdata: a\n\n", [1, 2]) == [SseEvent(data="a")]


def test_id_persists_and_ids_with_nul_are_ignored() -> None:
    events = parse_whole("id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\n")
    assert [e.id for e in events] == ["1", "1", "1"]


def test_retry_must_be_digits() -> None:
    (event,) = parse_whole("retry: 10s\ndata: a\n\n")
    assert event.retry_ms is None


def test_close_flushes_complete_lines_without_blank_line() -> None:
    parser = SseParser()
    assert parser.feed("data: a\n\ndata: [DONE]\n") == [SseEvent(data="a")]
    assert parser.close() == [SseEvent(data="[DONE]")]


def test_close_discards_a_line_cut_off_mid_way() -> None:
    parser = SseParser()
    assert parser.feed('data: a\n\ndata: {"choices": [') == [SseEvent(data="a")]
    assert parser.close() == []


def test_close_discards_a_truncated_utf8_sequence() -> None:
    parser = SseParser()
    assert parser.feed("data: é".encode()[:-1]) == []
    assert parser.close() == []


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert parse_whole(b"data: \xff\n\n") == [SseEvent(data="\ufffd")]


def test_several_events_in_one_chunk() -> None:
    parser = SseParser()
    events = parser.feed("data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4")
    assert [e.data for e in events] == ["1", "2", "3"]
    assert parser.feed("\n\n") == [SseEvent(data="4")]
