"""The Agent Trajectory Interchange Format (ATIF v1.4, Harbor's RFC 0001): a writer and a reader.

An ATIF file is one JSON object: ``schema_version`` (``"ATIF-v1.x"``), ``session_id``, ``agent``
(``name``, ``version``, ``model_name``), ``steps`` and optional ``final_metrics``, ``notes`` and
``extra``. A step has a ``source`` (``system``, ``user`` or ``agent``), a ``message`` string and,
for agent steps, ``reasoning_content``, ``tool_calls`` (``tool_call_id``, ``function_name``,
``arguments``), an ``observation`` (``results``: ``source_call_id``, ``content``,
``subagent_trajectory_ref``) and ``metrics`` (``prompt_tokens``: all input, cached included;
``cached_tokens``; ``completion_tokens``; ``cost_usd``; ``extra``).

Writing a session (:func:`to_atif`): one agent step per model call, its response as message,
reasoning and tool calls, the next request's tool results as its observation, its usage as
metrics (cache writes in ``metrics.extra.cache_creation_input_tokens`` and
``cache_creation`` with the TTL split, as the RFC says for Anthropic). The system prompt is a
system step, written again when it or the tools change; tool definitions, which ATIF has no field
for, ride in that step's ``extra.contextkit.tools``. User text is a user step. A request that does
not extend the previous one (the harness compacted or rewrote its history) starts again after a
system step marked ``extra.contextkit.context_reset``, so compactions survive. What ATIF cannot
carry (thinking signatures, redacted thinking, images and documents, ``cache_control``, request
parameters, block boundaries inside one message) is one :class:`ConversionWarning` per kind and
place; nothing is dropped silently.

Reading (:data:`READER`): every agent step that is a model call becomes a :class:`Call` whose
request is every message before it (rebuilt: ``exact=False``); foreign ATIF files (no
``extra.contextkit``) read the same way, their input taken as uncached but for ``cached_tokens``.
Subagent trajectories named by ``subagent_trajectory_ref.trajectory_path`` (relative to the
file) are read as subagents of the step's tool call when the file is there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._atif_write import EXT, SCHEMA_VERSION, subagent_keys, to_atif
from contextkit.formats._io import Skips
from contextkit.formats._jsondoc import JsonDoc, load_doc, peek
from contextkit.messages import (
    Block,
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from contextkit.session import Call, LoadedFile, Session

NAME = "atif"
_MAX_SUBAGENT_DEPTH = 8


class AtifReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        seen = peek(head)
        version = seen.scalars.get("schema_version")
        return seen.kind == "object" and isinstance(version, str) and version.startswith("ATIF-v")

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        session = _read_session(path, skips, depth=0, seen=set())
        return LoadedFile(
            path=str(path), format=NAME, sessions=(session,), skipped=tuple(skips.records)
        )


def _read_session(path: Path, skips: Skips, *, depth: int, seen: set[Path]) -> Session:
    doc = load_doc(path)
    root = doc.value
    if not isinstance(root, dict):
        raise FormatError(path, "an ATIF file is one JSON object", 1)
    version = root.get("schema_version")
    if not isinstance(version, str) or not version.startswith("ATIF-v1"):
        raise FormatError(path, f"schema_version must be 'ATIF-v1.x', found {_kind(version)}", 1)
    steps = root.get("steps")
    if not isinstance(steps, list):
        raise FormatError(path, "'steps' must be a list", doc.line_of("steps") or 1)
    agent = _object(root.get("agent"))
    reader = _Reader(path, doc, skips, agent.get("model_name"))
    for index, raw in enumerate(steps):
        reader.step(index, raw)
    ext = _ext(root)
    subagents = [
        sub
        for ref_path, tool_id in reader.subagent_refs
        if (sub := _subagent(path, ref_path, tool_id, skips, depth, seen)) is not None
    ]
    name = agent.get("name")
    notes = root.get("notes")
    return Session(
        path=str(path),
        format=name if isinstance(name, str) and name else NAME,
        session_id=None if ext.get("no_session_id") else _str(root.get("session_id")),
        calls=tuple(reader.calls),
        subagents=tuple(subagents),
        parent_session_id=_str(ext.get("parent_session_id")),
        parent_tool_use_id=_str(ext.get("parent_tool_use_id")),
        prefix_known=bool(ext.get("prefix_known", reader.saw_system)),
        compactions=tuple(i for i in ext.get("compactions", ()) if isinstance(i, int)),
        harness_compaction=bool(ext.get("harness_compaction", False)),
        context_window=ext.get("context_window")
        if isinstance(ext.get("context_window"), int)
        else None,
        set_aside=dict(ext["set_aside"]) if isinstance(ext.get("set_aside"), dict) else {},
        notes=tuple(notes.split("\n")) if isinstance(notes, str) and notes else (),
    )


def _subagent(
    path: Path, ref: str, tool_id: str | None, skips: Skips, depth: int, seen: set[Path]
) -> Session | None:
    target = (path.parent / ref).resolve()
    if depth >= _MAX_SUBAGENT_DEPTH or target in seen or not target.is_file():
        return None
    seen.add(target)
    sub = _read_session(target, skips, depth=depth + 1, seen=seen)
    if tool_id and sub.parent_tool_use_id is None:
        sub = sub.model_copy(update={"parent_tool_use_id": tool_id})
    return sub


class _Reader:
    """Rebuilds the message list step by step; an agent step that is a call becomes a Call."""

    def __init__(self, path: Path, doc: JsonDoc, skips: Skips, model: object) -> None:
        self.path = path
        self.skips = skips
        self.lines = doc.element_lines("steps")
        self.default_model = model if isinstance(model, str) else None
        self.system: str | tuple[Block, ...] | None = None
        self.tools: tuple[Tool, ...] = ()
        self.tools_set = False
        self.messages: list[Message] = []
        self.calls: list[Call] = []
        self.subagent_refs: list[tuple[str, str | None]] = []
        self.saw_system = False

    def step(self, index: int, raw: object) -> None:
        line = self.lines[index] if index < len(self.lines) else None
        try:
            self._step(raw, line)
        except (ValueError, TypeError, KeyError) as exc:
            self.skips.fail(f"steps[{index}]: {exc}", line)

    def _step(self, raw: object, line: int | None) -> None:
        if not isinstance(raw, dict):
            raise ValueError(f"a step must be an object, found {_kind(raw)}")
        source = raw.get("source")
        message = raw.get("message", "")
        if not isinstance(message, str):
            raise ValueError(f"'message' must be a string, found {_kind(message)}")
        ext = _ext(raw)
        if source == "system":
            if not (ext.get("tool_results_message") or ext.get("subagents")):
                self._system(message, ext)
        elif source == "user":
            self._user(message, ext)
        elif source == "agent":
            self._agent(raw, message, ext, line)
        else:
            raise ValueError(f"'source' must be system, user or agent, found {_kind(source)}")
        self._observation(raw, ext)

    def _system(self, message: str, ext: Mapping[str, Any]) -> None:
        self.saw_system = True
        if ext.get("context_reset"):
            self.messages = []
        texts = ext.get("system_texts")
        if ext.get("no_system"):
            self.system = None
        elif isinstance(texts, list) and all(isinstance(t, str) for t in texts):
            self.system = tuple(TextBlock(text=t) for t in texts)
        elif ext.get("system_blocks"):
            self.system = (TextBlock(text=message),)
        else:
            self.system = message
        if "tools" in ext:
            raw_tools = ext["tools"]
            if not isinstance(raw_tools, list):
                raise ValueError("extra.contextkit.tools must be a list")
            self.tools = tuple(Tool.model_validate(t) for t in raw_tools)
            self.tools_set = True

    def _user(self, message: str, ext: Mapping[str, Any]) -> None:
        last = self.messages[-1] if self.messages else None
        if ext.get("same_message") and last is not None and last.role == "user":
            blocks = (*last.blocks, TextBlock(text=message))
            self.messages[-1] = Message(role="user", content=blocks)
            return
        content: str | tuple[Block, ...] = (
            message if ext.get("string") else (TextBlock(text=message),)
        )
        self.messages.append(Message(role="user", content=content))

    def _agent(
        self, raw: Mapping[str, Any], message: str, ext: Mapping[str, Any], line: int | None
    ) -> None:
        response = _assistant(raw, message, ext)
        if ext.get("not_a_call"):
            self.messages.append(response)
            return
        model = None if ext.get("no_model") else _str(raw.get("model_name")) or self.default_model
        request: dict[str, Any] = {"messages": tuple(self.messages), "system": self.system}
        if self.tools_set:
            request["tools"] = self.tools
        if model:
            request["model"] = model
        metrics = raw.get("metrics")
        usage = _usage(metrics) if isinstance(metrics, Mapping) and metrics else None
        stamp = raw.get("timestamp")
        answered = not ext.get("no_response")
        call = Call(
            request=Conversation.model_validate(request),
            response=response if answered else None,
            usage=usage,
            model=model,
            timestamp=datetime.fromisoformat(stamp) if isinstance(stamp, str) else None,
            stop_reason=_str(ext.get("stop_reason")),
            request_id=_str(ext.get("request_id")),
            exact=bool(ext.get("exact", False)),
            line=ext.get("line") if isinstance(ext.get("line"), int) else line,
            cache_reset=ext.get("cache_reset")
            if ext.get("cache_reset") in ("messages", "system")
            else None,
            output_estimated=bool(ext.get("output_estimated", False)),
            route=_str(ext.get("route")),
        )
        self.calls.append(call)
        if answered:
            self.messages.append(response)

    def _observation(self, raw: Mapping[str, Any], ext: Mapping[str, Any]) -> None:
        observation = raw.get("observation")
        if observation is None:
            return
        results = observation.get("results") if isinstance(observation, Mapping) else None
        if not isinstance(results, list):
            raise ValueError("'observation.results' must be a list")
        errors = set(ext.get("error_results", ()))
        blocks: list[Block] = []
        for result in results:
            if not isinstance(result, Mapping):
                raise ValueError(f"an observation result must be an object, found {_kind(result)}")
            call_id = _str(result.get("source_call_id"))
            for ref in result.get("subagent_trajectory_ref") or ():
                if isinstance(ref, Mapping) and isinstance(ref.get("trajectory_path"), str):
                    self.subagent_refs.append((ref["trajectory_path"], call_id))
            if call_id is None:
                continue  # an action without a tool call: nothing the model saw as a tool result
            content = result.get("content")
            if content is not None and not isinstance(content, str):
                content = json.dumps(content, ensure_ascii=False)
            blocks.append(
                ToolResultBlock(
                    tool_use_id=call_id,
                    content=content,
                    is_error=True if call_id in errors else None,
                )
            )
        if blocks:
            self.messages.append(Message(role="user", content=tuple(blocks)))


def _assistant(raw: Mapping[str, Any], message: str, ext: Mapping[str, Any]) -> Message:
    if ext.get("string"):
        return Message(role="assistant", content=message)
    blocks: list[Block] = []
    reasoning = raw.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append(ThinkingBlock(thinking=reasoning))
    if message:
        blocks.append(TextBlock(text=message))
    wrapped = set(ext.get("wrapped_inputs", ()))
    for tool_call in raw.get("tool_calls") or ():
        if not isinstance(tool_call, Mapping):
            raise ValueError(f"a tool call must be an object, found {_kind(tool_call)}")
        call_id, name = tool_call.get("tool_call_id"), tool_call.get("function_name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise ValueError("a tool call needs string 'tool_call_id' and 'function_name'")
        arguments = tool_call.get("arguments", {})
        if call_id in wrapped and isinstance(arguments, Mapping) and "input" in arguments:
            arguments = arguments["input"]  # a free-text tool's input, wrapped for ATIF
        blocks.append(ToolUseBlock(id=call_id, name=name, input=arguments))
    return Message(role="assistant", content=tuple(blocks))


def _usage(metrics: Mapping[str, Any]) -> Usage:
    extra = _object(metrics.get("extra"))
    prompt = _count(metrics, "prompt_tokens")
    cached = _count(metrics, "cached_tokens")
    written = _count(extra, "cache_creation_input_tokens")
    split = _object(extra.get("cache_creation"))
    w1h = _count(split, "ephemeral_1h_input_tokens") if split else 0
    uncached = prompt - cached - written
    if uncached < 0:
        raise ValueError(
            f"prompt_tokens ({prompt}) is less than cached_tokens + cache writes "
            f"({cached + written})"
        )
    return Usage(
        input_tokens=uncached,
        cache_write_5m=written - w1h,
        cache_write_1h=w1h,
        cache_read=cached,
        output_tokens=_count(metrics, "completion_tokens"),
    )


def _count(values: Mapping[str, Any], key: str) -> int:
    value = values.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"'{key}' must be a non-negative integer, found {_kind(value)}")
    return int(value)


def _ext(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    extra = raw.get("extra")
    found = extra.get(EXT) if isinstance(extra, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _object(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _kind(value: object) -> str:
    """The JSON kind of a bad value (never the value: it may be anything, of any size)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    names: dict[type, str] = {str: "a string", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


READER = AtifReader()

__all__ = ["EXT", "READER", "SCHEMA_VERSION", "AtifReader", "subagent_keys", "to_atif"]
