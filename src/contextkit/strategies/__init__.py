"""Strategies that shape the view sent to the model, and their composition.

A strategy is ``strategy(view, facts) -> Compacted``. Built-ins are frozen config models (``kind``)
deriving from :class:`StrategyModel`: :class:`SlidingWindow`, :class:`EvictToolResults`,
:class:`ReplaceWithSummary`, :class:`PrependMemoryFiles`, :class:`ClearThinking`, and emulations of
Anthropic's server-side :class:`AnthropicClearToolUses` and :class:`AnthropicCompact`. They compose
with ``>>``, :class:`When` + triggers (``|``, ``&``), :class:`EscalateUntilFits`,
:class:`Hysteresis` and :class:`CacheAwareGate`, timed for the prompt cache with :class:`ColdCache`
and the :class:`CacheTimed` planner; configs load from TOML/JSON or inline specs
(:func:`strategy_from_spec`). Every kind and every preset is in the registry (:mod:`._registry`:
:data:`AnyStrategy`, :data:`PRESETS`).

Other packages import this package, never its modules (all private). The names load on first use
(PEP 562): :data:`PRESET_NAMES` costs nothing to import, so the command line lists the presets in
its help without loading the strategies (the registry checks the two agree).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

PRESET_NAMES: tuple[str, ...] = (
    "none",
    "sliding-window",
    "evict-tool-results",
    "evict-tool-results-and-edits",
    "summary",
    "evict-then-summary",
    "anthropic-clear-tool-uses",
    "anthropic-compact",
)
"""The presets by name, in the registry's order (:data:`PRESETS` builds them)."""

if TYPE_CHECKING:
    from contextkit.strategies._base import (
        CallFacts,
        Compacted,
        Receipt,
        Strategy,
        head_tokens,
    )
    from contextkit.strategies._compose import (
        AllOf,
        AnyOf,
        AnyTrigger,
        CacheAwareGate,
        CacheTimed,
        ColdCache,
        EscalateUntilFits,
        Hysteresis,
        NoCompaction,
        OverFraction,
        OverTokens,
        Pipeline,
        StrategyFn,
        ToolResultsOver,
        TriggerFn,
        TurnsOver,
        When,
    )
    from contextkit.strategies._config import (
        dump_strategy,
        load_strategy,
        parse_strategy,
        parse_strategy_spec,
        save_strategy,
        strategy_from_spec,
    )
    from contextkit.strategies._eviction import (
        CLEARED_FIELD_PREFIX,
        PLACEHOLDER_PREFIX,
        EvictToolResults,
        is_evicted,
        placeholder,
    )
    from contextkit.strategies._handoff import (
        SUBAGENT_TOOLS,
        ExtractiveSummariser,
    )
    from contextkit.strategies._memory import (
        FileMemoryReader,
        MemoryReader,
        PrependMemoryFiles,
        is_memory_block,
    )
    from contextkit.strategies._registry import (
        PRESETS,
        AnyStrategy,
    )
    from contextkit.strategies._server_side import (
        AnthropicClearToolUses,
        AnthropicCompact,
    )
    from contextkit.strategies._strategy_model import (
        StrategyModel,
    )
    from contextkit.strategies._structure import (
        clear_message_memo,
    )
    from contextkit.strategies._summarisers import (
        SUMMARY_INSTRUCTION,
        AnthropicSummariser,
        ScriptedSummariser,
        Summariser,
        Summary,
        ViewSummariser,
    )
    from contextkit.strategies._summary import (
        ReplaceWithSummary,
        is_summary_block,
    )
    from contextkit.strategies._thinking import (
        ClearThinking,
    )
    from contextkit.strategies._window import (
        SlidingWindow,
    )

