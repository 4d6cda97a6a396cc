"""Content a file does not hold after a harness compaction, sized from the billed usage.

After compacting, Claude Code sends more than the summary the transcript records: it restores the
files read last, the todo list, the plan (about 15-30k tokens in the corpus sessions), and no
transcript line holds them. Left out, every later call of the session is counted 12-19% short.
As with the hidden system prompt at call 1 (:func:`~contextkit.accounting._ledger._hidden_prefix`),
the gap is measured where it first appears: the recorded total input of the first call after the
compaction less the count of what the file holds for it. The gap then rides, as one block of that
many tokens after the summary, in every request that still starts with the same summary message
(as recorded, or in a strategy's view built on the recorded tape), until the next compaction.

Contract: :func:`compaction_gaps` finds the gaps of a session's recorded requests;
:func:`with_gaps` returns the requests with each gap's block in place (the same message object in
every request that carries it, so the cache simulator sees one unchanged prefix). A gap is taken
only where a compaction call recorded its usage, the request was rebuilt (``exact=False``) and the
shortfall is at least :data:`MIN_GAP_TOKENS` and :data:`MIN_GAP_SHARE` of the recorded input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextkit.cache import strip_prior_thinking
from contextkit.messages import Conversation, Message, TextBlock
from contextkit.session import Session, Usage
from contextkit.tokens import TokenCounter

MIN_GAP_TOKENS = 1_000
MIN_GAP_SHARE = 0.03
_FILLER_WORD = " restored"


@dataclass(frozen=True)
class CompactionGap:
    """``tokens`` the harness sent after ``summary`` (the first message of the requests that
    follow the compaction at call ``call``) that the file does not hold."""

    call: int
    summary: Message
    tokens: int


def compaction_gaps(
    session: Session,
    counter: TokenCounter,
    recorded: Sequence[Usage] | None,
    hidden_prefix_tokens: int,
) -> tuple[CompactionGap, ...]:
    """The gap after each compaction of ``session`` whose first call recorded its usage."""
    if recorded is None or not session.compactions:
        return ()
    gaps: list[CompactionGap] = []
    for index in session.compactions:
        if not 0 <= index < len(session.calls):
            continue
        call = session.calls[index]
        if call.exact or not call.request.messages:
            continue
        billed = recorded[index].total_input
        held = counter.count_conversation(strip_prior_thinking(call.request))
        gap = billed - held - hidden_prefix_tokens
        if gap >= MIN_GAP_TOKENS and gap >= MIN_GAP_SHARE * billed:
            gaps.append(CompactionGap(index, call.request.messages[0], gap))
    return tuple(gaps)


def with_gaps(
    requests: Sequence[Conversation], gaps: Sequence[CompactionGap], counter: TokenCounter
) -> list[Conversation]:
    """``requests`` with each gap's block after its summary, where the summary still leads."""
    out = list(requests)
    for gap in gaps:
        filled = _filled(gap, counter)
        for i, request in enumerate(out):
            messages = request.messages
            if messages and (messages[0] is gap.summary or messages[0] == gap.summary):
                out[i] = request.model_copy(update={"messages": (filled, *messages[1:])})
    return out


def _filled(gap: CompactionGap, counter: TokenCounter) -> Message:
    """The summary message with a text block after it that counts ``gap.tokens`` tokens."""
    block = TextBlock(text=filler(gap.tokens, counter))
    return Message(role=gap.summary.role, content=(*gap.summary.blocks, block))


def filler(tokens: int, counter: TokenCounter) -> str:
    """A text of about ``tokens`` tokens under ``counter`` (within a few tokens)."""
    words = max(tokens, 1)
    text = _FILLER_WORD * words
    for _ in range(4):  # the count is near linear in the words: a few secant steps
        got = counter.count_text(text)
        if got == tokens or got <= 0:
            break
        words = max(round(words * tokens / got), 1)
        text = _FILLER_WORD * words
    return text


__all__ = [
    "MIN_GAP_SHARE",
    "MIN_GAP_TOKENS",
    "CompactionGap",
    "compaction_gaps",
    "filler",
    "with_gaps",
]
