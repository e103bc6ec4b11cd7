"""The `openai-chat` backend: `POST {base_url}/chat/completions`, streamed.

Works with any OpenAI-compatible chat API (Cerebras, Groq, OpenAI, vLLM, llama.cpp server, `tandem sim`).
It sends the request's conversation as given and streams the model's text back as it comes: the prompt is
its feature's (`completion.inline.prompts` asks for a hole's middle), and so is cleaning the answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING

from tandem.completion.providers.backends.base import conversation
from tandem.completion.providers.backends.http_backend import HttpBackend
from tandem.completion.providers.backends.streaming import chunk_texts

if TYPE_CHECKING:
    from tandem.completion.providers.backends.base import ModelRequest, StreamStats

# The OpenAI API takes at most 4 stop sequences; several compatible servers enforce the same limit.
MAX_STOP_SEQUENCES = 4


class OpenAIChatBackend(HttpBackend):
    """Streams a conversation's answer from a chat-completions API. Implements `base.Backend`."""

    name = "openai-chat"
    path = "/chat/completions"

    def body(self, request: ModelRequest) -> dict[str, object]:
        """The JSON body for `request` (public so tests and traces can see what is sent)."""
        return chat_body(request, self._config.model)

    async def stream(self, request: ModelRequest, stats: StreamStats) -> AsyncIterator[str]:
        """Yield text as it arrives; see `base.Backend.stream`."""
        call = self._call(request)
        async with aclosing(chunk_texts(self._client, call, stats)) as texts:
            async for text in texts:
                yield text


def chat_body(request: ModelRequest, model: str) -> dict[str, object]:
    """A Chat Completions body for `request`'s conversation."""
    body: dict[str, object] = {
        "messages": [{"role": role, "content": content} for role, content in conversation(request, "Chat Completions")],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if model:
        body["model"] = model
    if request.stop:
        body["stop"] = list(request.stop[:MAX_STOP_SEQUENCES])
    return body
