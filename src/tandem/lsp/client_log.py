"""Logs as `window/logMessage`, at their own level, for editors that show a server's log themselves.

VS Code's Output panel marks everything a server writes to stderr as an error and stamps each line with
its own time: `tandem serve --log-to-client` sends each record instead as a `window/logMessage` whose
type is the record's level (ERROR -> Error, WARNING -> Warning, INFO -> Info, DEBUG -> Debug, LSP 3.18),
without a timestamp. pygls' warnings and errors (a cancel for a request already answered, a notification
of an unknown method) go the same way. Records written before the connection is up, from worker threads
after it is gone, and pygls' debug records (which describe the messages being sent: sending them would
describe themselves) go to stderr, without a timestamp of their own (VS Code stamps each line).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import TYPE_CHECKING

from lsprotocol import types

from tandem.lsp.shown import ShownFormatter

if TYPE_CHECKING:
    from tandem.lsp.server import TandemServer

_LEVELS = (
    (logging.ERROR, types.MessageType.Error),
    (logging.WARNING, types.MessageType.Warning),
    (logging.INFO, types.MessageType.Info),
)


def message_type(level: int) -> types.MessageType:
    return next((kind for floor, kind in _LEVELS if level >= floor), types.MessageType.Debug)


class ClientLogHandler(logging.Handler):
    def __init__(self, server: TandemServer) -> None:
        super().__init__()
        self._server = server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sending = threading.local()
        self._fallback = logging.StreamHandler(sys.stderr)
        self._fallback.setFormatter(ShownFormatter("%(levelname)s %(name)s: %(message)s"))
        self.setFormatter(ShownFormatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        pygls_detail = record.name.startswith("pygls") and record.levelno < logging.WARNING
        if pygls_detail or getattr(self._sending, "active", False):
            self._fallback.emit(record)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            self._loop = loop
        if self._server.protocol.writer is None or (loop is None and self._loop is None):
            self._fallback.emit(record)
            return
        params = types.LogMessageParams(type=message_type(record.levelno), message=self.format(record))
        if loop is not None:
            self._send(params)
        elif self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._send, params)
        else:
            self._fallback.emit(record)

    def _send(self, params: types.LogMessageParams) -> None:
        self._sending.active = True
        try:
            self._server.window_log_message(params)
        finally:
            self._sending.active = False
