"""Reader for Hermes agent trajectories: the ShareGPT JSONL that Hermes' batch runner and
``save_trajectories`` append to (``trajectory_samples.jsonl``, ``failed_trajectories.jsonl`` in
the working directory; schema from the ``hermes-agent`` 0.19.0 package on PyPI:
``agent/trajectory.py`` ``save_trajectory`` and ``agent/agent_runtime_helpers.py``
``convert_to_trajectory_format``).

A line is ``{"conversations": [{"from", "value"}, ...], "timestamp", "model", "completed"}``.
``from`` is ``system`` (Hermes' fixed function-calling prompt with the tool signatures in
``<tools>``), ``human``, ``gpt`` (the reply, reasoning in ``<think>``, tool calls as
``<tool_call>`` JSON) or ``tool`` (the results of one reply's calls, each a
``<tool_response>``).

One session per line (``session_id`` ``<file stem>:<line>``). What counts as a call: each
``gpt`` turn; its request is the system turn and the turns before it, as text (``human`` and
``tool`` turns in the user role, adjacent ones joined); the stop reason is ``tool_use`` when the
reply holds a ``<tool_call>``: this is Hermes' training rendering of the
conversation, not the request the API received (the real system prompt, native tool calls and
tool schemas differ), so ``prefix_known=False`` and ``exact=False``. Cannot know: usage (none is
recorded), per-call times (one ``timestamp`` per trajectory, in a note) and thinking signatures.

Strict by default: a line that is not a JSON object with a ``conversations`` list of
``{from, value}`` turns (``from`` one of the four above) is a :class:`FormatError` naming the file
and line; ``lenient=True`` skips it and lists each one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contextkit.formats._io import Skips, iter_jsonl
from contextkit.formats._trajectory import Reply, as_str, calls_from_messages, peek
from contextkit.messages import Message, Role, TextBlock
from contextkit.session import LoadedFile, Session

NAME = "hermes-trajectory"
FILE_NAMES = frozenset({"trajectory_samples.jsonl", "failed_trajectories.jsonl"})
SYSTEM_OPENING = "You are a function calling AI model."
_ROLES: dict[str, Role] = {"human": "user", "tool": "user", "gpt": "assistant"}
_NOTE = (
    "ShareGPT training rendering: requests are Hermes' trajectory text (its function-calling "
    "system prompt, <tool_call> / <tool_response> XML), not the API requests; no usage recorded"
)


class HermesTrajectoryReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        """A JSONL line with ``conversations`` of ``{from, value}`` turns, and Hermes' file name
        or its fixed system prompt."""
        seen = peek(head)
        if seen.kind != "object" or "conversations" not in seen.keys:
            return False
        if not {"from", "value"} <= set(seen.first_keys.get("conversations", ())):
            return False
        return path.name in FILE_NAMES or SYSTEM_OPENING in head[:512]

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        sessions = []
        for line, entry in iter_jsonl(path, skips):
            problem = _problem(entry)
            if problem is not None:
                skips.fail(problem, line)
                continue
            sessions.append(_session(path, line, entry))
        return LoadedFile(
            path=str(path), format=NAME, sessions=tuple(sessions), skipped=tuple(skips.records)
        )


def _problem(entry: Mapping[str, Any]) -> str | None:
    turns = entry.get("conversations")
    if not isinstance(turns, list):
        return "expected a 'conversations' list"
    for i, turn in enumerate(turns):
        if not isinstance(turn, Mapping) or not isinstance(turn.get("value"), str):
            return f"turn {i}: expected an object with a string 'value'"
        if turn.get("from") not in (*_ROLES, "system"):
            return f"turn {i}: unknown 'from' {turn.get('from')!r} (system, human, gpt or tool)"
    return None


def _messages(turns: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[Message], list[int]]:
    """The system text, the turns as messages (adjacent user turns joined), and where the
    ``gpt`` turns are among them."""
    system: str | None = None
    messages: list[Message] = []
    replies: list[int] = []
    for turn in turns:
        if turn["from"] == "system":
            system = turn["value"] if system is None else f"{system}\n\n{turn['value']}"
            continue
        role = _ROLES[turn["from"]]
        block = TextBlock(text=turn["value"])
        if role == "user" and messages and messages[-1].role == "user":
            messages[-1] = Message(role="user", content=(*messages[-1].blocks, block))
            continue
        if role == "assistant":
            replies.append(len(messages))
        messages.append(Message(role=role, content=(block,)))
    return system, messages, replies


def _finish(reply: Message) -> str:
    """``tool_calls`` when the reply calls a tool (as ``<tool_call>`` text), else ``stop``."""
    text = "".join(b.text for b in reply.blocks if isinstance(b, TextBlock))
    return "tool_calls" if "<tool_call>" in text else "stop"


def _session(path: Path, line: int, entry: Mapping[str, Any]) -> Session:
    system, messages, indices = _messages(entry["conversations"])
    model = as_str(entry.get("model"))
    replies = [
        Reply(index=i, line=line, model=model, finish_reason=_finish(messages[i])) for i in indices
    ]
    calls = calls_from_messages(tuple(messages), replies, system=system)
    notes = [_NOTE]
    if entry.get("timestamp") is not None or entry.get("completed") is not None:
        notes.append(f"saved at {entry.get('timestamp')}, completed: {entry.get('completed')}")
    return Session(
        path=str(path),
        format=NAME,
        session_id=f"{path.stem}:{line}",
        calls=calls,
        prefix_known=False,
        notes=tuple(notes),
    )


READER = HermesTrajectoryReader()

__all__ = ["READER", "HermesTrajectoryReader"]
