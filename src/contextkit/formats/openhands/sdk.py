"""Reader for OpenHands V1 (software-agent-sdk) persisted conversations.

A persisted conversation is a folder (``<persistence_dir>/<conversation id>/``): ``base_state.json``
(the ``ConversationState``: ``id``, ``agent`` with ``llm.model``, ``stats.usage_to_metrics``: one
``Metrics`` per LLM usage id, each with ``accumulated_cost`` and ``token_usages`` keyed by
``response_id``) and ``events/event-<index, 5+ digits>-<event id>.json``, one serialized event a
file, discriminated by ``kind``.

What to load: ``load(".../base_state.json")``, the file, not the folder: a reader takes a file
(``detect`` sniffs a file's head, the commands take files), and ``base_state.json`` is what names
the conversation; the reader then reads the ``events/`` folder beside it. The event files on
their own are not claimed by any reader.

The events map as the SDK's ``LLMConvertibleEvent.events_to_messages`` builds its prompts:
``SystemPromptEvent`` is the system prompt (and the dynamic context as a second block) and the
tools; a user ``MessageEvent`` is user text; an agent ``MessageEvent`` is a model call with a text
reply; consecutive ``ActionEvent``s with one ``llm_response_id`` are one model call (parallel tool
calls), its thought, thinking blocks and tool calls; ``ObservationEvent``,
``UserRejectObservation`` and ``AgentErrorEvent`` are tool results. Other kinds (state updates,
pauses, condensation, kinds not invented yet) are counted in ``Session.set_aside``; a
``Condensation`` is also recorded in ``Session.compactions`` (not replayed: later requests keep
every event). Requests are rebuilt (``exact=False``).

Usage: the ``token_usages`` entry whose ``response_id`` is the call's ``llm_response_id`` (over
every usage id of ``stats``); the model from that entry, else ``agent.llm.model``. The recorded
cost (the sum of ``accumulated_cost`` over the usage ids) is a note, and LLM calls that
``stats`` records but no event shows (a condenser's, a title generator's) are counted in a note.

Events are read in index order and, as the SDK does, only up to the first gap in the indices.
Strict mode fails on the first bad event file (invalid JSON, no ``kind``, a malformed event,
such as a ``MessageEvent`` without a string ``source``) naming that file; lenient mode skips it
and lists a :class:`SkippedRecord` with the event file's path. Files of the folder that are not
events are counted in ``set_aside`` as ``file:other``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips, load_json
from contextkit.formats._trajectory import (
    Reply,
    UserTurn,
    as_str,
    calls_from_messages,
    parse_time,
    peek,
    tool_from_openai,
)
from contextkit.formats.openhands._events import usage_from_token_usage
from contextkit.messages import (
    Block,
    Message,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.session import LoadedFile, Session, SkippedRecord

NAME = "openhands-sdk"
BASE_STATE = "base_state.json"
EVENT_NAME = re.compile(r"^event-(?P<index>\d{5,})-(?P<id>[0-9a-fA-F\-]{8,})\.json$")
_RESULT_KINDS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})


class OpenHandsSdkReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        if path.name != BASE_STATE:
            return False
        seen = peek(head)
        return seen.kind == "object" and {"id", "agent"} <= set(seen.keys)

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        state = load_json(path)
        if not isinstance(state, dict) or not isinstance(state.get("agent"), dict):
            raise FormatError(path, "expected an OpenHands ConversationState with an 'agent'", 1)
        records: list[SkippedRecord] = []
        events, other_files = _event_files(path.parent / "events", lenient, records)
        conversation = Conversation(Stats.from_state(state), _agent_model(state))
        conversation.set_aside["file:other"] += other_files
        for event_path, event in events:
            conversation.add(event_path, event, Skips(event_path, lenient, records))
        session = conversation.session(path, as_str(state.get("id")) or path.parent.name)
        return LoadedFile(path=str(path), format=NAME, sessions=(session,), skipped=tuple(records))


# --------------------------------------------------------------------------------------------------
# Files


def _event_files(
    folder: Path, lenient: bool, records: list[SkippedRecord]
) -> tuple[list[tuple[Path, Any]], int]:
    """The parsed events in index order (up to the first gap) and the count of other files."""
    if not folder.is_dir():
        return [], 0
    by_index: dict[int, Path] = {}
    other = 0
    for child in sorted(folder.iterdir()):
        match = EVENT_NAME.match(child.name)
        if match and child.is_file():
            by_index[int(match.group("index"))] = child
        elif not child.name.startswith("."):  # the SDK's lock and count markers start with "."
            other += 1
    events = []
    for index in range(len(by_index)):
        if index not in by_index:
            gap = Skips(by_index[min(i for i in by_index if i > index)], lenient, records)
            gap.fail(f"event index {index} is missing: this and later events are not read")
            break
        parsed = _parse_event_file(by_index[index], Skips(by_index[index], lenient, records))
        if parsed is not None:
            events.append((by_index[index], parsed))
    return events, other


def _parse_event_file(path: Path, skips: Skips) -> Any:
    try:
        return load_json(path)
    except FormatError as exc:
        skips.fail(exc.reason, exc.line)
        return None


def _agent_model(state: Mapping[str, Any]) -> str | None:
    llm = state["agent"].get("llm")
    return as_str(llm.get("model")) if isinstance(llm, Mapping) else None


@dataclass(frozen=True)
class Stats:
    """``stats.usage_to_metrics``: token usages by response id, recorded cost, calls per LLM."""

    usages: Mapping[str, Mapping[str, Any]]
    cost: float | None
    calls: Mapping[str, int]
    """Recorded token usages per usage id (``agent``, ``condenser``, ...)."""

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Stats:
        stats = state.get("stats")
        metrics = stats.get("usage_to_metrics") if isinstance(stats, Mapping) else None
        usages: dict[str, Mapping[str, Any]] = {}
        calls: dict[str, int] = {}
        costs: list[float] = []
        for usage_id, entry in (metrics if isinstance(metrics, Mapping) else {}).items():
            if not isinstance(entry, Mapping):
                continue
            cost = entry.get("accumulated_cost")
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                costs.append(float(cost))
            found = entry.get("token_usages")
            listed = [u for u in found if isinstance(u, Mapping)] if isinstance(found, list) else []
            calls[str(usage_id)] = len(listed)
            usages.update((u["response_id"], u) for u in listed if u.get("response_id"))
        return cls(usages=usages, cost=sum(costs) if costs else None, calls=calls)


# --------------------------------------------------------------------------------------------------
# Events


def _event_problem(event: object) -> str | None:
    """Why an event cannot be read, or None (unknown kinds are fine: they are set aside)."""
    if not isinstance(event, Mapping):
        return f"expected an event object, found {type(event).__name__}"
    kind = event.get("kind")
    if not isinstance(kind, str):
        return "an event needs a string 'kind'"
    if kind == "ActionEvent" and not isinstance(event.get("tool_call"), Mapping):
        return "an ActionEvent needs its 'tool_call'"
    if kind == "MessageEvent" and not isinstance(event.get("llm_message"), Mapping):
        return "a MessageEvent needs its 'llm_message'"
    if kind == "MessageEvent" and not isinstance(event.get("source"), str):
        return "a MessageEvent needs its string 'source' (agent, user or environment)"
    if kind in _RESULT_KINDS and not isinstance(event.get("tool_call_id"), str):
        return f"a {kind} needs the string 'tool_call_id' it answers"
    return None


@dataclass
class Conversation:
    """Turns events, in order, into messages and replies."""

    stats: Stats
    model: str | None
    messages: list[Message] = field(default_factory=list)
    turn: UserTurn = field(default_factory=UserTurn)
    replies: list[Reply] = field(default_factory=list)
    system: str | tuple[Block, ...] | None = None
    tools: tuple[Tool, ...] = ()
    schemas_known: bool = True
    set_aside: Counter[str] = field(default_factory=Counter)
    compactions: list[int] = field(default_factory=list)
    seen_responses: set[str] = field(default_factory=set)
    open_response: str | None = None

    def add(self, path: Path, event: Any, skips: Skips) -> None:
        problem = _event_problem(event)
        if problem is not None:
            skips.fail(problem, 1)
            return
        kind = event["kind"]
        if kind != "ActionEvent":
            self.open_response = None
        if kind == "SystemPromptEvent":
            self._system(event)
        elif kind == "MessageEvent":
            self._message(event)
        elif kind == "ActionEvent":
            self._action(event)
        elif kind in _RESULT_KINDS:
            self.turn.add(_result(kind, event), result=True)
        else:
            if kind == "Condensation":
                self.compactions.append(len(self.replies))
            self.set_aside[kind] += 1

    def _system(self, event: Mapping[str, Any]) -> None:
        parts = [_text(event.get("system_prompt")), _text(event.get("dynamic_context"))]
        blocks = tuple(TextBlock(text=p) for p in parts if p)
        self.system = blocks[0].text if len(blocks) == 1 else blocks or None
        raw_tools = event.get("tools")
        raw_tools = raw_tools if isinstance(raw_tools, list) else []
        self.tools = tuple(t for t in map(_tool, raw_tools) if t is not None)
        self.schemas_known = all(t.input_schema is not None for t in self.tools)

    def _message(self, event: Mapping[str, Any]) -> None:
        message = event["llm_message"]
        parts = [*_content(message.get("content")), *_content(event.get("extended_content"))]
        if event.get("source") != "agent":
            for block in parts:
                self.turn.add(block)
            return
        blocks = [*_thinking(message.get("thinking_blocks")), *parts]
        self._reply(Message(role="assistant", content=tuple(blocks)), event)

    def _action(self, event: Mapping[str, Any]) -> None:
        response = as_str(event.get("llm_response_id")) or f"event:{event.get('id')}"
        use = _tool_use(event["tool_call"], event)
        if response == self.open_response and self.messages:
            last = self.messages[-1]  # a parallel tool call of the response just read
            self.messages[-1] = Message(role="assistant", content=(*last.blocks, use))
            return
        blocks = [*_thinking(event.get("thinking_blocks")), *_content(event.get("thought")), use]
        self._reply(Message(role="assistant", content=tuple(blocks)), event)
        self.open_response = response

    def _reply(self, message: Message, event: Mapping[str, Any]) -> None:
        self.turn.flush(self.messages)
        response_id = as_str(event.get("llm_response_id"))
        entry = self.stats.usages.get(response_id) if response_id else None
        if response_id:
            self.seen_responses.add(response_id)
        self.replies.append(
            Reply(
                index=len(self.messages),
                line=1,
                model=(as_str(entry.get("model")) if entry else None) or self.model,
                usage=usage_from_token_usage(entry) if entry else None,
                timestamp=parse_time(event.get("timestamp")),
                request_id=response_id,
            )
        )
        self.messages.append(message)

    def session(self, path: Path, session_id: str) -> Session:
        messages = tuple(self.messages)
        calls = calls_from_messages(messages, self.replies, system=self.system, tools=self.tools)
        known = self.system is not None and self.schemas_known
        return Session(
            path=str(path),
            format=NAME,
            session_id=session_id,
            calls=calls,
            prefix_known=known,
            compactions=tuple(self.compactions),
            set_aside={k: v for k, v in self.set_aside.items() if v},
            notes=tuple(self._notes(known)),
        )

    def _notes(self, known: bool) -> list[str]:
        notes = []
        if self.system is None:
            notes.append("no SystemPromptEvent: the system prompt and tools are not in the files")
        elif not known:
            notes.append("some tool definitions carry no parameter schema: the prefix is partial")
        if self.compactions:
            notes.append("condensation events are not replayed: later requests keep every event")
        if self.stats.cost is not None:
            notes.append(f"recorded cost: ${self.stats.cost:.6f} (stats, every LLM of the state)")
        unseen = len(set(self.stats.usages) - self.seen_responses)
        if unseen:
            per_llm = ", ".join(f"{k} {v}" for k, v in sorted(self.stats.calls.items()))
            notes.append(f"{unseen} LLM calls in stats have no event here (recorded: {per_llm})")
        return notes


def _text(value: object) -> str | None:
    """A ``TextContent`` (``{"type": "text", "text": ...}``) or a string, as text."""
    if isinstance(value, str):
        return value
    return as_str(value.get("text")) if isinstance(value, Mapping) else None


def _content(value: object) -> list[Block]:
    """A message's content list (or string) as text blocks (images are not modelled)."""
    if isinstance(value, str):
        return [TextBlock(text=value)] if value else []
    parts = value if isinstance(value, list) else []
    return [TextBlock(text=t) for t in map(_text, parts) if t]


