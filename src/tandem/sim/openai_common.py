"""What the OpenAI-shaped endpoints share: request field parsing, error bodies, SSE framing, usage.

Shapes follow OpenAI's Chat Completions and (legacy) Completions references: `data: {json}\\n\\n`
events ending with `data: [DONE]`; with `stream_options.include_usage` every chunk carries
`"usage": null` and a last chunk with empty `choices` carries the usage.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request

    from tandem.sim.respond import UsageCounts

FINGERPRINT = "tandem-sim"
DONE_EVENT = b"data: [DONE]\n\n"
_PLACEHOLDER = "\x00tandem-sim-text\x00"


class BadRequest(Exception):
    """The request body is not a valid request for this endpoint (answered 400)."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


async def read_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object; BadRequest otherwise."""
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    return body


def max_tokens_of(body: dict[str, Any], *, keys: tuple[str, ...], default: int) -> int:
    for key in keys:
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise BadRequest(f"{key} must be a whole number >= 1", param=key)
        return value
    return default


def stop_of(body: dict[str, Any]) -> tuple[str, ...]:
    value = body.get("stop")
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise BadRequest("stop must be a string or a list of strings", param="stop")


def flag_of(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest(f"{key} must be true or false", param=key)
    return value


def include_usage_of(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise BadRequest("stream_options must be an object", param="stream_options")
    return flag_of(options, "include_usage")


def model_of(body: dict[str, Any]) -> str:
    value = body.get("model", "")
    if not isinstance(value, str):
        raise BadRequest("model must be a string", param="model")
    return value


def had_authorization(request: Request) -> bool:
    """Whether an Authorization header came (its value is never read beyond this)."""
    return bool(request.headers.get("authorization"))


def error_body(message: str, *, kind: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_for_status(status: int, message: str) -> dict[str, Any]:
    """An OpenAI-style error body for a simulated failure."""
    if status == 429:
        return error_body(message, kind="requests", code="rate_limit_exceeded")
    if status >= 500:
        return error_body(message, kind="server_error")
    return error_body(message, kind="invalid_request_error")


def usage_object(usage: UsageCounts) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    }


def new_id(kind: str) -> str:
    return f"{kind}-sim-{uuid.uuid4().hex[:24]}"


def now_s() -> int:
    return int(time.time())


def sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


class DeltaTemplate:
    """A chunk with one text field, rendered by splicing the JSON-escaped text into bytes made once
    per response: the hot path of an instant stream sends tens of thousands of these a second."""

    def __init__(self, chunk: dict[str, Any]) -> None:
        rendered = sse(chunk).decode()
        # The placeholder is JSON-escaped in the rendered chunk; split there.
        escaped = json.dumps(_PLACEHOLDER)[1:-1]
        head, tail = rendered.split(escaped)
        self._head = head[:-1].encode()  # without the opening quote: json.dumps adds it back
        self._tail = tail[1:].encode()

    @staticmethod
    def placeholder() -> str:
        return _PLACEHOLDER

    def render(self, text: str) -> bytes:
        return self._head + json.dumps(text).encode() + self._tail


def malformed_event() -> bytes:
    return b'data: {"id": "simulated-malformed-chunk", "choices": [{"delta": {"content": "\n\n'
