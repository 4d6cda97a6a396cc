"""A fixed price for tests: Sonnet-like rates per million tokens (REFERENCE.md, 2026), so a test's
expected dollars are simple arithmetic and do not move when the shipped prices do."""

from __future__ import annotations

from contextkit.pricing import ModelPrice


def fixed_price(model: str = "test") -> ModelPrice:
    """$3 input, $15 output, $3.75 / $6 cache writes (5m / 1h), $0.30 cache reads, per million
    tokens, under the name ``model``."""
    return ModelPrice(
        model=model, input=3.0, output=15.0, cache_write_5m=3.75, cache_write_1h=6.0, cache_read=0.3
    )


__all__ = ["fixed_price"]