def _thinking(value: object) -> list[Block]:
    blocks: list[Block] = []
    for raw in value if isinstance(value, list) else []:
        if isinstance(raw, Mapping) and isinstance(raw.get("thinking"), str):
            signature = as_str(raw.get("signature"))
            blocks.append(ThinkingBlock(thinking=raw["thinking"], signature=signature))
    return blocks


def _tool_use(call: Mapping[str, Any], event: Mapping[str, Any]) -> ToolUseBlock:
    """``MessageToolCall`` (``id``, ``name``, ``arguments`` as a JSON string), or the older
    ``{"id", "function": {"name", "arguments"}}`` shape."""
    nested = call.get("function")
    function: Mapping[str, Any] = nested if isinstance(nested, Mapping) else call
    arguments = function.get("arguments")
    parsed: Any = arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:  # not JSON, or a number past the digit limit
            parsed = arguments  # kept as the model wrote it
    call_id = as_str(call.get("id")) or as_str(event.get("tool_call_id")) or ""
    name = as_str(function.get("name")) or as_str(event.get("tool_name")) or ""
    return ToolUseBlock(id=call_id, name=name, input=parsed if parsed is not None else {})


def _result(kind: str, event: Mapping[str, Any]) -> ToolResultBlock:
    call_id = event["tool_call_id"]
    if kind == "UserRejectObservation":
        reason = as_str(event.get("rejection_reason")) or "User rejected the action"
        return ToolResultBlock(tool_use_id=call_id, content=f"Action rejected: {reason}")
    if kind == "AgentErrorEvent":
        message = as_str(event.get("error")) or ""
        return ToolResultBlock(tool_use_id=call_id, content=message, is_error=True)
    raw = event.get("observation")
    observation: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    error = bool(observation.get("is_error"))
    blocks: Sequence[Block] = [
        *([TextBlock(text="Tool Execution Error. ")] if error else []),
        *_content(observation.get("content")),
        *_content(event.get("extended_content")),
    ]
    return ToolResultBlock(tool_use_id=call_id, content=tuple(blocks), is_error=error or None)


def _tool(raw: object) -> Tool | None:
    """An OpenAI tool parameter, or a serialized ``ToolDefinition`` (name and description; its
    parameter schema only where the dump has one)."""
    if isinstance(raw, Mapping) and "function" not in raw and isinstance(raw.get("name"), str):
        schema = raw.get("parameters") or raw.get("input_schema")
        return Tool(
            name=raw["name"],
            description=as_str(raw.get("description")),
            input_schema=schema if isinstance(schema, Mapping) else None,
        )
    return tool_from_openai(raw)


READER = OpenHandsSdkReader()

__all__ = ["BASE_STATE", "READER", "OpenHandsSdkReader"]
