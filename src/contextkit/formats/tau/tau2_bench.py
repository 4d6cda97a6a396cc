"""Reader for tau2-bench results files (``sierra-research/tau2-bench``, ``tau2 run --save-to``).

A results file is one JSON object: ``timestamp``, ``info`` (``agent_info.llm`` and
``user_info.llm``: the two models; ``user_info.global_simulation_guidelines``;
``environment_info``: ``domain_name``, ``policy`` and, when saved, ``tool_defs`` /
``user_tool_defs``), ``tasks``, and ``simulations``: one run of one task each, with ``task_id``,
``trial``, ``agent_cost``, ``user_cost``, ``reward_info`` and ``messages``. A message (tau2's
``AssistantMessage`` / ``UserMessage`` / ``ToolMessage``) has ``role``, ``content``,
``tool_calls`` (``id``, ``name``, ``arguments`` as an object, ``requestor``), and, when an LLM
wrote it, ``usage``, ``cost`` and ``raw_data`` (the provider's choice); a tool message has ``id``
(the call it answers), ``requestor`` and ``error``.

What counts as a call: a message an LLM wrote, one that has ``usage`` or ``raw_data``. The
agent's first message is tau2's fixed greeting (no usage, no cost): it is part of both
conversations but not a call.

Two sessions per simulation, because two models ran with two different contexts:

- the agent (``session_id`` ``task-<task_id>-trial-<trial>``): its calls are its assistant
  messages; its requests hold the user simulator's text turns as ``user`` messages and the
  results of its own tool calls (``requestor: "assistant"``);
- the user simulator, a subagent of that session (``...:user-simulator``,
  ``parent_session_id`` set): tau2 flips roles for it, so its own turns are the ``assistant``
  messages of its requests and the agent's text turns are ``user`` messages; it never sees the
  agent's tool calls and results, only its own (``requestor: "user"``).

Why a subagent and not a second top-level session: the benchmark pays for both models, so a
ticket (``contextkit cost``) is one simulation with both bills, while ``contextkit replay``
replays ``sessions[0]``, the agent, on its own context (the user simulator's context is priced
apart: each has its own prompt-cache prefix). ``LoadedFile.calls`` counts the agent's calls.

Usage: tau2 keeps ``prompt_tokens`` and ``completion_tokens`` only (``prompt_tokens_details`` is
read when present). So the usage shows every input token as uncached, although the provider may
have read much of it from its prompt cache: the recorded ``cost`` (litellm's price of the
response) counts those reads, and a price from this usage can exceed it. Each session keeps its
recorded cost in a note, ``recorded cost: $x`` (the sum of its messages' ``cost``; the
simulation's ``agent_cost`` / ``user_cost`` are checked against it).

The prefix: the agent's system prompt is tau2's template around ``environment_info.policy``
(here the policy alone); the tools come from ``tool_defs`` (``ToolSignature``: ``name``,
``doc``, ``params``) when the file has them, and then ``prefix_known=True``; without them
(tau2 saves them only when asked) ``prefix_known=False`` and the accountant infers the missing
size from call 1's usage. The user simulator's system prompt is the guidelines followed by the
task's scenario, which is not rebuilt here: it has ``prefix_known=False`` too.

Strict mode fails on the first bad simulation or message with its line; lenient mode skips it
and lists a :class:`SkippedRecord`. A simulation with an empty message list is a session with no
calls; one whose ``messages`` is null or missing (tau2 always writes the list) is a bad record.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._trajectory import (
    JsonDoc,
    Reply,
    UserTurn,
    as_int,
    as_mapping,
    as_str,
    calls_from_messages,
    load_doc,
    parse_time,
    peek,
    tool_from_openai,
    usage_from_litellm,
)
from contextkit.messages import Block, Message, TextBlock, Tool, ToolResultBlock, ToolUseBlock
from contextkit.session import LoadedFile, Session

NAME = "tau2-bench"
USER_SIMULATOR = "user-simulator"
_ROLES = frozenset({"assistant", "user", "tool", "system"})
_CACHE_NOTE = (
    "tau2 records prompt_tokens and completion_tokens only: the usage shows all input as "
    "uncached, while the recorded cost counts the provider's cache reads"
)
_NO_TOOLS_NOTE = (
    "the tool definitions are not in this file (environment_info.tool_defs is null): the "
    "accountant infers their size from call 1's usage"
)
_SCENARIO_NOTE = (
    "the user simulator's system prompt is the guidelines and the task's scenario; the scenario "
    "is not rebuilt here: the accountant infers its size from call 1's usage"
)


class Tau2BenchReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        seen = peek(head)
        if seen.kind != "object" or "info" not in seen.keys:
            return False
        if not ({"tasks", "simulations"} & set(seen.keys)):
            return False
        return all(f'"{key}"' in head for key in ("agent_info", "user_info", "environment_info"))

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        doc = load_doc(path)
        value = doc.value
        if not isinstance(value, dict) or not isinstance(value.get("simulations"), list):
            raise FormatError(path, "expected a tau2-bench results object with 'simulations'", 1)
        run = Run.from_info(value.get("info"))
        skips = Skips(path, lenient)
        sessions = []
        for index, simulation in enumerate(value["simulations"]):
            session = _read_simulation(doc, index, simulation, run, skips)
            if session is not None:
                sessions.append(session)
        return LoadedFile(
            path=str(path), format=NAME, sessions=tuple(sessions), skipped=tuple(skips.records)
        )


# --------------------------------------------------------------------------------------------------
# The run: models, prompts, tools


@dataclass(frozen=True)
class Run:
    """What ``info`` says about every simulation of the file."""

    agent_model: str | None = None
    user_model: str | None = None
    policy: str | None = None
    guidelines: str | None = None
    tools: tuple[Tool, ...] | None = None
    """The agent's tools, None when the file does not hold them."""
    user_tools: tuple[Tool, ...] = ()

    @classmethod
    def from_info(cls, info: object) -> Run:
        info = as_mapping(info)
        agent, user = as_mapping(info.get("agent_info")), as_mapping(info.get("user_info"))
        environment = as_mapping(info.get("environment_info"))
        return cls(
            agent_model=as_str(agent.get("llm")),
            user_model=as_str(user.get("llm")),
            policy=as_str(environment.get("policy")),
            guidelines=as_str(user.get("global_simulation_guidelines")),
            tools=_tools(environment.get("tool_defs")),
            user_tools=_tools(environment.get("user_tool_defs")) or (),
        )


