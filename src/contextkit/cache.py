"""Provider prompt-cache simulator: which input tokens of each call are read, written or uncached.

Contract: :func:`simulate_cache` (or :class:`CacheSimulator` one call at a time) takes requests in
the order they were sent, each with its start time, and returns one frozen :class:`CachedCall` per
request: the input split into Anthropic's token classes (:class:`~contextkit.session.Usage`, output
left at 0), the context size, the tokens never sent before, and every rule the request breaks.

Anthropic (:class:`AnthropicCache`, REFERENCE.md "Anthropic prompt caching"):

- The prefix is the blocks in order tools -> system -> messages (one position per tool, system
  block and message content block; a string message is one position). A cache entry is keyed by
  the exact prefix up to a block: a hash chain of block contents (``cache_control`` left out, so
  moving a breakpoint does not change a key), seeded by the model; the messages level also mixes in
  ``tool_choice``, ``thinking`` and whether the request holds images, so those invalidate the
  messages cache only, a system change invalidates system and messages, a tool change everything.
- Breakpoints: ``cache_control`` on tools, system blocks and message blocks, plus automatic caching
  (top-level ``cache_control``: the last cacheable block). More than 4, a 1h breakpoint after a 5m
  one, or ``cache_control`` on a thinking block are errors the provider raises: they are reported in
  ``CachedCall.errors`` and the request is still priced as sent. A breakpoint whose prefix is below
  the model's minimum cacheable length caches nothing.
- A read walks back from each breakpoint at most 20 positions (the breakpoint itself first) for an
  entry written by a request that started earlier and is still alive; the furthest hit wins and is
  refreshed (TTL counted again from this request's start). Entries named by this request's own
  breakpoints inside the read prefix are refreshed too (an assumption: they are read through).
  Each breakpoint beyond the read writes an entry; the tokens between the read and the last such
  breakpoint are billed as writes at the TTL of the breakpoint closing each stretch.
- Requests without breakpoints get them from a :data:`Placement` policy; ``"claude-code"`` mimics
  Claude Code, whose transcripts do not record them. Traffic captured from Claude Code (2025,
  claude-trace) marks every system block and the last block of the last two messages: the
  previous call's last message stays a breakpoint, so each call reads what the one before wrote
  and writes only the new turn. Claude Code on subscriptions writes with the 1h TTL (recorded
  usage shows only 1h writes); API-key users get 5m.
- Thinking of earlier turns: models that strip it (``reference.keeps_prior_thinking``) drop the
  thinking blocks of assistant messages before the last user message that holds no tool_result.
  Those blocks are still in the request as sent (a ``cache_control`` on one is still an error) but
  are neither billed nor part of the cached prefix: the first user turn after thinking rewrites the
  prefix from the first stripped block on, as the provider's cache does ("when thinking blocks are
  cleared, the cache is invalidated at the point where clearing occurs").
- Hidden prefix: files that omit system prompt and tools pass :class:`PrefixPart` s of known size
  that stand before every request; a ``warm`` part was cached before the first call.

OpenAI (:class:`OpenAICache`): automatic prefix caching, no breakpoints, no write charge. The cached
share is the longest prefix (at block boundaries) shared with a request seen within the retention
window, counted from 1,024 tokens in 128-token steps.

Cost: a request's flattened prefix is derived from the previous request's by object identity
(messages reused by structural sharing are not looked at again) and block contents are hashed once
per block object, so a session costs O(unique blocks) hashing plus cheap per-call pointer checks.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field

from contextkit.messages import (
    Block,
    Conversation,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.reference import keeps_prior_thinking, tool_use_overhead
from contextkit.session import Usage
from contextkit.tokens import MemoCounter, TokenCounter

TTL_5M_S = 300
TTL_1H_S = 3600
UNTIMED_STEP_S = 0.001
"""Calls without a timestamp are taken as sent back to back, this far apart."""

Placement: TypeAlias = Literal["as-sent", "auto", "claude-code", "engine", "off"]
"""Breakpoints for a request that carries none: ``as-sent`` adds none, ``auto`` one on the last
cacheable block, ``claude-code`` Claude Code's own (see the module docstring); ``off`` ignores every
breakpoint, as if caching were not used. ``engine`` is contextkit's own placement
(``engine.place_breakpoints``), applied to every request, marked or not: the last message, the
previous request's last message while this one still holds it, the end of system, the end of
tools, in that order, while the request's own breakpoints leave room under the four."""


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AnthropicCache(_Config):
    kind: Literal["anthropic"] = "anthropic"
    min_tokens: int = Field(1024, ge=0)
    """Shortest cacheable prefix (``reference.min_cacheable_tokens(model)``)."""
    placement: Placement = "as-sent"
    ttl_s: int = TTL_5M_S
    """TTL of the breakpoints a placement policy adds (300 or 3600)."""
    lookback_blocks: int = Field(20, ge=1)
    max_breakpoints: int = 4
    tool_overhead: bool = True
    """Count the hidden tool-use system prompt when a request carries tools."""


class OpenAICache(_Config):
    kind: Literal["openai"] = "openai"
    min_tokens: int = 1024
    step_tokens: int = 128
    retention_s: float = 300.0
    """In-memory retention is 5-10 minutes; 86,400 for ``prompt_cache_retention="24h"``."""


