"""`POST /v1/completions`, shaped like OpenAI's (legacy) Completions API as FIM servers speak it.

The prefix and suffix come from `prompt` + `suffix` fields (vLLM, llama.cpp server, DeepSeek beta) or,
without a `suffix` field, from a raw FIM prompt in any template of `completion.providers.backends.fim_templates`.
A prompt in no known shape counts as all prefix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tandem.sim import openai_common as oc
from tandem.sim.answers import Ask
from tandem.sim.prompt_reading import read_fim
from tandem.sim.respond import respond

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from tandem.sim.respond import UsageCounts
    from tandem.sim.state import SimState

ENDPOINT = "completions"
# OpenAI's (and vLLM's) default for this endpoint.
DEFAULT_MAX_TOKENS = 16


async def handle(request: Request, sim: SimState) -> Response:
    body = await oc.read_object(request)
    prompt = _prompt_of(body)
    suffix_field = body.get("suffix")
    if suffix_field is not None and not isinstance(suffix_field, str):
        raise oc.BadRequest("suffix must be a string", param="suffix")
    if suffix_field is not None:
        prefix, suffix = prompt, suffix_field
    else:
        prefix, suffix = read_fim(prompt) or (prompt, "")
    stream = oc.flag_of(body, "stream")
    ask = Ask(
        endpoint=ENDPOINT,
        model=oc.model_of(body),
        prefix=prefix,
        suffix=suffix,
        prompt_text=prompt + (suffix_field or ""),
        max_tokens=oc.max_tokens_of(body, keys=("max_tokens",), default=DEFAULT_MAX_TOKENS),
        stop=oc.stop_of(body),
        stream=stream,
        include_usage=stream and oc.include_usage_of(body),
        had_authorization=oc.had_authorization(request),
    )
    return await respond(sim, ask, CompletionsWire(model=sim.model_id, include_usage=ask.include_usage))


def _prompt_of(body: dict[str, Any]) -> str:
    prompt = body.get("prompt")
    # A list holds a batch of prompts; the simulator answers the first, as one choice.
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise oc.BadRequest("prompt must be a string", param="prompt")
    return prompt


class CompletionsWire:
    """Completions chunks and bodies (`object: text_completion`, text in `choices[0].text`)."""

    def __init__(self, *, model: str, include_usage: bool) -> None:
        self._id = oc.new_id("cmpl")
        self._created = oc.now_s()
        self._model = model
        self._include_usage = include_usage
        self._delta = oc.DeltaTemplate(self._chunk(oc.DeltaTemplate.placeholder(), None))

    def _chunk(self, text: str, finish_reason: str | None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self._id,
            "object": "text_completion",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": oc.FINGERPRINT,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}],
        }
        if self._include_usage:
            chunk["usage"] = None
        return chunk

    def open_events(self) -> list[bytes]:
        return []

    def delta_event(self, text: str) -> bytes:
        return self._delta.render(text)

    def close_events(self, finish_reason: str, usage: UsageCounts | None) -> list[bytes]:
        events = [oc.sse(self._chunk("", finish_reason))]
        if usage is not None:
            last = self._chunk("", None)
            last["choices"] = []
            last["usage"] = oc.usage_object(usage)
            events.append(oc.sse(last))
        events.append(oc.DONE_EVENT)
        return events

    def malformed_event(self) -> bytes:
        return oc.malformed_event()

    def full_body(self, text: str, finish_reason: str, usage: UsageCounts) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "text_completion",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": oc.FINGERPRINT,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}],
            "usage": oc.usage_object(usage),
        }

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return oc.error_for_status(status, message)
