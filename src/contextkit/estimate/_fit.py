"""Fit a workload profile to recorded sessions: the moments of what the recordings show.

Contract: :func:`fit_profile` measures, on each ticket's main session, the quantities a
:class:`~contextkit.estimate.Profile` is made of and returns a profile whose distributions
have the same first two moments:

- counts (user turns per ticket, calls per turn) as the empirical distribution (``choice`` of the
  observed values), which keeps every moment, including the E[N^2] that the quadratic growth of
  input depends on;
- sizes (user message, tool result, output tokens) and gaps (seconds between calls within a turn,
  between turns) as a lognormal with the observed mean and standard deviation;
- the fixed prefix: the hidden prefix inferred from recorded usage (Claude Code) or the counted
  system prompt and tools, as one lump in ``system_tokens`` (``tools = 0``: the hidden prefix
  already holds tool schemas and the tool-use prompt);
- the model (the one of most calls), the cache TTL the recorded writes used, and whether tickets
  started with the prefix already cached.

A turn is the calls up to a stop reason other than ``tool_use`` (:meth:`Session.user_turns`). The
new input of a call is the trailing user content of its request (after the last assistant
message): a user message at a turn's first call, tool results after. Subagents and the harness's
own compaction are not in the profile model: the notes say how much of the recorded cost they are.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from contextkit.accounting import session_counter
from contextkit.errors import ConfigError
from contextkit.estimate._core import Ticket
from contextkit.estimate._dist import Choice, Fixed, LogNormal
from contextkit.estimate._profile import Profile
from contextkit.messages import Conversation, Message
from contextkit.session import Session, Usage
from contextkit.tokens import TokenCounter


@dataclass
class _Observed:
    turns: list[float] = field(default_factory=list)
    calls_per_turn: list[float] = field(default_factory=list)
    user: list[float] = field(default_factory=list)
    result: list[float] = field(default_factory=list)
    output: list[float] = field(default_factory=list)
    gap_call: list[float] = field(default_factory=list)
    gap_turn: list[float] = field(default_factory=list)
    prefix: list[float] = field(default_factory=list)
    warm: list[bool] = field(default_factory=list)
    models: Counter[str] = field(default_factory=Counter)
    write_5m: int = 0
    write_1h: int = 0
    read: int = 0


def _trailing_tokens(request: Conversation, counter: TokenCounter) -> int:
    """Tokens of the user content after the request's last assistant message."""
    total = 0
    for message in reversed(request.messages):
        if message.role == "assistant":
            break
        total += counter.count_message(message)
    return total


def _prefix(session: Session, counter: TokenCounter) -> tuple[float, bool]:
    """(fixed prefix tokens, whether call 1 found it cached)."""
    first = session.calls[0]
    head = Conversation(
        model=first.request.model, system=first.request.system, tools=first.request.tools
    )
    known = counter.count_conversation(head)
    usage = first.usage
    if session.prefix_known or usage is None:
        return float(known), bool(usage and usage.cache_read >= known > 0)
    hidden = max(usage.total_input - counter.count_conversation(first.request), 0)
    return float(hidden + known), usage.cache_read >= hidden / 2 > 0


def _observe(session: Session, seen: _Observed) -> None:
    counter = session_counter(session)
    turns = session.user_turns()
    seen.turns.append(float(len(turns)))
    prefix, warm = _prefix(session, counter)
    seen.prefix.append(prefix)
    seen.warm.append(warm)
    previous = None
    for turn in turns:
        seen.calls_per_turn.append(float(len(turn)))
        for j, index in enumerate(turn):
            call = session.calls[index]
            size = float(_trailing_tokens(call.request, counter))
            (seen.user if j == 0 else seen.result).append(size)
            if previous is not None and call.timestamp and previous.timestamp:
                gap = (call.timestamp - previous.timestamp).total_seconds()
                (seen.gap_turn if j == 0 else seen.gap_call).append(max(gap, 0.0))
            previous = call
            _usage(call.usage, call.model or session.model, seen, counter, call.response)


