"""Thinking clearing: drop the extended-thinking blocks of older assistant turns.

Contract of :class:`ClearThinking`:

- A turn runs from one user turn start (a user message without tool results) to the next. The
  thinking and redacted-thinking blocks of assistant messages in the last ``keep_turns`` turns are
  kept, and so is every block of the latest turn and of the last assistant message whatever
  ``keep_turns`` says: the provider requires the latest assistant turn's thinking back unmodified.
- Older assistant messages lose their thinking blocks; an assistant message made only of thinking
  is left as it is (emptying it would break the array).
- Nothing to clear: the same view object comes back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from contextkit.messages import Conversation, Message, RedactedThinkingBlock, ThinkingBlock
from contextkit.strategies._base import CallFacts, Compacted, Receipt
from contextkit.strategies._strategy_model import StrategyModel
from contextkit.strategies._structure import info, replace_messages, turn_starts, with_blocks


def _is_thinking(block: object) -> bool:
    return isinstance(block, ThinkingBlock | RedactedThinkingBlock)


def _protected_from(messages: Sequence[Message], keep_turns: int) -> int:
    """The first message index whose thinking is kept."""
    starts = turn_starts(messages)
    last_assistant = max(
        (i for i, m in enumerate(messages) if m.role == "assistant"), default=len(messages)
    )
    turn_floor = starts[-max(keep_turns, 1)] if len(starts) >= max(keep_turns, 1) else 0
    return min(turn_floor, last_assistant)


class ClearThinking(StrategyModel):
    """Drop thinking blocks older than the last ``keep_turns`` turns."""

    kind: Literal["clear-thinking"] = "clear-thinking"
    keep_turns: int = Field(1, ge=0)
    """Turns whose thinking stays (the latest turn always keeps its thinking)."""

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        messages = view.messages
        floor = _protected_from(messages, self.keep_turns)
        changed: dict[int, Message] = {}
        receipts: list[Receipt] = []
        for i, message in enumerate(messages[:floor]):
            if message.role != "assistant" or not info(message).thinking:
                continue
            kept = [b for b in message.blocks if not _is_thinking(b)]
            if len(kept) in (0, len(message.blocks)):
                continue
            changed[i] = with_blocks(message, kept)
            freed = facts.counter.count_message(message) - facts.counter.count_message(changed[i])
            receipts.append(
                Receipt(
                    strategy=self.kind,
                    action="cleared_thinking",
                    tokens_freed=freed,
                    message_index=i,
                    detail=f"{len(message.blocks) - len(kept)} thinking block(s)",
                )
            )
        if not changed:
            return Compacted(view=view)
        return Compacted(view=replace_messages(view, changed), receipts=tuple(receipts))


__all__ = ["ClearThinking"]