CacheConfig: TypeAlias = AnthropicCache | OpenAICache


class PrefixPart(_Config):
    """Tokens that stand before every request but are not in it (a hidden system prompt)."""

    tokens: int = Field(ge=0)
    ttl_s: int | None = TTL_5M_S
    """TTL of a breakpoint at the end of this part (None: no breakpoint)."""
    warm: bool = False
    """Already cached when the first call starts (written by a request outside the session).
    :class:`CacheSimulator` ``warm_tokens`` says the same of any prefix, by size."""
    label: str = "hidden prefix"
    level: Literal["tools", "system"] = "system"
    """The cache level it stands for: a system-level reset (``Call.cache_reset``) rewrites the
    first system-level part and everything after it; tools-level parts stay cached."""


@dataclass(frozen=True, slots=True)
class CachedCall:
    """One request as the cache saw it (a plain frozen record: one is made per simulated call,
    from values worked out here, so there is nothing to validate).

    The input split into uncached, written (5m, 1h) and read tokens, as in
    :class:`~contextkit.session.Usage` (:attr:`usage`; output is not the cache's to know: 0)."""

    input_tokens: int
    cache_write_5m: int
    cache_write_1h: int
    cache_read: int
    context_tokens: int
    new_tokens: int
    """Tokens of blocks whose content no earlier request carried."""
    breakpoints: int
    read_blocks: int = 0
    """Prefix positions read from the cache."""
    errors: tuple[str, ...] = ()

    @property
    def output_tokens(self) -> int:
        return 0

    @property
    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            cache_write_5m=self.cache_write_5m,
            cache_write_1h=self.cache_write_1h,
            cache_read=self.cache_read,
        )


@dataclass
class _Flat:
    """A request flattened to block positions; rebuilt incrementally from the previous one."""

    model: str | None = None
    tools: tuple[Tool, ...] | None = None
    system: object = None
    params: object = None
    base: int = 0  # tokens before the first position (counter framing, tool-use prompt)
    n_head: int = 0  # positions of hidden prefix + tools + system
    keys: list[int] = field(default_factory=list)
    acc: list[int] = field(default_factory=list)  # running token sum through each position
    marks: dict[int, int] = field(default_factory=dict)  # position -> ttl_s of an explicit mark
    bad_marks: list[int] = field(default_factory=list)  # marked thinking blocks
    cacheable: list[bool] = field(default_factory=list)
    messages: tuple[Message, ...] = ()  # a tuple: compared in C with the next request's
    msg_start: list[int] = field(default_factory=list)
    msg_images: list[int] = field(default_factory=list)  # images up to and including message i
    msg_thinking: list[bool] = field(default_factory=list)  # message i holds thinking blocks
    msg_turn: list[int] = field(default_factory=list)  # last turn-opening message <= i (-1: none)
    strip_before: int = 0  # thinking of messages before this index was stripped

    def cum(self, pos: int) -> int:
        """Input tokens up to and including ``pos`` (-1: none)."""
        return self.base + self.acc[pos] if pos >= 0 else 0

    @property
    def total(self) -> int:
        return self.cum(len(self.acc) - 1) if self.acc else self.base

    def truncate(self, n_messages: int) -> None:
        if n_messages >= len(self.messages):
            return  # the usual call: the whole previous history is shared
        cut = self.msg_start[n_messages] if n_messages < len(self.messages) else len(self.keys)
        for seq in (self.keys, self.acc, self.cacheable):
            del seq[cut:]
        self.marks = {p: t for p, t in self.marks.items() if p < cut}
        self.bad_marks = [p for p in self.bad_marks if p < cut]
        self.messages = self.messages[:n_messages]
        for lst in (self.msg_start, self.msg_images, self.msg_thinking):
            del lst[n_messages:]
        del self.msg_turn[n_messages:]


_THINKING, _IMAGE, _EXTRA = 1, 2, 4
"""Kind bits of a block: thinking (never a breakpoint, maybe stripped), image, extra fields."""
_THINKING_TYPES = (ThinkingBlock, RedactedThinkingBlock)


def _ttl_of(mark: object) -> int | None:
    if not isinstance(mark, dict):
        return None
    return TTL_1H_S if mark.get("ttl") == "1h" else TTL_5M_S


def _mark(obj: BaseModel) -> int | None:
    extra = obj.__pydantic_extra__  # the attribute: pydantic's model_extra property is slow
    return _ttl_of(extra.get("cache_control")) if extra else None


_FORMS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("tool", Tool),
    ("text", TextBlock),
    ("tool_result", ToolResultBlock),
    ("tool_use", ToolUseBlock),
    ("thinking", ThinkingBlock),
)
_CLASSES: dict[type, tuple[int, str]] = {}


def _class_of(cls: type) -> tuple[int, str]:
    """(kind bits, form) of a block or tool class: the form is the first of ``_FORMS`` it is a
    subclass of ("other": none). Worked out once per class: ``isinstance`` against a pydantic
    model runs its metaclass's ``__instancecheck__`` in Python, which cost more per block than
    the rest of the block's bookkeeping."""
    hit = _CLASSES.get(cls)
    if hit is None:
        kind = _THINKING if issubclass(cls, _THINKING_TYPES) else 0
        kind |= _IMAGE if issubclass(cls, ImageBlock) else 0
        form = next((name for name, base in _FORMS if issubclass(cls, base)), "other")
        hit = _CLASSES[cls] = (kind, form)
    return hit


