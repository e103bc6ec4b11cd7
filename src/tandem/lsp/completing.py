"""One completion at a client position, shared by textDocument/inlineCompletion, textDocument/completion
and the speculation after an accepted suggestion: the position converted through the negotiated codec,
`Engine.complete` asked, its notice shown and `tandem/status` sent; and where a suggestion's range ends.

What may be sent is not decided here: the engine asks the gate (`completion.gate`) for every request,
accepted-command speculation included.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from tandem.completion.inline.closers import replaced_closers
from tandem.completion.inline.request import CompletionRequest, CompletionResult
from tandem.lsp.requests import completion_request
from tandem.lsp.status import Status

if TYPE_CHECKING:
    from lsprotocol import types

    from tandem.lsp.documents import Document
    from tandem.lsp.server import TandemServer

log = logging.getLogger(__name__)


def request_at(
    ls: TandemServer,
    document: Document,
    position: types.Position,
    *,
    kind: str,
    invoked: bool,
    received_ns: int,
) -> CompletionRequest:
    line, column = ls.documents.to_server(document, position)
    return completion_request(
        document,
        line,
        column,
        client=ls.client_name,
        kind="inline" if kind == "inline" else "completion",
        invoked=invoked,
        received_ns=received_ns,
    )


async def complete(
    ls: TandemServer, uri: str, position: types.Position, *, kind: str, invoked: bool
) -> tuple[CompletionRequest | None, CompletionResult]:
    received_ns = time.perf_counter_ns()
    ls.started_requests.add(ls.protocol.msg_id)
    document = ls.documents.get(uri)
    if document is None:
        log.warning("completion requested for a document that is not open: %s", uri)
        return None, CompletionResult.empty()
    if ls.session is None:
        return None, CompletionResult.empty()
    engine = ls.session.inline
    request = request_at(ls, document, position, kind=kind, invoked=invoked, received_ns=received_ns)
    result = await engine.complete(request)
    if result.notice:
        ls.notify_user(result.notice)
    # The last minutes' figures only when the status is sent: most keys that show nothing change nothing.
    if ls.status_is_news(ls.with_recovery(Status.of_completion(result))):
        ls.send_status(ls.with_recovery(Status.of_completion(result, engine.live_figures())))
    return request, result


def replace_end(ls: TandemServer, request: CompletionRequest, text: str, cursor: types.Position) -> types.Position:
    """Where the suggestion's range ends: past the closers the editor auto-inserted after the cursor when
    the suggestion holds them (completion.inline.closers), else at the cursor."""
    document = ls.documents.get(request.uri)
    if document is None or document.version != request.version:
        return cursor  # the document moved on: the client drops this answer
    replaced = replaced_closers(text, request.line_after())
    return ls.documents.to_client(document, request.line, request.character + replaced)
