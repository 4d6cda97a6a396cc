"""Cost per ticket from recorded sessions, with what-ifs that re-simulate the cache.

Contract:

- :func:`collect_tickets` reads files and folders (recursively: ``.jsonl``, ``.json``, ``.traj``).
  One ticket is one session with all its subagents. A subagent file is priced into its parent's
  ticket (through the parent's ``subagents``, or attached by ``parent_session_id`` when the reader
  did not link it) and is a ticket of its own only when its parent was not read. Files a folder
  holds that no reader recognises are listed in the notes; a path named explicitly must be read.
- :func:`price_ticket` prices every call of every session of a ticket under a :class:`Change`: the
  requests are edited (:mod:`.estimate_requests`), the prompt cache is simulated on them
  (:class:`~contextkit.cache.CacheSimulator`, the same set-up as
  :func:`~contextkit.accounting.price_session`, whose figures the baseline reproduces), and the
  per-call arrays go to :mod:`.estimate_table`. Output tokens are the recorded ones where the file
  has usage (else counted from the responses).
- Files without the system prompt and tools (Claude Code) get the hidden prefix inferred from the
  first call's recorded usage, as :mod:`contextkit.accounting` does. Edits of the prefix (tools,
  system prompt) then grow that hidden prefix, keeping its warm share: the deployment's other
  tickets keep the new prefix cached as they kept the old one.
- ``Change.model`` re-tokenises with the model's calibrated counter and prices it with its prices
  and cache minimum; the hidden prefix and recorded outputs are scaled by the ratio of the two
  counters' counts of the session's own requests and responses.
- ``--strategy``: each session is replayed (:func:`contextkit.replay.replay`) under the strategy
  and under no compaction; the what-if ticket is the baseline plus the difference, so placement
  differences between replay and the baseline cancel. Replay keeps the recorded responses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

import numpy as np

from contextkit.accounting import (
    Ledger,
    apply_misses,
    default_cache,
    estimated_outputs_note,
    omitted_content,
    rescaled_gap,
    resized_prefix,
    session_counter,
    session_miss_model,
    shipped_miss_model,
    with_content_gaps,
    with_gaps,
    with_thinking,
)
from contextkit.cache import (
    TTL_1H_S,
    TTL_5M_S,
    AnthropicCache,
    CacheConfig,
    CacheSimulator,
    PrefixPart,
    automatic_cache,
)
from contextkit.errors import ConfigError, FormatError, UnknownFormatError
from contextkit.estimate._requests import Editor, padding_text
from contextkit.estimate._table import (
    CallArrays,
    FloatArray,
    TicketTable,
    rates,
    stack_rates,
    ticket_table,
)
from contextkit.formats import load
from contextkit.messages import Conversation, Tool
from contextkit.models import ModelInfo, resolve_model
from contextkit.pricing import ModelPrice, price_or_warn
from contextkit.replay import with_default_model
from contextkit.session import Call, Session, SkippedRecord, Usage
from contextkit.tokens import TokenCounter, counter_for

SESSION_SUFFIXES = frozenset({".jsonl", ".json", ".traj"})
CacheMode = str  # "off" | "5m" | "1h"


@dataclass(frozen=True)
class Ticket:
    """One unit of work: a session and every subagent session priced into it."""

    name: str
    sessions: tuple[Session, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tickets:
    tickets: tuple[Ticket, ...]
    skipped: tuple[SkippedRecord, ...] = ()
    notes: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    """Files found in a folder that could not be read (each also in ``notes``, with why)."""


def _files(paths: Iterable[str | Path]) -> list[tuple[Path, bool]]:
    """(file, named explicitly) for every path; folders searched recursively."""
    out: list[tuple[Path, bool]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():  # every entry with a session suffix: one that is not a regular file
            found = sorted(  # (a FIFO, a broken link) is named as not read, never passed over
                p for p in path.rglob("*") if p.suffix in SESSION_SUFFIXES and not p.is_dir()
            )
            out.extend((p, False) for p in found)
        else:
            out.append((path, True))
    return out


def collect_tickets(
    paths: Iterable[str | Path],
    *,
    lenient: bool = False,
    format: str | None = None,
    model: str | None = None,
) -> Tickets:
    """Read every session file under ``paths`` (with the ``format`` reader, else detected) and
    group sessions into tickets. ``model`` is the model of calls whose file names none (as
    ``--model`` in every command); named models stay."""

    mains: list[Session] = []
    subs: list[Session] = []
    skipped: list[SkippedRecord] = []
    notes: list[str] = []
    unread: list[str] = []
    for path, named in _files(paths):
        try:
            loaded = load(path, lenient=lenient, format=format)
        except UnknownFormatError as exc:
            if named:
                raise
            notes.append(f"not read (no reader recognises it): {exc.path}")
            unread.append(str(exc.path))
            continue
        except FormatError as exc:  # named or found: listed with why, and the rest read
            if exc.line is None:
                notes.append(f"not read ({exc.reason}): {exc.path}")
            else:
                notes.append(f"not read: {exc} (--lenient skips bad records)")
            unread.append(str(exc.path))
            continue
        skipped.extend(loaded.skipped)
        for read in loaded.sessions:
            session = with_default_model(read, model)
            (subs if session.parent_session_id else mains).append(session)
            for one in session.all_sessions():
                estimated = estimated_outputs_note(one.calls)
                if estimated and _recorded(one.calls) is not None:
                    notes.append(f"{one.path} ({one.session_id or 'session'}): {estimated}")
    return Tickets(_group(mains, subs, notes), tuple(skipped), tuple(notes), tuple(unread))


def _key(path: str) -> str:
    return str(Path(path).resolve())


def _group(mains: list[Session], subs: list[Session], notes: list[str]) -> tuple[Ticket, ...]:
    covered = {_key(s.path) for m in mains for s in m.all_sessions()[1:]}
    by_id = {m.session_id: i for i, m in enumerate(mains) if m.session_id}
    attached: dict[int, list[Session]] = {}
    orphans: list[Session] = []
    for sub in subs:
        if _key(sub.path) in covered:
            continue
        parent = by_id.get(sub.parent_session_id or "")
        if parent is None:
            orphans.append(sub)
        else:
            attached.setdefault(parent, []).append(sub)
    tickets = [
        Ticket(
            m.path, (*m.all_sessions(), *(x for s in attached.get(i, []) for x in s.all_sessions()))
        )
        for i, m in enumerate(mains)
    ]
    for sub in orphans:
        note = f"parent session {sub.parent_session_id} not read: priced as a ticket of its own"
        notes.append(f"{sub.path}: {note}")
        tickets.append(Ticket(sub.path, sub.all_sessions(), (note,)))
    return tuple(t for t in tickets if any(s.calls for s in t.sessions))


# --- what-ifs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One what-if (all empty: the baseline)."""

    label: str = "baseline"
    add_tools: tuple[Tool, ...] = ()
    system_tokens: int = 0
    cache: CacheMode | None = None
    model: str | None = None
    strategy: str | None = None


