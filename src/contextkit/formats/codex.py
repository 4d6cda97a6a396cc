"""Codex CLI rollout files (``~/.codex/sessions/.../rollout-*.jsonl``) -> a ``codex`` Session.

A rollout line is ``{"timestamp", "type", "payload"}``:

- ``session_meta``: the session id, and (recent versions) ``base_instructions`` -- the system
  prompt, sent as the request's ``instructions``.
- ``turn_context``: per-turn settings; its ``model`` names the model of the calls that follow.
- ``response_item``: one Responses API item (see :mod:`contextkit.wire.openai_responses`), as
  the model saw it (inputs) or produced it (outputs).
- ``event_msg``: UI events. ``token_count`` carries ``info.last_token_usage`` (the usage of the
  model request that just finished) and ``info.total_token_usage`` (the running sum); in both,
  ``input_tokens`` includes ``cached_input_tokens`` and ``output_tokens`` includes
  ``reasoning_output_tokens``, so :meth:`Usage.from_openai` maps them. Codex repeats the event
  (rate-limit updates, turn starts) with unchanged totals: a repeat is not a new call.
  ``user_message`` echoes what the user typed; some rollouts (fixtures, older clients) record the
  user's input only there, so a user message is rebuilt from it when no ``message`` item carries it.
  ``thread_rolled_back`` drops the last user turns from the history.
- ``compacted``: the history was compacted; ``replacement_history`` (when present) is the new
  history, else Codex rebuilds it from the initial context, the user messages and the summary
  (done here the same way, approximately: Codex also truncates the user messages).

Calls: a call is one model request. Its response is a run of consecutive output items (reasoning,
assistant messages, tool calls); the run ends at a ``token_count`` event (whose usage it takes)
or at the next input item (then the call has no recorded usage). The request is every item before
the run. Requests are reconstructed (``exact=False``): rollouts do not record the tool
definitions, so ``prefix_known`` is False even when the base instructions are present (the system
prompt is then set; a note says whether it was).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from contextkit.formats._io import Skips, first_json_object, iter_jsonl
from contextkit.formats._locations import Location, Places
from contextkit.messages import Block, Conversation, Message
from contextkit.session import Call, LoadedFile, Session, Usage
from contextkit.wire import (
    System,
    item_side,
    message_blocks,
    output_blocks,
    result_block,
    usage_from_responses,
    user_message,
    with_instructions,
)

FORMAT = "codex"
_LINE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_SKIPPED_ITEMS = ("ghost_snapshot",)  # kept by Codex for undo, never sent to the model
_TOOL_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "computer_call_output",
        "tool_search_output",
    }
)
"""Items that answer the model's own tool calls: they close its run, and its usage may follow."""


class ItemsBuilder:
    """Responses items appended one by one -> canonical (system, messages), incrementally.

    Gives the same result as :func:`from_responses_items` on the items so far, but each item is
    mapped once and finished messages are shared between snapshots (one per call).
    """

    def __init__(self) -> None:
        self.system: list[Block] = []
        self.closed: list[Message] = []
        self.run: list[Block] = []
        self.run_side = ""

    def add(
        self, item: Mapping[str, Any], index: int, blocks: Sequence[Block] | None = None
    ) -> None:
        """Append one item (``blocks``: its output blocks, when already mapped)."""
        side = item_side(item, index)
        if side == "system" and not self.closed and not self.run:
            self.system.extend(message_blocks(item, index, "input_text"))
            return
        if self.run and side != self.run_side:
            self._close()
        if side in ("user", "system"):
            self.closed.append(user_message(item, index))
            return
        self.run_side = side
        self.run.extend(
            output_blocks(item, index) if side == "assistant" else [result_block(item, index)]
        )

    def _close(self) -> None:
        self.closed.append(self._run_message())
        self.run = []

    def _run_message(self) -> Message:
        if self.run_side == "assistant":
            return Message(role="assistant", content=tuple(self.run))
        return Message(role="user", content=tuple(self.run))

    def snapshot(self) -> tuple[System, tuple[Message, ...]]:
        system = tuple(self.system) if self.system else None
        if not self.run:
            return system, tuple(self.closed)
        return system, (*self.closed, self._run_message())


