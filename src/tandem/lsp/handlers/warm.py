"""`tandem/warm`: the editor says where the cursor rests before the user types (a file focused, the cursor
placed, insert mode entered). A model on this machine reads that prompt meanwhile, so the first key in the
file finds it read: on one shared core a file's first window takes 1.5-3 s to read, in which ~30% of a
replay's keys were withdrawn (README, "Where the requests go"). A cloud model is not asked: it would be paid
for a guess, and reads a prompt in milliseconds anyway.

Params: `{"textDocument": {"uri": ...}, "position": {"line": ..., "character": ...}}` (a notification).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tandem.lsp.completing import request_at
from tandem.lsp.requests import plain

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

log = logging.getLogger(__name__)

METHOD = "tandem/warm"


def warm(ls: TandemServer, params: Any) -> None:
    if ls.session is None:
        return
    given = plain(params)
    document_id = given.get("textDocument") if isinstance(given, dict) else None
    uri = document_id.get("uri") if isinstance(document_id, dict) else None
    position = given.get("position") if isinstance(given, dict) else None
    document = ls.documents.get(uri) if isinstance(uri, str) else None
    if document is None or not isinstance(position, dict):
        log.debug("tandem/warm without an open document and a position: %r", given)
        return
    try:
        at = types.Position(line=int(position["line"]), character=int(position["character"]))
    except (KeyError, TypeError, ValueError):
        log.debug("tandem/warm without a usable position: %r", position)
        return
    request = request_at(ls, document, at, kind="inline", invoked=False, received_ns=time.perf_counter_ns())
    ls.session.inline.warm(request)
