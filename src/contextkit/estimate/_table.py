"""Per-call token arrays -> cost per ticket, split by content and by billing class.

Contract: :class:`CallArrays` holds, per model call (flat arrays of equal length), the context
size, how much of it is the fixed prefix (system prompt, tools, a hidden prefix) and how much is new
since the previous call, the cache's split of the input (read, written 5m/1h, uncached), the output,
and which ticket the call belongs to. :func:`ticket_table` prices every call with the model's
absolute prices (the tier chosen by the call's own total input, as ``ModelPrice.cost`` does) and
sums per ticket with ``np.bincount``: a recorded corpus and a million Monte Carlo calls go through
the same vectorised code.

Attributing dollars to content: a request is laid out as [prefix | re-sent history | new input] and
the cache bills it as [read | written | uncached] from the front (a read is always a prefix of the
request, writes follow it). Each content segment is priced by its overlap with each billing
segment, so the content split and the class split add up to the same total per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt

from contextkit.pricing import PER_MILLION, ModelPrice

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

CONTENT = ("prefix", "history", "new_input", "output")
"""Content parts of the breakdown: fixed prefix, re-sent history, input new since the last call."""
CLASSES = ("uncached", "cache_write", "cache_read", "output")
"""Billing classes of the breakdown (``uncached`` is input neither read nor written)."""
_RATE_KEYS = ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")


@dataclass(frozen=True)
class CallArrays:
    """Per call token figures (float arrays: Monte Carlo sizes need not be integers)."""

    ticket: IntArray
    context: FloatArray
    prefix: FloatArray
    new: FloatArray
    read: FloatArray
    write_5m: FloatArray
    write_1h: FloatArray
    output: FloatArray

    @property
    def uncached(self) -> FloatArray:
        return self.context - self.read - self.write_5m - self.write_1h

    @classmethod
    def concat(cls, parts: list[CallArrays]) -> CallArrays:
        def joined(name: str) -> FloatArray:
            arrays = [np.asarray(getattr(p, name), dtype=np.float64) for p in parts]
            return np.concatenate(arrays) if arrays else np.zeros(0)

        floats = {f.name: joined(f.name) for f in fields(cls) if f.name != "ticket"}
        return cls(ticket=joined("ticket").astype(np.int64), **floats)


def rates(price: ModelPrice | None, total_input: FloatArray) -> dict[str, FloatArray]:
    """USD per token of each class, per call (the tier of each call's total input; NaN unknown)."""
    n = total_input.shape
    if price is None:
        return {k: np.full(n, np.nan) for k in _RATE_KEYS}
    out = {k: np.full(n, getattr(price, k) / PER_MILLION) for k in _RATE_KEYS}
    for tier in price.tiers:  # ascending thresholds: a later tier overrides an earlier one
        above = total_input > tier.above_input_tokens
        for k in _RATE_KEYS:
            out[k] = np.where(above, getattr(tier, k) / PER_MILLION, out[k])
    return out


def _overlap(a0: FloatArray, a1: FloatArray, b0: FloatArray, b1: FloatArray) -> FloatArray:
    overlap: FloatArray = np.clip(np.minimum(a1, b1) - np.maximum(a0, b0), 0.0, None)
    return overlap


@dataclass(frozen=True)
class TicketTable:
    """Per ticket (arrays of length ``n``): USD and tokens by content part and billing class."""

    cost: FloatArray
    calls: FloatArray
    usd: Mapping[str, FloatArray]
    """USD by content part (``CONTENT``) and billing class (``CLASSES``); ``output`` is in both."""
    tokens: Mapping[str, FloatArray]

    @property
    def n(self) -> int:
        return int(self.cost.size)

    def __sub__(self, other: TicketTable) -> TicketTable:
        return self._combine(other, -1.0)

    def __add__(self, other: TicketTable) -> TicketTable:
        return self._combine(other, 1.0)

    def _combine(self, other: TicketTable, sign: float) -> TicketTable:
        return TicketTable(
            cost=self.cost + sign * other.cost,
            calls=self.calls + sign * other.calls,
            usd={k: v + sign * other.usd[k] for k, v in self.usd.items()},
            tokens={k: v + sign * other.tokens[k] for k, v in self.tokens.items()},
        )


def ticket_table(arrays: CallArrays, price: ModelPrice | FloatArray | None, n: int) -> TicketTable:
    """Price every call and sum per ticket (``n`` tickets; ``price`` may be per-call rates)."""
    a = arrays
    r = rates(price, a.context) if not isinstance(price, np.ndarray) else _unpack(price)
    written = a.write_5m + a.write_1h
    w_rate = np.where(
        written > 0,
        (a.write_5m * r["cache_write_5m"] + a.write_1h * r["cache_write_1h"])
        / np.where(written > 0, written, 1.0),
        r["cache_write_5m"],
    )
    zero = np.zeros_like(a.context)
    hist_end = a.context - a.new
    content = {"prefix": (zero, a.prefix), "history": (a.prefix, hist_end)}
    content["new_input"] = (hist_end, a.context)
    billing = {
        "cache_read": (zero, a.read, r["cache_read"]),
        "cache_write": (a.read, a.read + written, w_rate),
        "uncached": (a.read + written, a.context, r["input"]),
    }
    usd: dict[str, FloatArray] = {}
    tokens: dict[str, FloatArray] = {}
    for name, (c0, c1) in content.items():
        usd[name] = sum(
            (_overlap(c0, c1, b0, b1) * rate for b0, b1, rate in billing.values()), zero
        )
        tokens[name] = c1 - c0
    for name, (b0, b1, rate) in billing.items():
        usd[name] = (b1 - b0) * rate
        tokens[name] = b1 - b0
    usd["output"] = a.output * r["output"]
    tokens["output"] = a.output
    per_call = usd["cache_read"] + usd["cache_write"] + usd["uncached"] + usd["output"]

    def total(values: FloatArray) -> FloatArray:
        return np.bincount(a.ticket, weights=values, minlength=n).astype(np.float64)

    return TicketTable(
        cost=total(per_call),
        calls=total(np.ones_like(a.context)),
        usd={k: total(v) for k, v in usd.items()},
        tokens={k: total(v) for k, v in tokens.items()},
    )


def _unpack(stacked: FloatArray) -> dict[str, FloatArray]:
    """Per-call rates given as a (5, n) array in ``_RATE_KEYS`` order (USD per token)."""
    return {k: stacked[i] for i, k in enumerate(_RATE_KEYS)}


def stack_rates(by_call: list[dict[str, FloatArray]]) -> FloatArray:
    """Concatenate per-call rate dicts into the (5, n) array :func:`ticket_table` accepts."""
    return np.stack([np.concatenate([d[k] for d in by_call]) for k in _RATE_KEYS])


def _finite(values: FloatArray) -> FloatArray:
    return values[np.isfinite(values)]


def summary(table: TicketTable) -> dict[str, float | int | None]:
    """``tickets``, ``mean_usd``, ``p50_usd``, ``p90_usd``, ``max_usd`` (None when no price)."""
    cost = _finite(table.cost)
    if not cost.size:
        return {
            "tickets": table.n,
            "mean_usd": None,
            "p50_usd": None,
            "p90_usd": None,
            "max_usd": None,
        }
    return {
        "tickets": table.n,
        "mean_usd": float(cost.mean()),
        "p50_usd": float(np.percentile(cost, 50)),
        "p90_usd": float(np.percentile(cost, 90)),
        "max_usd": float(cost.max()),
    }


def breakdown(table: TicketTable) -> dict[str, float]:
    """Mean per ticket: USD by content part and class, tokens of each, and calls."""
    out: dict[str, float] = {"calls": float(table.calls.mean()) if table.n else 0.0}
    for key in (*CONTENT[:-1], *CLASSES):
        out[f"{key}_usd"] = _mean(table.usd[key])
        out[f"{key}_tokens"] = _mean(table.tokens[key])
    return out


def _mean(values: FloatArray) -> float:
    finite = _finite(values)
    return float(finite.mean()) if finite.size else float("nan")


__all__ = [
    "CLASSES",
    "CONTENT",
    "CallArrays",
    "TicketTable",
    "breakdown",
    "rates",
    "stack_rates",
    "summary",
    "ticket_table",
]
