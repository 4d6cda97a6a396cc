"""Reader for SWE-agent trajectory files (``*.traj``, ``SWE-agent/SWE-agent``).

A ``.traj`` file is one JSON object: ``history`` (the message log, one item per message: ``role``,
``content``, ``agent``, and, depending on the version, ``message_type``, ``thought``, ``action``,
``tool_calls``, ``tool_call_ids``, ``is_demo``), ``trajectory`` (one step per model response:
``action``, ``observation``, ``response``, ``thought``, ``state``, and in 1.x ``execution_time``,
``query``, ``extra_info``), ``info`` (``model_stats``, ``exit_status``, ``submission``...), and in
1.x ``replay_config`` and ``environment``. A retry agent's file adds ``attempts``: one such object
per attempt, the top level repeating the best one.

Versions: 0.x histories are plain ``role``/``content`` strings (the action is inside the text, no
``tool_calls``); 1.x histories are OpenAI chat messages with ``tool_calls`` and ``tool`` results
(``tool_call_ids``). Both are mapped by ``openai_chat.parse_chat_messages``; SWE-agent's own fields
are kept on the messages' ``openai`` extra.

What counts as a call: each assistant message of the main agent's ``history`` that is not a
demonstration (``is_demo``) is one model response; its request is every history message of that
agent before it (rebuilt, ``exact=False``: SWE-agent's history processors, which may elide old
observations, are not replayed). Some files save the history before the last step was added (the
trajectory has more steps than the history has responses): each missing trailing step becomes a
call too, its response the step's ``response`` text, and a note says so. A file with no history
is rebuilt from its steps (response, then observation) with ``prefix_known=False``. Messages of
other agents (0.x subroutines) become subagent sessions. Each attempt of a retry file is its own
session.

Usage: SWE-agent records only totals (``info.model_stats``: ``tokens_sent``, ``tokens_received``,
``api_calls``), never per call, so calls have ``usage=None`` and the totals go into the notes. The
model name comes from ``replay_config.agent.model.name`` when present.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._trajectory import (
    JsonDoc,
    Key,
    Peek,
    Reply,
    as_int,
    as_str,
    calls_from_messages,
    load_doc,
    parse_chat,
    peek,
)
from contextkit.messages import Message, TextBlock
from contextkit.session import Call, LoadedFile, Session

NAME = "swe-agent"
_STEP_KEYS = {"action", "observation", "response", "thought", "query", "state"}
_RUN_KEYS = {"history", "trajectory", "attempts"}
MISSING_CALLS = "call(s) the file does not hold"
"""How a note counts the calls the file's own totals say were made and the file does not hold."""


def _looks_like_run(seen: Peek) -> bool:
    history = seen.first_keys.get("history", ())
    steps = seen.first_keys.get("trajectory", ())
    if "source" in steps:  # an OpenHands export: {"trajectory": [events]}
        return False
    return "role" in history or bool(_STEP_KEYS & set(steps)) or "attempts" in seen.keys


class SweAgentReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        seen = peek(head)
        if seen.kind != "object" or not _RUN_KEYS & set(seen.keys):
            return False
        if "messages" in seen.keys:  # mini-swe-agent and plain chat dumps have top-level messages
            return False
        # ``.traj`` is a hint: with it, a run key is enough (the first step may not fit the head).
        return _looks_like_run(seen) or path.suffix == ".traj"

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        doc = load_doc(path)
        if not isinstance(doc.value, dict):
            raise FormatError(path, "expected a SWE-agent trajectory object", doc.line_of())
        skips = Skips(path, lenient)
        attempts = doc.value.get("attempts")
        runs: list[tuple[Key, ...]]
        if isinstance(attempts, list) and attempts:
            runs = [("attempts", i) for i in range(len(attempts))]
        else:
            runs = [()]
        sessions: list[Session] = []
        for keys in runs:
            run_id = path.stem if not keys else f"{path.stem}#attempt-{keys[1]}"
            session = _read_run(doc, keys, run_id, skips)
            if session is not None:
                sessions.append(session)
        return LoadedFile(
            path=str(path), format=NAME, sessions=tuple(sessions), skipped=tuple(skips.records)
        )


def _value_at(doc: JsonDoc, keys: Sequence[Key]) -> Any:
    value = doc.value
    for key in keys:
        value = value[key]
    return value


