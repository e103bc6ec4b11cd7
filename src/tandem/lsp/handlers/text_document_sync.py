"""textDocument/didOpen, didChange, didSave, didClose: the one place documents are synchronised.

Each notification updates tandem's document store (`lsp.documents`, one line buffer per document) and the
workspace index, and tells the session. pygls' own copy of every document is bypassed here too
(`DocumentSync`, the protocol's part of sync). Enter at the end of a line is also a hint: the editor is
about to ask for the new line's completion, so the engine starts it now (speculation; it never delays a
real request).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method

from tandem.lsp.requests import completion_request

if TYPE_CHECKING:
    from tandem.cache.lines import Edit
    from tandem.cache.privacy import Verdict
    from tandem.lsp.documents import Document
    from tandem.lsp.server import TandemServer

_NEW_LINE = re.compile(r"(?:\r\n|\r|\n)[ \t]*")


class DocumentSync(LanguageServerProtocol):
    """pygls' protocol minus its own document copies.

    pygls' built-in didOpen/didChange/didClose keep a `TextDocument` that rebuilds the whole text on
    every incremental change (O(file) per keystroke). tandem keeps its own store (`lsp.documents`), so
    these overrides only call the handlers below (registered in `handlers.registry`, which is also what
    makes pygls announce open/close and save sync). They call them at once: pygls' built-ins are
    generators that hand the handler back to be run as a second handler, with a future of its own, on
    every keystroke.
    """

    def _forward(self, method: str, params: Any) -> None:
        if (handler := self.fm.features.get(method)) is not None:
            handler(params)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        self._forward(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        self._forward(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        self._forward(types.TEXT_DOCUMENT_DID_CLOSE, params)


def did_open(ls: TandemServer, params: types.DidOpenTextDocumentParams) -> None:
    document = ls.documents.open(params.text_document)
    index = ls.session.workspace if ls.session is not None else None
    if index is not None:
        _tell(ls, document, index.open(document.uri, document.buffer))
    if ls.session is not None:
        ls.session.document_opened(document.uri)


def did_save(ls: TandemServer, params: types.DidSaveTextDocumentParams) -> None:
    if ls.session is not None:
        ls.session.document_opened(params.text_document.uri)


def did_change(ls: TandemServer, params: types.DidChangeTextDocumentParams) -> None:
    index = ls.session.workspace if ls.session is not None else None

    def indexed(document: Document, edit: Edit | None) -> None:
        if index is None:
            return
        if edit is None:
            _tell(ls, document, index.open(document.uri, document.buffer))
        else:
            _tell(ls, document, index.change(document.uri, edit))

    changes = params.content_changes
    document = ls.documents.change(params.text_document.uri, params.text_document.version, changes, indexed)
    if document is not None and len(changes) == 1:
        _maybe_new_line(ls, document, changes[0])


def did_close(ls: TandemServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.documents.close(uri)
    if ls.session is not None:
        if ls.session.workspace is not None:
            ls.session.workspace.close(uri)
        ls.session.document_closed(uri)


def _tell(ls: TandemServer, document: Document, verdict: Verdict) -> None:
    """A document that holds a credential (opened so, or typed or pasted in): the user is told, once."""
    if not verdict and verdict.reason.startswith("contains"):
        name = document.uri.rsplit("/", 1)[-1]  # percent-encoded: no control characters reach the editor
        what = verdict.reason.split(" (line ")[0]
        ls.notify_user(f"tandem: {name} is not sent to a model from now on: it {what}.")


def _maybe_new_line(ls: TandemServer, document: Document, change: types.TextDocumentContentChangeEvent) -> None:
    """Enter pressed at the end of a line: start the new line's completion before the editor asks."""
    if ls.session is None or not isinstance(change, types.TextDocumentContentChangePartial):
        return
    if change.range.start != change.range.end or not _NEW_LINE.fullmatch(change.text):
        return
    line = change.range.start.line + 1
    if line >= document.buffer.line_count or document.buffer.line_content(line).strip():
        return  # Enter in the middle of a line: the rest moved down, nothing new to predict
    request = completion_request(document, line, len(document.buffer.line_content(line)), client=ls.client_name)
    ls.session.inline.speculate(request)