@dataclass
class _Rollout:
    """The reading state of one rollout file."""

    path: Path
    skips: Skips
    history: list[dict[str, Any]] = field(default_factory=list)
    builder: ItemsBuilder = field(default_factory=ItemsBuilder)
    outputs: list[tuple[int, dict[str, Any], list[Block]]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    instructions: str | None = None
    session_id: str | None = None
    model: str | None = None
    last_totals: Any = None
    pending_user: tuple[int, dict[str, Any]] | None = None
    compactions: list[int] = field(default_factory=list)
    set_aside: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    rebuilt_users: int = 0
    run_time: datetime | None = None
    unbilled: int | None = None
    """The last call, while it may still get its usage: its run was closed by the outputs of its
    own tool calls, and nothing else came since. Codex 0.141 and later write a response's
    ``token_count`` after those outputs (older versions before them)."""

    # -- history ----------------------------------------------------------------------------------

    def append(self, item: dict[str, Any], line: int, blocks: list[Block] | None = None) -> None:
        self.builder.add(item, line, blocks)
        self.history.append(item)

    def replace_history(self, items: list[dict[str, Any]], line: int) -> None:
        self.history = []
        self.builder = ItemsBuilder()
        for item in items:
            self.append(item, line)

    # -- calls ------------------------------------------------------------------------------------

    def close_run(self, usage: Usage | None) -> None:
        if not self.outputs:
            return
        self.unbilled = None if usage is not None else len(self.calls)
        system, messages = self.builder.snapshot()
        first_line = self.outputs[0][0]
        blocks = tuple(b for _, _, mapped in self.outputs for b in mapped)
        response = Message(role="assistant", content=blocks)
        self.calls.append(self._call(system, messages, response, usage, first_line))
        for line, item, mapped in self.outputs:
            self.append(item, line, mapped)
        self.outputs = []

    def _call(
        self,
        system: System,
        messages: tuple[Message, ...],
        response: Message | None,
        usage: Usage | None,
        line: int,
    ) -> Call:
        if self.instructions is not None:
            system = with_instructions(self.instructions, system)
        fields: dict[str, Any] = {"messages": messages}
        if system is not None:
            fields["system"] = system
        if self.model is not None:
            fields["model"] = self.model
        uses = response is not None and any(True for _ in response.tool_uses())
        return Call(
            request=Conversation.model_validate(fields),
            response=response,
            usage=usage,
            model=self.model,
            timestamp=self.run_time,
            stop_reason=None if response is None else ("tool_use" if uses else "end_turn"),
            exact=False,
            line=line,
        )

    def flush_user(self) -> None:
        """A user message known only from its ``user_message`` event joins the history."""
        if self.pending_user is None:
            return
        line, item = self.pending_user
        self.pending_user = None
        self.append(item, line)
        self.rebuilt_users += 1


# --------------------------------------------------------------------------------------------------
# Line handlers


def _on_item(state: _Rollout, item: dict[str, Any], line: int, when: datetime | None) -> None:
    kind = item.get("type")
    if kind in _SKIPPED_ITEMS:
        state.set_aside[f"response_item:{kind}"] += 1
        return
    side = item_side(item, line)
    if side == "assistant":
        if state.pending_user is not None:
            state.close_run(None)
            state.flush_user()
        blocks = output_blocks(item, line)  # mapped now, so a bad item fails on its own line
        if not state.outputs:
            state.run_time = when
        state.outputs.append((line, item, blocks))
        return
    state.close_run(None)
    if kind not in _TOOL_OUTPUTS:
        state.unbilled = None  # a new request has begun: a later token_count is not this call's
    if side == "user" and state.pending_user is not None:
        if _same_text(item, state.pending_user[1]):
            state.pending_user = None  # the event echoed this item (event first)
        else:
            state.flush_user()
    state.append(item, line)


def _text_of(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))


