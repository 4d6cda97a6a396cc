"""Structure of a message array that every strategy must respect, in one place.

Contract: these helpers read a tuple of :class:`Message` and never build invalid arrays.

- A *turn start* is a user message without ``tool_result`` blocks: a person (or harness) speaking,
  not a tool answering. Turns run from one turn start to the next.
- :func:`removable` says whether a contiguous span can be cut out so that what remains still pairs
  every ``tool_use`` with its ``tool_result`` in the very next message, keeps roles alternating and
  starts with a user message. A span is never cut between a ``tool_use`` and its result, nor inside
  a parallel group (all results of one assistant message travel in one user message).
- :func:`first_changed` locates the earliest position, in prompt-cache order (tools, system,
  messages), where two views differ: everything from there on is re-written to the cache.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import NamedTuple, cast

from contextkit.messages import (
    Block,
    Conversation,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    extends,
)
from contextkit.tokens import TokenCounter


class MessageInfo(NamedTuple):
    """What the strategies ask about one message, derived once per message object."""

    turn_start: bool
    tool_uses: bool
    thinking: bool
    results: tuple[tuple[int, ToolResultBlock], ...]
    """(block index, result) of every tool result in the message."""


_MEMO: dict[int, tuple[Message, MessageInfo]] = {}
_MEMO_LIMIT = 200_000


_CLEARS: list[Callable[[], None]] = []


def forget_with_messages(clear: Callable[[], None]) -> None:
    """Register ``clear``, a function that empties a memo keyed by message (or view part)
    identity, for :func:`clear_message_memo` to call."""
    _CLEARS.append(clear)


def clear_message_memo() -> None:
    """Forget every identity memo of the strategies: :func:`info`'s and those registered with
    :func:`forget_with_messages` (the eviction's live results, the heads' token counts). Each is
    bounded but keeps what it holds alive (up to 200,000 messages; up to 1,000 heads, each with
    the counter that counted them, and so that counter's memo of a whole session): a process that
    replays many independent sessions one after another (a fleet worker) calls this between
    them, so what it holds is one session's messages, not those of the last thousands."""
    _MEMO.clear()
    for clear in _CLEARS:
        clear()


def info(message: Message) -> MessageInfo:
    """Structural facts of ``message``, memoised by identity.

    Strategies run at every call over the whole view, and views share their message objects from
    call to call; memoising here keeps a call on a 1,000-message view well under a millisecond.
    The memo holds the message itself (so its id cannot be reused) and is bounded.
    """
    hit = _MEMO.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    blocks = () if isinstance(message.content, str) else message.content
    results: list[tuple[int, ToolResultBlock]] = []
    uses = thinking = False
    for j, b in enumerate(blocks):  # one pass: every new message of a replay comes through here
        if isinstance(b, ToolResultBlock):
            results.append((j, b))
        elif isinstance(b, ToolUseBlock):
            uses = True
        elif isinstance(b, ThinkingBlock | RedactedThinkingBlock):
            thinking = True
    derived = MessageInfo(
        turn_start=message.role == "user" and not results,
        tool_uses=uses,
        thinking=thinking,
        results=tuple(results),
    )
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[id(message)] = (message, derived)
    return derived


def has_tool_results(message: Message) -> bool:
    return bool(info(message).results)


def has_tool_uses(message: Message) -> bool:
    return info(message).tool_uses


def is_turn_start(message: Message) -> bool:
    return info(message).turn_start


def turn_starts(messages: Sequence[Message]) -> tuple[int, ...]:
    """Indices of the messages that open a turn (user messages that carry no tool result)."""
    return tuple(i for i, m in enumerate(messages) if info(m).turn_start)


def last_turn_start(messages: Sequence[Message]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if info(messages[i]).turn_start:
            return i
    return None


def removable(messages: Sequence[Message], start: int, stop: int) -> bool:
    """True when ``messages[start:stop]`` can be cut out and the rest stays a valid array.

    The last message is never removable (it is what the model answers next).
    """
    if not 0 <= start < stop < len(messages):
        return False
    after = messages[stop]
    if has_tool_results(after):
        return False  # its results answer messages[stop - 1], which would be cut
    if start == 0:
        return after.role == "user"
    before = messages[start - 1]
    # before's tool_uses are answered in messages[start], which would be cut.
    return before.role != after.role and not has_tool_uses(before)


def tool_uses_by_id(messages: Sequence[Message]) -> dict[str, tuple[int, ToolUseBlock]]:
    """Every client ``tool_use`` by id, with the index of the assistant message holding it."""
    found: dict[str, tuple[int, ToolUseBlock]] = {}
    for i, message in enumerate(messages):
        if message.role != "assistant" or isinstance(message.content, str):
            continue
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                found[block.id] = (i, block)
    return found


# --------------------------------------------------------------------------------------------------
# Tool-result totals asked at every call of a growing view
#
# A trigger asks for the tool results' total of the whole view at every call. Even looked up in C,
# a memo visited per message costs more per call than the call's new messages do, so the totals of
# the last views a counter saw are kept (per counter, weakly: they go with the counter) and a view
# that extends one of them (the same message objects: checked by identity, in C) pays only for
# what it appended. Anything else is counted in full. (Whole-view totals are the counter's own:
# ``MemoCounter.count_conversation`` keeps them the same way.)

_SEEN_PER_KIND = 4
"""Views remembered per counter: a replay walks a few threads at once."""


class _Seen(NamedTuple):
    messages: Sequence[Message]
    total: int


class _Totals:
    """A counter's remembered totals, and each message's tool-result tokens by identity."""

    def __init__(self) -> None:
        self.seen: dict[str, list[_Seen]] = {}
        # id(message) -> tool-result tokens. Every message in it is kept alive in _kept (as
        # MemoCounter keeps what it counted), so its id cannot be reused: looked up in C.
        self.results: dict[int, int] = {}
        self._kept: list[Message] = []

    def result_tokens(self, message: Message, counter: TokenCounter) -> int:
        tokens = self.results[id(message)] = _result_tokens(message, counter)
        self._kept.append(message)
        return tokens


_TOTALS: weakref.WeakKeyDictionary[TokenCounter, _Totals] = weakref.WeakKeyDictionary()


def _totals(counter: TokenCounter) -> _Totals | None:
    try:
        found = _TOTALS.get(counter)
        if found is None:
            found = _TOTALS[counter] = _Totals()
    except TypeError:  # a counter that cannot be weakly referenced: nothing is remembered
        return None
    return found


def _grown(
    seen: list[_Seen], messages: Sequence[Message], part: Callable[[Message], int]
) -> int | None:
    """The total of ``messages`` from a remembered view they extend (the same or equal messages:
    equal ones have equal totals), None when none matches."""
    for k, entry in enumerate(seen):
        n = len(entry.messages)
        if extends(messages, entry.messages):
            del seen[k]
            return entry.total + sum(map(part, messages[n:]))
    return None


def _remember(seen: list[_Seen], entry: _Seen) -> None:
    seen.insert(0, entry)
    del seen[_SEEN_PER_KIND:]


def _result_tokens(message: Message, counter: TokenCounter) -> int:
    if message.role != "user":
        return 0
    return sum(counter.count_block(b) for _, b in info(message).results)


def tool_result_tokens(messages: Sequence[Message], counter: TokenCounter) -> int:
    """Tokens of the tool results in user messages, counted by ``counter``.

    Incremental over a growing view (see above); after an edit each message's own total is
    looked up in C, so only the edited messages are counted again.
    """
    totals = _totals(counter)
    if totals is None:
        return sum(_result_tokens(m, counter) for m in messages)
    seen = totals.seen.setdefault("results", [])
    total = _grown(seen, messages, partial(_message_result_tokens, totals, counter))
    if total is None:
        total = _all_result_tokens(totals, messages, counter)
    _remember(seen, _Seen(messages, total))
    return total


def _message_result_tokens(totals: _Totals, counter: TokenCounter, message: Message) -> int:
    known = totals.results.get(id(message))
    return totals.result_tokens(message, counter) if known is None else known


def _all_result_tokens(totals: _Totals, messages: Sequence[Message], counter: TokenCounter) -> int:
    counts = list(map(totals.results.get, map(id, messages)))
    try:
        first = counts.index(None)  # usually the edited and the newest messages only
    except ValueError:
        return sum(cast("list[int]", counts))
    total = sum(cast("list[int]", counts[:first]))
    for message, known in zip(messages[first:], counts[first:], strict=True):
        total += totals.result_tokens(message, counter) if known is None else known
    return total


def message_tokens(messages: Iterable[Message], counter: TokenCounter) -> list[int]:
    return [counter.count_message(m) for m in messages]


def with_blocks(message: Message, blocks: Sequence[Block]) -> Message:
    """The message with other content blocks (every other field kept)."""
    return message.model_copy(update={"content": tuple(blocks)})


def replace_messages(view: Conversation, changed: Mapping[int, Message]) -> Conversation:
    """The view with some messages replaced by index; the others are the same objects."""
    if not changed:
        return view
    messages = list(view.messages)  # copied in C; only the changed slots are touched
    slots = [i for i in changed if 0 <= i < len(messages)]  # other indices name no message
    for i in slots:
        messages[i] = changed[i]
    if all(messages[i] is view.messages[i] for i in slots):
        return view
    # What ``with_messages`` would return, without comparing the changed messages field by field.
    return view.model_copy(update={"messages": tuple(messages)})


def text_block(text: str) -> TextBlock:
    return TextBlock(text=text)


def first_changed(old: Conversation, new: Conversation) -> tuple[str, int] | None:
    """Where ``new`` first differs from ``old`` in cache order: ("tools"|"system", 0) or
    ("messages", index); None when they are the same."""
    if old is new:
        return None
    if old.tools != new.tools:
        return ("tools", 0)
    if old.system != new.system:
        return ("system", 0)
    for i, (a, b) in enumerate(zip(old.messages, new.messages, strict=False)):
        if a is not b and a != b:
            return ("messages", i)
    if len(old.messages) != len(new.messages):
        return ("messages", min(len(old.messages), len(new.messages)))
    return None


def prefix_tokens(view: Conversation, where: tuple[str, int], counter: TokenCounter) -> int:
    """Tokens of ``view`` strictly before position ``where`` (as given by :func:`first_changed`)."""
    part, index = where
    tools = sum(counter.count_tool(t) for t in view.tools)
    if part == "tools":
        return 0
    if part == "system":
        return tools
    system = counter.count_conversation(view.model_copy(update={"messages": (), "tools": ()}))
    return tools + system + sum(message_tokens(view.messages[:index], counter))


__all__ = [
    "MessageInfo",
    "first_changed",
    "has_tool_results",
    "has_tool_uses",
    "info",
    "is_turn_start",
    "last_turn_start",
    "message_tokens",
    "prefix_tokens",
    "removable",
    "replace_messages",
    "text_block",
    "tool_result_tokens",
    "tool_uses_by_id",
    "turn_starts",
    "with_blocks",
]
