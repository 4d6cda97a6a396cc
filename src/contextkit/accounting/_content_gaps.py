"""Content the harness added to, or cleared from, a session's requests mid-session without a trace
in its file, sized from the billed usage.

The hidden system prompt is measured at call 1 and the content restored after a compaction at the
call after it (:mod:`contextkit.accounting._gaps`). Between those, a transcript can still differ
from what was sent: Claude Code attaches memory files of the folders a tool touched (a nested
``CLAUDE.md``: 3k tokens at one call of a corpus session, carried by every later call) and, with
server-side context editing, its old tool results are cleared (a subagent's billed input drops by
35k tokens at one call, the size of its four oldest results, and stays down). Counted from the
file, every later call is off by that much.

Both show as a STEP in the residual of a call (its recorded total input less the count of its
request and of the hidden prefix): a jump between two consecutive calls of at least
:data:`MIN_STEP_TOKENS` and :data:`MIN_STEP_SHARE` of the call's input that the next calls
(:data:`PERSIST_CALLS` of them, at least one) keep to :data:`PERSIST_SHARE` of it. Slow drift
(the counter's calibration error grows with the history) never makes a step; a call opening
after a compaction, a harness reset or an exact request is an anchor, never a step (its own
measurement is elsewhere).

- A step up is content ADDED at that call: it rides as one block of that many tokens at the end of
  the call's last message (where Claude Code puts attachments), keyed by the ids of the tool
  results that message answers, so a strategy's view that rebuilt the message (an eviction
  placeholder) still carries it: the harness would have sent it there too.
- A step down is tool results CLEARED from that call on, oldest first (what server-side clearing
  does), as many as the drop measures; taken only where the oldest results add up to the drop
  within :data:`CLEAR_TOLERANCE`. In every view they are the placeholder from that call on,
  whatever form the strategy gave them (an eviction placeholder is about as small).

Contract: :func:`content_gaps` finds them on the recorded requests (with the compaction gaps in
place); :func:`with_content_gaps` puts them into any list of requests aligned with the calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from contextkit.accounting._gaps import filler
from contextkit.cache import CacheConfig, request_sizes
from contextkit.messages import Block, Conversation, Message, TextBlock, ToolResultBlock
from contextkit.session import Session, Usage
from contextkit.tokens import TokenCounter

MIN_STEP_TOKENS = 1_000
MIN_STEP_SHARE = 0.02
"""Above the per-call noise of the count (median 1.1-1.3% held out, with thinking sized from the
bill); at 3%, steps of 2.5-2.7% that persist (a 96-call session's attachments) went unseen."""
PERSIST_CALLS = 3
PERSIST_SHARE = 0.7
CLEAR_TOLERANCE = 0.15
CLEARED_TEXT = "[tool result cleared by the harness]"


@dataclass(frozen=True)
class ContentGap:
    """From call ``call`` on: ``tokens`` more (``added``) or fewer (``cleared``) than the file
    holds. ``added``: the block ``text`` rides at the end of the message answering the tool
    results ``keys`` (or, without tool results, of the message whose role and texts are ``host``:
    the same message in a view, whatever marks a strategy gave it). ``cleared``:
    the tool results ``keys`` are replaced by a short placeholder."""

    call: int
    kind: Literal["added", "cleared"]
    tokens: int
    keys: frozenset[str]
    text: str = ""
    host: tuple[str, tuple[str, ...]] | None = None


def content_gaps(
    session: Session,
    requests: Sequence[Conversation],
    counter: TokenCounter,
    config: CacheConfig,
    recorded: Sequence[Usage] | None,
    hidden_prefix_tokens: int,
) -> tuple[ContentGap, ...]:
    """The steps of ``session``'s residual (see the module), on its recorded ``requests``."""
    calls = session.calls
    if recorded is None or hidden_prefix_tokens <= 0 or len(requests) < 3:
        return ()
    sizes = request_sizes(requests, config, counter)
    residual = [
        u.total_input - s - hidden_prefix_tokens for u, s in zip(recorded, sizes, strict=True)
    ]
    anchors = set(session.compactions)
    anchors |= {i for i, c in enumerate(calls) if c.exact or c.cache_reset is not None}
    gaps: list[ContentGap] = []
    for i in range(1, len(requests)):
        if i in anchors or not requests[i].messages:
            continue
        step = residual[i] - residual[i - 1]
        if abs(step) < max(MIN_STEP_TOKENS, MIN_STEP_SHARE * recorded[i].total_input):
            continue
        later = []
        for j in range(i + 1, min(i + 1 + PERSIST_CALLS, len(requests))):
            if j in anchors:
                break
            later.append(residual[j] - residual[i - 1])
        if not later or not all(x * step >= PERSIST_SHARE * step * step for x in later):
            continue
        gap = _added(i, requests[i], step, counter) if step > 0 else None
        if step < 0:
            gap = _cleared(i, requests[i], -step, counter, gaps)
        if gap is None:
            continue
        gaps.append(gap)
        for j in range(i, len(requests)):  # later steps are measured with this one in place
            if _carries(requests[j], gap):
                residual[j] -= gap.tokens
    return tuple(gaps)


def _added(call: int, request: Conversation, tokens: int, counter: TokenCounter) -> ContentGap:
    host = request.messages[-1]
    keys = frozenset(_result_ids(host))
    text = filler(tokens, counter)
    return ContentGap(call, "added", tokens, keys, text=text, host=None if keys else _key(host))


def _cleared(
    call: int,
    request: Conversation,
    drop: int,
    counter: TokenCounter,
    earlier: Sequence[ContentGap],
) -> ContentGap | None:
    """The oldest tool results of ``request`` not cleared yet whose clearing removes ``drop``
    tokens (within the tolerance), or None."""
    done = frozenset().union(*(g.keys for g in earlier if g.kind == "cleared"))
    placeholder = counter.count_text(CLEARED_TEXT)
    removed, keys = 0, set[str]()
    for message in request.messages:
        for block in message.blocks:
            if not isinstance(block, ToolResultBlock) or block.tool_use_id in done:
                continue
            if removed >= drop * (1 - CLEAR_TOLERANCE):
                break
            removed += max(counter.count_text(block.text) - placeholder, 0)
            keys.add(block.tool_use_id)
    if not keys or abs(removed - drop) > CLEAR_TOLERANCE * drop:
        return None
    return ContentGap(call, "cleared", -removed, frozenset(keys))


def _key(message: Message) -> tuple[str, tuple[str, ...]]:
    """A message as a strategy's view may rebuild it: its role and texts (marks left out)."""
    return message.role, tuple(b.text for b in message.blocks if isinstance(b, TextBlock))


def _result_ids(message: Message) -> list[str]:
    return [b.tool_use_id for b in message.blocks if isinstance(b, ToolResultBlock)]


def _carries(request: Conversation, gap: ContentGap) -> bool:
    if gap.host is not None:
        return any(_key(m) == gap.host for m in request.messages)
    return any(k in gap.keys for m in request.messages for k in _result_ids(m))


def with_content_gaps(
    requests: Sequence[Conversation], gaps: Sequence[ContentGap]
) -> list[Conversation]:
    """``requests`` (one per call, in order) with each gap in place from its call on. Messages
    rebuilt once and shared by every request that holds the same original, so the cache simulator
    sees one unchanged prefix."""
    out = list(requests)
    if not gaps:
        return out
    memo: dict[tuple[int, int], tuple[Message, Message]] = {}
    for index, request in enumerate(requests):
        active = [g for g in gaps if g.call <= index]  # gaps come in call order
        if not active:
            continue
        messages = list(request.messages)
        changed = False
        for m, message in enumerate(messages):
            hit = memo.get((id(message), len(active)))
            if hit is not None and hit[0] is message:
                new = hit[1]
            else:
                new = _edited(message, active)
                memo[id(message), len(active)] = (message, new)
            if new is not message:
                messages[m], changed = new, True
        if changed:
            out[index] = request.model_copy(update={"messages": tuple(messages)})
    return out


def _edited(message: Message, gaps: Sequence[ContentGap]) -> Message:
    """``message`` as the harness sent it under ``gaps`` (the same object when none applies)."""
    hosts = {g.host for g in gaps if g.host is not None}
    key = _key(message) if hosts else None
    if isinstance(message.content, str) and key not in hosts:
        return message
    ids = _result_ids(message)
    cleared = frozenset().union(*(g.keys for g in gaps if g.kind == "cleared"))
    added = [
        g.text
        for g in gaps
        if g.kind == "added" and ((key is not None and g.host == key) or g.keys.intersection(ids))
    ]
    if not added and not cleared.intersection(ids):
        return message
    blocks = [
        b.model_copy(update={"content": CLEARED_TEXT})
        if isinstance(b, ToolResultBlock) and b.tool_use_id in cleared
        else b
        for b in message.blocks
    ]
    mark = (blocks[-1].__pydantic_extra__ or {}).get("cache_control") if blocks else None
    if added and mark is not None:  # the breakpoint stays at the end of the message, as sent
        blocks[-1] = _unmarked(blocks[-1])
        blocks += [TextBlock(text=text) for text in added[:-1]]
        blocks.append(TextBlock.model_validate({"text": added[-1], "cache_control": mark}))
    else:
        blocks += [TextBlock(text=text) for text in added]
    return Message(role=message.role, content=tuple(blocks))


def _unmarked(block: Block) -> Block:
    """``block`` without its breakpoint, and otherwise as it was: the same fields set (a field
    written out with its default would change the block's JSON, so its cache key, and the
    request's prefix would no longer match the same message sent unmarked at another call)."""
    data = block.model_dump(exclude={"cache_control"}, exclude_unset=True)
    return type(block).model_validate(data)


def rescaled_gap(gap: ContentGap, ratio: float, counter: TokenCounter) -> ContentGap:
    """``gap`` on another model's tokenizer, ``ratio`` its tokens per token of the recorded
    one's (what was cleared stays cleared)."""
    if gap.kind != "added":
        return gap
    tokens = round(gap.tokens * ratio)
    return replace(gap, tokens=tokens, text=filler(tokens, counter))


def describe_content_gaps(steps: Sequence[ContentGap]) -> str:
    """A note on ``steps`` for a ledger."""
    added = [g for g in steps if g.kind == "added"]
    cleared = [g for g in steps if g.kind == "cleared"]
    parts = []
    if added:
        sizes = ", ".join(f"{g.tokens:,} tokens at call {g.call}" for g in added)
        parts.append(f"content the file does not hold (attachments): {sizes}")
    if cleared:
        sizes = ", ".join(f"{len(g.keys)} ({-g.tokens:,} tokens) at call {g.call}" for g in cleared)
        parts.append(f"tool results the harness cleared without a trace: {sizes}")
    return "; ".join(parts) + ", measured from the recorded usage (steps the next calls keep)"


__all__ = [
    "CLEARED_TEXT",
    "ContentGap",
    "content_gaps",
    "describe_content_gaps",
    "rescaled_gap",
    "with_content_gaps",
]
