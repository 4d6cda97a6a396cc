"""Token counting behind one protocol, memoised per block.

``TokenCounter`` is what every other part asks: ``count_text``, ``count_block``,
``count_message``, ``count_conversation`` (the total input of a request: tools, system, messages).
:class:`MemoCounter` derives the last three from ``count_text`` and memoises per block object, so
that pricing a session whose calls share their history (structural sharing) costs one pass over the
unique text, not one pass per call. :meth:`MemoCounter.prime` makes that pass up front for a whole
session (its new texts tokenised back to back: the tokenizer's tables stay in the processor's
cache), which is what the accountant and replay do before anything else.

Counters: :class:`ApproxCounter` (characters / 4, always available), :class:`TiktokenCounter`
(OpenAI's encodings; loading one can fail offline: :func:`get_counter` then warns once with
:class:`TokenizerUnavailableWarning` and falls back to the approximate counter),
:class:`CalibratedCounter` (a tiktoken base count scaled per Claude model family, fitted on recorded
usage: see :mod:`contextkit.calibration`) and :class:`AnthropicCountingCounter` (the provider's
counting endpoint, online and optional, cached by request content). :func:`counter_for_model`
picks the right one for a model; its ``name`` says which was picked.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast, runtime_checkable

import tiktoken
import tiktoken.model

from contextkit.errors import ContextkitError
from contextkit.messages import (
    Block,
    CompactionBlock,
    Conversation,
    DocumentBlock,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
    extends,
    to_payload,
)
from contextkit.reference import is_openai, normalise_model, parse_claude, tool_use_overhead

if TYPE_CHECKING:
    import anthropic

    from contextkit.calibration import FamilyCalibration

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


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=False)
"""Built once: ``json.dumps`` with these options builds a new encoder on every call."""
_MAKE_ENCODER: Callable[..., Callable[[object, int], Iterable[str]]] | None = getattr(
    json.encoder, "c_make_encoder", None
)
_C_JSON = (
    _MAKE_ENCODER(  # what _JSON.encode builds on every call, built once
        None, _JSON.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    if _MAKE_ENCODER is not None
    else None
)
"""The C encoder behind ``_JSON`` (about twice as fast per call; no cycle check, which parsed
JSON never needs). None where the ``_json`` accelerator is missing."""


def _compact_json(value: object) -> str:
    if _C_JSON is not None and not isinstance(value, str):
        return "".join(_C_JSON(value, 0))
    return _JSON.encode(value)


def block_text(block: Block) -> str:
    """The text of a block as the model reads it (payload JSON for structured parts)."""
    text_of = _TEXT_OF.get(type(block))
    if text_of is None:
        text_of = _TEXT_OF[type(block)] = _text_of_class(type(block))
    return text_of(block)


_TextOf: TypeAlias = Callable[[Any], str]
_TEXT_OF: dict[type, _TextOf] = {}
"""How each block class's text is read, worked out once per class: ``isinstance`` against a
pydantic model runs its metaclass's ``__instancecheck__`` in Python (about 120 ns a miss), and a
chain of them per block cost more than reading the text."""


def _text_of_class(cls: type) -> _TextOf:
    """The first of these a class is a subclass of decides (the order of an isinstance chain)."""
    if issubclass(cls, TextBlock):
        return attrgetter("text")
    if issubclass(cls, ThinkingBlock):
        return attrgetter("thinking")
    if issubclass(cls, ToolUseBlock | ServerToolUseBlock):
        return _tool_use_text
    if issubclass(cls, ToolResultBlock):
        return _tool_result_text
    if issubclass(cls, CompactionBlock):
        return _compaction_text
    if issubclass(cls, RedactedThinkingBlock):
        return _no_text  # encrypted; billed, but its size is unknowable offline (see count_block)
    if issubclass(cls, ServerToolResultBlock):
        return _server_result_text
    return _payload_text


def _tool_use_text(block: ToolUseBlock | ServerToolUseBlock) -> str:
    return block.name + " " + _compact_json(block.input)


def _tool_result_text(block: ToolResultBlock) -> str:
    if isinstance(block.content, str) or block.content is None:
        return block.content or ""
    return "\n".join(block_text(b) for b in block.content if not _is_media(b))


def _compaction_text(block: CompactionBlock) -> str:
    return block.content or ""


def _no_text(block: Block) -> str:
    return ""


def _server_result_text(block: ServerToolResultBlock) -> str:
    return _compact_json(block.content)


def _payload_text(block: Block) -> str:
    # cache_control tells the cache where to cut; the model never reads it (not billed).
    return _compact_json({k: v for k, v in to_payload(block).items() if k != "cache_control"})


def _is_media(block: Block) -> bool:
    return isinstance(block, ImageBlock | DocumentBlock)


def _new_parts(
    requests: Iterable[Conversation],
    responses: Iterable[Message | None],
    memo: Mapping[int, int],
    seen: set[int],
) -> tuple[dict[str, None], list[tuple[Block, str | None]], list[Message]]:
    """The distinct non-empty texts of these parts, in order, their blocks not in ``memo`` with
    each one's text, and the messages walked. A request's history shared with the one before
    (the same objects) is not walked again, nor is a message whose id is in ``seen`` (walked
    before: the caller keeps those alive); the ids of the messages walked are added to it."""
    texts: dict[str, None] = {}
    blocks: list[tuple[Block, str | None]] = []
    walked: list[Message] = []
    tools: object = None
    system: object = None
    before: tuple[Message, ...] = ()

    def add_blocks(parts: Iterable[Block]) -> None:
        for block in parts:  # a block twice (in two messages) is memoised once by prime
            if id(block) not in memo:
                text = _plain_text(block)
                blocks.append((block, text))
                if text:
                    texts[text] = None

    def add_messages(messages: Iterable[Message]) -> None:
        for message in messages:
            if id(message) in seen:
                continue
            seen.add(id(message))
            walked.append(message)
            if isinstance(message.content, str):
                texts[message.content] = None
            else:
                add_blocks(message.content)

    for request in requests:
        if request.tools is not tools:
            tools = request.tools
            texts.update((_tool_text(t), None) for t in request.tools if id(t) not in memo)
        if request.system is not system:
            system = request.system
            if isinstance(system, str):
                texts[system] = None
            else:
                add_blocks(request.system_blocks)
        # The common case, the history grew, by its last shared message (a change further back
        # leaves texts to be counted when asked: counts are the same, only later).
        messages, n = request.messages, len(before)
        grew = n == 0 or (n <= len(messages) and messages[n - 1] is before[-1])
        add_messages(messages[n:] if grew else messages)
        before = messages
    add_messages(r for r in responses if r is not None)
    texts.pop("", None)
    return texts, blocks, walked


def _plain_text(block: Block) -> str | None:
    """The text :meth:`MemoCounter._block` tokenises for ``block`` (None: it counts no text)."""
    plain = _PLAIN.get(type(block))
    if plain is None:
        plain = _PLAIN[type(block)] = _plain_of_class(type(block))
    return plain(block)


_PLAIN: dict[type, Callable[[Any], str | None]] = {}
""":func:`_plain_text` per block class, worked out once per class (see ``_TEXT_OF``)."""


def _plain_of_class(cls: type) -> Callable[[Any], str | None]:
    if issubclass(cls, TextBlock):
        return attrgetter("text")
    if issubclass(cls, ToolResultBlock):
        return _plain_result_text
    if issubclass(cls, ImageBlock | RedactedThinkingBlock):
        return _none
    if issubclass(cls, DocumentBlock):
        return _document_text
    return _text_of_class(cls)  # as block_text reads it, without a second table look-up


def _plain_result_text(block: ToolResultBlock) -> str:
    return block.content if isinstance(block.content, str) else _tool_result_text(block)


def _none(block: Block) -> None:
    return None


def _document_text(block: DocumentBlock) -> str:
    return _compact_json(block.source)


def _tool_text(tool: Tool) -> str:
    """The text of a tool definition as counted: its compact JSON, ``cache_control`` left out
    (it tells the cache where to cut; the model never reads it, so it is not billed)."""
    return _compact_json({k: v for k, v in to_payload(tool).items() if k != "cache_control"})


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
        self._tallies: list[tuple[tuple[Message, ...], int]] = []
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

    def _count_messages(self, messages: tuple[Message, ...]) -> int:
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

    def _count_all(self, messages: tuple[Message, ...]) -> int:
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


# --- tiktoken ---------------------------------------------------------------------------------


class TokenizerUnavailable(ContextkitError):
    """A tokenizer encoding could not be loaded (no network and no ``TIKTOKEN_CACHE_DIR`` copy)."""


class TokenizerUnavailableWarning(UserWarning):
    """Counts fall back to the approximate counter because an encoding could not be loaded."""


@cache
def _encoding(name: str) -> Any:
    """The tiktoken encoding, loaded once per process (the expensive part of a counter)."""
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises network, IO and value errors alike
        raise TokenizerUnavailable(
            f"cannot load tiktoken encoding {name!r} ({type(exc).__name__}: {exc}). "
            "Without network access, point TIKTOKEN_CACHE_DIR at a folder holding tiktoken's "
            "cached BPE files."
        ) from None


class TiktokenCounter(MemoCounter):
    """Exact counts for OpenAI models; an estimate base for Claude (its tokenizer is not public).

    Overheads follow OpenAI's cookbook for Chat Completions: 3 tokens per message, 3 to prime the
    reply. Raises :class:`TokenizerUnavailable` when the encoding cannot be loaded.
    """

    fixed = 3

    def __init__(self, encoding: str = "o200k_base") -> None:
        super().__init__()
        self.encoding = encoding
        self._enc = _encoding(encoding)

    @property
    def name(self) -> str:
        return f"tiktoken:{self.encoding}"

    def _count_text(self, text: str) -> int:
        # disallowed_special=(): text such as "<|endoftext|>" in a file is counted, not refused.
        return len(self._enc.encode(text, disallowed_special=()))


_warned_encodings: set[str] = set()


def get_counter(encoding: str = "o200k_base") -> MemoCounter:
    """A tiktoken counter, or (warning once per encoding) the approximate one if it cannot load."""
    try:
        return TiktokenCounter(encoding)
    except TokenizerUnavailable as exc:
        if encoding not in _warned_encodings:
            _warned_encodings.add(encoding)
            warnings.warn(
                f"{exc} Falling back to {ApproxCounter().name}: token counts are rough estimates.",
                TokenizerUnavailableWarning,
                stacklevel=2,
            )
        return ApproxCounter()


def default_counter() -> MemoCounter:
    """The counter to use when nothing is known about the model: o200k, else approximate."""
    return get_counter("o200k_base")


def openai_encoding(model: str) -> str:
    """tiktoken's encoding for an OpenAI model (o200k_base when tiktoken does not know it)."""
    try:
        return str(tiktoken.model.encoding_name_for_model(normalise_model(model)))
    except KeyError:
        return "o200k_base"


