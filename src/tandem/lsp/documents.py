"""The open documents, as textDocument/didOpen, didChange (incremental) and didClose leave them
(`lsp.handlers.text_document_sync`).

Each document is a `cache.lines.LineBuffer`, so a keystroke costs the size of the edit, not of the
file. pygls' own workspace copy is bypassed entirely (`lsp.handlers.text_document_sync.DocumentSync`).
Every document is tracked whatever it holds; whether anything of it may be sent is the model side's gate
(`completion.gate`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from lsprotocol import types

from tandem.cache.lines import Edit, LineBuffer
from tandem.lsp.positions import PositionCodec

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)


@dataclass
class Document:
    uri: str
    language_id: str
    version: int
    buffer: LineBuffer

    @property
    def path(self) -> str:
        return self.uri.removeprefix("file://")


class ChangeObserver(Protocol):
    """Told about every change, with the old lines still readable (`cache.edit_history.EditHistory` is one)."""

    def before_change(self, uri: str, path: str, buffer: LineBuffer, start_line: int, end_line: int) -> None: ...
    def after_change(self, uri: str, old_line_count: int, new_line_count: int) -> None: ...
    def replaced(self, uri: str) -> None: ...


class DocumentStore:
    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}
        self.codec = PositionCodec("utf-16")
        self.observers: list[ChangeObserver] = []

    def get(self, uri: str) -> Document | None:
        return self._docs.get(uri)

    def version_and_lines(self, uri: str) -> tuple[int, LineBuffer] | None:
        document = self._docs.get(uri)
        return (document.version, document.buffer) if document is not None else None

    def all(self) -> dict[str, Document]:
        """The open documents by uri (a snapshot: safe to hold across awaits)."""
        return dict(self._docs)

    def open(self, item: types.TextDocumentItem) -> Document:
        document = Document(item.uri, item.language_id, item.version, LineBuffer(item.text))
        self._docs[item.uri] = document
        return document

    def change(
        self,
        uri: str,
        version: int,
        changes: Sequence[types.TextDocumentContentChangeEvent],
        on_edit: Callable[[Document, Edit | None], None] | None = None,
    ) -> Document | None:
        """Apply `changes` in order. After each one, `on_edit` hears which lines it replaced (None for a
        whole-text replacement, after which the buffer is a new object), while the buffer holds exactly the
        text that change produced: the next change's positions refer to that text, not the final one."""
        document = self._docs.get(uri)
        if document is None:
            log.warning("didChange for a document that is not open: %s", uri)
            return None
        for change in changes:
            edit: Edit | None
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = self.to_server(document, change.range.start)
                end = self.to_server(document, change.range.end)
                for observer in self.observers:
                    observer.before_change(uri, document.path, document.buffer, start[0], end[0])
                edit = document.buffer.replace(start, end, change.text)
                for observer in self.observers:
                    observer.after_change(uri, edit.old_line_count, edit.new_line_count)
            else:
                for observer in self.observers:
                    observer.replaced(uri)
                document.buffer = LineBuffer(change.text)
                edit = None
            if on_edit is not None:
                on_edit(document, edit)
        document.version = version
        return document

    def close(self, uri: str) -> None:
        self._docs.pop(uri, None)
        for observer in self.observers:
            observer.replaced(uri)

    def to_server(self, document: Document, position: types.Position) -> tuple[int, int]:
        """A client position as (line, code-point column), clamped into the document."""
        if position.line >= document.buffer.line_count:
            return document.buffer.clamp(position.line, position.character)
        content = document.buffer.line_content(position.line)
        return position.line, self.codec.to_server(content, position.character)

    def to_client(self, document: Document, line: int, column: int) -> types.Position:
        return types.Position(line=line, character=self.codec.to_client(document.buffer.line_content(line), column))
