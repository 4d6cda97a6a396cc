"""Composition: pipelines, triggers, escalation, hysteresis, and a cache-aware gate.

Contract (tenacity-style: small callables, operators, nesting flattens):

- ``a >> b`` (or ``Pipeline(a, b)``) runs ``a`` then ``b`` on ``a``'s view; receipts concatenate.
- Triggers are conditions ``(view, facts) -> bool``: :class:`OverFraction` (of
  ``facts.context_window``), :class:`OverTokens`, :class:`TurnsOver`, :class:`ToolResultsOver`,
  :class:`ColdCache` (the cached prefix must be rewritten anyway) and the planner
  :class:`CacheTimed` (act at a low bar when the cache is cold, else only at a high-water mark).
  Token triggers count what the server counts: system + tools + messages
  (:meth:`CallFacts.input_tokens`).
  They combine with ``|`` (:class:`AnyOf`) and ``&`` (:class:`AllOf`); sequencing and boolean
  combination use different operators on purpose. Deciding *whether* (a trigger) stays apart from
  *how* (a strategy): ``When(trigger, strategy)``.
- :class:`EscalateUntilFits` applies its strategies one after another, gentlest first, and stops as
  soon as the view fits ``facts.budget_tokens``.
- :class:`Hysteresis` fires only above ``high`` x window and then asks its strategy for ``low`` x
  window (through ``facts.budget_tokens``), so edits are rare and the cached prefix stays stable in
  between. Strategies that aim at the budget: ``SlidingWindow``, ``EvictToolResults`` with no keep
  limit, ``EscalateUntilFits``; others apply in full when asked.
- :class:`CacheAwareGate` applies an edit only when it pays for the cache re-write it causes within
  ``horizon_calls`` calls, or when the view does not fit its budget without it.
- Plain functions are accepted wherever a strategy or trigger is (they cannot be saved to a file).
  Every combinator returns the same view object when nothing applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contextkit.messages import Conversation
from contextkit.pricing import PER_MILLION, ModelPrice
from contextkit.strategies._base import CallFacts, Compacted, Receipt
from contextkit.strategies._strategy_model import StrategyModel
from contextkit.strategies._structure import (
    first_changed,
    prefix_tokens,
    tool_result_tokens,
    turn_starts,
)

# Sonnet-like prices (USD per million tokens; REFERENCE.md, 2026): only their ratio matters here.
DEFAULT_CACHE_WRITE = 3.75
DEFAULT_CACHE_READ = 0.30

StrategyFn = Callable[[Conversation, CallFacts], Compacted]
TriggerFn = Callable[[Conversation, CallFacts], bool]

if TYPE_CHECKING:
    # A step of a combinator, as the type checker sees it. At run time the name stands for every
    # built-in discriminated on ``kind`` or a plain function: the union of the registry
    # (:data:`contextkit.strategies._registry.StrategyField`), which holds every leaf and rebuilds
    # these models with it. The combinators import no leaf, and the leaves no combinator.
    StrategyField = StrategyModel | StrategyFn

# --------------------------------------------------------------------------------------------------
# Triggers


class TriggerModel(BaseModel):
    """Base of built-in triggers: frozen config, callable, combinable with ``|`` and ``&``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str

    def __call__(self, view: Conversation, facts: CallFacts, /) -> bool:
        raise NotImplementedError  # every concrete trigger defines it

    def __or__(self, other: Any) -> AnyOf:
        return AnyOf(*_flat(AnyOf, self), *_flat(AnyOf, other))

    def __ror__(self, other: Any) -> AnyOf:
        return AnyOf(*_flat(AnyOf, other), *_flat(AnyOf, self))

    def __and__(self, other: Any) -> AllOf:
        return AllOf(*_flat(AllOf, self), *_flat(AllOf, other))

    def __rand__(self, other: Any) -> AllOf:
        return AllOf(*_flat(AllOf, other), *_flat(AllOf, self))


def _flat(cls: type[AnyOf | AllOf], trigger: Any) -> tuple[Any, ...]:
    return trigger.triggers if isinstance(trigger, cls) else (trigger,)


class OverFraction(TriggerModel):
    """The view holds more than ``fraction`` of the model's context window."""

    kind: Literal["over-fraction"] = "over-fraction"
    fraction: float = Field(gt=0)

    def __init__(self, fraction: float | None = None, /, **data: Any) -> None:
        if fraction is not None:
            data["fraction"] = fraction
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> bool:
        return facts.input_tokens(view) > self.fraction * facts.context_window


class OverTokens(TriggerModel):
    """The view holds more than ``tokens`` input tokens."""

    kind: Literal["over-tokens"] = "over-tokens"
    tokens: int = Field(ge=0)

    def __init__(self, tokens: int | None = None, /, **data: Any) -> None:
        if tokens is not None:
            data["tokens"] = tokens
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> bool:
        return facts.input_tokens(view) > self.tokens


