"""Usage: the tokens a provider billed for one call, in Anthropic's classes (a wire value: the
response carries it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """Billed tokens of one call, in Anthropic's classes.

    ``input_tokens`` is the uncached input only (neither read from nor written to the cache), as in
    Anthropic's ``usage.input_tokens``; the total input is :attr:`total_input`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0
    output_tokens: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def total_input(self) -> int:
        return self.input_tokens + self.cache_write + self.cache_read

    @classmethod
    def from_anthropic(cls, usage: Mapping[str, Any]) -> Usage:
        """From an Anthropic ``usage`` object (a write without a TTL split counts as 5m)."""
        written = int(usage.get("cache_creation_input_tokens") or 0)
        split = usage.get("cache_creation")
        w1h = 0
        w5m = written
        if isinstance(split, Mapping):
            w1h = int(split.get("ephemeral_1h_input_tokens") or 0)
            w5m = int(split.get("ephemeral_5m_input_tokens") or 0)
            if w5m + w1h != written and written:
                w5m = written - w1h
        return cls(
            input_tokens=int(usage.get("input_tokens") or 0),
            cache_write_5m=w5m,
            cache_write_1h=w1h,
            cache_read=int(usage.get("cache_read_input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
        )

    @classmethod
    def from_openai(cls, prompt_tokens: int, cached_tokens: int, output_tokens: int) -> Usage:
        """From OpenAI figures, where the prompt count includes the cached part."""
        return cls(
            input_tokens=max(prompt_tokens - cached_tokens, 0),
            cache_read=cached_tokens,
            output_tokens=output_tokens,
        )


__all__ = ["Usage"]