# --- calibrated -------------------------------------------------------------------------------


class CalibratedCounter(MemoCounter):
    """A Claude estimate: ``factor`` x a tiktoken count (``thinking_factor`` for thinking text),
    plus per-message, per-tool, per-tool-block (each tool_use and tool_result) and fixed overheads
    fitted on recorded usage, plus Anthropic's hidden tool-use prompt when tools are sent.

    Parts (blocks, messages, tools) are scaled per part and memoised; ``count_conversation`` is the
    total input of the request as billed (uncached + cache writes + cache reads).
    """

    def __init__(self, base: MemoCounter, params: FamilyCalibration, model: str | None) -> None:
        super().__init__()
        self.base = base
        self.params = params
        self.model = model
        self.per_message = round(params.per_message)
        self.per_tool = round(params.per_tool)
        self.fixed = round(params.fixed)
        self.per_tool_block = round(params.per_tool_block)

    @property
    def name(self) -> str:
        encoding = getattr(self.base, "encoding", self.base.name).removesuffix("_base")
        status = "" if self.params.fitted else ", not fitted"
        label = self.model or self.params.family
        return f"calibrated:{label} ({encoding} x{self.params.factor:.2f}{status})"

    def _count_text(self, text: str) -> int:
        return round(self.params.factor * self.base.count_text(text))

    def _count_texts(self, texts: list[str]) -> list[int]:
        self.base._learn(texts)  # the base tokenises them back to back; this scales its counts
        return super()._count_texts(texts)

    def _block(self, block: Block, text: str | None) -> int:
        if isinstance(block, ThinkingBlock):
            return round(self.params.thinking_scale * self.base.count_text(block.thinking))
        tokens = super()._block(block, text)
        if isinstance(block, ToolUseBlock | ToolResultBlock):
            tokens += self.per_tool_block
        return tokens

    def count_conversation(self, conversation: Conversation) -> int:
        total = super().count_conversation(conversation)
        if conversation.tools:
            extra = conversation.model_extra or {}
            total += tool_use_overhead(self.model or conversation.model, extra.get("tool_choice"))
        return total


