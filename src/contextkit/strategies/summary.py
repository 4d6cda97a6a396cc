"""Summary replacement: everything before the last K turns becomes one summary.

Contract of :class:`ReplaceWithSummary`:

- Applies whenever there is history before the last ``keep_last_turns`` turns (decide *when* with
  ``When``/``Hysteresis``); otherwise, or when the summary would not be smaller than what it
  replaces, the same view comes back.
- The last K turns are kept verbatim, preceded by the assistant answer that closed the turn before
  them. The summary is a text block in the first message (a user message), after the pinned task's
  blocks when ``pin_first``: roles keep alternating, the array still starts with a user message,
  no assistant text is invented and no kept message is edited.
- The pinned task is the leading blocks of the first message before any earlier summary block, so
  repeated summaries neither duplicate the task nor nest summaries: an earlier summary is part of
  the span summarised next time (the extractive summariser merges its entries).
- The summariser's own usage and model go on the receipt, to be billed apart from the view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from contextkit.messages import Block, CompactionBlock, Conversation, Message, TextBlock
from contextkit.strategies._config import StrategyModel
from contextkit.strategies._structure import (
    has_tool_uses,
    is_turn_start,
    turn_starts,
    with_blocks,
)
from contextkit.strategies.base import CallFacts, Compacted, Receipt
from contextkit.strategies.summarisers import (
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    AnthropicSummariser,
    ExtractiveSummariser,
    ScriptedSummariser,
    Summariser,
    Summary,
)

SummariserConfig = Annotated[
    ExtractiveSummariser | AnthropicSummariser | ScriptedSummariser,
    Field(discriminator="kind"),
]
SummariserField = Annotated[SummariserConfig | Summariser, Field(union_mode="left_to_right")]
"""A built-in summariser config, or any object with a ``summarise`` method (not serialisable)."""


def is_summary_block(block: Block) -> bool:
    return (isinstance(block, TextBlock) and block.text.startswith(SUMMARY_OPEN)) or isinstance(
        block, CompactionBlock
    )


def pinned_blocks(first: Message) -> tuple[Block, ...]:
    """The task's own blocks: the first message's blocks before any summary block."""
    blocks = first.blocks
    for i, block in enumerate(blocks):
        if is_summary_block(block):
            return blocks[:i]
    return blocks


def summarise_head(
    view: Conversation,
    facts: CallFacts,
    *,
    keep_last_turns: int,
    pin_first: bool,
    summarise: Callable[[Sequence[Message]], Summary],
    make_block: Callable[[str], Block],
    strategy: str,
) -> Compacted:
    """Replace the messages before the last ``keep_last_turns`` turns with a summary block."""
    messages = view.messages
    starts = turn_starts(messages)
    if len(starts) <= keep_last_turns:
        return Compacted(view=view)
    # The kept history resumes at the answer that closed the turn before the kept turns, so the
    # summary message (user) and the kept messages alternate without editing any kept message.
    resume = starts[-keep_last_turns] - 1
    if resume < 1 or messages[resume].role != "assistant" or has_tool_uses(messages[resume]):
        return Compacted(view=view)
    pinned: tuple[Block, ...] = ()
    span = list(messages[:resume])
    if pin_first and is_turn_start(messages[0]):
        pinned = pinned_blocks(messages[0])
        rest = messages[0].blocks[len(pinned) :]
        span[0:1] = [with_blocks(messages[0], rest)] if rest else []
    if all(is_summary_block(b) for m in span for b in m.blocks):
        return Compacted(view=view)  # nothing new since the last summary
    summary = summarise(span)
    head = with_blocks(messages[0], (*pinned, make_block(summary.text)))
    new = view.with_messages((head, *messages[resume:]))
    counter = facts.counter
    freed = counter.count_conversation(view) - counter.count_conversation(new)
    if freed <= 0:
        return Compacted(view=view)
    receipt = Receipt(
        strategy=strategy,
        action="summarised",
        tokens_freed=freed,
        message_index=0,
        detail=f"{resume} messages replaced by a {counter.count_text(summary.text)}-token summary",
        usage=summary.usage,
        model=summary.model,
    )
    return Compacted(view=new, receipts=(receipt,))


def _summary_text_block(text: str) -> TextBlock:
    # The marker lets the next summary find (and fold in) this one, whatever wrote the text.
    if not text.startswith(SUMMARY_OPEN):
        text = f"{SUMMARY_OPEN}\n{text}\n{SUMMARY_CLOSE}"
    return TextBlock(text=text)


class ReplaceWithSummary(StrategyModel):
    """Summarise everything before the last ``keep_last_turns`` turns into one block."""

    kind: Literal["summary"] = "summary"
    summariser: SummariserField = Field(default_factory=ExtractiveSummariser)
    keep_last_turns: int = Field(2, ge=1)
    pin_first: bool = True
    instructions: str | None = None

    def __init__(self, summariser: Summariser | None = None, /, **data: Any) -> None:
        if summariser is not None:
            data["summariser"] = summariser
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        def summarise(span: Sequence[Message]) -> Summary:
            return self.summariser.summarise(span, facts, instructions=self.instructions)

        return summarise_head(
            view,
            facts,
            keep_last_turns=self.keep_last_turns,
            pin_first=self.pin_first,
            summarise=summarise,
            make_block=_summary_text_block,
            strategy=self.kind,
        )


__all__ = [
    "ReplaceWithSummary",
    "SummariserConfig",
    "SummariserField",
    "is_summary_block",
    "pinned_blocks",
    "summarise_head",
]
