"""The tandem language server: a small `LanguageServer` subclass and `build_server()`.

Handlers live in `lsp/handlers/`, one module per LSP method or method family, listed in one table
(`handlers.registry`); this module holds the server's state and the protocol's process-level overrides.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import logging
import os
import pathlib
import stat
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Generator, Mapping
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import FeatureNotificationError, JsonRpcInternalError, JsonRpcInvalidRequest
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, lsp_method

from tandem.cache.edit_history import EditHistory
from tandem.completion.config.tree import Config, ModelConfig
from tandem.completion.observe.trace import Tracer
from tandem.completion.providers.breaker import Notice
from tandem.completion.session import Session
from tandem.lsp.client_log import ClientLogHandler
from tandem.lsp.config_loading import ConfigSources
from tandem.lsp.documents import DocumentStore
from tandem.lsp.handlers.text_document_sync import DocumentSync
from tandem.lsp.heap import HeapTrimmer
from tandem.lsp.loop_watch import watch_from_env
from tandem.lsp.shown import shown
from tandem.lsp.status import METHOD as STATUS_METHOD
from tandem.lsp.status import Status
from tandem.lsp.stdio import MessageLoop

log = logging.getLogger(__name__)

VERSION = "0.1.0"
# How long after a model's outage ends the status keeps saying so ("✓ back"), beside the notification.
RECOVERY_SHOWN_S = 30.0
# Requests that leave a trace record, by method.
_TRACED_REQUESTS = {types.TEXT_DOCUMENT_INLINE_COMPLETION: "inline", types.TEXT_DOCUMENT_COMPLETION: "completion"}


# The fields of pygls' message protocols (`pygls.protocol.json_rpc.RPCRequest`, `RPCNotification`,
# `RPCResponse`): a message is of a kind when it has all of that kind's fields.
_REQUEST_FIELDS = ("id", "method", "jsonrpc", "params")
_NOTIFICATION_FIELDS = ("method", "jsonrpc", "params")
_RESPONSE_FIELDS = ("id", "jsonrpc", "result")
# pygls' own logger for what its dispatch says (its level and filters apply as before).
_pygls_log = logging.getLogger("pygls.protocol.json_rpc")


def _has_fields(message: Any, fields: tuple[str, ...]) -> bool:
    return all(hasattr(message, name) for name in fields)


class TandemProtocol(DocumentSync):
    """pygls' protocol, without its document copies (`handlers.text_document_sync.DocumentSync`), without a
    leak of request futures, answering requests after shutdown, tracing withdrawn completions, and leaving
    at once on exit."""

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Callable[[Any], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls' handler execution, minus a leak: a generator or async handler's future is kept in
        `_request_futures` under its id, and only a request's answer removes it. Notifications handled by a
        generator or a coroutine (pygls' built-in initialized, tandem's async notifications) and the steps
        of generator handlers ran under fresh ids nobody removed: one future per keystroke when document
        sync went through a generator, held for the life of the process."""

        def finished(future: Any) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, finished, args, kwargs)

    def handle_message(self, message: Any) -> None:
        """pygls' dispatch of a message by its kind, with two differences. pygls drops every message after
        `shutdown` without a word; LSP wants requests answered with InvalidRequest (all but `exit`, which
        is handled). And the kind is told by the fields the message has, as pygls' `isinstance` against
        its runtime-checkable protocols (`RPCRequest`, ...) tells it, without the protocol machinery: each
        such check walks the protocol's attributes anew in Python 3.11, three per keystroke (~100 function
        calls)."""
        method = getattr(message, "method", None)
        if self._shutdown and getattr(message, "id", None) is not None and isinstance(method, str):
            if method != types.EXIT:
                error = JsonRpcInvalidRequest(f"{method}: the server is shutting down")
                self._send_response(message.id, None, error.to_response_error())
                return
        if message.jsonrpc != JsonRPCProtocol.VERSION:
            _pygls_log.warning('Unknown message "%s"', message)
            return
        if self._shutdown and getattr(message, "method", "") != types.EXIT:
            _pygls_log.warning("Server shutting down. No more requests!")
            return
        # Each handler runs in a context of its own, as in pygls.
        context = contextvars.copy_context()
        if _has_fields(message, _REQUEST_FIELDS):
            _pygls_log.debug("Request %r received", message.method)
            context.run(self._handle_request, message.id, message.method, message.params)
        elif _has_fields(message, _NOTIFICATION_FIELDS):
            _pygls_log.debug("Notification %r received", message.method)
            context.run(self._handle_notification, message.method, message.params)
        elif _has_fields(message, _RESPONSE_FIELDS):
            _pygls_log.debug("Response message received.")
            context.run(self._handle_response, message.id, message.result)
        else:
            _pygls_log.debug("Error message received.")
            context.run(self._handle_response, message.id, None, message.error)

    def _handle_notification(self, method_name: str, params: Any) -> None:
        """pygls' handling, but textDocument/didChange, the one notification of every keystroke, is handed
        to its handler at once: pygls would make it a uuid4 id (a getrandom call), ask which of four kinds
        of callable the handler is, and run it through a thread-safe Future and two callbacks. A failure
        is reported as pygls reports a notification handler's (`_check_handler_result`)."""
        if method_name != types.TEXT_DOCUMENT_DID_CHANGE:
            super()._handle_notification(method_name, params)
            return
        try:
            self.lsp_text_document__did_change(params)
        except Exception:
            error = JsonRpcInternalError.of(sys.exc_info())  # type: ignore[no-untyped-call]
            self._server._report_server_error(error, FeatureNotificationError)

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        """pygls' dispatch, plus: a completion request the client withdraws before its handler ever ran
        (the request and its $/cancelRequest read in one go) still gets its one trace record."""
        super()._handle_request(msg_id, method_name, params)
        kind = _TRACED_REQUESTS.get(method_name)
        future = self._request_futures.get(msg_id) if kind else None
        if future is None or kind is None:
            return
        server = self._server
        assert isinstance(server, TandemServer)
        received_ns = time.perf_counter_ns()

        def done(finished: Any) -> None:
            started = msg_id in server.started_requests
            server.started_requests.discard(msg_id)
            if finished.cancelled() and not started and server.session is not None:
                server.session.inline.withdrawn(kind, received_ns)

        future.add_done_callback(done)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Leave at once. pygls exits with sys.exit, after which asyncio waits for worker threads (a
        tokenizer load or a workspace scan can take a second), and editors kill a server that lingers
        (eglot after ~0.5 s). Nothing is lost: responses are flushed as written, traces per record."""
        if (handler := self.fm.features.get(types.EXIT)) is not None:
            yield handler, args, None
        logging.shutdown()
        os._exit(0 if self._shutdown else 1)


class TandemServer(LanguageServer):
    documents: DocumentStore
    sources: ConfigSources
    config: Config
    # The model side (`completion.session`): models, gate, tracer, budget, workspace and the three features
    # (inline completions, next edits, edits); from `initialized` on.
    session: Session | None
    edit_history: EditHistory
    trace_path: pathlib.Path | None
    client_name: str
    # Notices already shown, so each is shown once per session.
    shown_notices: set[str]
    # Messages for the workspace folders refused at initialize (shown once the session exists).
    refused_folders: list[str]
    # Ids of completion requests whose handler has started (see TandemProtocol._handle_request).
    started_requests: set[Any]
    # The last `tandem/status` sent.
    last_status: Status
    recovery: tuple[str, float] | None

    def __init__(self, *, env: Mapping[str, str] | None = None, trace_path: pathlib.Path | None = None) -> None:
        super().__init__("tandem", VERSION, protocol_cls=TandemProtocol)
        self.documents = DocumentStore()
        # Recorded from the first keystroke: next edits are predicted from it.
        self.edit_history = EditHistory()
        self.documents.observers.append(self.edit_history)
        self.sources = ConfigSources() if env is None else ConfigSources(env=dict(env))
        self.config = Config()
        self.session = None
        self.trace_path = trace_path
        self.client_name = ""
        self.shown_notices = set()
        self.refused_folders = []
        self.started_requests = set()
        self.last_status = Status.ready()
        # A model's recovery just announced: (its message, until when statuses say it; monotonic seconds).
        self.recovery: tuple[str, float] | None = None
        self._tasks: set[asyncio.Future[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run `work` in the background; its failure is logged, never raised into the protocol."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)

        def done(finished: asyncio.Future[Any]) -> None:
            self._tasks.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                log.warning("background task failed: %r", finished.exception())

        task.add_done_callback(done)

    async def aclose(self) -> None:
        """Stop streams, flush traces, close the HTTP client (shutdown, and tests)."""
        session, self.session = self.session, None
        if session is not None:
            await session.aclose()
            await session.client.aclose()

    def serve_stdio(self) -> None:
        """pygls' `start_io`, except that stdin is read on the event loop: pygls reads each header line
        and body through a thread pool (about six thread hand-offs per message, 1-2 ms per keystroke),
        and through `lsp.stdio`, which no framing error stops. Falls back to pygls' reader when stdin is a
        plain file."""
        stdin = sys.stdin.buffer
        stdout = _protocol_stdout()
        mode = os.fstat(stdin.fileno()).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
            self.start_io(stdout=stdout)
            return

        async def main() -> None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader()
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
            self.protocol.set_writer(StdoutWriter(stdout))
            self._stop_event = threading.Event()
            trimmer = asyncio.ensure_future(HeapTrimmer().run())
            watch = watch_from_env(loop)  # only when TANDEM_LOOP_BLOCK_MS is set (the tests set it)
            try:
                await MessageLoop(self.protocol).run(reader)
            finally:
                trimmer.cancel()
                if watch is not None:
                    watch.stop()

        _import_lazy_modules()
        try:
            asyncio.run(main())
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]

    def send_status(self, status: Status) -> None:
        """`tandem/status` (`lsp.status.Status`) for the editor's status display.

        Sent after the response that it describes: a write scheduled now lands behind the response, which
        pygls sends from the request task's done-callback (one more pipe write before the answer would
        add ~2 ms to every keystroke). A request without a suggestion after another without one changes
        nothing on screen, so it sends nothing (unless the one before was an error, or said something else:
        the end of an outage must replace its warning)."""
        if not self.status_is_news(status):
            return
        self.last_status = status
        loop = asyncio.get_running_loop()
        loop.call_soon(loop.call_soon, self.protocol.notify, STATUS_METHOD, status.to_json())

    def status_is_news(self, status: Status) -> bool:
        """Whether `send_status` would send `status` (see there). It reads the state, source and text only:
        a status without the last minutes' figures answers for the one with them."""
        last = self.last_status
        if status.source == "none" and status.state != "error" and last.source == "none":
            return last.state == "error" or last.text != status.text
        return True

    def announce(self, notice: Notice) -> None:
        """A model's outage or recovery (completion.providers.breaker decides it is news): window/showMessage, and
        window/logMessage for clients that show only the log (Helix without a plugin)."""
        kind = types.MessageType.Info if notice.recovered else types.MessageType.Warning
        # The end of an outage is said in the status too, for the statuses of the next RECOVERY_SHOWN_S.
        self.recovery = (notice.message, time.monotonic() + RECOVERY_SHOWN_S) if notice.recovered else None
        if not notice.loud:
            return  # a recovery after failures never announced: the status says it, nothing pops up
        message = shown(notice.message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        # With `--log-to-client` the tiers' log line of the notice is already a window/logMessage (VS Code's
        # Output showed it twice).
        if not any(isinstance(handler, ClientLogHandler) for handler in logging.getLogger().handlers):
            self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def with_recovery(self, status: Status) -> Status:
        """`status`, saying that a model is answering again when its outage ended moments ago."""
        if self.recovery is None:
            return status
        message, until = self.recovery
        if time.monotonic() > until:
            self.recovery = None
            return status
        return status.after_recovery(message)

    def notify_user(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """window/showMessage, once per distinct message (control characters escaped: `lsp.shown`)."""
        message = shown(message)
        if message in self.shown_notices:
            return
        self.shown_notices.add(message)
        log.warning("%s", message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def make_tracer(self) -> Tracer:
        from tandem.completion.observe.trace import default_trace_path

        settings = self.config.trace
        if not settings.enabled:
            return Tracer(None)
        path = self.trace_path or (pathlib.Path(settings.path) if settings.path else default_trace_path())
        tracer = Tracer(path, max_bytes=int(settings.max_mb * 1_000_000), keep=settings.keep)
        self._export_spans(tracer)
        return tracer

    def _export_spans(self, tracer: Tracer) -> None:
        """Send the tracer's records to an OpenTelemetry collector when one is configured (read at start)."""
        from tandem.completion.observe import otel

        env = os.environ  # the SDK reads the OTEL_* variables from the process environment itself
        if not otel.wanted(self.config.trace.otlp_endpoint, env):
            return

        def model_for(tier: str) -> ModelConfig | None:
            found = self.session.tiers.get(tier) if self.session is not None else None
            return found.config if found is not None else None

        try:
            export = otel.OtelExport(endpoint=self.config.trace.otlp_endpoint, model_for=model_for, env=env)
        except otel.OtelUnavailable as error:
            self.notify_user(f"tandem: {error}")
            return
        tracer.sinks.append(export.send)
        tracer.closers.append(export.close)


def build_server(*, env: Mapping[str, str] | None = None, trace_path: pathlib.Path | None = None) -> TandemServer:
    """A fresh server with every handler registered (tests call this for isolation)."""
    # Imported here: the `tandem.edit` handler's module imports this one at run time (pygls reads a command
    # handler's annotations).
    from tandem.lsp.handlers import registry

    server = TandemServer(env=env, trace_path=trace_path)
    registry.register(server)
    return server


# Modules the libraries import on first use, from inside a handler: each held the event loop 100-900 ms
# on the first keystroke (measured by the loop watch over the end-to-end tests on this 2-core machine).
# Imported before the loop runs, while nothing waits.
_LAZY_MODULES = (
    "anyio._backends._asyncio",
    "anyio._core._eventloop",
    "anyio._core._sockets",
    "anyio._core._synchronization",
    "anyio._core._tasks",
    "anyio.abc._streams",
    "httpcore._async",
    "httpcore._synchronization",
)


def _import_lazy_modules() -> None:
    for name in _LAZY_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # another version of the library lays itself out differently
            log.debug("no module %s to import ahead", name)


def _protocol_stdout() -> BinaryIO:
    """The stream the editor reads, kept for LSP messages alone: a copy of file descriptor 1, after which
    descriptor 1 and `sys.stdout` point at stderr. A stray `print`, a library's console exporter or C
    code writing to stdout then lands in the log instead of corrupting the protocol stream."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "wb")