def counter_for_model(model: str | None) -> TokenCounter:
    """The best offline counter for ``model``.

    Claude models of a calibrated family: :class:`CalibratedCounter`; OpenAI models: tiktoken with
    the model's encoding; anything else (or no tokenizer available): the approximate counter.
    """
    if model and is_openai(model):
        return get_counter(openai_encoding(model))
    if model and parse_claude(model) is not None:
        # Imported here: calibration builds on this module's counters.
        from contextkit.calibration import default_calibration  # noqa: PLC0415

        params = default_calibration().for_model(model)
        if params is not None:
            base = get_counter(params.base_encoding)
            if isinstance(base, TiktokenCounter):
                return CalibratedCounter(base, params, model)
            return base  # the factor was fitted on a tiktoken count: meaningless on characters
    return ApproxCounter()


# --- the provider's counting endpoint ---------------------------------------------------------

_REQUEST_FIELDS = ("system", "tools", "tool_choice", "thinking")


class AnthropicCountingCounter(MemoCounter):
    """Counts through ``POST /v1/messages/count_tokens`` (free, rate-limited, online).

    ``count_conversation`` asks the endpoint for the whole request, exactly as it would be sent.
    Parts are counted as a one-message request minus the framing of an empty-ish one, an estimate.
    Results are cached by a hash of the request content, in memory and (with ``cache_dir``) on disk,
    so a replay asks the endpoint once per distinct request.
    """

    per_message = 0

    def __init__(
        self,
        model: str,
        client: anthropic.Anthropic | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        super().__init__()
        if client is None:
            import anthropic  # noqa: PLC0415 - heavy, and only this optional counter needs it

            client = anthropic.Anthropic()
        self.model = model
        self.client = client
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._cache: dict[str, int] = {}
        self.requests_made = 0

    @property
    def name(self) -> str:
        return f"anthropic-count:{self.model}"

    def count_request(self, request: Mapping[str, Any]) -> int:
        """Input tokens of a request body (``messages`` plus optional system, tools, ...)."""
        body = {"model": self.model, "messages": request["messages"]}
        body |= {k: request[k] for k in _REQUEST_FIELDS if request.get(k) is not None}
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        if key in self._cache:
            return self._cache[key]
        value = self._disk_get(key)
        if value is None:
            result = self.client.messages.count_tokens(**body)
            self.requests_made += 1
            value = int(result.input_tokens)
            self._disk_put(key, value)
        self._cache[key] = value
        return value

    def _disk_get(self, key: str) -> int | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / f"{key}.json"
        try:
            return int(json.loads(path.read_text())["input_tokens"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent or unreadable: ask the endpoint again

    def _disk_put(self, key: str, value: int) -> None:
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            (self.cache_dir / f"{key}.json").write_text(json.dumps({"input_tokens": value}))

    def count_conversation(self, conversation: Conversation) -> int:
        payload = to_payload(conversation)
        if not payload.get("messages"):
            payload["messages"] = [{"role": "user", "content": "."}]
        return self.count_request(payload)

    def _framing(self) -> int:
        return self.count_request({"messages": [{"role": "user", "content": "."}]}) - 1

    def prime(
        self, requests: Iterable[Conversation], responses: Iterable[Message | None] = ()
    ) -> None:
        """Nothing to do ahead: each part counted here is a request to the endpoint, and whole
        requests are what this counter is asked for."""

    def _count_text(self, text: str) -> int:
        count = self.count_request({"messages": [{"role": "user", "content": text}]})
        return max(count - self._framing(), 0)

    def count_tool(self, tool: Tool) -> int:
        def compute() -> int:
            request = {"messages": [{"role": "user", "content": "."}], "tools": [to_payload(tool)]}
            hidden = tool_use_overhead(self.model)
            return max(self.count_request(request) - self._framing() - 1 - hidden, 0)

        return self._memoised(tool, compute)


__all__ = [
    "IMAGE_TOKENS_DEFAULT",
    "AnthropicCountingCounter",
    "ApproxCounter",
    "CalibratedCounter",
    "MemoCounter",
    "TiktokenCounter",
    "TokenCounter",
    "TokenizerUnavailable",
    "TokenizerUnavailableWarning",
    "block_text",
    "counter_for_model",
    "default_counter",
    "get_counter",
    "openai_encoding",
]
