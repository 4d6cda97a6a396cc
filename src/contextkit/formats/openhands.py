"""Reader for OpenHands event streams (``All-Hands-AI/OpenHands`` saved trajectories).

A trajectory file is a JSON list of serialized events (``event_to_trajectory``), or an object
holding that list under ``trajectory`` (the server's export). Each event has ``id``,
``timestamp``, ``source`` (``user``/``agent``/``environment``), ``message``, and either
``action`` + ``args`` or ``observation`` + ``content`` + ``extras``; ``cause`` links an
observation to its action; ``tool_call_metadata`` (``function_name``, ``tool_call_id``,
``model_response``: the raw litellm response, ``total_calls_in_response``) marks what an LLM call
produced; ``llm_metrics`` (newer versions) carries the accumulated metrics with ``token_usages``.

What counts as a call: one LLM response. Agent actions carrying ``tool_call_metadata`` are grouped
by ``model_response.id`` (parallel tool calls share one response); an agent action without it that
only an LLM produces (``message``, ``finish``, ``reject``, and the action kinds of text-parsing
agents) is a call of its own. The response is ``model_response.choices[0].message`` mapped with
``openai_chat.parse_chat_messages`` (or, without a response, rebuilt from the action's
``thought`` and arguments). The request is every message before it, rebuilt (``exact=False``) the
way OpenHands' ConversationMemory does: user messages as user text, observations linked to a tool
call (by metadata or ``cause``) as tool results, other observations with content as user text;
state changes and empty observations are set aside by kind.

Usage: ``model_response.usage`` (litellm: ``prompt_tokens`` includes cached tokens; Anthropic's
``cache_creation_input_tokens`` / ``cache_read_input_tokens`` when present), else the entry of
``llm_metrics.token_usages`` with the response's id. The system prompt and tool definitions are in
the file only as a ``system`` action (newer versions); without one, ``prefix_known=False``.

Not modelled: condensation (a ``condensation`` action makes OpenHands forget events; here it is
recorded in ``Session.compactions`` and the later requests still hold the forgotten events), and
delegation (delegate agents' events share the stream and are read as the main agent's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._trajectory import (
    Reply,
    UserTurn,
    as_int,
    as_str,
    calls_from_messages,
    load_doc,
    parse_time,
    peek,
    usage_from_litellm,
)
from contextkit.formats.openai_chat import parse_chat_messages
from contextkit.messages import Message, TextBlock, Tool, ToolResultBlock, ToolUseBlock
from contextkit.session import LoadedFile, Session, Usage

NAME = "openhands"
# Agent actions that, without tool_call_metadata, can only come from the LLM's own output.
_LLM_ACTIONS = frozenset(
    {
        "message",
        "finish",
        "reject",
        "run",
        "run_ipython",
        "browse",
        "browse_interactive",
        "edit",
        "read",
        "write",
        "think",
        "delegate",
    }
)
_SILENT_OBSERVATIONS = frozenset({"agent_state_changed", "null"})


def _is_event(keys: tuple[str, ...]) -> bool:
    return "source" in keys and ("action" in keys or "observation" in keys)


class OpenHandsReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        seen = peek(head)
        if seen.kind == "list":
            return _is_event(seen.keys)
        return seen.kind == "object" and _is_event(seen.first_keys.get("trajectory", ()))

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        doc = load_doc(path)
        if isinstance(doc.value, list):
            events, lines = doc.value, doc.element_lines()
        elif _is_export(doc.value):
            events, lines = doc.value["trajectory"], doc.element_lines("trajectory")
        else:
            raise FormatError(path, "expected a list of OpenHands events", 1)
        skips = Skips(path, lenient)
        builder = _Builder()
        for index, event in enumerate(events):
            line = lines[index] if index < len(lines) else None
            problem = _check_event(event)
            if problem is not None:
                skips.fail(f"event {index}: {problem}", line)
                continue
            builder.add(event, line)
        return LoadedFile(
            path=str(path),
            format=NAME,
            sessions=(builder.session(path),),
            skipped=tuple(skips.records),
        )


def _is_export(value: object) -> bool:
    """The server's export, ``{"trajectory": [events]}`` (a SWE-agent file also has a
    ``trajectory``, of steps, next to its ``history``)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("trajectory"), list)
        and "history" not in value
    )


