"""Summarisers: turn a stretch of messages into a short text that replaces it.

Contract: a :class:`Summariser` has one method,
``summarise(messages, facts, /, *, instructions=None) -> Summary``; one that reads the whole view
also has ``summarise_view(view, span, facts, ...)`` (:class:`ViewSummariser`). ``Summary.usage`` is
what producing it cost (None when it cost no model call), so the caller can bill it apart from the
view, even when the summary is then discarded. Three implementations:

- :class:`ExtractiveSummariser` (:mod:`contextkit.strategies._handoff`): offline and
  deterministic, a structured hand-off (goal and constraints, the latest request verbatim, what was
  done, files read and modified, decisions, open errors, next steps).
- :class:`AnthropicSummariser`: a model writes the same sections through the ``anthropic`` SDK. As
  a :class:`ViewSummariser` it sends the view itself (system, tools, every message) with the
  summary instruction appended as the final user text, on the conversation's own model, so the
  call reads the prompt cache the agent's last request wrote instead of paying a cold prefix;
  ``reuse_prefix=False`` sends a fresh transcript to ``model`` instead. A reply without text falls
  back to the extractive hand-off (its usage still billed). Network and API errors become
  :class:`~contextkit.errors.ContextkitError` saying what to do.
- :class:`ScriptedSummariser`: a test double. It returns its scripted texts in order, records every
  call as a frozen snapshot, and raises when it runs out or when ``assert_done`` finds steps unused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from contextkit.errors import ContextkitError
from contextkit.messages import (
    CompactionBlock,
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    to_payload,
)
from contextkit.session import Usage
from contextkit.strategies._base import CallFacts
from contextkit.strategies._handoff import SECTIONS, ExtractiveSummariser
from contextkit.strategies._summary_model import (
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    Summariser,
    Summary,
    ViewSummariser,
)
from contextkit.tokens import block_text


class _SummariserModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


# --------------------------------------------------------------------------------------------------
# Anthropic

SECTION_GUIDE: dict[str, str] = {
    "Goal and constraints": "what the user wants overall and every constraint or preference stated",
    "Latest request": "the user's latest request, quoted verbatim",
    "Done": "what has been done, one line per step, naming files and commands, and what passed",
    "Files read": "exact paths of the files read or searched",
    "Files modified": "exact paths of the files created or changed, with what changed",
    "Decisions": "choices made and why, so they are not reversed",
    "Findings": (
        "what each subagent or research step concluded: its answer, the facts, names, numbers and "
        "paths it reported, not only that it ran"
    ),
    "User messages": "every earlier message the user typed, quoted verbatim",
    "Open errors": "errors not yet fixed (failed commands, failing tests), with the exact message",
    "Next steps": "what remains to do, in order, starting with the step in progress",
}
HANDOFF_SECTIONS = "\n".join(f"## {name}\n({SECTION_GUIDE[name]})" for name in SECTIONS)
SUMMARY_SYSTEM = (
    "You write the hand-off of a coding agent whose earlier conversation is being removed from "
    "its context: what a colleague taking over needs to continue without asking. Write these "
    "sections, each a short bullet list (write 'none' when empty):\n"
    + HANDOFF_SECTIONS
    + "\nKeep exact file paths, identifiers, commands, numbers and error messages. No preamble."
)
SUMMARY_INSTRUCTION = (
    "Stop the task here: do not call any tool. The conversation above is about to be compacted. "
    + SUMMARY_SYSTEM.replace("You write", "Write", 1)
)
"""Appended as the final user text when the summary request replays the view (prefix reuse)."""


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
    """A hand-off summary written by a model through the ``anthropic`` SDK."""

    kind: Literal["anthropic"] = "anthropic"
    model: str = "claude-haiku-4-5"
    """The model of a fresh-transcript summary (``reuse_prefix=False``, or no view to reuse)."""
    reuse_prefix: bool = True
    """Send the view itself with the instruction appended, on the conversation's model (it reads
    the cache the last request wrote); False: a fresh transcript on :attr:`model`."""
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
        prompt = "Summarise this conversation:\n\n" + render_transcript(
            messages, self.max_result_chars
        )
        extra = instructions or self.instructions
        if extra:
            prompt += f"\n\nAdditional instructions:\n{extra}"
        body = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": SUMMARY_SYSTEM,
            "messages": [{"role": "user", "content": prompt}],
        }
        return self._send(body, messages, facts)

    def summarise_view(
        self,
        view: Conversation,
        span: Sequence[Message],
        facts: CallFacts,
        /,
        *,
        instructions: str | None = None,
    ) -> Summary:
        """The view as the agent last sent it, plus the instruction as the final user text: the
        same prefix, so the provider reads it from the cache."""
        model = facts.model or view.model
        if not self.reuse_prefix or not model or not view.messages:
            return self.summarise(span, facts, instructions=instructions)
        extra = instructions or self.instructions
        text = SUMMARY_INSTRUCTION + (f"\n\nAdditional instructions:\n{extra}" if extra else "")
        body = summary_request(view, text, model=model, max_tokens=self.max_tokens)
        return self._send(body, span, facts)

    def _send(self, body: dict[str, Any], span: Sequence[Message], facts: CallFacts) -> Summary:
        import anthropic  # noqa: PLC0415  (only live summaries need the SDK loaded)

        model = str(body["model"])
        try:
            response = self._get_client().messages.create(**body)
        except anthropic.APIError as exc:
            raise ContextkitError(
                f"the summary call to {model} failed ({exc}); check the API key and model "
                "name, or use the offline ExtractiveSummariser"
            ) from exc
        text = "".join(b.text for b in response.content if getattr(b, "type", "") == "text")
        usage = Usage.from_anthropic(response.usage.model_dump())
        used = response.model or model
        if not text.strip():  # the model called a tool or wrote nothing: paid for all the same
            fallback = ExtractiveSummariser().summarise(span, facts)
            return Summary(text=fallback.text, usage=usage, model=used)
        body_text = text.strip()
        if not body_text.startswith(SUMMARY_OPEN):
            body_text = f"{SUMMARY_OPEN}\n{body_text}\n{SUMMARY_CLOSE}"
        return Summary(text=body_text, usage=usage, model=used)


def summary_request(
    view: Conversation, instruction: str, *, model: str, max_tokens: int
) -> dict[str, Any]:
    """The view's request body with ``instruction`` as the final user text: the system, tools
    and messages exactly as the agent sends them (so the cached prefix matches), a cache
    breakpoint on the view's last block, and the instruction after it (in the last user message,
    after its tool results, or as a new user message after an assistant one)."""
    body = to_payload(view)
    body.pop("stream", None)
    body["model"] = model
    body["max_tokens"] = max(int(body.get("max_tokens") or 0), max_tokens)
    messages = [dict(m) for m in body["messages"]]
    last = messages[-1]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    if blocks and blocks[-1].get("type") not in ("thinking", "redacted_thinking"):
        blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    ask = {"type": "text", "text": instruction}
    if last["role"] == "user":
        messages[-1] = {**last, "content": [*blocks, ask]}
    else:
        messages[-1] = {**last, "content": blocks}
        messages.append({"role": "user", "content": [ask]})
    body["messages"] = messages
    return body


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
    "SUMMARY_INSTRUCTION",
    "SUMMARY_OPEN",
    "SUMMARY_SYSTEM",
    "AnthropicSummariser",
    "ExtractiveSummariser",
    "ScriptedSummariser",
    "Summariser",
    "Summary",
    "SummaryCall",
    "ViewSummariser",
    "render_transcript",
    "summary_request",
]
