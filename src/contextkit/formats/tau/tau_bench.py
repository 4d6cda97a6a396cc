"""Reader for tau-bench result files (``sierra-research/tau-bench``, ``historical_trajectories``).

A results file is a JSON list of ``EnvRunResult`` objects: ``task_id``, ``reward``, ``info``,
``traj`` (the agent's OpenAI chat message list: system policy, user-simulator turns, assistant
messages with ``tool_calls``, ``tool`` results) and ``trial``. A file holding one such object (not
in a list) is read too.

What counts as a call: each assistant message of ``traj`` is one model call; its request is every
message before it (rebuilt, ``exact=False``). The last message of a trajectory is usually the user
simulator's ``###STOP###`` turn or a final tool result, which no call answered.

Each element becomes one :class:`Session` (``session_id`` is ``task-<task_id>-trial-<trial>``).
tau-bench records no token usage and no model name: calls have ``usage=None``, ``model=None``.
The system prompt (the domain policy) is in the file; the tool definitions are not (a note says
so). Strict mode fails on the first bad trajectory or message with its line; lenient mode skips it
and lists a :class:`SkippedRecord`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._trajectory import (
    JsonDoc,
    Key,
    Reply,
    as_int,
    calls_from_messages,
    load_doc,
    parse_chat,
    peek,
)
from contextkit.session import LoadedFile, Session

NAME = "tau-bench"
_NO_TOOLS_NOTE = "the tool definitions are not in tau-bench files (only the system policy is)"


def _looks_like_result(keys: tuple[str, ...]) -> bool:
    return "traj" in keys and ("task_id" in keys or "reward" in keys)


class TauBenchReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        seen = peek(head)
        if seen.kind == "list":
            # ``info`` (before ``traj``) may be long: the task id and a ``"traj"`` key suffice.
            return "task_id" in seen.keys and ("traj" in seen.keys or '"traj"' in head)
        return seen.kind == "object" and _looks_like_result(seen.keys)

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        doc = load_doc(path)
        skips = Skips(path, lenient)
        if isinstance(doc.value, list):
            items: list[tuple[Key, ...]] = [(i,) for i in range(len(doc.value))]
        elif isinstance(doc.value, dict):
            items = [()]
        else:
            raise FormatError(path, "expected a list of tau-bench results", 1)
        sessions = []
        for keys in items:
            session = _read_result(doc, keys, skips)
            if session is not None:
                sessions.append(session)
        return LoadedFile(
            path=str(path), format=NAME, sessions=tuple(sessions), skipped=tuple(skips.records)
        )


def _value_at(doc: JsonDoc, keys: tuple[Key, ...]) -> Any:
    value = doc.value
    for key in keys:
        value = value[key]
    return value


def _read_result(doc: JsonDoc, keys: tuple[Key, ...], skips: Skips) -> Session | None:
    result = _value_at(doc, keys)
    where = f"result {keys[0]}: " if keys else ""
    line = doc.line_of(*keys)
    if not isinstance(result, Mapping):
        skips.fail(f"{where}expected an object, found {type(result).__name__}", line)
        return None
    traj = result.get("traj")
    if not isinstance(traj, list):
        skips.fail(f"{where}'traj' must be a list of chat messages", line)
        return None
    lines = doc.element_lines(*keys, "traj")
    try:
        transcript = parse_chat(traj, lines, skips, context=where)
    except ValueError as exc:
        skips.fail(f"{where}{exc}", line)
        return None
    replies = [Reply(index=m, line=_at(lines, r)) for m, r in transcript.responses]
    calls = calls_from_messages(transcript.messages, replies, system=transcript.system)
    has_system = transcript.system is not None
    notes = [_NO_TOOLS_NOTE, "tau-bench records no token usage and no model name"]
    if not has_system:
        notes.insert(0, "the trajectory has no system message")
    return Session(
        path=str(doc.path),
        format=NAME,
        session_id=_session_id(result),
        calls=calls,
        prefix_known=has_system,
        notes=tuple(notes),
    )


def _at(lines: tuple[int, ...], index: int) -> int | None:
    return lines[index] if index < len(lines) else None


def _session_id(result: Mapping[str, Any]) -> str | None:
    task = as_int(result.get("task_id"))
    if task is None:
        task_id = result.get("task_id")
        if not isinstance(task_id, str):
            return None
        task_str = task_id
    else:
        task_str = str(task)
    trial = as_int(result.get("trial"))
    return f"task-{task_str}" if trial is None else f"task-{task_str}-trial-{trial}"


READER = TauBenchReader()

__all__ = ["READER", "TauBenchReader"]
