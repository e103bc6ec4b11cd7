"""The replay's LSP client: `tandem serve` as a subprocess over stdio, driven the way VS Code drives it.

It initializes with VS Code's recorded capabilities (utf-16 positions), opens documents, sends incremental
`didChange` at the cursor, asks `textDocument/inlineCompletion` after each change, and withdraws a request
a newer one replaces with `$/cancelRequest`, as VS Code does. Every request's client-side latency (sent ->
response received) is measured on the client's own event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pathlib
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.lsp.client import LanguageClient

from tandem.eval.replay.vscode_capabilities import CAPABILITIES, CLIENT_INFO

log = logging.getLogger(__name__)

# The directory holding the `lsp` package (a checkout's root, or site-packages when installed).
_STOP_TIMEOUT_S = 10.0
_STDERR_LINES = 40
STATUS_NOTIFICATION = "tandem/status"


class ServerFailed(Exception):
    """`tandem serve` could not be started, or stopped answering; the message says what it printed."""


def _utf16_units(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


@dataclass
class OpenDocument:
    """A document as the client knows it: its version and where the cursor is (utf-16 columns)."""

    uri: str
    version: int
    line: int
    # The cursor's line up to the cursor: its length in utf-16 units is the cursor's column.
    line_before: str

    def position(self) -> types.Position:
        return types.Position(line=self.line, character=_utf16_units(self.line_before))

    def advance(self, inserted: str) -> None:
        """Move the cursor past `inserted`, as typing it does."""
        newlines = inserted.count("\n")
        if newlines:
            self.line += newlines
            self.line_before = inserted[inserted.rfind("\n") + 1 :]
        else:
            self.line_before += inserted


@dataclass
class Pending:
    """An inline completion request in flight. `answered` is set when its response arrives."""

    msg_id: int
    sent_ns: int
    future: Future[Any]
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    answered_ns: int = 0
    cancelled: bool = False

    @property
    def latency_ms(self) -> float:
        return (self.answered_ns - self.sent_ns) / 1e6

    def suggestion(self) -> tuple[str, types.Command | None]:
        """The first suggestion's text and the command to run when it is accepted (('', None) for none,
        an error, or a cancelled request)."""
        if not self.future.done() or self.future.cancelled() or self.future.exception() is not None:
            return "", None
        result = self.future.result()
        items = result.items if isinstance(result, types.InlineCompletionList) else result or []
        if not items:
            return "", None
        insert = items[0].insert_text
        return (insert if isinstance(insert, str) else insert.value), items[0].command

    def text(self) -> str:
        return self.suggestion()[0]


class _Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("tandem-replay", "0.1.0")
        self.exit_code: int | None = None

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        self.exit_code = server.returncode


class ReplayClient:
    """One `tandem serve` process and the documents open in it."""

    def __init__(
        self,
        *,
        trace_path: pathlib.Path,
        env: Mapping[str, str] | None = None,
        python_args: Sequence[str] = ("-P", "-m", "tandem"),
    ) -> None:
        """`python_args` start the CLI (a benchmark may run it under a profiler: `bench_latency.PROFILED_SERVER`)."""
        self.trace_path = trace_path
        self._python_args = list(python_args)
        self._env = dict(os.environ if env is None else env)
        self._client = _Client()
        self._ids = itertools.count(1)
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._drain: asyncio.Task[None] | None = None
        self.messages: list[str] = []
        self.statuses = 0
        # Commands the server handles (its executeCommandProvider), which VS Code forwards to it.
        self._server_commands: set[str] = set()

        # Plain functions, not bound methods: pygls tags its handlers with attributes.
        def show_message(params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

        def log_message(params: types.LogMessageParams) -> None:
            log.debug("server: %s", params.message)

        def status(params: Any) -> None:
            # tandem's own status notification, which the VS Code extension shows in its status item.
            self.statuses += 1

        self._client.feature(types.WINDOW_SHOW_MESSAGE)(show_message)
        self._client.feature(types.WINDOW_LOG_MESSAGE)(log_message)
        self._client.feature(STATUS_NOTIFICATION)(status)

    async def start(
        self, initialization_options: Mapping[str, Any], *, root: pathlib.Path | None = None
    ) -> types.InitializeResult:
        """Start the server and initialize it as VS Code does (with `root` as the one workspace folder, if
        given). ServerFailed if it does not answer."""
        args = [*self._python_args, "serve", "--trace", str(self.trace_path)]
        await self._client.start_io(sys.executable, *args, env=self._env)
        process = self._client._server
        if process is not None and process.stderr is not None:
            self._drain = asyncio.create_task(self._read_stderr(process.stderr))
        converter = get_converter()
        params = types.InitializeParams(
            process_id=os.getpid(),
            client_info=types.ClientInfo(name=CLIENT_INFO["name"], version=CLIENT_INFO.get("version")),
            capabilities=converter.structure(CAPABILITIES, types.ClientCapabilities),
            initialization_options=dict(initialization_options),
            locale="en",
            root_uri=root.as_uri() if root is not None else None,
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)] if root is not None else None,
        )
        try:
            result = await asyncio.wait_for(self._client.initialize_async(params), _STOP_TIMEOUT_S * 3)
        except (TimeoutError, RuntimeError) as error:
            await self._kill()
            raise ServerFailed(self._failure("did not answer initialize", error)) from None
        self._client.initialized(types.InitializedParams())
        provider = result.capabilities.execute_command_provider
        self._server_commands = set(provider.commands) if provider is not None else set()
        return result

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        # The server logs to stderr; an unread pipe would fill and block it.
        while line := await stream.readline():
            self._stderr.append(line.decode("utf-8", "replace").rstrip())

    def _failure(self, what: str, error: BaseException | None = None) -> str:
        detail = f" ({error})" if error and str(error) else ""
        tail = "; its last output: " + " | ".join(list(self._stderr)[-3:]) if self._stderr else ""
        return f"tandem serve {what}{detail}{tail}"

    def open(self, *, uri: str, language_id: str, text: str, cursor: int) -> OpenDocument:
        """didOpen `text`, with the cursor at offset `cursor`."""
        self._client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
            )
        )
        before = text[:cursor]
        return OpenDocument(uri=uri, version=1, line=before.count("\n"), line_before=before[before.rfind("\n") + 1 :])

    def insert(self, document: OpenDocument, text: str) -> None:
        """Insert `text` at the cursor (one incremental didChange) and move the cursor after it."""
        at = document.position()
        document.version += 1
        self._client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=text)
                ],
            )
        )
        document.advance(text)

    def request_inline(self, document: OpenDocument) -> Pending:
        """Send textDocument/inlineCompletion at the cursor (automatic trigger, as while typing)."""
        params = types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=document.uri),
            position=document.position(),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        )
        msg_id = next(self._ids)
        sent_ns = time.perf_counter_ns()
        future = self._client.protocol.send_request(types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=msg_id)
        pending = Pending(msg_id=msg_id, sent_ns=sent_ns, future=future)

        def stamp(_: Future[Any]) -> None:
            # Runs on the event loop as the response is parsed: the latency excludes our own scheduling.
            pending.answered_ns = time.perf_counter_ns()
            pending.answered.set()

        future.add_done_callback(stamp)
        return pending

    def replace(self, document: OpenDocument, start: types.Position, end: types.Position, text: str) -> None:
        """Replace a range (one incremental didChange), as an editor applying an edit does. The cursor is
        the caller's to move (`document.line`, `document.line_before`)."""
        document.version += 1
        self._client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end), text=text)
                ],
            )
        )

    def send(self, method: str, params: Mapping[str, Any]) -> Pending:
        """Send a request of a method lsprotocol does not type (its params and result are plain JSON)."""
        msg_id = next(self._ids)
        future = self._client.protocol.send_request(method, dict(params), msg_id=msg_id)
        pending = Pending(msg_id=msg_id, sent_ns=time.perf_counter_ns(), future=future)

        def stamp(_: Future[Any]) -> None:
            pending.answered_ns = time.perf_counter_ns()
            pending.answered.set()

        future.add_done_callback(stamp)
        return pending

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        self._client.protocol.notify(method, dict(params))

    def execute(self, command: str, arguments: list[Any]) -> None:
        """`workspace/executeCommand`, not waited for."""
        params = types.ExecuteCommandParams(command=command, arguments=arguments)
        self._client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=next(self._ids))

    async def execute_async(self, command: str, arguments: list[Any]) -> Any:
        """`workspace/executeCommand`, its answer waited for."""
        params = types.ExecuteCommandParams(command=command, arguments=arguments)
        return await self._client.workspace_execute_command_async(params)

    async def code_actions(self, uri: str, where: types.Range) -> Any:
        """`textDocument/codeAction` for `where` (no diagnostics), its answer waited for."""
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=where,
            context=types.CodeActionContext(diagnostics=[]),
        )
        return await self._client.text_document_code_action_async(params)

    def run_command(self, command: types.Command | None, *, on_error: Callable[[str], None]) -> bool:
        """Run an accepted item's command as VS Code does: `workspace/executeCommand` when the server
        handles it. The answer is not waited for; an error answer is passed to `on_error`. True if sent."""
        if command is None or command.command not in self._server_commands:
            return False
        params = types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
        future = self._client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=next(self._ids))

        def done(finished: Future[Any]) -> None:
            if not finished.cancelled() and (error := finished.exception()) is not None:
                on_error(f"{command.command}: {error}")

        future.add_done_callback(done)
        return True

    def cancel(self, pending: Pending) -> None:
        """`$/cancelRequest` for a request still in flight (VS Code does this when a newer one starts)."""
        if not pending.future.done():
            pending.cancelled = True
            self._client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=pending.msg_id))

    def close(self, document: OpenDocument) -> None:
        self._client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=document.uri))
        )

    @property
    def server_pid(self) -> int | None:
        process = self._client._server
        return process.pid if process is not None else None

    @property
    def exit_code(self) -> int | None:
        return self._client.exit_code

    def check_alive(self) -> None:
        """ServerFailed if the server process has exited."""
        if self._client.stopped or self._client.exit_code is not None:
            raise ServerFailed(self._failure(f"exited with status {self._client.exit_code}"))

    async def stop(self) -> None:
        """shutdown, exit, and wait for the process to end (killing it if it does not)."""
        if not self._client.stopped and self._client.exit_code is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._client.shutdown_async(None), _STOP_TIMEOUT_S)
                self._client.exit(None)
        try:
            await asyncio.wait_for(self._client.stop(), _STOP_TIMEOUT_S)  # type: ignore[no-untyped-call]
        except TimeoutError:
            await self._kill()
        if self._drain is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drain, _STOP_TIMEOUT_S)

    async def _kill(self) -> None:
        process = self._client._server
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._client.stop(), _STOP_TIMEOUT_S)  # type: ignore[no-untyped-call]
