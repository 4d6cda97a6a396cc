"""Replay a recorded session under a strategy: what it would have sent, cost, kept and lost.

Contract:

- The recorded calls are walked in order. At each call the view is the previous view plus what the
  recording appended since; the strategy then shapes it (as :class:`ContextEngine` would live).
  What was appended is the part of the recorded request beyond the previous request and its
  response. A harness's own compaction artefacts (the summary Claude Code writes after a
  ``compact_boundary``) are recognised and not fed back as new content. Requests that continue no
  earlier request (side calls of a harness: titles, quota checks) are threads of their own.
- Each view gets cache breakpoints as contextkit places them (``engine.place_breakpoints``) and is
  priced with the cache simulator at the recorded timestamps (TTLs follow the recording). The
  simulator places them itself (placement ``engine``: same positions, no marked copies to build
  and count); the marked requests are built only when asked for (``Replay.requests``). The
  recorded responses are kept: replay measures cost and what the view kept, NOT how the model would
  have acted on a different view. Reports state this.
- ``as-recorded`` is the recording itself: the recorded requests, and the recorded usage where the
  file has it (the real bill); ``none`` is the full tape, with every call that would overflow the
  model's window flagged.
- Recall (:mod:`contextkit.replay`): the facts each recorded response uses that the tape held and
  the view no longer did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from contextkit._gc import no_cycle_collection
from contextkit.accounting import (
    Ledger,
    call_prices,
    default_cache,
    price_session,
    session_counter,
)
from contextkit.cache import AnthropicCache
from contextkit.engine import RETRIEVE_TOOL
from contextkit.messages import Conversation, Message
from contextkit.pricing import ModelPrice
from contextkit.replay._marks import place_marks
from contextkit.replay._probes import CATEGORIES, ProbeScore, probe_edits
from contextkit.replay._rarity import FactWeights, default_weights
from contextkit.replay._recall import (
    CallRecall,
    FactIndex,
    RecallReport,
    all_kept,
    lost_facts,
    needed_facts,
    summarise,
    wanted_index,
)
from contextkit.replay._recovery import Recovery, needs, priced, retrieval_overhead
from contextkit.replay._refused import refused_calls
from contextkit.replay._strict import (
    NOTHING,
    CallQuality,
    QualityReport,
    QuoteIndex,
    score_quality,
    summarise_quality,
)
from contextkit.replay._summariser import SummariserBill, SummariserCall
from contextkit.replay._walk import _Thread, _Walker, _with_head
from contextkit.session import Session
from contextkit.strategies import CallFacts, Receipt, Strategy, head_tokens
from contextkit.tokens import MemoCounter, TokenCounter

ASSUMPTION = (
    "replay keeps the recorded responses: it measures what each view would have cost and kept, "
    "not how the model would have acted on a different view"
)
AS_RECORDED = "as-recorded"


class ReplayRow(BaseModel):
    """One call of a replay."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    call: int
    context_tokens: int
    input_tokens: int
    cache_write: int
    cache_read: int
    output_tokens: int
    cost_usd: float | None
    """The request's cost plus ``summariser_usd`` (None when a price is unknown)."""
    summariser_usd: float | None = 0.0
    """What the strategy's own summary calls at this call cost (:mod:`._summariser`)."""
    compacted: bool
    tokens_freed: int
    overflow: bool
    needed: int
    kept: int


