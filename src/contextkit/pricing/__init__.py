"""Prices per model and token class, with dates: from genai-prices, with shipped corrections and
user overrides; the cost of one call's usage.
"""

from __future__ import annotations

from contextkit.pricing._prices import (
    PER_MILLION,
    PRICES_ENV,
    UNKNOWN_COST,
    ModelPrice,
    PriceOverride,
    PriceOverrides,
    PriceTier,
    UnknownPriceWarning,
    call_cost,
    format_cost,
    load_price_overrides,
    lookup_price,
    parse_price_overrides,
    price_or_warn,
    shipped_corrections,
    use_price_overrides,
)

__all__ = [
    "PER_MILLION",
    "PRICES_ENV",
    "UNKNOWN_COST",
    "ModelPrice",
    "PriceOverride",
    "PriceOverrides",
    "PriceTier",
    "UnknownPriceWarning",
    "call_cost",
    "format_cost",
    "load_price_overrides",
    "lookup_price",
    "parse_price_overrides",
    "price_or_warn",
    "shipped_corrections",
    "use_price_overrides",
]
