"""Content a file does not hold after a harness compaction or a resume, sized from the billed usage.

After compacting, Claude Code sends more than the summary the transcript records: it restores the
files read last, the todo list, the plan (about 15-30k tokens in the corpus sessions), and no
transcript line holds them. Left out, every later call of the session is counted 12-19% short.
As with the hidden system prompt at call 1 (:func:`~contextkit.accounting._ledger._hidden_prefix`),
the gap is measured where it first appears: the recorded total input of the first call after the
compaction less the count of what the file holds for it. The gap then rides, as one block of that
many tokens after the summary, in every request that still starts with the same summary message
(as recorded, or in a strategy's view built on the recorded tape), until the next compaction.

A resumed session (``Call.cache_reset == "system"``: a new process, or an MCP reconnect) is sent
with a system prompt built anew (Claude Code puts the git status and environment of the moment in
it): :func:`resumed_prefix` measures the hidden prefix again at such a call, from its usage, so
the calls after it carry the new size (one corpus session's shrank by 7,300 tokens on resume).

Contract: :func:`compaction_gaps` finds the gaps of a session's recorded requests;
:func:`with_gaps` returns the requests with each gap's block in place (the same message object in
every request that carries it, so the cache simulator sees one unchanged prefix). A gap is taken
only where a compaction call recorded its usage, the request was rebuilt (``exact=False``) and the
shortfall is at least :data:`MIN_GAP_TOKENS` and :data:`MIN_GAP_SHARE` of the recorded input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from contextkit.cache import PrefixPart, strip_prior_thinking
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
    resumes: Mapping[int, int] | None = None,
) -> tuple[CompactionGap, ...]:
    """The gap after each compaction of ``session`` whose first call recorded its usage.
    ``resumes``: the hidden prefix's change in size from each resumed call on
    (:func:`resumed_prefix`): a compaction after a resume is measured against the prefix the
    resumed process sent, not the first one."""
    if recorded is None or not session.compactions:
        return ()
    resumed = sorted((resumes or {}).items())
    gaps: list[CompactionGap] = []
    for index in session.compactions:
        if not 0 <= index < len(session.calls):
            continue
        call = session.calls[index]
        if call.exact or not call.request.messages:
            continue
        billed = recorded[index].total_input
        held = counter.count_conversation(strip_prior_thinking(call.request))
        change = next((d for at, d in reversed(resumed) if at <= index), 0)
        gap = billed - held - (hidden_prefix_tokens + change)
        if gap >= MIN_GAP_TOKENS and gap >= MIN_GAP_SHARE * billed:
            gaps.append(CompactionGap(index, call.request.messages[0], gap))
    return tuple(gaps)


def with_gaps(
    requests: Sequence[Conversation],
    gaps: Sequence[CompactionGap],
    counter: TokenCounter,
    *,
    filled: Sequence[Message] | None = None,
) -> list[Conversation]:
    """``requests`` with each gap's block after its summary, where the summary still leads.
    ``filled``: the summaries with their blocks (:func:`filled_summaries`), when already made
    for another list of the same session's requests (the filler is counted to size)."""
    out = list(requests)
    blocks = filled if filled is not None else filled_summaries(gaps, counter)
    for gap, message in zip(gaps, blocks, strict=True):
        for i, request in enumerate(out):
            messages = request.messages
            if messages and (messages[0] is gap.summary or messages[0] == gap.summary):
                out[i] = request.model_copy(update={"messages": (message, *messages[1:])})
    return out


def filled_summaries(gaps: Sequence[CompactionGap], counter: TokenCounter) -> tuple[Message, ...]:
    """Each gap's summary message with a text block after it that counts ``gap.tokens``."""
    return tuple(_filled(gap, counter) for gap in gaps)


def resumed_prefix(
    session: Session,
    counter: TokenCounter,
    recorded: Sequence[Usage] | None,
    requests: Sequence[Conversation],
    hidden_tokens: int,
) -> dict[int, int]:
    """Call index -> the hidden prefix's change in size from that call on (tokens, may be
    negative), at each system-level reset whose call recorded its usage. ``requests``: the
    recorded requests with their compaction gaps in place; ``hidden_tokens``: the size measured
    at call 1. Empty when no hidden prefix was measured."""
    if recorded is None or hidden_tokens <= 0:
        return {}
    out: dict[int, int] = {}
    for index, call in enumerate(session.calls):
        if index == 0 or call.cache_reset != "system" or call.exact:
            continue
        held = counter.count_conversation(strip_prior_thinking(requests[index]))
        hidden = recorded[index].total_input - held
        if hidden > 0 and abs(hidden - hidden_tokens) >= MIN_GAP_TOKENS:
            out[index] = hidden - hidden_tokens
    return out


def resized_prefix(prefix: Sequence[PrefixPart], change: int) -> tuple[PrefixPart, ...]:
    """``prefix`` with its system-level part grown by ``change`` (tools-level parts shrink only
    when the system part cannot absorb a negative change)."""
    parts = list(prefix)
    for i in reversed(range(len(parts))):
        if change == 0:
            break
        tokens = max(parts[i].tokens + change, 0)
        change -= tokens - parts[i].tokens
        parts[i] = parts[i].model_copy(update={"tokens": tokens})
    return tuple(parts)


def _filled(gap: CompactionGap, counter: TokenCounter) -> Message:
    """The summary message with a text block after it that counts ``gap.tokens`` tokens."""
    block = TextBlock(text=filler(gap.tokens, counter))
    return Message(role=gap.summary.role, content=(*gap.summary.blocks, block))


def filler(
    tokens: int,
    counter: TokenCounter,
    *,
    word: str = _FILLER_WORD,
    count: Callable[[str], int] | None = None,
) -> str:
    """A text of about ``tokens`` tokens under ``counter`` (within a few tokens): ``word``
    repeated; ``count`` measures a text where it is not counted as plain text (thinking)."""
    measure = count or counter.count_text
    words = max(tokens, 1)
    text = word * words
    for _ in range(4):  # the count is near linear in the words: a few secant steps
        got = measure(text)
        if got == tokens or got <= 0:
            break
        words = max(round(words * tokens / got), 1)
        text = word * words
    return text


__all__ = [
    "MIN_GAP_SHARE",
    "MIN_GAP_TOKENS",
    "CompactionGap",
    "compaction_gaps",
    "filled_summaries",
    "filler",
    "resized_prefix",
    "resumed_prefix",
    "with_gaps",
]
