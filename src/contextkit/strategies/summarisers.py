"""Summarisers: turn a stretch of messages into a short text that replaces it.

Contract: a :class:`Summariser` has one method,
``summarise(messages, facts, /, *, instructions=None) -> Summary``. ``Summary.usage`` is what
producing it cost (None when it cost no model call), so the caller can bill it apart from the
view. Three implementations:

- :class:`ExtractiveSummariser`: offline and deterministic. Lists the user's requests, the files and
  identifiers touched, the decisions stated, the errors seen and the open items, each section capped
  to its most recent entries. An earlier summary inside the span is carried forward (its entries
  are merged), so repeated summaries stay bounded. ``instructions`` are ignored (nothing to steer).
- :class:`AnthropicSummariser`: one ``messages.create`` call through the ``anthropic`` SDK with a
  sectioned prompt, on a configurable (usually cheaper) model. Network and API errors become
  :class:`~contextkit.errors.ContextkitError` saying what to do.
- :class:`ScriptedSummariser`: a test double. It returns its scripted texts in order, records every
  call as a frozen snapshot, and raises when it runs out or when ``assert_done`` finds steps unused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from contextkit.errors import ContextkitError
from contextkit.messages import (
    CompactionBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.session import Usage
from contextkit.strategies.base import CallFacts
from contextkit.tokens import block_text

SUMMARY_OPEN = "<context-summary>"
SUMMARY_CLOSE = "</context-summary>"
SECTIONS: tuple[str, ...] = (
    "User requests",
    "Files and identifiers",
    "Decisions",
    "Errors",
    "Open items",
)


class Summary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    usage: Usage | None = None
    model: str | None = None


@runtime_checkable
class Summariser(Protocol):
    def summarise(
        self, messages: Sequence[Message], facts: CallFacts, /, *, instructions: str | None = None
    ) -> Summary: ...


class _SummariserModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


# --------------------------------------------------------------------------------------------------
# Extractive

_PATH = re.compile(
    r"(?<![\w/])(?:[\w.-]+/)*[\w-]+\.(?:py|ts|js|tsx|json|toml|md|txt|yaml|yml|cfg|ini|rs|go|java|c|h|cpp|sh|sql|html|css)\b"
)
_CODE = re.compile(r"`([^`\n]{2,60})`")
_ERROR = re.compile(r"\b(?:\w+Error|\w+Exception|Traceback|FAILED|ERROR|error:|fatal:)")
_DECISION = re.compile(
    r"\b(?:I'll|I will|I'm going to|Let me|let's|decided|instead|the fix|root cause|because)\b",
    re.IGNORECASE,
)
_OPEN = re.compile(r"\b(?:TODO|FIXME|next step|still need|remaining|not yet|follow[- ]up)\b", re.I)
_PATH_KEYS = ("path", "file_path", "filename", "file", "pattern", "command")


class ExtractiveSummariser(_SummariserModel):
    """Offline, deterministic summary of what matters for continuing the work."""

    kind: Literal["extractive"] = "extractive"
    max_items: int = Field(8, ge=1)
    """Entries kept per section (the most recent)."""
    max_item_chars: int = Field(240, ge=20)

    def summarise(
        self, messages: Sequence[Message], facts: CallFacts, /, *, instructions: str | None = None
    ) -> Summary:
        sections: dict[str, list[str]] = {name: [] for name in SECTIONS}
        for message in messages:
            for block in message.blocks:
                self._extract(message.role, block, sections)
        lines = [f"{SUMMARY_OPEN}", f"Summary of {len(messages)} earlier messages."]
        for name in SECTIONS:
            items = _dedupe(sections[name])[-self.max_items :]
            if items:
                lines.append(f"## {name}")
                lines.extend(f"- {item}" for item in items)
        lines.append(SUMMARY_CLOSE)
        return Summary(text="\n".join(lines), usage=None, model=None)

    def _extract(self, role: str, block: object, sections: dict[str, list[str]]) -> None:
        if isinstance(block, TextBlock) and SUMMARY_OPEN in block.text:
            _merge_prior(block.text, sections)
        elif isinstance(block, CompactionBlock):
            _merge_prior(block.content or "", sections)
        elif isinstance(block, TextBlock):
            self._from_text(role, block.text, sections)
        elif isinstance(block, ToolUseBlock):
            sections["Files and identifiers"].extend(_inputs_named(block))
        elif isinstance(block, ToolResultBlock):
            self._from_result(block, sections)

    def _from_text(self, role: str, text: str, sections: dict[str, list[str]]) -> None:
        sections["Files and identifiers"].extend(_identifiers(text))
        if role == "user":
            sections["User requests"].append(self._clip(text))
            return
        for line in _sentences(text):
            if _OPEN.search(line):
                sections["Open items"].append(self._clip(line))
            elif _DECISION.search(line):
                sections["Decisions"].append(self._clip(line))

    def _from_result(self, block: ToolResultBlock, sections: dict[str, list[str]]) -> None:
        text = block.text
        sections["Files and identifiers"].extend(_identifiers(text)[:5])
        errors = [line for line in text.splitlines() if _ERROR.search(line)]
        if block.is_error and not errors and text.strip():
            errors = [text.strip().splitlines()[0]]
        sections["Errors"].extend(self._clip(line.strip()) for line in errors[-3:])
        sections["Open items"].extend(
            self._clip(line.strip()) for line in text.splitlines() if "TODO" in line
        )

    def _clip(self, text: str) -> str:
        flat = " ".join(text.split())
        if len(flat) <= self.max_item_chars:
            return flat
        return flat[: self.max_item_chars - 3] + "..."


def _dedupe(items: list[str]) -> list[str]:
    """Unique items, each at the position of its last occurrence."""
    last = {item: i for i, item in enumerate(items)}
    return [item for i, item in enumerate(items) if last[item] == i and item]


def _identifiers(text: str) -> list[str]:
    return [m.group(0) for m in _PATH.finditer(text)] + [m.group(1) for m in _CODE.finditer(text)]


def _inputs_named(block: ToolUseBlock) -> list[str]:
    if not isinstance(block.input, dict):
        return []
    out = []
    for key in _PATH_KEYS:
        value = block.input.get(key)
        if isinstance(value, str) and value:
            out.append(value if key != "command" else f"$ {value[:120]}")
    return out


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _merge_prior(text: str, sections: dict[str, list[str]]) -> None:
    """Carry the entries of an earlier summary forward, section by section."""
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("## ") and line[3:] in sections:
            current = line[3:]
        elif current is not None and line.startswith("- "):
            sections[current].append(line[2:])


# --------------------------------------------------------------------------------------------------
# Anthropic

SUMMARY_SYSTEM = (
    "You write the working memory of a coding agent whose earlier conversation is being removed "
    "from its context. Write only what the agent needs to continue the task, in these sections, "
    "each a short bullet list (write 'none' when empty):\n"
    + "\n".join(f"## {name}" for name in SECTIONS)
    + "\nKeep exact file paths, identifiers, commands, numbers and error messages. No preamble."
)


def render_transcript(messages: Sequence[Message], max_result_chars: int = 2_000) -> str:
    """A plain-text transcript of ``messages`` for a summary prompt (long results truncated)."""
    lines: list[str] = []
    for message in messages:
        for block in message.blocks:
            lines.append(_render_block(message.role, block, max_result_chars))
    return "\n".join(line for line in lines if line)


def _render_block(role: str, block: object, limit: int) -> str:
    if isinstance(block, TextBlock):
        return f"[{role}] {block.text}"
    if isinstance(block, ToolUseBlock):
        return f"[tool call {block.id}] {block_text(block)[:limit]}"
    if isinstance(block, ToolResultBlock):
        text = block.text
        cut = f" ... ({len(text) - limit:,} more characters)" if len(text) > limit else ""
        flag = " error" if block.is_error else ""
        return f"[tool result{flag} {block.tool_use_id}] {text[:limit]}{cut}"
    if isinstance(block, CompactionBlock):
        return f"[earlier summary] {block.content or ''}"
    if isinstance(block, ThinkingBlock):
        return ""  # private reasoning; the summary keeps outcomes, not deliberation
    return ""


class AnthropicSummariser(_SummariserModel):
    """A summary written by a model through the ``anthropic`` SDK (usually a cheaper one)."""

    kind: Literal["anthropic"] = "anthropic"
    model: str = "claude-haiku-4-5"
    max_tokens: int = Field(2_048, ge=64)
    max_result_chars: int = Field(2_000, ge=100)
    instructions: str | None = None
    """Extra instructions appended to the prompt (a call's own instructions replace these)."""
    client: Any = Field(None, exclude=True, repr=False)
    """An ``anthropic.Anthropic`` client; None creates one from the environment on first use."""
    _client: Any = PrivateAttr(None)

    def _get_client(self) -> Any:
        if self.client is not None:
            return self.client
        if self._client is None:
            import anthropic  # noqa: PLC0415  (only live summaries need the SDK loaded)

            self._client = anthropic.Anthropic()
        return self._client

    def summarise(
        self, messages: Sequence[Message], facts: CallFacts, /, *, instructions: str | None = None
    ) -> Summary:
        import anthropic  # noqa: PLC0415  (only live summaries need the SDK loaded)

        prompt = "Summarise this conversation:\n\n" + render_transcript(
            messages, self.max_result_chars
        )
        extra = instructions or self.instructions
        if extra:
            prompt += f"\n\nAdditional instructions:\n{extra}"
        try:
            response = self._get_client().messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=SUMMARY_SYSTEM,
                messages=[{"role": "user", "content": prompt}],
            )
        except anthropic.APIError as exc:
            raise ContextkitError(
                f"the summary call to {self.model} failed ({exc}); check the API key and model "
                "name, or use the offline ExtractiveSummariser"
            ) from exc
        text = "".join(b.text for b in response.content if getattr(b, "type", "") == "text")
        usage = Usage.from_anthropic(response.usage.model_dump())
        body = f"{SUMMARY_OPEN}\n{text.strip()}\n{SUMMARY_CLOSE}"
        return Summary(text=body, usage=usage, model=response.model or self.model)


