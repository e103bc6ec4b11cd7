"""What the model side is asked, built from an open document in one place: a completion request and a
next-edit request at a server position (code points; the handlers convert the client's position first),
and notification payloads pygls hands over untyped, read back as plain data."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

from tandem.completion.inline.request import CompletionRequest
from tandem.completion.next_edit.types import NextEditRequest

if TYPE_CHECKING:
    from tandem.lsp.documents import Document


def completion_request(
    document: Document,
    line: int,
    character: int,
    *,
    client: str,
    kind: Literal["inline", "completion"] = "inline",
    invoked: bool = False,
    received_ns: int = 0,
) -> CompletionRequest:
    return CompletionRequest(
        uri=document.uri,
        version=document.version,
        line=line,
        character=character,
        document=document.buffer,
        language=document.language_id,
        path=document.path,
        kind=kind,
        client=client,
        invoked=invoked,
        received_ns=received_ns or time.perf_counter_ns(),
    )


def next_edit_request(
    document: Document, line: int, character: int, *, client: str, received_ns: int = 0
) -> NextEditRequest:
    return NextEditRequest(
        uri=document.uri,
        version=document.version,
        line=line,
        character=character,
        document=document.buffer,
        language=document.language_id,
        path=document.path,
        client=client,
        received_ns=received_ns or time.perf_counter_ns(),
    )


def plain(value: Any) -> Any:
    """pygls hands notifications it has no type for as nested namedtuples (`Object`): plain data again."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value
