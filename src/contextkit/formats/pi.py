"""Reader for pi coding agent sessions (``badlogic/pi-mono``, ``~/.pi/agent/sessions/--<cwd>--/
<timestamp>_<uuid>.jsonl``; format: ``packages/coding-agent/docs/session.md``).

A file is JSONL: a ``session`` header (``id``, ``timestamp``, ``cwd``, ``version`` from v2 on),
then one entry per line. Version 1 files are linear: each entry follows the previous one. From
version 2 on, entries carry ``id`` / ``parentId`` and form a tree; the current leaf is the last
entry of the file (as pi's ``SessionManager`` loads it) and the session read here is the path from
the root to that leaf. Entries on other branches are not calls of this session: a note says how
many there are.

What counts as a call: each assistant message on the path (``stopReason`` ``error`` and
``aborted`` included: a request went out). Its request is rebuilt (``exact=False``) as pi's
``buildSessionContext`` and pi-ai's ``transformMessages`` build it from the entries before it:

- ``user``, ``toolResult``, ``custom`` (v2: ``hookMessage``), ``bashExecution`` messages and
  ``custom_message`` / ``branch_summary`` entries are user-role content (the summaries with pi's
  prefixes); everything between two assistant messages goes into one user message, tool results
  first;
- an assistant message that ended in ``error`` or ``aborted`` is left out of later requests, and a
  tool call that got no result is answered by pi's synthetic ``"No result provided"`` error result;
- after a ``compaction`` entry (``summary``, ``firstKeptEntryId``, ``tokensBefore``; v1:
  ``firstKeptEntryIndex``) the request starts from the summary, then the entries from
  ``firstKeptEntryId`` up to the compaction, then what followed. The calls right after one are
  ``Session.compactions``.

pi files record neither the system prompt nor the tool definitions (``prefix_known=False``).
Blocks: ``text``, ``thinking`` (``thinkingSignature`` kept as the signature), ``toolCall`` (a
:class:`ToolUseBlock` with the same id as its :class:`ToolResultBlock`), ``image`` (base64); other
block types are kept as :class:`OpaqueBlock`.

Usage is the assistant message's ``usage``. pi-ai stores ``input`` as the uncached input (for
Anthropic ``input_tokens``; for OpenAI the prompt count less its cached part), ``cacheRead`` and
``cacheWrite`` apart, so ``Usage.input_tokens`` = input, ``cache_read`` = cacheRead,
``cache_write_5m`` = cacheWrite (pi records no TTL split), ``output_tokens`` = output. pi's own
price of each call (``usage.cost.total``, from pi's model table) has no place on a call: the
session notes give the recorded total beside whatever contextkit prices.

``thinking_level_change``, ``model_change``, ``label``, ``session_info``, ``custom`` and entry
types not known here are not sent to the model: they are counted in ``Session.set_aside``.
Strict by default: a line that is not a JSON object, an entry without a string ``type`` (or, in a
tree file, ``id``), a message of the wrong shape is a :class:`FormatError` naming the file and
line; ``lenient=True`` skips such lines and lists each one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips, first_json_object, iter_jsonl
from contextkit.formats._locations import Location, Places
from contextkit.formats._trajectory import as_int, as_str, parse_time
from contextkit.messages import (
    Block,
    Conversation,
    ImageBlock,
    Message,
    OpaqueBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    token_count,
)
from contextkit.session import Call, LoadedFile, Session, Usage

NAME = "pi"
PREFIX_NOTE = (
    "pi session files do not record the system prompt or the tool definitions: requests hold "
    "the messages only (prefix_known=False)"
)
COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n"
    "<summary>\n"
)
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUFFIX = "</summary>"
NO_RESULT = "No result provided"

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}
_UNSENT_STOPS = ("error", "aborted")
_USER_ROLES = (
    "user",
    "custom",
    "hookMessage",
    "bashExecution",
    "branchSummary",
    "compactionSummary",
)
_CONTENT_ENTRIES = ("message", "custom_message", "branch_summary", "compaction")


@dataclass(frozen=True)
class _Entry:
    line: int
    id: str
    parent: str | None
    raw: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.raw["type"])

    @property
    def message(self) -> Mapping[str, Any]:
        value = self.raw.get("message")
        return value if isinstance(value, Mapping) else {}

    @property
    def is_call(self) -> bool:
        return self.kind == "message" and self.message.get("role") == "assistant"


class PiReader:
    name = NAME

    def locations(self, places: Places) -> tuple[Location, ...]:
        """``$PI_CODING_AGENT_DIR/sessions`` else ``~/.pi/agent/sessions/--<cwd>--/*.jsonl``
        (``badlogic/pi-mono`` ``packages/coding-agent`` ``config.ts``: ``getAgentDir``,
        ``getSessionsDir``)."""
        pi = places.dir("PI_CODING_AGENT_DIR", places.home / ".pi" / "agent")
        return (Location("pi", self.name, pi / "sessions", "*/*.jsonl"),)

    def sniff(self, path: Path, head: str) -> bool:
        """A first line that is a pi session header: ``type`` session, an ``id`` and a ``cwd``."""
        first = first_json_object(head)
        return (
            first is not None
            and first.get("type") == "session"
            and isinstance(first.get("id"), str)
            and isinstance(first.get("cwd"), str)
            and "timestamp" in first
        )

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        header, entries = _parse(path, skips)
        session = _session(path, header, entries)
        return LoadedFile(
            path=str(path), format=NAME, sessions=(session,), skipped=tuple(skips.records)
        )


