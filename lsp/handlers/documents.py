"""textDocument/didOpen, didChange, didClose into tandem's own document store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from lsp.server import TandemServer


def register(server: TandemServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TandemServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.documents.open(params.text_document)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TandemServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.documents.change(params.text_document.uri, params.text_document.version, params.content_changes)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TandemServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.documents.close(params.text_document.uri)
        if ls.engine is not None:
            ls.engine.document_closed(params.text_document.uri)
