"""The hindsight oracle: a lower bound on what tool-result eviction can cost on a recording.

It is a BOUND, never a recommendation: it reads the whole recording first (it is given the tape
and every recorded response), which no live strategy can. ``compare`` shows every strategy's gap
to it; a small gap says a strategy leaves little on the table, not that the oracle could be run.

How it chooses (:func:`plan_oracle`):

- **When a result is needed.** A tool result is needed at a later call when that call's recorded
  response quotes it, by the measures of :mod:`._strict` and :mod:`._recall`: a copied span (a
  line of 30+ characters), an edit's ``old_string``, or a recall fact. Only the *latest* result
  holding the quoted text is kept for it (one copy in the view is all the measures ask for), and
  nothing is kept for text that other messages of the view (the user's, the assistant's own
  tool inputs, the system prompt) hold, since no eviction can remove those. A result becomes
  evictable at the call after the last call that needs it, and never before the call after the
  one that first showed it (the model has to read a result once).
- **When to edit.** Evicting at call ``k`` changes the message history inside the cached
  prefix: with contextkit's breakpoints (end of tools, end of system, the previous request's end,
  the last message) the whole message history is written again at call ``k``. Between edits each
  call reads the previous request from the cache and writes what it appended; a call after a
  pause longer than the cache TTL, a model switch or a harness's cache reset writes everything
  anyway (the edit is free then). Batching edits trades those rewrites against re-reading
  results that could have gone. The edit calls are chosen by dynamic programming over the
  calls of the session's main thread (O(n²)), on that cost model with the session's prices;
  calls over the window are penalised so the oracle stays inside it where it can. The replay
  then prices the oracle's views with the same cache simulator as every other strategy.

What it is not: it only evicts tool results (no summaries, no dropped messages, no cleared tool
inputs), results of side threads are left alone, and the cost model it optimises is the
simulator's in outline (no minimum cacheable length, no lookback limit), so the replayed oracle is
a bound on batched eviction within that model, not on every conceivable strategy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from contextkit.accounting import default_cache, session_counter
from contextkit.cache import AnthropicCache
from contextkit.messages import Block, Conversation, Message, ToolResultBlock, ToolUseBlock
from contextkit.pricing import ModelPrice, lookup_price
from contextkit.replay._recall import FactIndex, wanted_index
from contextkit.replay._strict import QuoteIndex, edit_strings, quote_text, span_lines
from contextkit.replay._walk import _Thread, _Walker
from contextkit.session import Call, Session
from contextkit.strategies import CallFacts, Compacted, Receipt, is_evicted, placeholder
from contextkit.tokens import MemoCounter, TokenCounter

ORACLE = "oracle"
BOUND_NOTE = (
    "oracle is a bound, not a recommendation: the cheapest by cost + recovery among a hindsight "
    "eviction plan (it read which results later calls quote before choosing, which no live "
    "strategy can) and every preset's own edits on this session, so no preset beats it"
)
OVERFLOW_PENALTY_USD = 1_000.0
"""What the planner charges for a call over the window: more than any saving, so it keeps
inside the window wherever eviction can."""


@dataclass(frozen=True)
class OraclePlan:
    """Which results the oracle evicts, and at which call (global call indices)."""

    evictions: Mapping[int, frozenset[str]]
    """Edit call -> the tool_use ids whose results are gone from that call on (in the call's
    own thread: a result that two threads hold, as when a harness re-sends a changed history,
    is planned in each apart)."""
    names: Mapping[str, str]
    """tool_use id -> the tool's name (for the placeholder)."""
    model_usd: float = 0.0
    """The messages' cache cost of the plan in the planner's model (not the replayed cost)."""
    model_none_usd: float = 0.0
    """The same with no edit (the full tape), in the same model."""

    @property
    def edit_calls(self) -> tuple[int, ...]:
        return tuple(sorted(self.evictions))


