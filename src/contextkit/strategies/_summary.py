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
- With ``keep_last_rounds`` and a latest turn of more tool rounds than that, the cut is inside the
  turn, at a round boundary (:func:`in_turn`): the view opens with the latest request's message
  holding ``(pinned task, summary, request)``, the request's blocks verbatim, then the last rounds
  as sent (signed thinking included). Every kept tool_use keeps its result; roles alternate.
- The summariser's own usage and model go on the receipt, to be billed apart from the view, with
  the summary's size (``summary_tokens``: a replay models an offline summariser's call from it); a
  summary that is discarded (not smaller) still leaves a receipt (``summary_discarded``) carrying
  them, with the same view object: the call was made (and, live, paid for) all the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from contextkit.messages import Block, CompactionBlock, Conversation, Message, TextBlock
from contextkit.strategies._base import CallFacts, Compacted, Receipt
from contextkit.strategies._strategy_model import StrategyModel
from contextkit.strategies._structure import (
    has_tool_uses,
    is_turn_start,
    last_turn_start,
    removable,
    turn_starts,
    with_blocks,
)
from contextkit.strategies._summarisers import (
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    AnthropicSummariser,
    ExtractiveSummariser,
    ScriptedSummariser,
    Summariser,
    Summary,
    ViewSummariser,
)

SummariserConfig = Annotated[
    ExtractiveSummariser | AnthropicSummariser | ScriptedSummariser,
    Field(discriminator="kind"),
]
SummariserField = Annotated[SummariserConfig | Summariser, Field(union_mode="left_to_right")]
"""A built-in summariser config, or any object with a ``summarise`` method (not serialisable)."""


def summarise_with(
    summariser: Summariser, view: Conversation, facts: CallFacts, instructions: str | None
) -> Callable[[Sequence[Message]], Summary]:
    """The span summariser a strategy hands to :func:`summarise_head`: one that reads the whole
    view (and so its cached prefix) when the summariser can, else the span alone."""

    def summarise(span: Sequence[Message]) -> Summary:
        if isinstance(summariser, ViewSummariser):
            return summariser.summarise_view(view, span, facts, instructions=instructions)
        return summariser.summarise(span, facts, instructions=instructions)

    return summarise


def is_summary_block(block: Block) -> bool:
    return (isinstance(block, TextBlock) and block.text.startswith(SUMMARY_OPEN)) or isinstance(
        block, CompactionBlock
    )


def pinned_blocks(first: Message) -> tuple[Block, ...]:
    """The task's own blocks: the first message's blocks that are not a summary (an in-turn
    summary leads the latest request, a turn-level one follows the task)."""
    blocks = first.blocks
    if not any(map(is_summary_block, blocks)):
        return blocks
    return tuple(b for b in blocks if not is_summary_block(b))


def round_starts(messages: Sequence[Message], latest: int) -> list[int]:
    """Where the latest turn's tool rounds begin: the assistant messages after ``latest`` (the
    turn's opening request) that the rounds before them can be cut away from."""
    return [
        c
        for c in range(latest + 1, len(messages))
        if messages[c].role == "assistant" and removable_rounds(messages, latest, c)
    ]


def removable_rounds(messages: Sequence[Message], latest: int, stop: int) -> bool:
    """Whether ``messages[latest + 1:stop]`` (whole tool rounds of the latest turn) can go."""
    return stop == latest + 1 or removable(messages, latest + 1, stop)


def in_turn_cut(messages: Sequence[Message], keep_last_rounds: int) -> tuple[int, int] | None:
    """(latest request, first kept message) when the latest turn holds more than
    ``keep_last_rounds`` tool rounds and can be cut between them; None otherwise."""
    latest = last_turn_start(messages)
    if latest is None:
        return None
    starts = round_starts(messages, latest)
    if len(starts) <= keep_last_rounds or len(starts) < 2:
        return None
    cut = starts[-keep_last_rounds]
    return (latest, cut) if cut > latest + 1 else None


def summarise_head(
    view: Conversation,
    facts: CallFacts,
    *,
    keep_last_turns: int,
    pin_first: bool,
    summarise: Callable[[Sequence[Message]], Summary],
    make_block: Callable[[str], Block],
    strategy: str,
    keep_last_rounds: int | None = None,
) -> Compacted:
    """Replace the messages before the last ``keep_last_turns`` turns with a summary block; with
    ``keep_last_rounds``, when the latest turn holds more tool rounds than that, everything before
    its last ``keep_last_rounds`` rounds but the latest request itself (see :func:`in_turn`)."""
    if keep_last_rounds is not None:
        cut = in_turn_cut(view.messages, keep_last_rounds)
        if cut is not None:
            return in_turn(view, facts, cut, pin_first, summarise, make_block, strategy)
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
        rest = tuple(b for b in messages[0].blocks if is_summary_block(b))
        span[0:1] = [with_blocks(messages[0], rest)] if rest else []
    if all(is_summary_block(b) for m in span for b in m.blocks):
        return Compacted(view=view)  # nothing new since the last summary
    summary = summarise(span)
    head = with_blocks(messages[0], (*pinned, make_block(summary.text)))
    new = view.with_messages((head, *messages[resume:]))
    return _answer(view, new, facts, summary, strategy, f"{resume} messages")


