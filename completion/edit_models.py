"""The two model tiers for edits: a backend per configured tier, built on the server's shared HTTP client.

The completion engine keeps its own tiers for completions; this is the same construction (the factory,
the shared client), kept separately so the edit path does not reach into the engine's internals.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from completion.backends.factory import describe_model, make_backend
from completion.errors import CompletionError, describe

if TYPE_CHECKING:
    import httpx

    from completion.backends.base import Backend
    from completion.config import Config, ModelConfig
    from completion.router import Tier

TIERS: tuple[Tier, Tier] = ("fast", "accurate")


@dataclass(frozen=True)
class ModelTier:
    config: ModelConfig
    backend: Backend
    label: str

    @property
    def short(self) -> str:
        return self.config.model or self.label


class EditModels:
    """The backends of the two tiers for edits, built from `[models]` on the shared HTTP client."""

    def __init__(self, client: httpx.AsyncClient, *, env: Mapping[str, str] | None = None) -> None:
        self._client = client
        self._env = env if env is not None else os.environ
        self._tiers: dict[Tier, ModelTier] = {}

    def configure(self, config: Config) -> list[str]:
        """Adopt `config`'s models; returns problems in words (the engine reports the same ones)."""
        problems: list[str] = []
        for name in TIERS:
            model: ModelConfig | None = getattr(config.models, name)
            current = self._tiers.get(name)
            if current is not None and current.config == model:
                continue
            self._tiers.pop(name, None)
            if model is None or not model.base_url:
                continue
            try:
                backend = make_backend(model, self._client, env=self._env)
            except CompletionError as error:
                problems.append(f"models.{name}: {describe(error)}")
                continue
            self._tiers[name] = ModelTier(model, backend, describe_model(model))
        return problems

    def get(self, tier: Tier) -> ModelTier | None:
        return self._tiers.get(tier)

    async def aclose(self) -> None:
        for tier in self._tiers.values():
            await tier.backend.aclose()
        self._tiers.clear()
