"""The `fim` backend: fill-in-the-middle over `POST {base_url}/completions`, streamed.

Two ways to ask, chosen by `ModelConfig.fim_template`:

- empty: `prompt` = prefix and `suffix` = suffix as separate fields (vLLM, llama.cpp server, DeepSeek
  beta, `tandem sim`); the server applies the model's own FIM tokens.
- a template name (`fim_templates.TEMPLATES`): one raw prompt with that family's special tokens, and
  the family's end-of-middle tokens added to `stop`.

A request that is a fill (`prefix`, `suffix`: completions; or a `raw_prompt`) goes to `/completions`; one
that is a conversation (`messages`: next edits and edits) goes to the same server's
`{base_url}/chat/completions` (llama.cpp, Ollama, LM Studio and vLLM serve both): one local model serves
completions by fill-in-the-middle and the rest by chat. Either way the text comes back as the model wrote it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING

from tandem.completion.providers.backends import fim_templates
from tandem.completion.providers.backends.http_backend import HttpBackend
from tandem.completion.providers.backends.openai_chat import chat_body
from tandem.completion.providers.backends.streaming import StreamCall, chunk_texts
from tandem.completion.providers.errors import NotConfigured

if TYPE_CHECKING:
    import httpx

    from tandem.completion.config.tree import ModelConfig
    from tandem.completion.providers.backends.base import ModelRequest, StreamStats


CHAT_PATH = "/chat/completions"


class FimBackend(HttpBackend):
    """Streams `choices[0].text` from a completions API. Implements `base.Backend`."""

    name = "fim"
    path = "/completions"

    def __init__(self, config: ModelConfig, client: httpx.AsyncClient, *, env: Mapping[str, str] = os.environ) -> None:
        if config.fim_template and config.fim_template not in fim_templates.TEMPLATES:
            known = ", ".join(sorted(fim_templates.TEMPLATES))
            raise NotConfigured(f"unknown fim_template {config.fim_template!r} (known: {known})")
        super().__init__(config, client, env=env)

    def _call(self, request: ModelRequest) -> StreamCall:
        call = super()._call(request)
        if request.messages:
            call = dataclasses.replace(call, url=self._config.base_url.rstrip("/") + CHAT_PATH)
        return call

    def body(self, request: ModelRequest) -> dict[str, object]:
        """The JSON body for `request` (public so tests and traces can see what is sent)."""
        if request.messages:
            return chat_body(request, self._config.model)
        stop = list(request.stop)
        template = self._config.fim_template
        body: dict[str, object] = {}
        if self._config.model:
            body["model"] = self._config.model
        if request.raw_prompt:
            body["prompt"] = request.raw_prompt
        elif template:
            body["prompt"] = fim_templates.render(template, request.prefix, request.suffix)
            stop += [s for s in fim_templates.TEMPLATES[template].stop if s not in stop]
        else:
            body["prompt"] = request.prefix
            body["suffix"] = request.suffix
        body.update(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            stream=True,
            stream_options={"include_usage": True},
        )
        if stop:
            body["stop"] = stop
        return body

    async def stream(self, request: ModelRequest, stats: StreamStats) -> AsyncIterator[str]:
        """Yield text as it arrives; see `base.Backend.stream`."""
        call = self._call(request)
        async with aclosing(chunk_texts(self._client, call, stats)) as texts:
            async for text in texts:
                yield text
