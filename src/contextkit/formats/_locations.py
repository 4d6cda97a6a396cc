"""Where each supported harness keeps its sessions on a machine, and what is there.

Contract: a reader that knows where its harness keeps sessions says so itself
(:class:`Locating`: ``locations(places)``, a pure function of the machine's :class:`Places`, its
sources cited in its docstring); :func:`contextkit.formats.default_locations` lists every reader's,
in the registry's order. :func:`contextkit.formats.discover` looks in each location and returns,
per location, the files whose format :func:`contextkit.formats.detect` says is that harness's
(sorted), and the files there it does not take (``skipped``, with the reason): discovery never
raises for what it finds, and a location that does not exist is found empty. Files are matched by
glob from the location; a Claude Code subagent file (``<session>/subagents/agent-*.jsonl``) is not
listed: its parent session reads it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Location:
    """One place a harness keeps sessions: files matching ``pattern`` under ``path`` (``path``
    itself when ``pattern`` is empty), read by the reader named ``format``."""

    harness: str
    format: str
    path: Path
    pattern: str = ""


@dataclass(frozen=True)
class Discovered:
    """What :func:`discover` found in one :class:`Location`."""

    harness: str
    format: str
    path: Path
    files: tuple[Path, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    """(path, reason) of the files there that no reader, or another harness's reader, takes."""


@dataclass(frozen=True)
class Places:
    """Where a machine keeps things: its home, environment, current directory (None: not known,
    and what depends on it is left out) and platform (``sys.platform`` values). A reader's
    ``locations(places)`` is a pure function of it, so tests build a fake home."""

    home: Path
    env: Mapping[str, str]
    cwd: Path | None = None
    platform: str = sys.platform

    def dir(self, name: str, default: Path) -> Path:
        """``$name`` when set and not empty (``~`` expanded), else ``default``."""
        value = self.env.get(name)
        return Path(value).expanduser() if value else default

    @property
    def app_data(self) -> Path:
        """Where Electron apps (VS Code, Cursor) keep ``<App>/User``: the platform's app data."""
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        if self.platform.startswith("win"):
            appdata = self.env.get("APPDATA")
            return Path(appdata) if appdata else self.home / "AppData" / "Roaming"
        return self.dir("XDG_CONFIG_HOME", self.home / ".config")

    def repo_root(self) -> Path | None:
        """The nearest folder from the current directory up that holds ``.git``, else the
        current directory (None: it is not known)."""
        if self.cwd is None:
            return None
        for folder in (self.cwd, *self.cwd.parents):
            if (folder / ".git").exists():
                return folder
        return self.cwd


SHOWN_FIRST = (
    "Claude Code",
    "Codex",
    "pi",
    "Gemini CLI",
    "Hermes",
    "Cline",
    "Roo Code",
    "OpenCode",
    "Cursor",
    "aider",
)
"""The order default locations are listed in, most used harness first (a harness not named here
comes after these, in the registry's order)."""


def shown_order(location: Location) -> int:
    """Where ``location`` comes in the list of default locations (:data:`SHOWN_FIRST`)."""
    harness = location.harness
    return SHOWN_FIRST.index(harness) if harness in SHOWN_FIRST else len(SHOWN_FIRST)


@runtime_checkable
class Locating(Protocol):
    """A reader that knows where its harness keeps sessions on a machine."""

    def locations(self, places: Places) -> tuple[Location, ...]:
        """Its harness's default locations on a machine with these ``places``; each source (the
        harness's code or docs) is cited in the method's docstring."""
        ...


def candidates(location: Location) -> list[Path]:
    """The files at ``location`` (its glob, sorted), whatever their format; none when the
    location does not exist."""
    if not location.pattern:
        return [location.path] if location.path.is_file() else []
    if not location.path.is_dir():
        return []
    return sorted(p for p in location.path.glob(location.pattern) if p.is_file())