def _same_text(item: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    said = _text_of(other).strip()
    return bool(said) and said in _text_of(item)


def _on_user_event(state: _Rollout, payload: Mapping[str, Any], line: int) -> None:
    text = payload.get("message")
    if not isinstance(text, str):
        state.skips.fail("user_message event without a string 'message'", line)
        return
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": text}]
    for image in payload.get("images") or ():
        if isinstance(image, str):
            parts.append({"type": "input_image", "image_url": image, "detail": "auto"})
    item = {"type": "message", "role": "user", "content": parts}
    last = _last_user_since_output(state)
    if last is not None and _same_text(last, item):
        return  # the item came first: the event is its echo
    state.close_run(None)
    state.flush_user()
    state.pending_user = (line, item)


def _last_user_since_output(state: _Rollout) -> Mapping[str, Any] | None:
    if state.outputs:
        return None
    for item in reversed(state.history):
        if item_side(item, 0) == "assistant":
            return None
        if item.get("role") == "user":
            return item
    return None


def _on_token_count(state: _Rollout, payload: Mapping[str, Any], line: int) -> None:
    info = payload.get("info")
    if not isinstance(info, Mapping):
        state.set_aside["event_msg:token_count (no usage)"] += 1
        return
    totals = info.get("total_token_usage")
    if totals is not None and totals == state.last_totals:
        state.set_aside["event_msg:token_count (repeat)"] += 1
        return
    usage = _usage(info, state.last_totals)
    state.last_totals = totals
    if state.outputs:
        state.close_run(usage)
        return
    if state.unbilled is not None:
        # The response's usage, written after the outputs of its tool calls (Codex 0.141+).
        call = state.calls[state.unbilled]
        state.calls[state.unbilled] = call.model_copy(update={"usage": usage})
        state.unbilled = None
        return
    # Billed, but the output was not recorded (an aborted request, a compaction summary).
    system, messages = state.builder.snapshot()
    state.calls.append(state._call(system, messages, None, usage, line))
    state.notes.append(f"line {line}: token usage without a recorded response (call kept)")


def _usage(info: Mapping[str, Any], previous: Any) -> Usage | None:
    last = info.get("last_token_usage")
    if isinstance(last, Mapping):
        return _codex_usage(last)
    total = info.get("total_token_usage")
    if not isinstance(total, Mapping):
        return None
    now = _codex_usage(total)
    if not isinstance(previous, Mapping):
        return now
    before = _codex_usage(previous)
    return Usage(
        input_tokens=now.input_tokens - before.input_tokens,
        cache_read=now.cache_read - before.cache_read,
        output_tokens=now.output_tokens - before.output_tokens,
    )


def _codex_usage(raw: Mapping[str, Any]) -> Usage:
    """Codex's TokenUsage (``cached_input_tokens``) as a Responses usage object."""
    cached = raw.get("cached_input_tokens") or 0
    return usage_from_responses(
        {
            "input_tokens": raw.get("input_tokens") or 0,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": raw.get("output_tokens") or 0,
        }
    )


def _on_compacted(state: _Rollout, payload: Mapping[str, Any], line: int) -> None:
    state.close_run(None)
    state.flush_user()
    replacement = payload.get("replacement_history")
    if isinstance(replacement, list):
        items = [i for i in replacement if isinstance(i, dict)]
    else:
        summary = payload.get("message")
        if not isinstance(summary, str):
            state.skips.fail("compacted record without 'message' or 'replacement_history'", line)
            return
        items = _rebuilt_history(state.history, summary)
        state.notes.append(f"line {line}: compaction without replacement history, rebuilt")
    state.replace_history(items, line)
    state.compactions.append(len(state.calls))


_CONTEXT_PREFIXES = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>")


def _is_user_turn(item: Mapping[str, Any]) -> bool:
    """A message the user typed (not the context Codex injects in the user role)."""
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return False
    return not _text_of(item).lstrip().startswith(_CONTEXT_PREFIXES)


def _rebuilt_history(history: list[dict[str, Any]], summary: str) -> list[dict[str, Any]]:
    """Codex's rebuild: initial context, the user messages, then the summary as a user message."""
    first = next((i for i, item in enumerate(history) if _is_user_turn(item)), len(history))
    users = [item for item in history[first:] if _is_user_turn(item)]
    note = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]}
    return [*history[:first], *users, note]


def _on_rollback(state: _Rollout, payload: Mapping[str, Any], line: int) -> None:
    turns = payload.get("num_turns")
    if not isinstance(turns, int) or turns <= 0:
        return
    state.close_run(None)
    positions = [i for i, item in enumerate(state.history) if _is_user_turn(item)]
    if not positions:
        return
    cut = positions[max(len(positions) - turns, 0)]
    state.replace_history(state.history[:cut], line)
    state.notes.append(f"line {line}: {turns} user turn(s) rolled back")


