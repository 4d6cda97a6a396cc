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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from contextkit._gc import no_cycle_collection
from contextkit.accounting import Ledger, default_cache, price_session
from contextkit.cache import AnthropicCache
from contextkit.messages import Block, Conversation, Message
from contextkit.pricing import ModelPrice
from contextkit.replay._marks import place_marks
from contextkit.replay._recall import (
    CallRecall,
    FactIndex,
    RecallReport,
    score_sets,
    summarise,
    wanted_index,
)
from contextkit.session import Call, Session
from contextkit.strategies.base import CallFacts, Receipt, Strategy, head_tokens
from contextkit.tokens import MemoCounter, TokenCounter, counter_for

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

    @cached_property
    def requests(self) -> tuple[Conversation, ...]:
        """Each request as the strategy would have sent it (with breakpoints), built on first use
        (pricing did not need them: the simulator placed the same breakpoints itself)."""
        if self.sent is not None:
            return self.sent
        return tuple(place_marks(self.views, self.mark_ttl_s))

    @property
    def cost_usd(self) -> float | None:
        return self.ledger.simulated.total_cost

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
        return {
            "input_tokens": int(totals["input"] or 0),
            "cache_read": int(totals["cache_read"] or 0),
            "cache_write": int((totals["cache_write_5m"] or 0) + (totals["cache_write_1h"] or 0)),
            "output": int(totals["output"] or 0),
            "cost_usd": cost,
            "harness_compaction_usd": self.harness_usd,
            "peak_context_tokens": self._peak_context(real),
            "compactions": sum(1 for r in self.rows if r.compacted),
            "overflow_calls": sum(1 for r in self.rows if r.overflow),
            "recall": self.recall.recall,
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
            "notes": [ASSUMPTION, *self.notes, *self.ledger.notes],
            "rows": [r.model_dump() for r in self.rows] if rows else [],
        }


# --- walking the recording ---------------------------------------------------------------------


def _strip_marks(message: Message) -> Message:
    """The message without ``cache_control``: placement is the replay's own decision."""
    if isinstance(message.content, str) or not any(map(_marked, message.content)):
        return message
    blocks = tuple(_strip_block(b) for b in message.content)
    if all(a is b for a, b in zip(blocks, message.content, strict=True)):
        return message
    return message.model_copy(update={"content": blocks})


def _marked(block: Block) -> bool:
    extra = block.__pydantic_extra__  # the attribute: the model_extra property is slower
    return extra is not None and "cache_control" in extra


def _strip_block(block: Block) -> Block:
    extra = block.model_extra or {}
    if "cache_control" not in extra:
        return block
    payload = block.model_dump(mode="python", exclude_unset=True)
    payload.pop("cache_control")
    return type(block).model_validate(payload)


@dataclass
class _Thread:
    raw: tuple[Message, ...]
    """The messages of the recorded request this thread last made, as recorded."""
    sent: list[Message]
    """The same messages with their marks stripped (a list: a call extends it by what it
    appended, instead of copying the whole history into a new tuple)."""
    view: Conversation
    tape: Conversation
    tape_facts: set[str] = field(default_factory=set)
    """Recall facts the tape's messages hold, grown as messages append."""
    view_facts: set[str] = field(default_factory=set)
    """The same for the view, rebuilt when the strategy changes the view (the tape's own set
    while the strategy returns the tape: both grow by the same messages)."""


@dataclass
class _Walker:
    """Turns recorded requests into tape increments, one thread per independent conversation."""

    session: Session
    threads: list[_Thread] = field(default_factory=list)
    _stripped: dict[int, tuple[Message, Message]] = field(default_factory=dict)

    def strip(self, message: Message) -> Message:
        hit = self._stripped.get(id(message))
        if hit is None or hit[0] is not message:
            hit = (message, _strip_marks(message))
            self._stripped[id(message)] = hit
        return hit[1]

    def step(self, index: int, call: Call) -> tuple[_Thread, tuple[Message, ...]]:
        """The thread, and the messages the recording appended since its last request.

        What was appended is everything beyond the thread's previous request: the recorded
        response (as the harness sent it back) and the new user content. A request that repeats
        the thread's previous one (a retry) appends nothing."""
        raw = call.request.messages
        thread = self._match(raw)
        if thread is not None:
            new = tuple(map(self.strip, raw[len(thread.raw) :]))
            thread.sent += new
            thread.raw = raw
            return thread, new
        messages = tuple(map(self.strip, raw))
        if index in self.session.compactions and self.threads:
            thread = self.threads[-1]
            shared = _known(messages, thread.tape.messages)  # skip the summary, keep the new
        else:
            head = call.request.model_copy(update={"messages": ()})
            thread = _Thread(raw=(), sent=[], view=head, tape=head)
            self.threads.append(thread)
            shared = 0
        thread.raw, thread.sent = raw, list(messages)
        return thread, messages[shared:]

    def _match(self, raw: tuple[Message, ...]) -> _Thread | None:
        """The newest thread whose previous request ``raw`` continues (or repeats)."""
        for thread in reversed(self.threads):
            n = len(thread.raw)
            if n and len(raw) >= n and self._continues(raw[:n], thread):
                return thread
        return None

    def _continues(self, prefix: tuple[Message, ...], thread: _Thread) -> bool:
        # Identity first (tuple comparison checks it in C before equality, and readers share
        # message objects between requests); a message that differs only by a moved cache mark
        # compares equal once stripped.
        if prefix == thread.raw:
            return True
        pairs = zip(prefix, thread.raw, thread.sent, strict=True)
        return all(a is b or self.strip(a) == s for a, b, s in pairs)


