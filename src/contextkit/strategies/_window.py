"""Sliding window: drop the oldest whole groups of messages until the view fits.

Contract of :class:`SlidingWindow`:

- The target is ``min(max_tokens, facts.budget_tokens)`` (``facts.budget_tokens`` alone when
  ``max_tokens`` is None); ``keep_turns`` additionally keeps at most that many user turns.
- With ``pin_first`` the first message (the task) is always kept. The latest turn's opening user
  message is always kept, as is the last message.
- Messages are dropped oldest first, in two spans: first whole earlier turns (between the pinned
  task and the latest turn), then, only if that is not enough, the oldest tool rounds of the latest
  turn (``in_turn``), always keeping its opening request verbatim and its last
  ``keep_last_rounds`` rounds. Rounds go whole, so no kept message is edited: the signed thinking
  of the kept rounds goes back to the provider exactly as sent (the provider's rule); with
  ``in_turn`` false a latest turn that holds thinking is never cut into. A span
  never separates a ``tool_use`` from its result or splits a parallel group, and the result still
  alternates roles and starts with a user message. With a pinned task the kept history
  resumes at an assistant message (so it may keep the final answer of the turn before).
- When even that is not enough and the pinned first message holds a summary, the summary goes too
  (the task's own blocks stay). When even the smallest valid view does not fit, the smallest valid
  view is returned (best effort; the receipt says so). When the view already fits, the same view
  object is returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Literal

from pydantic import Field

from contextkit.messages import Conversation, Message, RedactedThinkingBlock, ThinkingBlock
from contextkit.strategies._base import CallFacts, Compacted, Receipt
from contextkit.strategies._strategy_model import StrategyModel
from contextkit.strategies._structure import (
    is_turn_start,
    last_turn_start,
    message_tokens,
    removable,
    turn_starts,
    with_blocks,
)
from contextkit.strategies._summary import pinned_blocks


class SlidingWindow(StrategyModel):
    """Drop the oldest whole message groups until the view fits its target."""

    kind: Literal["sliding-window"] = "sliding-window"
    max_tokens: int | None = Field(None, gt=0)
    keep_turns: int | None = Field(None, ge=1)
    pin_first: bool = True
    in_turn: bool = True
    """Cut tool rounds inside the latest turn even when it holds thinking (whole rounds: the kept
    ones stay as sent). False: such a turn is never cut into."""
    keep_last_rounds: int = Field(1, ge=1)
    """Tool rounds of the latest turn that always stay."""

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        messages = view.messages
        latest = last_turn_start(messages)
        if len(messages) < 3 or latest is None:
            return Compacted(view=view)
        target = facts.budget_tokens
        if self.max_tokens is not None:
            target = min(target, self.max_tokens)
        total = facts.input_tokens(view)
        if total <= target and self.keep_turns is None:
            return Compacted(view=view)  # the common case, kept cheap: no planning
        pinned = 1 if self.pin_first and is_turn_start(messages[0]) else 0
        sizes = message_tokens(messages, facts.counter)
        cuts = _plan(
            messages,
            sizes,
            pinned=pinned,
            latest=latest,
            excess=total - target,
            floor=self._turn_floor(messages),
            in_turn=self.in_turn,
            keep_rounds=self.keep_last_rounds,
        )
        result = _apply(view, sizes, cuts, total, target) if cuts else Compacted(view=view)
        return _drop_summary(result, facts, target) if pinned else result

    def _turn_floor(self, messages: Sequence[Message]) -> int | None:
        """The earliest message that keep_turns allows to stay (None: no turn limit)."""
        if self.keep_turns is None:
            return None
        starts = turn_starts(messages)
        if len(starts) <= self.keep_turns:
            return None
        return starts[-self.keep_turns]


def _plan(
    messages: Sequence[Message],
    sizes: Sequence[int],
    *,
    pinned: int,
    latest: int,
    excess: int,
    floor: int | None,
    in_turn: bool = True,
    keep_rounds: int = 1,
) -> list[tuple[int, int]]:
    """The spans to drop, as (start, stop) pairs, smallest first that frees ``excess`` tokens."""
    cuts: list[tuple[int, int]] = []
    old = [b for b in range(pinned + 1, latest + 1) if removable(messages, pinned, b)]
    allowed = [b for b in old if floor is not None and b <= floor]
    if allowed:
        # keep_turns: cut at least up to the largest valid stop that keeps the last turns whole.
        old = [b for b in old if b >= allowed[-1]]
        excess = max(excess, sum(sizes[pinned : allowed[-1]]))
    if excess <= 0:
        return []
    stop = _smallest_fitting(old, sizes, pinned, excess)
    if stop is not None:
        cuts.append((pinned, stop))
        excess -= sum(sizes[pinned:stop])
    if excess <= 0:
        return cuts
    start = latest + 1
    if not in_turn and _holds_thinking(messages[start:]):
        return cuts  # asked never to cut into a turn whose thinking goes back as sent
    rounds = [c for c in range(start, len(messages)) if messages[c].role == "assistant"]
    last = rounds[-keep_rounds] if len(rounds) >= keep_rounds else start
    recent = [c for c in range(start + 1, last + 1) if removable(messages, start, c)]
    stop = _smallest_fitting(recent, sizes, start, excess)
    if stop is not None:
        cuts.append((start, stop))
    return cuts


def _holds_thinking(messages: Sequence[Message]) -> bool:
    return any(
        isinstance(b, ThinkingBlock | RedactedThinkingBlock) for m in messages for b in m.blocks
    )


def _smallest_fitting(
    stops: list[int], sizes: Sequence[int], start: int, excess: int
) -> int | None:
    """The first stop whose span frees at least ``excess`` tokens, else the largest one."""
    if not stops:
        return None
    freed = list(accumulate(sizes[start : stops[-1]]))
    for stop in stops:
        if freed[stop - start - 1] >= excess:
            return stop
    return stops[-1]


def _drop_summary(result: Compacted, facts: CallFacts, target: int) -> Compacted:
    """Last resort: a summary held in the pinned first message goes when nothing else is left."""
    view = result.view
    counter = facts.counter
    first = view.messages[0]
    task = pinned_blocks(first)
    if not task or len(task) == len(first.blocks) or facts.input_tokens(view) <= target:
        return result
    new = view.with_messages((with_blocks(first, task), *view.messages[1:]))
    receipt = Receipt(
        strategy="sliding-window",
        action="dropped",
        tokens_freed=counter.count_conversation(view) - counter.count_conversation(new),
        message_index=0,
        detail="dropped the summary held in the first message (nothing else left to drop)",
    )
    return Compacted(view=new, receipts=(*result.receipts, receipt))


def _apply(
    view: Conversation,
    sizes: Sequence[int],
    cuts: list[tuple[int, int]],
    total: int,
    target: int,
) -> Compacted:
    dropped = {i for start, stop in cuts for i in range(start, stop)}
    kept = tuple(m for i, m in enumerate(view.messages) if i not in dropped)
    freed_total = sum(sizes[i] for i in dropped)
    receipts = []
    for start, stop in cuts:
        freed = sum(sizes[start:stop])
        detail = f"dropped messages {start}..{stop - 1}"
        if total - freed_total > target:
            detail += f"; still {total - freed_total} tokens over a target of {target}"
        receipts.append(
            Receipt(
                strategy="sliding-window",
                action="dropped",
                tokens_freed=freed,
                message_index=start,
                detail=detail,
            )
        )
    return Compacted(view=view.with_messages(kept), receipts=tuple(receipts))


__all__ = ["SlidingWindow"]
