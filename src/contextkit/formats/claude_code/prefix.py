"""What Claude Code sends on every request that its transcripts never hold, per client version.

Contract:

- :func:`claude_code_prefix` returns the :class:`ClaudeCodePrefix` recorded for a client version
  (``"2.1.197"``; a ``cc_version`` such as ``"2.1.197.1f1"`` or ``"2.1.197 (Claude Code)"`` is
  reduced to its release), or None when that version was never captured. It reads the shipped
  ``contextkit/formats/claude_code/data/claude_code_prefix.json`` (once).
- Each entry is dated data, captured from the real CLI's requests to a local server
  (tests/formats/test_claude_code_cli.py, ``scripts/claude_code_prefix.py`` regenerates an entry
  from a captured request): the system blocks (characters, tokens, cache mark, opening words), the
  tools (count, tokens, names), ``context_management``, ``thinking``, ``max_tokens`` and the
  ``anthropic-beta`` header, for the main conversation and for a ``general-purpose`` subagent.
- Token counts are the named counter's (a tiktoken encoding: a proxy for Claude's tokenizer, which
  is not public); characters are exact for the capture. They vary a little between machines: the
  last system block names the working folder, the platform and today's date, and the first is a
  billing header whose ``cc_version`` suffix changes with the prompt.

The reader puts the entry of a session's version on the session (:func:`captured_prefix`,
``Session.captured_prefix``); the accountant uses it for a session without recorded usage
(:mod:`contextkit.accounting._hidden`); with usage, call 1's billed input measures the prefix as
sent that day, and the ledger's note gives the captured size beside it.
"""

from __future__ import annotations

import json
import re
from datetime import date
from functools import cache
from importlib import resources
from typing import Any

from contextkit.session import CapturedPrefix, Record

_RELEASE = re.compile(r"^\s*(\d+\.\d+\.\d+)")


class SystemBlock(Record):
    """One system block as sent: its size, cache mark and first words."""

    chars: int
    tokens: int
    cache_control: str | None
    """``ephemeral`` (with ``/1h`` when a TTL is given), None without a breakpoint."""
    opening: str


class RequestPrefix(Record):
    """What one kind of request carries besides its messages."""

    system: tuple[SystemBlock, ...]
    tool_count: int
    tool_tokens: int
    tool_names: tuple[str, ...]
    max_tokens: int
    thinking: dict[str, Any] | None
    context_management: dict[str, Any] | None
    betas: tuple[str, ...]
    """The ``anthropic-beta`` header, in order."""

    @property
    def system_chars(self) -> int:
        return sum(b.chars for b in self.system)

    @property
    def system_tokens(self) -> int:
        return sum(b.tokens for b in self.system)


class ClaudeCodePrefix(Record):
    """The hidden prefix of one Claude Code version, as captured on ``seen``."""

    version: str
    seen: date
    model: str
    """The model the captured requests named (the prefix may vary by model)."""
    counter: str
    """The token counter of every ``tokens`` field."""
    main: RequestPrefix
    subagent: RequestPrefix | None = None
    """A ``general-purpose`` subagent's requests (its own system prompt and tool set)."""
    notes: tuple[str, ...] = ()


def release(version: str) -> str:
    """``2.1.197`` from ``2.1.197``, ``2.1.197.1f1`` or ``2.1.197 (Claude Code)``."""
    found = _RELEASE.match(version)
    return found.group(1) if found else version.strip()


def claude_code_prefix(version: str) -> ClaudeCodePrefix | None:
    """The prefix recorded for ``version``, or None when it was never captured."""
    return _recorded().get(release(version))


def captured_prefix(version: str | None, *, subagent: bool) -> CapturedPrefix | None:
    """What the reader puts on a session of ``version`` (``subagent``: a subagent's requests,
    which carry their own, smaller set where it was captured): the captured system prompt and
    tools, or None when the version was never captured."""
    capture = claude_code_prefix(version) if version is not None else None
    if capture is None:
        return None
    sub = subagent and capture.subagent is not None
    kind = capture.subagent if sub and capture.subagent is not None else capture.main
    what = "subagent" if sub else "main"
    seen = capture.seen.isoformat()
    return CapturedPrefix(
        system_tokens=kind.system_tokens,
        tool_tokens=kind.tool_tokens,
        one_hour=any((b.cache_control or "").endswith("1h") for b in kind.system),
        source=f"Claude Code {capture.version} {what} requests, captured {seen}",
    )


@cache
def _recorded() -> dict[str, ClaudeCodePrefix]:
    data = resources.files("contextkit.formats.claude_code").joinpath(
        "data", "claude_code_prefix.json"
    )
    entries = json.loads(data.read_text(encoding="utf-8"))["versions"]
    return {e["version"]: ClaudeCodePrefix.model_validate(e) for e in entries}


__all__ = [
    "ClaudeCodePrefix",
    "RequestPrefix",
    "SystemBlock",
    "captured_prefix",
    "claude_code_prefix",
    "release",
]