# --------------------------------------------------------------------------------------------------
# Scripted (test double)


class SummaryCall(BaseModel):
    """What a :class:`ScriptedSummariser` was asked, frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...]
    instructions: str | None = None


class ScriptedSummariser(_SummariserModel):
    """Returns ``script`` texts in order; records each call; fails loudly when misused."""

    kind: Literal["scripted"] = "scripted"
    script: tuple[str, ...]
    usage: Usage | None = None
    model: str | None = "scripted"
    _calls: list[SummaryCall] = PrivateAttr(default_factory=list)

    @property
    def calls(self) -> tuple[SummaryCall, ...]:
        return tuple(self._calls)

    def summarise(
        self, messages: Sequence[Message], facts: CallFacts, /, *, instructions: str | None = None
    ) -> Summary:
        step = len(self._calls)
        if step >= len(self.script):
            raise AssertionError(
                f"ScriptedSummariser: call {step + 1} but only {len(self.script)} scripted"
            )
        self._calls.append(SummaryCall(messages=tuple(messages), instructions=instructions))
        return Summary(text=self.script[step], usage=self.usage, model=self.model)

    def assert_done(self) -> None:
        """Raise when some scripted steps were never used."""
        unused = len(self.script) - len(self._calls)
        if unused:
            raise AssertionError(f"ScriptedSummariser: {unused} scripted summaries never used")


__all__ = [
    "SECTIONS",
    "SUMMARY_CLOSE",
    "SUMMARY_OPEN",
    "AnthropicSummariser",
    "ExtractiveSummariser",
    "ScriptedSummariser",
    "Summariser",
    "Summary",
    "SummaryCall",
    "render_transcript",
]
