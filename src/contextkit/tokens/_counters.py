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
usage: see :mod:`contextkit.tokens`) and :class:`AnthropicCountingCounter` (the provider's
counting endpoint, online and optional, cached by request content). :func:`counter_for`
picks the right one for a model; its ``name`` says which was picked.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
import warnings
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tiktoken
import tiktoken.model

from contextkit.errors import ContextkitError
from contextkit.messages import (
    Block,
    Conversation,
    Message,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
    to_payload,
)
from contextkit.models import ModelInfo, resolve_model
from contextkit.tokens._calibration import FamilyCalibration, default_calibration
from contextkit.tokens._memo import ApproxCounter, MemoCounter, TokenCounter

if TYPE_CHECKING:
    import anthropic

# --- tiktoken ---------------------------------------------------------------------------------


class TokenizerUnavailable(ContextkitError):
    """A tokenizer encoding could not be loaded (no network and no ``TIKTOKEN_CACHE_DIR`` copy)."""


class TokenizerUnavailableWarning(UserWarning):
    """Counts fall back to the approximate counter because an encoding could not be loaded."""


class UnfittedTokenizerWarning(UserWarning):
    """A model's counts use a calibration not fitted to its tokenizer (a model that shipped after
    the last fit), and the session has no usage to measure its own."""


_failed_encodings: dict[str, str] = {}
"""Encodings that could not be loaded, and why: tried once per process (a download that fails
offline costs about 120 ms, and a folder of sessions would pay it for every session)."""


@cache
def _encoding(name: str) -> Any:
    """The tiktoken encoding, loaded once per process (the expensive part of a counter)."""
    if name in _failed_encodings:
        raise TokenizerUnavailable(_failed_encodings[name])
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises network, IO and value errors alike
        reason = (
            f"cannot load tiktoken encoding {name!r} ({type(exc).__name__}: {exc}). "
            "Without network access, point TIKTOKEN_CACHE_DIR at a folder holding tiktoken's "
            "cached BPE files."
        )
        _failed_encodings[name] = reason
        raise TokenizerUnavailable(reason) from None


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


# --- calibrated -------------------------------------------------------------------------------


class CalibratedCounter(MemoCounter):
    """A Claude estimate: ``factor`` x a tiktoken count (``thinking_factor`` for thinking text),
    plus per-message, per-tool, per-tool-block (each tool_use and tool_result) and fixed overheads
    fitted on recorded usage, plus Anthropic's hidden tool-use prompt when tools are sent.

    Parts (blocks, messages, tools) are scaled per part and memoised; ``count_conversation`` is the
    total input of the request as billed (uncached + cache writes + cache reads).
    """

    def __init__(self, base: MemoCounter, params: FamilyCalibration, model: ModelInfo) -> None:
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
        if self.params.note.startswith("measured on this session"):
            status = ", measured on this session's usage"
        label = self.model.id or self.params.family
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
            model = self.model if self.model.id else conversation.model_info
            total += model.tool_overhead(extra.get("tool_choice"))
        return total


def counter_for(model: ModelInfo) -> TokenCounter:
    """The best offline counter for ``model``.

    Claude models of a calibrated family: :class:`CalibratedCounter`; OpenAI models: tiktoken with
    the model's encoding; anything else (or no tokenizer available): the approximate counter.
    """
    if model.tokenizer is not None:
        return get_counter(model.tokenizer)
    if model.is_claude:
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
        self.info = resolve_model(model)
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
            hidden = self.info.tool_overhead()
            return max(self.count_request(request) - self._framing() - 1 - hidden, 0)

        return self._memoised(tool, compute)


__all__ = [
    "AnthropicCountingCounter",
    "CalibratedCounter",
    "TiktokenCounter",
    "TokenizerUnavailable",
    "TokenizerUnavailableWarning",
    "counter_for",
    "default_counter",
    "get_counter",
]
