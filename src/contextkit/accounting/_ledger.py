"""The ledger: what every call of a session sent, what the cache made of it, and what it cost.

Contract: :func:`price_session` simulates the prompt cache over a session's requests
(:mod:`contextkit.cache`) and returns a :class:`Ledger`: per call the input tokens by class, the
output, the cost (``ModelPrice.cost`` per call, then summed; NaN where no price is known), the
context size and the tokens sent for the first time. When every call has recorded usage the
recorded figures and their cost stand beside the simulated ones (:attr:`Ledger.recorded`), and
:meth:`Ledger.cost_error` says how far the simulation is from them.

Claude Code files omit the system prompt and tools (``Session.prefix_known=False``). Their size is
inferred from the first call's recorded usage (recorded total input minus the counted request) and
stands before every request as a constant prefix; the part the first call read from the cache was
cached before the session (by an earlier session or a side request), so it starts warm. The ledger
says so: :attr:`Ledger.prefix_inferred_tokens` and a note.

Derived figures: cumulative input, the resend ratio (input tokens sent over unique tokens), and a
least-squares fit of cumulative input against call index ``a + b*k + c*k^2``: with the full history
re-sent every call, ``c`` is about half the average growth of the context per call.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from operator import attrgetter
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from contextkit._gc import no_cycle_collection
from contextkit.accounting._calibrate import session_counter
from contextkit.accounting._disagreement import gap_carrier
from contextkit.accounting._hidden import recorded_ttl
from contextkit.accounting._misses import (
    MissModel,
    apply_misses,
    session_miss_model,
    shipped_miss_model,
)
from contextkit.accounting._omitted import Omitted, measure_omitted
from contextkit.cache import (
    AnthropicCache,
    CacheConfig,
    CachedCall,
    CacheSimulator,
    Placement,
    PrefixPart,
    automatic_cache,
    cache_note,
)
from contextkit.messages import Conversation
from contextkit.models import UNKNOWN_MODEL, ModelInfo
from contextkit.pricing import (
    PER_MILLION,
    ModelPrice,
    UnknownPriceWarning,
    price_or_warn,
)
from contextkit.session import Call, Session, Usage
from contextkit.tokens import MemoCounter, TokenCounter, counter_for

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
CLASSES = ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")
"""Token classes in the order of :meth:`TokenTable.totals` (``input`` is the uncached input)."""


def _ints(values: Sequence[int]) -> IntArray:
    array: IntArray = np.asarray(values, dtype=np.int64)
    array.setflags(write=False)  # the ledger is a value: nobody edits it in place
    return array


def _dollars(values: Sequence[float | None]) -> FloatArray:
    array: FloatArray = np.asarray([math.nan if v is None else v for v in values], np.float64)
    array.setflags(write=False)
    return array


class TokenCounts(Protocol):
    """Tokens of one call by class: a :class:`~contextkit.session.Usage` or a simulated
    :class:`~contextkit.cache.CachedCall`."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def cache_write_5m(self) -> int: ...
    @property
    def cache_write_1h(self) -> int: ...
    @property
    def cache_read(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...


@dataclass(frozen=True)
class TokenTable:
    """Tokens by class per call (read-only arrays of equal length) and the cost of each call."""

    input: IntArray
    cache_write_5m: IntArray
    cache_write_1h: IntArray
    cache_read: IntArray
    output: IntArray
    cost_usd: FloatArray
    """USD per call; NaN where the model's price is unknown."""
    input_cost_usd: FloatArray
    """USD per call for the input alone (the call priced with no output)."""

    @classmethod
    def from_usages(
        cls,
        usages: Sequence[TokenCounts],
        costs: Sequence[float | None],
        input_costs: Sequence[float | None],
    ) -> TokenTable:
        def column(name: str) -> IntArray:
            return _ints(list(map(attrgetter(name), usages)))  # in C: no getattr call per call

        return cls(
            input=column("input_tokens"),
            cache_write_5m=column("cache_write_5m"),
            cache_write_1h=column("cache_write_1h"),
            cache_read=column("cache_read"),
            output=column("output_tokens"),
            cost_usd=_dollars(costs),
            input_cost_usd=_dollars(input_costs),
        )

    @property
    def total_input(self) -> IntArray:
        return self.input + self.cache_write_5m + self.cache_write_1h + self.cache_read

    @property
    def total_cost(self) -> float | None:
        """USD for the whole session, or None when any call's price is unknown."""
        if self.cost_usd.size and np.isnan(self.cost_usd).any():
            return None
        return float(self.cost_usd.sum())

    def totals(self) -> dict[str, int | float | None]:
        """``{"input", "cache_write_5m", "cache_write_1h", "cache_read", "output", "cost_usd"}``."""
        out: dict[str, int | float | None] = {k: int(getattr(self, k).sum()) for k in CLASSES}
        out["cost_usd"] = self.total_cost
        return out


@dataclass(frozen=True)
class Ledger:
    """One session priced call by call."""

    path: str
    format: str
    model: str | None
    counter: str
    """The token counter that produced the simulated figures (they are estimates for Claude)."""
    cache: CacheConfig
    simulated: TokenTable
    context_tokens: IntArray
    new_tokens: IntArray
    """Per call, tokens of content no earlier call sent."""
    recorded: TokenTable | None = None
    """The provider's billed figures, when every call recorded usage."""
    prefix_inferred_tokens: int | None = None
    """Size of a hidden system prompt + tools inferred from recorded usage (None: not inferred)."""
    errors: tuple[tuple[str, ...], ...] = ()
    """Per call, rules of the provider the request breaks (``CachedCall.errors``)."""
    notes: tuple[str, ...] = field(default=())

    @property
    def calls(self) -> int:
        return int(self.context_tokens.size)

    @property
    def resent_tokens(self) -> IntArray:
        return self.context_tokens - self.new_tokens

    def cumulative_input(self) -> IntArray:
        return np.cumsum(self.context_tokens)

    @property
    def resend_ratio(self) -> float | None:
        """Input tokens sent over unique tokens (1.0: nothing was sent twice)."""
        unique = int(self.new_tokens.sum())
        return float(self.context_tokens.sum()) / unique if unique else None

    def quadratic_fit(self) -> tuple[float, float, float] | None:
        """``(a, b, c)`` of the least-squares fit ``cumulative_input ~ a + b*k + c*k^2``, k = 1..n
        (None below three calls)."""
        if self.calls < 3:
            return None
        k = np.arange(1, self.calls + 1, dtype=np.float64)
        c, b, a = np.polyfit(k, self.cumulative_input().astype(np.float64), 2)
        return float(a), float(b), float(c)

    def cost_error(self) -> float | None:
        """(simulated - recorded) / recorded session cost, or None when either is unknown."""
        if self.recorded is None:
            return None
        sim, rec = self.simulated.total_cost, self.recorded.total_cost
        if sim is None or rec is None or rec == 0:
            return None
        return (sim - rec) / rec


# --- pricing a session ------------------------------------------------------------------------

OutputSource = Literal["counted", "recorded"]


@no_cycle_collection
def price_session(
    session: Session,
    counter: TokenCounter | None = None,
    price: ModelPrice | None = None,
    *,
    cache: CacheConfig | None = None,
    infer_prefix: bool = True,
    output: OutputSource = "counted",
    model: str | None = None,
    requests: Sequence[Conversation] | None = None,
    misses: MissModel | None = None,
) -> Ledger:
    """Simulate the cache over ``session`` and price every call.

    ``counter`` defaults to the session's own (:func:`session_counter`: calibrated on its recorded
    usage where it has some); ``price`` to each call's model
    price (unknown: NaN cost, warned once per model). ``cache`` defaults to the provider of the
    model with its minimum cacheable length, breakpoints as sent or, where no request carries one,
    placed as the harness would (:func:`default_cache`). ``output="recorded"`` takes output tokens
    from recorded usage where present instead of counting the responses. ``model`` prices,
    counts and caches every call as if it ran on that model (recorded figures stay as billed).
    ``requests``: one per call, priced in place of the recorded ones (a replay's views), with
    the calls' times, resets, responses and recorded usage; the hidden prefix is still inferred
    from the recorded first request, which the recorded usage billed, and the default ``cache``
    from the recorded requests (pass ``cache`` to price other requests another way).
    ``misses``: the cache misses no request shows (a route's, a harness's own rewrites), fitted
    on recordings (:mod:`contextkit.accounting._misses`); default the shipped model with what
    the session's own recorded usage shows in its place (:func:`session_miss_model`),
    ``NO_MISSES`` to leave them out.
    """
    if requests is not None and len(requests) != len(session.calls):
        raise ValueError(f"{len(requests)} requests for {len(session.calls)} calls")
    if model is not None:
        session = session.model_copy(
            update={"calls": tuple(_on_model(c, model) for c in session.calls)}
        )
        if requests is not None:
            requests = [r.model_copy(update={"model": model}) for r in requests]
    if counter is None:  # what-if model: that model's counter; else calibrated on the session
        counter = counter_for(session.model_info) if model is not None else session_counter(session)
    recorded = _recorded(session.calls)
    sent = [c.request for c in session.calls] if requests is None else requests
    if isinstance(counter, MemoCounter):
        counted = output == "counted" or recorded is None  # see _outputs
        responses = (c.response for c in session.calls) if counted else ()
        counter.prime(sent, responses)
    config = cache or default_cache(session, recorded)
    omitted = measure_omitted(session, counter, config, recorded) if infer_prefix else Omitted()
    if infer_prefix:
        sent = omitted.content.recorded if requests is None else omitted.fill(sent, counter)
    notes = list(omitted.notes)
    if recorded is not None and (estimated := estimated_outputs_note(session.calls)):
        notes.append(estimated)
    if (window := session.window_note()) is not None:
        notes.append(window)
    prefix = omitted.prefix
    warm = recorded[0].cache_read if recorded and prefix else 0
    sim = CacheSimulator(config, counter, prefix, warm_tokens=warm)
    cached = []
    for index, (c, request) in enumerate(zip(session.calls, sent, strict=True)):
        if index in omitted.resized:
            sim.resize_prefix(omitted.resized[index])
        cached.append(sim.step(request, c.timestamp, c.cache_reset))
    if misses is None:  # shipped, with what the session's own usage shows in its place
        fitted = shipped_miss_model()
        misses = session_miss_model(session, fitted) if recorded is not None else fitted
    if misses.applies_to(session):
        hidden = sum(p.tokens for p in prefix)
        cached = apply_misses(cached, session, sent, hidden, misses)
        notes.append(_misses_note(session, misses))
    resets = [i for i, c in enumerate(session.calls) if c.cache_reset]
    if resets:
        notes.append(
            f"{len(resets)} call(s) follow a cache reset of the harness that the file shows only "
            f"by its trigger (calls {', '.join(map(str, resets[:8]))}"
            f"{', ...' if len(resets) > 8 else ''}): priced as rewriting what it invalidates"
        )
    outputs = _outputs(session.calls, counter, recorded if output == "recorded" else None)
    prices = _Prices(price, default_model=session.model_info)
    ledger = _ledger(
        session,
        counter=counter,
        config=config,
        cached=cached,
        outputs=outputs,
        recorded=recorded,
        prices=prices,
        prefix=prefix,
        notes=notes,
    )
    if requests is None:  # the recording itself: say where the simulation and the bill part
        ledger = _with_disagreement(session, ledger, counter)
    return ledger


DISAGREEMENT = 0.05
"""A simulated session cost further than this from the recorded bill is named, with its cause."""


def _with_disagreement(session: Session, ledger: Ledger, counter: TokenCounter) -> Ledger:
    error = ledger.cost_error()
    if error is None or abs(error) <= DISAGREEMENT or ledger.recorded is None:
        return ledger
    head = f"simulated cost {error:+.1%} against the recorded bill (more than {DISAGREEMENT:.0%})"
    sim, rec = ledger.simulated.totals(), ledger.recorded.totals()
    note = f"{head}: {gap_carrier(session, sim, rec, counter)}"
    return replace(ledger, notes=(*ledger.notes, note))


def _misses_note(session: Session, misses: MissModel) -> str:
    routes = sorted({c.route for c in session.calls if c.route and c.route in misses.route_loss})
    parts = [f"{r}: {misses.route_loss[r].share:.0%} of servable reads lost" for r in routes]
    reset = misses.turn_reset.get(session.format)
    if reset is not None:
        parts.append(
            f"{session.format}: {reset.probability:.0%} of new user turns rewrite what the file "
            f"omits, keeping {reset.kept_share:.0%} of it"
        )
    return "cache misses no request shows, expected from recordings: " + "; ".join(parts)


def _with_output(usage: TokenCounts, output_tokens: int) -> Usage:
    # Built anew (twice as fast as model_copy(update=...)); also what a CachedCall.usage is.
    return Usage(
        input_tokens=usage.input_tokens,
        cache_write_5m=usage.cache_write_5m,
        cache_write_1h=usage.cache_write_1h,
        cache_read=usage.cache_read,
        output_tokens=output_tokens,
    )


def _ledger(
    session: Session,
    *,
    counter: TokenCounter,
    config: CacheConfig,
    cached: Sequence[CachedCall],
    outputs: Sequence[int],
    recorded: Sequence[Usage] | None,
    prices: _Prices,
    prefix: Sequence[PrefixPart],
    notes: list[str],
) -> Ledger:
    calls = session.calls
    rec_table = None
    if recorded is not None:
        rec_table = prices.table(calls, recorded)
    notes.append(f"token counts by {counter.name} (estimates unless the counter is exact)")
    notes.append(cache_note(config))
    return Ledger(
        path=session.path,
        format=session.format,
        model=session.model,
        counter=counter.name,
        cache=config,
        simulated=prices.table(calls, cached, outputs),
        context_tokens=_ints([c.context_tokens for c in cached]),
        new_tokens=_ints([c.new_tokens for c in cached]),
        recorded=rec_table,
        prefix_inferred_tokens=sum(p.tokens for p in prefix) if prefix else None,
        errors=tuple(c.errors for c in cached),
        notes=tuple(notes),
    )


class _Prices:
    """The injected price, or each call's model price looked up once (None when unknown). A call
    that names no model is priced as the session's model (the model of most of its calls)."""

    def __init__(self, price: ModelPrice | None, default_model: ModelInfo = UNKNOWN_MODEL) -> None:
        self.price = price
        self.default_model = default_model
        self._by_model: dict[str, ModelPrice | None] = {}

    def cost(self, call: Call, usage: Usage) -> float | None:
        price = self.price if self.price is not None else self._lookup(call)
        return price.cost(usage) if price is not None else None

    def table(
        self,
        calls: Sequence[Call],
        usages: Sequence[TokenCounts],
        outputs: Sequence[int] | None = None,
    ) -> TokenTable:
        """Tokens and cost per call; ``outputs``: output tokens that replace the usages' own."""
        tokens = TokenTable.from_usages(usages, [], [])
        if outputs is not None:
            tokens = replace(tokens, output=_ints(outputs))
        flat = self._flat_price(calls)
        if flat is not None:  # one price, no tiers: price the columns at once
            inputs = (
                tokens.input * flat.input
                + tokens.cache_write_5m * flat.cache_write_5m
                + tokens.cache_write_1h * flat.cache_write_1h
                + tokens.cache_read * flat.cache_read
            ) / PER_MILLION
            costs = inputs + tokens.output * flat.output / PER_MILLION
            return replace(
                tokens, cost_usd=_dollars(costs.tolist()), input_cost_usd=_dollars(inputs.tolist())
            )
        outs = outputs if outputs is not None else [u.output_tokens for u in usages]
        priced = [_with_output(u, o) for u, o in zip(usages, outs, strict=True)]  # call by call
        pairs = list(zip(calls, priced, strict=True))
        costs_by_call = [self.cost(c, u) for c, u in pairs]
        inputs_by_call = [self.cost(c, _with_output(u, 0)) for c, u in pairs]
        return replace(
            tokens, cost_usd=_dollars(costs_by_call), input_cost_usd=_dollars(inputs_by_call)
        )

    def _flat_price(self, calls: Sequence[Call]) -> ModelPrice | None:
        """The single tier-less price of every call, if there is one."""
        price = self.price
        if price is None:
            models = {c.model or c.request.model or self.default_model.id for c in calls}
            if len(models) != 1 or not calls:
                return None
            price = self._lookup(calls[0])
        return None if price is None or price.tiers else price

    def _lookup(self, call: Call) -> ModelPrice | None:
        named = call.model or call.request.model
        model = call.model_info if named else self.default_model
        if model.id not in self._by_model:
            self._by_model[model.id] = price_or_warn(model, call.timestamp)
        return self._by_model[model.id]


def call_prices(session: Session, price: ModelPrice | None = None) -> list[ModelPrice | None]:
    """Each call's price as :func:`price_session` takes it (``price``: one for every call; else
    each call's model, a call that names none priced as the session's), without a second warning
    for a price the ledger already named unknown."""
    prices = _Prices(price, default_model=session.model_info)
    if price is not None:
        return [price] * len(session.calls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownPriceWarning)
        return [prices._lookup(call) for call in session.calls]


def _on_model(call: Call, model: str) -> Call:
    request = call.request.model_copy(update={"model": model})
    return call.model_copy(update={"model": model, "request": request})


def estimated_outputs_note(calls: Sequence[Call]) -> str | None:
    """What of the "recorded" figures is not the file's: the output of calls whose file held a
    stream-start placeholder, counted from their content by the reader (None: none)."""
    estimated = [c for c in calls if c.output_estimated and c.usage is not None]
    if not estimated:
        return None
    tokens = sum(c.usage.output_tokens for c in estimated if c.usage is not None)
    return (
        f"recorded: the file's usage, but the output of {len(estimated)} of {len(calls)} calls "
        f"({tokens:,} tokens) is an estimate, counted from their content: the file holds the "
        "count as it stood at stream start"
    )


def _recorded(calls: Sequence[Call]) -> list[Usage] | None:
    usages = [c.usage for c in calls]
    if not usages or any(u is None for u in usages):
        return None
    return [u for u in usages if u is not None]


def _outputs(
    calls: Sequence[Call], counter: TokenCounter, recorded: Sequence[Usage] | None
) -> list[int]:
    if recorded is not None:
        return [u.output_tokens for u in recorded]
    return [counter.count_message(c.response) if c.response else 0 for c in calls]


def _marks_breakpoints(request: Conversation) -> bool:
    if (request.model_extra or {}).get("cache_control") is not None:
        return True
    parts = [*request.tools, *request.system_blocks]
    parts += [b for m in request.messages if not isinstance(m.content, str) for b in m.content]
    return any((p.model_extra or {}).get("cache_control") is not None for p in parts)


def default_cache(session: Session, recorded: Sequence[Usage] | None = None) -> CacheConfig:
    """The cache a session's requests met, as far as the file tells."""
    model = session.model_info
    when: datetime | None = session.calls[0].timestamp if session.calls else None
    automatic = automatic_cache(model, when)
    if automatic is not None:
        return automatic
    placement: Placement = "auto"
    if any(_marks_breakpoints(c.request) for c in session.calls[:3]):
        placement = "as-sent"
    elif session.format == "claude-code" or not session.prefix_known:
        placement = "claude-code"
    return AnthropicCache(
        min_tokens=model.cache_min_tokens(when),
        placement=placement,
        ttl_s=recorded_ttl(recorded),
    )


def ledger_totals(ledger: Ledger) -> Mapping[str, Mapping[str, int | float | None] | None]:
    """Session totals of both tables (``recorded`` is None without recorded usage)."""
    return {
        "simulated": ledger.simulated.totals(),
        "recorded": ledger.recorded.totals() if ledger.recorded is not None else None,
    }


__all__ = [
    "CLASSES",
    "Ledger",
    "OutputSource",
    "TokenTable",
    "default_cache",
    "estimated_outputs_note",
    "ledger_totals",
    "price_session",
]
