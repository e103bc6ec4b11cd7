"""What every HTTP backend has in common: its endpoint URL, building one `StreamCall`, warming the
connection, and closing (the shared client belongs to the server, so closing only refuses new calls)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from tandem.completion.providers.backends.streaming import StreamCall, api_key, warm_connection
from tandem.completion.providers.errors import BackendUnavailable
from tandem.completion.providers.http import request_timeout

if TYPE_CHECKING:
    import httpx

    from tandem.completion.config.tree import ModelConfig
    from tandem.completion.providers.backends.base import ModelRequest


class HttpBackend:
    """Base of the `base.Backend` implementations: subclasses set `name` and `path` and build `body`."""

    name: str
    # The endpoint under `base_url`, e.g. "/chat/completions".
    path: ClassVar[str]

    def __init__(self, config: ModelConfig, client: httpx.AsyncClient, *, env: Mapping[str, str] = os.environ) -> None:
        self._config = config
        self._client = client
        self._env = env
        self._url = config.base_url.rstrip("/") + self.path
        # The model's limits, made once: a configuration change makes a new backend.
        self._timeout = request_timeout(config)
        self._closed = False

    def body(self, request: ModelRequest) -> dict[str, object]:
        """The JSON body for `request` (public so tests and traces can see what is sent)."""
        raise NotImplementedError

    def _call(self, request: ModelRequest) -> StreamCall:
        """The request to send; reads the API key from the environment now, never earlier."""
        if self._closed:
            raise BackendUnavailable(f"{self.name} backend was closed")
        return StreamCall(
            url=self._url,
            body=self.body(request),
            timeout=self._timeout,
            api_key=api_key(self._config, self._env),
        )

    async def warm(self, like: ModelRequest | None = None) -> None:
        await warm_connection(self._client, self._config, self._env)

    async def aclose(self) -> None:
        self._closed = True
