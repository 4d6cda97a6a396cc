"""OpenHands events -> messages and calls: the part shared by the OpenHands readers.

Both the saved event streams (:mod:`contextkit.formats.openhands.trajectory`) and the
evaluation ``output.jsonl`` lines (:mod:`contextkit.formats.openhands.evaluation`) hold the same
serialized events; :class:`EventStream` turns them, in order, into the canonical messages and one
:class:`Reply` per LLM response, the way OpenHands' ConversationMemory builds its prompts (see the
:mod:`~contextkit.formats.openhands.trajectory` docstring for the mapping), and
:meth:`EventStream.session` makes the :class:`Session`. :func:`check_event` says why an event
cannot be read (None when it can).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contextkit.formats._trajectory import (
    Reply,
    UserTurn,
    as_str,
    calls_from_messages,
    parse_time,
    tool_from_openai,
    usage_from_litellm,
)
from contextkit.messages import Message, TextBlock, Tool, ToolResultBlock, ToolUseBlock, token_count
from contextkit.session import Session, Usage
from contextkit.wire import parse_chat_messages

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


def is_event(keys: Sequence[str]) -> bool:
    """The keys of a serialized OpenHands event (a source and an action or an observation)."""
    return "source" in keys and ("action" in keys or "observation" in keys)


def check_event(event: object) -> str | None:
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
    response = metadata.get("model_response") if metadata is not None else None
    try:
        usage_from_litellm(response.get("usage") if isinstance(response, Mapping) else None)
    except ValueError as exc:
        return f"tool_call_metadata.model_response.{exc}"
    return None


class EventStream:
    """Turns events, in order, into messages and replies.

    ``usages``: ``token_usages`` entries kept outside the events (an evaluation instance's
    ``metrics``), taken for a response that has no usage of its own and matched by response id;
    ``model``: the model of a response that names none (the run's configured model).
    """

    def __init__(
        self, *, usages: Sequence[Mapping[str, Any]] = (), model: str | None = None
    ) -> None:
        self.fallback_usages = {
            u["response_id"]: u for u in usages if isinstance(u.get("response_id"), str)
        }
        self.model = model
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
            self.tools = tuple(t for t in map(tool_from_openai, tools) if t is not None)

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
                model=as_str(response.get("model")) or _metrics_model(event) or self.model,
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
        if chosen or entries:
            entry = (chosen or entries)[-1]
        elif response_id in self.fallback_usages:
            entry = self.fallback_usages[response_id]
        else:
            return None
        if isinstance(entry.get("response_id"), str):
            self.usage_ids.add(entry["response_id"])
        return usage_from_token_usage(entry)

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

    def session(
        self, path: Path, *, format: str, session_id: str | None, notes: Sequence[str] = ()
    ) -> Session:
        """The session read so far (``notes``: the reader's own, put first)."""
        messages = tuple(self.messages)
        calls = calls_from_messages(messages, self.replies, system=self.system, tools=self.tools)
        notes = list(notes)
        if self.system is None:
            notes.append("the system prompt and tool definitions are not in this file")
        if self.compactions:
            notes.append("condensation events are not replayed: later requests keep every event")
        return Session(
            path=str(path),
            format=format,
            session_id=session_id,
            calls=calls,
            prefix_known=self.system is not None,
            compactions=tuple(self.compactions),
            set_aside=dict(self.set_aside),
            notes=tuple(notes),
        )


def usage_from_token_usage(entry: Mapping[str, Any]) -> Usage | None:
    """A ``token_usages`` entry (OpenHands' ``TokenUsage``) as :class:`Usage`."""
    return usage_from_litellm(
        {
            "prompt_tokens": entry.get("prompt_tokens"),
            "completion_tokens": entry.get("completion_tokens"),
            "cache_read_input_tokens": token_count(
                entry.get("cache_read_tokens"), "cache_read_tokens"
            )
            or 0,
            "cache_creation_input_tokens": token_count(
                entry.get("cache_write_tokens"), "cache_write_tokens"
            )
            or 0,
        }
    )


def _text(value: object, fallback: object) -> str:
    if isinstance(value, str):
        return value
    return fallback if isinstance(fallback, str) else ""


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


__all__ = [
    "EventStream",
    "check_event",
    "is_event",
    "usage_from_token_usage",
]
