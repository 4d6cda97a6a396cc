"""A workload profile (TOML) and its cost per ticket: seeded vectorised Monte Carlo + closed form.

Contract. A :class:`Profile` describes one deployment: the fixed prefix (system prompt tokens,
number of tool schemas and their mean size, the provider's hidden tool-use prompt), the shape of a
ticket (user turns, calls per turn, user message, tool result and output sizes, seconds between
calls and between turns: each a fixed value or a distribution, :mod:`.estimate_dist`), the model
and the cache mode (``off``, ``5m``, ``1h``). :func:`load_profile` reads TOML (errors name the file
and the field); :func:`dump_profile` writes it back.

The ticket model. Turn t starts with a user message u_t; each call of a turn but the last asks for
a tool and its result r follows; every call's output o is appended to the history. Call k sends
``P + (everything appended before it)``; what was appended since call k-1 is "new input".

:func:`simulate_profile` draws every ticket's sizes as flat numpy arrays (one random stream per
quantity, so a what-if that changes the prefix keeps the same tickets: common random numbers),
builds per-call context sizes with cumulative sums, and applies the cache in vectorised form, the
way Claude Code's breakpoints behave (end of the prefix, end of the request):

- the previous call's request is still cached when it reached the minimum cacheable length and the
  gap since it started is at most the TTL: the call reads it and writes only what is new;
- otherwise (first call of a ticket, or expiry) it reads the prefix if ``prefix_warm`` (steady
  traffic keeps the shared prefix alive) and the prefix is long enough, and writes the rest;
- a request below the minimum cacheable length is not cached at all.

:func:`closed_form` gives the exact expectation per ticket without cache and with an always-warm
cache (no expiry, minimum length ignored), from the distributions' first two moments: with
N = sum of T turns' C_t calls, E[sum of contexts] = E[N] P + mu_o E[N(N-1)]/2
+ mu_r (E[N(N-1)] - E[C] E[T(T-1)])/2 + mu_u E[C] E[T(T+1)]/2. Tiers are ignored there.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contextkit.cache import TTL_1H_S, TTL_5M_S
from contextkit.errors import ConfigError
from contextkit.estimate._dist import Dist, Fixed
from contextkit.estimate._table import CallArrays, FloatArray, TicketTable, ticket_table
from contextkit.messages import Tool
from contextkit.models import ModelInfo, resolve_model
from contextkit.pricing import PER_MILLION, ModelPrice, lookup_price
from contextkit.tokens import counter_for

CacheMode = Literal["off", "5m", "1h"]
TTL_BY_MODE: Mapping[str, float] = {"5m": TTL_5M_S, "1h": TTL_1H_S, "off": 0.0}
DEFAULT_TICKETS = 20_000
_STREAMS = ("turns", "calls", "user", "result", "output", "gap_call", "gap_turn")


class Profile(BaseModel):
    """One deployment's workload. Token sizes are in the model's tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    cache: CacheMode = "5m"
    prefix_warm: bool = True
    """The shared prefix is already cached when a ticket starts (other tickets keep it alive)."""
    system_tokens: float = Field(0, ge=0)
    tools: int = Field(0, ge=0)
    tool_tokens: float = Field(0, ge=0)
    """Mean tokens of one tool schema."""
    tool_overhead_tokens: int | None = Field(None, ge=0)
    """Hidden tool-use system prompt (None: the provider's figure for the model)."""
    min_cache_tokens: int | None = Field(None, ge=0)
    """Minimum cacheable prefix (None: the provider's figure for the model)."""
    user_turns: Dist = Fixed(value=1)
    calls_per_turn: Dist = Fixed(value=1)
    user_message_tokens: Dist = Fixed(value=100)
    tool_result_tokens: Dist = Fixed(value=0)
    output_tokens: Dist = Fixed(value=100)
    seconds_between_calls: Dist = Fixed(value=5)
    seconds_between_turns: Dist = Fixed(value=60)
    tickets: int = Field(DEFAULT_TICKETS, ge=1)
    seed: int = 0
    notes: tuple[str, ...] = ()

    @property
    def model_info(self) -> ModelInfo:
        """The profile's ``model``, resolved once per id."""
        return resolve_model(self.model)

    @property
    def overhead_tokens(self) -> int:
        if self.tools == 0:
            return 0
        if self.tool_overhead_tokens is not None:
            return self.tool_overhead_tokens
        return self.model_info.tool_overhead()

    @property
    def prefix_tokens(self) -> float:
        """System prompt + tool schemas + the hidden tool-use prompt."""
        return self.system_tokens + self.tools * self.tool_tokens + self.overhead_tokens

    @property
    def min_tokens(self) -> int:
        if self.min_cache_tokens is not None:
            return self.min_cache_tokens
        return self.model_info.cache_min_tokens()

    def price(self) -> ModelPrice:
        price = lookup_price(self.model_info)
        if price is None:
            raise ConfigError(
                f"no price known for model {self.model!r}: name a known model, or add it to a "
                "price override file ($CONTEXTKIT_PRICES)"
            )
        return price


