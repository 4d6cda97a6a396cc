"""Where the simulation of a recording and its bill part: the token class that carries the gap,
and why where the cache doctor can say (the note every ledger of a recording gets when its
simulated cost is more than 5% off the bill)."""

from __future__ import annotations

from collections.abc import Mapping

from contextkit.accounting._doctor import diagnose_cache
from contextkit.pricing import lookup_price
from contextkit.session import Session
from contextkit.tokens import TokenCounter

_EXPECTED = frozenset({"new content", "first write"})
"""Writes the doctor expects (not rewrites)."""
_INPUT = ("input", "cache_write_5m", "cache_write_1h", "cache_read")

_GAP_CLASSES = {
    "uncached input": ("input",),
    "cache writes": ("cache_write_5m", "cache_write_1h"),
    "cache reads": ("cache_read",),
    "output": ("output",),
}


def gap_carrier(
    session: Session,
    simulated: Mapping[str, int | float | None],
    recorded: Mapping[str, int | float | None],
    counter: TokenCounter,
) -> str:
    """Which token class carries most of the gap in dollars, and why where the doctor can say:
    a gap in the writes the bill holds is put down to their leading recorded cause (observed or
    inferred); writes the simulation adds, or counts, are named as such."""
    sim, rec = simulated, recorded
    when = session.calls[0].timestamp if session.calls else None
    price = lookup_price(session.model_info, when)  # silent: the ledger warned once already
    rates = {
        "input": 1.0,
        "cache_write_5m": 1.25,
        "cache_write_1h": 2.0,
        "cache_read": 0.1,
        "output": 5.0,
    }  # the usual ratios to the input price, where the model's price is unknown
    if price is not None:
        rates = {k: float(getattr(price, k)) for k in rates}
    gaps = {
        name: (
            sum(int(sim[k] or 0) - int(rec[k] or 0) for k in keys),
            sum((int(sim[k] or 0) - int(rec[k] or 0)) * rates[k] for k in keys),
        )
        for name, keys in _GAP_CLASSES.items()
    }
    carrier = max(gaps, key=lambda k: abs(gaps[k][1]))
    tokens = gaps[carrier][0]
    total_sim = sum(int(sim[k] or 0) for k in _INPUT)
    total_rec = sum(int(rec[k] or 0) for k in _INPUT)
    counts = total_sim / total_rec - 1 if total_rec else 0.0
    said = f"most of it is in the {carrier} ({tokens:+,} tokens)"
    if carrier == "output":
        return f"{said}: the outputs priced differ from the bill's"
    if carrier != "cache writes" and abs(counts) >= 0.02:
        return f"{said}; the total input is counted {counts:+.1%} against the bill's"
    if carrier == "cache writes" and tokens < 0:
        diagnosis = diagnose_cache(session, counter)
        causes = {} if diagnosis is None else diagnosis.by_cause()
        rewrites = {k: v[0] for k, v in causes.items() if k not in _EXPECTED and v[0] > 0}
        if diagnosis is not None and rewrites:
            cause = max(rewrites, key=rewrites.__getitem__)
            inferred = sum(
                e.tokens
                for c in diagnosis.calls
                for e in c.events
                if e.cause == cause and e.inferred
            )
            how = "inferred from the reads" if inferred * 2 > rewrites[cause] else "observed"
            return (
                f"{said}: the bill rewrote what the simulation kept; its leading recorded cause is "
                f"{cause}, {how} ({rewrites[cause]:,} tokens; inspect --cache lists them)"
            )
        return f"{said}: the bill rewrote what the simulation kept, for no cause the doctor names"
    if carrier == "cache writes":
        return (
            f"{said}: the simulation rewrote what the recording read (the total input is counted "
            f"{counts:+.1%} against the bill's)"
        )
    return (
        f"{said}: the split of the input between cache reads and uncached input differs (the "
        f"total is counted within {abs(counts):.1%} of the bill's)"
    )


__all__ = ["gap_carrier"]