def in_turn(
    view: Conversation,
    facts: CallFacts,
    cut: tuple[int, int],
    pin_first: bool,
    summarise: Callable[[Sequence[Message]], Summary],
    make_block: Callable[[str], Block],
    strategy: str,
) -> Compacted:
    """Summarise inside the latest turn: everything before message ``cut`` (a tool round's
    assistant message) except the latest request's own blocks (and, with ``pin_first``, the first
    message's task) becomes one summary block. The new view opens with the latest request's
    message holding ``(*task, summary, *request)``, then the kept rounds verbatim: the request is
    kept word for word, no kept message (nor its signed thinking) is edited, every kept tool_use
    keeps its result and roles still alternate."""
    messages = view.messages
    latest, stop = cut
    request = messages[latest]
    own = pinned_blocks(request)
    task: tuple[Block, ...] = ()
    span: list[Message] = []
    if latest > 0:
        first = messages[0]
        if pin_first and is_turn_start(first):
            task = pinned_blocks(first)
            earlier = tuple(b for b in first.blocks if is_summary_block(b))
            span.extend([with_blocks(first, earlier)] if earlier else [])
            span.extend(messages[1:latest])
        else:
            span.extend(messages[:latest])
    prior = tuple(b for b in request.blocks if is_summary_block(b))
    if prior:
        span.append(with_blocks(request, prior))
    # The request itself is summarised too (it stays verbatim in the view): the hand-off then
    # states the goal the work so far served.
    span.extend([with_blocks(request, own)] if own else [])
    span.extend(messages[latest + 1 : stop])
    summary = summarise(span)
    head = with_blocks(request, (*task, make_block(summary.text), *own))
    new = view.with_messages((head, *messages[stop:]))
    detail = f"{stop - latest - 1} messages of the latest turn and {latest} before it"
    return _answer(view, new, facts, summary, strategy, detail)


def _answer(
    view: Conversation,
    new: Conversation,
    facts: CallFacts,
    summary: Summary,
    strategy: str,
    replaced: str,
) -> Compacted:
    """The compacted view with its receipt; the old view when the summary frees nothing (with a
    ``summary_discarded`` receipt all the same: the summariser was called)."""
    counter = facts.counter
    freed = counter.count_conversation(view) - counter.count_conversation(new)
    tokens = counter.count_text(summary.text)
    if freed <= 0:  # a receipt all the same: a live summariser's call is paid for
        discarded = Receipt(
            strategy=strategy,
            action="summary_discarded",
            tokens_freed=0,
            message_index=0,
            detail=f"a {tokens}-token summary was not smaller than what it replaced; discarded",
            usage=summary.usage,
            model=summary.model,
            summary_tokens=tokens,
        )
        return Compacted(view=view, receipts=(discarded,))
    receipt = Receipt(
        strategy=strategy,
        action="summarised",
        tokens_freed=freed,
        message_index=0,
        detail=f"{replaced} replaced by a {tokens}-token summary",
        usage=summary.usage,
        model=summary.model,
        summary_tokens=tokens,
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
    keep_last_rounds: int | None = Field(None, ge=1)
    """When set and the latest turn holds more tool rounds than this, summarise inside it: all but
    its last ``keep_last_rounds`` rounds and the latest request (a one-prompt session of 200 calls
    has a single turn). None: whole turns only."""
    pin_first: bool = True
    instructions: str | None = None

    def __init__(self, summariser: Summariser | None = None, /, **data: Any) -> None:
        if summariser is not None:
            data["summariser"] = summariser
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        return summarise_head(
            view,
            facts,
            keep_last_turns=self.keep_last_turns,
            keep_last_rounds=self.keep_last_rounds,
            pin_first=self.pin_first,
            summarise=summarise_with(self.summariser, view, facts, self.instructions),
            make_block=_summary_text_block,
            strategy=self.kind,
        )


__all__ = [
    "ReplaceWithSummary",
    "SummariserConfig",
    "SummariserField",
    "in_turn",
    "in_turn_cut",
    "is_summary_block",
    "pinned_blocks",
    "round_starts",
    "summarise_head",
    "summarise_with",
]
