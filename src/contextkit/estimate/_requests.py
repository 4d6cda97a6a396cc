"""Request edits behind the what-ifs: add tool schemas, pad the system prompt, retime breakpoints.

Contract: every edit is a pure function of a request that keeps structural sharing: an edited part
(the tools tuple, the system prompt, a marked message) is rebuilt once per distinct original object
(:class:`Editor` memoises by identity), so consecutive edited requests still share their unchanged
messages and the cache simulator's incremental flattening stays O(new blocks) per call.

Sizes are measured with the model's counter: :func:`synthetic_tools` builds ``n`` tool schemas of
about ``tokens`` each, :func:`padding_text` a system-prompt addition of about ``tokens``; callers
report the counted size, not the requested one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from contextkit.messages import Block, Conversation, Message, TextBlock, Tool
from contextkit.tokens import TokenCounter

_FILLER = (
    "When a customer asks about an order, check its status, the shipping address and the refund "
    "policy before answering; quote the policy section you rely on and keep the reply short. "
)
T = TypeVar("T")


def _fit_length(measure: Callable[[int], int], tokens: int) -> int:
    """The smallest character count whose measured size reaches ``tokens`` (binary search)."""
    lo, hi = 0, max(64, tokens * 8)
    while measure(hi) < tokens and hi < 10_000_000:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if measure(mid) < tokens:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _filler(chars: int) -> str:
    text = _FILLER * (chars // len(_FILLER) + 1)
    return text[:chars]


def padding_text(tokens: int, counter: TokenCounter) -> str:
    """Prose of about ``tokens`` tokens under ``counter`` (empty for 0)."""
    if tokens <= 0:
        return ""
    return _filler(_fit_length(lambda n: counter.count_text(_filler(n)), tokens))


def synthetic_tools(n: int, tokens: int, counter: TokenCounter) -> tuple[Tool, ...]:
    """``n`` distinct tool schemas of about ``tokens`` tokens each under ``counter``."""

    def tool(i: int, chars: int) -> Tool:
        return Tool(
            name=f"extra_tool_{i}",
            description=_filler(chars),
            input_schema={
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to look up."}},
                "required": ["query"],
            },
        )

    chars = _fit_length(lambda c: counter.count_tool(tool(0, c)), tokens)
    return tuple(tool(i, chars) for i in range(n))


def _ttl_mark(ttl_s: int) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": "1h"} if ttl_s >= 3600 else {"type": "ephemeral"}


def _marked(obj: BaseModel) -> bool:
    return "cache_control" in (obj.model_extra or {})


class Editor:
    """Applies one set of edits to a session's requests, rebuilding each shared part once."""

    def __init__(
        self,
        *,
        model: str | None = None,
        add_tools: Sequence[Tool] = (),
        system_prefix: str = "",
        ttl_s: int | None = None,
    ) -> None:
        self.model = model
        self.add_tools = tuple(add_tools)
        self.system_prefix = system_prefix
        self.ttl_s = ttl_s
        self._memo: dict[int, tuple[object, object]] = {}

    def _once(self, obj: T, build: Callable[[T], T]) -> T:
        hit = self._memo.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]  # type: ignore[return-value]
        new = build(obj)
        self._memo[id(obj)] = (obj, new)
        return new

    def __call__(self, request: Conversation) -> Conversation:
        update: dict[str, Any] = {}
        if self.model is not None:
            update["model"] = self.model
        if self.add_tools or self.ttl_s is not None:
            update["tools"] = self._once(request.tools, self._tools)
        if self.system_prefix or self.ttl_s is not None:
            update["system"] = self._system(request.system)
        if self.ttl_s is not None:
            update["messages"] = tuple(self._once(m, self._message) for m in request.messages)
            if _marked(request):
                update["cache_control"] = _ttl_mark(self.ttl_s)
        return request.model_copy(update=update) if update else request

    def _tools(self, tools: tuple[Tool, ...]) -> tuple[Tool, ...]:
        return tuple(self._retime(t) for t in tools) + self.add_tools

    def _system(self, system: str | tuple[Block, ...] | None) -> str | tuple[Block, ...] | None:
        if isinstance(system, str):
            return self._once(system, lambda s: self.system_prefix + s)
        if system is None:
            return self.system_prefix or None
        return self._once(system, self._system_blocks)

    def _system_blocks(self, blocks: tuple[Block, ...]) -> tuple[Block, ...]:
        # Prepended, so a breakpoint on the last system block still covers the padding.
        pad: tuple[Block, ...] = (TextBlock(text=self.system_prefix),) if self.system_prefix else ()
        return pad + tuple(self._retime(b) for b in blocks)

    def _message(self, message: Message) -> Message:
        if isinstance(message.content, str) or not any(_marked(b) for b in message.content):
            return message
        return message.model_copy(
            update={"content": tuple(self._retime(b) for b in message.content)}
        )

    def _retime(self, part: T) -> T:
        if self.ttl_s is None or not isinstance(part, BaseModel) or not _marked(part):
            return part
        return part.model_copy(update={"cache_control": _ttl_mark(self.ttl_s)})


__all__ = ["Editor", "padding_text", "synthetic_tools"]