def _known(messages: tuple[Message, ...], tape: tuple[Message, ...]) -> int:
    """After a harness compaction: how many leading messages are the harness's artefacts or
    content the tape already holds (the summary first, then anything already seen: a message
    whose JSON is that of a tape message). Only tape messages of the same signature (implied by
    equal JSON) are serialised: not the whole tape, whose tool results dominate."""
    by_signature: dict[object, list[Message]] = {}
    for message in tape:
        by_signature.setdefault(_signature(message), []).append(message)
    skip = 1  # the summary the harness wrote
    while skip < len(messages) and _seen(messages[skip], by_signature):
        skip += 1
    return min(skip, len(messages))


def _seen(message: Message, by_signature: dict[object, list[Message]]) -> bool:
    alike = by_signature.get(_signature(message))
    if not alike:
        return False
    key = _key(message)
    return any(_key(m) == key for m in alike)


def _key(message: Message) -> str:
    return message.model_dump_json()


_IDENTIFYING = {
    "text": "text",
    "tool_use": "id",
    "tool_result": "tool_use_id",
    "thinking": "signature",
}
"""Per block type, a field that identifies a block well (ids are unique per call)."""


def _signature(message: Message) -> object:
    """A cheap key that equal JSON (:func:`_key`) implies: the role, and per block its type and
    identifying field (the same whatever the block's class: read by the ``type`` it writes)."""
    content = message.content
    if isinstance(content, str):
        return (message.role, content)
    blocks = []
    for block in content:
        kind = getattr(block, "type", None)
        field_name = _IDENTIFYING.get(kind) if isinstance(kind, str) else None
        value = getattr(block, field_name, None) if field_name else None
        blocks.append((kind, value if isinstance(value, str) else None))  # always hashable
    return (message.role, tuple(blocks))


def _with_head(view: Conversation, request: Conversation, new: tuple[Message, ...]) -> Conversation:
    """The view under the recorded request's head (system, tools, params) plus the new messages."""
    if _same_head(view, request):
        return view.append(*new) if new else view
    return request.model_copy(update={"messages": (*view.messages, *new)})


def _same_head(view: Conversation, request: Conversation) -> bool:
    """Whether ``view`` and ``request`` are equal but for their messages: what pydantic's ``==``
    compares (type, extras, fields), field by field, without copying either."""
    if type(view) is not type(request):
        bare = {"messages": ()}
        return view.model_copy(update=bare) == request.model_copy(update=bare)
    return (
        view.model == request.model
        and view.system == request.system
        and view.tools == request.tools
        and view.__pydantic_extra__ == request.__pydantic_extra__
    )


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
) -> Replay:
    """Replay ``session`` under ``strategy`` (see the module docstring)."""
    model = session.model_info
    counter = counter or counter_for(model)
    if isinstance(counter, MemoCounter):  # the tape's text, tokenised in one pass
        counter.prime((c.request for c in session.calls), (c.response for c in session.calls))
    window = window or model.context_window or 200_000
    hidden = _hidden_tokens(session, counter, price)
    budget = budget_tokens or max(window - 16_000, 1)  # counted with the prefix (input_tokens)
    walker = _Walker(session)
    # Only facts some recorded response uses can be needed: the index keeps just those.
    index = wanted_index(c.response for c in session.calls)
    views: list[Conversation] = []
    tapes: list[Conversation] = []
    receipts: list[tuple[Receipt, ...]] = []
    scores: list[CallRecall] = []
    # Validated once: validating the counter against its runtime Protocol at every call cost
    # more than some strategies; per call only plain values change (a copy validates nothing).
    usages = [c.usage for c in session.calls if c.usage is not None]
    cache = default_cache(session, usages or None) if session.calls else None  # TTL as written
    base = CallFacts(counter=counter, budget_tokens=budget, context_window=window)
    if isinstance(cache, AnthropicCache) and cache.ttl_s > 0:
        base = base.model_copy(update={"cache_ttl_s": cache.ttl_s})
    previous: dict[int, tuple[datetime | None, str | None]] = {}  # per thread: time, model
    for i, call in enumerate(session.calls):
        thread, new = walker.step(i, call)
        unchanged = thread.view is thread.tape  # the strategy has left the tape as it was
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
        scores.append(_score(index, thread, new, view, result.view, call.response))
        thread.view = result.view
        views.append(result.view)
        tapes.append(thread.tape)
        receipts.append(result.receipts)
    return _finish(
        session,
        name=name,
        views=views,
        tapes=tapes,
        receipts=receipts,
        scores=scores,
        counter=counter,
        price=price,
        window=window,
    )