# --- TOML ----------------------------------------------------------------------------------


def parse_profile(text: str, source: str = "<profile>", base: Path | None = None) -> Profile:
    """A profile from TOML text; ``tools_file`` (JSON tool schemas) resolves against ``base``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: invalid TOML: {exc}") from None
    tools_file = data.pop("tools_file", None)
    if tools_file is not None:
        data = _with_tools_file(data, Path(base or Path.cwd()) / str(tools_file), source)
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        where = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"{source}: {where}") from None


def _with_tools_file(data: dict[str, Any], path: Path, source: str) -> dict[str, Any]:
    if "model" not in data:
        raise ConfigError(f"{source}: 'tools_file' needs 'model' (schemas are counted for it)")
    tools = load_tools(path)
    counter = counter_for(resolve_model(str(data["model"])))
    sizes = [counter.count_tool(t) for t in tools]
    extra = data.get("tools", 0) * data.get("tool_tokens", 0)
    count = len(tools) + int(data.get("tools", 0))
    return {**data, "tools": count, "tool_tokens": (sum(sizes) + extra) / max(count, 1)}


def load_tools(path: str | Path) -> tuple[Tool, ...]:
    """Tool schemas from JSON: a list of Anthropic tools or OpenAI ``{"type": "function"}`` ones."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{file}: cannot read tool schemas: {exc}") from None
    if isinstance(data, dict):
        data = data.get("tools", [data])
    if not isinstance(data, list):
        raise ConfigError(f"{file}: expected a JSON list of tool schemas")
    tools = []
    for i, raw in enumerate(data):
        item = raw
        if isinstance(raw, dict) and isinstance(raw.get("function"), dict):
            fn = raw["function"]
            item = {
                "name": fn.get("name"),
                "description": fn.get("description"),
                "input_schema": fn.get("parameters"),
            }
        try:
            tools.append(Tool.model_validate(item))
        except ValidationError as exc:
            raise ConfigError(f"{file}: tool {i}: {exc.errors()[0]['msg']}") from None
    return tuple(tools)


def load_profile(path: str | Path) -> Profile:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read profile: {exc.strerror or exc}") from None
    return parse_profile(text, str(file), file.parent)


def dump_profile(profile: Profile) -> str:
    """TOML text that :func:`parse_profile` reads back to an equal profile."""
    lines = [f"# {n}" for n in profile.notes]
    for name in Profile.model_fields:
        value = getattr(profile, name)
        if value is None or name == "notes":
            continue
        if isinstance(value, BaseModel) and hasattr(value, "to_toml"):
            value = value.to_toml()
        lines.append(f"{name} = {_toml_value(value)}")
    if profile.notes:
        lines.append(f"notes = {_toml_value(list(profile.notes))}")
    return "\n".join(lines) + "\n"


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(round(float(value), 6)) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {value!r} as TOML")


# --- Monte Carlo ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileRun:
    profile: Profile
    arrays: CallArrays
    table: TicketTable
    seed: int


@dataclass(frozen=True)
class _Shape:
    ticket: np.ndarray[Any, np.dtype[np.int64]]
    call_turn: np.ndarray[Any, np.dtype[np.int64]]
    first_in_turn: np.ndarray[Any, np.dtype[np.bool_]]
    last_in_turn: np.ndarray[Any, np.dtype[np.bool_]]
    first_in_ticket: np.ndarray[Any, np.dtype[np.bool_]]
    ticket_start: np.ndarray[Any, np.dtype[np.int64]]
    """Per call, the index of its ticket's first call."""