@dataclass(frozen=True)
class Replay:
    """A session replayed under one strategy."""

    session: Session
    strategy: str
    receipts: tuple[tuple[Receipt, ...], ...]
    ledger: Ledger
    recall: RecallReport
    rows: tuple[ReplayRow, ...]
    window: int
    notes: tuple[str, ...] = ()
    views: tuple[Conversation, ...] = ()
    """Each view the strategy returned, before breakpoints were placed."""
    tapes: tuple[Conversation, ...] = ()
    """The full history (tape) of each call's thread, before the strategy shaped it."""
    mark_ttl_s: int | None = None
    """TTL of the breakpoints placed on the views (None: the provider has none)."""
    sent: tuple[Conversation, ...] | None = None
    """The requests as sent, when known as such (``as-recorded``); else built from the views."""
    harness_usd: float = 0.0
    """What the harness's own compaction calls cost (``as-recorded``: part of the recording's
    cost, in :meth:`summary`'s ``cost_usd``)."""
    harness_simulated_usd: float = 0.0
    """The same calls priced by the simulator (in :meth:`summary`'s ``simulated_cost_usd``)."""
    quality: QualityReport | None = None
    """The strict measures (copied spans, edit feasibility); None for ``as-recorded`` (its views
    are the requests the responses were made from: nothing to measure)."""
    probes: ProbeScore | None = None
    """Probes of what the agent must still know, asked where the strategy edited the view
    (:mod:`._probes`); for ``as-recorded``, of the harness's own compactions (None where it made
    none)."""
    refused: tuple[int, ...] = ()
    """Calls whose view the provider would refuse (:func:`refused_calls`); such a strategy is
    never ranked best, whatever it costs."""
    retrieval: tuple[Recovery, ...] | None = None
    """The same recoveries priced as the engine's retrieve tool gets them back (one
    ``contextkit_retrieve`` round trip each); None for ``as-recorded``."""
    retrieval_overhead_usd: float | None = 0.0
    """What carrying the retrieve tool's definition in every request costs."""
    recoveries: tuple[Recovery, ...] = ()
    """What later calls needed that the view no longer held, and what getting each back costs
    (:mod:`._recovery`); empty for ``as-recorded`` (its views are what the responses saw)."""
    summariser: tuple[SummariserCall, ...] = ()
    """The strategy's own summary calls (billed, or modelled for an offline summariser), part of
    :meth:`summary`'s costs and of the rows' ``cost_usd``, shown apart as ``summariser_usd``."""

    @property
    def summariser_usd(self) -> float | None:
        """USD of the strategy's summary calls (None when a price is unknown)."""
        costs = [c.cost_usd for c in self.summariser]
        return None if None in costs else float(sum(c for c in costs if c is not None))

    @cached_property
    def requests(self) -> tuple[Conversation, ...]:
        """Each request as the strategy would have sent it (with breakpoints), built on first use
        (pricing did not need them: the simulator placed the same breakpoints itself)."""
        if self.sent is not None:
            return self.sent
        return tuple(place_marks(self.views, self.mark_ttl_s))

    @property
    def cost_usd(self) -> float | None:
        """The simulated cost of the requests and of the strategy's summary calls."""
        cost, extra = self.ledger.simulated.total_cost, self.summariser_usd
        return None if cost is None or extra is None else cost + extra

    @property
    def recorded_cost_usd(self) -> float | None:
        return self.ledger.recorded.total_cost if self.ledger.recorded is not None else None

    def summary(self) -> dict[str, Any]:
        table = self.ledger.simulated
        real = self.strategy == AS_RECORDED and self.ledger.recorded is not None
        source = self.ledger.recorded if real and self.ledger.recorded is not None else table
        totals = source.totals()
        cost = source.total_cost
        if cost is not None and self.harness_usd:
            cost += self.harness_usd
        simulated = table.total_cost
        if simulated is not None and self.harness_simulated_usd:
            simulated += self.harness_simulated_usd
        summariser = self.summariser_usd
        if self.summariser:  # the strategy's own summary calls (none for as-recorded)
            cost = None if cost is None or summariser is None else cost + summariser
            simulated = None if simulated is None or summariser is None else simulated + summariser
        return {
            "input_tokens": int(totals["input"] or 0),
            "cache_read": int(totals["cache_read"] or 0),
            "cache_write": int((totals["cache_write_5m"] or 0) + (totals["cache_write_1h"] or 0)),
            "output": int(totals["output"] or 0),
            "cost_usd": cost,
            "simulated_cost_usd": simulated,
            "harness_compaction_usd": self.harness_usd,
            "summariser_usd": summariser,
            "summariser_calls": len(self.summariser),
            "peak_context_tokens": self._peak_context(real),
            "compactions": sum(1 for r in self.rows if r.compacted),
            "overflow_calls": sum(1 for r in self.rows if r.overflow),
            "refused_calls": len(self.refused),
            "recall": self.recall.recall,
            **self._recovery(cost),
            **self._probes(),
            **self._strict(),
        }

    def _probes(self) -> dict[str, Any]:
        shares = self.probes.shares() if self.probes is not None else {}
        asked = sum(self.probes.asked.values()) if self.probes is not None else 0
        return {"probes": asked, **{f"probe_{c}": shares.get(c) for c in CATEGORIES}}

    def _recovery(self, cost: float | None) -> dict[str, Any]:
        """Recovery cost (:mod:`._recovery`): its sum over the recoverable items, the unrecoverable
        ones counted apart, and cost + recovery (None where a price is unknown, or where something
        was lost for good: no price gets it back)."""
        costs = [r.cost_usd for r in self.recoveries if r.recoverable]
        recovery = None if None in costs else float(sum(c for c in costs if c is not None))
        lost = any(not r.recoverable for r in self.recoveries)
        # Something lost for good has no price: cost + recovery is not a number then.
        total = None if cost is None or recovery is None or lost else cost + recovery
        return {
            **self._retrieval(cost),
            "recovery_usd": recovery,
            "recoveries": len(self.recoveries),
            "unrecoverable": sum(1 for r in self.recoveries if not r.recoverable),
            "subagent_reruns": sum(
                1 for r in self.recoveries if r.recoverable and r.kind == "subagent"
            ),
            "cost_plus_recovery_usd": total,
        }

    def _retrieval(self, cost: float | None) -> dict[str, Any]:
        """The same with the retrieve tool (decision 11): recoveries as round trips, plus the
        tool's definition in every request; None for ``as-recorded``."""
        if self.retrieval is None:
            return {
                "recovery_with_retrieval_usd": None,
                "cost_plus_recovery_with_retrieval_usd": None,
            }
        costs = [r.cost_usd for r in self.retrieval if r.recoverable]
        recovery = None if None in costs else float(sum(c for c in costs if c is not None))
        lost = any(not r.recoverable for r in self.retrieval)
        carried = self.retrieval_overhead_usd
        parts = (cost, recovery, carried)
        total = None if lost or None in parts else sum(p for p in parts if p is not None)
        return {
            "recovery_with_retrieval_usd": recovery,
            "cost_plus_recovery_with_retrieval_usd": total,
        }

    def _strict(self) -> dict[str, Any]:
        q = self.quality
        if q is None:
            none = ("weighted_recall", "span_recall", "edit_feasibility")
            counts = ("spans", "edits", "edits_infeasible", "edits_unseen")
            return {**dict.fromkeys(none), **dict.fromkeys(counts, 0)}
        return {
            "weighted_recall": self.recall.weighted_recall,
            "span_recall": q.span_recall,
            "spans": q.spans_needed,
            "edit_feasibility": q.edit_feasibility,
            "edits": q.edits_needed,
            "edits_infeasible": q.edits_infeasible,
            "edits_unseen": q.edits_unseen,
        }

    def _peak_context(self, recorded: bool) -> int:
        """The largest request: as billed where the recording says, else as simulated."""
        if recorded and self.ledger.recorded is not None:
            billed = self.ledger.recorded.total_input
            return int(billed.max()) if billed.size else 0
        return int(max((r.context_tokens for r in self.rows), default=0))

    def to_json(self, rows: bool = True) -> dict[str, Any]:
        return {
            "path": self.session.path,
            "strategy": self.strategy,
            "model": self.session.model,
            "calls": len(self.session.calls),
            "summary": self.summary(),
            "recorded_cost_usd": self.recorded_cost_usd,
            "lost_examples": [{"call": c, "fact": f} for c, f in self.recall.examples],
            "lost_text_examples": [
                {"call": c, "text": t} for c, t in (self.quality.examples if self.quality else ())
            ],
            "recoveries": [r.to_json() for r in self.recoveries],
            "probe_failures": [
                {"call": c, "category": k, "answer": a}
                for c, k, a in (self.probes.failed if self.probes is not None else ())
            ],
            "notes": [ASSUMPTION, *self.notes, *self.ledger.notes],
            "rows": [r.model_dump() for r in self.rows] if rows else [],
        }


