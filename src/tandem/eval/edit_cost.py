"""Money beside tokens in `tandem replay --edits`: the list prices the simulated tiers are priced at.

The simulators stand in for a fast model and an accurate one (`sim.settings`: spark, codex); their tokens
are priced as the README's example configuration's models (`[models.fast]` gpt-oss-120b on Cerebras,
`[models.accurate]` gpt-5.3-codex on OpenAI), at the list prices below, USD per million tokens, without
any cached-input discount (an upper figure where a provider's prompt cache would have served part of a
prompt). Prices change: the date says when they were read, the source where.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class TierPrice:
    """One tier's list price, USD per million tokens."""

    model: str
    input_per_mtok: float
    output_per_mtok: float
    source: str

    def usd(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input_per_mtok + tokens_out * self.output_per_mtok) / 1_000_000

    @property
    def input_per_token(self) -> float:
        return self.input_per_mtok / 1_000_000

    @property
    def output_per_token(self) -> float:
        return self.output_per_mtok / 1_000_000


PRICES_READ = "2026-12-04"
REPLAY_PRICES: dict[str, TierPrice] = {
    "fast": TierPrice(
        model="gpt-oss-120b on Cerebras",
        input_per_mtok=0.35,
        output_per_mtok=0.75,
        source="inference-docs.cerebras.ai/models/openai-oss",
    ),
    "accurate": TierPrice(
        model="gpt-5.3-codex on OpenAI",
        input_per_mtok=1.75,
        output_per_mtok=14.0,
        source="OpenAI's list price as in github/docs data/tables/copilot/models-and-pricing.yml",
    ),
}


def cost_usd(tier: str, tokens_in: int, tokens_out: int) -> float:
    """A call's price on `tier` ("fast" | "accurate")."""
    return REPLAY_PRICES["accurate" if tier == "accurate" else "fast"].usd(tokens_in, tokens_out)


def prices_line() -> str:
    """The prices, for the head of a table."""
    parts = [
        f"{tier} = {p.model} ${p.input_per_mtok:g} in / ${p.output_per_mtok:g} out per Mtok ({p.source})"
        for tier, p in REPLAY_PRICES.items()
    ]
    return f"prices (list, read {PRICES_READ}; no cached-input discount): " + "; ".join(parts)