def _usage(
    usage: Usage | None,
    model: str | None,
    seen: _Observed,
    counter: TokenCounter,
    response: Message | None,
) -> None:
    if model:
        seen.models[model] += 1
    if usage is not None:
        seen.output.append(float(usage.output_tokens))
        seen.write_5m += usage.cache_write_5m
        seen.write_1h += usage.cache_write_1h
        seen.read += usage.cache_read
    elif response is not None:
        seen.output.append(float(counter.count_message(response)))


def _size(values: Sequence[float], default: float) -> Fixed | LogNormal:
    positive = [v for v in values if v >= 0]
    if not positive:
        return Fixed(value=default)
    mean = statistics.fmean(positive)
    sd = statistics.pstdev(positive) if len(positive) > 1 else 0.0
    if mean <= 0:
        return Fixed(value=0)
    return LogNormal(mean=mean, sd=sd) if sd > 0 else Fixed(value=mean)


def _count(values: Sequence[float]) -> Choice | Fixed:
    if len(set(values)) == 1:
        return Fixed(value=values[0])
    counts = Counter(values)
    keys = sorted(counts)
    return Choice(values=tuple(keys), weights=tuple(float(counts[k]) for k in keys))


def ticket_model(ticket: Ticket) -> str | None:
    """The model of most calls of the ticket's main session (None: no call names one)."""
    main = ticket.sessions[0]
    models = Counter(c.model or c.request.model or main.model for c in main.calls)
    models.pop(None, None)
    models.pop("", None)
    return models.most_common(1)[0][0] if models else None


def fit_profiles(tickets: Sequence[Ticket]) -> dict[str, Profile]:
    """One profile per model: the tickets grouped by :func:`ticket_model` and each group fitted
    on its own (a folder mixing Haiku and Opus tickets is two workloads, not one priced as
    Opus). Tickets whose calls name no model are an error (give the model with ``--model``)."""
    groups: dict[str, list[Ticket]] = {}
    for ticket in tickets:
        if not any(s.calls for s in ticket.sessions[:1]):
            continue
        model = ticket_model(ticket)
        if model is None:
            raise ConfigError(f"cannot fit a profile: {ticket.name} names no model (pass --model)")
        groups.setdefault(model, []).append(ticket)
    if not groups:
        raise ConfigError("cannot fit a profile: no session with model calls was read")
    return {model: fit_profile(group, model=model) for model, group in groups.items()}


def fit_profile(tickets: Sequence[Ticket], *, model: str | None = None) -> Profile:
    """A profile whose quantities have the moments of the tickets' main sessions."""
    seen = _Observed()
    for ticket in tickets:
        main = ticket.sessions[0]
        if main.calls:
            _observe(main, seen)
    if not seen.turns:
        raise ConfigError("cannot fit a profile: no session with model calls was read")
    chosen = model or (seen.models.most_common(1)[0][0] if seen.models else None)
    if chosen is None:
        raise ConfigError("cannot fit a profile: no model named in the sessions (pass --model)")
    cache = (
        "off"
        if not (seen.write_5m + seen.write_1h + seen.read)
        else ("1h" if seen.write_1h > seen.write_5m else "5m")
    )
    return Profile(
        model=chosen,
        cache=cache,  # type: ignore[arg-type]
        prefix_warm=sum(seen.warm) * 2 >= len(seen.warm),
        system_tokens=statistics.fmean(seen.prefix),
        user_turns=_count(seen.turns),
        calls_per_turn=_count(seen.calls_per_turn),
        user_message_tokens=_size(seen.user, 100),
        tool_result_tokens=_size(seen.result, 0),
        output_tokens=_size(seen.output, 100),
        seconds_between_calls=_size(seen.gap_call, 5),
        seconds_between_turns=_size(seen.gap_turn, 60),
        notes=_notes(tickets, seen, chosen),
    )


def _notes(tickets: Sequence[Ticket], seen: _Observed, model: str) -> tuple[str, ...]:
    models = ", ".join(f"{m} x{n}" for m, n in seen.models.most_common())
    subs = sum(len(t.sessions) - 1 for t in tickets)
    return (
        f"fitted by contextkit cost --fit on {len(seen.turns)} tickets ({models} calls)",
        f"model: {model} (the model of most calls); the prefix is one lump in system_tokens",
        f"not modelled: {subs} subagent sessions and the harness's own compaction",
    )


__all__ = ["fit_profile"]