_HOME: dict[str, str] = {
    "clear_message_memo": "_structure",
    "CallFacts": "_base",
    "Compacted": "_base",
    "Receipt": "_base",
    "Strategy": "_base",
    "head_tokens": "_base",
    "StrategyModel": "_strategy_model",
    "AllOf": "_compose",
    "AnyOf": "_compose",
    "AnyTrigger": "_compose",
    "CacheAwareGate": "_compose",
    "CacheTimed": "_compose",
    "ColdCache": "_compose",
    "EscalateUntilFits": "_compose",
    "Hysteresis": "_compose",
    "NoCompaction": "_compose",
    "OverFraction": "_compose",
    "OverTokens": "_compose",
    "Pipeline": "_compose",
    "StrategyFn": "_compose",
    "ToolResultsOver": "_compose",
    "TriggerFn": "_compose",
    "TurnsOver": "_compose",
    "When": "_compose",
    "AnyStrategy": "_registry",
    "PRESETS": "_registry",
    "dump_strategy": "_config",
    "load_strategy": "_config",
    "parse_strategy": "_config",
    "parse_strategy_spec": "_config",
    "save_strategy": "_config",
    "strategy_from_spec": "_config",
    "CLEARED_FIELD_PREFIX": "_eviction",
    "EvictToolResults": "_eviction",
    "PLACEHOLDER_PREFIX": "_eviction",
    "is_evicted": "_eviction",
    "placeholder": "_eviction",
    "ExtractiveSummariser": "_handoff",
    "SUBAGENT_TOOLS": "_handoff",
    "FileMemoryReader": "_memory",
    "MemoryReader": "_memory",
    "PrependMemoryFiles": "_memory",
    "is_memory_block": "_memory",
    "AnthropicClearToolUses": "_server_side",
    "AnthropicCompact": "_server_side",
    "AnthropicSummariser": "_summarisers",
    "SUMMARY_INSTRUCTION": "_summarisers",
    "ScriptedSummariser": "_summarisers",
    "Summariser": "_summarisers",
    "Summary": "_summarisers",
    "ViewSummariser": "_summarisers",
    "ReplaceWithSummary": "_summary",
    "is_summary_block": "_summary",
    "ClearThinking": "_thinking",
    "SlidingWindow": "_window",
}
"""Where each public name is defined (the module behind this surface)."""


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # The registry first, whatever the name: it completes the combinators' models with every leaf
    # and gives every built-in ``>>`` (a leaf loaded alone would be neither).
    importlib.import_module(f"{__name__}._registry")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


__all__ = [
    "CLEARED_FIELD_PREFIX",
    "PLACEHOLDER_PREFIX",
    "PRESETS",
    "PRESET_NAMES",
    "SUBAGENT_TOOLS",
    "SUMMARY_INSTRUCTION",
    "AllOf",
    "AnthropicClearToolUses",
    "AnthropicCompact",
    "AnthropicSummariser",
    "AnyOf",
    "AnyStrategy",
    "AnyTrigger",
    "CacheAwareGate",
    "CacheTimed",
    "CallFacts",
    "ClearThinking",
    "ColdCache",
    "Compacted",
    "EscalateUntilFits",
    "EvictToolResults",
    "ExtractiveSummariser",
    "FileMemoryReader",
    "Hysteresis",
    "MemoryReader",
    "NoCompaction",
    "OverFraction",
    "OverTokens",
    "Pipeline",
    "PrependMemoryFiles",
    "Receipt",
    "ReplaceWithSummary",
    "ScriptedSummariser",
    "SlidingWindow",
    "Strategy",
    "StrategyFn",
    "StrategyModel",
    "Summariser",
    "Summary",
    "ToolResultsOver",
    "TriggerFn",
    "TurnsOver",
    "ViewSummariser",
    "When",
    "clear_message_memo",
    "dump_strategy",
    "head_tokens",
    "is_evicted",
    "is_memory_block",
    "is_summary_block",
    "load_strategy",
    "parse_strategy",
    "parse_strategy_spec",
    "placeholder",
    "save_strategy",
    "strategy_from_spec",
]
