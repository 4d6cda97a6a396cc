"""Prices per model and token class, in USD per million tokens, with their source and date.

Contract: :class:`ModelPrice` holds absolute prices per token class (never multipliers);
:meth:`ModelPrice.cost` prices ONE call's usage (price each call, then sum: tiers break the other
way round). A tier applies its prices to the WHOLE request once the call's total input (uncached +
cache writes + cache reads) exceeds its threshold.

``lookup_price(model, when=None)`` takes a :class:`~contextkit.models.ModelInfo` (its id already
resolved: dated ids, dotted ids, ``anthropic/...``, Bedrock and Vertex ids) and returns None for an
unknown model. Prices are looked up per call, at the call's date, rather than fixed in the
ModelInfo: they change on dates within a session's span and can be overridden after a file was
read. Sources, highest precedence first: the user's override file (TOML; ``CONTEXTKIT_PRICES``
or :func:`use_price_overrides`), the corrections shipped in
``contextkit/pricing/data/price_corrections.toml`` (where the price library disagrees with the
providers' pages), then the maintained ``genai-prices`` package (offline snapshot).
:func:`price_or_warn` warns once per unknown model; :func:`call_cost` returns None, which callers
show as :data:`UNKNOWN_COST`. Nothing here raises for an unknown model; a malformed override file
raises :class:`~contextkit.errors.ConfigError` naming the file.
"""

from __future__ import annotations

import os
import tomllib
import warnings
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import genai_prices
from pydantic import BaseModel, ConfigDict, ValidationError

from contextkit.errors import ConfigError
from contextkit.messages import Usage
from contextkit.models import ModelInfo, genai_model_info, normalise_model, parse_claude

PER_MILLION = 1_000_000
PRICES_ENV = "CONTEXTKIT_PRICES"
UNKNOWN_COST = "unknown"
"""What to print where a cost cannot be computed (the model has no known price)."""


class UnknownPriceWarning(UserWarning):
    """A model has no known price: its cost is reported as unknown."""


class PriceTier(BaseModel):
    """Prices that replace the base prices for a whole request above ``above_input_tokens``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    above_input_tokens: int
    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float


class ModelPrice(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    source: str = ""
    """Where the figures come from (package and version, or an override file), with their date."""
    tiers: tuple[PriceTier, ...] = ()
    """Higher prices for large requests, ascending by threshold (empty: flat pricing)."""
    effective_from: date | None = None
    """First day these prices hold (None: since the model's release, as far as the source says)."""

    def rates_for(self, total_input: int) -> ModelPrice | PriceTier:
        """The price set that applies to a request with ``total_input`` input tokens."""
        chosen: ModelPrice | PriceTier = self
        for tier in self.tiers:
            if total_input > tier.above_input_tokens:
                chosen = tier
        return chosen

    def cost(self, usage: Usage) -> float:
        """USD for one call's usage (the tier is chosen by the call's total input)."""
        rates = self.rates_for(usage.total_input)
        return (
            usage.input_tokens * rates.input
            + usage.cache_write_5m * rates.cache_write_5m
            + usage.cache_write_1h * rates.cache_write_1h
            + usage.cache_read * rates.cache_read
            + usage.output_tokens * rates.output
        ) / PER_MILLION


# --- genai-prices -----------------------------------------------------------------------------


def _base_and_tiers(value: Any) -> tuple[float | None, dict[int, float]]:
    """(base price, {threshold: price}) of a genai-prices Decimal or TieredPrices."""
    if value is None:
        return None, {}
    if isinstance(value, Decimal | int | float):
        return float(value), {}
    return float(value.base), {int(t.start): float(t.price) for t in value.tiers}


_CLASSES = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
_GENAI_KEYS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cache_write_5m": "cache_write_mtok",
    "cache_write_1h": "cache_write_1h_mtok",
    "cache_read": "cache_read_mtok",
}


def _fill_missing(prices: dict[str, float | None]) -> dict[str, float]:
    """Fill the classes the library leaves out.

    Writes cost the input price (OpenAI charges no write premium before GPT-5.6), a missing 1h
    write costs the 5m one, and no cache-read price means no discount.
    """
    base = prices["input"] or 0.0
    w5 = prices["cache_write_5m"] if prices["cache_write_5m"] is not None else base
    return {
        "input": base,
        "output": prices["output"] or 0.0,
        "cache_write_5m": w5,
        "cache_write_1h": prices["cache_write_1h"] if prices["cache_write_1h"] is not None else w5,
        "cache_read": prices["cache_read"] if prices["cache_read"] is not None else base,
    }