def _digest(block: Block | Tool, form: str, extra: dict[str, object] | None) -> int:
    """Hash of a block's content, ``cache_control`` left out (moving a breakpoint keeps keys);
    ``form`` and ``extra``: its class's form (:func:`_class_of`) and its extra fields."""
    if not extra or extra.keys() == {"cache_control"}:
        # The common cases without serialising (large tool results would dominate otherwise);
        # ``form`` stands for the isinstance checks, so the casts only tell the type checker.
        if form == "text":
            return hash(("text", cast(TextBlock, block).text))
        if form == "tool_result":
            result = cast(ToolResultBlock, block)
            if not isinstance(result.content, tuple):
                return hash(("tool_result", result.tool_use_id, result.content, result.is_error))
        if form == "tool_use":  # repr: same value, same text (no JSON)
            use = cast(ToolUseBlock, block)
            return hash(("tool_use", use.id, use.name, repr(use.input)))
        if form == "thinking":
            thinking = cast(ThinkingBlock, block)
            return hash(("thinking", thinking.thinking, thinking.signature))
    elif form in ("text", "tool_use"):
        # Blocks with other extras (Claude Code writes a "caller" on every tool_use): every field
        # of these two base classes is always set, so their JSON is those fields and the extras
        # (a subclass is digested by its base's fields, as in the fast path above); a digest
        # equal for equal blocks, without serialising them (tagged: no clash with the above).
        rest = repr({k: v for k, v in extra.items() if k != "cache_control"})
        if form == "text":
            return hash(("text+extra", cast(TextBlock, block).text, rest))
        use = cast(ToolUseBlock, block)
        return hash(("tool_use+extra", use.id, use.name, repr(use.input), rest))
    return hash(block.model_dump_json(exclude={"cache_control"}, exclude_unset=True))


def _canon(value: object) -> str:
    if value is None:
        return "null"
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


class _Shape(NamedTuple):
    """One message's positions: content digests (the first one joined with the role), tokens (the
    first one with the message framing), which may carry a breakpoint, explicit marks and marks on
    thinking (offsets in the message), images, and whether it holds thinking."""

    digests: tuple[int, ...]
    tokens: tuple[int, ...]
    cacheable: tuple[bool, ...]
    marks: tuple[tuple[int, int], ...] = ()
    bad_marks: tuple[int, ...] = ()
    images: int = 0
    thinking: bool = False
    opens: bool = False
    """A user message holding no tool_result: it opens a turn (earlier thinking is stripped)."""


