"""Strategy configs: load them from TOML/JSON, parse inline specs, name presets, dump them.

Contract:

- The schema is :data:`~contextkit.strategies._compose.AnyStrategy`, a union discriminated on
  ``kind``. A file holds one strategy, either at its root or under a ``strategy`` table.
- ``parse_strategy_spec("evict-tool-results:keep_last=5 >> summary")``: steps joined by ``>>``;
  each step is ``name`` or ``name:key=value,key=value``. A name is a preset first (its parameters,
  if any, go to the preset's main strategy), else a ``kind``. Values are JSON where they parse
  (``5``, ``true``, ``null``, ``["Read","Grep"]``), a bare list ``[Read,Grep]``, or else a string.
- ``strategy_from_spec(spec)`` accepts a preset name, a path to a ``.toml``/``.json`` file, or an
  inline spec.
- Every problem (unknown kind, unknown field, bad value, unreadable file) is a
  :class:`~contextkit.errors.ConfigError` naming the source and the offending path inside it
  (``steps.1.keep_last``); nothing is silently ignored.
- ``dump_strategy`` gives the JSON-able config (``kind`` included); ``save_strategy`` writes JSON.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from contextkit.errors import ConfigError
from contextkit.strategies._base import Strategy
from contextkit.strategies._compose import AnyTrigger, Pipeline
from contextkit.strategies._registry import PRESETS, STRATEGY_ADAPTER, AnyStrategy
from contextkit.strategies._strategy_model import StrategyModel
from contextkit.strategies._summary import SummariserConfig


def _kinds(*unions: Any) -> frozenset[str]:
    classes = [c for u in unions for c in get_args(get_args(u)[0])]
    return frozenset(str(c.model_fields["kind"].default) for c in classes)


# Discriminator tags and union-branch labels pydantic puts in error locations; not config paths.
_TAGS = _kinds(AnyStrategy, AnyTrigger, SummariserConfig)
_STRATEGY_KINDS = sorted(_kinds(AnyStrategy))


def _where(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in loc if not (isinstance(p, str) and (p in _TAGS or "[" in p))]
    return ".".join(p for p in parts if p != "callable") or "(root)"


def _config_error(source: str, exc: ValidationError) -> ConfigError:
    seen: dict[str, str] = {}
    for error in exc.errors():
        if error["type"] in ("is_instance_of", "callable_type"):
            continue  # the "or any object" branch of a union says nothing useful
        seen.setdefault(_where(error["loc"]), error["msg"])
    if not seen:
        first = exc.errors()[0]
        seen[_where(first["loc"])] = first["msg"]
    lines = "; ".join(f"{where}: {msg}" for where, msg in seen.items())
    return ConfigError(f"{source}: invalid strategy config: {lines}")


def parse_strategy(data: Mapping[str, Any], source: str = "<config>") -> Strategy:
    """A strategy from its config mapping (as loaded from TOML or JSON)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: a strategy config must be a table/object with a 'kind'")
    try:
        strategy: Strategy = STRATEGY_ADAPTER.validate_python(dict(data))
    except ValidationError as exc:
        raise _config_error(source, exc) from None
    return strategy


def load_strategy(path: str | Path) -> Strategy:
    """Read a strategy from a ``.toml`` or ``.json`` file."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the strategy file ({exc.strerror})") from None
    try:
        if path.suffix == ".toml":
            data: Any = tomllib.loads(raw)
        elif path.suffix == ".json":
            data = json.loads(raw)
        else:
            raise ConfigError(f"{path}: a strategy file must end in .toml or .json")
    except ValueError as exc:  # TOMLDecodeError, JSONDecodeError, a number past the limit
        raise ConfigError(f"{path}: not valid {path.suffix[1:].upper()}: {exc}") from None
    if (
        isinstance(data, Mapping)
        and "kind" not in data
        and isinstance(data.get("strategy"), Mapping)
    ):
        data = data["strategy"]
    return parse_strategy(data, str(path))


def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside brackets and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "[{":
            depth += 1
        elif not quoted and ch in "]}":
            depth -= 1
        elif not quoted and depth == 0 and ch == sep:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _value(text: str) -> Any:
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:  # not JSON, or a number past the digit limit
        pass
    if text.startswith("[") and text.endswith("]"):
        return [_value(item) for item in _split_top(text[1:-1], ",") if item.strip()]
    if text.lower() in ("none", "null"):
        return None
    return text


def _params(text: str, source: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in _split_top(text, ","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"{source}: expected key=value, got {item.strip()!r}")
        params[key.strip()] = _value(value)
    return params


def _step(text: str, source: str) -> Strategy:
    name, colon, rest = text.strip().partition(":")
    name = name.strip()
    params = _params(rest, source) if colon and rest.strip() else {}
    where = f"{source} (step {name!r})"
    if name not in PRESETS and name not in _STRATEGY_KINDS:
        raise ConfigError(
            f"{where}: unknown strategy {name!r}. A step is NAME or NAME:key=value,key=value "
            f"(steps joined by >>); presets: {', '.join(PRESETS)}; "
            f"kinds: {', '.join(_STRATEGY_KINDS)}"
        )
    if name in PRESETS:
        try:
            return PRESETS[name](**params)
        except ValidationError as exc:
            raise _config_error(where, exc) from None
    return parse_strategy({"kind": name, **params}, where)


def parse_strategy_spec(spec: str) -> Strategy:
    """A strategy from an inline spec such as ``evict-tool-results:keep_last=5 >> summary``."""
    source = f"strategy spec {spec!r}"
    steps = spec.split(">>")
    if any(not s.strip() for s in steps):
        raise ConfigError(f"{source}: empty step (write 'a >> b')")
    built = [_step(s, source) for s in steps]
    return built[0] if len(built) == 1 else Pipeline(*built)


def strategy_from_spec(spec: str | Path) -> Strategy:
    """A preset name, a path to a TOML/JSON config, or an inline spec."""
    text = str(spec).strip()
    if text in PRESETS:
        return PRESETS[text]()
    if isinstance(spec, Path) or text.endswith((".toml", ".json")) or Path(text).is_file():
        return load_strategy(text)
    return parse_strategy_spec(text)


def dump_strategy(strategy: Strategy) -> dict[str, Any]:
    """The JSON-able config of a built-in strategy (a plain function in it cannot be dumped)."""
    if not isinstance(strategy, StrategyModel):
        raise ConfigError(f"{strategy!r} is not a built-in strategy config; it cannot be saved")
    try:
        dumped: dict[str, Any] = strategy.model_dump(mode="json")
    except Exception as exc:  # pydantic raises plain errors for callables it cannot serialise
        raise ConfigError(
            f"this strategy holds a plain function and cannot be saved: {exc}"
        ) from None
    return dumped


def save_strategy(strategy: Strategy, path: str | Path) -> None:
    """Write the strategy's config as JSON (load it back with :func:`load_strategy`)."""
    path = Path(path)
    if path.suffix != ".json":
        raise ConfigError(f"{path}: strategies are saved as .json")
    path.write_text(json.dumps(dump_strategy(strategy), indent=2) + "\n", encoding="utf-8")


__all__ = [
    "dump_strategy",
    "load_strategy",
    "parse_strategy",
    "parse_strategy_spec",
    "save_strategy",
    "strategy_from_spec",
]
