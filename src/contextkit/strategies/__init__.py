"""Strategies that shape the view sent to the model, and their composition.

A strategy is ``strategy(view, facts) -> Compacted``. Built-ins are frozen config models (``kind``):
:class:`SlidingWindow`, :class:`EvictToolResults`, :class:`ReplaceWithSummary`,
:class:`PrependMemoryFiles`, :class:`ClearThinking`, and emulations of Anthropic's server-side
:class:`AnthropicClearToolUses` and :class:`AnthropicCompact`. They compose with ``>>``,
:class:`When` + triggers (``|``, ``&``), :class:`EscalateUntilFits`, :class:`Hysteresis` and
:class:`CacheAwareGate`, timed for the prompt cache with :class:`ColdCache` and the
:class:`CacheTimed` planner; configs load from TOML/JSON or inline specs
(:func:`strategy_from_spec`).
"""

from contextkit.strategies._structure import clear_message_memo
from contextkit.strategies.base import CallFacts, Compacted, Receipt, Strategy
from contextkit.strategies.compose import (
    AllOf,
    AnyOf,
    AnyStrategy,
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
    ToolResultsOver,
    TurnsOver,
    When,
)
from contextkit.strategies.config import (
    PRESETS,
    dump_strategy,
    load_strategy,
    parse_strategy,
    parse_strategy_spec,
    save_strategy,
    strategy_from_spec,
)
from contextkit.strategies.eviction import EvictToolResults
from contextkit.strategies.handoff import ExtractiveSummariser
from contextkit.strategies.memory import FileMemoryReader, MemoryReader, PrependMemoryFiles
from contextkit.strategies.server_side import AnthropicClearToolUses, AnthropicCompact
from contextkit.strategies.summarisers import (
    AnthropicSummariser,
    ScriptedSummariser,
    Summariser,
    Summary,
    ViewSummariser,
)
from contextkit.strategies.summary import ReplaceWithSummary
from contextkit.strategies.thinking import ClearThinking
from contextkit.strategies.window import SlidingWindow

__all__ = [
    "PRESETS",
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
    "Summariser",
    "Summary",
    "ToolResultsOver",
    "TurnsOver",
    "ViewSummariser",
    "When",
    "clear_message_memo",
    "dump_strategy",
    "load_strategy",
    "parse_strategy",
    "parse_strategy_spec",
    "save_strategy",
    "strategy_from_spec",
]