class CacheSimulator:
    """The cache of one account and model family, fed one request at a time."""

    def __init__(
        self,
        config: CacheConfig,
        counter: TokenCounter,
        prefix: Sequence[PrefixPart] = (),
        warm_tokens: int = 0,
    ) -> None:
        self.config = config
        self.counter = counter
        self.prefix = tuple(prefix)
        self.warm_tokens = warm_tokens
        self._n_prefix_marks = sum(part.ttl_s is not None for part in self.prefix)
        self._flat = _Flat()
        self._shapes: dict[int, tuple[Message, _Shape]] = {}
        self._stripped: dict[int, tuple[Message, _Shape]] = {}
        self._resets = {"messages": 0, "system": 0}
        """Harness resets so far, per level: mixed into the keys of that level."""
        self._previous_end: Message | None = None
        """The last message of the previous request (``engine`` placement marks it again)."""
        # id -> (obj, digest, tokens, kind): kind is a set of _THINKING / _IMAGE / _EXTRA bits
        self._digests: dict[int, tuple[object, int, int, int]] = {}
        self._strings: dict[str, int] = {}
        self._seen: set[int] = set()
        self._new = 0
        self._entries: dict[int, list[float]] = {}  # key -> [written_at, expires_at, ttl_s]
        self._last_t: float | None = None
        self._calls = 0
        self._framing = counter.count_conversation(Conversation())
        self._bases: dict[tuple[int, str, str | None], tuple[object, int]] = {}
        self._keeps: dict[str | None, bool] = {}
        # A MemoCounter that keeps its count_message frames a list-content message with exactly
        # per_message tokens: no need to ask for the whole message and subtract its blocks.
        self._per_message: int | None = None
        overridden = type(counter).count_message is not MemoCounter.count_message
        if isinstance(counter, MemoCounter) and not overridden:
            self._per_message = counter.per_message

    # --- flattening -----------------------------------------------------------------------

    def _entry(self, block: Block | Tool) -> tuple[object, int, int, int]:
        """(block, content digest, tokens, kind bits) of a tool or block, memoised by object."""
        hit = self._digests.get(id(block))
        if hit is not None and hit[0] is block:
            return hit
        kind, form = _class_of(type(block))
        if form == "tool":
            tokens = self.counter.count_tool(block)  # type: ignore[arg-type]
        else:
            tokens = self.counter.count_block(block)  # type: ignore[arg-type]
        extra = block.__pydantic_extra__
        if extra:
            kind |= _EXTRA
        entry = self._digests[id(block)] = (block, _digest(block, form, extra), tokens, kind)
        return entry

    def _block(self, block: Block | Tool) -> tuple[int, int]:
        """(content digest, tokens) of a tool or block, memoised by object."""
        entry = self._entry(block)
        return entry[1], entry[2]

    def _push(self, flat: _Flat, digest: int, tokens: int, start: int | None = None) -> None:
        keys, acc = flat.keys, flat.acc
        if start is None:
            start = keys[-1] if keys else hash(("root", flat.model))
        keys.append(hash((start, digest)))
        acc.append(acc[-1] + tokens if acc else tokens)
        flat.cacheable.append(True)
        if digest not in self._seen:
            self._seen.add(digest)
            self._new += tokens

    def _head(self, flat: _Flat, request: Conversation) -> None:
        """Hidden prefix, tools and system: the positions before the messages."""
        system_reset = self._resets["system"]
        for i, part in enumerate(self.prefix):
            digest = hash(("prefix", i, part.label, part.tokens))
            if part.level == "system" and system_reset:  # the chain changes from here on
                digest, system_reset = hash((digest, "reset", system_reset)), 0
            self._push(flat, digest, part.tokens)
            if part.ttl_s is not None and self.config.kind == "anthropic":
                flat.marks[len(flat.keys) - 1] = part.ttl_s
        for tool in request.tools:
            self._push(flat, *self._block(tool))
            self._note_mark(flat, tool)
        if isinstance(request.system, str):
            tokens = self._strings.get(request.system)
            if tokens is None:
                tokens = self._strings[request.system] = self.counter.count_text(request.system)
            digest = hash(("text", request.system))  # as its one text block
            if system_reset:
                digest = hash((digest, "reset", system_reset))
            self._push(flat, digest, tokens)
        else:
            for block in request.system_blocks:
                digest, tokens = self._block(block)
                if system_reset:
                    digest, system_reset = hash((digest, "reset", system_reset)), 0
                self._push(flat, digest, tokens)
                self._note_mark(flat, block)
        flat.n_head = len(flat.keys)

    def _note_mark(self, flat: _Flat, obj: BaseModel) -> None:
        ttl = _mark(obj)
        if ttl is None:
            return
        pos = len(flat.keys) - 1
        if isinstance(obj, ThinkingBlock | RedactedThinkingBlock):
            flat.bad_marks.append(pos)
        else:
            flat.marks[pos] = ttl

    def _messages(self, flat: _Flat, shapes: Sequence[_Shape], seed: int | None) -> None:
        """Push messages' positions after those kept (``shapes``: theirs, stripped or not;
        ``seed``: the key the first one chains from, None to chain from the last position).
        One loop for all of them, the lists bound once: a new turn pushes a whole turn again."""
        keys, acc, cacheable_at, marks_at = flat.keys, flat.acc, flat.cacheable, flat.marks
        msg_start, msg_turn, msg_images = flat.msg_start, flat.msg_turn, flat.msg_images
        msg_thinking, seen = flat.msg_thinking, self._seen
        key = seed if seed is not None else (keys[-1] if keys else hash(("root", flat.model)))
        total = acc[-1] if acc else 0
        turn = msg_turn[-1] if msg_turn else -1
        images_so_far = msg_images[-1] if msg_images else 0
        new = 0
        for digests, counts, cacheable, marks, bad_marks, images, thinking, opens in shapes:
            start = len(keys)
            if opens:
                turn = len(msg_start)
            images_so_far += images
            msg_start.append(start)
            msg_turn.append(turn)
            msg_images.append(images_so_far)
            msg_thinking.append(thinking)
            if len(digests) == 1:  # most messages: one position, no loop
                key = hash((key, digests[0]))
                keys.append(key)
                total += counts[0]
                acc.append(total)
            else:  # a loop, not accumulate(): a message holds two or three blocks, most of the time
                for digest, tokens in zip(digests, counts, strict=True):
                    key = hash((key, digest))  # the chain: each key is the whole prefix up to here
                    keys.append(key)
                    total += tokens
                    acc.append(total)
            cacheable_at.extend(cacheable)
            for offset, ttl in marks:
                marks_at[start + offset] = ttl
            if bad_marks:
                flat.bad_marks.extend(start + offset for offset in bad_marks)
            if not seen.issuperset(digests):  # content no earlier request carried
                for digest, tokens in zip(digests, counts, strict=True):
                    if digest not in seen:
                        seen.add(digest)
                        new += tokens
        self._new += new

    def _shape_of(self, message: Message, strip: bool) -> _Shape:
        """:meth:`_shape`, memoised; stripping leaves a message without thinking as it is (the
        messages after a stripped one are flattened again only for their keys)."""
        hit = self._shapes.get(id(message))
        if hit is None or hit[0] is not message:
            hit = self._shapes[id(message)] = (message, self._shape(message, False))
        if not strip or not hit[1].thinking:
            return hit[1]
        stripped = self._stripped.get(id(message))
        if stripped is None or stripped[0] is not message:
            stripped = self._stripped[id(message)] = (message, self._shape(message, True))
        return stripped[1]

    def _shape(self, message: Message, strip: bool) -> _Shape:
        """What one message adds to the prefix (see :class:`_Shape`), worked out once per message
        and strip state: a request shares its history with the previous one, and a new turn
        flattens the earlier messages again with their thinking stripped."""
        if isinstance(message.content, str):
            # Keyed as the one text block it stands for: marking the message (which turns it
            # into that block) must not change the prefix.
            digest = hash(("msg", message.role, hash(("text", message.content))))
            count = self.counter.count_message(message)
            return _Shape((digest,), (count,), (True,), (), (), 0, False, _opens_turn(message))
        if len(message.content) == 1:  # the commonest: one plain block (a tool result, a text)
            _, content_digest, count, kind = self._entry(message.content[0])
            framing = self._per_message
            if not kind and framing is not None:
                digest = hash(("msg", message.role, content_digest))
                opens = _opens_turn(message)  # positional: NamedTuple keywords cost more
                return _Shape((digest,), (count + framing,), (True,), (), (), 0, False, opens)
        entries = [self._entry(b) for b in message.content]
        framing = self._per_message
        if framing is None:
            framing = self.counter.count_message(message) - sum([e[2] for e in entries])
        digests: list[int] = []
        tokens: list[int] = []
        cacheable: list[bool] = []
        marks: list[tuple[int, int]] = []
        bad: list[int] = []
        images, thinking = 0, False
        for block, content_digest, count, kind in entries:
            if kind & _THINKING:
                thinking = True
                if strip:
                    if kind & _EXTRA and _mark(block) is not None:  # type: ignore[arg-type]
                        bad.append(0)  # still sent, so still rejected
                    continue
            if digests:
                digests.append(content_digest)
                tokens.append(count)
            else:  # the role and the message boundary join the prefix
                digests.append(hash(("msg", message.role, content_digest)))
                tokens.append(count + framing)
            if not kind:  # most blocks: no thinking, no image, no extra field (so no mark)
                cacheable.append(True)
                continue
            cacheable.append(not kind & _THINKING)  # thinking is never a breakpoint
            images += 1 if kind & _IMAGE else 0
            ttl = _mark(block) if kind & _EXTRA else None  # type: ignore[arg-type]
            if ttl is not None and kind & _THINKING:
                bad.append(len(digests) - 1)
            elif ttl is not None:
                marks.append((len(digests) - 1, ttl))
        if not digests:  # every block was stripped: the message boundary remains
            digests.append(hash(("msg", message.role, "stripped")))
            tokens.append(framing)
            cacheable.append(True)
        return _Shape(
            tuple(digests),
            tuple(tokens),
            tuple(cacheable),
            tuple(marks),
            tuple(bad),
            images,
            thinking,
            _opens_turn(message),
        )

    def _flatten(self, request: Conversation, model: str | None) -> _Flat:
        flat = self._flat
        same_head = (
            flat.model == model
            and flat.tools is not None
            and (flat.tools is request.tools or flat.tools == request.tools)
            and (flat.system is request.system or flat.system == request.system)
        )
        if not same_head:
            self._flat = flat = _Flat(model=model, tools=request.tools, system=request.system)
            self._head(flat, request)
        messages = request.messages
        shared = keep = _shared_messages(flat.messages, messages)
        # The new messages' shapes, looked up once: parameters, strip point and flattening all
        # need them (messages before ``shared`` are looked up only when flattened again).
        shapes = [self._shape_of(m, False) for m in messages[shared:]]
        params = self._params(request, flat, keep, shapes)
        if params != flat.params:
            keep = 0
        strip = self._strip_point(flat, messages, keep, model, shapes)
        if strip != flat.strip_before:  # the strip point moved: shared messages change form
            keep = _restrip(flat, keep, strip)
        flat.truncate(keep)
        # The kept objects (not the request's equal ones), then the request's: one copy.
        flat.messages += messages[keep:]
        flat.params = params
        flat.strip_before = strip
        if keep == shared and strip <= keep:  # the usual call: only new messages, as they are
            pushed = shapes
        else:  # the memo gives the new messages' shapes again
            pushed = [self._shape_of(messages[i], i < strip) for i in range(keep, len(messages))]
        seed = None  # the first message chains from the head and the messages-level parameters
        if keep == 0:
            seed = hash(((flat.keys[flat.n_head - 1] if flat.n_head else 0), params))
        self._messages(flat, pushed, seed)
        flat.base = self._base(request, model)
        return flat

    def _strip_point(
        self,
        flat: _Flat,
        messages: tuple[Message, ...],
        keep: int,
        model: str | None,
        shapes: list[_Shape],
    ) -> int:
        """Index of the last turn-opening user message when ``model`` strips earlier thinking
        (its thinking blocks before that message are not billed); 0 when nothing is stripped.
        Only the messages not shared with the previous request are looked at (``shapes``: the
        unstripped shapes of the last ones)."""
        keeps = self._keeps.get(model)
        if keeps is None:
            keeps = self._keeps[model] = keeps_prior_thinking(model)
        if keeps or self.config.kind != "anthropic":
            return 0
        first = len(messages) - len(shapes)
        for i in range(len(messages) - 1, keep - 1, -1):
            shape = shapes[i - first] if i >= first else self._shape_of(messages[i], False)
            if shape.opens:
                return i
        return max(flat.msg_turn[keep - 1], 0) if keep else 0

    def _params(
        self, request: Conversation, flat: _Flat, keep: int, shapes: list[_Shape]
    ) -> object:
        """What the messages-level key depends on besides the blocks (``shapes``: those of the
        messages after ``keep``, usually the one or two appended)."""
        extra = request.__pydantic_extra__ or {}
        images = flat.msg_images[keep - 1] if keep else 0
        for shape in shapes:
            images += shape.images
        tool_choice, thinking = _canon(extra.get("tool_choice")), _canon(extra.get("thinking"))
        # A system reset rewrites the messages too, even where no system position exists.
        resets = (self._resets["messages"], self._resets["system"])
        return (tool_choice, thinking, images > 0, resets)

    def _base(self, request: Conversation, model: str | None) -> int:
        """Tokens before the first position: the counter's framing, and the hidden tool-use
        prompt when tools are sent (added here only if the counter does not count it itself)."""
        if not request.tools:
            return self._framing
        choice = (request.__pydantic_extra__ or {}).get("tool_choice")
        key = (id(request.tools), _canon(choice), model)
        hit = self._bases.get(key)
        if hit is not None and hit[0] is request.tools:
            return hit[1]
        probe = Conversation(model=model, tools=request.tools, tool_choice=choice)
        base = self.counter.count_conversation(probe)
        base -= sum(self.counter.count_tool(t) for t in request.tools)
        wanted = self.config.kind == "anthropic" and self.config.tool_overhead
        if wanted and base == self._framing:
            base += tool_use_overhead(model, choice)
        self._bases[key] = (request.tools, base)
        return base

    # --- simulation -----------------------------------------------------------------------

    def step(
        self,
        request: Conversation,
        when: datetime | float | None = None,
        reset: Literal["messages", "system"] | None = None,
    ) -> CachedCall:
        """Send one request at ``when`` (datetime, epoch seconds, or None: right after the last).

        ``reset``: the harness changed content before this request that the request does not show
        (``Call.cache_reset``): nothing cached at that level or after it matches any more."""
        self._previous_end = self._flat.messages[-1] if self._flat.messages else None
        if reset is not None:
            self._resets[reset] += 1
            if reset == "system":
                self._flat = _Flat()  # the keys from the system level on change: flatten again
        t = self._clock(when)
        self._new = 0
        self._calls += 1
        flat = self._flatten(request, request.model)
        if self.config.kind == "openai":
            return self._openai(flat, t, self.config)
        if self._calls == 1:
            self._warm(flat, t)
        return self._anthropic(flat, t, request, self.config)

    def _clock(self, when: datetime | float | None) -> float:
        if isinstance(when, datetime):
            t = when.timestamp()
        elif when is None:
            t = (self._last_t if self._last_t is not None else 0.0) + UNTIMED_STEP_S
        else:
            t = float(when)
        self._last_t = t
        return t

    def _warm(self, flat: _Flat, t: float) -> None:
        """Entries alive at the first call: warm prefix parts, and the longest prefix of at most
        ``warm_tokens`` (cached by requests before the session, such as a parent's history)."""
        warm = [i for i, part in enumerate(self.prefix) if part.warm and part.ttl_s is not None]
        if self.warm_tokens > 0:
            fits = [p for p in range(len(flat.acc)) if flat.acc[p] <= self.warm_tokens]
            warm += fits[-1:]
        ttl = float(getattr(self.config, "ttl_s", TTL_5M_S))
        for pos in warm:
            self._entries[flat.keys[pos]] = [-math.inf, t + 1e-6, ttl]

    def _breakpoints(
        self, flat: _Flat, request: Conversation, cfg: AnthropicCache
    ) -> tuple[list[tuple[int, int]], list[str]]:
        if cfg.placement == "off" or not flat.keys:
            return [], []
        marks = dict(flat.marks) if flat.marks else {}
        extra = request.__pydantic_extra__
        auto = _ttl_of(extra.get("cache_control")) if extra else None
        explicit = len(marks) + len(flat.bad_marks) - self._n_prefix_marks
        if cfg.placement == "engine":
            room = cfg.max_breakpoints - explicit - (auto is not None)
            marks.update(self._engine_marks(flat, room, cfg.ttl_s))
        if auto is not None:
            marks[_last_cacheable(flat, len(flat.keys) - 1)] = auto
        elif explicit == 0 and cfg.placement not in ("as-sent", "engine"):
            marks.update(_placed(flat, cfg))
        if len(marks) == 1 <= cfg.max_breakpoints and not flat.bad_marks:  # nothing to check
            return list(marks.items()), []
        return sorted(marks.items()), _mark_errors(marks, flat, cfg)

    def _engine_marks(self, flat: _Flat, room: int, ttl: int) -> dict[int, int]:
        """``engine.place_breakpoints`` on the flattened request: the same positions, no copies."""
        messages, previous = flat.messages, self._previous_end
        n = len(messages)
        ends = [_message_mark_position(flat, n - 1)] if n else []
        for i in range(n - 2, -1, -1):
            if messages[i] is previous:
                ends.append(_message_mark_position(flat, i))
                break
        n_tools = len(self.prefix) + len(flat.tools or ())
        if flat.n_head > n_tools:  # a system prompt is sent
            ends.append(flat.n_head - 1)
        if flat.tools:
            ends.append(n_tools - 1)
        placed: dict[int, int] = {}
        for pos in ends:
            if room > 0 and pos is not None and pos not in flat.marks and pos not in placed:
                placed[pos], room = ttl, room - 1
        return placed

    def _read(self, flat: _Flat, bps: list[tuple[int, int]], t: float, lookback: int) -> int:
        """The furthest position whose entry a breakpoint's lookback finds (-1: none)."""
        best = -1
        entries, keys = self._entries, flat.keys  # entries looked up inline: the hot loop
        # The furthest breakpoint first (``bps`` is in position order): its hit, usually the
        # previous call's end, bounds the walks of those before it, which then have none to do.
        for pos, _ in reversed(bps):
            if pos <= best:
                break
            for q in range(pos, max(pos - lookback, best, -1), -1):
                entry = entries.get(keys[q])
                if entry is not None and entry[0] < t < entry[1]:
                    best = q
                    break
        if best < 0:
            return best
        # Refresh the entry read and those of the breakpoints inside the read prefix (each
        # position once: a refresh is idempotent, so the order does not matter).
        for pos in [best, *[p for p, _ in bps if p < best]]:
            entry = entries.get(keys[pos])
            if entry is not None and entry[0] < t < entry[1]:
                entry[1] = max(entry[1], t + entry[2])
        return best

    def _anthropic(
        self, flat: _Flat, t: float, request: Conversation, cfg: AnthropicCache
    ) -> CachedCall:
        bps, errors = self._breakpoints(flat, request, cfg)
        # flat.cum inlined (base + acc[pos]; breakpoints are never before the first position):
        # a method call per use cost more than the arithmetic, on every call of a session.
        base, acc, keys, entries = flat.base, flat.acc, flat.keys, self._entries
        usable = [bp for bp in bps if base + acc[bp[0]] >= cfg.min_tokens]
        read = self._read(flat, usable, t, cfg.lookback_blocks)
        read_tokens = end_tokens = base + acc[read] if read >= 0 else 0
        write_5m = write_1h = 0
        for pos, ttl in usable:
            if pos <= read:
                continue
            tokens = base + acc[pos]
            if ttl == TTL_1H_S:
                write_1h += tokens - end_tokens
            else:  # 5m, and any other TTL (rejected by the provider) priced as 5m
                write_5m += tokens - end_tokens
            key = keys[pos]
            entry = entries.get(key)  # alive: extended; else written anew
            if entry is not None and entry[0] < t + 1e-9 < entry[1]:
                entry[1] = max(entry[1], t + ttl)
            else:
                entries[key] = [t, t + ttl, float(ttl)]
            end_tokens = tokens
        total = base + acc[-1] if acc else base
        return CachedCall(  # positional, in field order: the record of every call
            total - end_tokens,
            write_5m,
            write_1h,
            read_tokens,
            total,
            self._new + (base if self._calls == 1 else 0),
            len(bps),
            read + 1,  # read >= -1
            tuple(errors) if errors else (),
        )

    def _openai(self, flat: _Flat, t: float, cfg: OpenAICache) -> CachedCall:
        hit = -1
        for q in range(len(flat.keys) - 1, -1, -1):
            entry = self._entries.get(flat.keys[q])
            if entry is not None and entry[0] < t <= entry[1]:
                hit = q
                break
        matched = flat.cum(hit)
        cached = 0
        if matched >= cfg.min_tokens:
            cached = (
                cfg.min_tokens + (matched - cfg.min_tokens) // cfg.step_tokens * cfg.step_tokens
            )
        for key in flat.keys:  # every prefix of this request is retained (and refreshed)
            entry = self._entries.get(key)
            if entry is None or entry[1] < t:
                self._entries[key] = [t, t + cfg.retention_s, cfg.retention_s]
            else:
                entry[1] = t + cfg.retention_s
        return self._result(flat, (flat.total - cached, 0, 0, cached), 0, hit + 1, [])

    def _result(
        self,
        flat: _Flat,
        counts: tuple[int, int, int, int],
        breakpoints: int,
        read_blocks: int,
        errors: list[str],
    ) -> CachedCall:
        """``counts``: uncached input, 5m and 1h writes, reads."""
        return CachedCall(
            *counts,
            context_tokens=flat.total,
            new_tokens=self._new + (flat.base if self._calls == 1 else 0),
            breakpoints=breakpoints,
            read_blocks=max(read_blocks, 0),
            errors=tuple(errors),
        )