def _tools(defs: object) -> tuple[Tool, ...] | None:
    """``tool_defs``: tau2's ``{name: ToolSignature}`` (or a list of OpenAI tool definitions)."""
    if isinstance(defs, Mapping):
        defs = list(defs.values())
    if not isinstance(defs, list):
        return None
    return tuple(t for t in map(_tool, defs) if t is not None)


def _tool(raw: object) -> Tool | None:
    if isinstance(raw, Mapping) and isinstance(raw.get("name"), str) and "doc" in raw:
        return Tool(
            name=raw["name"], description=as_str(raw.get("doc")), input_schema=raw.get("params")
        )
    return tool_from_openai(raw)


# --------------------------------------------------------------------------------------------------
# Messages


def _message_problem(raw: object) -> str | None:
    """Why a tau2 message cannot be read, or None."""
    if not isinstance(raw, Mapping):
        return f"expected an object, found {type(raw).__name__}"
    role = raw.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        return f"unknown role {_shown(role)} (expected assistant, user, tool or system)"
    if not isinstance(raw.get("content"), str | None):
        return "'content' must be a string or null"
    if not isinstance(raw.get("usage"), Mapping | None):
        return "'usage' must be an object or null"
    try:
        usage_from_litellm(raw.get("usage"))
    except ValueError as exc:
        return str(exc)
    cost = raw.get("cost")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float)):
        return "'cost' must be a number or null"
    if raw.get("role") == "tool" and not isinstance(raw.get("id"), str):
        return "a tool message needs the string 'id' of the call it answers"
    calls = raw.get("tool_calls")
    if calls is not None and not (isinstance(calls, list) and all(map(_is_tool_call, calls))):
        return "'tool_calls' must be a list of {name, arguments} objects"
    return None


def _shown(value: object) -> str:
    """A role as the error names it: a short string quoted, anything else by its type only."""
    if isinstance(value, str) and len(value) <= 20:
        return repr(value)
    return f"of type {type(value).__name__}"


