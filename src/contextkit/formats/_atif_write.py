"""The ATIF writer (see :mod:`contextkit.formats.atif`): a session as one ATIF document."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contextkit.messages import (
    Block,
    Conversation,
    DocumentBlock,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from contextkit.session import Call, Session
from contextkit.wire import ConversionWarning, WarningLog

SCHEMA_VERSION = "ATIF-v1.4"
EXT = "contextkit"
"""The key, in ATIF ``extra`` objects, of what contextkit writes that ATIF has no field for."""


def subagent_keys(session: Session) -> list[str]:
    """One key per subagent of ``session``, in order, unique among them: its session id (else
    ``sub<index>``), with ``-<index>`` added where siblings share an id (Claude Code's share the
    parent's), so no two subagents are written to, or referenced as, the same file."""
    ids = [sub.session_id or f"sub{i}" for i, sub in enumerate(session.subagents)]
    shared = {key for key in ids if ids.count(key) > 1}
    return [f"{key}-{i}" if key in shared else key for i, key in enumerate(ids)]


def to_atif(
    session: Session,
    *,
    costs: Sequence[float | None] | None = None,
    agent_version: str = "unknown",
    subagent_paths: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], tuple[ConversionWarning, ...]]:
    """``session`` as an ATIF document, and what ATIF could not carry.

    ``costs``: USD per call (None where unknown) for ``metrics.cost_usd``; ``subagent_paths``:
    subagent key (:func:`subagent_keys`) -> the path of its own ATIF file, relative
    to this one (referenced from the observation of the tool call that started it). Warning
    locations are ``call K ...``.
    """
    if costs is not None and len(costs) != len(session.calls):
        raise ValueError(f"{len(costs)} costs for {len(session.calls)} calls")
    writer = _Writer(session, WarningLog())
    for index, call in enumerate(session.calls):
        writer.call(index, call, None if costs is None else costs[index])
    writer.link_subagents(subagent_paths or {})
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": session.session_id or Path(session.path).stem,  # required by ATIF
        "agent": _agent(session, agent_version),
        "steps": writer.steps,
        "final_metrics": _final_metrics(writer.steps, costs),
        "extra": {EXT: _session_extra(session)},
    }
    if session.notes:
        doc["notes"] = "\n".join(session.notes)
    return doc, tuple(writer.log.items)


def _agent(session: Session, version: str) -> dict[str, Any]:
    agent: dict[str, Any] = {"name": session.format, "version": version}
    if session.model:
        agent["model_name"] = session.model
    return agent


def _session_extra(session: Session) -> dict[str, Any]:
    extra: dict[str, Any] = {"source_path": session.path, "prefix_known": session.prefix_known}
    if session.session_id is None:
        extra["no_session_id"] = True
    if session.compactions:
        extra["compactions"] = list(session.compactions)
    if session.harness_compaction:
        extra["harness_compaction"] = True
    if session.context_window is not None:
        extra["context_window"] = session.context_window
    if session.set_aside:
        extra["set_aside"] = dict(session.set_aside)
    if session.parent_session_id is not None:
        extra["parent_session_id"] = session.parent_session_id
    if session.parent_tool_use_id is not None:
        extra["parent_tool_use_id"] = session.parent_tool_use_id
    return extra


def _final_metrics(
    steps: list[dict[str, Any]], costs: Sequence[float | None] | None
) -> dict[str, Any]:
    metrics = [s["metrics"] for s in steps if "metrics" in s]
    out: dict[str, Any] = {"total_steps": len(steps)}
    for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        out[f"total_{key}"] = sum(int(m.get(key, 0)) for m in metrics)
    known = [c for c in costs or () if c is not None and math.isfinite(c)]
    if costs and len(known) == len(costs):  # a total only when every call's cost is known
        out["total_cost_usd"] = math.fsum(known)
    return out