def _shared_messages(old: tuple[Message, ...], new: tuple[Message, ...]) -> int:
    """How many leading messages are the same (structural sharing makes them the same objects)."""
    n = min(len(old), len(new))
    # Tuple comparison in C checks identity before equality: cheap for shared histories (and
    # faster than all(map(operator.is_, ...)), which calls a function per message).
    if n and old[n - 1] is new[n - 1] and _equal_prefix(old, new, n):
        return n
    for i in range(n):
        if old[i] is not new[i]:
            return i
    return n


def _equal_prefix(old: tuple[Message, ...], new: tuple[Message, ...], n: int) -> bool:
    """``old[:n] == new[:n]`` (``n``: the shorter length), without copying the longer tuple."""
    if len(old) < len(new):
        # The usual call, the history grew: ``<=`` walks both tuples in C as ``==`` does and,
        # all of ``old`` equal, decides by the sizes (True). At the first pair that differs it
        # orders the two messages, which they do not support (TypeError): not a prefix. A slice
        # of ``new`` would copy the whole history at every call. (A message's ``==`` never
        # raises: pydantic compares fields.)
        try:
            return old <= new
        except TypeError:
            return False
    return old[:n] == new[:n]  # a slice of a whole tuple is the tuple itself: no copy


def _opens_turn(message: Message) -> bool:
    """A user message that is not a tool-result message: a new turn (earlier thinking stripped)."""
    if message.role != "user":
        return False
    if isinstance(message.content, str):
        return True
    # A loop, not all() over a generator (SIM110): a generator per message costs more here.
    for block in message.content:  # noqa: SIM110
        if _class_of(type(block))[1] == "tool_result":  # isinstance, once per class
            return False
    return True


