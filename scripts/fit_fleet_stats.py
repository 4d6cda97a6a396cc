"""Fit the size distributions of :mod:`contextkit.fleet.synthetic` to the recorded corpus.

Reads every Claude Code session of ``$CONTEXTKIT_CORPUS`` (subagents included) and writes, per
quantity, the mean and standard deviation of its natural log (a lognormal fit), its median and
its 95th percentile, with the number of observations, to
``src/contextkit/fleet/data/fleet_stats.json``:

- ``calls_per_session``, ``calls_per_turn``: model calls;
- ``user_chars``: a typed user message; ``assistant_chars``: an assistant text block;
- ``tool_result_chars``: one tool result; ``tool_uses_per_call``: tool calls of a call that made
  any; ``gap_s``: seconds between consecutive calls.

    uv run python scripts/fit_fleet_stats.py
"""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path

from contextkit.formats import load
from contextkit.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.replay import find_session_files
from contextkit.session import Session

OUT = Path(__file__).parent.parent / "src/contextkit/fleet/data/fleet_stats.json"


def _chars(content: object) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, tuple):
        return sum(len(b.text) for b in content if isinstance(b, TextBlock))
    return 0


def _observe(session: Session, obs: dict[str, list[float]]) -> None:
    calls = session.calls
    obs["calls_per_session"].append(len(calls))
    obs["calls_per_turn"].extend(len(t) for t in session.user_turns())
    times = [c.timestamp for c in calls if c.timestamp is not None]
    obs["gap_s"].extend(max((b - a).total_seconds(), 0.1) for a, b in itertools.pairwise(times))
    history: list[Message] = list(calls[-1].request.messages)
    history += [calls[-1].response] if calls[-1].response is not None else []
    for message in history:
        blocks = message.content if isinstance(message.content, tuple) else ()
        if message.role == "user" and isinstance(message.content, str):
            obs["user_chars"].append(len(message.content))
        uses = sum(isinstance(b, ToolUseBlock) for b in blocks)
        if message.role == "assistant" and uses:
            obs["tool_uses_per_call"].append(uses)
        for block in blocks:
            if isinstance(block, ToolResultBlock):
                obs["tool_result_chars"].append(max(_chars(block.content), 1))
            elif isinstance(block, TextBlock) and message.role == "assistant" and block.text:
                obs["assistant_chars"].append(len(block.text))


def _fit(values: list[float]) -> dict[str, float]:
    logs = sorted(math.log(v) for v in values if v > 0)
    mean = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / max(len(logs) - 1, 1))
    ordered = sorted(values)
    return {
        "log_mean": round(mean, 4),
        "log_sd": round(sd, 4),
        "median": ordered[len(ordered) // 2],
        "p95": ordered[int(0.95 * (len(ordered) - 1))],
        "n": len(values),
    }


def main() -> None:
    root = Path(os.environ["CONTEXTKIT_CORPUS"])
    keys = ("calls_per_session", "calls_per_turn", "user_chars", "assistant_chars")
    obs: dict[str, list[float]] = {
        k: [] for k in (*keys, "tool_result_chars", "tool_uses_per_call", "gap_s")
    }
    sources: list[str] = []
    for path in find_session_files([root]).files:
        loaded = load(path, lenient=True)
        if loaded.format != "claude-code":
            continue
        sources.append(path.relative_to(root).as_posix())
        for top in loaded.sessions:
            for session in top.all_sessions():
                if session.calls:
                    _observe(session, obs)
    stats = {"fitted_on": sorted(sources), **{k: _fit(v) for k, v in obs.items()}}
    OUT.write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in stats.items() if k != "fitted_on"}, indent=2))


if __name__ == "__main__":
    main()