def _shape(profile: Profile, rngs: Mapping[str, np.random.Generator], n: int) -> _Shape:
    turns = profile.user_turns.count_sample(rngs["turns"], n)
    calls = profile.calls_per_turn.count_sample(rngs["calls"], int(turns.sum()))
    turn_ticket = np.repeat(np.arange(n), turns)
    call_turn = np.repeat(np.arange(calls.size), calls)
    turn_start = np.cumsum(calls) - calls
    first_turn = np.cumsum(turns) - turns
    k = int(calls.sum())
    first_in_turn = np.zeros(k, dtype=bool)
    first_in_turn[turn_start] = True
    last_in_turn = np.zeros(k, dtype=bool)
    last_in_turn[turn_start + calls - 1] = True
    first_in_ticket = np.zeros(k, dtype=bool)
    first_in_ticket[turn_start[first_turn]] = True
    ticket = turn_ticket[call_turn]
    return _Shape(
        ticket,
        call_turn,
        first_in_turn,
        last_in_turn,
        first_in_ticket,
        turn_start[first_turn][ticket],
    )


def _previous(values: FloatArray) -> FloatArray:
    return np.concatenate([[0.0], values[:-1]]) if values.size else values


def simulate_profile(
    profile: Profile, tickets: int | None = None, seed: int | None = None
) -> ProfileRun:
    """Draw ``tickets`` tickets (default the profile's) with ``seed`` and price every call."""
    n = tickets or profile.tickets
    seed = profile.seed if seed is None else seed
    streams = np.random.SeedSequence(seed).spawn(len(_STREAMS))
    rngs = {name: np.random.default_rng(s) for name, s in zip(_STREAMS, streams, strict=True)}
    s = _shape(profile, rngs, n)
    k = s.ticket.size
    user = profile.user_message_tokens.sample(rngs["user"], int(s.call_turn.max(initial=-1)) + 1)
    result = profile.tool_result_tokens.sample(rngs["result"], k)
    output = profile.output_tokens.sample(rngs["output"], k)
    carried = _previous(output + np.where(s.last_in_turn, 0.0, result))
    new = np.where(s.first_in_turn, user[s.call_turn], 0.0) + np.where(
        s.first_in_ticket, 0.0, carried
    )
    summed = np.cumsum(new)
    prefix = np.full(k, float(profile.prefix_tokens))
    context = prefix + summed - (summed[s.ticket_start] - new[s.ticket_start])
    gap_turn = profile.seconds_between_turns.sample(rngs["gap_turn"], user.size)
    gap = np.where(
        s.first_in_turn,
        gap_turn[s.call_turn],
        profile.seconds_between_calls.sample(rngs["gap_call"], k),
    )
    read, written = _cache(
        profile, context, np.where(s.first_in_ticket, np.inf, gap), s.first_in_ticket
    )
    one_hour = profile.cache == "1h"
    arrays = CallArrays(
        ticket=s.ticket,
        context=context,
        prefix=prefix,
        new=new,
        read=read,
        write_5m=np.zeros(k) if one_hour else written,
        write_1h=written if one_hour else np.zeros(k),
        output=output,
    )
    return ProfileRun(profile, arrays, ticket_table(arrays, profile.price(), n), seed)


def _cache(
    profile: Profile,
    context: FloatArray,
    gap: FloatArray,
    first: np.ndarray[Any, np.dtype[np.bool_]],
) -> tuple[FloatArray, FloatArray]:
    """(read, written) tokens per call under the profile's cache mode (see the module docstring)."""
    if profile.cache == "off":
        return np.zeros_like(context), np.zeros_like(context)
    minimum = profile.min_tokens
    previous = _previous(context)
    alive = ~first & (previous >= minimum) & (gap <= TTL_BY_MODE[profile.cache])
    prefix = profile.prefix_tokens
    prefix_read = prefix if profile.prefix_warm and prefix >= minimum else 0.0
    read = np.where(alive, previous, np.minimum(prefix_read, context))
    written = np.where(context >= minimum, context - read, 0.0)
    return read, written


