"""The invariants a provider enforces on a request's messages: check them, and repair what breaks.

Contract:

- ``validate(conversation, provider=...)`` returns every :class:`Violation` found, as a tuple
  sorted by position (empty when the messages would be accepted). It never raises on odd content.
- ``repair(conversation, provider=...)`` returns ``(conversation, receipts)`` such that
  ``validate(repaired, provider=...) == ()`` for every conversation built from the block types. When
  nothing needs fixing it returns the *same* conversation object and no receipts; otherwise it
  reuses every message it does not change. It never edits, reorders or drops a signed thinking (or
  redacted thinking) block; an unsigned thinking block is dropped, because the provider rejects it
  wherever it stands and nothing offline can sign it.

Rules checked (Anthropic Messages API, as its 400 errors state them):

- ``first_not_user``: the first message must use the user role (the 1P API has accepted an assistant
  first since late 2024, Bedrock and Vertex do not; a view that starts on an assistant turn is
  almost always a window cut mid-turn, so it is flagged under every rule set).
- ``consecutive_same_role``: only where the provider does not merge neighbours (``strict``). The
  Anthropic API combines consecutive same-role messages into one turn, so under ``anthropic`` the
  tool pairing rules below are checked on those combined turns.
- ``empty_content``: every message needs content except an optional final assistant message
  (prefill); a text block must hold non-whitespace text (also inside a tool result); a tool result
  with ``is_error`` true must not be empty.
- ``trailing_whitespace``: a final assistant message (prefill) must not end with whitespace.
- ``tool_use_in_user`` / ``tool_result_in_assistant``: blocks in the wrong role.
- ``thinking_signature_missing``: a thinking block without its signature.
- ``duplicate_tool_use_id``: tool_use ids are unique across the conversation.
- ``dangling_tool_use``: a tool_use whose result is not in the very next user turn (never answered,
  or answered later).
- ``orphan_tool_result``: a result whose tool_use is not in the previous assistant turn.
- ``duplicate_tool_result``: a second result for the same tool_use in one turn.
- ``results_not_first``: a turn answering tool calls must begin with its tool results.

An empty message list is not a violation: a conversation under construction may be empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from contextkit.errors import ConfigError
from contextkit.models import ModelInfo

Code = Literal[
    "first_not_user",
    "consecutive_same_role",
    "empty_content",
    "trailing_whitespace",
    "tool_use_in_user",
    "tool_result_in_assistant",
    "thinking_signature_missing",
    "duplicate_tool_use_id",
    "dangling_tool_use",
    "orphan_tool_result",
    "duplicate_tool_result",
    "results_not_first",
]
CODES: tuple[Code, ...] = get_args(Code)
"""Every violation code, in a stable order (also the order of same-position violations)."""


class Violation(BaseModel):
    """One broken rule, located by message and (where it applies) block index."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: Code
    message_index: int | None = None
    block_index: int | None = None
    detail: str = ""


class Rules(BaseModel):
    """What one provider accepts. Presets are in :data:`PROVIDER_RULES`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    merges_same_role: bool = True
    """The provider combines consecutive same-role messages into one turn before checking them."""
    first_must_be_user: bool = True
    thinking_needs_signature: bool = True
    unique_tool_use_ids: bool = True
    """Tool-use ids are unique across the whole conversation (else: within one assistant turn)."""
    instructions_between_calls: bool = False
    """A developer or system message may stand between tool calls and their results (OpenAI
    accepts one there: Codex records its instruction updates so). Such messages are the ones a
    reader marks with their original role in the ``openai`` field (see ``formats._chat_messages``);
    real user content there still breaks ``results_not_first``."""


PROVIDER_RULES: Mapping[str, Rules] = {
    "anthropic": Rules(name="anthropic"),
    "strict": Rules(name="strict", merges_same_role=False),
    # OpenAI Chat/Responses: tool-call ids may repeat across turns (gpt-4o reuses them), reasoning
    # items carry no signature, and an assistant message may follow the system message directly.
    "openai": Rules(
        name="openai",
        first_must_be_user=False,
        thinking_needs_signature=False,
        unique_tool_use_ids=False,
        instructions_between_calls=True,
    ),
}


OPENAI_WIRE_FORMATS = frozenset(
    {"openai-chat", "openai-responses", "codex", "tau-bench", "swe-agent", "mini-swe-agent"}
)
"""File formats that record OpenAI-style messages (used when a session names no model)."""


def rules_for_model(model: ModelInfo, format: str | None = None) -> Rules:
    """The rules of the provider that served ``model``: OpenAI-style for GPT, o-series, Codex and
    Gemini models, Anthropic's for the rest; with no model, by the file format's wire form."""
    name = model.name
    if name:
        openai_like = name.startswith(("gpt", "o1", "o3", "o4", "codex", "gemini", "chatgpt"))
    else:
        openai_like = format in OPENAI_WIRE_FORMATS
    return PROVIDER_RULES["openai" if openai_like else "anthropic"]


def rules_for(provider: str | Rules) -> Rules:
    """The rule set named ``provider`` (or ``provider`` itself); :class:`ConfigError` if unknown."""
    if isinstance(provider, Rules):
        return provider
    rules = PROVIDER_RULES.get(provider)
    if rules is None:
        known = ", ".join(sorted(PROVIDER_RULES))
        raise ConfigError(f"unknown provider rules {provider!r} (known: {known})")
    return rules


__all__ = [
    "CODES",
    "OPENAI_WIRE_FORMATS",
    "PROVIDER_RULES",
    "Code",
    "Rules",
    "Violation",
    "rules_for",
    "rules_for_model",
]