def _is_tool_call(raw: object) -> bool:
    return (
        isinstance(raw, Mapping)
        and isinstance(raw.get("name"), str)
        and isinstance(raw.get("arguments", {}), Mapping)
    )


def _expand(raws: Sequence[Any], lines: Sequence[int]) -> list[tuple[int, Any, int | None]]:
    """``(index, message, line)``; a ``MultiToolMessage`` (``tool_messages``) gives its parts."""
    out: list[tuple[int, Any, int | None]] = []
    for index, raw in enumerate(raws):
        line = lines[index] if index < len(lines) else None
        parts = raw.get("tool_messages") if isinstance(raw, Mapping) else None
        if isinstance(parts, list):
            out.extend((index, part, line) for part in parts)
        else:
            out.append((index, raw, line))
    return out


def _is_llm_output(raw: Mapping[str, Any]) -> bool:
    return raw.get("usage") is not None or raw.get("raw_data") is not None


def _own_turn(raw: Mapping[str, Any]) -> Message:
    """A participant's own message, as its model wrote it: an assistant message."""
    blocks: list[Block] = []
    if raw.get("content"):
        blocks.append(TextBlock(text=raw["content"]))
    for i, call in enumerate(raw.get("tool_calls") or ()):
        call_id = as_str(call.get("id")) or f"call-{i}"
        blocks.append(ToolUseBlock(id=call_id, name=call["name"], input=call.get("arguments", {})))
    return Message(role="assistant", content=tuple(blocks))


# --------------------------------------------------------------------------------------------------
# One side of a simulation


@dataclass
class View:
    """One participant's context: the messages its model saw, and its own calls."""

    role: str
    """``"assistant"`` (the agent) or ``"user"`` (the user simulator): whose calls these are."""
    model: str | None
    messages: list[Message] = field(default_factory=list)
    turn: UserTurn = field(default_factory=UserTurn)
    replies: list[Reply] = field(default_factory=list)
    cost: float = 0.0
    set_aside: Counter[str] = field(default_factory=Counter)

    def add(self, raw: Mapping[str, Any], line: int | None) -> None:
        role = raw["role"]
        if role == self.role:
            self._own(raw, line)
        elif role == "tool":
            if raw.get("requestor", "assistant") == self.role:  # the other side's are unseen
                self.turn.add(_result(raw), result=True)
        elif role == "system":
            self.set_aside["system"] += 1
        elif raw.get("content") and not raw.get("tool_calls"):
            self.turn.add(TextBlock(text=raw["content"]))  # the other side's text turn

    def _own(self, raw: Mapping[str, Any], line: int | None) -> None:
        self.turn.flush(self.messages)
        if _is_llm_output(raw):
            self.cost += float(raw.get("cost") or 0.0)
            self.replies.append(
                Reply(
                    index=len(self.messages),
                    line=line,
                    model=self.model,
                    usage=usage_from_litellm(raw.get("usage")),
                    timestamp=parse_time(raw.get("timestamp")),
                    finish_reason=as_str(as_mapping(raw.get("raw_data")).get("finish_reason")),
                )
            )
        self.messages.append(_own_turn(raw))

    def session(
        self,
        path: Path,
        session_id: str,
        prefix: Prefix,
        *,
        subagents: tuple[Session, ...] = (),
        parent_session_id: str | None = None,
    ) -> Session:
        """The session of this view."""
        messages = tuple(self.messages)
        calls = calls_from_messages(
            messages, self.replies, system=prefix.system, tools=prefix.tools
        )
        return Session(
            path=str(path),
            format=NAME,
            session_id=session_id,
            calls=calls,
            prefix_known=prefix.known,
            set_aside=dict(self.set_aside),
            notes=tuple(prefix.notes),
            subagents=subagents,
            parent_session_id=parent_session_id,
        )


@dataclass(frozen=True)
class Prefix:
    """What a view's requests start with, as far as the file tells, and the session's notes."""

    system: str | None
    tools: tuple[Tool, ...]
    known: bool
    notes: Sequence[str]


