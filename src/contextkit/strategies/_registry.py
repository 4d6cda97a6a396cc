"""The registry of strategies: every built-in kind (the config schema, :data:`AnyStrategy`) and the
named presets (:data:`PRESETS`, :data:`PRESET_NAMES`). Configs are parsed against it
(:mod:`._config`), the command line names its presets, and the combinators of :mod:`._compose` take
their steps from it (their models are completed here, where every leaf is known: the combinators
import no leaf).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, cast

from pydantic import Field, TypeAdapter

from contextkit.errors import ConfigError
from contextkit.strategies import PRESET_NAMES
from contextkit.strategies._compose import (
    CacheAwareGate,
    CacheTimed,
    EscalateUntilFits,
    Hysteresis,
    NoCompaction,
    OverFraction,
    Pipeline,
    StrategyFn,
    ToolResultsOver,
    When,
)
from contextkit.strategies._eviction import EvictToolResults
from contextkit.strategies._memory import PrependMemoryFiles
from contextkit.strategies._server_side import AnthropicClearToolUses, AnthropicCompact
from contextkit.strategies._strategy_model import StrategyModel
from contextkit.strategies._summary import ReplaceWithSummary
from contextkit.strategies._thinking import ClearThinking
from contextkit.strategies._window import SlidingWindow

AnyStrategy = Annotated[
    NoCompaction
    | SlidingWindow
    | EvictToolResults
    | ReplaceWithSummary
    | PrependMemoryFiles
    | ClearThinking
    | AnthropicClearToolUses
    | AnthropicCompact
    | Pipeline
    | When
    | EscalateUntilFits
    | Hysteresis
    | CacheAwareGate,
    Field(discriminator="kind"),
]
"""Every built-in strategy config, discriminated on ``kind``: the config schema. A new built-in
is its module and one line here (and, if it has a preset, one in :data:`PRESETS`)."""

StrategyField = Annotated[AnyStrategy | StrategyFn, Field(union_mode="left_to_right")]
"""A step of a combinator: a built-in (by ``kind``) or a plain function."""

for _model in (Pipeline, When, EscalateUntilFits, Hysteresis, CacheAwareGate):
    _model.model_rebuild(_types_namespace={"StrategyField": StrategyField})

# cast: mypy does not see an Annotated union as a type form TypeAdapter accepts.
STRATEGY_ADAPTER: TypeAdapter[StrategyModel] = TypeAdapter(cast("type[StrategyModel]", AnyStrategy))
SUMMARY_TRIGGER_FRACTION = 0.8
"""Presets summarise once the request holds this share of the context window (system + tools +
messages, as the server counts)..."""
COLD_SUMMARY_FRACTION = 0.4
"""... or this share when the cache is cold anyway (a pause over the TTL, a model switch, a
resumed session): the whole prefix is rewritten at that call whatever the view holds."""
KEEP_LAST_ROUNDS = 4
"""Tool rounds of the latest turn a preset summary keeps verbatim (it cuts inside the turn: a
one-prompt agent session is one turn of hundreds of calls)."""


def _summary(**params: Any) -> StrategyModel:
    params.setdefault("keep_last_rounds", KEEP_LAST_ROUNDS)
    trigger = CacheTimed(
        when_cold=OverFraction(COLD_SUMMARY_FRACTION),
        when_warm=OverFraction(SUMMARY_TRIGGER_FRACTION),
    )
    return When(trigger, ReplaceWithSummary(**params))


EVICT_TRIGGER_TOKENS = 30_000
"""Presets clear old tool results in batches, once the results in view exceed this many tokens:
one rewrite of the cached tail per batch rather than one per call. Evicting at every call (the bare
``EvictToolResults``) breaks the cache each time and, on the recorded corpus, costs more than not
compacting at all (see docs/corpus-results.md)."""
COLD_EVICT_TOKENS = 5_000
"""... or once they exceed this many when the cache is cold anyway (the rewrite is free)."""


SLIDE_HIGH, SLIDE_LOW = 0.8, 0.5
"""The sliding-window preset's high- and low-water marks, as fractions of the context window."""


def _sliding(**params: Any) -> StrategyModel:
    """A window that slides rarely: over 80% of the context window, down to 50% (each slide
    rewrites the whole cached message history, so sliding by one message per call would make every
    call a cache write); and whenever the cache is cold anyway and the view is above the 50%
    target: the rewrite costs nothing extra then, so it slides down to the target at once."""
    return Hysteresis(SlidingWindow(**params), high=SLIDE_HIGH, low=SLIDE_LOW, when_cold=SLIDE_LOW)


def _evict_trigger() -> CacheTimed:
    return CacheTimed(
        when_cold=ToolResultsOver(tokens=COLD_EVICT_TOKENS),
        when_warm=ToolResultsOver(tokens=EVICT_TRIGGER_TOKENS),
    )


def _evict(**params: Any) -> StrategyModel:
    return When(_evict_trigger(), EvictToolResults(**params))


def _evict_edits(**params: Any) -> StrategyModel:
    params.setdefault("clear_edit_inputs", True)
    return When(_evict_trigger(), EvictToolResults(**params))


def _evict_then_summary(**params: Any) -> StrategyModel:
    if params:
        raise ConfigError("preset evict-then-summary takes no parameters; write its steps out")
    return _evict() >> _summary()


def _anthropic_compact(**params: Any) -> StrategyModel:
    return AnthropicCompact(**params)


PRESETS: Mapping[str, Callable[..., StrategyModel]] = {
    "none": NoCompaction,
    "sliding-window": _sliding,
    "evict-tool-results": _evict,
    "evict-tool-results-and-edits": _evict_edits,
    "summary": _summary,
    "evict-then-summary": _evict_then_summary,
    "anthropic-clear-tool-uses": AnthropicClearToolUses,
    "anthropic-compact": _anthropic_compact,
}
"""Named strategies, timed for the prompt cache (:class:`CacheTimed`: a low bar when the cache is
cold anyway, a high-water mark otherwise). ``summary`` summarises over 80% of the window (40% when
cold), inside the latest turn when it holds more than :data:`KEEP_LAST_ROUNDS` tool rounds;
``evict-tool-results`` clears all but the last 3 results once results in view exceed
:data:`EVICT_TRIGGER_TOKENS` (:data:`COLD_EVICT_TOKENS` when cold);
``evict-tool-results-and-edits`` also clears the strings of old Edit / Write calls. The
``anthropic-*`` presets emulate the server's own edits with its defaults (the compaction emulation
cuts inside the latest turn). Parameters given to a preset go to its main strategy."""

if tuple(PRESETS) != PRESET_NAMES:  # the names the CLI shows without loading the strategies
    raise RuntimeError(f"PRESET_NAMES {PRESET_NAMES} differ from the presets {tuple(PRESETS)}")

__all__ = [
    "COLD_EVICT_TOKENS",
    "COLD_SUMMARY_FRACTION",
    "EVICT_TRIGGER_TOKENS",
    "KEEP_LAST_ROUNDS",
    "PRESETS",
    "SLIDE_HIGH",
    "SLIDE_LOW",
    "STRATEGY_ADAPTER",
    "SUMMARY_TRIGGER_FRACTION",
    "AnyStrategy",
    "StrategyField",
]