# --- replay ------------------------------------------------------------------------------------


@no_cycle_collection
def replay(
    session: Session,
    strategy: Strategy,
    *,
    name: str = "strategy",
    counter: TokenCounter | None = None,
    price: ModelPrice | None = None,
    budget_tokens: int | None = None,
    window: int | None = None,
    weights: FactWeights | None = None,
) -> Replay:
    """Replay ``session`` under ``strategy`` (see the module docstring). ``weights``: the
    rarity weights of recall facts (default: the corpus's, :func:`default_weights`)."""
    model = session.model_info
    counter = counter or session_counter(session)
    if isinstance(counter, MemoCounter):  # the tape's text, tokenised in one pass
        counter.prime((c.request for c in session.calls), (c.response for c in session.calls))
    window = window or model.context_window or 200_000
    hidden = _hidden_tokens(session, counter, price)
    budget = budget_tokens or max(window - 16_000, 1)  # counted with the prefix (input_tokens)
    walker = _Walker(session)
    # Only facts some recorded response uses can be needed: the index keeps just those.
    index = wanted_index(c.response for c in session.calls)
    scorer = _Scorer(index, QuoteIndex.of_responses(c.response for c in session.calls), weights)
    views: list[Conversation] = []
    tapes: list[Conversation] = []
    receipts: list[tuple[Receipt, ...]] = []
    scores: list[CallRecall] = []
    edited: list[bool] = []  # the strategy changed the view it was given at this call
    # Validated once: validating the counter against its runtime Protocol at every call cost
    # more than some strategies; per call only plain values change (a copy validates nothing).
    usages = [c.usage for c in session.calls if c.usage is not None]
    cache = default_cache(session, usages or None) if session.calls else None  # TTL as written
    base = CallFacts(counter=counter, budget_tokens=budget, context_window=window)
    if isinstance(cache, AnthropicCache) and cache.ttl_s > 0:
        base = base.model_copy(update={"cache_ttl_s": cache.ttl_s})
    previous: dict[int, tuple[datetime | None, str | None]] = {}  # per thread: time, model
    bill = SummariserBill(price=price, session_model=session.model)
    for i, call in enumerate(session.calls):
        thread, new = walker.step(i, call)
        unchanged = thread.view is thread.tape  # the strategy has left the tape as it was
        sent = thread.view  # what the thread's previous request sent (its cached prefix)
        thread.tape = _with_head(thread.tape, call.request, new)
        view = thread.tape if unchanged else _with_head(thread.view, call.request, new)
        now = call.timestamp or datetime.now(UTC)  # CallFacts' own default
        model_id = call.model or session.model
        last_at, last_model = previous.get(id(thread), (None, None))
        previous[id(thread)] = (call.timestamp, model_id)
        update = {
            "model": model_id,
            "now": now,
            "call_index": i,
            # What the server counts besides the messages: the request's system and tools, plus
            # what the file omits (inferred from recorded usage).
            "prefix_tokens": head_tokens(call.request, counter) + hidden if hidden else None,
            "previous_call_at": last_at if call.timestamp else None,
            "previous_model": last_model,
            "cache_reset": call.cache_reset is not None,
        }
        facts = base.model_copy(update=update)
        result = strategy(view, facts)
        if result.receipts:
            bill.add(i, result.receipts, view, sent, facts)
        scores.append(scorer.score(thread, new, view, result.view, call.response))
        edited.append(result.view is not view)
        thread.view = result.view
        views.append(result.view)
        tapes.append(thread.tape)
        receipts.append(result.receipts)
    done = _finish(
        session,
        name=name,
        views=views,
        tapes=tapes,
        receipts=receipts,
        scores=scores,
        counter=counter,
        price=price,
        window=window,
        bill=bill,
    )
    context = [r.context_tokens for r in done.rows]
    prices = call_prices(session, price)
    needed = needs(session, tapes, scores, index, counter)
    return replace(
        done,
        recall=summarise(scores, weighted=scorer.weighted),
        quality=summarise_quality(scorer.quality),
        recoveries=priced(needed, context, prices),
        retrieval=priced(needed, context, prices, retrieval=True),
        retrieval_overhead_usd=retrieval_overhead(prices, _tool_tokens(counter)),
        probes=probe_edits(tapes, views, edited),
        refused=refused_calls(tapes, views, edited),
    )


