"""Offline emulations of Anthropic's server-side context management, with the same parameters.

Contract: each emulation applies, before the call, the edit the server would apply, so that a
replay can compare it with client-side strategies. Parameters and defaults follow the API
(beta ``context-management-2025-06-27`` and ``compact-2026-01-12``, as of 2026):

:class:`AnthropicClearToolUses` (``clear_tool_uses_20250919``)
    Fires when the view's input tokens exceed ``trigger_tokens`` (default 100,000), or, when
    ``trigger_tool_uses`` is set, when the view holds more tool uses than that. Clears every tool
    result except the ``keep`` most recent (default 3), skipping ``exclude_tools``; clears the
    calls' inputs too when ``clear_tool_inputs`` is true or names the tool; does nothing unless at
    least ``clear_at_least`` tokens are freed (default: no minimum). Differences from the server:
    the placeholder text is contextkit's (the server's is not documented byte for byte), and
    results in the last message (not yet read by the model) are never cleared.

:class:`AnthropicCompact` (``compact_20260112``)
    Fires when the view's input tokens exceed ``trigger_tokens`` (default 150,000; the API's
    minimum is 50,000; counted as the server counts: system + tools + messages). The history
    becomes a ``compaction`` block holding the summary (written by ``summariser``, offline by
    default; ``instructions`` steer it like the API's parameter, which replaces the default summary
    prompt). When the latest turn holds more than ``keep_last_rounds`` tool rounds (a one-prompt
    agent session), the summary covers everything before its last rounds: the view opens with the
    latest request's message holding the block and then the request verbatim, followed by the
    kept rounds untouched (their signed thinking included). Otherwise the block opens the view as
    the first (user) message, followed by the answer that closed the previous turn and the latest
    turn verbatim. Difference from the server: the server returns the block in its assistant
    response; keeping the latest request and rounds verbatim keeps the view valid and the request
    answerable offline. ``pause_after_compaction`` is carried for parity and
    reported on the receipt (a harness would see ``stop_reason: "compaction"``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from contextkit.messages import CompactionBlock, Conversation, ToolUseBlock
from contextkit.strategies._base import CallFacts, Compacted
from contextkit.strategies._eviction import EvictionPlan, evict
from contextkit.strategies._strategy_model import StrategyModel
from contextkit.strategies._summarisers import SUMMARY_CLOSE, SUMMARY_OPEN, ExtractiveSummariser
from contextkit.strategies._summary import SummariserField, summarise_head, summarise_with

COMPACT_MIN_TRIGGER = 50_000


def count_tool_uses(view: Conversation) -> int:
    return sum(
        isinstance(b, ToolUseBlock)
        for m in view.messages
        if m.role == "assistant" and not isinstance(m.content, str)
        for b in m.content
    )


class AnthropicClearToolUses(StrategyModel):
    """Emulates ``clear_tool_uses_20250919``."""

    kind: Literal["anthropic-clear-tool-uses"] = "anthropic-clear-tool-uses"
    trigger_tokens: int = Field(100_000, ge=1)
    trigger_tool_uses: int | None = Field(None, ge=1)
    """When set, the trigger is this many tool uses instead of input tokens."""
    keep: int = Field(3, ge=0)
    clear_at_least: int | None = Field(None, ge=0)
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool | tuple[str, ...] = False

    def fires(self, view: Conversation, facts: CallFacts) -> bool:
        if self.trigger_tool_uses is not None:
            return count_tool_uses(view) > self.trigger_tool_uses
        return facts.input_tokens(view) > self.trigger_tokens

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        if not self.fires(view, facts):
            return Compacted(view=view)
        plan = EvictionPlan(
            strategy=self.kind,
            keep_last=self.keep,
            keep_tokens=None,
            min_result_tokens=0,
            exclude_tools=frozenset(self.exclude_tools),
            clear_inputs=(
                self.clear_tool_inputs
                if isinstance(self.clear_tool_inputs, bool)
                else frozenset(self.clear_tool_inputs)
            ),
            min_freed_tokens=self.clear_at_least or 0,
        )
        # clear_at_least is a hard rule on the server, even over budget: emulate it exactly.
        strict = facts.model_copy(update={"budget_tokens": 2**62})
        return evict(view, strict, plan)


class AnthropicCompact(StrategyModel):
    """Emulates ``compact_20260112``."""

    kind: Literal["anthropic-compact"] = "anthropic-compact"
    trigger_tokens: int = Field(150_000, ge=COMPACT_MIN_TRIGGER)
    instructions: str | None = None
    pause_after_compaction: bool = False
    summariser: SummariserField = Field(default_factory=ExtractiveSummariser)
    keep_last_rounds: int | None = Field(3, ge=1)
    """Compact inside the latest turn too when it holds more tool rounds than this (the server
    summarises the current turn); None: only the turns before it."""

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        if facts.input_tokens(view) <= self.trigger_tokens:
            return Compacted(view=view)
        result = summarise_head(
            view,
            facts,
            keep_last_turns=1,
            keep_last_rounds=self.keep_last_rounds,
            pin_first=False,
            summarise=summarise_with(self.summariser, view, facts, self.instructions),
            make_block=_compaction_block,
            strategy=self.kind,
        )
        if self.pause_after_compaction and result.receipts:
            receipt = result.receipts[0]
            paused = receipt.model_copy(update={"detail": receipt.detail + "; paused"})
            return Compacted(view=result.view, receipts=(paused,))
        return result


def _compaction_block(text: str) -> CompactionBlock:
    # The server's block carries the bare summary; strip contextkit's summary markers.
    body = text.removeprefix(SUMMARY_OPEN).removesuffix(SUMMARY_CLOSE).strip()
    return CompactionBlock(content=body)


__all__ = ["COMPACT_MIN_TRIGGER", "AnthropicClearToolUses", "AnthropicCompact", "count_tool_uses"]
