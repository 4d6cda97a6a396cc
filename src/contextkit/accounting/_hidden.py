"""The hidden prefix of a file that omits its system prompt and tools, and its TTL.

Claude Code transcripts hold neither the system prompt nor the tool definitions. Where the file
has recorded usage, call 1's billed input measures them (:func:`hidden_prefix`); where it has
none, the capture of the same client version (``Session.captured_prefix``, which the Claude
Code reader sets from what the real CLI sent to a local server) is the next best: its system
blocks and tools, as counted by the capture's tiktoken encoding and scaled by the session
counter's calibration factor. A subagent's requests carry their own, smaller set.
Versions never captured give None (the size stays unknown, and the ledger says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextkit.cache import TTL_1H_S, TTL_5M_S, PrefixPart, strip_prior_thinking
from contextkit.session import Session, Usage
from contextkit.tokens import CalibratedCounter, TokenCounter


@dataclass(frozen=True)
class MeasuredPrefix:
    tokens: int
    ttl_s: int
    source: str
    """What it was measured on (version, kind of request, capture date)."""


def measured_prefix(session: Session, counter: TokenCounter) -> MeasuredPrefix | None:
    """The captured prefix the reader put on ``session`` (``Session.captured_prefix``, for its
    client version), in ``counter``'s tokens, or None."""
    capture = session.captured_prefix
    if capture is None:
        return None
    scale = counter.params.factor if isinstance(counter, CalibratedCounter) else 1.0
    tokens = round((capture.system_tokens + capture.tool_tokens) * scale)
    return MeasuredPrefix(tokens, TTL_1H_S if capture.one_hour else TTL_5M_S, capture.source)


def hidden_prefix(
    session: Session, counter: TokenCounter, recorded: Sequence[Usage] | None, notes: list[str]
) -> tuple[PrefixPart, ...]:
    """Constant prefix parts standing for a system prompt and tools the file does not hold."""
    if session.prefix_known or not session.calls:
        return ()
    known = measured_prefix(session, counter)
    if recorded is None:
        if known is None:
            notes.append("system prompt and tools are not in the file and their size is unknown")
            return ()
        notes.append(
            f"system prompt and tools not in the file: {known.tokens} tokens, {known.source}"
        )
        return (PrefixPart(tokens=known.tokens, ttl_s=known.ttl_s, label="hidden prefix"),)
    first = recorded[0]
    # Counted as billed: earlier turns' thinking is not input on models that strip it.
    billed = strip_prior_thinking(session.calls[0].request)
    hidden = first.total_input - counter.count_conversation(billed)
    if hidden <= 0:
        return ()
    ttl = recorded_ttl(recorded)
    warm = min(first.cache_read, hidden)
    # Split where call 1's read ended, so that the simulator can start that part warm.
    # The part cached before is what every session shares (tools and the static system prompt):
    # a system-level reset (an MCP reconnect) leaves it cached.
    label = "hidden prefix (cached before)"
    cached = PrefixPart(tokens=warm, ttl_s=ttl, label=label, level="tools")
    parts = [cached]
    parts.append(PrefixPart(tokens=hidden - warm, ttl_s=ttl, label="hidden prefix"))
    also = f" ({known.source}: {known.tokens})" if known else ""
    notes.append(
        f"system prompt and tools not in the file: {hidden} tokens inferred from call 1's recorded "
        f"usage{also}; call 1 read {first.cache_read} tokens cached before the session started"
    )
    return tuple(p for p in parts if p.tokens > 0)


def recorded_ttl(recorded: Sequence[Usage] | None) -> int:
    """The TTL the harness wrote with, as far as recorded usage shows (5m when unknown)."""
    if not recorded:
        return TTL_5M_S
    one_hour = sum(u.cache_write_1h for u in recorded)
    return TTL_1H_S if one_hour > sum(u.cache_write_5m for u in recorded) else TTL_5M_S


__all__ = ["MeasuredPrefix", "hidden_prefix", "measured_prefix", "recorded_ttl"]
