"""`tandem/health`: the server's vital signs for monitors and the soak benchmark: memory, file
descriptors, asyncio tasks, pygls' pending request futures, open documents, the HTTP pool and the
completion cache's size."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tandem.completion.machine.own_process import open_descriptors, resident_kb
from tandem.completion.providers.transport import ResilientTransport

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

METHOD = "tandem/health"


def health(ls: TandemServer, params: Any) -> dict[str, Any]:
    pool: dict[str, int] | None = None
    session = ls.session
    transport = getattr(session.client, "_transport", None) if session is not None else None
    if isinstance(transport, ResilientTransport):
        pool = transport.health().as_dict()
    return {
        "rss_mb": round(_rss_kb() / 1024, 2),
        "fds": _open_fds(),
        "tasks": len(asyncio.all_tasks()),
        "request_futures": len(ls.protocol._request_futures),
        "documents": len(ls.documents.all()),
        "pool": pool,
        "completion_cache": session.inline.cache_figures() if session is not None else None,
    }


def _open_fds() -> int:
    return open_descriptors()


def _rss_kb() -> int:
    return resident_kb()