def _on_meta(state: _Rollout, payload: Mapping[str, Any]) -> None:
    if isinstance(payload.get("id"), str):
        state.session_id = payload["id"]
    base = payload.get("base_instructions", payload.get("instructions"))
    if isinstance(base, Mapping):
        base = base.get("text")
    if isinstance(base, str):
        state.instructions = base


def _on_event(state: _Rollout, payload: Mapping[str, Any], line: int) -> None:
    kind = payload.get("type")
    if kind == "token_count":
        _on_token_count(state, payload, line)
    elif kind == "user_message":
        _on_user_event(state, payload, line)
    elif kind == "thread_rolled_back":
        _on_rollback(state, payload, line)
    else:
        state.set_aside[f"event_msg:{kind}"] += 1


def _on_line(state: _Rollout, record: Mapping[str, Any], line: int) -> None:
    kind, payload = record.get("type"), record.get("payload")
    if not isinstance(payload, dict):
        state.skips.fail(f"a {kind!r} line without an object 'payload'", line)
        return
    if kind == "response_item":
        _on_item(state, payload, line, _time(record.get("timestamp")))
    elif kind == "event_msg":
        _on_event(state, payload, line)
    elif kind == "session_meta":
        _on_meta(state, payload)
    elif kind == "turn_context":
        model = payload.get("model")
        state.model = model if isinstance(model, str) else state.model
    elif kind == "compacted":
        _on_compacted(state, payload, line)
    else:
        state.set_aside[str(kind)] += 1


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def is_rollout_line(value: Mapping[str, Any]) -> bool:
    """A record as Codex writes a rollout line: a known ``type``, a ``payload`` object and a
    ``timestamp``."""
    kind = value.get("type")
    return (
        isinstance(kind, str)
        and kind in _LINE_TYPES
        and isinstance(value.get("payload"), dict)
        and "timestamp" in value
    )


class CodexReader:
    """Reader of Codex CLI rollout JSONL files."""

    name = FORMAT

    def locations(self, places: Places) -> tuple[Location, ...]:
        """``$CODEX_HOME/sessions`` else ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``
        (``openai/codex`` ``codex-rs/core`` rollout recorder; ``CODEX_HOME`` defaults to
        ``~/.codex``)."""
        codex = places.dir("CODEX_HOME", places.home / ".codex")
        return (Location("Codex", self.name, codex / "sessions", "**/rollout-*.jsonl"),)

    def sniff(self, path: Path, head: str) -> bool:
        if path.suffix != ".jsonl":
            return False
        first = first_json_object(head)
        return first is not None and is_rollout_line(first)

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        state = _Rollout(path=path, skips=skips)
        for line, record in iter_jsonl(path, skips):
            try:
                _on_line(state, record, line)
            except ValueError as exc:
                skips.fail(str(exc).replace(f"item {line}:", "response item:"), line)
        state.close_run(None)
        state.flush_user()
        return LoadedFile(
            path=str(path), format=FORMAT, sessions=(_session(state),), skipped=tuple(skips.records)
        )


def _session(state: _Rollout) -> Session:
    notes = list(state.notes)
    if state.instructions is None:
        notes.append("the base instructions (system prompt) are not in this rollout")
    else:
        notes.append("system prompt from session_meta.base_instructions; tools are not recorded")
    if state.rebuilt_users:
        notes.append(f"{state.rebuilt_users} user message(s) rebuilt from user_message events")
    unbilled = [c.line for c in state.calls if c.usage is None and c.response is not None]
    if unbilled and len(unbilled) < len(state.calls):
        where = ", ".join(f"line {line}" for line in unbilled[:5])
        notes.append(
            f"{len(unbilled)} response(s) with no token_count after them (a turn interrupted, or "
            f"the file ends before it): kept without recorded usage ({where})"
        )
    return Session(
        path=str(state.path),
        format=FORMAT,
        session_id=state.session_id,
        calls=tuple(state.calls),
        prefix_known=False,
        compactions=tuple(state.compactions),
        set_aside=dict(state.set_aside),
        notes=tuple(notes),
    )


READER = CodexReader()

__all__ = ["FORMAT", "READER", "CodexReader", "ItemsBuilder"]