def _score(
    index: FactIndex,
    thread: _Thread,
    new: tuple[Message, ...],
    view: Conversation,
    shaped: Conversation,
    response: Message | None,
) -> CallRecall:
    """Recall of one call. The held sets grow by what was appended and are rebuilt only when the
    strategy changed the view, so scoring stays linear in the session (not quadratic). While the
    view holds the tape's messages, both are one set (grown once per call)."""
    added = index.union(new)
    thread.tape_facts |= added
    if shaped is thread.tape:
        thread.view_facts = thread.tape_facts
    elif shaped is not view:
        thread.view_facts = index.union(shaped.messages)
    elif thread.view_facts is not thread.tape_facts:  # else it grew with the tape
        thread.view_facts |= added
    if response is None:
        return _NOTHING_NEEDED
    return score_sets(
        index.of(response),
        thread.tape_facts,
        index.system_text(thread.tape),
        thread.view_facts,
        index.system_text(shaped),
    )


_NOTHING_NEEDED = CallRecall(0, 0, ())


def replay_as_recorded(
    session: Session,
    *,
    counter: TokenCounter | None = None,
    price: ModelPrice | None = None,
    window: int | None = None,
) -> Replay:
    """The recording itself: recorded requests, recorded usage where present (the real bill)."""
    model = session.model_info
    counter = counter or counter_for(model)
    window = window or model.context_window or 200_000
    ledger = price_session(session, counter, price, output="recorded")
    none: list[tuple[Receipt, ...]] = [() for _ in session.calls]
    rows = _rows(session, ledger, none, [CallRecall(0, 0, ())] * len(session.calls), window)
    harness, harness_notes = _harness_compactions(session)
    return Replay(
        harness_usd=harness,
        session=session,
        strategy=AS_RECORDED,
        sent=tuple(c.request for c in session.calls),
        receipts=tuple(() for _ in session.calls),
        ledger=ledger,
        recall=RecallReport(0, 0, ()),
        rows=rows,
        window=window,
        notes=(
            "the recording as it was: recorded requests and, where present, recorded usage",
            *harness_notes,
        ),
        views=tuple(c.request for c in session.calls),
        tapes=tuple(c.request for c in session.calls),
    )


def _harness_compactions(session: Session) -> tuple[float, tuple[str, ...]]:
    """The recorded cost of the calls the harness made to compact this session (its own
    compaction subagents), which belongs to what the recording cost."""
    subs = [s for s in session.subagents if s.harness_compaction and s.calls]
    if not subs:
        return 0.0, ()
    costs = [price_session(s, output="recorded").recorded for s in subs]
    total = sum(float(c.total_cost or 0.0) for c in costs if c is not None)
    calls = sum(len(s.calls) for s in subs)
    note = (
        f"as-recorded includes the harness's own compaction: {calls} call(s) in "
        f"{len(subs)} compaction subagent(s), ${total:.4f} (also listed as their own sessions)"
    )
    return total, (note,)


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
) -> Replay:
    recorded = [c.usage for c in session.calls]
    base_cache = default_cache(session, [u for u in recorded if u is not None] or None)
    ttl = base_cache.ttl_s if isinstance(base_cache, AnthropicCache) else None
    cache = base_cache.model_copy(update={"placement": "engine"}) if ttl else base_cache
    ledger = price_session(session, counter, price, cache=cache, output="recorded", requests=views)
    rows = _rows(session, ledger, receipts, scores, window)
    return Replay(
        session=session,
        strategy=name,
        mark_ttl_s=ttl,
        receipts=tuple(receipts),
        ledger=ledger,
        recall=summarise(scores),
        rows=rows,
        window=window,
        views=tuple(views),
        tapes=tuple(tapes),
    )


def _rows(
    session: Session,
    ledger: Ledger,
    receipts: Sequence[tuple[Receipt, ...]],
    scores: Sequence[CallRecall],
    window: int,
) -> tuple[ReplayRow, ...]:
    table = ledger.simulated
    columns = zip(  # plain lists: indexing numpy arrays element by element is slow
        ledger.context_tokens.tolist(),
        table.input.tolist(),
        (table.cache_write_5m + table.cache_write_1h).tolist(),
        table.cache_read.tolist(),
        table.output.tolist(),
        table.cost_usd.tolist(),
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
            "cost_usd": None if math.isnan(cost) else cost,
            "compacted": bool(receipts[i]),
            "tokens_freed": sum([r.tokens_freed for r in receipts[i]]) if receipts[i] else 0,
            "overflow": context > window,
            "needed": scores[i].needed,
            "kept": scores[i].kept,
        }
        for i, (context, uncached, written, read, output, cost) in enumerate(columns)
    ]
    return _ROWS.validate_python(rows)  # validated in one call: cheaper than a model per row


_ROWS: TypeAdapter[tuple[ReplayRow, ...]] = TypeAdapter(tuple[ReplayRow, ...])


__all__ = ["ASSUMPTION", "AS_RECORDED", "Replay", "ReplayRow", "replay", "replay_as_recorded"]