class TurnsOver(TriggerModel):
    """The view holds more than ``turns`` user turns."""

    kind: Literal["turns-over"] = "turns-over"
    turns: int = Field(ge=0)

    def __init__(self, turns: int | None = None, /, **data: Any) -> None:
        if turns is not None:
            data["turns"] = turns
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> bool:
        return len(turn_starts(view.messages)) > self.turns


class ToolResultsOver(TriggerModel):
    """The view's tool results add up to more than ``tokens``."""

    kind: Literal["tool-results-over"] = "tool-results-over"
    tokens: int = Field(ge=0)

    def __init__(self, tokens: int | None = None, /, **data: Any) -> None:
        if tokens is not None:
            data["tokens"] = tokens
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> bool:
        # Incremental over a growing view (re-summing every result at every call was quadratic).
        return tool_result_tokens(view.messages, facts.counter) > self.tokens


class ColdCache(TriggerModel):
    """The cached prefix is cold at this call anyway, so an edit costs no extra cache write: the
    gap since the previous call exceeds the TTL (``ttl_s``, else ``facts.cache_ttl_s``), the model
    changed (a cache is per model), or the harness reset its cache (a resumed session)."""

    kind: Literal["cold-cache"] = "cold-cache"
    ttl_s: int | None = Field(None, gt=0)
    on_model_change: bool = True
    on_reset: bool = True

    def __call__(self, view: Conversation, facts: CallFacts, /) -> bool:
        if self.on_reset and facts.cache_reset:
            return True
        switched = facts.previous_model and facts.model and facts.previous_model != facts.model
        if self.on_model_change and switched:
            return True
        if facts.previous_call_at is None:
            return False
        ttl = self.ttl_s if self.ttl_s is not None else facts.cache_ttl_s
        return (facts.now - facts.previous_call_at).total_seconds() > ttl


class CacheTimed(TriggerModel):
    """A planner's trigger: fire when the cache is cold and ``when_cold`` holds (a low bar: the
    rewrite is free), otherwise only when ``when_warm`` holds (a high-water mark: batch the edits
    so the warm cache is rewritten rarely)."""

    kind: Literal["cache-timed"] = "cache-timed"
    when_cold: TriggerField
    when_warm: TriggerField
    cold: ColdCache = Field(default_factory=ColdCache)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> bool:
        if self.when_warm(view, facts):
            return True
        return self.cold(view, facts) and self.when_cold(view, facts)


class AnyOf(TriggerModel):
    kind: Literal["any"] = "any"
    triggers: tuple[TriggerField, ...]

    def __init__(self, *triggers: Any, **data: Any) -> None:
        if triggers:
            data["triggers"] = triggers
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> bool:
        return any(t(view, facts) for t in self.triggers)


class AllOf(TriggerModel):
    kind: Literal["all"] = "all"
    triggers: tuple[TriggerField, ...]

    def __init__(self, *triggers: Any, **data: Any) -> None:
        if triggers:
            data["triggers"] = triggers
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> bool:
        return all(t(view, facts) for t in self.triggers)


AnyTrigger = Annotated[
    OverFraction
    | OverTokens
    | TurnsOver
    | ToolResultsOver
    | ColdCache
    | CacheTimed
    | AnyOf
    | AllOf,
    Field(discriminator="kind"),
]
TriggerField = Annotated[AnyTrigger | TriggerFn, Field(union_mode="left_to_right")]

# --------------------------------------------------------------------------------------------------
# Combinators


class NoCompaction(StrategyModel):
    """Keeps the view as it is (the baseline)."""

    kind: Literal["none"] = "none"

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        return Compacted(view=view)


class Pipeline(StrategyModel):
    """Runs its steps in order, each on the previous step's view."""

    kind: Literal["pipeline"] = "pipeline"
    steps: tuple[StrategyField, ...]

    def __init__(self, *steps: Any, **data: Any) -> None:
        flat = [
            s for step in steps for s in (step.steps if isinstance(step, Pipeline) else (step,))
        ]
        if flat:
            data["steps"] = tuple(flat)
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        current = view
        receipts: list[Receipt] = []
        for step in self.steps:
            result = step(current, facts)
            current = result.view
            receipts.extend(result.receipts)
        return Compacted(view=current, receipts=tuple(receipts))


StrategyModel.pipeline = Pipeline


class When(StrategyModel):
    """Applies ``strategy`` only when ``trigger`` holds."""

    kind: Literal["when"] = "when"
    trigger: TriggerField
    strategy: StrategyField

    def __init__(self, trigger: Any = None, strategy: Any = None, /, **data: Any) -> None:
        for key, value in (("trigger", trigger), ("strategy", strategy)):
            if value is not None:
                data[key] = value
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        if self.trigger(view, facts):
            return self.strategy(view, facts)
        return Compacted(view=view)