@dataclass
class _Setup:
    """What one session is priced with under one change."""

    counter: TokenCounter
    model: ModelInfo
    config: CacheConfig
    prefix: list[PrefixPart]
    warm_tokens: int
    editor: Editor
    output_ratio: float = 1.0
    requests: tuple[Conversation, ...] = ()
    """The recorded requests with what the harness sent after a compaction but the file omits
    (in ``counter`` tokens)."""
    resumes: dict[int, int] = field(default_factory=dict)
    """Call -> the hidden prefix's change in size on a resume, in ``counter`` tokens."""


def _recorded(calls: Sequence[Call]) -> list[Usage] | None:
    usages = [c.usage for c in calls]
    return None if not usages or None in usages else [u for u in usages if u is not None]


def _ttl(recorded: Sequence[Usage] | None) -> int:
    if not recorded:
        return TTL_5M_S
    one_hour = sum(u.cache_write_1h for u in recorded)
    return TTL_1H_S if one_hour > sum(u.cache_write_5m for u in recorded) else TTL_5M_S


def _hidden(
    session: Session, counter: TokenCounter, recorded: Sequence[Usage] | None
) -> tuple[int, int, int]:
    """(hidden prefix tokens, of them read by call 1, tokens call 1 read), as
    :func:`contextkit.accounting.price_session` infers them."""
    if session.prefix_known or not session.calls or recorded is None:
        return 0, 0, 0
    hidden = recorded[0].total_input - counter.count_conversation(session.calls[0].request)
    if hidden <= 0:
        return 0, 0, 0
    return hidden, min(recorded[0].cache_read, hidden), recorded[0].cache_read


