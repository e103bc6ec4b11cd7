"""The stdio message loop: bytes from the client -> `lsp.framing` -> the protocol; every request answered.

Replaces pygls' `run_async` (which stops or desynchronises on bad framing and drops a request whose params
do not validate without a word). Here:

- a frame that cannot be read is skipped and the stream resynchronised (`lsp.framing`); when a message may
  have been lost, a parse error (-32700, id null) tells the client;
- a message that is not a JSON-RPC 2.0 object, one whose id is neither an integer nor a string (an object,
  an array, a boolean, a fraction: answered with id null), or a notification's method sent with an id, is
  answered InvalidRequest (-32600); omitted params are read as null (a method that needs them: -32602);
- a request whose params do not fit the method is answered InvalidParams (-32602) with its id;
- each kind of problem is logged once at warning level (then at debug level: a hostile client must not
  fill the log).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcParseError

from tandem.lsp.framing import FrameReader, Message, Problem

if TYPE_CHECKING:
    from pygls.protocol import JsonRPCProtocol

log = logging.getLogger(__name__)

# How long a body that claims more bytes than it has may wait for them before it is read as it is.
IDLE_BODY_S = 1.0
_CHUNK = 1 << 16


class _QuietDeserialize(logging.Filter):
    """pygls logs a full traceback for every message it cannot structure, another for every request a
    handler answers InvalidParams (an untyped method checking its own params, `tandem.edit`'s arguments),
    and a warning for every request to an unknown method. `MessageLoop` reports the first kind itself
    (once per kind); the others are logged once (per method for unknown ones), in one line, then dropped.
    A client sending bad requests in a loop cannot flood the log."""

    def __init__(self) -> None:
        super().__init__()
        self._logged: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if message.startswith("Unable to deserialize message"):
            return False
        error = record.exc_info[1] if record.exc_info else None
        if message.startswith("Exception occurred for message") and isinstance(error, JsonRpcInvalidParams):
            if not self._first("invalid-params"):
                return False
            record.msg, record.args, record.exc_info, record.exc_text = "client input: %s", (error.message,), None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        elif message.startswith("Failed to handle request %r, unknown method"):
            args = record.args if isinstance(record.args, tuple) else ()
            return self._first(f"unknown {args[-1] if args else ''}")
        return True

    def forget(self) -> None:
        """A new session (one per process; tests start many): log each kind once again."""
        self._logged.clear()

    def _first(self, kind: str) -> bool:
        first = kind not in self._logged
        self._logged.add(kind)
        return first


_QUIET = _QuietDeserialize()


class MessageLoop:
    """Reads framed messages and hands them to `protocol`; see the module docstring."""

    def __init__(self, protocol: JsonRPCProtocol) -> None:
        self.protocol = protocol
        logging.getLogger("pygls.protocol.json_rpc").addFilter(_QUIET)
        _QUIET.forget()
        self.frames = FrameReader()
        self._logged: set[str] = set()
        # Problems seen, by kind (for tests and the soak benchmark).
        self.problems: dict[str, int] = {}

    async def run(self, reader: asyncio.StreamReader, stop: asyncio.Event | None = None) -> None:
        while stop is None or not stop.is_set():
            if self.frames.awaiting_body and self.frames.pending:
                try:
                    data = await asyncio.wait_for(reader.read(_CHUNK), IDLE_BODY_S)
                except TimeoutError:
                    self.handle_events(self.frames.give_up())
                    continue
            else:
                data = await reader.read(_CHUNK)
            if not data:
                self.handle_events(self.frames.give_up())
                if self.frames.pending:
                    self._problem(Problem("eof", f"{self.frames.pending} bytes of an unfinished message at exit"))
                return
            self.handle_events(self.frames.feed(data))

    def handle_events(self, events: list[Message | Problem]) -> None:
        for event in events:
            if isinstance(event, Problem):
                self._problem(event)
            else:
                self.dispatch(event.value)

    def dispatch(self, value: Any) -> None:
        """One JSON value from the client: structured, validated, handed to the protocol or answered."""
        msg_id = _request_id(value)
        if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
            self._problem(Problem("invalid-request", f"not a JSON-RPC 2.0 message: {type(value).__name__}"))
            self._answer(msg_id, JsonRpcInvalidRequest("not a JSON-RPC 2.0 message"))
            return
        if value.get("id") is not None and msg_id is None:
            # An id that is an object, an array, a boolean or a fraction: JSON-RPC allows a string or a
            # number, LSP an integer or a string. Handed on, it would break the protocol's bookkeeping of
            # requests (the server then stopped reading); answered, with id null, it changes nothing.
            self._problem(Problem("invalid-request", f"an id that is a {type(value['id']).__name__}"))
            self._answer(None, JsonRpcInvalidRequest("the id must be an integer or a string"))
            return
        is_request = msg_id is not None and isinstance(value.get("method"), str)
        if "method" in value and "params" not in value:
            # JSON-RPC lets params be omitted; pygls cannot structure an untyped message without them
            # (an unknown method, a tandem/ request), so it would answer InvalidRequest, not -32601.
            value = {**value, "params": None}
        try:
            message = self.protocol.structure_message(value)
        except JsonRpcInvalidParams:
            method = value.get("method")
            self._problem(Problem("invalid-params", f"params that do not fit {method!r}"))
            if is_request:
                self._answer(msg_id, JsonRpcInvalidParams(f"invalid params for {method}"))
            return
        except Exception:
            self._problem(Problem("invalid-request", "a message that cannot be read"))
            if is_request:
                self._answer(msg_id, JsonRpcInvalidRequest("a message that cannot be read"))
            return
        if is_request and getattr(message, "id", None) is None:
            # A notification's method sent with an id: read as a notification, it would never be answered.
            self._problem(Problem("invalid-request", f"{value.get('method')!r} is a notification, sent with an id"))
            self._answer(msg_id, JsonRpcInvalidRequest(f"{value.get('method')} is a notification"))
            return
        try:
            self.protocol.handle_message(message)
        except Exception:
            log.exception("failed to handle %s", value.get("method"))
            if is_request:
                self._answer(msg_id, JsonRpcInvalidRequest("the message could not be handled"))

    def _answer(self, msg_id: Any, error: Exception) -> None:
        assert isinstance(error, JsonRpcInvalidParams | JsonRpcInvalidRequest | JsonRpcParseError)
        self.protocol._send_response(msg_id, None, error.to_response_error())

    def _problem(self, problem: Problem) -> None:
        self.problems[problem.kind] = self.problems.get(problem.kind, 0) + 1
        first = problem.kind not in self._logged
        self._logged.add(problem.kind)
        log.log(logging.WARNING if first else logging.DEBUG, "client input: %s", problem.detail)
        if problem.lost:
            # A message may be lost: the client learns that something it sent was not read.
            # JSON-RPC: the id of a message that could not be read is null.
            error = JsonRpcParseError(problem.detail).to_response_error()
            self.protocol._send_response(None, None, error)  # type: ignore[arg-type]


def _request_id(value: Any) -> int | str | None:
    if isinstance(value, dict):
        msg_id = value.get("id")
        if isinstance(msg_id, int | str) and not isinstance(msg_id, bool):
            return msg_id
    return None