# --------------------------------------------------------------------------------------------------
# Entries


def _parse(path: Path, skips: Skips) -> tuple[Mapping[str, Any], list[_Entry]]:
    records = iter_jsonl(path, skips)
    header: Mapping[str, Any] | None = None
    entries: list[_Entry] = []
    tree = False
    for line, record in records:
        if header is None:
            if record.get("type") != "session" or not isinstance(record.get("id"), str):
                raise FormatError(path, "the first record is not a pi session header", line)
            header, tree = record, (as_int(record.get("version")) or 1) >= 2
            continue
        problem = _check(record, tree)
        if problem is not None:
            skips.fail(problem, line)
            continue
        previous = entries[-1].id if entries else None
        entries.append(_entry(line, record, tree, previous))
    if header is None:
        raise FormatError(path, "no pi session header (the file holds no JSON record)", 1)
    return header, entries


def _entry(line: int, record: Mapping[str, Any], tree: bool, previous: str | None) -> _Entry:
    if tree:
        return _Entry(line, str(record["id"]), as_str(record.get("parentId")), record)
    return _Entry(line, f"line:{line}", previous, record)  # v1: each entry follows the last


def _check(record: Mapping[str, Any], tree: bool) -> str | None:
    kind = record.get("type")
    if not isinstance(kind, str):
        return "an entry needs a string 'type'"
    if tree and not isinstance(record.get("id"), str):
        return f"a {kind} entry of a tree session (v2+) needs a string 'id'"
    if tree and not isinstance(record.get("parentId"), str | None):
        return "'parentId' must be a string or null"
    if kind == "message":
        return _check_message(record.get("message"))
    if kind == "compaction" and not isinstance(record.get("summary"), str):
        return "a compaction entry needs a string 'summary'"
    return None


def _check_message(message: object) -> str | None:
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        return "a message entry needs a 'message' object with a string 'role'"
    content = message.get("content")
    if message["role"] == "assistant" and not isinstance(content, list):
        return "an assistant message needs a 'content' list"
    if isinstance(content, list) and not all(
        isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in content
    ):
        return "each content block must be an object with a string 'type'"
    if message["role"] == "toolResult" and not isinstance(message.get("toolCallId"), str):
        return "a toolResult message needs a string 'toolCallId'"
    if not isinstance(message.get("usage") or {}, Mapping):
        return "'usage' must be an object"
    try:
        usage_from_pi(message.get("usage"))
    except ValueError as exc:  # a bad count: a bad record of this line, not of the whole file
        return f"message.{exc}"
    return None