def _tool_tokens(counter: TokenCounter) -> int:
    """Tokens the retrieve tool's definition adds to a request."""
    bare = Conversation()
    return counter.count_conversation(bare.model_copy(update={"tools": (RETRIEVE_TOOL,)})) - (
        counter.count_conversation(bare)
    )


@dataclass
class _Scorer:
    """Scores each call: fact recall (weighted too) and the strict measures. The held sets grow
    by what was appended and are rebuilt only when the strategy changed the view, so scoring
    stays linear in the session (not quadratic). While the view holds the tape's messages, both
    are one set (grown once per call)."""

    index: FactIndex
    quotes: QuoteIndex
    weights: FactWeights | None = None
    weighted: list[tuple[float, float]] = field(default_factory=list)
    quality: list[CallQuality] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.weights = self.weights or default_weights()

    def score(
        self,
        thread: _Thread,
        new: tuple[Message, ...],
        view: Conversation,
        shaped: Conversation,
        response: Message | None,
    ) -> CallRecall:
        index, quotes = self.index, self.quotes
        added, lines = index.union(new), quotes.union(new)
        thread.tape_facts |= added
        thread.tape_lines |= lines
        if shaped is thread.tape:
            thread.view_facts, thread.view_lines = thread.tape_facts, thread.tape_lines
        elif shaped is not view:
            thread.view_facts = index.union(shaped.messages)
            thread.view_lines = quotes.union(shaped.messages)
        elif thread.view_facts is not thread.tape_facts:  # else it grew with the tape
            thread.view_facts |= added
            thread.view_lines |= lines
        if response is None:
            self.weighted.append((0.0, 0.0))
            self.quality.append(NOTHING)
            return _NOTHING_NEEDED
        self.quality.append(
            score_quality(
                quotes, response, thread.tape, thread.tape_lines, shaped, thread.view_lines
            )
        )
        facts, tape_system = index.of(response), index.system_text(thread.tape)
        needed = needed_facts(facts, thread.tape_facts, tape_system)
        if thread.view_facts is thread.tape_facts and shaped.system is thread.tape.system:
            scored = all_kept(len(needed))  # the view holds the tape's facts: nothing lost
        else:
            scored = lost_facts(needed, thread.view_facts, index.system_text(shaped))
        assert self.weights is not None
        total = self.weights.total(needed) if needed else 0.0
        lost = self.weights.total(scored.lost) if scored.lost else 0.0
        self.weighted.append((total, total - lost))
        return scored


