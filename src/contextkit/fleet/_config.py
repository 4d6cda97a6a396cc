"""The one value every worker of a fleet run shares: what to compute for each session file.

Contract: :class:`FleetConfig` is frozen and small (it travels to every worker, process or Ray
task, and nothing else does). :meth:`FleetConfig.strategy_keys` resolves each strategy spec once,
at the boundary, into a key that names its full configuration (a preset's or a config file's
dumped settings, not its name or path) together with every option that changes a row: a row of a
previous run is reused by ``--resume`` only when its file (path, size, mtime) and this key match.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from contextkit.errors import ConfigError
from contextkit.peers import PEER_NAMES
from contextkit.replay import AS_RECORDED, ORACLE
from contextkit.strategies import dump_strategy, strategy_from_spec

SCHEMA_VERSION = 1
"""Bumped when a column changes meaning: rows written under another version are recomputed."""

Command = Literal["compare", "cost", "inspect"]


class FleetConfig(BaseModel):
    """What each session file is turned into.

    ``specs``: strategies (preset, config file, inline spec, or ``as-recorded``), one row per
    session and spec; ``doctor``: the cache doctor's columns on the ``as-recorded`` rows;
    ``per_call``: one row per call as well; ``model``: for calls whose file names none;
    ``lenient``: skip bad records (each is counted in the row); ``format``: force a reader."""

    model_config = ConfigDict(frozen=True)

    command: Command = "compare"
    specs: tuple[str, ...] = (AS_RECORDED,)
    doctor: bool = False
    per_call: bool = False
    model: str | None = None
    lenient: bool = False
    format: str | None = None

    def strategy_keys(self) -> dict[str, str]:
        """``spec -> key`` (16 hex digits) for every spec; a bad spec is a :class:`ConfigError`
        before any work starts."""
        if not self.specs:
            raise ConfigError("a fleet run needs at least one strategy")
        options = self.model_dump(exclude={"specs", "command"})
        keys: dict[str, str] = {}
        for spec in self.specs:
            # as-recorded, the oracle and the peers are not strategy configs: keyed by name
            named = spec in (AS_RECORDED, ORACLE, *PEER_NAMES)
            settings: object = spec if named else _settings(spec)
            text = json.dumps(
                [SCHEMA_VERSION, settings, options], sort_keys=True, separators=(",", ":")
            )
            keys[spec] = hashlib.sha256(text.encode()).hexdigest()[:16]
        return keys


def _settings(spec: str) -> object:
    strategy = strategy_from_spec(spec)
    try:
        return dump_strategy(strategy)
    except ConfigError:  # a plain function in it: its name is all there is to key on
        return repr(strategy)
