"""Cache breakpoints on replayed views, placed the way the engine places them, at linear cost.

Contract: :func:`place_marks` returns each view with ``cache_control`` breakpoints exactly where
``engine.place_breakpoints`` puts them (the recording's TTL on every mark it places): the requests
a replay would have sent (``Replay.requests``, ``--dump-requests``). Pricing does not need them:
the cache simulator's ``engine`` placement puts breakpoints at the same positions without copies
(``tests/cache/test_cache.py`` and ``tests/replay/test_corpus_strategies.py`` check that both price
alike).

Why a module of its own: ``place_breakpoints`` builds fresh objects for the marked tools, system
block and messages at every call. Here one marked copy per original part is made and handed out
again at every call that marks it the same way (requests share their parts as the views do), and
existing breakpoints are counted over what each view appended, not over the whole view.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from contextkit.cache import TTL_1H_S
from contextkit.engine import BreakpointTally, place_breakpoints
from contextkit.messages import Conversation, Message


@dataclass
class _Twins:
    """One marked copy per original part."""

    one_hour: bool = False
    _copies: dict[int, tuple[object, Any, Any]] = field(default_factory=dict)
    """id(original) -> (original, the engine's marked copy, the copy handed out)."""
    existing: BreakpointTally = field(default_factory=BreakpointTally)
    """The breakpoints each view already carries, counted over what it appended."""

    def same(self, original: Any, marked: Any) -> Any:
        if marked is original:
            return marked
        hit = self._copies.get(id(original))
        if hit is not None and hit[0] is original and hit[1] == marked:
            return hit[2]
        copy = _retimed(original, marked, self.one_hour)
        self._copies[id(original)] = (original, marked, copy)
        return copy

    def reuse(self, view: Conversation, placed: Conversation) -> Conversation:
        if placed is view:
            return view
        messages = list(placed.messages)
        changed = compress(range(len(messages)), map(operator.is_not, view.messages, messages))
        for i in changed:
            messages[i] = self.same(view.messages[i], messages[i])
        # Only the fields placement changed: ``model_copy`` marks what it updates as set, and
        # ``to_payload`` would then write fields the request never had (``"tools": []``).
        update: dict[str, Any] = {"messages": tuple(messages)}
        if placed.tools is not view.tools:
            update["tools"] = self.same(view.tools, placed.tools)
        if placed.system is not view.system:
            update["system"] = self.same(view.system, placed.system)
        return placed.model_copy(update=update)


def _retimed(original: Any, value: Any, one_hour: bool) -> Any:
    """``value`` (the engine's marked copy of a message, or of the tools / system blocks) with
    the marks the engine placed at 1 hour if asked; the parts it left as they were (marks the
    request already carried included) stay as they were, as the simulator's ``engine``
    placement prices them."""
    if not one_hour:
        return value
    if isinstance(value, Message):
        if isinstance(value.content, str):
            return value
        before = original.blocks if isinstance(original, Message) else ()
        blocks = _retimed_parts(before, value.content)
        same = all(a is b for a, b in zip(blocks, value.content, strict=True))
        return value if same else value.model_copy(update={"content": blocks})
    if isinstance(value, tuple):
        return _retimed_parts(original if isinstance(original, tuple) else (), value)
    return value


def _retimed_parts(before: tuple[Any, ...], parts: tuple[Any, ...]) -> tuple[Any, ...]:
    kept = {id(p) for p in before}
    return tuple(p if id(p) in kept else _retimed_part(p) for p in parts)


def _retimed_part(part: Any) -> Any:
    mark = (part.model_extra or {}).get("cache_control")
    if not isinstance(mark, dict) or mark.get("ttl"):
        return part
    return part.model_copy(update={"cache_control": {**mark, "ttl": "1h"}})


def place_marks(views: Sequence[Conversation], ttl_s: int | None) -> list[Conversation]:
    """The views with breakpoints (the previous request's end where still held). The engine
    marks with the default 5-minute TTL; a recording that wrote 1-hour entries gets 1-hour
    marks, or every pause over five minutes would count as a miss. ``ttl_s=None`` (a provider
    without breakpoints) leaves the views as they are."""
    if ttl_s is None:
        return list(views)
    twins = _Twins(one_hour=ttl_s >= TTL_1H_S)
    out: list[Conversation] = []
    previous: Message | None = None
    for view in views:
        placed = place_breakpoints(view, previous, existing=twins.existing(view))
        out.append(twins.reuse(view, placed))
        previous = view.messages[-1] if view.messages else None
    return out


__all__ = ["place_marks"]