def _ratio(session: Session, old: TokenCounter, new: TokenCounter) -> tuple[float, float]:
    """(input, output) tokens of ``new`` per token of ``old`` on the session's own content."""
    last = session.calls[-1].request
    a, b = old.count_conversation(last), new.count_conversation(last)
    responses = [c.response for c in session.calls if c.response is not None]
    ra = sum(old.count_message(m) for m in responses)
    rb = sum(new.count_message(m) for m in responses)
    return (b / a if a else 1.0), (rb / ra if ra else b / a if a else 1.0)


def _setup(session: Session, change: Change) -> _Setup:
    base_counter = session_counter(session)
    recorded = _recorded(session.calls)
    hidden, warm, read = _hidden(session, base_counter, recorded)
    config = default_cache(session, recorded)
    content = omitted_content(session, base_counter, config, recorded, hidden)
    gaps, steps = content.gaps, content.steps
    requests = content.recorded
    resumes = dict(content.resumes)
    model = resolve_model(change.model) if change.model else session.model_info
    counter = counter_for(model) if change.model else base_counter
    out_ratio = 1.0
    if change.model:
        in_ratio, out_ratio = _ratio(session, base_counter, counter)
        hidden, warm, read = (round(x * in_ratio) for x in (hidden, warm, read))
        scaled = [replace(g, tokens=round(g.tokens * in_ratio)) for g in gaps]
        thinking = {k: round(v * in_ratio) for k, v in content.thinking.items()}
        sent = with_thinking([c.request for c in session.calls], thinking, counter)
        requests = tuple(with_gaps(sent, scaled, counter))
        rescaled = [rescaled_gap(g, in_ratio, counter) for g in steps]
        requests = tuple(with_content_gaps(requests, rescaled))
        resumes = {i: round(d * in_ratio) for i, d in resumes.items()}
        config = _model_cache(config, model)
    pad, tools, extra = "", change.add_tools, change.system_tokens
    if hidden or not session.prefix_known:  # the prefix is not in the requests: grow it
        extra += sum(counter.count_tool(t) for t in tools)
        tools = ()
    else:
        pad, extra = padding_text(change.system_tokens, counter), 0
    if warm:  # steady state: other tickets keep the grown prefix cached as they kept the old one
        warm, read = warm + extra, read + extra
    config, ttl, retime = _cache_mode(config, change.cache, _ttl(recorded))
    parts = [
        PrefixPart(tokens=warm, ttl_s=ttl, label="hidden prefix (cached before)", level="tools"),
        PrefixPart(tokens=hidden + extra - warm, ttl_s=ttl, label="hidden prefix"),
    ]
    editor = Editor(model=change.model, add_tools=tools, system_prefix=pad, ttl_s=retime)
    prefix = [p for p in parts if p.tokens > 0]
    warm_tokens = read if prefix else 0
    return _Setup(counter, model, config, prefix, warm_tokens, editor, out_ratio, requests, resumes)


def _model_cache(config: CacheConfig, model: ModelInfo) -> CacheConfig:
    automatic = automatic_cache(model)
    if automatic is not None:
        return automatic
    if not isinstance(config, AnthropicCache):
        return AnthropicCache(min_tokens=model.cache_min_tokens(), placement="auto")
    return config.model_copy(update={"min_tokens": model.cache_min_tokens()})


