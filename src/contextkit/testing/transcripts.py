"""Synthetic Claude Code transcripts of any length, for load and replay benchmarks and tests.

:func:`claude_code_transcript` writes the records Claude Code 2.1 writes for a tool loop: a prompt,
then per call one response (a text line and a ``tool_use`` line, or two ``tool_use`` lines whose
results hang off each line, as parallel tool calls do), the tool results, and now and then a
``progress`` record in the ``parentUuid`` chain and a new prompt. Deterministic for a seed; the
shape, not the text, is what matters, so texts are short.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_SESSION = "00000000-0000-4000-8000-000000000000"


class _Writer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = 0
        self.parent: str | None = None
        self.seconds = 0

    def uuid(self) -> str:
        self.n += 1
        return f"00000000-0000-4000-8000-{self.n:012d}"

    def base(self, kind: str, parent: str | None) -> dict[str, Any]:
        self.seconds += 1
        minutes, seconds = divmod(self.seconds, 60)
        hours, minutes = divmod(minutes, 60)
        return {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/work/project",
            "sessionId": _SESSION,
            "version": "2.1.38",
            "type": kind,
            "uuid": self.uuid(),
            "timestamp": f"2026-01-{1 + hours // 24:02d}T{hours % 24:02d}:{minutes:02d}:"
            f"{seconds:02d}.000Z",
        }


def _usage(rng: random.Random, call: int) -> dict[str, int]:
    return {
        "input_tokens": 3,
        "cache_creation_input_tokens": rng.randint(50, 400),
        "cache_read_input_tokens": 10_000 + 150 * call,
        "output_tokens": rng.randint(20, 200),
    }


def _assistant(
    w: _Writer, parent: str | None, call: int, block: dict[str, Any], stop: object
) -> dict[str, Any]:
    rec = w.base("assistant", parent)
    rec["requestId"] = f"req_{call:08d}"
    rec["message"] = {
        "model": "claude-sonnet-4-5-20250929",
        "id": f"msg_{call:08d}",
        "type": "message",
        "role": "assistant",
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(w.rng, call),
    }
    return rec


def _result(w: _Writer, parent: str | None, tool_id: str, text: str) -> dict[str, Any]:
    rec = w.base("user", parent)
    content = [{"tool_use_id": tool_id, "type": "tool_result", "content": text}]
    rec["message"] = {"role": "user", "content": content}
    return rec


def _prompt(w: _Writer, parent: str | None, text: str) -> dict[str, Any]:
    rec = w.base("user", parent)
    rec["message"] = {"role": "user", "content": text}
    return rec


def _records(calls: int, seed: int) -> Iterator[dict[str, Any]]:
    w = _Writer(seed)
    rec = _prompt(w, None, "Please work through the task list.")
    yield rec
    parent: str | None = rec["uuid"]
    for call in range(calls):
        rng = w.rng
        if call and rng.random() < 0.05:  # a new prompt after an answer
            rec = _prompt(w, parent, f"Next step {call}.")
            yield rec
            parent = rec["uuid"]
        if rng.random() < 0.1:  # a progress record in the chain
            rec = w.base("progress", parent)
            rec["data"] = {"type": "hook_progress", "hookEvent": "PostToolUse"}
            yield rec
            parent = rec["uuid"]
        first_id, second_id = f"toolu_{call:08d}a", f"toolu_{call:08d}b"
        text = {"type": "text", "text": f"Running step {call}."}
        use = {"type": "tool_use", "id": first_id, "name": "Bash", "input": {"command": "ls"}}
        if rng.random() < 0.3:  # parallel tool calls: two tool_use lines, results off each
            other = {**use, "id": second_id, "input": {"command": "pwd"}}
            one = _assistant(w, parent, call, use, None)
            two = _assistant(w, one["uuid"], call, other, "tool_use")
            yield one
            yield two
            r1 = _result(w, one["uuid"], first_id, f"out {call} " + "x" * rng.randint(10, 300))
            yield r1
            r2 = _result(w, two["uuid"], second_id, f"dir {call}")
            yield r2
            parent = r2["uuid"]
            continue
        one = _assistant(w, parent, call, text, None)
        two = _assistant(w, one["uuid"], call, use, "tool_use")
        yield one
        yield two
        r1 = _result(w, two["uuid"], first_id, f"out {call} " + "x" * rng.randint(10, 300))
        yield r1
        parent = r1["uuid"]


def claude_code_transcript(calls: int, *, seed: int = 0) -> str:
    """A Claude Code transcript (JSONL text) whose main thread makes ``calls`` model calls."""
    return "".join(json.dumps(r) + "\n" for r in _records(calls, seed))


def write_claude_code_transcript(path: str | Path, calls: int, *, seed: int = 0) -> Path:
    """Write :func:`claude_code_transcript` to ``path`` and return it."""
    path = Path(path)
    path.write_text(claude_code_transcript(calls, seed=seed), encoding="utf-8")
    return path


__all__ = ["claude_code_transcript", "write_claude_code_transcript"]
