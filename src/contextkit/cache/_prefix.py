"""Requests flattened to the prefix the provider's cache keys on (see :mod:`contextkit.cache`):
one position per tool, system block and message content block, each with its key (a hash chain of
block contents, ``cache_control`` left out), its running token count and the breakpoint it carries.

A request's positions are derived from the previous request's by object identity (messages reused
by structural sharing are not looked at again) and block contents are hashed once per block
object, so a session costs O(unique blocks) hashing plus cheap per-call pointer checks. Thinking of
earlier turns is stripped here for the models that drop it (:func:`strip_prior_thinking`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, cast

from pydantic import BaseModel

from contextkit.cache._config import TTL_1H_S, TTL_5M_S, CacheConfig, PrefixPart
from contextkit.messages import (
    Block,
    Conversation,
    History,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
    same_prefix,
)
from contextkit.models import resolve_model
from contextkit.tokens import MemoCounter, TokenCounter


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
    messages: History[Message] = field(default_factory=History)  # the request's own history
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
    # The Python dump, not JSON: text may hold a lone surrogate (read from a file that had one),
    # which JSON cannot encode; equal blocks still give equal dumps, so equal digests.
    return hash(repr(block.model_dump(exclude={"cache_control"}, exclude_unset=True)))


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


class _Prefixes:
    """The flattening half of :class:`~contextkit.cache.CacheSimulator`: a request becomes block
    positions with a key (the hash chain of the prefix up to there), a running token count and
    the breakpoints it carries, derived from the previous request's by object identity and
    memoised per block and per message. The simulator derives from this class and reads the
    cache against what it builds."""

    def __init__(
        self, config: CacheConfig, counter: TokenCounter, prefix: Sequence[PrefixPart] = ()
    ) -> None:
        self.config = config
        self.counter = counter
        self.prefix = tuple(prefix)
        self._flat = _Flat()
        self._shapes: dict[int, tuple[Message, _Shape]] = {}
        self._stripped: dict[int, tuple[Message, _Shape]] = {}
        self._resets = {"messages": 0, "system": 0}
        """Harness resets so far, per level: mixed into the keys of that level."""
        # id -> (obj, digest, tokens, kind): kind is a set of _THINKING / _IMAGE / _EXTRA bits
        self._digests: dict[int, tuple[object, int, int, int]] = {}
        self._strings: dict[str, int] = {}
        self._seen: set[int] = set()
        self._new = 0
        """Tokens of this request's blocks that no earlier request carried."""
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
        # The request's own history when it is one: its first ``keep`` messages equal the kept
        # ones (``keep <= shared``), and the next request, which extends it, then shares its list
        # (an O(1) ``_shared_messages``: comparing a copy would walk the history every call).
        # A tuple's new messages are appended to the kept ones (one copy of the new only).
        if isinstance(messages, History):
            flat.messages = messages
        else:
            flat.messages = flat.messages.extended(messages[keep:])
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
        messages: Sequence[Message],
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
            # the request's model (its own field), resolved once per session and id
            keeps = self._keeps[model] = resolve_model(model).keeps_prior_thinking()
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
            base += request.model_info.tool_overhead(choice)
        self._bases[key] = (request.tools, base)
        return base


def request_sizes(
    requests: Sequence[Conversation], config: CacheConfig, counter: TokenCounter
) -> list[int]:
    """Each request's input tokens as the provider bills them under ``config`` (earlier turns'
    thinking left out where the model strips it), flattened incrementally as the simulator does:
    linear in the calls of a session whose requests share their history."""
    prefixes = _Prefixes(config, counter)
    return [prefixes._flatten(request, request.model).total for request in requests]


def _shared_messages(old: Sequence[Message], new: Sequence[Message]) -> int:
    """How many leading messages are the same (structural sharing makes them the same objects)."""
    n = min(len(old), len(new))
    # O(1) for histories of one list; otherwise compared in C, which checks identity before
    # equality (faster than all(map(operator.is_, ...)), which calls a function per message).
    if n and old[n - 1] is new[n - 1] and same_prefix(old, new, n):
        return n
    for i in range(n):
        if old[i] is not new[i]:
            return i
    return n


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


def strip_prior_thinking(request: Conversation) -> Conversation:
    """``request`` as its model bills it: for a model that strips earlier turns' thinking
    (:meth:`~contextkit.models.ModelInfo.keeps_prior_thinking`), without the thinking blocks of
    the messages before the last user message holding no tool_result. The same object when
    nothing is stripped."""
    if request.model_info.keeps_prior_thinking():
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


__all__ = ["strip_prior_thinking"]