def _read_run(doc: JsonDoc, keys: tuple[Key, ...], run_id: str, skips: Skips) -> Session | None:
    run = _value_at(doc, keys)
    where = f"attempt {keys[1]}: " if keys else ""
    if not isinstance(run, Mapping):
        skips.fail(f"{where}expected an object, found {type(run).__name__}", doc.line_of(*keys))
        return None
    history, steps = run.get("history"), run.get("trajectory")
    if history is not None and not isinstance(history, list):
        skips.fail(f"{where}'history' must be a list", doc.line_of(*keys, "history"))
        return None
    if steps is not None and not isinstance(steps, list):
        skips.fail(f"{where}'trajectory' must be a list", doc.line_of(*keys, "trajectory"))
        return None
    if steps:
        lines = doc.element_lines(*keys, "trajectory")
        for index, step in enumerate(steps):
            if not isinstance(step, Mapping):  # a step lost: reported, never silently dropped
                line = lines[index] if index < len(lines) else doc.line_of(*keys, "trajectory")
                skips.fail(f"{where}trajectory step {index} is not an object", line)
        steps = [step for step in steps if isinstance(step, Mapping)]
    for key in ("history", "trajectory"):
        if key in run and run[key] is None:
            # What the steps or messages held is gone: a loss to report, not an empty run.
            skips.fail(f"{where}'{key}' is null (expected a list)", doc.line_of(*keys, key))
    if history is None and steps is None:
        skips.fail(f"{where}neither 'history' nor 'trajectory'", doc.line_of(*keys))
        return None
    run_info = _RunInfo(doc, keys, run, run_id)
    if not history:
        return run_info.from_steps(steps or [], skips)
    return run_info.from_history(history, steps or [], skips)