class Oracle:
    """The strategy that carries out an :class:`OraclePlan` (give it to :func:`replay`).

    At each of the plan's edit calls it replaces every result due by then with the eviction
    placeholder (the same as ``EvictToolResults``'); at other calls the view comes back as it is."""

    def __init__(self, plan: OraclePlan) -> None:
        self.plan = plan

    def __repr__(self) -> str:
        return f"Oracle(edit_calls={len(self.plan.evictions)})"

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        due = self.plan.evictions.get(facts.call_index)
        if not due:
            return Compacted(view=view)
        names = self.plan.names
        messages = list(view.messages)
        receipts: list[Receipt] = []
        for i, message in enumerate(messages):
            if isinstance(message.content, str) or message.role != "user":
                continue
            blocks = list(message.content)
            for j, block in enumerate(blocks):
                if not isinstance(block, ToolResultBlock) or is_evicted(block):
                    continue
                if block.tool_use_id not in due:
                    continue
                text = placeholder(names.get(block.tool_use_id, "tool"), block.tool_use_id, block)
                new = block.model_copy(update={"content": text})
                freed = facts.counter.count_block(block) - facts.counter.count_block(new)
                if freed <= 0:
                    continue
                blocks[j] = new
                receipts.append(
                    Receipt(
                        strategy=ORACLE,
                        action="evicted",
                        tokens_freed=freed,
                        message_index=i,
                        tool_use_id=block.tool_use_id,
                        detail="no later call quotes it",
                    )
                )
            if any(a is not b for a, b in zip(blocks, message.content, strict=True)):
                messages[i] = message.model_copy(update={"content": tuple(blocks)})
        if not receipts:
            return Compacted(view=view)
        return Compacted(
            view=view.model_copy(update={"messages": tuple(messages)}), receipts=tuple(receipts)
        )


# --- planning ----------------------------------------------------------------------------------


@dataclass
class _Result:
    position: int
    """Index of the main-thread call whose request first held it."""
    saving: int
    last_need: int = -1


@dataclass
class _Track:
    """What the planner knows of one thread's tape."""

    tokens: int = 0
    fact_holder: dict[str, str] = field(default_factory=dict)
    line_holder: dict[str, str] = field(default_factory=dict)
    texts: list[tuple[str, str]] = field(default_factory=list)
    """(tool_use id, quote text) of each result, in order."""
    other_facts: set[str] = field(default_factory=set)
    other_lines: set[str] = field(default_factory=set)
    other_texts: list[str] = field(default_factory=list)


@dataclass
class _Planner:
    session: Session
    counter: TokenCounter
    facts: FactIndex
    quotes: QuoteIndex
    results: dict[str, _Result] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)

    def add(self, track: _Track, message: Message, position: int) -> None:
        track.tokens += self.counter.count_message(message)
        content = message.content
        blocks: Sequence[Block] = () if isinstance(content, str) else content
        results = [b for b in blocks if isinstance(b, ToolResultBlock)]
        for block in blocks:
            if isinstance(block, ToolUseBlock):
                self.names[block.id] = block.name
        others = message if not results else _without_results(message)
        if others is not None:
            track.other_facts |= self.facts.of(others)
            track.other_lines |= self.quotes.lines(others)
            track.other_texts.append(self.quotes.text(others))
        for result in results:
            self._add_result(track, result, position)

    def _add_result(self, track: _Track, result: ToolResultBlock, position: int) -> None:
        rid = result.tool_use_id
        if rid in self.results or is_evicted(result):
            return
        wrapped = Message(role="user", content=(result,))
        new = result.model_copy(
            update={"content": placeholder(self.names.get(rid, "tool"), rid, result)}
        )
        saving = self.counter.count_block(result) - self.counter.count_block(new)
        self.results[rid] = _Result(position=position, saving=max(saving, 0))
        for fact in self.facts.of(wrapped):
            track.fact_holder[fact] = rid
        for line in self.quotes.lines(wrapped):
            track.line_holder[line] = rid
        track.texts.append((rid, self.quotes.text(wrapped)))

    def need(self, track: _Track, response: Message, tape: Conversation, position: int) -> None:
        """Mark, for each thing ``response`` quotes, the latest result that held it."""
        system = self.facts.system_text(tape)
        system_lines, system_quote = self.quotes.system(tape)
        needed: set[str] = set()
        for fact in self.facts.of(response):
            if fact not in track.other_facts and fact not in system:
                needed.add(track.fact_holder.get(fact, ""))
        for line in span_lines(quote_text(response)):
            if line not in track.other_lines and line not in system_lines:
                needed.add(track.line_holder.get(line, ""))
        for old in edit_strings(response):
            if old in system_quote or any(old in t for t in track.other_texts):
                continue
            needed.add(next((rid for rid, t in reversed(track.texts) if old in t), ""))
        for rid in needed:
            found = self.results.get(rid)
            if found is not None:
                found.last_need = max(found.last_need, position)


