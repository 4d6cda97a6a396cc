"""Claude Code transcripts read with a plain JSON loop, independent of the reader: what the tests
compare the reader's calls with (imported by tests; not a fixture module)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class JsonCall:
    blocks: list[Any] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    model: str | None = None


def json_records(path: Path) -> Iterator[Any]:
    """Every JSON value of every line (two written back to back on one line included)."""
    decoder = json.JSONDecoder()
    for line in path.read_text(encoding="utf-8").splitlines():
        text, end = line.strip(), 0
        while end < len(text):
            value, end = decoder.raw_decode(text, end)
            yield value


def json_calls(path: Path) -> dict[str, JsonCall]:
    """The calls of one file, by response key: assistant lines (inline sidechains included),
    agent_progress messages of agents without a subagent file, and those agents' last responses
    (the Task result's toolUseResult)."""
    files = path.parent / path.stem / "subagents"
    calls: dict[str, JsonCall] = {}
    progress_agents: set[str] = set()
    for outer in json_records(path):
        obj, message, data = outer, outer.get("message"), outer.get("data", {})
        if obj.get("type") == "progress" and data.get("type") == "agent_progress":
            if (files / f"agent-{data['agentId']}.jsonl").is_file():
                continue
            progress_agents.add(data["agentId"])
            obj, message = data["message"], data["message"]["message"]
        result = obj.get("toolUseResult")
        if isinstance(result, dict) and result.get("agentId") in progress_agents:
            calls[f"result:{result['agentId']}"] = JsonCall(result["content"], result["usage"])
        if obj.get("type") != "assistant" or message.get("model") == "<synthetic>":
            continue
        call = calls.setdefault(obj.get("requestId") or message["id"], JsonCall())
        call.blocks.extend(message["content"])
        call.usage, call.model = message["usage"], message["model"]
    return calls


def json_call_count(path: Path) -> int:
    """Calls of ``path`` and, for a main session file, of the subagent files beside it."""
    subs = sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))
    return len(json_calls(path)) + sum(len(json_calls(s)) for s in subs)
