"""Which conversation a request belongs to, and the strategy applied to it call after call.

Conversation key, first match wins:

1. the ``X-Claude-Code-Session-Id`` header;
2. Anthropic ``metadata.user_id``: the ``session_id`` of its JSON form, or the ``_session_<id>``
   suffix of the older string form;
3. OpenAI ``prompt_cache_key``, then ``user``;
4. else the first user message: requests that open with the same one share a conversation.

A conversation holds *lanes*: one :class:`ContextEngine` per thread of calls that extend each
other (a harness interleaves side calls, title generation or subagents, with its main loop under
one session id). A request joins the lane whose last history (the client's messages, without
``cache_control``; a text as a string or as one text block counts as the same) is a prefix of its
own and whose system and tools are the same, longest first;
a request with the same system, tools and first message that extends no lane is an edited history
(a compaction, a rewind): that lane's view restarts from it (a ``reset`` receipt). Anything else
opens a new lane. Only the new messages are added to a lane's view, and the assistant message the
client echoes back is recorded as the answer to the previous call, so once a strategy edits the
view, every later call carries the same edit: the forwarded prefix stays byte-identical between
edits, and the engine places the cache breakpoints where it stays stable.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contextkit.engine import ContextEngine
from contextkit.messages import Block, Conversation, Message, to_payload
from contextkit.models import resolve_model
from contextkit.proxy._apis import Api
from contextkit.session import Usage
from contextkit.strategies import Receipt, Strategy
from contextkit.tokens import TokenCounter, counter_for

MAX_LANES = 16
"""Lanes kept per conversation (least recently used dropped first)."""
MAX_CONVERSATIONS = 512
"""Conversations kept in memory by default (``ProxyConfig.max_conversations``; least recently
used dropped first: one that comes back starts its view again from the history it sends)."""
_SESSION_SUFFIX = re.compile(r"_session_([0-9A-Za-z-]+)$")
_SAFE = re.compile(r"[^0-9A-Za-z._-]+")


def conversation_key(api: Api, headers: Mapping[str, str], body: Mapping[str, Any]) -> str:
    """The key of the conversation a request belongs to (safe as a file name)."""
    header = headers.get("x-claude-code-session-id")
    if header:
        return _safe(f"session-{header}")
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    if isinstance(user_id, str) and (found := _session_of_user_id(user_id)):
        return _safe(f"session-{found}")
    for field_name in ("prompt_cache_key", "user"):
        value = body.get(field_name)
        if api.startswith("openai") and isinstance(value, str) and value:
            return _safe(f"{field_name.replace('_', '-')}-{value}")
    return f"prefix-{_digest(_first_user(api, body))}"


def _session_of_user_id(user_id: str) -> str | None:
    try:
        value = json.loads(user_id)
    except ValueError:  # not JSON, or a number past the digit limit
        value = None
    if isinstance(value, Mapping) and isinstance(value.get("session_id"), str):
        return str(value["session_id"])
    found = _SESSION_SUFFIX.search(user_id)
    return found.group(1) if found else None


def _first_user(api: Api, body: Mapping[str, Any]) -> object:
    items = body.get("input") if api == "openai-responses" else body.get("messages")
    if isinstance(items, str):
        return items
    for item in items if isinstance(items, list) else ():
        if isinstance(item, Mapping) and item.get("role") == "user":
            return _unmarked_payload(item)
    return items


def _safe(text: str) -> str:
    cleaned = _SAFE.sub("_", text)[:120]
    return cleaned if cleaned == text else f"{cleaned}-{_digest(text)[:6]}"


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    # surrogatepass: the same bytes for any valid text, and a lone surrogate hashes too
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _unmarked_payload(message: Mapping[str, Any]) -> Any:
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    blocks = [
        {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, Mapping) else b
        for b in content
    ]
    return {**message, "content": blocks}


def _unmarked(message: Message) -> Message:
    """The message without ``cache_control`` on its blocks (the engine places its own)."""
    if isinstance(message.content, str):
        return message
    blocks: list[Block] = []
    changed = False
    for block in message.content:
        extra = block.model_extra or {}
        if "cache_control" in extra:
            data = to_payload(block)
            data.pop("cache_control", None)
            blocks.append(type(block).model_validate(data))
            changed = True
        else:
            blocks.append(block)
    return message.model_copy(update={"content": tuple(blocks)}) if changed else message


@dataclass
class Edit:
    """What the strategy did to one request."""

    receipts: tuple[Receipt, ...]
    reset: bool
    lane: int
    new_messages: int

    def summary(self) -> str:
        """One ASCII line for the ``x-contextkit-edit`` header."""
        parts = [f"lane {self.lane}", f"+{self.new_messages} messages"]
        if self.reset:
            parts.append("history edited: view restarted")
        actions: dict[str, int] = {}
        freed = 0
        for receipt in self.receipts:
            if receipt.action == "reset":
                continue
            actions[receipt.action] = actions.get(receipt.action, 0) + 1
            freed += receipt.tokens_freed
        if actions:
            done = ", ".join(f"{action} {n}" for action, n in sorted(actions.items()))
            parts.append(f"{done}, {freed} tokens freed")
        else:
            parts.append("no edit")
        text = "; ".join(parts)
        return text.encode("ascii", "replace").decode("ascii")


@dataclass
class _Lane:
    index: int
    engine: ContextEngine
    head: str
    first: str | None
    seen: list[str] = field(default_factory=list)
    answered: bool = False
    """True when the last prepared call got a response (its echo is the next new message)."""
    answer: tuple[Usage | None, str | None, str | None] = (None, None, None)


def _fingerprint(message: Message) -> str:
    """Equal for the same message in either content form: a client may send a text as one text
    block (while it carries a breakpoint) and as a plain string the next time (Claude Code does)."""
    payload = to_payload(message)
    if isinstance(payload.get("content"), str):
        payload["content"] = [{"type": "text", "text": payload["content"]}]
    return _digest(payload)


def _head_key(conversation: Conversation) -> str:
    payload = to_payload(conversation.model_copy(update={"messages": ()}))
    return _digest({k: payload.get(k) for k in ("system", "tools")})


@dataclass
class Conversations:
    """Every conversation's lanes, under one strategy (see the module docstring)."""

    strategy: Strategy
    budget_tokens: int = 150_000
    context_window: int = 200_000
    counter: TokenCounter | None = None
    max_conversations: int = MAX_CONVERSATIONS
    _lanes: dict[str, list[_Lane]] = field(default_factory=dict)
    _made: int = 0

    def apply(self, key: str, api: Api, request: Conversation) -> tuple[Conversation, Edit, int]:
        """The request to forward (the lane's view with its breakpoints), what changed, and the
        lane's id to hand back to :meth:`answered` with the response."""
        head, messages = _split(request)
        lanes = self._lanes.pop(key, [])
        self._lanes[key] = lanes  # most recently used last
        while len(self._lanes) > self.max_conversations:
            del self._lanes[next(iter(self._lanes))]
        fingerprints = [_fingerprint(m) for m in messages]
        lane = _extending(lanes, head, fingerprints)
        reset = False
        before = len(lane.engine.receipts) if lane else 0
        if lane is None:
            lane = _edited(lanes, head, fingerprints)
            if lane is not None:
                before = len(lane.engine.receipts)
                lane.engine.reset_view(messages)
                reset = True
                new = len(messages)
            else:
                lane = self._new_lane(lanes, api, request, head, fingerprints)
                lane.engine.add(*messages)
                new = len(messages)
        else:
            new = len(messages) - len(lane.seen)
            self._extend(lane, messages[len(lane.seen) :])
        lane.engine.configure(model=request.model, system=request.system, tools=request.tools)
        lane.seen, lane.answered = fingerprints, False
        lanes.remove(lane)
        lanes.append(lane)  # most recently used last
        prepared = lane.engine.prepare()
        receipts = tuple(lane.engine.receipts[before:])
        update: dict[str, Any] = {"messages": prepared.request.messages}
        for name in ("system", "tools"):  # only what the client set (or the engine marked)
            value = getattr(prepared.request, name)
            if name in request.model_fields_set or value != getattr(request, name):
                update[name] = value
        forwarded = request.model_copy(update=update)
        return forwarded, Edit(receipts, reset, lane.index, new), lane.index

    def __len__(self) -> int:
        """Conversations held."""
        return len(self._lanes)

    def answered(
        self, key: str, lane_id: int, usage: Usage | None, stop: str | None, model: str | None
    ) -> None:
        """The lane's last call was answered: the client's echo of the answer is recorded then."""
        for lane in self._lanes.get(key, ()):
            if lane.index == lane_id:
                lane.answered, lane.answer = True, (usage, stop, model)

    def _extend(self, lane: _Lane, new: list[Message]) -> None:
        if lane.answered and new and new[0].role == "assistant":
            usage, stop, model = lane.answer
            lane.engine.record(new[0], usage=usage, stop_reason=stop, model=model)
            new = new[1:]
        lane.engine.add(*new)

    def _new_lane(
        self, lanes: list[_Lane], api: Api, request: Conversation, head: str, fps: list[str]
    ) -> _Lane:
        self._made += 1
        counter = self.counter or counter_for(resolve_model(request.model))
        engine = ContextEngine(
            self.strategy,
            model=request.model,
            system=request.system,
            tools=request.tools,
            counter=counter,
            budget_tokens=self.budget_tokens,
            context_window=self.context_window,
            cache_breakpoints=api == "anthropic",
        )
        lane = _Lane(self._made, engine, head, fps[0] if fps else None)
        lanes.append(lane)
        if len(lanes) > MAX_LANES:
            lanes.pop(0)
        return lane


def _split(request: Conversation) -> tuple[str, list[Message]]:
    return _head_key(request), [_unmarked(m) for m in request.messages]


def _extending(lanes: list[_Lane], head: str, fps: list[str]) -> _Lane | None:
    best: _Lane | None = None
    for lane in lanes:
        n = len(lane.seen)
        fits = lane.head == head and n <= len(fps) and lane.seen == fps[:n]
        if fits and (best is None or n > len(best.seen)):
            best = lane
    return best


def _edited(lanes: list[_Lane], head: str, fps: list[str]) -> _Lane | None:
    first = fps[0] if fps else None
    for lane in reversed(lanes):
        if lane.head == head and lane.first == first:
            return lane
    return None


__all__ = ["MAX_CONVERSATIONS", "MAX_LANES", "Conversations", "Edit", "conversation_key"]