def _without_results(message: Message) -> Message | None:
    assert not isinstance(message.content, str)
    rest = tuple(b for b in message.content if not isinstance(b, ToolResultBlock))
    return message.model_copy(update={"content": rest}) if rest else None


@dataclass(frozen=True)
class _Costs:
    write: float
    read: float
    """USD per token of the messages written to / read from the cache."""


def _costs(session: Session, price: ModelPrice | None, ttl_s: int | None) -> _Costs:
    model = session.model_info
    when = session.calls[0].timestamp if session.calls else None
    price = price or lookup_price(model, when)
    if price is None:  # the usual Anthropic ratios: only the ratio matters for the choice
        return _Costs(write=1.25e-6, read=0.1e-6)
    if model.is_openai or model.is_gemini:  # automatic caching: no write premium
        return _Costs(write=price.input / 1e6, read=price.cache_read / 1e6)
    write = price.cache_write_1h if ttl_s is not None and ttl_s > 300 else price.cache_write_5m
    return _Costs(write=write / 1e6, read=price.cache_read / 1e6)


def _cold(calls: Sequence[Call], ttl_s: float) -> np.ndarray:
    """Per main-thread call: whether its cache is cold anyway (first call, a pause over the TTL,
    another model, a cache reset the reader saw)."""
    cold = np.zeros(len(calls), dtype=bool)
    last_time: datetime | None = None
    last_model: str | None = None
    for j, call in enumerate(calls):
        now, model = call.timestamp, call.model or call.request.model
        gap = _gap_s(last_time, now)
        cold[j] = j == 0 or gap > ttl_s or model != last_model or call.cache_reset is not None
        last_time, last_model = now or last_time, model
    return cold


def _gap_s(before: datetime | None, now: datetime | None) -> float:
    """Seconds between two calls (0 when either time is unknown or they cannot be compared: a
    file that mixes times with and without a zone)."""
    if before is None or now is None:
        return 0.0
    try:
        return (now - before).total_seconds()
    except TypeError:
        return 0.0


def plan_oracle(
    session: Session,
    *,
    counter: TokenCounter | None = None,
    price: ModelPrice | None = None,
    window: int | None = None,
) -> OraclePlan:
    """The oracle's plan for ``session`` (see the module docstring)."""
    model = session.model_info
    counter = counter or session_counter(session)
    if isinstance(counter, MemoCounter):
        counter.prime((c.request for c in session.calls), (c.response for c in session.calls))
    window = window or model.context_window or 200_000
    responses = [c.response for c in session.calls]
    facts, quotes = wanted_index(responses), QuoteIndex.of_responses(responses)
    walker = _Walker(session)
    threads: dict[int, list[tuple[int, _Thread, tuple[Message, ...]]]] = {}
    for i, call in enumerate(session.calls):
        thread, new = walker.step(i, call)
        threads.setdefault(id(thread), []).append((i, thread, new))
    cache = default_cache(session, [c.usage for c in session.calls if c.usage is not None] or None)
    ttl = cache.ttl_s if isinstance(cache, AnthropicCache) else 300
    costs = _costs(session, price, ttl)
    names: dict[str, str] = {}
    evictions: dict[int, frozenset[str]] = {}
    planned = plain = 0.0
    for steps in threads.values():
        planner = _Planner(session, counter, facts, quotes, names=names)
        chosen, cost, none = _plan_thread(planner, steps, costs, ttl, window)
        evictions.update(chosen)
        planned, plain = planned + cost, plain + none
    return OraclePlan(
        evictions=evictions,
        names=names,
        model_usd=planned,
        model_none_usd=plain,
    )