def _result(raw: Mapping[str, Any]) -> ToolResultBlock:
    content = raw.get("content") or ""
    error = True if raw.get("error") else None  # as the chat mapping leaves it when unset
    return ToolResultBlock(tool_use_id=raw["id"], content=content, is_error=error)


# --------------------------------------------------------------------------------------------------
# Simulations


def _read_simulation(
    doc: JsonDoc, index: int, simulation: object, run: Run, skips: Skips
) -> Session | None:
    line = doc.line_of("simulations", index)
    where = f"simulation {index}: "
    if not isinstance(simulation, Mapping):
        skips.fail(f"{where}expected an object, found {type(simulation).__name__}", line)
        return None
    raws = simulation.get("messages")
    if raws is None:  # tau2 always writes the list (empty when nothing was said): data lost
        said = "null" if "messages" in simulation else "missing"
        skips.fail(
            f"{where}'messages' is {said}: the simulation's messages are not in the file", line
        )
        return None
    if not isinstance(raws, list):
        skips.fail(f"{where}'messages' must be a list of tau2 messages", line)
        return None
    agent = View(role="assistant", model=run.agent_model)
    user = View(role="user", model=run.user_model)
    lines = doc.element_lines("simulations", index, "messages")
    for position, raw, at in _expand(raws, lines):
        problem = _message_problem(raw)
        if problem is not None:
            skips.fail(f"{where}message {position}: {problem}", at)
            continue
        agent.add(raw, at)
        user.add(raw, at)
    return _sessions(doc.path, simulation, run, agent, user)


def _session_id(simulation: Mapping[str, Any], fallback: str) -> str:
    task = simulation.get("task_id")
    task_str = str(as_int(task)) if as_int(task) is not None else as_str(task)
    if task_str is None:
        return as_str(simulation.get("id")) or fallback
    trial = as_int(simulation.get("trial"))
    return f"task-{task_str}" if trial is None else f"task-{task_str}-trial-{trial}"


def _sessions(
    path: Path, simulation: Mapping[str, Any], run: Run, agent: View, user: View
) -> Session:
    session_id = _session_id(simulation, fallback=path.stem)
    subagents: tuple[Session, ...] = ()
    if user.replies:
        child_id = f"{session_id}:{USER_SIMULATOR}"
        prefix = Prefix(run.guidelines, run.user_tools, False, _user_notes(simulation, user))
        subagents = (user.session(path, child_id, prefix, parent_session_id=session_id),)
    notes = [*_simulation_notes(simulation, agent), *_cost_notes(agent, simulation, "agent_cost")]
    if run.tools is None:
        notes.append(_NO_TOOLS_NOTE)
    prefix = Prefix(run.policy, run.tools or (), run.tools is not None, notes)
    return agent.session(path, session_id, prefix, subagents=subagents)


def _user_notes(simulation: Mapping[str, Any], user: View) -> list[str]:
    return [*_cost_notes(user, simulation, "user_cost"), _SCENARIO_NOTE]


def _simulation_notes(simulation: Mapping[str, Any], agent: View) -> list[str]:
    notes = []
    if not simulation.get("messages"):
        notes.append("the simulation has no messages")
    reward = as_mapping(simulation.get("reward_info")).get("reward")
    reason = as_str(simulation.get("termination_reason"))
    if reason or reward is not None:
        notes.append(f"tau2 simulation {simulation.get('id')}: reward {reward}, ended by {reason}")
    if (
        agent.messages
        and agent.messages[0].role == "assistant"
        and (not agent.replies or agent.replies[0].index != 0)
    ):
        notes.append("message 0 is tau2's fixed greeting, not a model call")
    return notes


def _cost_notes(view: View, simulation: Mapping[str, Any], total_key: str) -> list[str]:
    if not view.replies:
        return []
    notes = [f"recorded cost: ${view.cost:.6f} (the sum of its messages' cost, litellm's price)"]
    total = simulation.get(total_key)
    if isinstance(total, int | float) and not math.isclose(total, view.cost, abs_tol=1e-9):
        notes.append(f"the simulation's {total_key} is ${total:.6f}, not ${view.cost:.6f}")
    notes.append(_CACHE_NOTE)
    return notes


READER = Tau2BenchReader()

__all__ = ["READER", "USER_SIMULATOR", "Tau2BenchReader"]