def _restrip(flat: _Flat, keep: int, strip: int) -> int:
    """Shared messages whose thinking changes form (kept <-> stripped) must be flattened again:
    the first of them bounds what is kept of the previous request."""
    low, high = sorted((flat.strip_before, strip))
    for i in range(low, min(high, keep)):
        if flat.msg_thinking[i]:
            return i
    return keep


def _message_mark_position(flat: _Flat, m: int) -> int | None:
    """Position of message ``m``'s last block that may carry a breakpoint (not thinking); None
    when it holds none (only thinking, stripped or not)."""
    content = flat.messages[m].content
    if not isinstance(content, str):
        for block in reversed(content):  # the last block is nearly always the one
            if not _class_of(type(block))[0] & _THINKING:  # isinstance, once per class
                break
        else:
            return None
    pos = flat.msg_start[m + 1] - 1 if m + 1 < len(flat.messages) else len(flat.keys) - 1
    cacheable = flat.cacheable  # _last_cacheable inlined: twice per call with engine placement
    while pos > 0 and not cacheable[pos]:
        pos -= 1
    return pos


def _last_cacheable(flat: _Flat, pos: int) -> int:
    while pos > 0 and not flat.cacheable[pos]:
        pos -= 1
    return pos


def _placed(flat: _Flat, cfg: AnthropicCache) -> dict[int, int]:
    """Breakpoints of a placement policy for a request that marks none."""
    last = len(flat.keys) - 1
    if cfg.placement == "auto":
        return {_last_cacheable(flat, last): cfg.ttl_s}
    placed: dict[int, int] = {}
    if flat.n_head and flat.n_head - 1 not in flat.marks:
        placed[flat.n_head - 1] = cfg.ttl_s  # end of tools + system
    for m in range(max(len(flat.messages) - 2, 0), len(flat.messages)):
        end = flat.msg_start[m + 1] - 1 if m + 1 < len(flat.messages) else last
        if end >= flat.msg_start[m]:
            placed[_last_cacheable(flat, end)] = cfg.ttl_s
    room = cfg.max_breakpoints - len(flat.marks)
    keep = sorted(placed)[-room:] if room > 0 else []
    return {p: placed[p] for p in keep}