_NOTHING_NEEDED = CallRecall(0, 0, ())


def _hidden_tokens(session: Session, counter: TokenCounter, price: ModelPrice | None) -> int:
    """The inferred size of a system prompt and tools the file omits (0 when it holds them)."""
    if session.prefix_known or not session.calls:
        return 0
    first = session.calls[0]
    if first.usage is None:
        return 0
    return max(first.usage.total_input - counter.count_conversation(first.request), 0)


def _finish(
    session: Session,
    *,
    name: str,
    views: list[Conversation],
    tapes: list[Conversation],
    receipts: list[tuple[Receipt, ...]],
    scores: list[CallRecall],
    counter: TokenCounter,
    price: ModelPrice | None,
    window: int,
    bill: SummariserBill,
) -> Replay:
    recorded = [c.usage for c in session.calls]
    base_cache = default_cache(session, [u for u in recorded if u is not None] or None)
    ttl = base_cache.ttl_s if isinstance(base_cache, AnthropicCache) else None
    cache = base_cache.model_copy(update={"placement": "engine"}) if ttl else base_cache
    ledger = price_session(session, counter, price, cache=cache, output="recorded", requests=views)
    rows = rows_of(session, ledger, receipts, scores, window, bill.per_call(len(session.calls)))
    return Replay(
        session=session,
        strategy=name,
        summariser=tuple(bill.calls or ()),
        mark_ttl_s=ttl,
        receipts=tuple(receipts),
        ledger=ledger,
        recall=summarise(scores),
        rows=rows,
        window=window,
        views=tuple(views),
        tapes=tuple(tapes),
    )


def rows_of(
    session: Session,
    ledger: Ledger,
    receipts: Sequence[tuple[Receipt, ...]],
    scores: Sequence[CallRecall],
    window: int,
    summariser: Sequence[float | None] | None = None,
    accepted: Sequence[bool] | None = None,
) -> tuple[ReplayRow, ...]:
    """One row per call. ``accepted``: per call, whether the provider took this very request
    (the recording's, with its usage): such a call is never an overflow, whatever its simulated
    count (the count's error is not the window's)."""
    table = ledger.simulated
    taken = accepted or [False] * len(receipts)
    columns = zip(  # plain lists: indexing numpy arrays element by element is slow
        ledger.context_tokens.tolist(),
        table.input.tolist(),
        (table.cache_write_5m + table.cache_write_1h).tolist(),
        table.cache_read.tolist(),
        table.output.tolist(),
        table.cost_usd.tolist(),
        summariser or [0.0] * len(receipts),
        strict=True,
    )
    rows = [
        {
            "call": i,
            "context_tokens": context,
            "input_tokens": uncached,
            "cache_write": written,
            "cache_read": read,
            "output_tokens": output,
            "cost_usd": None if math.isnan(cost) or extra is None else cost + extra,
            "summariser_usd": extra,
            "compacted": any(r.action != "summary_discarded" for r in receipts[i]),
            "tokens_freed": sum([r.tokens_freed for r in receipts[i]]) if receipts[i] else 0,
            "overflow": context > window and not taken[i],
            "needed": scores[i].needed,
            "kept": scores[i].kept,
        }
        for i, (context, uncached, written, read, output, cost, extra) in enumerate(columns)
    ]
    return _ROWS.validate_python(rows)  # validated in one call: cheaper than a model per row


_ROWS: TypeAdapter[tuple[ReplayRow, ...]] = TypeAdapter(tuple[ReplayRow, ...])


__all__ = ["ASSUMPTION", "AS_RECORDED", "Replay", "ReplayRow", "replay", "rows_of"]
