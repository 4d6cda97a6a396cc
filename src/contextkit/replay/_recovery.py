"""What it costs the agent to get back what a strategy dropped (decision 10 of the design).

Replay keeps the recorded responses, so a dropped item never changes what the agent did; it
changes what the agent would have had to do. At each call whose response uses a fact the tape
holds and the view no longer does (:mod:`._recall`'s lost facts), the fact's *source* is the first
message of the tape that holds it, and getting it back costs:

- a tool result: the agent runs the tool again, one more model call on the view of that moment
  (its context read from the cache, the tool call written as output) and the result sent again
  (written to the cache): ``kind="tool"``;
- the result of a Task / Agent subagent: the subagent again, at its recorded cost (the file's
  usage, else the simulation of its calls), plus that round trip; where the file does not hold the
  subagent's run, nothing can reproduce it: unrecoverable (``kind="subagent"``);
- text the user typed: nothing reproduces it: an unrecoverable loss (``kind="user"``);
- the agent's own earlier text: the model wrote it once and can write it again from what it still
  holds: listed, not charged (``kind="own"``).

A source is charged once, at the first call that needs it and lost it (the agent has it back from
then on). With ``retrieval`` (the engine's retrieve tool, decision 11) a tool or subagent result
comes back from the tape by one round trip (one ``contextkit_retrieve`` call): a subagent is not
run again, and one whose run the file does not hold is no longer lost. Text the user typed has no
handle and stays lost. Carrying the tool costs its definition in every request
(:func:`retrieval_overhead`).

This is a model of the agent, stated as such wherever the figures are shown: the price of one
extra call at that point, by the prices of that call's model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from contextkit.accounting import price_session
from contextkit.messages import Conversation, Message, ToolResultBlock, ToolUseBlock
from contextkit.pricing import PER_MILLION, ModelPrice
from contextkit.replay._recall import CallRecall, FactIndex
from contextkit.session import Session
from contextkit.strategies import SUBAGENT_TOOLS
from contextkit.tokens import TokenCounter, block_text

Kind = Literal["tool", "subagent", "user", "own"]
RETRIEVE_CALL_TOKENS = 30
"""Output tokens of one ``contextkit_retrieve`` call (its name and a tool_use id)."""
RECOVERY_NOTE = (
    "recovery: what a later call needed that the view no longer held, priced as the agent getting "
    "it back at that call (the tool run again, the subagent again, or lost if the user typed it)"
)


@dataclass(frozen=True)
class Recovery:
    """One item a strategy dropped that a later call needed, and what getting it back costs."""

    call: int
    """The first call that needed it and did not hold it."""
    kind: Kind
    source: str
    """What held it: ``Read {"file_path": ...}`` for a tool, ``user message 4`` for user text."""
    facts: tuple[str, ...]
    """The needed facts it held (the first few)."""
    tokens: int
    """Its size (the result or text sent again)."""
    cost_usd: float | None
    """What getting it back costs (None: it cannot be got back, or a price is unknown)."""
    recoverable: bool

    def to_json(self) -> dict[str, object]:
        return {
            "call": self.call,
            "kind": self.kind,
            "source": self.source,
            "facts": list(self.facts),
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "recoverable": self.recoverable,
        }


@dataclass(frozen=True)
class _Source:
    kind: Kind
    key: str
    """One per source: a tool_use id, or the message's position."""
    source: str
    tokens: int
    tool_call_tokens: int = 0
    subagent: Session | None = None


def recoveries(
    session: Session,
    tapes: Sequence[Conversation],
    scores: Sequence[CallRecall],
    index: FactIndex,
    context_tokens: Sequence[int],
    prices: Sequence[ModelPrice | None],
    counter: TokenCounter,
    *,
    retrieval: bool = False,
) -> tuple[Recovery, ...]:
    """Every recovery of a replay (see the module docstring), in call order."""
    needed = needs(session, tapes, scores, index, counter)
    return priced(needed, context_tokens, prices, retrieval=retrieval)


Need = tuple[int, "_Source", list[str]]
"""(call, source, the facts of it that call needed): one item to get back."""


def needs(
    session: Session,
    tapes: Sequence[Conversation],
    scores: Sequence[CallRecall],
    index: FactIndex,
    counter: TokenCounter,
) -> tuple[Need, ...]:
    """What each call needed and no longer held, one entry per source (charged once, at the
    first call that needed it)."""
    subagents = {s.parent_tool_use_id: s for s in session.subagents if s.parent_tool_use_id}
    charged: set[str] = set()
    out: list[Need] = []
    for call, (tape, score) in enumerate(zip(tapes, scores, strict=True)):
        if not score.lost:
            continue
        by_source: dict[str, tuple[_Source, list[str]]] = {}
        for fact, found in _sources(tape, set(score.lost), index, counter, subagents).items():
            if found.key not in charged:
                by_source.setdefault(found.key, (found, []))[1].append(fact)
        for key, (found, facts) in by_source.items():
            charged.add(key)
            out.append((call, found, facts))
    return tuple(out)


