"""Synthetic fleets: N Claude Code sessions with realistic sizes, written as real files.

Contract: :func:`write_fleet` is deterministic in ``(n, seed, stats)``: the same call writes the
same bytes. Each session is a Claude Code transcript (``<folder>/<project>/<session id>.jsonl``,
the layout of ``~/.claude/projects``), so a fleet run reads it through the ``claude-code`` reader
like a recording. Sizes are drawn from lognormal fits to the recorded corpus
(``data/fleet_stats.json``, written by ``scripts/fit_fleet_stats.py``): calls per session and per
user turn, typed user messages, assistant text, tool calls per call, tool-result sizes and the
seconds between calls. Projects are drawn from a Zipf-like law (a few projects hold most
sessions); days spread over ``days`` days; models from a fixed mix. Usage is recorded as a Claude
Code client bills it with a warm cache: the hidden prefix (system prompt and tools, absent from
these files) and the growing history are read from the cache, what is new is written, and a pause
longer than the 5-minute TTL rewrites everything. Calls per session are capped at ``max_calls``.
"""

from __future__ import annotations

import json
import math
import random
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from pathlib import Path
from typing import Any

MODELS = (("claude-sonnet-4-5", 0.6), ("claude-opus-4-6", 0.25), ("claude-haiku-4-5", 0.15))
_WORDS = (
    "def",
    "return",
    "import",
    "class",
    "self",
    "value",
    "error",
    "test",
    "file",
    "path",
    "config",
    "session",
    "cache",
    "token",
    "call",
    "model",
    "result",
    "tool",
    "read",
    "write",
    "line",
    "index",
    "list",
    "dict",
    "string",
    "number",
    "assert",
    "raise",
    "pass",
    "none",
    "true",
    "false",
    "for",
    "while",
    "if",
    "else",
    "try",
    "except",
    "with",
    "open",
    "json",
    "data",
    "parse",
    "load",
    "save",
    "update",
    "the",
    "a",
    "of",
    "to",
    "in",
    "is",
    "that",
    "it",
    "on",
    "as",
    "be",
    "this",
    "by",
    "from",
    "or",
    "an",
    "are",
    "was",
    "not",
    "at",
    "have",
    "but",
    "all",
)
_START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
_HIDDEN_PREFIX_TOKENS = 14_000
_TTL_S = 300


def load_stats() -> dict[str, Any]:
    """The shipped corpus fit (``data/fleet_stats.json``)."""
    text = files("contextkit.fleet").joinpath("data/fleet_stats.json").read_text("utf-8")
    stats: dict[str, Any] = json.loads(text)
    return stats


@dataclass
class _Draw:
    rng: random.Random
    stats: Mapping[str, Any]
    text: str

    def size(self, name: str, low: int = 1, high: int = 10**6) -> int:
        fit = self.stats[name]
        value = math.exp(self.rng.gauss(fit["log_mean"], fit["log_sd"]))
        return int(min(max(round(value), low), high))

    def words(self, chars: int) -> str:
        start = self.rng.randrange(0, len(self.text) - chars - 1)
        return self.text[start : start + chars]

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))