def _convert(model: str, info: Any, day: datetime) -> ModelPrice | None:
    version = genai_prices.__version__
    raw = info.get_prices(day)
    parts = {cls: _base_and_tiers(getattr(raw, _GENAI_KEYS[cls], None)) for cls in _CLASSES}
    if parts["input"][0] is None and parts["output"][0] is None:
        return None  # priced per request or per second only: not a token model
    base = _fill_missing({cls: parts[cls][0] for cls in _CLASSES})
    thresholds = sorted({t for _, tiers in parts.values() for t in tiers})
    tiers = []
    for threshold in thresholds:
        values = {cls: parts[cls][1].get(threshold, base[cls]) for cls in _CLASSES}
        tiers.append(PriceTier(above_input_tokens=threshold, **values))
    return ModelPrice(
        model=model,
        source=f"genai-prices {version} ({info.id})",
        tiers=tuple(tiers),
        effective_from=_effective_from(info, day),
        **base,
    )


def _effective_from(info: Any, day: datetime) -> date | None:
    if not isinstance(info.prices, list):
        return None
    start: date | None = None
    for conditional in info.prices:
        since = getattr(conditional.constraint, "start_date", None)
        if since is not None and since <= day.date():
            start = since if start is None else max(start, since)
    return start


@cache
def _genai_price(name: str, day: date) -> ModelPrice | None:
    info = genai_model_info(name)
    if info is None:
        return None
    return _convert(name, info, datetime(day.year, day.month, day.day, 12, tzinfo=UTC))


# --- override files -------------------------------------------------------------------------


class PriceOverride(BaseModel):
    """One entry of an override file: ``[models."<id>"]`` (or ``[[models."<id>"]]`` when dated)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    input: float
    output: float
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None
    cache_read: float | None = None
    since: date | None = None
    match: tuple[str, ...] = ()
    """Further name prefixes (lower case, raw or normalised) this entry applies to."""
    tier: tuple[PriceTier, ...] = ()
    note: str = ""

    def matches(self, model: ModelInfo) -> bool:
        """Same id, a ``match`` prefix of the raw or normalised name, or the same Claude model."""
        names = (model.name, model.id.strip().lower())
        if model.name == normalise_model(self.id) or any(n.startswith(self.match) for n in names):
            return True
        own = parse_claude(self.id)
        return own is not None and model.claude is not None and own.key == model.claude.key

    def to_price(self, model: str, source: str) -> ModelPrice:
        base = _fill_missing({cls: getattr(self, cls) for cls in _CLASSES})
        note = f"; {self.note}" if self.note else ""
        return ModelPrice(
            model=model,
            source=f"{source} [{self.id}]{note}",
            tiers=tuple(sorted(self.tier, key=lambda t: t.above_input_tokens)),
            effective_from=self.since,
            **base,
        )


class PriceOverrides(BaseModel):
    """The entries of one override file, and where they come from."""

    model_config = ConfigDict(frozen=True)

    source: str
    entries: tuple[PriceOverride, ...] = ()

    def find(self, model: ModelInfo, day: date) -> ModelPrice | None:
        valid = [e for e in self.entries if e.matches(model) and (e.since or date.min) <= day]
        if not valid:
            return None
        best = max(valid, key=lambda e: e.since or date.min)
        return best.to_price(model.id, self.source)


def parse_price_overrides(text: str, source: str) -> PriceOverrides:
    """Parse override TOML; errors name ``source`` and the offending model entry."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: invalid TOML: {exc}") from None
    models = data.get("models", {})
    if not isinstance(models, Mapping):
        raise ConfigError(f"{source}: 'models' must be a table of [models.\"<model id>\"] entries")
    entries: list[PriceOverride] = []
    for model_id, value in models.items():
        for item in value if isinstance(value, list) else [value]:
            try:
                entries.append(PriceOverride.model_validate({"id": model_id, **item}))
            except (ValidationError, TypeError) as exc:
                raise ConfigError(f"{source}: models.{model_id!r}: {exc}") from None
    return PriceOverrides(source=source, entries=tuple(entries))


