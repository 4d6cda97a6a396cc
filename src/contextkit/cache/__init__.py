"""The provider prompt-cache simulator: breakpoints, lookback, TTLs, minimum cacheable length,
what invalidates what.
"""

from __future__ import annotations

from contextkit.cache._config import (
    TTL_1H_S,
    TTL_5M_S,
    UNTIMED_STEP_S,
    AnthropicCache,
    CacheConfig,
    GeminiCache,
    OpenAICache,
    Placement,
    PrefixPart,
    automatic_cache,
    cache_note,
)
from contextkit.cache._prefix import (
    request_sizes,
    strip_prior_thinking,
)
from contextkit.cache._simulator import (
    CachedCall,
    CacheSimulator,
    simulate_cache,
)

__all__ = [
    "TTL_1H_S",
    "TTL_5M_S",
    "UNTIMED_STEP_S",
    "AnthropicCache",
    "CacheConfig",
    "CacheSimulator",
    "CachedCall",
    "GeminiCache",
    "OpenAICache",
    "Placement",
    "PrefixPart",
    "automatic_cache",
    "cache_note",
    "request_sizes",
    "simulate_cache",
    "strip_prior_thinking",
]