def _fits(view: Conversation, facts: CallFacts) -> bool:
    return facts.input_tokens(view) <= facts.budget_tokens


class EscalateUntilFits(StrategyModel):
    """Applies its strategies in turn (gentlest first) until the view fits the budget."""

    kind: Literal["escalate"] = "escalate"
    steps: tuple[StrategyField, ...]

    def __init__(self, *steps: Any, **data: Any) -> None:
        if steps:
            data["steps"] = steps
        super().__init__(**data)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        current = view
        receipts: list[Receipt] = []
        for step in self.steps:
            if _fits(current, facts):
                break
            result = step(current, facts)
            current = result.view
            receipts.extend(result.receipts)
        return Compacted(view=current, receipts=tuple(receipts))


class Hysteresis(StrategyModel):
    """Compacts above ``high`` x window (or above the budget), down to ``low`` x window (or the
    budget, if lower), so edits are rare. With ``when_cold``, also when the cache is cold anyway
    (:class:`ColdCache`) and the view is above ``when_cold`` x window: the rewrite is free then."""

    kind: Literal["hysteresis"] = "hysteresis"
    strategy: StrategyField
    high: float = Field(0.8, gt=0)
    low: float = Field(0.5, gt=0)
    when_cold: float | None = Field(None, gt=0)
    cold: ColdCache = Field(default_factory=ColdCache)

    def __init__(self, strategy: Any = None, /, **data: Any) -> None:
        if strategy is not None:
            data["strategy"] = strategy
        super().__init__(**data)

    @model_validator(mode="after")
    def _ordered(self) -> Hysteresis:
        if self.low >= self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        return self

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        total = facts.input_tokens(view)
        calm = total <= self.high * facts.context_window and total <= facts.budget_tokens
        if calm and not self._cold_moment(view, facts, total):
            return Compacted(view=view)  # under the high-water mark and within the budget
        target = min(facts.budget_tokens, int(self.low * facts.context_window))
        return self.strategy(view, facts.model_copy(update={"budget_tokens": target}))

    def _cold_moment(self, view: Conversation, facts: CallFacts, total: int) -> bool:
        if self.when_cold is None or total <= self.when_cold * facts.context_window:
            return False
        return self.cold(view, facts)


class CacheAwareGate(StrategyModel):
    """Lets an edit through only when it pays for the cache re-write within ``horizon_calls``.

    Cost of editing over the horizon: the unchanged prefix read, the rest of the new view written
    once at the cache-write price, then read ``horizon_calls - 1`` times. Cost of not editing: the
    old view read ``horizon_calls`` times. Tokens appended later are the same either way and left
    out. An edit the budget requires (the old view does not fit) always goes through. The price is
    ``price`` when given, else Sonnet-like ratios. An LLM summary rejected by the gate was already
    paid for: gate cheap edits (eviction, windows), not summaries.
    """

    kind: Literal["cache-gate"] = "cache-gate"
    strategy: StrategyField
    horizon_calls: int = Field(10, ge=1)
    price: ModelPrice | None = None

    def __init__(self, strategy: Any = None, /, **data: Any) -> None:
        if strategy is not None:
            data["strategy"] = strategy
        super().__init__(**data)

    def edit_pays(self, old: Conversation, new: Conversation, facts: CallFacts) -> bool:
        where = first_changed(old, new)
        if where is None:
            return False
        counter = facts.counter
        kept = prefix_tokens(old, where, counter)
        before, after = counter.count_conversation(old), counter.count_conversation(new)
        write = self.price.cache_write_5m if self.price else DEFAULT_CACHE_WRITE
        read = self.price.cache_read if self.price else DEFAULT_CACHE_READ
        n = self.horizon_calls
        edit = kept * read + max(after - kept, 0) * write + (n - 1) * after * read
        keep = n * before * read
        return edit / PER_MILLION < keep / PER_MILLION

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        result = self.strategy(view, facts)
        if result.view is view or not _fits(view, facts):
            return result
        if self.edit_pays(view, result.view, facts):
            return result
        return Compacted(view=view)


for _trigger in (CacheTimed, AnyOf, AllOf):
    _trigger.model_rebuild()

__all__ = [
    "DEFAULT_CACHE_READ",
    "DEFAULT_CACHE_WRITE",
    "AllOf",
    "AnyOf",
    "AnyTrigger",
    "CacheAwareGate",
    "CacheTimed",
    "ColdCache",
    "EscalateUntilFits",
    "Hysteresis",
    "NoCompaction",
    "OverFraction",
    "OverTokens",
    "Pipeline",
    "ToolResultsOver",
    "TriggerField",
    "TriggerModel",
    "TurnsOver",
    "When",
]