# --- closed form ---------------------------------------------------------------------------


def closed_form(profile: Profile) -> dict[str, float]:
    """Exact expected USD per ticket: ``no_cache_usd`` and ``warm_cache_usd`` (see module doc)."""
    t1, t2 = profile.user_turns.count_moments()
    c1, c2 = profile.calls_per_turn.count_moments()
    mu_u = profile.user_message_tokens.expected
    mu_r = profile.tool_result_tokens.expected
    mu_o = profile.output_tokens.expected
    n1 = t1 * c1
    n2 = t1 * (c2 - c1 * c1) + t2 * c1 * c1
    nn = n2 - n1  # E[N(N-1)]
    p = profile.prefix_tokens
    contexts = n1 * p + mu_o * nn / 2 + mu_r * (nn - c1 * (t2 - t1)) / 2 + mu_u * c1 * (t2 + t1) / 2
    writes = t1 * mu_u + mu_o * (n1 - 1) + mu_r * (n1 - t1)
    if not profile.prefix_warm:
        writes += p
    price = profile.price()
    rate_w = price.cache_write_1h if profile.cache == "1h" else price.cache_write_5m
    output = n1 * mu_o * price.output
    return {
        "calls": n1,
        "context_tokens": contexts,
        "no_cache_usd": (contexts * price.input + output) / PER_MILLION,
        "warm_cache_usd": ((contexts - writes) * price.cache_read + writes * rate_w + output)
        / PER_MILLION,
    }


# --- what-ifs on a profile -----------------------------------------------------------------


def with_tools(profile: Profile, count: int, mean_tokens: float) -> Profile:
    """``count`` more tool schemas of ``mean_tokens`` each."""
    total = profile.tools * profile.tool_tokens + count * mean_tokens
    tools = profile.tools + count
    return profile.model_copy(update={"tools": tools, "tool_tokens": total / max(tools, 1)})


def with_system_tokens(profile: Profile, delta: float) -> Profile:
    return profile.model_copy(update={"system_tokens": max(profile.system_tokens + delta, 0.0)})


def with_cache(profile: Profile, mode: CacheMode) -> Profile:
    return profile.model_copy(update={"cache": mode})


def with_model(profile: Profile, model: str, ratio: float) -> Profile:
    """Another model; every size in tokens scaled by ``ratio`` (its tokens per old token)."""
    update: dict[str, Any] = {
        "model": model,
        "tool_overhead_tokens": None,
        "min_cache_tokens": None,
    }
    update["system_tokens"] = profile.system_tokens * ratio
    update["tool_tokens"] = profile.tool_tokens * ratio
    for name in ("user_message_tokens", "tool_result_tokens", "output_tokens"):
        update[name] = _scaled(getattr(profile, name), ratio)
    return profile.model_copy(update=update)


def _scaled(dist: Any, ratio: float) -> Any:
    data = dist.to_toml()
    if isinstance(data, int | float):
        return Fixed(value=data * ratio)
    for key in ("mean", "sd", "low", "high"):
        if key in data:
            data[key] *= ratio
    if "values" in data:
        data["values"] = [v * ratio for v in data["values"]]
    return type(dist).model_validate(data)


def token_ratio(old_model: str, new_model: str) -> float:
    """New model's tokens per old model's token, measured on contextkit's example session."""
    from contextkit.session.examples import ExampleSpec, generate_session  # noqa: PLC0415  (heavy, rare)

    session = generate_session(ExampleSpec(calls=30, user_turns=2))
    request = session.calls[-1].request
    old = counter_for(resolve_model(old_model)).count_conversation(request)
    new = counter_for(resolve_model(new_model)).count_conversation(request)
    return new / old if old and math.isfinite(new / old) else 1.0


__all__ = [
    "DEFAULT_TICKETS",
    "CacheMode",
    "Profile",
    "ProfileRun",
    "closed_form",
    "dump_profile",
    "load_profile",
    "load_tools",
    "parse_profile",
    "simulate_profile",
    "token_ratio",
    "with_cache",
    "with_model",
    "with_system_tokens",
    "with_tools",
]
