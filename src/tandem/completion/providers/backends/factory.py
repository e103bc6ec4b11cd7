"""Build the backend a `ModelConfig` names: a tagged union keyed by `provider`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tandem.completion.config.tree import IMPLEMENTED_PROVIDERS
from tandem.completion.providers.backends.anthropic import AnthropicBackend
from tandem.completion.providers.backends.fim import FimBackend
from tandem.completion.providers.backends.openai_chat import OpenAIChatBackend
from tandem.completion.providers.backends.openai_responses import OpenAIResponsesBackend
from tandem.completion.providers.errors import NotConfigured

if TYPE_CHECKING:
    import httpx

    from tandem.completion.config.tree import ModelConfig
    from tandem.completion.providers.backends.base import Backend


def make_backend(config: ModelConfig, client: httpx.AsyncClient, *, env: Mapping[str, str] = os.environ) -> Backend:
    """The backend for `config`, sharing `client`. API keys are read from `env` at request time.

    Raises NotConfigured, in words a user can act on, for a missing or unusable base_url, an unknown
    FIM template, or a provider that has no backend yet.
    """
    base = config.base_url.strip()
    if not base:
        raise NotConfigured(f"{config.provider} model {config.model or '(unnamed)'} has no base_url")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise NotConfigured(
            f"base_url {base!r} is not an http:// or https:// URL (example: https://api.cerebras.ai/v1)"
        )
    if config.transport == "websocket" and config.provider != "openai-responses":
        raise NotConfigured(f"transport 'websocket' is only for provider 'openai-responses', not {config.provider!r}")
    match config.provider:
        case "openai-chat":
            return OpenAIChatBackend(config, client, env=env)
        case "fim":
            return FimBackend(config, client, env=env)
        case "anthropic":
            return AnthropicBackend(config, client, env=env)
        case "openai-responses" if config.transport == "websocket":
            # Imported when a model asks for it: the WebSocket library (1.6 MB resident) serves no other.
            from tandem.completion.providers.backends.responses_ws import ResponsesWebSocketBackend

            return ResponsesWebSocketBackend(config, env=env)
        case "openai-responses":
            return OpenAIResponsesBackend(config, client, env=env)
        case other:
            available = ", ".join(sorted(IMPLEMENTED_PROVIDERS))
            raise NotConfigured(f"provider {other!r} has no backend yet (available: {available})")


def describe_model(config: ModelConfig) -> str:
    """One short line for logs: "openai-chat gpt-oss-120b @ api.cerebras.ai"."""
    host = urlsplit(config.base_url).netloc or config.base_url or "(no base_url)"
    template = f" [{config.fim_template}]" if config.provider == "fim" and config.fim_template else ""
    transport = " over WebSocket" if config.transport == "websocket" else ""
    return f"{config.provider} {config.model or '(default model)'}{template} @ {host}{transport}"
