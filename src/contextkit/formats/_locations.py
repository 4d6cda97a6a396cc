"""Where each supported harness keeps its sessions on a machine, and what is there.

Contract: :func:`default_locations` is the one table of default locations, a pure function of the
home directory, the environment, the current directory and the platform (so tests build a fake
home). :func:`discover` looks in each location and returns, per location, the files whose format
:func:`contextkit.formats.detect` says is that harness's (sorted), and the files there it does not
take (``skipped``, with the reason): discovery never raises for what it finds, and a location that
does not exist is found empty. Files are matched by glob from the location; a Claude Code
subagent file (``<session>/subagents/agent-*.jsonl``) is not listed: its parent session reads it.

Sources of the defaults (each checked against the harness's code or docs, as cited):

- Claude Code: ``$CLAUDE_CONFIG_DIR/projects`` else ``~/.claude/projects/<project>/<id>.jsonl``
  (Claude Code docs and readers of its transcripts, e.g. ``claudeConfigDir`` in public tools:
  ``env.CLAUDE_CONFIG_DIR || ~/.claude``).
- Codex: ``$CODEX_HOME/sessions`` else ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``
  (``openai/codex`` ``codex-rs/core`` rollout recorder; ``CODEX_HOME`` defaults to ``~/.codex``).
- pi: ``$PI_CODING_AGENT_DIR/sessions`` else ``~/.pi/agent/sessions/--<cwd>--/*.jsonl``
  (``badlogic/pi-mono`` ``packages/coding-agent`` ``config.ts``: ``getAgentDir``,
  ``getSessionsDir``).
- Gemini CLI: ``~/.gemini/tmp/<project hash>/chats/session-*.json(l)`` (``google-gemini/
  gemini-cli`` ``docs``: chat recording "in your project's temporary directory at
  ``~/.gemini/tmp/<project_hash>/chats``").
- Hermes: ``$HERMES_HOME/state.db``, default ``~/.hermes/state.db`` (``hermes-agent`` 0.19.0,
  ``hermes_state.py``, as the reader's docstring cites).
- Cline and Roo Code: VS Code's ``globalStorage`` (``$XDG_CONFIG_HOME`` or ``~/.config``
  ``/Code/User/globalStorage`` on Linux, ``~/Library/Application Support/Code/User/
  globalStorage`` on macOS, ``%APPDATA%\\Code\\User\\globalStorage`` on Windows), then
  ``saoudrizwan.claude-dev/tasks/<id>/api_conversation_history.json`` (Cline's extension id
  and task folder, as the ``cline`` reader's sources give them; VS Code's per-platform user data
  folder) or ``rooveterinaryinc.roo-cline/tasks/<id>/`` (Roo Code).
- OpenCode: ``$XDG_DATA_HOME/opencode`` else ``~/.local/share/opencode`` (``sst/opencode``
  ``packages/opencode/src/global/index.ts``: ``xdg-basedir``'s ``xdgData``, on every platform):
  ``storage/session/<project>/<id>.json`` (older) and ``opencode.db`` (newer).
- Cursor: ``Cursor/User/globalStorage/state.vscdb`` under the same configuration folder as VS Code
  (``michaeldhood/chatrxiv`` ``docs/cursor/storage-reference.md``).
- aider: ``.aider.chat.history.md`` at the root of the git repository holding the current
  directory, else in the current directory (``Aider-AI/aider`` ``aider/args.py``:
  ``--chat-history-file`` defaults to the git root's ``.aider.chat.history.md``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


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


def _config_dir(home: Path, env: Mapping[str, str], platform: str) -> Path:
    """Where Electron apps (VS Code, Cursor) keep ``<App>/User``: the platform's app data."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith("win"):
        return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
    return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"


def _dir(env: Mapping[str, str], name: str, default: Path) -> Path:
    """``$name`` when set and not empty (``~`` expanded), else ``default``."""
    value = env.get(name)
    return Path(value).expanduser() if value else default


def _repo_root(cwd: Path) -> Path:
    """The nearest folder from ``cwd`` up that holds ``.git``, else ``cwd``."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def default_locations(
    home: Path,
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    platform: str = sys.platform,
) -> tuple[Location, ...]:
    """Every harness's default locations for this home, environment, current directory (aider;
    none: aider is left out) and platform (``sys.platform`` values). See the module docstring
    for the source of each."""
    claude = _dir(env, "CLAUDE_CONFIG_DIR", home / ".claude")
    codex = _dir(env, "CODEX_HOME", home / ".codex")
    pi = _dir(env, "PI_CODING_AGENT_DIR", home / ".pi" / "agent")
    hermes = _dir(env, "HERMES_HOME", home / ".hermes")
    xdg_data = _dir(env, "XDG_DATA_HOME", home / ".local" / "share")
    apps = _config_dir(home, env, platform)
    storage = apps / "Code" / "User" / "globalStorage"
    tasks = "*/api_conversation_history.json"
    found = [
        Location("Claude Code", "claude-code", claude / "projects", "*/*.jsonl"),
        Location("Codex", "codex", codex / "sessions", "**/rollout-*.jsonl"),
        Location("pi", "pi", pi / "sessions", "*/*.jsonl"),
        Location("Gemini CLI", "gemini-cli", home / ".gemini" / "tmp", "*/chats/session-*.json*"),
        Location("Hermes", "hermes", hermes / "state.db"),
        Location("Cline", "cline", storage / "saoudrizwan.claude-dev" / "tasks", tasks),
        Location("Roo Code", "cline", storage / "rooveterinaryinc.roo-cline" / "tasks", tasks),
        Location("OpenCode", "opencode", xdg_data / "opencode" / "storage", "session/*/*.json"),
        Location("OpenCode", "opencode", xdg_data / "opencode" / "opencode.db"),
        Location("Cursor", "cursor", apps / "Cursor" / "User" / "globalStorage" / "state.vscdb"),
    ]
    if cwd is not None:
        found.append(Location("aider", "aider", _repo_root(cwd) / ".aider.chat.history.md"))
    return tuple(found)


def candidates(location: Location) -> list[Path]:
    """The files at ``location`` (its glob, sorted), whatever their format; none when the
    location does not exist."""
    if not location.pattern:
        return [location.path] if location.path.is_file() else []
    if not location.path.is_dir():
        return []
    return sorted(p for p in location.path.glob(location.pattern) if p.is_file())