def _check_event(event: object) -> str | None:
    """Why an event cannot be read, or None."""
    if not isinstance(event, Mapping):
        return f"expected an object, found {type(event).__name__}"
    if not isinstance(event.get("source"), str):
        return "an event needs a string 'source' (user, agent or environment)"
    kind = event.get("action", event.get("observation"))
    if not isinstance(kind, str):
        return "an event needs a string 'action' or 'observation'"
    if not isinstance(event.get("args", {}), Mapping):
        return "'args' must be an object"
    metadata = event.get("tool_call_metadata")
    if metadata is not None and not (
        isinstance(metadata, Mapping) and isinstance(metadata.get("tool_call_id"), str)
    ):
        return "'tool_call_metadata' must be an object with a string 'tool_call_id'"
    if "observation" in event and not isinstance(event.get("content", ""), str):
        return "an observation's 'content' must be a string"
    return None


class _Builder:
    """Turns events, in order, into messages and replies."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.turn = UserTurn()
        self.replies: list[Reply] = []
        self.system: str | None = None
        self.tools: tuple[Tool, ...] = ()
        self.tool_call_of: dict[int, str] = {}  # action event id -> tool call id
        self.responses: set[str] = set()
        self.usage_ids: set[str] = set()
        self.set_aside: Counter[str] = Counter()
        self.compactions: list[int] = []

    def add(self, event: Mapping[str, Any], line: int | None) -> None:
        if "action" in event:
            self._action(event, str(event["action"]), line)
        else:
            self._observation(event, str(event["observation"]))

    def _action(self, event: Mapping[str, Any], kind: str, line: int | None) -> None:
        args: Mapping[str, Any] = event.get("args") or {}
        source = event.get("source")
        metadata = event.get("tool_call_metadata")
        if kind == "system":
            self._system(args)
        elif source == "user" and kind == "message":
            self.turn.add(TextBlock(text=_text(args.get("content"), event.get("message"))))
        elif source == "agent" and isinstance(metadata, Mapping):
            self._tool_call(event, metadata, line)
        elif source == "agent" and kind in _LLM_ACTIONS:
            self._reply(_plain_reply(kind, args, event), event, None, line)
        elif kind == "condensation":
            self.compactions.append(len(self.replies))
            self.set_aside["action:condensation"] += 1
        else:
            self.set_aside[f"action:{kind}"] += 1

    def _system(self, args: Mapping[str, Any]) -> None:
        self.system = _text(args.get("content"), None)
        tools = args.get("tools")
        if isinstance(tools, list):
            self.tools = tuple(t for t in map(_tool, tools) if t is not None)

    def _tool_call(
        self, event: Mapping[str, Any], metadata: Mapping[str, Any], line: int | None
    ) -> None:
        call_id = str(metadata["tool_call_id"])
        if isinstance(event.get("id"), int):
            self.tool_call_of[event["id"]] = call_id
        response = metadata.get("model_response")
        response = response if isinstance(response, Mapping) else {}
        key = as_str(response.get("id")) or f"tool-call:{call_id}"
        if key in self.responses:
            return  # another tool call of a response already read
        self.responses.add(key)
        message = _response_message(response) or _fallback_message(event, metadata)
        self._reply(message, event, response, line)

    def _reply(
        self,
        message: Message,
        event: Mapping[str, Any],
        response: Mapping[str, Any] | None,
        line: int | None,
    ) -> None:
        self.turn.flush(self.messages)
        response = response or {}
        response_id = as_str(response.get("id"))
        usage = usage_from_litellm(response.get("usage")) or self._metrics_usage(event, response_id)
        self.replies.append(
            Reply(
                index=len(self.messages),
                line=line,
                model=as_str(response.get("model")) or _metrics_model(event),
                usage=usage,
                timestamp=parse_time(event.get("timestamp")),
                finish_reason=_finish_reason(response),
                request_id=response_id,
            )
        )
        self.messages.append(message)

    def _metrics_usage(self, event: Mapping[str, Any], response_id: str | None) -> Usage | None:
        """The ``llm_metrics.token_usages`` entry of this response (or the latest unused one)."""
        entries = [
            e for e in _token_usages(event) if as_str(e.get("response_id")) not in self.usage_ids
        ]
        chosen = [e for e in entries if response_id and e.get("response_id") == response_id]
        if not (chosen or entries):
            return None
        entry = (chosen or entries)[-1]
        if isinstance(entry.get("response_id"), str):
            self.usage_ids.add(entry["response_id"])
        return usage_from_litellm(
            {
                "prompt_tokens": entry.get("prompt_tokens"),
                "completion_tokens": entry.get("completion_tokens"),
                "cache_read_input_tokens": as_int(entry.get("cache_read_tokens")) or 0,
                "cache_creation_input_tokens": as_int(entry.get("cache_write_tokens")) or 0,
            }
        )

    def _observation(self, event: Mapping[str, Any], kind: str) -> None:
        content = str(event.get("content") or "")
        metadata = event.get("tool_call_metadata")
        call_id = metadata.get("tool_call_id") if isinstance(metadata, Mapping) else None
        cause = event.get("cause")
        if call_id is None and isinstance(cause, int):
            call_id = self.tool_call_of.get(cause)
        if isinstance(call_id, str):
            self.turn.add(ToolResultBlock(tool_use_id=call_id, content=content), result=True)
        elif content and kind not in _SILENT_OBSERVATIONS:
            self.turn.add(TextBlock(text=content))
        else:
            self.set_aside[f"observation:{kind}"] += 1

    def session(self, path: Path) -> Session:
        messages = tuple(self.messages)
        calls = calls_from_messages(messages, self.replies, system=self.system, tools=self.tools)
        notes = []
        if self.system is None:
            notes.append("the system prompt and tool definitions are not in this file")
        if self.compactions:
            notes.append("condensation events are not replayed: later requests keep every event")
        return Session(
            path=str(path),
            format=NAME,
            session_id=path.stem,
            calls=calls,
            prefix_known=self.system is not None,
            compactions=tuple(self.compactions),
            set_aside=dict(self.set_aside),
            notes=tuple(notes),
        )


def _text(value: object, fallback: object) -> str:
    if isinstance(value, str):
        return value
    return fallback if isinstance(fallback, str) else ""


def _tool(raw: object) -> Tool | None:
    """An OpenAI tool definition (``{"type": "function", "function": {...}}``) as a Tool."""
    if not isinstance(raw, Mapping):
        return None
    function = raw.get("function")
    body: Mapping[str, Any] = function if isinstance(function, Mapping) else raw
    name = body.get("name")
    if not isinstance(name, str):
        return None
    return Tool(
        name=name, description=as_str(body.get("description")), input_schema=body.get("parameters")
    )


def _response_message(response: Mapping[str, Any]) -> Message | None:
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, Mapping) else None
    if not isinstance(message, Mapping):
        return None
    try:
        _, parsed = parse_chat_messages([{**message, "role": "assistant"}])
    except ValueError:
        return None  # a response we cannot map: rebuilt from the action instead
    return parsed[0] if parsed else None


def _fallback_message(event: Mapping[str, Any], metadata: Mapping[str, Any]) -> Message:
    args: Mapping[str, Any] = event.get("args") or {}
    thought = args.get("thought")
    blocks: list[TextBlock | ToolUseBlock] = []
    if isinstance(thought, str) and thought:
        blocks.append(TextBlock(text=thought))
    tool_input = {k: v for k, v in args.items() if k != "thought"}
    name = as_str(metadata.get("function_name")) or str(event.get("action"))
    blocks.append(ToolUseBlock(id=str(metadata["tool_call_id"]), name=name, input=tool_input))
    return Message(role="assistant", content=tuple(blocks))


def _plain_reply(kind: str, args: Mapping[str, Any], event: Mapping[str, Any]) -> Message:
    """An agent action without tool call metadata, as the assistant text it came from."""
    if kind == "message":
        return Message(role="assistant", content=_text(args.get("content"), event.get("message")))
    parts = [args.get(k) for k in ("thought", "final_thought", "content", "command", "code")]
    text = "\n".join(p for p in parts if isinstance(p, str) and p)
    return Message(role="assistant", content=text or _text(event.get("message"), None))


def _finish_reason(response: Mapping[str, Any]) -> str | None:
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    return as_str(first.get("finish_reason")) if isinstance(first, Mapping) else None


def _token_usages(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    metrics = event.get("llm_metrics")
    usages = metrics.get("token_usages") if isinstance(metrics, Mapping) else None
    return [u for u in usages if isinstance(u, Mapping)] if isinstance(usages, list) else []


def _metrics_model(event: Mapping[str, Any]) -> str | None:
    usages = _token_usages(event)
    return as_str(usages[-1].get("model")) if usages else None


READER = OpenHandsReader()

__all__ = ["READER", "OpenHandsReader"]