def _path_to_leaf(entries: Sequence[_Entry]) -> tuple[list[_Entry], _Entry | None]:
    """The entries from the root to the leaf (the last entry), and the first entry of the path
    when its ``parentId`` names no entry (pi then starts the path there too)."""
    if not entries:
        return [], None
    by_id = {e.id: e for e in entries}
    path: list[_Entry] = []
    current: _Entry | None = entries[-1]
    seen: set[str] = set()
    while current is not None and current.id not in seen:
        seen.add(current.id)
        path.append(current)
        current = by_id.get(current.parent) if current.parent else None
    path.reverse()
    broken = path[0] if path[0].parent is not None else None
    return path, broken


# --------------------------------------------------------------------------------------------------
# Blocks and messages


def _block(raw: Mapping[str, Any]) -> Block:
    kind = raw["type"]
    if kind == "text" and isinstance(raw.get("text"), str):
        return TextBlock(text=raw["text"])
    if kind == "thinking" and isinstance(raw.get("thinking"), str):
        signature = as_str(raw.get("thinkingSignature"))
        if signature is None:  # no "signature": null in the payload
            return ThinkingBlock(thinking=raw["thinking"])
        return ThinkingBlock(thinking=raw["thinking"], signature=signature)
    if kind == "toolCall" and isinstance(raw.get("id"), str):
        return ToolUseBlock(id=raw["id"], name=str(raw.get("name", "")), input=raw.get("arguments"))
    if kind == "image" and isinstance(raw.get("data"), str):
        media = raw.get("mimeType")
        return ImageBlock(source={"type": "base64", "media_type": media, "data": raw["data"]})
    return OpaqueBlock(**{**raw, "type": f"pi_{kind}"})


def _blocks(content: object) -> tuple[Block, ...]:
    if isinstance(content, str):
        return (TextBlock(text=content),) if content else ()
    if isinstance(content, list):
        return tuple(_block(b) for b in content if isinstance(b, Mapping))
    return ()


def _bash_text(message: Mapping[str, Any]) -> str:
    """pi's ``bashExecutionToText``: how a ``!`` command the user ran reaches the model."""
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(code, int) and code != 0:
        text += f"\n\nCommand exited with code {code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _user_blocks(message: Mapping[str, Any]) -> tuple[Block, ...]:
    """The user-role content a non-assistant message puts into the model's context."""
    role = message.get("role")
    if role == "bashExecution":
        return () if message.get("excludeFromContext") else (TextBlock(text=_bash_text(message)),)
    if role in ("branchSummary", "compactionSummary"):
        prefix, suffix = (
            (BRANCH_PREFIX, BRANCH_SUFFIX)
            if role == "branchSummary"
            else (COMPACTION_PREFIX, COMPACTION_SUFFIX)
        )
        return (TextBlock(text=prefix + str(message.get("summary", "")) + suffix),)
    return _blocks(message.get("content"))


def _tool_result(message: Mapping[str, Any]) -> ToolResultBlock:
    content = _blocks(message.get("content"))
    if message.get("isError") is True:
        return ToolResultBlock(tool_use_id=message["toolCallId"], content=content, is_error=True)
    return ToolResultBlock(tool_use_id=message["toolCallId"], content=content)


def _assistant(message: Mapping[str, Any]) -> Message:
    blocks = _blocks(message.get("content"))
    return Message(role="assistant", content=blocks if blocks else "")


def usage_from_pi(usage: object) -> Usage | None:
    """pi-ai's ``usage`` as :class:`Usage` (``input`` is already the uncached part)."""
    if not isinstance(usage, Mapping) or token_count(usage.get("input"), "input") is None:
        return None
    return Usage(
        input_tokens=token_count(usage.get("input"), "input") or 0,
        cache_write_5m=token_count(usage.get("cacheWrite"), "cacheWrite") or 0,
        cache_read=token_count(usage.get("cacheRead"), "cacheRead") or 0,
        output_tokens=token_count(usage.get("output"), "output") or 0,
    )


def recorded_cost(usage: object) -> float | None:
    """pi's own price of one call (``usage.cost.total``, USD), when recorded."""
    cost = usage.get("cost") if isinstance(usage, Mapping) else None
    total = cost.get("total") if isinstance(cost, Mapping) else None
    return float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None


# --------------------------------------------------------------------------------------------------
# The context pi sends


