"""How the prompt cache is configured: the provider's rules (:class:`AnthropicCache`,
:class:`OpenAICache`, :class:`GeminiCache`; :func:`automatic_cache` picks a model's), the placement
of breakpoints a request does not carry, and the hidden parts of a prefix a file omits
(:class:`PrefixPart`)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from contextkit.models import ModelInfo

TTL_5M_S = 300
TTL_1H_S = 3600
UNTIMED_STEP_S = 0.001
"""Calls without a timestamp are taken as sent back to back, this far apart."""

Placement: TypeAlias = Literal["as-sent", "auto", "claude-code", "engine", "off"]
"""Breakpoints for a request that carries none: ``as-sent`` adds none, ``auto`` one on the last
cacheable block, ``claude-code`` Claude Code's own (see the module docstring); ``off`` ignores every
breakpoint, as if caching were not used. ``engine`` is contextkit's own placement
(``engine.place_breakpoints``), applied to every request, marked or not: the last message, the
previous request's last message while this one still holds it, the end of system, the end of
tools, in that order, while the request's own breakpoints leave room under the four."""


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AnthropicCache(_Config):
    kind: Literal["anthropic"] = "anthropic"
    min_tokens: int = Field(1024, ge=0)
    """Shortest cacheable prefix (:meth:`~contextkit.models.ModelInfo.cache_min_tokens`)."""
    placement: Placement = "as-sent"
    ttl_s: int = TTL_5M_S
    """TTL of the breakpoints a placement policy adds (300 or 3600)."""
    lookback_blocks: int = Field(20, ge=1)
    max_breakpoints: int = 4
    tool_overhead: bool = True
    """Count the hidden tool-use system prompt when a request carries tools."""


class OpenAICache(_Config):
    """Automatic prefix caching: no breakpoints, no write charge, cached input at a discount."""

    kind: Literal["openai"] = "openai"
    min_tokens: int = 1024
    step_tokens: int = 128
    retention_s: float = 300.0
    """In-memory retention is 5-10 minutes; 86,400 for ``prompt_cache_retention="24h"``."""


class GeminiCache(_Config):
    """Gemini's implicit caching (Gemini 2.5 and later, on by default): like OpenAI's, automatic
    prefix caching with no breakpoints and no write charge, cached tokens billed at the model's
    cache-read price. The minimum is per model
    (:meth:`~contextkit.models.ModelInfo.cache_min_tokens`); Google publishes no increment and no
    lifetime for implicit entries ("send requests with similar prefix in a short amount of time"):
    any shared length counts, and an entry is taken to live 5 minutes from its last use, an
    assumption."""

    kind: Literal["gemini"] = "gemini"
    min_tokens: int = Field(4096, ge=0)
    step_tokens: int = Field(1, ge=1)
    retention_s: float = 300.0


CacheConfig: TypeAlias = AnthropicCache | OpenAICache | GeminiCache


def automatic_cache(
    model: ModelInfo, when: date | datetime | None = None
) -> OpenAICache | GeminiCache | None:
    """The automatic cache of ``model``'s provider (OpenAI, Gemini), or None where the cache takes
    breakpoints (Anthropic, and any model of no known provider: the caller places them)."""
    if model.is_openai:
        return OpenAICache()
    if model.is_gemini:
        return GeminiCache(min_tokens=model.cache_min_tokens(when))
    return None


def cache_note(config: CacheConfig) -> str:
    """One line naming the provider rules a simulation used."""
    if isinstance(config, AnthropicCache):
        return f"cache: Anthropic, breakpoints {config.placement}, TTL {config.ttl_s}s"
    if isinstance(config, OpenAICache):
        return (
            f"cache: OpenAI automatic prefix caching from {config.min_tokens:,} tokens in "
            f"{config.step_tokens}-token steps, no write charge, retained "
            f"{config.retention_s:.0f}s"
        )
    return (
        f"cache: Gemini implicit caching from {config.min_tokens:,} tokens, no write charge, an "
        f"entry taken to live {config.retention_s:.0f}s from its last use (Google publishes no "
        "lifetime)"
    )


class PrefixPart(_Config):
    """Tokens that stand before every request but are not in it (a hidden system prompt)."""

    tokens: int = Field(ge=0)
    ttl_s: int | None = TTL_5M_S
    """TTL of a breakpoint at the end of this part (None: no breakpoint)."""
    warm: bool = False
    """Already cached when the first call starts (written by a request outside the session).
    :class:`CacheSimulator` ``warm_tokens`` says the same of any prefix, by size."""
    label: str = "hidden prefix"
    level: Literal["tools", "system"] = "system"
    """The cache level it stands for: a system-level reset (``Call.cache_reset``) rewrites the
    first system-level part and everything after it; tools-level parts stay cached."""


__all__ = [
    "TTL_1H_S",
    "TTL_5M_S",
    "UNTIMED_STEP_S",
    "AnthropicCache",
    "CacheConfig",
    "GeminiCache",
    "OpenAICache",
    "Placement",
    "PrefixPart",
    "automatic_cache",
    "cache_note",
]