def _plan_thread(
    planner: _Planner,
    steps: Sequence[tuple[int, _Thread, tuple[Message, ...]]],
    costs: _Costs,
    ttl: float,
    window: int,
) -> tuple[dict[int, frozenset[str]], float, float]:
    """The evictions (call -> the tool_use ids due by then) of one thread, and its modelled
    cost with and without them (each thread's messages are cached apart from the others')."""
    session, track = planner.session, _Track()
    tokens: list[int] = []
    for position, (i, thread, new) in enumerate(steps):
        for message in new:
            planner.add(track, message, position)
        tokens.append(track.tokens)
        response = session.calls[i].response
        if response is not None:
            planner.need(track, response, thread.tape, position)
    calls = [session.calls[i] for i, _, _ in steps]
    head = _head_tokens(calls[0], planner.counter, tokens[0])
    edits, planned, plain = _choose(
        np.asarray(tokens, dtype=np.float64),
        _cold(calls, ttl),
        planner.results,
        costs,
        limit=window - head,
    )
    due: dict[int, set[str]] = {}
    for rid, found in planner.results.items():
        ready = max(found.position, found.last_need) + 1
        at = next((e for e in edits if e >= ready), None)
        if at is not None and found.saving > 0:
            due.setdefault(at, set()).add(rid)
    evictions: dict[int, frozenset[str]] = {}
    so_far: frozenset[str] = frozenset()
    for at in sorted(due):  # each edit evicts what is due by then (the thread's own results)
        so_far = so_far | due[at]
        evictions[steps[at][0]] = so_far
    return evictions, planned, plain


def _head_tokens(call: Call, counter: TokenCounter, messages: int) -> int:
    """System, tools and any prefix the file omits (inferred from the first call's usage)."""
    whole = counter.count_conversation(call.request)
    if call.usage is not None:
        whole = max(whole, call.usage.total_input)
    return max(whole - messages, 0)


def _choose(
    tokens: np.ndarray,
    cold: np.ndarray,
    results: Mapping[str, _Result],
    costs: _Costs,
    limit: float,
) -> tuple[list[int], float, float]:
    """The edit calls (main-thread positions) of least modelled cost, that cost, and the cost
    with no edit. ``tokens``: the tape's message tokens at each call (non-decreasing)."""
    n = len(tokens)
    w, r = costs.write, costs.read
    freed = np.zeros(n + 1)
    for found in results.values():
        ready = max(found.position, found.last_need) + 1
        if ready < n and found.saving > 0:
            freed[ready] += found.saving
    evictable = np.cumsum(freed)[:n]  # F[j]: what an edit at j can have evicted
    before = np.concatenate(([0.0], tokens[:-1]))
    per_call = np.where(cold, w * tokens, r * before + w * (tokens - before))
    pa = np.concatenate(([0.0], np.cumsum(per_call)))
    pw = np.concatenate(([0], np.cumsum(~cold)))
    pc = np.concatenate(([0], np.cumsum(cold)))
    # State e in -1..n-1 (stored at e + 1): the last edit; F of "no edit yet" is 0.
    f_state = np.concatenate(([0.0], evictable))
    start = np.arange(n + 1)  # e + 1: the first call after the edit
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    back = np.full(n + 1, -1, dtype=np.int64)

    def segment(stop: int) -> np.ndarray:
        """Cost of calls e+1 .. stop-1 after an edit at e, for every e < stop."""
        lo = start[: stop + 1]
        f = f_state[: len(lo)]
        cost = (pa[stop] - pa[lo]) - f * (r * (pw[stop] - pw[lo]) + w * (pc[stop] - pc[lo]))
        first_over = np.searchsorted(tokens, limit + f, side="right")
        over = np.maximum(stop - np.maximum(lo, first_over), 0)
        return np.asarray(cost + OVERFLOW_PENALTY_USD * over)

    for edit in range(n):
        total = best[: edit + 1] + segment(edit)
        e = int(np.argmin(total))
        size = tokens[edit] - evictable[edit]
        own = w * size + (OVERFLOW_PENALTY_USD if size > limit else 0.0)
        best[edit + 1] = total[e] + own
        back[edit + 1] = e
    final = best + segment(n)
    state = int(np.argmin(final))
    planned = float(final[state])
    plain = float(final[0])
    edits: list[int] = []
    while state > 0:
        edits.append(state - 1)
        state = int(back[state])
    return sorted(edits), planned, plain


__all__ = ["BOUND_NOTE", "ORACLE", "Oracle", "OraclePlan", "plan_oracle"]