@dataclass
class _Context:
    """The request messages so far, in canonical form, and the user turn being collected.

    The user turn is committed to ``messages`` when the next assistant message that pi sends
    again arrives: an aborted turn in between leaves it open, so the user content around it
    stays one message.
    """

    messages: list[Message] = field(default_factory=list)
    results: list[ToolResultBlock] = field(default_factory=list)
    other: list[Block] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    """Tool-use ids of the last assistant message sent, in order."""
    synthetic: set[str] = field(default_factory=set)
    _built: tuple[tuple[int, int], Message | None] | None = None

    def add(self, entry: _Entry) -> None:
        """Add what one entry puts into the context (nothing, for most non-message entries)."""
        if entry.kind == "custom_message":
            self.other.extend(_blocks(entry.raw.get("content")))
        elif entry.kind == "branch_summary" and entry.raw.get("summary"):
            summary = str(entry.raw["summary"])
            self.other.append(TextBlock(text=BRANCH_PREFIX + summary + BRANCH_SUFFIX))
        elif entry.kind == "message":
            self._add_message(entry.message)

    def _add_message(self, message: Mapping[str, Any]) -> None:
        role = message.get("role")
        if role == "assistant":
            if message.get("stopReason") in _UNSENT_STOPS:
                return  # pi-ai's transformMessages drops errored and aborted turns
            turn = self._turn()
            if turn is not None:
                self.messages.append(turn)
            self.results, self.other, self._built = [], [], None
            sent = _assistant(message)
            self.messages.append(sent)
            self.pending = [b.id for b in sent.tool_uses()]
        elif role == "toolResult":
            self.results.append(_tool_result(message))
        elif role in _USER_ROLES:
            self.other.extend(_user_blocks(message))

    def _turn(self) -> Message | None:
        """The open user turn as one message: tool results first (in call order, pi's synthetic
        error result for each call that got none), then the other user content."""
        key = (len(self.results), len(self.other))
        if self._built is not None and self._built[0] == key:
            return self._built[1]  # the same object the last request ended with
        answered = {r.tool_use_id: r for r in self.results}
        ordered: list[Block] = []
        for tool_use_id in self.pending:
            if tool_use_id in answered:
                ordered.append(answered.pop(tool_use_id))
            else:
                self.synthetic.add(tool_use_id)
                ordered.append(
                    ToolResultBlock(tool_use_id=tool_use_id, content=NO_RESULT, is_error=True)
                )
        ordered.extend(r for r in self.results if r.tool_use_id in answered)
        blocks = (*ordered, *self.other)
        turn = Message(role="user", content=blocks) if blocks else None
        self._built = (key, turn)
        return turn

    def request(self) -> tuple[Message, ...]:
        turn = self._turn()
        return (*self.messages, turn) if turn is not None else tuple(self.messages)


def _after_compaction(path: Sequence[_Entry], at: int, by_index: Sequence[_Entry]) -> _Context:
    """The context right after the compaction entry ``path[at]``: its summary, then the entries
    from ``firstKeptEntryId`` up to the compaction."""
    entry = path[at]
    context = _Context()
    summary = str(entry.raw.get("summary", ""))
    context.other.append(TextBlock(text=COMPACTION_PREFIX + summary + COMPACTION_SUFFIX))
    first = _first_kept_id(entry, by_index)
    kept = [e.id for e in path[:at]]
    if first in kept:
        for earlier in path[kept.index(first) : at]:
            context.add(earlier)
    return context


def _first_kept_id(entry: _Entry, by_index: Sequence[_Entry]) -> str | None:
    first = as_str(entry.raw.get("firstKeptEntryId"))
    index = as_int(entry.raw.get("firstKeptEntryIndex"))
    if first is None and index is not None and 1 <= index <= len(by_index):
        first = by_index[index - 1].id  # v1: an index into the file's entries, header at 0
    return first


# --------------------------------------------------------------------------------------------------
# The session


@dataclass
class _Built:
    calls: list[Call] = field(default_factory=list)
    compactions: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    set_aside: Counter[str] = field(default_factory=Counter)
    cost: float = 0.0
    costed: int = 0
    unsent: int = 0
    synthetic: set[str] = field(default_factory=set)


