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
from itertools import chain, islice
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
        # Only each section's most recent distinct entries are kept, so the blocks are read newest
        # first and a section stops extracting once full: the regexes then skip most of a long
        # span (reading it all cost more than tokenising the whole session).
        sections = _Recent(self.max_items)
        for message in reversed(messages):
            if sections.done():
                break
            for block in reversed(message.blocks):
                self._extract(message.role, block, sections)
        lines = [f"{SUMMARY_OPEN}", f"Summary of {len(messages)} earlier messages."]
        for name in SECTIONS:
            items = sections.items(name)
            if items:
                lines.append(f"## {name}")
                lines.extend(f"- {item}" for item in items)
        lines.append(SUMMARY_CLOSE)
        return Summary(text="\n".join(lines), usage=None, model=None)

    def _extract(self, role: str, block: object, sections: _Recent) -> None:
        if isinstance(block, TextBlock) and SUMMARY_OPEN in block.text:
            _merge_prior(block.text, sections)
        elif isinstance(block, CompactionBlock):
            _merge_prior(block.content or "", sections)
        elif isinstance(block, TextBlock):
            self._from_text(role, block.text, sections)
        elif isinstance(block, ToolUseBlock):
            if not sections.full(_FILES):
                sections.add(_FILES, _inputs_named(block))
        elif isinstance(block, ToolResultBlock):
            self._from_result(block, sections)

    def _from_text(self, role: str, text: str, sections: _Recent) -> None:
        # Within a block, entries go in section by section: each section's own order is what
        # counts (sections are independent), and they are added newest first.
        if not sections.full(_FILES):
            sections.add(_FILES, _identifiers(text))
        if role == "user":
            if not sections.full("User requests"):
                sections.add("User requests", [self._clip(text)])
            return
        if sections.full("Open items") and sections.full("Decisions"):
            return
        opened: list[str] = []
        decided: list[str] = []
        for line in _sentences(text):
            if _OPEN.search(line):
                opened.append(self._clip(line))
            elif _DECISION.search(line):
                decided.append(self._clip(line))
        sections.add("Open items", opened)
        sections.add("Decisions", decided)

    def _from_result(self, block: ToolResultBlock, sections: _Recent) -> None:
        text = block.text
        if not sections.full(_FILES):
            sections.add(_FILES, _first_identifiers(text, 5))
        if not sections.full("Errors"):
            errors = _error_lines(text)
            if block.is_error and not errors and text.strip():
                errors = [text.strip().splitlines()[0]]
            sections.add("Errors", [self._clip(line.strip()) for line in errors[-3:]])
        if "TODO" in text and not sections.full("Open items"):
            todo = [line for line in text.splitlines() if "TODO" in line]
            sections.add("Open items", [self._clip(line.strip()) for line in todo])

    def _clip(self, text: str) -> str:
        flat = " ".join(text.split())
        if len(flat) <= self.max_item_chars:
            return flat
        return flat[: self.max_item_chars - 3] + "..."


_FILES = "Files and identifiers"


class _Recent:
    """Per section, the most recent distinct non-empty entries (at most ``limit``), filled newest
    first: the same entries, in the same order, as keeping every entry, de-duplicating each at
    its last occurrence and taking the last ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._newest_first: dict[str, list[str]] = {name: [] for name in SECTIONS}
        self._seen: dict[str, set[str]] = {name: set() for name in SECTIONS}

    def full(self, section: str) -> bool:
        return len(self._newest_first[section]) >= self.limit

    def done(self) -> bool:
        return all(self.full(name) for name in SECTIONS)

    def add(self, section: str, entries: Sequence[str]) -> None:
        """Add the entries of one block (in reading order), which is older than all added so far."""
        kept, seen = self._newest_first[section], self._seen[section]
        for entry in reversed(entries):
            if len(kept) >= self.limit:
                return
            if entry and entry not in seen:
                seen.add(entry)
                kept.append(entry)

    def items(self, section: str) -> list[str]:
        return self._newest_first[section][::-1]


def _identifiers(text: str) -> list[str]:
    return [m.group(0) for m in _PATH.finditer(text)] + [m.group(1) for m in _CODE.finditer(text)]


def _first_identifiers(text: str, limit: int) -> list[str]:
    """``_identifiers(text)[:limit]``, without scanning past the ``limit``-th one."""
    paths = (m.group(0) for m in _PATH.finditer(text))
    code = (m.group(1) for m in _CODE.finditer(text))
    return list(islice(chain(paths, code), limit))


def _error_lines(text: str) -> list[str]:
    """The lines of ``text`` that mention an error."""
    # No line can match when the whole text does not (separators are not word characters and
    # no alternative spans one): one scan instead of one search per line, for most results.
    if not _ERROR.search(text):
        return []
    return [line for line in text.splitlines() if _ERROR.search(line)]


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


def _merge_prior(text: str, sections: _Recent) -> None:
    """Carry the entries of an earlier summary forward, section by section."""
    found: dict[str, list[str]] = {name: [] for name in SECTIONS}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("## ") and line[3:] in found:
            current = line[3:]
        elif current is not None and line.startswith("- "):
            found[current].append(line[2:])
    for name, entries in found.items():
        sections.add(name, entries)


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