def _mark_errors(marks: dict[int, int], flat: _Flat, cfg: AnthropicCache) -> list[str]:
    count = len(marks) + len(flat.bad_marks)
    if count <= cfg.max_breakpoints and not flat.bad_marks and len(set(marks.values())) <= 1:
        return []  # the usual request: nothing to check further
    errors: list[str] = []
    if count > cfg.max_breakpoints:
        errors.append(
            f"{count} cache breakpoints; the provider accepts at most {cfg.max_breakpoints} "
            "and rejects the request (HTTP 400)"
        )
    if flat.bad_marks:
        errors.append("cache_control on a thinking block (the provider rejects it)")
    ttls = [ttl for _, ttl in sorted(marks.items())]
    if any(a < b for a, b in itertools.pairwise(ttls)):
        errors.append("a 1h cache breakpoint after a 5m one (1h entries must come first)")
    return errors


def strip_prior_thinking(request: Conversation) -> Conversation:
    """``request`` as its model bills it: for a model that strips earlier turns' thinking
    (``reference.keeps_prior_thinking``), without the thinking blocks of the messages before the
    last user message holding no tool_result. The same object when nothing is stripped."""
    if keeps_prior_thinking(request.model):
        return request
    messages = request.messages
    strip = next((i for i in range(len(messages) - 1, -1, -1) if _opens_turn(messages[i])), 0)
    out = list(messages)
    for i, message in enumerate(messages[:strip]):
        if isinstance(message.content, str):
            continue
        kept = tuple(
            b for b in message.content if not isinstance(b, ThinkingBlock | RedactedThinkingBlock)
        )
        if len(kept) < len(message.content):
            out[i] = message.model_copy(update={"content": kept})
    if all(a is b for a, b in zip(out, messages, strict=True)):
        return request
    return request.model_copy(update={"messages": tuple(out)})


def simulate_cache(
    requests: Iterable[tuple[Conversation, datetime | float | None]],
    counter: TokenCounter,
    config: CacheConfig | None = None,
    prefix: Sequence[PrefixPart] = (),
) -> tuple[CachedCall, ...]:
    """Run the cache over requests in sending order (default config: Anthropic, as sent)."""
    sim = CacheSimulator(config or AnthropicCache(), counter, prefix)
    return tuple(sim.step(request, when) for request, when in requests)


__all__ = [
    "TTL_1H_S",
    "TTL_5M_S",
    "AnthropicCache",
    "CacheConfig",
    "CacheSimulator",
    "CachedCall",
    "OpenAICache",
    "Placement",
    "PrefixPart",
    "simulate_cache",
    "strip_prior_thinking",
]
