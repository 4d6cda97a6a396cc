"""Cache breakpoints on a request: where the engine puts ``cache_control`` marks so the prefix a
provider caches stays stable (at most :data:`MAX_BREAKPOINTS`; thinking blocks never marked), and
the tally of the marks a request already holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from pydantic import BaseModel

from contextkit.messages import (
    Block,
    Conversation,
    Message,
    RedactedThinkingBlock,
    ThinkingBlock,
    extends,
)

EPHEMERAL: Mapping[str, str] = {"type": "ephemeral"}

MAX_BREAKPOINTS = 4
"""The most ``cache_control`` breakpoints the provider accepts in one request."""


def _cacheable(block: Block) -> bool:
    return not isinstance(block, ThinkingBlock | RedactedThinkingBlock)


def _has_mark(value: BaseModel) -> bool:
    extra = value.__pydantic_extra__
    return extra is not None and extra.get("cache_control") is not None


def _message_marks(message: Message) -> int:
    return 0 if isinstance(message.content, str) else sum(map(_has_mark, message.content))


class BreakpointTally:
    """What :func:`count_breakpoints` says of each view of a session, at linear cost: asked of
    the whole view at every call, a view that extends the previous one (the same or equal
    objects, :func:`~contextkit.messages.extends`) costs its new messages; any other is summed
    from a per-message memo looked up in C (views share messages; the memo keeps what it
    counted, so no id is reused)."""

    def __init__(self) -> None:
        self._memo: dict[int, int] = {}
        self._kept: list[Message] = []
        self._last: tuple[Sequence[Message], int] = ((), 0)
        """The last view's messages and the breakpoints they carry."""

    def __call__(self, view: Conversation) -> int:
        messages = view.messages
        before, total = self._last
        n = len(before)
        if not extends(messages, before):
            n, total = 0, 0
        total += self._messages(messages[n:])
        self._last = (messages, total)
        head = _has_mark(view) + sum(map(_has_mark, view.tools))
        return head + sum(map(_has_mark, view.system_blocks)) + total

    def _messages(self, messages: Sequence[Message]) -> int:
        memo = self._memo
        counts = list(map(memo.get, map(id, messages)))
        for i in [i for i, c in enumerate(counts) if c is None]:  # new messages only
            message = messages[i]
            counts[i] = memo[id(message)] = _message_marks(message)
            self._kept.append(message)
        return sum(cast("list[int]", counts))


def count_breakpoints(request: Conversation) -> int:
    """The ``cache_control`` breakpoints a request carries (automatic caching counts as one)."""
    found = _has_mark(request) + sum(map(_has_mark, request.tools))
    found += sum(map(_has_mark, request.system_blocks))
    return found + sum(map(_message_marks, request.messages))


def mark_message(message: Message) -> Message:
    """The message with a breakpoint on its last block that may carry one (or unchanged)."""
    blocks = message.blocks
    for i in range(len(blocks) - 1, -1, -1):
        if _cacheable(blocks[i]):
            if _has_mark(blocks[i]):
                return message
            marked = blocks[i].model_copy(update={"cache_control": dict(EPHEMERAL)})
            return message.model_copy(update={"content": (*blocks[:i], marked, *blocks[i + 1 :])})
    return message


def _previous_index(view: Conversation, previous_end: Message | None) -> int | None:
    if previous_end is None:
        return None
    for i in range(len(view.messages) - 2, -1, -1):
        if view.messages[i] is previous_end:
            return i
    return None


def place_breakpoints(
    view: Conversation,
    previous_end: Message | None = None,
    *,
    existing: int | None = None,
) -> Conversation:
    """Breakpoints where the prefix stays stable, never more than four in all.

    In order of value: the last message (written for the next call); the last message of the
    previous request when the view still holds it (so a call that appends more than 20 blocks
    still reads the entry the previous call wrote); the end of system and the end of tools (they
    change rarely and survive a compaction of the messages). Breakpoints the request already
    carries count against the four (``existing``: their number, when the caller knows it);
    thinking blocks never get one.
    """
    room = MAX_BREAKPOINTS - (count_breakpoints(view) if existing is None else existing)
    messages = list(view.messages)
    targets = [len(messages) - 1] if messages else []
    previous = _previous_index(view, previous_end)
    if previous is not None:
        targets.append(previous)
    update: dict[str, Any] = {}
    for i in targets:
        if room > 0 and messages[i] is not (marked := mark_message(messages[i])):
            messages[i], room = marked, room - 1
            update["messages"] = tuple(messages)
    system = view.system_blocks
    if room > 0 and view.system is not None and system and not _has_mark(system[-1]):
        marked_block = system[-1].model_copy(update={"cache_control": dict(EPHEMERAL)})
        update["system"], room = (*system[:-1], marked_block), room - 1
    if room > 0 and view.tools and not _has_mark(view.tools[-1]):
        last = view.tools[-1].model_copy(update={"cache_control": dict(EPHEMERAL)})
        update["tools"] = (*view.tools[:-1], last)
    return view.model_copy(update=update) if update else view


__all__ = [
    "EPHEMERAL",
    "MAX_BREAKPOINTS",
    "BreakpointTally",
    "count_breakpoints",
    "mark_message",
    "place_breakpoints",
]