def priced(
    needed: Sequence[Need],
    context_tokens: Sequence[int],
    prices: Sequence[ModelPrice | None],
    *,
    retrieval: bool = False,
) -> tuple[Recovery, ...]:
    """The recoveries of ``needed`` priced without or with the retrieve tool."""
    subagent_costs: dict[str, float | None] = {}
    return tuple(
        _priced(found, facts, call, context_tokens[call], prices[call], retrieval, subagent_costs)
        for call, found, facts in needed
    )


def retrieval_overhead(prices: Sequence[ModelPrice | None], tool_tokens: int) -> float | None:
    """What carrying the retrieve tool in every request costs: its definition written to the
    cache at the first call, read at every later one (None where a price is unknown)."""
    total = 0.0
    for call, price in enumerate(prices):
        if price is None:
            return None
        rate = price.cache_write_5m if call == 0 else price.cache_read
        total += tool_tokens * rate / PER_MILLION
    return total


def _priced(
    found: _Source,
    facts: list[str],
    call: int,
    context: int,
    price: ModelPrice | None,
    retrieval: bool,
    subagent_costs: dict[str, float | None],
) -> Recovery:
    asked = RETRIEVE_CALL_TOKENS if retrieval else found.tool_call_tokens
    trip = _round_trip(context, found.tokens, asked, price)
    kind, cost, recoverable = found.kind, trip, True
    if kind == "own":
        cost = 0.0
    elif kind == "user":  # typed text has no handle to retrieve it by
        cost, recoverable = None, False
    elif kind == "subagent" and not retrieval:
        if found.subagent is None:
            cost, recoverable = None, False
        else:
            run = subagent_costs.get(found.key)
            if found.key not in subagent_costs:
                run = subagent_costs[found.key] = _session_cost(found.subagent)
            cost = None if run is None or trip is None else run + trip
    return Recovery(
        call, kind, found.source, tuple(sorted(facts)[:5]), found.tokens, cost, recoverable
    )


def _round_trip(
    context: int, tokens: int, call_tokens: int, price: ModelPrice | None
) -> float | None:
    """One more model call at this point: its context read from the cache, the tool call written
    as output, the content sent back written to the cache."""
    if price is None:
        return None
    return (
        context * price.cache_read + tokens * price.cache_write_5m + call_tokens * price.output
    ) / PER_MILLION


def _session_cost(session: Session) -> float | None:
    """A subagent's cost: its recorded bill where its file has usage, else the simulation."""
    ledger = price_session(session, output="recorded")
    if ledger.recorded is not None and ledger.recorded.total_cost is not None:
        return float(ledger.recorded.total_cost)
    total = ledger.simulated.total_cost
    return None if total is None else float(total)


def _sources(
    tape: Conversation,
    facts: set[str],
    index: FactIndex,
    counter: TokenCounter,
    subagents: Mapping[str, Session],
) -> dict[str, _Source]:
    """For each of ``facts``, the first message of ``tape`` that holds it, as a source to get it
    back from (one pass over the tape for all the facts a call lost)."""
    uses: dict[str, ToolUseBlock] = {}
    found: dict[str, _Source] = {}
    for position, message in enumerate(tape.messages):
        if message.role == "assistant":
            for block in message.blocks:
                if isinstance(block, ToolUseBlock):
                    uses[block.id] = block
        held = facts.intersection(index.of(message)) - found.keys()
        for fact in sorted(held):
            found[fact] = _classify(message, position, fact, uses, counter, subagents)
        if len(found) == len(facts):
            break
    return found


def _classify(
    message: Message,
    position: int,
    fact: str,
    uses: Mapping[str, ToolUseBlock],
    counter: TokenCounter,
    subagents: Mapping[str, Session],
) -> _Source:
    if message.role == "assistant":
        return _Source("own", f"own:{position}", f"the agent's message {position}", 0)
    for block in message.blocks:
        if isinstance(block, ToolResultBlock) and fact in block_text(block):
            use = uses.get(block.tool_use_id)
            name = use.name if use is not None else "a tool"
            described = f"{name} {_brief(use)}" if use is not None else name
            tokens = counter.count_block(block)
            call_tokens = counter.count_block(use) if use is not None else 0
            kind: Kind = "subagent" if name in SUBAGENT_TOOLS else "tool"
            sub = subagents.get(block.tool_use_id) if kind == "subagent" else None
            return _Source(kind, block.tool_use_id, described, tokens, call_tokens, sub)
    tokens = counter.count_message(message)
    return _Source("user", f"user:{position}", f"user message {position}", tokens)


def _brief(use: ToolUseBlock | None) -> str:
    if use is None:
        return ""
    given = use.input  # an object, or the text of a custom tool's call (apply_patch)
    if not isinstance(given, Mapping):
        return f"({str(given)[:60]})"
    text = ", ".join(f"{k}={v!s:.60}" for k, v in list(given.items())[:2])
    return f"({text})"


__all__ = [
    "RECOVERY_NOTE",
    "RETRIEVE_CALL_TOKENS",
    "Need",
    "Recovery",
    "needs",
    "priced",
    "recoveries",
    "retrieval_overhead",
]
