"""The document store against a shadow copy: any change sequence the spec allows (several changes per
didChange, each positioned against the text the previous one left; every line break kind; every position
encoding) leaves the store's text, and the token index's copy of its lines, equal to the client's text;
and the server's text, the notifications sent as JSON through its message loop.

Property-based (hypothesis); the example count comes from the active profile (tests/conftest.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

from tandem.cache.lines import Edit
from tandem.cache.token_index import TokenIndex
from tandem.cache.tokens import get_counter
from tandem.lsp.documents import Document, DocumentStore
from tandem.lsp.positions import PositionCodec

URI = "file:///w/sample.py"
# Line breaks of every kind, wide characters (two UTF-16 units, four UTF-8 bytes), accents, tabs.
ALPHABET = st.sampled_from(["a", "b", " ", "\t", "é", "日", "😀", "\n", "\r", "\r\n", "\n\r"])
TEXTS = st.lists(ALPHABET, max_size=30).map("".join)


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end of content) offsets of each line, by LSP's rule: '\\n', '\\r\\n' or a lone '\\r' ends a line."""
    spans = []
    start = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\n" or char == "\r":
            spans.append((start, index))
            index += 2 if text[index : index + 2] == "\r\n" else 1
            start = index
        else:
            index += 1
    spans.append((start, len(text)))
    return spans


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


@st.composite
def _position(draw: st.DrawFn, text: str, encoding: str) -> tuple[types.Position, int]:
    """A client position in `text` and the offset the spec gives it (past a line's end is its end; past
    the last line is the end of the text)."""
    spans = _lines(text)
    line = draw(st.integers(0, len(spans)))
    if line == len(spans):
        return types.Position(line=line, character=draw(st.integers(0, 3))), len(text)
    start, end = spans[line]
    column = draw(st.integers(0, end - start + 2))
    if column > end - start:
        return types.Position(line=line, character=_units(text[start:end], encoding) + column), end
    return types.Position(line=line, character=_units(text[start : start + column], encoding)), start + column


@st.composite
def _change(draw: st.DrawFn, text: str, encoding: str) -> tuple[types.TextDocumentContentChangeEvent, str]:
    """One change against `text`, and the text it produces."""
    new_text = draw(TEXTS)
    if draw(st.integers(0, 9)) == 0:
        return types.TextDocumentContentChangeWholeDocument(text=new_text), new_text
    (start, a), (end, b) = draw(_position(text, encoding)), draw(_position(text, encoding))
    if b < a:
        (start, a), (end, b) = (end, b), (start, a)
    change = types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end), text=new_text)
    return change, text[:a] + new_text + text[b:]


class _IndexedStore:
    """The store as the didChange handler drives it, with a token index fed per change."""

    def __init__(self, text: str, encoding: str) -> None:
        self.store = DocumentStore()
        self.store.codec = PositionCodec(encoding)
        document = self.store.open(types.TextDocumentItem(uri=URI, language_id="python", version=0, text=text))
        self.index = TokenIndex(get_counter(), document.buffer.lines(0, document.buffer.line_count))

    def on_edit(self, document: Document, edit: Edit | None) -> None:
        buffer = document.buffer
        if edit is None:
            self.index = TokenIndex(get_counter(), buffer.lines(0, buffer.line_count))
            return
        end = edit.start_line + edit.old_line_count
        new_lines = buffer.lines(edit.start_line, edit.start_line + edit.new_line_count)
        self.index.replace_lines(edit.start_line, end, new_lines)


def _insert(line: int, text: str) -> types.TextDocumentContentChangePartial:
    at = types.Position(line=line, character=0)
    return types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=text)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
@given(data=st.data(), text=TEXTS)
def test_store_matches_the_clients_text(encoding: str, data: st.DataObject, text: str) -> None:
    store = _IndexedStore(text, encoding)
    for version in range(1, data.draw(st.integers(1, 6)) + 1):
        changes = []
        for _ in range(data.draw(st.integers(1, 4))):
            change, text = data.draw(_change(text, encoding))
            changes.append(change)
        document = store.store.change(URI, version, changes, store.on_edit)
        assert document is not None and document.version == version
        assert document.buffer.text() == text
        assert "".join(store.index.lines) == text
        assert document.buffer.line_count == len(_lines(text))


def test_multi_cursor_enter_is_applied_change_by_change() -> None:
    """Two cursors press Enter: the second change's position counts the line the first one added."""
    store = _IndexedStore("a = 1\nb = 2\nc = 3\n", "utf-16")
    enter = [_insert(1, "\n"), _insert(4, "\n")]
    document = store.store.change(URI, 1, enter, store.on_edit)
    assert document is not None
    assert document.buffer.text() == "a = 1\n\nb = 2\nc = 3\n\n"
    assert "".join(store.index.lines) == "a = 1\n\nb = 2\nc = 3\n\n"


def test_enter_after_a_lone_carriage_return_joins_it() -> None:
    """'\\r' then '\\n' typed at the start of the next line is one '\\r\\n': one line break, not two."""
    store = _IndexedStore("a\rb", "utf-16")
    document = store.store.change(URI, 1, [_insert(1, "\n")], store.on_edit)
    assert document is not None and document.buffer.line_count == 2
    assert document.buffer.line_content(1) == "b" and re.fullmatch(r"a\r\nb", document.buffer.text())


class _Silent:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
@given(data=st.data(), text=TEXTS)
def test_server_matches_the_clients_text_after_each_notification(encoding: str, data: st.DataObject, text: str) -> None:
    """The same, end to end through the server's message loop: didOpen and didChange as the client's JSON
    (read, structured and handled as over stdio), the server's text compared after each notification."""
    from lsprotocol.converters import get_converter

    from tandem.lsp.server import build_server
    from tandem.lsp.stdio import MessageLoop

    server = build_server(env={})
    server.protocol.set_writer(_Silent())
    loop = MessageLoop(server.protocol)
    capabilities = {"general": {"positionEncodings": [encoding]}}
    loop.dispatch({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": capabilities}})
    server.documents.codec = PositionCodec(encoding)  # what `initialized` does with the negotiated encoding
    item = {"uri": URI, "languageId": "python", "version": 0, "text": text}
    loop.dispatch({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
    converter = get_converter()
    for version in range(1, data.draw(st.integers(1, 6)) + 1):
        changes = []
        for _ in range(data.draw(st.integers(1, 4))):
            change, text = data.draw(_change(text, encoding))
            changes.append(converter.unstructure(change))
        params = {"textDocument": {"uri": URI, "version": version}, "contentChanges": changes}
        loop.dispatch({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params})
        document = server.documents.get(URI)
        assert document is not None and document.version == version
        assert document.buffer.text() == text
