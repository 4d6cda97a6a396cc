"""Usage: the tokens a provider billed for one call, in Anthropic's classes (a wire value: the
response carries it)."""

from __future__ import annotations

import math
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
        """From an Anthropic ``usage`` object (a write without a TTL split counts as 5m).

        Every token count must be a non-negative integer (a JSON number without a fraction; an
        absent or null count is 0): anything else (a string, a list, an object, a boolean,
        ``1e999``, NaN, a negative or fractional number) raises :class:`ValueError` naming the
        field, which a reader turns into its own error naming the file and line.
        """
        written = _count(usage, "cache_creation_input_tokens")
        split = usage.get("cache_creation")
        w1h = 0
        w5m = written
        if split is not None and not isinstance(split, Mapping):
            raise ValueError(f"usage.cache_creation must be an object, found {_tname(split)}")
        if isinstance(split, Mapping):
            w1h = _count(split, "ephemeral_1h_input_tokens", "cache_creation.")
            w5m = _count(split, "ephemeral_5m_input_tokens", "cache_creation.")
            if w5m + w1h != written and written:
                w5m = max(written - w1h, 0)
        return cls(
            input_tokens=_count(usage, "input_tokens"),
            cache_write_5m=w5m,
            cache_write_1h=w1h,
            cache_read=_count(usage, "cache_read_input_tokens"),
            output_tokens=_count(usage, "output_tokens"),
        )

    @classmethod
    def from_openai(cls, prompt_tokens: int, cached_tokens: int, output_tokens: int) -> Usage:
        """From OpenAI figures, where the prompt count includes the cached part."""
        return cls(
            input_tokens=max(prompt_tokens - cached_tokens, 0),
            cache_read=cached_tokens,
            output_tokens=output_tokens,
        )


def token_count(value: object, name: str) -> int | None:
    """``value`` as a token count: None when absent (None), else a non-negative integer (a JSON
    number without a fraction); anything else (a string, a list, an object, a boolean,
    ``1e999``, NaN, a negative or fractional number) is a :class:`ValueError` naming ``name``
    (readers turn it into an error naming the file and line, or a skipped record)."""
    if value is None:
        return None
    return _count({name: value}, name)


def _count(usage: Mapping[str, Any], key: str, prefix: str = "") -> int:
    """``usage[key]`` as a token count (absent or null: 0); ValueError when it is not one."""
    value = usage.get(key)
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        count = int(value)
    else:
        shown = repr(value) if isinstance(value, int | float) else _tname(value)
        raise ValueError(f"usage.{prefix}{key} must be a non-negative integer, found {shown}")
    if count < 0:
        raise ValueError(f"usage.{prefix}{key} must be a non-negative integer, found {count}")
    return count


def _tname(value: object) -> str:
    return "null" if value is None else type(value).__name__


__all__ = ["Usage", "token_count"]
