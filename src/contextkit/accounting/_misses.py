"""Cache misses the requests do not show, fitted on what the cache doctor finds in recordings.

The cache simulator sees the requests; some rewrites happen for reasons no request shows: a route
that serves a read from an older entry or none (AWS Bedrock), a harness that rewrites the level it
hides from its transcript at a new user turn (Claude Code rewrites the cached messages; pi writes
the time into its system prompt). :class:`MissModel` holds, fitted by :func:`fit_miss_model`:

- ``route_loss[route]``: the share of what the cache could serve that a call on that route read
  short (the doctor's ``routing`` tokens over the servable tokens of routed calls);
- ``turn_reset[format]``: the probability that a call opening a new user turn finds the hidden
  level rewritten (the doctor's inferred ``harness reset`` at such calls over all such calls not
  otherwise invalidated), and what such a call still reads, as a share of the prefix the file
  omits (Claude Code: the read stops at its system prompt and tools; pi: nothing is read).

:func:`apply_misses` moves the expected share of each call's simulated reads to writes (an
expected value, so a replay stays deterministic; the rewritten entry is readable by the next call,
as it is in the recordings). The accountant applies it to the recorded requests and to every
strategy's views alike, so a saving is never a difference of cache models. The shipped model is
``contextkit/accounting/data/miss_model.json``, written by ``scripts/fit_miss_model.py`` with the
data it was fitted on.
"""

from __future__ import annotations

import json
import statistics
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from contextkit.accounting._doctor import diagnose_cache, opens_turn
from contextkit.cache import CachedCall
from contextkit.errors import ConfigError
from contextkit.messages import Conversation
from contextkit.session import Session

_WHOLE = frozenset({"compaction", "model switch", "ttl expiry"})
"""Doctor causes that invalidate everything on their own: such calls say nothing of resets."""