class _RunInfo:
    """One run (the file, or one attempt): its id, model and notes, and its session builders."""

    def __init__(self, doc: JsonDoc, keys: tuple[Key, ...], run: Mapping[str, Any], run_id: str):
        self.doc, self.keys, self.run, self.run_id = doc, keys, run, run_id
        self.where = f"attempt {keys[1]}: " if keys else ""
        self.model = _model_name(run.get("replay_config"))
        self.notes = _stats_notes(run.get("info"))

    def session(self, calls: tuple[Call, ...], **fields: Any) -> Session:
        notes = [*self.notes, *fields.pop("notes", ())]
        stats = _api_calls(self.run.get("info"))
        if stats is not None and stats != len(calls) and fields.get("parent_session_id") is None:
            note = f"model_stats counts {stats} API calls, the history shows {len(calls)}"
            if stats > len(calls):  # responses the file does not hold: a loss, said as one
                note += f": {stats - len(calls)} {MISSING_CALLS}"
            notes.append(note)
        return Session(
            path=str(self.doc.path), format=NAME, calls=calls, notes=tuple(notes), **fields
        )

    def from_history(self, history: list[Any], steps: list[Any], skips: Skips) -> Session | None:
        lines = self.doc.element_lines(*self.keys, "history")
        groups = _agent_groups(history)
        if groups is None:
            skips.fail(f"{self.where}a history item is not an object", self.doc.line_of(*self.keys))
            return None
        sessions: list[Session] = []
        for position, (agent, indices) in enumerate(groups):
            raws = [history[i] for i in indices]
            sub_lines = [lines[i] if i < len(lines) else None for i in indices]
            main = position == 0
            built = self._agent_session(raws, sub_lines, steps if main else [], agent, skips)
            if built is None:
                return None
            sessions.append(built)
        main_session, subs = sessions[0], sessions[1:]
        subs = [s.model_copy(update={"parent_session_id": main_session.session_id}) for s in subs]
        return main_session.model_copy(update={"subagents": tuple(subs)})

    def _agent_session(
        self,
        raws: list[Any],
        lines: list[int | None],
        steps: list[Any],
        agent: str | None,
        skips: Skips,
    ) -> Session | None:
        try:
            transcript = parse_chat(raws, lines, skips, context=self.where)
        except ValueError as exc:
            skips.fail(f"{self.where}{exc}", lines[0] if lines else None)
            return None
        replies = [
            Reply(index=m, line=lines[r], model=self.model)
            for m, r in transcript.responses
            if not raws[r].get("is_demo")
        ]
        calls = calls_from_messages(transcript.messages, replies, system=transcript.system)
        notes: list[str] = []
        if len(steps) > len(calls):
            calls, note = self._missing_steps(calls, transcript.messages, steps, transcript.system)
            notes.append(note)
        if transcript.system is None:
            notes.append("the history has no system message")
        session_id = self.run_id if agent in (None, "main", "primary") else f"{self.run_id}:{agent}"
        return self.session(
            calls, session_id=session_id, prefix_known=transcript.system is not None, notes=notes
        )

    def _missing_steps(
        self,
        calls: tuple[Call, ...],
        messages: tuple[Message, ...],
        steps: list[Any],
        system: Any,
    ) -> tuple[tuple[Call, ...], str]:
        first = len(calls)
        rebuilt, _ = self._step_calls(steps, first, list(messages), system)
        note = (
            f"the history stops before trajectory step {first}: steps {first}..{len(steps) - 1}"
            " were rebuilt from their response and observation"
        )
        return (*calls, *rebuilt), note

    def _step_calls(
        self, steps: list[Any], first: int, messages: list[Message], system: Any
    ) -> tuple[tuple[Call, ...], list[Message]]:
        """Calls for ``steps[first:]``: response = the step's response, then its observation."""
        lines = self.doc.element_lines(*self.keys, "trajectory")
        calls: list[Call] = []
        for index in range(first, len(steps)):
            step = steps[index]
            if not isinstance(step, Mapping):
                raise FormatError(
                    self.doc.path,
                    f"{self.where}step {index} is not an object",
                    lines[index] if index < len(lines) else None,
                )
            response = Message(role="assistant", content=_step_text(step, "response", "thought"))
            line = lines[index] if index < len(lines) else None
            reply = Reply(index=len(messages), line=line, model=self.model)
            messages.append(response)
            calls.extend(calls_from_messages(tuple(messages), [reply], system=system))
            observation = _step_text(step, "observation")
            messages.append(Message(role="user", content=(TextBlock(text=observation),)))
        return tuple(calls), messages

    def from_steps(self, steps: list[Any], skips: Skips) -> Session | None:
        try:
            calls, _ = self._step_calls(steps, 0, [], None)
        except FormatError as exc:
            skips.fail(exc.reason, exc.line)
            return None
        note = "no history: requests rebuilt from the steps' responses and observations only"
        return self.session(calls, session_id=self.run_id, prefix_known=False, notes=[note])


def _step_text(step: Mapping[str, Any], *keys: str) -> str:
    for key in keys:
        value = step.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _agent_groups(history: list[Any]) -> list[tuple[str | None, list[int]]] | None:
    """History indices per agent, the main agent (that of the first item) first."""
    groups: dict[str | None, list[int]] = {}
    for index, item in enumerate(history):
        if not isinstance(item, Mapping):
            return None
        groups.setdefault(as_str(item.get("agent")), []).append(index)
    return list(groups.items())


def _model_name(replay_config: object) -> str | None:
    if isinstance(replay_config, str):  # some 1.x versions store the config as a JSON string
        try:
            replay_config = json.loads(replay_config)
        except ValueError:  # not JSON, or a number past the digit limit
            return None
    if not isinstance(replay_config, Mapping):
        return None
    agent = replay_config.get("agent")
    model = agent.get("model") if isinstance(agent, Mapping) else None
    return as_str(model.get("name")) if isinstance(model, Mapping) else None


def _stats(info: object) -> Mapping[str, Any]:
    stats = info.get("model_stats") if isinstance(info, Mapping) else None
    return stats if isinstance(stats, Mapping) else {}


def _api_calls(info: object) -> int | None:
    return as_int(_stats(info).get("api_calls"))


def _stats_notes(info: object) -> list[str]:
    stats = _stats(info)
    figures = [
        f"{key}={stats[key]}"
        for key in ("tokens_sent", "tokens_received", "api_calls", "instance_cost")
        if key in stats
    ]
    if not figures:
        return ["no token usage in this file"]
    return ["per-call usage not recorded; info.model_stats totals: " + ", ".join(figures)]


READER = SweAgentReader()

__all__ = ["READER", "SweAgentReader"]
