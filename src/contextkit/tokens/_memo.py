"""The :class:`TokenCounter` protocol and :class:`MemoCounter`, the base that memoises per block
object and derives every count from ``count_text`` (so pricing a session whose calls share their
history costs one pass over the unique text); :class:`ApproxCounter` (characters / 4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, cast, runtime_checkable

from contextkit.messages import (
    Block,
    Conversation,
    Message,
    RedactedThinkingBlock,
    Tool,
    ToolResultBlock,
    extends,
)
from contextkit.tokens._text import _is_media, _new_parts, _plain_text, _tool_text

IMAGE_TOKENS_DEFAULT = 1600
"""Tokens charged for an image of unknown size (the documented maximum for a 1.15 MP image)."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens. Implementations say which counter produced a number through ``name``."""

    @property
    def name(self) -> str: ...

    def count_text(self, text: str) -> int: ...

    def count_block(self, block: Block) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_tool(self, tool: Tool) -> int: ...

    def count_conversation(self, conversation: Conversation) -> int: ...


class MemoCounter:
    """Base counter: memoises by block object and derives every count from ``count_text``.

    Subclasses implement ``_count_text`` and may override the overhead attributes.
    """

    per_message: int = 3
    per_tool: int = 0
    fixed: int = 0

    def __init__(self) -> None:
        # id(obj) -> count. Every counted object is kept alive in _kept, so no other object can
        # take its id while this counter lives: a hit needs no identity check, and the memo
        # allocates no tuple per entry (fewer objects for the garbage collector to track).
        self._memo: dict[int, int] = {}
        self._kept: list[object] = []
        # text -> count: distinct blocks often carry the same text (a file read twice, the same
        # placeholder for every evicted result), and the unique text is what should be tokenised.
        self._texts: dict[str, int] = {}
        self._tallies: list[tuple[Sequence[Message], int]] = []
        self._walked: set[int] = set()
        """ids of the messages :meth:`prime` walked (kept alive in ``_kept``): pricing a replay's
        views after priming its tape walks only the messages a strategy made."""

    @property
    def name(self) -> str:
        return type(self).__name__

    def _count_text(self, text: str) -> int:
        raise NotImplementedError

    def count_text(self, text: str) -> int:
        hit = self._texts.get(text)
        if hit is None:
            hit = self._texts[text] = self._count_text(text) if text else 0
        return hit

    def prime(
        self, requests: Iterable[Conversation], responses: Iterable[Message | None] = ()
    ) -> None:
        """Count the parts of many requests (a session's, before it is priced) in one pass.

        Only an optimisation, counts are unchanged: the distinct texts not counted yet are
        tokenised back to back, where the tokenizer's tables stay in the processor's cache
        (tokenising them one at a time between other work costs about a third more), then the
        blocks are memoised, so later counts of them are lookups."""
        memo = self._memo
        texts, blocks, walked = _new_parts(requests, responses, memo, self._walked)
        self._kept.extend(walked)  # their ids stay theirs: a later prime skips them
        self._learn(texts)
        for block, text in blocks:
            if id(block) not in memo:  # a block met twice, or media nested in a counted result
                memo[id(block)] = int(self._block(block, text))
                self._kept.append(block)

    def _learn(self, texts: Iterable[str]) -> None:
        """Count the non-empty ``texts`` not counted yet, all at once, into the memo."""
        known = self._texts
        new = [t for t in texts if t not in known]
        for text, count in zip(new, self._count_texts(new), strict=True):
            known[text] = count

    def _count_texts(self, texts: list[str]) -> list[int]:
        """Counts of many distinct, non-empty texts (subclasses may batch)."""
        return [self._count_text(t) for t in texts]

    def _memoised(self, obj: object, compute: Callable[[], int]) -> int:
        hit = self._memo.get(id(obj))
        if hit is not None:
            return hit
        value = self._memo[id(obj)] = int(compute())
        self._kept.append(obj)
        return value

    def count_block(self, block: Block) -> int:
        # The memo inlined (no closure per call): this is the hot path of pricing a session.
        hit = self._memo.get(id(block))
        if hit is not None:
            return hit
        value = self._memo[id(block)] = int(self._block(block, _plain_text(block)))
        self._kept.append(block)
        return value

    def _block(self, block: Block, text: str | None) -> int:
        """Tokens of ``block``, whose text as the model reads it is ``text`` (:func:`_plain_text`,
        worked out by the caller: None for a part that counts no text)."""
        if text is None:
            if isinstance(block, RedactedThinkingBlock):
                # The payload is encrypted; its length is the only hint of the original size.
                return math.ceil(len(block.data) * 3 / 16)
            return IMAGE_TOKENS_DEFAULT
        tokens = self.count_text(text)
        if isinstance(block, ToolResultBlock) and isinstance(block.content, tuple):
            tokens += sum(self.count_block(b) for b in block.content if _is_media(b))
        return tokens

    def count_message(self, message: Message) -> int:
        hit = self._memo.get(id(message))
        if hit is not None:
            return hit
        content = message.content
        if isinstance(content, str):
            value = self.per_message + self.count_text(content)
        else:
            count = self.count_block
            value = self.per_message + sum([count(b) for b in content])
        self._memo[id(message)] = value
        self._kept.append(message)
        return value

    def count_tool(self, tool: Tool) -> int:
        # The memo inlined (no closure per call): every count of a whole request counts its tools.
        hit = self._memo.get(id(tool))
        if hit is not None:
            return hit
        value = self._memo[id(tool)] = self.per_tool + self.count_text(_tool_text(tool))
        self._kept.append(tool)
        return value

    def count_system(self, conversation: Conversation) -> int:
        if isinstance(conversation.system, str):
            return self.count_text(conversation.system)
        return sum(self.count_block(b) for b in conversation.system_blocks)

    def count_conversation(self, conversation: Conversation) -> int:
        return (
            self.fixed
            + sum(self.count_tool(t) for t in conversation.tools)
            + self.count_system(conversation)
            + self._count_messages(conversation.messages)
        )

    def _count_messages(self, messages: Sequence[Message]) -> int:
        """The messages' total. Callers count a growing history at every call: a history that
        extends one of the last few counted (the same or equal objects: :func:`extends`) costs
        only its new messages; otherwise the memo is looked up in C (map over ids) and
        ``count_message`` is called only for messages not counted yet."""
        tallies = self._tallies
        hit = next(
            (
                (i, len(before), total)
                for i, (before, total) in enumerate(tallies)
                if extends(messages, before)
            ),
            None,
        )
        if hit is None:
            i, total = len(tallies), self._count_all(messages)
        else:
            i, n, total = hit
            total += self._count_all(messages[n:]) if n < len(messages) else 0
        del tallies[i : i + 1]
        tallies.insert(0, (messages, total))
        del tallies[self._TALLIES :]
        return total

    _TALLIES = 4
    """Histories remembered for :meth:`_count_messages` (a replay walks a tape and a view)."""

    def _count_all(self, messages: Sequence[Message]) -> int:
        counts = list(map(self._memo.get, map(id, messages)))
        try:
            first = counts.index(None)  # usually the newest messages only
        except ValueError:
            return sum(cast("list[int]", counts))
        done = sum(cast("list[int]", counts[:first]))
        return done + sum(map(self.count_message, messages[first:]))


class ApproxCounter(MemoCounter):
    """About four characters a token: the fallback when no tokenizer encoding can be loaded."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        super().__init__()
        self.chars_per_token = chars_per_token

    @property
    def name(self) -> str:
        return f"approx:{self.chars_per_token:g}chars"

    def _count_text(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


__all__ = [
    "IMAGE_TOKENS_DEFAULT",
    "ApproxCounter",
    "MemoCounter",
    "TokenCounter",
]