class _Writer:
    def __init__(self, session: Session, log: WarningLog) -> None:
        self.session = session
        self.log = log
        self.steps: list[dict[str, Any]] = []
        self.history: list[Message] = []
        self.prefix: tuple[object, object] | None = None
        self.params_warned = False

    def step(self, source: str, message: str, **fields: Any) -> dict[str, Any]:
        step: dict[str, Any] = {"step_id": len(self.steps) + 1, "source": source}
        step["message"] = message
        step.update({k: v for k, v in fields.items() if v is not None})
        self.steps.append(step)
        return step

    def call(self, index: int, call: Call, cost: float | None) -> None:
        request = call.request
        where = f"call {index}"
        self._params(request, where)
        known = len(self.history)
        extends = tuple(request.messages[:known]) == tuple(self.history)
        prefix = (request.system, request.tools)
        if not extends or prefix != self.prefix:
            self._system_step(request, where, reset=index > 0 and not extends)
            if not extends:
                self.history, known = [], 0
        for offset, message in enumerate(request.messages[known:], start=known):
            self._message(message, f"{where} messages[{offset}]")
        self.history = list(request.messages)
        self._response(call, where, cost)

    def _params(self, request: Conversation, where: str) -> None:
        params = sorted((request.model_extra or {}).keys())
        if params and not self.params_warned:
            self.params_warned = True
            self.log.add(
                "request_params_dropped", where, "ATIF has no place for " + ", ".join(params)
            )

    def _system_step(self, request: Conversation, where: str, *, reset: bool) -> None:
        self.prefix = (request.system, request.tools)
        ext: dict[str, Any] = {}
        if reset:
            ext["context_reset"] = True
        system = request.system
        if system is None:
            ext["no_system"] = True
            text = ""
        elif isinstance(system, str):
            text = system
        else:
            texts: list[str] = []
            for i, block in enumerate(system):
                at = f"{where} system[{i}]"
                if isinstance(block, TextBlock):
                    texts.append(block.text)
                    self._extras(block, at)
                else:
                    self.log.add("system_block_dropped", at, f"a {block.type!r} block")
            ext["system_blocks"] = len(texts)
            text = "\n\n".join(texts)
            if len(texts) > 1:
                ext["system_texts"] = texts
        ext["tools"] = [t.model_dump(mode="json", exclude_none=True) for t in request.tools]
        self.step("system", text, extra={EXT: ext})

    def _extras(self, block: Block, where: str) -> None:
        for key in block.model_extra or {}:
            code = "cache_control_dropped" if key == "cache_control" else "block_field_dropped"
            self.log.add(code, where, f"{key!r} has no ATIF field")

    def _message(self, message: Message, where: str) -> None:
        if message.role == "assistant":
            step = self._agent_step(message, where)
            step.setdefault("extra", {}).setdefault(EXT, {})["not_a_call"] = True
            return
        results: list[dict[str, Any]] = []
        texts: list[str] = []
        for i, block in enumerate(message.blocks):
            at = f"{where}.content[{i}]"
            if isinstance(block, ToolResultBlock):
                results.append(self._result(block, at))
            elif isinstance(block, TextBlock):
                if texts and not results:
                    self.log.add(
                        "text_blocks_joined", at, "user text blocks joined by a blank line"
                    )
                texts.append(block.text)
                self._extras(block, at)
            else:
                code = "image_dropped" if isinstance(block, ImageBlock | DocumentBlock) else None
                self.log.add(
                    code or "block_dropped", at, f"a {block.type!r} block in a user message"
                )
        if results:
            self._attach(results)
        if texts or not results:
            ext: dict[str, Any] = {}
            if isinstance(message.content, str):
                ext["string"] = True
            if results:
                ext["same_message"] = True
            self.step("user", "\n\n".join(texts), extra={EXT: ext} if ext else None)

    def _result(self, block: ToolResultBlock, where: str) -> dict[str, Any]:
        content = block.content
        if isinstance(content, tuple):
            texts = []
            for i, inner in enumerate(content):
                if isinstance(inner, TextBlock):
                    texts.append(inner.text)
                else:
                    self.log.add(
                        "image_dropped" if isinstance(inner, ImageBlock) else "block_dropped",
                        f"{where}.content[{i}]",
                        f"a {inner.type!r} block in a tool result",
                    )
            if len(texts) > 1:
                self.log.add("text_blocks_joined", where, "tool result text blocks joined")
            text: str | None = "\n".join(texts)
        else:
            text = content
        self._extras(block, where)
        result: dict[str, Any] = {"source_call_id": block.tool_use_id}
        if text is not None:
            result["content"] = text
        if block.is_error:
            result["_error"] = True
        return result

    def _attach(self, results: list[dict[str, Any]]) -> None:
        """Tool results go to the observation of the agent step that called the tools."""
        errors = [r["source_call_id"] for r in results if r.pop("_error", False)]
        last = self.steps[-1] if self.steps else None
        if last is None or last["source"] != "agent" or "observation" in last:
            last = self.step("system", "", extra={EXT: {"tool_results_message": True}})
        last["observation"] = {"results": results}
        if errors:
            last.setdefault("extra", {}).setdefault(EXT, {})["error_results"] = errors

    def _agent_step(self, message: Message, where: str) -> dict[str, Any]:
        reasoning: list[str] = []
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        wrapped: list[str] = []
        for i, block in enumerate(message.blocks):
            at = f"{where}.content[{i}]"
            if isinstance(block, ThinkingBlock):
                reasoning.append(block.thinking)
                if block.signature:
                    self.log.add("thinking_signature_dropped", at, "ATIF has no signature field")
            elif isinstance(block, TextBlock):
                if texts:
                    self.log.add("text_blocks_joined", at, "response text blocks joined")
                texts.append(block.text)
            elif isinstance(block, ToolUseBlock):
                arguments = block.input if isinstance(block.input, Mapping) else None
                if arguments is None:  # a free-text (custom) tool's input: ATIF wants an object
                    self.log.add("tool_input_wrapped", at, "tool input is not an object")
                    arguments = {"input": block.input}
                    wrapped.append(block.id)
                calls.append(
                    {"tool_call_id": block.id, "function_name": block.name, "arguments": arguments}
                )
            elif isinstance(block, RedactedThinkingBlock):
                self.log.add("redacted_thinking_dropped", at, "encrypted thinking")
            else:
                self.log.add("block_dropped", at, f"a {block.type!r} block in a response")
            if not isinstance(block, ThinkingBlock | RedactedThinkingBlock):
                self._extras(block, at)
        fields: dict[str, Any] = {}
        if reasoning:
            fields["reasoning_content"] = "\n\n".join(reasoning)
        if calls:
            fields["tool_calls"] = calls
        ext: dict[str, Any] = {}
        if isinstance(message.content, str):
            ext["string"] = True
        if wrapped:
            ext["wrapped_inputs"] = wrapped
        if ext:
            fields["extra"] = {EXT: ext}
        return self.step("agent", "\n\n".join(texts), **fields)

    def _response(self, call: Call, where: str, cost: float | None) -> None:
        ext: dict[str, Any] = {}
        if call.response is None:
            step = self.step("agent", "")
            ext["no_response"] = True
        else:
            step = self._agent_step(call.response, f"{where} response")
            self.history.append(call.response)
        if call.model:
            step["model_name"] = call.model
        else:
            ext["no_model"] = True
        if call.timestamp is not None:
            step["timestamp"] = call.timestamp.isoformat()
        for key in ("stop_reason", "request_id", "cache_reset", "route", "line"):
            if (value := getattr(call, key)) is not None:
                ext[key] = value
        if call.output_estimated:
            ext["output_estimated"] = True
        if call.exact:
            ext["exact"] = True
        if call.usage is not None or cost is not None:
            step["metrics"] = _metrics(call.usage, cost)
        if ext:
            step.setdefault("extra", {}).setdefault(EXT, {}).update(ext)

    def link_subagents(self, paths: Mapping[str, str]) -> None:
        """Reference each subagent's file from the observation of the tool call that started it
        (a subagent without one: from a system step at the end)."""
        keys = subagent_keys(self.session)
        by_tool = {
            sub.parent_tool_use_id: key
            for key, sub in zip(keys, self.session.subagents, strict=True)
            if key in paths and sub.parent_tool_use_id
        }
        unplaced = [key for key in keys if key in paths]
        for step in self.steps:
            for result in step.get("observation", {}).get("results", ()):
                key = by_tool.get(result.get("source_call_id"))
                if key is not None and key in unplaced:
                    ref = {"session_id": key, "trajectory_path": paths[key]}
                    result["subagent_trajectory_ref"] = [ref]
                    unplaced.remove(key)
        if unplaced:
            refs = [{"session_id": k, "trajectory_path": paths[k]} for k in unplaced]
            observation = {"results": [{"subagent_trajectory_ref": refs}]}
            self.step("system", "", observation=observation, extra={EXT: {"subagents": True}})


def _metrics(usage: Usage | None, cost: float | None) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    if usage is not None:
        metrics["prompt_tokens"] = usage.total_input
        metrics["completion_tokens"] = usage.output_tokens
        metrics["cached_tokens"] = usage.cache_read
        metrics["extra"] = {
            "cache_creation_input_tokens": usage.cache_write,
            "cache_creation": {
                "ephemeral_5m_input_tokens": usage.cache_write_5m,
                "ephemeral_1h_input_tokens": usage.cache_write_1h,
            },
        }
    if cost is not None and math.isfinite(cost):
        metrics["cost_usd"] = cost
    return metrics