class TurnReset(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    probability: float
    kept_share: float = 0.0
    """What a reset call still read, as a share of the prefix the file omits (median over the
    resets seen; 0: nothing, the system level was rewritten)."""
    turns: int = 0
    """Calls opening a new user turn the fit saw."""
    resets: int = 0


class RouteLoss(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    share: float
    calls: int = 0
    servable_tokens: int = 0
    lost_tokens: int = 0


class MissModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    route_loss: Mapping[str, RouteLoss] = {}
    turn_reset: Mapping[str, TurnReset] = {}
    data: tuple[str, ...] = ()
    """What it was fitted on (sources, sessions, calls)."""

    def applies_to(self, session: Session) -> bool:
        routed = any(c.route in self.route_loss for c in session.calls)
        return routed or session.format in self.turn_reset


NO_MISSES = MissModel()


def apply_misses(
    cached: Sequence[CachedCall],
    session: Session,
    requests: Sequence[Conversation],
    hidden_tokens: int,
    model: MissModel,
) -> list[CachedCall]:
    """``cached`` with each call's expected unseen misses moved from reads to writes."""
    reset = model.turn_reset.get(session.format)
    out = list(cached)
    for i in range(1, len(out)):
        call, sim = session.calls[i], out[i]
        loss = model.route_loss.get(call.route) if call.route is not None else None
        moved = 0.0
        if loss is not None:
            moved = loss.share * sim.cache_read
        elif reset is not None and opens_turn(requests[i]):
            kept = reset.kept_share * hidden_tokens
            moved = reset.probability * max(sim.cache_read - kept, 0)
        tokens = min(round(moved), sim.cache_read)
        if tokens > 0:
            out[i] = _rewritten(sim, tokens)
    return out


def _rewritten(sim: CachedCall, tokens: int) -> CachedCall:
    """``sim`` reading ``tokens`` fewer tokens and writing them again, at its writes' TTL."""
    if sim.cache_write_1h > sim.cache_write_5m:
        return replace(
            sim, cache_read=sim.cache_read - tokens, cache_write_1h=sim.cache_write_1h + tokens
        )
    return replace(
        sim, cache_read=sim.cache_read - tokens, cache_write_5m=sim.cache_write_5m + tokens
    )


@dataclass
class _Tally:
    """What the doctor found in some sessions, before it is made a model."""

    servable: dict[str, list[int]] = field(default_factory=dict)  # route -> [calls, tokens, lost]
    turns: dict[str, list[int]] = field(default_factory=dict)  # format -> [turns, resets]
    kept: dict[str, list[float]] = field(default_factory=dict)  # format -> kept shares


def _tally(sessions: Iterable[Session]) -> _Tally:
    tally = _Tally()
    for session in sessions:
        diagnosis = diagnose_cache(session)
        if diagnosis is None:
            continue
        for i, found in enumerate(diagnosis.calls[1:], start=1):
            causes = {e.cause: e for e in found.events}
            if causes.keys() & _WHOLE:
                continue
            call = session.calls[i]
            if call.route is not None:
                lost = causes["routing"].tokens if "routing" in causes else 0
                row = tally.servable.setdefault(call.route, [0, 0, 0])
                row[0], row[1], row[2] = row[0] + 1, row[1] + found.servable, row[2] + lost
            elif opens_turn(call.request):
                reset = causes.get("harness reset")
                hit = reset is not None and reset.inferred
                row = tally.turns.setdefault(session.format, [0, 0])
                row[0], row[1] = row[0] + 1, row[1] + hit
                if hit and diagnosis.hidden_tokens:
                    share = min(found.read / diagnosis.hidden_tokens, 1.0)
                    tally.kept.setdefault(session.format, []).append(share)
    return tally


def _route_losses(tally: _Tally, min_calls: int = 1) -> dict[str, RouteLoss]:
    return {
        route: RouteLoss(share=lost / tokens, calls=n, servable_tokens=tokens, lost_tokens=lost)
        for route, (n, tokens, lost) in sorted(tally.servable.items())
        if tokens and n >= min_calls
    }


def fit_miss_model(sessions: Iterable[Session], data: Sequence[str] = ()) -> MissModel:
    """The miss model of ``sessions`` (those with recorded usage; others are passed over)."""
    tally = _tally(sessions)
    turn_reset = {
        fmt: TurnReset(
            probability=resets / n,
            kept_share=statistics.median(tally.kept.get(fmt, [0.0])),
            turns=n,
            resets=resets,
        )
        for fmt, (n, resets) in sorted(tally.turns.items())
        if n and resets
    }
    return MissModel(route_loss=_route_losses(tally), turn_reset=turn_reset, data=tuple(data))


MIN_OWN_CALLS = 3
"""Routed calls, or calls opening a user turn, a session needs for its own measurement."""

_OWN: list[tuple[weakref.ref[Session], MissModel, MissModel]] = []
"""The last session measured (weakly: it must not outlive its file in a fleet worker), with the
model it was measured against and the result: a replay prices one session under every strategy
in turn."""


def session_miss_model(session: Session, fitted: MissModel) -> MissModel:
    """``fitted`` with what ``session``'s own recorded usage shows in its place: the share of the
    servable reads its route lost, and how often its new user turns found the hidden level
    rewritten, wherever the session has at least :data:`MIN_OWN_CALLS` such calls (the hidden
    prompt's size is measured from a recording the same way). A session without recorded usage,
    or with too few such calls, keeps ``fitted``. Measured once per session object in a row."""
    for seen, against, result in _OWN:
        if seen() is session and against is fitted:
            return result
    tally = _tally([session])
    routes = {**fitted.route_loss, **_route_losses(tally, MIN_OWN_CALLS)}
    resets = dict(fitted.turn_reset)
    for fmt, (n, hits) in tally.turns.items():
        if n >= MIN_OWN_CALLS:
            kept = tally.kept.get(fmt)
            share = statistics.median(kept) if kept else 0.0
            if not kept and fmt in fitted.turn_reset:
                share = fitted.turn_reset[fmt].kept_share
            resets[fmt] = TurnReset(probability=hits / n, kept_share=share, turns=n, resets=hits)
    data = (*fitted.data, "this session's own recorded usage, where it has enough calls")
    result = MissModel(route_loss=routes, turn_reset=resets, data=data)
    _OWN[:] = [(weakref.ref(session), fitted, result)]
    return result


def load_miss_model(path: str | Path) -> MissModel:
    file = Path(path)
    try:
        return MissModel.model_validate(json.loads(file.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise ConfigError(f"{file}: not a valid miss model file: {exc}") from None


def save_miss_model(model: MissModel, path: str | Path) -> None:
    Path(path).write_text(model.model_dump_json(indent=2) + "\n", encoding="utf-8")


@cache
def shipped_miss_model() -> MissModel:
    """The model shipped in ``contextkit/accounting/data/miss_model.json`` (none: no misses)."""
    data = resources.files("contextkit.accounting").joinpath("data", "miss_model.json")
    if not data.is_file():
        return NO_MISSES
    try:
        return MissModel.model_validate_json(data.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise ConfigError(f"shipped miss_model.json is invalid: {exc}") from None


__all__ = [
    "NO_MISSES",
    "MissModel",
    "RouteLoss",
    "TurnReset",
    "apply_misses",
    "fit_miss_model",
    "load_miss_model",
    "save_miss_model",
    "session_miss_model",
    "shipped_miss_model",
]