def _cache_mode(
    config: CacheConfig, mode: str | None, ttl: int
) -> tuple[CacheConfig, int, int | None]:
    """(config, TTL of the hidden prefix, TTL to rewrite explicit breakpoints with or None)."""
    if mode is None:
        return config, ttl, None
    if mode == "off":
        if not isinstance(config, AnthropicCache):
            return config.model_copy(update={"min_tokens": 1 << 62}), ttl, None
        return config.model_copy(update={"placement": "off"}), ttl, None
    seconds = {"5m": TTL_5M_S, "1h": TTL_1H_S}.get(mode)
    if seconds is None:
        raise ConfigError(f"--cache must be off, 5m or 1h (got {mode!r})")
    if not isinstance(config, AnthropicCache):
        return config.model_copy(update={"retention_s": float(seconds)}), seconds, None
    placement = config.placement if config.placement != "off" else "claude-code"
    return config.model_copy(update={"ttl_s": seconds, "placement": placement}), seconds, seconds


# --- pricing -------------------------------------------------------------------------------


class _PriceBook:
    """Each call's model price, looked up once per model and day (None: unknown)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, date | None], ModelPrice | None] = {}

    def get(self, model: ModelInfo, call: Call) -> ModelPrice | None:
        day = call.timestamp.date() if call.timestamp else None
        key = (model.id, day)
        if key not in self._cache:
            self._cache[key] = price_or_warn(model, call.timestamp)
        return self._cache[key]


PRICES = _PriceBook()


def _head_tokens(request: Conversation, counter: TokenCounter, memo: dict[object, int]) -> int:
    """Tokens of the request's own prefix: framing, tools, system, hidden tool-use prompt."""
    key = (id(request.tools), id(request.system), request.model)
    if key not in memo:
        head = Conversation(
            model=request.model,
            system=request.system,
            tools=request.tools,
            tool_choice=(request.model_extra or {}).get("tool_choice"),
        )
        memo[key] = counter.count_conversation(head)
    return memo[key]


@dataclass(frozen=True)
class PricedSession:
    arrays: CallArrays
    rates: dict[str, FloatArray]
    recorded_usd: float | None


def price_session_arrays(session: Session, change: Change, ticket: int = 0) -> PricedSession:
    """Per-call arrays of one session under ``change`` (see the module docstring)."""
    s = _setup(session, change)
    sim = CacheSimulator(s.config, s.counter, s.prefix, warm_tokens=s.warm_tokens)
    memo: dict[object, int] = {}
    hidden = sum(p.tokens for p in s.prefix)
    requests = [s.editor(request) for request in s.requests]
    resized = {i: resized_prefix(s.prefix, d) for i, d in s.resumes.items()}
    simulated = []
    for index, (call, request) in enumerate(zip(session.calls, requests, strict=True)):
        if index in resized:
            sim.resize_prefix(resized[index])
        simulated.append(sim.step(request, call.timestamp, call.cache_reset))
    misses = shipped_miss_model()  # the misses no request shows, as price_session applies them
    if _recorded(session.calls) is not None:
        misses = session_miss_model(session, misses)
    if misses.applies_to(session):
        simulated = apply_misses(simulated, session, requests, hidden, misses)
    rows = []
    for call, request, cached in zip(session.calls, requests, simulated, strict=True):
        u = cached.usage
        prefix = min(hidden + _head_tokens(request, s.counter, memo), cached.context_tokens)
        rows.append(
            (
                cached.context_tokens,
                prefix,
                min(cached.new_tokens, cached.context_tokens - prefix),
                u.cache_read,
                u.cache_write_5m,
                u.cache_write_1h,
                _output(call, s),
            )
        )
    table = np.asarray(rows, dtype=np.float64).reshape(-1, 7).T
    arrays = CallArrays(np.full(len(rows), ticket, dtype=np.int64), *table)
    prices = [
        PRICES.get(s.model if change.model else resolve_model(call.model or session.model), call)
        for call in session.calls
    ]
    return PricedSession(arrays, _call_rates(prices, arrays), _recorded_usd(session, prices))