def _call(entry: _Entry, request: tuple[Message, ...]) -> Call:
    message = entry.message
    model = as_str(message.get("model"))
    stop = as_str(message.get("stopReason"))
    timestamp = parse_time(entry.raw.get("timestamp")) or _ms_time(message.get("timestamp"))
    return Call(
        request=Conversation(model=model, messages=request),
        response=_assistant(message),
        usage=usage_from_pi(message.get("usage")),
        model=model,
        timestamp=timestamp,
        stop_reason=_STOP_REASONS.get(stop, stop) if stop else None,
        exact=False,
        line=entry.line,
    )


def _ms_time(value: object) -> datetime | None:
    number = as_int(value)
    return parse_time(number / 1000) if number else None


def _build(path: Sequence[_Entry], entries: Sequence[_Entry]) -> _Built:
    out = _Built()
    context = _Context()
    for at, entry in enumerate(path):
        if entry.is_call:
            out.calls.append(_call(entry, context.request()))
            _count_call(out, entry.message)
        elif entry.kind == "compaction":
            out.synthetic |= context.synthetic
            context = _after_compaction(path, at, entries)
            out.compactions.append(len(out.calls))
            out.notes.append(_compaction_note(len(out.calls), entry))
        elif entry.kind not in _CONTENT_ENTRIES:
            out.set_aside[entry.kind] += 1
        elif entry.kind == "message" and entry.message.get("role") not in (
            *_USER_ROLES,
            "toolResult",
        ):
            out.set_aside[f"message/{entry.message.get('role')}"] += 1
        context.add(entry)
    out.synthetic |= context.synthetic
    return out


def _count_call(out: _Built, message: Mapping[str, Any]) -> None:
    cost = recorded_cost(message.get("usage"))
    if cost is not None:
        out.cost += cost
        out.costed += 1
    if message.get("stopReason") in _UNSENT_STOPS:
        out.unsent += 1


def _compaction_note(index: int, entry: _Entry) -> str:
    before = entry.raw.get("tokensBefore")
    first = entry.raw.get("firstKeptEntryId", entry.raw.get("firstKeptEntryIndex"))
    return (
        f"call {index} follows a compaction (line {entry.line}, tokensBefore {before}, "
        f"first kept entry {first}): its request starts from the summary"
    )


def _session(path: Path, header: Mapping[str, Any], entries: Sequence[_Entry]) -> Session:
    on_path, broken = _path_to_leaf(entries)
    built = _build(on_path, entries)
    notes = [PREFIX_NOTE, *_summary_notes(built), *built.notes]
    notes.extend(_branch_notes(entries, on_path, broken))
    return Session(
        path=str(path),
        format=NAME,
        session_id=as_str(header.get("id")),
        calls=tuple(built.calls),
        prefix_known=False,
        compactions=tuple(built.compactions),
        set_aside=dict(sorted(built.set_aside.items())),
        notes=tuple(notes),
    )


def _summary_notes(built: _Built) -> list[str]:
    notes = []
    if built.costed:
        notes.append(
            f"recorded cost (pi's usage.cost.total, its own price table): ${built.cost:.4f} "
            f"over {built.costed} calls"
        )
    if built.unsent:
        notes.append(
            f"{built.unsent} calls ended in error or aborted: pi leaves them out of later "
            "requests; their usage is as recorded (zero when aborted before any token)"
        )
    if built.synthetic:
        notes.append(
            f"{len(built.synthetic)} tool results are pi's synthetic {NO_RESULT!r} answers to tool "
            "calls that got no result"
        )
    return notes


def _branch_notes(
    entries: Sequence[_Entry], on_path: Sequence[_Entry], broken: _Entry | None
) -> list[str]:
    notes = []
    ids = {e.id for e in on_path}
    off = [e for e in entries if e.id not in ids]
    if off:
        calls = sum(1 for e in off if e.is_call)
        notes.append(
            f"the file holds other branches: {len(off)} entries ({calls} assistant messages) are "
            f"not on the path to the current leaf (line {on_path[-1].line}) and not read as calls"
        )
    if broken is not None:
        notes.append(
            f"the path to the leaf starts at line {broken.line}, whose parentId "
            f"{broken.parent!r} names no entry"
        )
    return notes


READER = PiReader()

__all__ = ["READER", "PiReader", "recorded_cost", "usage_from_pi"]