def write_fleet(
    folder: str | Path,
    n: int,
    *,
    seed: int = 0,
    projects: int = 12,
    days: int = 30,
    max_calls: int = 400,
    stats: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write ``n`` sessions under ``folder``; the paths written, in order."""
    rng = random.Random(seed)
    text = " ".join(rng.choice(_WORDS) for _ in range(60_000))
    draw = _Draw(rng, stats or load_stats(), text)
    weights = [1 / (k + 1) for k in range(projects)]
    names = [f"-home-dev-project-{k:02d}" for k in range(projects)]
    out: list[Path] = []
    for _ in range(n):
        project = rng.choices(names, weights)[0]
        session_id = draw.uid()
        path = Path(folder) / project / f"{session_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        start = _START + timedelta(days=rng.randrange(days), seconds=rng.randrange(12 * 3600))
        model = rng.choices([m for m, _ in MODELS], [w for _, w in MODELS])[0]
        calls = draw.size("calls_per_session", 1, max_calls)
        with path.open("w", encoding="utf-8") as fh:
            for record in _session(draw, session_id, project, start, model, calls):
                fh.write(json.dumps(record, separators=(",", ":")) + "\n")
        out.append(path)
    return out


@dataclass
class _State:
    """A session being written: the last record's uuid, the clock, the history's size."""

    draw: _Draw
    session_id: str
    cwd: str
    model: str
    clock: datetime
    parent: str | None = None
    history_tokens: int = 0
    cached_tokens: int = 0
    last_call: datetime | None = None

    def record(self, kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        uid = self.draw.uid()
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.38",
            "type": kind,
            "message": message,
            "uuid": uid,
            "timestamp": self.clock.isoformat().replace("+00:00", "Z"),
            **extra,
        }
        self.parent = uid
        return record


def _session(
    draw: _Draw, session_id: str, project: str, start: datetime, model: str, calls: int
) -> Iterator[dict[str, Any]]:
    state = _State(draw, session_id, "/" + project.strip("-").replace("-", "/"), model, start)
    left = calls
    while left > 0:
        turn = min(draw.size("calls_per_turn", 1, 200), left)
        left -= turn
        prompt = draw.words(draw.size("user_chars", 5, 20_000))
        state.history_tokens += len(prompt) // 4 + 4
        yield state.record("user", {"role": "user", "content": prompt})
        for k in range(turn):
            yield from _call(state, final=k == turn - 1)
        state.clock += timedelta(seconds=draw.size("gap_s", 1, 7200) * 4)  # the user's pause


def _call(state: _State, final: bool) -> Iterator[dict[str, Any]]:
    draw = state.draw
    state.clock += timedelta(seconds=draw.size("gap_s", 1, 3600))
    blocks: list[dict[str, Any]] = []
    if final or draw.rng.random() < 0.5:
        blocks.append({"type": "text", "text": draw.words(draw.size("assistant_chars", 2, 30_000))})
    uses = [] if final else [draw.uid() for _ in range(draw.size("tool_uses_per_call", 1, 8))]
    for use in uses:
        path = f"src/module_{draw.rng.randrange(200)}.py"
        blocks.append(
            {
                "type": "tool_use",
                "id": "toolu_" + use[:24],
                "name": "Read",
                "input": {"file_path": path},
            }
        )
    output = sum(len(json.dumps(b)) for b in blocks) // 4 + 1
    yield state.record(
        "assistant",
        {
            "model": state.model,
            "id": "msg_" + draw.uid().replace("-", "")[:24],
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "stop_reason": "end_turn" if final else "tool_use",
            "stop_sequence": None,
            "usage": _usage(state, output),
        },
        requestId="req_" + draw.uid().replace("-", "")[:24],
    )
    state.history_tokens += output
    if not uses:
        return
    results = []
    for use in uses:
        body = draw.words(draw.size("tool_result_chars", 1, 200_000))
        results.append({"type": "tool_result", "tool_use_id": "toolu_" + use[:24], "content": body})
        state.history_tokens += len(body) // 4 + 8
    state.clock += timedelta(seconds=1)
    yield state.record("user", {"role": "user", "content": results})


def _usage(state: _State, output: int) -> dict[str, Any]:
    """As a warm-cached Claude Code call bills: the prefix read up to the last call's total
    (none after a pause over the TTL), the rest written, 3 tokens uncached."""
    total = _HIDDEN_PREFIX_TOKENS + state.history_tokens
    expired = state.last_call is None or (state.clock - state.last_call).total_seconds() > _TTL_S
    read = 0 if expired else min(state.cached_tokens, total - 3)
    state.cached_tokens = total - 3
    state.last_call = state.clock
    return {
        "input_tokens": 3,
        "cache_creation_input_tokens": total - 3 - read,
        "cache_read_input_tokens": read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": total - 3 - read,
            "ephemeral_1h_input_tokens": 0,
        },
        "output_tokens": output,
        "service_tier": "standard",
    }