def _output(call: Call, s: _Setup) -> float:
    if call.usage is not None:
        return call.usage.output_tokens * s.output_ratio
    return float(s.counter.count_message(call.response)) if call.response else 0.0


def _call_rates(prices: Sequence[ModelPrice | None], arrays: CallArrays) -> dict[str, FloatArray]:
    total = arrays.context
    parts = [rates(p, total[i : i + 1]) for i, p in enumerate(prices)]
    return {
        k: np.concatenate([d[k] for d in parts]) if parts else np.zeros(0)
        for k in ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")
    }


def _recorded_usd(session: Session, prices: Sequence[ModelPrice | None]) -> float | None:
    total = 0.0
    for call, price in zip(session.calls, prices, strict=True):
        if call.usage is None or price is None:
            return None
        total += price.cost(call.usage)
    return total


def price_tickets(tickets: Sequence[Ticket], change: Change) -> tuple[TicketTable, FloatArray]:
    """(per-ticket table under ``change``, recorded USD per ticket: NaN where not recorded)."""
    priced = [
        (i, price_session_arrays(s, change, i)) for i, t in enumerate(tickets) for s in t.sessions
    ]
    arrays = CallArrays.concat([p.arrays for _, p in priced])
    table = ticket_table(arrays, stack_rates([p.rates for _, p in priced]), len(tickets))
    recorded = np.zeros(len(tickets))
    for i, p in priced:
        recorded[i] += math.nan if p.recorded_usd is None else p.recorded_usd
    return table, recorded


# --- strategies (replay) -------------------------------------------------------------------


def _ledger_arrays(
    session: Session, ledger: Ledger, requests: Sequence[Conversation], ticket: int
) -> PricedSession:
    """Per-call arrays from a ledger (a replay's), in the same layout as the baseline's."""
    counter = session_counter(session)
    memo: dict[object, int] = {}
    hidden = ledger.prefix_inferred_tokens or 0
    table = ledger.simulated
    context = ledger.context_tokens.astype(np.float64)
    prefix = np.minimum([hidden + _head_tokens(r, counter, memo) for r in requests], context)
    arrays = CallArrays(
        ticket=np.full(context.size, ticket, dtype=np.int64),
        context=context,
        prefix=prefix,
        new=np.minimum(ledger.new_tokens, context - prefix),
        read=table.cache_read.astype(float),
        write_5m=table.cache_write_5m.astype(float),
        write_1h=table.cache_write_1h.astype(float),
        output=table.output.astype(float),
    )
    prices = [PRICES.get(resolve_model(c.model or session.model), c) for c in session.calls]
    return PricedSession(arrays, _call_rates(prices, arrays), None)


def strategy_tables(tickets: Sequence[Ticket], spec: str) -> tuple[TicketTable, TicketTable]:
    """(replayed under ``spec``, replayed without compaction) per ticket (see module doc)."""
    from contextkit.replay import replay  # noqa: PLC0415  (replay pulls in every strategy)
    from contextkit.strategies import NoCompaction, strategy_from_spec  # noqa: PLC0415

    strategy = strategy_from_spec(spec)
    runs: dict[str, list[PricedSession]] = {"strategy": [], "none": []}
    for i, ticket in enumerate(tickets):
        for session in ticket.sessions:
            for key, chosen in (("strategy", strategy), ("none", NoCompaction())):
                result = replay(session, chosen, name=key)
                runs[key].append(_ledger_arrays(session, result.ledger, result.views, i))
    tables = [
        ticket_table(
            CallArrays.concat([p.arrays for p in runs[key]]),
            stack_rates([p.rates for p in runs[key]]),
            len(tickets),
        )
        for key in ("strategy", "none")
    ]
    return tables[0], tables[1]


__all__ = [
    "Change",
    "PricedSession",
    "Ticket",
    "Tickets",
    "collect_tickets",
    "price_session_arrays",
    "price_tickets",
    "strategy_tables",
]