def load_price_overrides(path: str | Path) -> PriceOverrides:
    """Read an override file (see :func:`parse_price_overrides`)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"{file}: cannot read price override file: {exc.strerror or exc}"
        ) from None
    return parse_price_overrides(text, str(file))


@cache
def shipped_corrections() -> PriceOverrides:
    """Corrections to genai-prices shipped with contextkit (each entry says why)."""
    text = (
        resources.files("contextkit.pricing")
        .joinpath("data", "price_corrections.toml")
        .read_text("utf-8")
    )
    return parse_price_overrides(text, "contextkit/pricing/data/price_corrections.toml")


_active: dict[str, PriceOverrides] = {}
"""The override file set by :func:`use_price_overrides` (key "user"), when one is."""


def use_price_overrides(path: str | Path | None) -> None:
    """Use this override file (None: back to ``$CONTEXTKIT_PRICES``, if set)."""
    _active.pop("user", None)
    if path is not None:
        _active["user"] = load_price_overrides(path)


def _user() -> PriceOverrides | None:
    if "user" in _active:
        return _active["user"]
    env = os.environ.get(PRICES_ENV)
    return _load_env_overrides(env) if env else None


@cache
def _load_env_overrides(path: str) -> PriceOverrides:
    return load_price_overrides(path)


# --- lookup -------------------------------------------------------------------------------------


LONG_CONTEXT_BETA_END = date(2026, 4, 30)
"""REFERENCE.md (Anthropic pricing, 2026): the whole-request long-context tier of Sonnet 4 and 4.5
(over 200k input, $6 in / $22.50 out) came with the 1M-context beta, which ended on this day.
Neither genai-prices nor a correction file dates the tier's end, so it is dropped here."""


def _tiers_in_force(price: ModelPrice, model: ModelInfo, day: date) -> ModelPrice:
    claude = model.claude
    legacy = (
        claude is not None
        and claude.tier == "sonnet"
        and (claude.major, claude.minor)
        in (
            (4, 0),
            (4, 5),
        )
    )
    if legacy and price.tiers and day > LONG_CONTEXT_BETA_END:
        return price.model_copy(update={"tiers": ()})
    return price


def lookup_price(model: ModelInfo, when: date | datetime | None = None) -> ModelPrice | None:
    """Prices of ``model`` valid on ``when`` (default today), or None when nobody knows them
    (a call that names no model, :data:`~contextkit.models.UNKNOWN_MODEL`, has none)."""
    if not model.id:
        return None
    day = _day(when)
    for overrides in (_user(), shipped_corrections()):
        if overrides is not None and (found := overrides.find(model, day)) is not None:
            return _tiers_in_force(found, model, day)
    found = _genai_price(model.name, day)
    if found is None:
        return None
    return _tiers_in_force(found.model_copy(update={"model": model.id}), model, day)


def _day(when: date | datetime | None) -> date:
    if when is None:
        return datetime.now(UTC).date()
    if isinstance(when, datetime):
        return (when.astimezone(UTC) if when.tzinfo else when).date()
    return when


_warned: set[str] = set()


def price_or_warn(model: ModelInfo, when: date | datetime | None = None) -> ModelPrice | None:
    """:func:`lookup_price`, warning once per model (per process) when the price is unknown."""
    price = lookup_price(model, when)
    key = model.id or "<no model>"
    if price is None and key not in _warned:
        _warned.add(key)
        warnings.warn(
            f"no price known for model {key!r}: its cost is reported as {UNKNOWN_COST!r}. "
            f'Add it to a price override file (${PRICES_ENV}, TOML [models."{key}"] with '
            "input/output/cache_write_5m/cache_write_1h/cache_read in USD per million tokens).",
            UnknownPriceWarning,
            stacklevel=2,
        )
    return price


def call_cost(model: ModelInfo, usage: Usage, when: date | datetime | None = None) -> float | None:
    """USD of one call, or None when the model's price is unknown (warned once)."""
    price = price_or_warn(model, when)
    return price.cost(usage) if price is not None else None


def format_cost(cost: float | None, digits: int = 4) -> str:
    """``$0.0123``, or ``unknown`` for a cost that could not be computed."""
    return UNKNOWN_COST if cost is None else f"${cost:.{digits}f}"


__all__ = [
    "PER_MILLION",
    "PRICES_ENV",
    "UNKNOWN_COST",
    "ModelPrice",
    "PriceOverride",
    "PriceOverrides",
    "PriceTier",
    "UnknownPriceWarning",
    "call_cost",
    "format_cost",
    "load_price_overrides",
    "lookup_price",
    "parse_price_overrides",
    "price_or_warn",
    "shipped_corrections",
    "use_price_overrides",
]
