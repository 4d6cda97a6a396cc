"""Prices per model and token class, in USD per million tokens, with their source and date.

Contract: :class:`ModelPrice` holds absolute prices per token class (never multipliers);
:meth:`ModelPrice.cost` prices ONE call's usage (price each call, then sum: tiers break the other
way round). ``lookup_price(model)`` resolves aliases and returns None for an unknown model (the
caller reports the cost as unknown and warns once).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from contextkit.session import Usage

PER_MILLION = 1_000_000


class ModelPrice(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    source: str = ""
    """Where the figures come from (package and version, or an override file), with their date."""

    def cost(self, usage: Usage) -> float:
        """USD for one call's usage."""
        return (
            usage.input_tokens * self.input
            + usage.cache_write_5m * self.cache_write_5m
            + usage.cache_write_1h * self.cache_write_1h
            + usage.cache_read * self.cache_read
            + usage.output_tokens * self.output
        ) / PER_MILLION


__all__ = ["PER_MILLION", "ModelPrice"]
