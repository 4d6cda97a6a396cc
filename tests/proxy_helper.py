"""Shared by the proxy tests: run the proxy in a thread, read its records back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextkit.formats import load
from contextkit.messages import to_payload
from contextkit.session import Call

SECRETS = ("sk-ant-test", "sk-openai-test", "Bearer ", "session-cookie=1")


def records(folder: Path) -> list[dict[str, Any]]:
    """Every record line of every file in ``folder``, in file then line order."""
    out: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.jsonl")):
        out.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return out


def check_files(folder: Path) -> None:
    """Files 0600, every line a JSON record, no credential anywhere."""
    for path in folder.glob("*.jsonl"):
        assert path.stat().st_mode & 0o777 == 0o600, path
        text = path.read_text()
        for secret in SECRETS:
            assert secret not in text, f"{secret!r} written to {path}"
        for line in text.splitlines():
            assert json.loads(line)["contextkit_proxy"] == 1


def replayed_calls(folder: Path) -> list[Call]:
    """The calls ``contextkit.formats.load`` reads from every record file."""
    calls: list[Call] = []
    for path in sorted(folder.glob("*.jsonl")):
        loaded = load(path)
        assert loaded.format == "contextkit-proxy"
        calls.extend(loaded.sessions[0].calls)
    return calls


def unmarked(value: Any) -> Any:
    """A JSON value without ``cache_control`` anywhere (marks move between calls by design)."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def forwarded(record: dict[str, Any]) -> Any:
    """The body the upstream got (a record writes null for "the request, unchanged")."""
    return record["request"] if record["forwarded"] is None else record["forwarded"]


def message_payloads(call: Call) -> list[Any]:
    return [to_payload(m) for m in call.request.messages]
