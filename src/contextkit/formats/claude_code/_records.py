"""Claude Code transcripts, step 1: lines to typed records (``Rec``), with errors naming the line.

Contract: :func:`parse_file` reads one ``.jsonl`` transcript and returns a :class:`ParsedFile`:

- every ``user`` / ``assistant`` line becomes a :class:`Rec` of kind ``"user"`` / ``"assistant"``
  with its content parsed into blocks; a field we rely on with a wrong type (``message`` not an
  object, ``message.content`` neither a string nor a list of blocks, ``usage`` not an object, a
  non-string ``uuid``...) is a bad record: a :class:`FormatError` naming the line, or (lenient) a
  skip;
- a ``system`` record of subtype ``compact_boundary`` becomes kind ``"boundary"``;
- an ``attachment`` record whose text :func:`._attachments.render_attachment` knows
  becomes kind ``"attachment"`` holding that text as one block (what the client sends for it); one
  it does not know is a link, counted in ``set_aside`` as ``attachment/<type>``;
- every other record that carries a ``uuid`` (progress, other system records, synthetic
  assistant messages) becomes kind ``"link"``: it holds no message but sits in the ``parentUuid``
  chain, which runs through it;
- a user or assistant line repeating the ``uuid`` of an earlier one is the same record written
  again (Claude Code rewrites the preserved segment of an auto-compaction before its boundary,
  differing only in ``slug``): the first is kept, the copy counted as ``repeated record``;
- every other record that is not a real message is counted by kind in ``set_aside``;
- synthetic assistant messages (``isApiErrorMessage`` or model ``<synthetic>``: text Claude Code
  writes itself when a request failed or was cancelled) are links, not responses: no model produced
  them, they carry no billed usage, and they are not part of what the model receives.

Subagent traffic written only into the parent file (``progress`` records of type
``agent_progress``, each holding one message of the subagent in ``data.message``; no
``subagents/`` file): each such message becomes a :class:`Rec` of its own, collected per
``agentId`` in ``ParsedFile.progress`` (not in ``records``: they take no part in the parent's
chain, and an agent that also has a subagent file is read from that file). The agent's last
response, which no progress record holds, is taken from the Task tool result's ``toolUseResult``
(``content`` and ``usage``) as one more assistant record (``ParsedFile.agent_results``). A wrong
type in those fields is a bad record of the line holding it, as for any message.

It also collects what links a subagent to its parent: ``agentId`` -> the ``tool_use`` id of the
Task/Agent call that started it (from ``toolUseResult.agentId``, ``agent_progress`` records, or the
``agentId: ...`` line of the tool result text), and Task/Agent prompts (older versions wrote
subagents inline as sidechains whose first message is that prompt).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contextkit.formats._io import Skips, iter_jsonl
from contextkit.formats.claude_code._attachments import render_attachment
from contextkit.messages import BLOCKS_ADAPTER, Block, TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.session import Usage

SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
_AGENT_ID_TEXT = re.compile(r"\bagentId: ([A-Za-z0-9_-]+)")


class BadRecord(Exception):
    """A record with a wrong type in a field the reader needs (internal; becomes a skip)."""


@dataclass(eq=False, slots=True)
class Rec:
    """One transcript record that takes part in the ``parentUuid`` chain.

    ``eq=False``: records hash by identity, so tuples of them key the per-read message memo.
    """

    order: tuple[int, int]
    """(rank of the file, line): a parent file's records sort before its subagents' records."""
    line: int
    kind: str
    uuid: str | None
    parent_uuid: str | None
    sidechain: bool = False
    agent_id: str | None = None
    session_id: str | None = None
    version: tuple[int, ...] | None = None
    """The client version that wrote the line (``version``: ``2.1.197`` -> (2, 1, 197))."""
    timestamp: datetime | None = None
    blocks: tuple[Block, ...] = ()
    text: str | None = None
    """The content when the file wrote it as a plain string (kept as a string, losslessly)."""
    key: str | None = None
    """Assistant lines: the response they belong to (``requestId``, else ``message.id``)."""
    request_id: str | None = None
    message_id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: Usage | None = None
    meta: Mapping[str, Any] | None = None
    """Boundaries: ``compactMetadata``."""
    parent: Rec | None = None
    """Resolved parent (set once all files of a read are parsed)."""


@dataclass
class ParsedFile:
    path: Path
    records: list[Rec] = field(default_factory=list)
    set_aside: Counter[str] = field(default_factory=Counter)
    agent_links: dict[str, str] = field(default_factory=dict)
    task_prompts: dict[str, str] = field(default_factory=dict)
    uuids: set[str] = field(default_factory=set)
    """uuids of the user and assistant records taken so far."""
    progress: dict[str, list[Rec]] = field(default_factory=dict)
    """agentId -> the subagent's messages held in ``agent_progress`` records, in file order."""
    agent_results: dict[str, Rec] = field(default_factory=dict)
    """agentId -> its last response, from the Task result (agents in ``progress`` only)."""
    notes: list[str] = field(default_factory=list)
    """What reading the lines recovered from (two records on one line)."""
    resumes: list[datetime] = field(default_factory=list)
    """When a new Claude Code process took the session up again (its ``SessionStart`` hook ran
    with the ``resume`` matcher): the system prompt it sends is built anew."""


def parse_file(path: Path, skips: Skips, rank: int) -> ParsedFile:
    """Every line of ``path`` as records; bad lines go through ``skips`` (error or skip)."""
    out = ParsedFile(path)
    for line, obj in iter_jsonl(path, skips):
        try:
            _take(obj, line, rank, out)
        except BadRecord as exc:
            skips.fail(str(exc), line)
    out.notes.extend(skips.notes)
    return out


def _take(obj: Mapping[str, Any], line: int, rank: int, out: ParsedFile) -> None:
    kind = obj.get("type")
    if kind is None:
        out.set_aside["(no type)"] += 1
        return
    if not isinstance(kind, str):
        raise BadRecord(f"`type` must be a string, found {_tname(kind)}")
    if kind in ("user", "assistant"):
        rec = _message_rec(obj, kind, line, rank)
        if rec.uuid is not None and rec.uuid in out.uuids:
            out.set_aside["repeated record"] += 1
            return
        if rec.uuid is not None:
            out.uuids.add(rec.uuid)
        if rec.kind == "link":
            out.set_aside["assistant/synthetic"] += 1
        else:
            _collect_links(obj, rec, rank, out)
        out.records.append(rec)
        return
    if kind == "attachment":
        _take_attachment(obj, line, rank, out)
        return
    label = kind
    if kind == "system":
        label = f"system/{_opt_str(obj, 'subtype') or '(none)'}"
    out.set_aside[label] += 1
    if kind == "progress":
        _progress(obj, line, rank, out)
        _resume(obj, out)
    uuid = _opt_str(obj, "uuid")
    if uuid is None:
        return  # summaries, snapshots, queue operations: outside the chain
    rec = _base_rec(obj, "link", line, rank)
    if label == "system/compact_boundary":
        rec.kind = "boundary"
        meta = obj.get("compactMetadata")
        rec.meta = meta if isinstance(meta, Mapping) else None
    out.records.append(rec)


def _take_attachment(obj: Mapping[str, Any], line: int, rank: int, out: ParsedFile) -> None:
    """An attachment the client renders as text is a record holding it; another is a link."""
    attachment = obj.get("attachment")
    if not isinstance(attachment, Mapping):
        raise BadRecord(f"`attachment` must be an object, found {_tname(attachment)}")
    text = render_attachment(attachment)
    if text is None or _opt_str(obj, "uuid") is None:
        out.set_aside[f"attachment/{attachment.get('type')}"] += 1
        rec = _base_rec(obj, "link", line, rank)
        if rec.uuid is not None:
            out.records.append(rec)
        return
    rec = _base_rec(obj, "attachment", line, rank)
    rec.blocks = (TextBlock(text=text),)
    out.records.append(rec)


def _base_rec(obj: Mapping[str, Any], kind: str, line: int, rank: int) -> Rec:
    sidechain = obj.get("isSidechain")
    if sidechain is not None and not isinstance(sidechain, bool):
        raise BadRecord(f"`isSidechain` must be a boolean, found {_tname(sidechain)}")
    return Rec(
        order=(rank, line),
        line=line,
        kind=kind,
        uuid=_opt_str(obj, "uuid"),
        parent_uuid=_opt_str(obj, "parentUuid"),
        sidechain=bool(sidechain),
        agent_id=_opt_str(obj, "agentId"),
        session_id=_opt_str(obj, "sessionId"),
        version=_version(obj.get("version")),
        timestamp=_timestamp(obj),
    )


def _message_rec(obj: Mapping[str, Any], kind: str, line: int, rank: int) -> Rec:
    rec = _base_rec(obj, kind, line, rank)
    message = obj.get("message")
    if not isinstance(message, Mapping):
        raise BadRecord(f"`message` must be an object, found {_tname(message)}")
    content = message.get("content")
    if isinstance(content, str):
        rec.text = content
        rec.blocks = (TextBlock(text=content),)
    else:
        rec.blocks = _blocks(content, "message.content")
    if kind == "assistant":
        _assistant_fields(obj, message, rec)
    return rec


def _assistant_fields(obj: Mapping[str, Any], message: Mapping[str, Any], rec: Rec) -> None:
    rec.model = _opt_str(message, "model", "message.")
    rec.request_id = _opt_str(obj, "requestId")
    message_id = rec.message_id = _opt_str(message, "id", "message.")
    rec.stop_reason = _opt_str(message, "stop_reason", "message.")
    if obj.get("isApiErrorMessage") is True or rec.model == "<synthetic>":
        rec.kind = "link"
        return
    rec.key = rec.request_id or message_id or f"line:{rec.order[0]}:{rec.line}"
    usage = message.get("usage")
    if usage is not None:
        rec.usage = _usage(usage, "message.usage")


def _blocks(content: object, where: str) -> tuple[Block, ...]:
    """A list of content blocks, parsed; BadRecord naming ``where`` otherwise."""
    if not isinstance(content, list):
        raise BadRecord(f"{where} must be a string or a list of blocks, found {_tname(content)}")
    try:
        return BLOCKS_ADAPTER.validate_python(content)
    except ValidationError as exc:
        first = exc.errors()[0]
        index = ".".join(str(p) for p in first["loc"][:1])
        raise BadRecord(f"{where}[{index}]: {first['msg']}") from None


def _usage(usage: object, where: str) -> Usage:
    """A usage object with valid token counts (:meth:`Usage.from_anthropic`'s check), or
    BadRecord naming ``where`` and the offending field."""
    if not isinstance(usage, Mapping):
        raise BadRecord(f"{where} must be an object, found {_tname(usage)}")
    try:
        return Usage.from_anthropic(usage)
    except ValueError as exc:
        raise BadRecord(f"{where}: {exc}") from None


def _collect_links(obj: Mapping[str, Any], rec: Rec, rank: int, out: ParsedFile) -> None:
    for block in rec.blocks:
        if isinstance(block, ToolUseBlock) and block.name in SUBAGENT_TOOLS:
            prompt = block.input.get("prompt") if isinstance(block.input, Mapping) else None
            if isinstance(prompt, str):
                out.task_prompts.setdefault(prompt, block.id)
        elif isinstance(block, ToolResultBlock):
            result = obj.get("toolUseResult")
            agent = result.get("agentId") if isinstance(result, Mapping) else None
            found = _AGENT_ID_TEXT.search(block.text) if not isinstance(agent, str) else None
            agent = found.group(1) if found else agent
            if isinstance(agent, str):
                out.agent_links.setdefault(agent, block.tool_use_id)
                if agent in out.progress and isinstance(result, Mapping):
                    _agent_result(result, agent, rec, rank, out)


def _agent_result(
    result: Mapping[str, Any], agent: str, rec: Rec, rank: int, out: ParsedFile
) -> None:
    """The subagent's last response, from the Task result, when it holds content and usage."""
    content, usage = result.get("content"), result.get("usage")
    if content is None or usage is None:
        return
    final = Rec(
        order=(rank, rec.line),
        line=rec.line,
        kind="assistant",
        uuid=None,
        parent_uuid=None,
        sidechain=True,
        agent_id=agent,
        session_id=rec.session_id,
        timestamp=rec.timestamp,
        blocks=(
            (TextBlock(text=content),)
            if isinstance(content, str)
            else _blocks(content, "toolUseResult.content")
        ),
        key=f"result:{agent}",
        stop_reason="end_turn" if result.get("status") == "completed" else None,
        usage=_usage(usage, "toolUseResult.usage"),
    )
    out.agent_results.setdefault(agent, final)


def _progress(obj: Mapping[str, Any], line: int, rank: int, out: ParsedFile) -> None:
    """An ``agent_progress`` record: the link it names, and the subagent message it holds."""
    data = obj.get("data")
    if not isinstance(data, Mapping) or data.get("type") != "agent_progress":
        return
    agent, tool_use = data.get("agentId"), obj.get("parentToolUseID")
    if isinstance(agent, str) and isinstance(tool_use, str):
        out.agent_links.setdefault(agent, tool_use)
    message = data.get("message")
    if not isinstance(agent, str) or not isinstance(message, Mapping):
        return
    kind = message.get("type")
    if kind not in ("user", "assistant"):
        return
    try:
        rec = _message_rec(message, kind, line, rank)
    except BadRecord as exc:
        raise BadRecord(f"agent_progress record, in data.message: {exc}") from None
    if rec.kind == "link":
        return  # a synthetic message: no call, and not sent to the model
    rec.sidechain, rec.agent_id, rec.parent_uuid = True, agent, None
    rec.session_id = _opt_str(obj, "sessionId")
    out.progress.setdefault(agent, []).append(rec)


def _resume(obj: Mapping[str, Any], out: ParsedFile) -> None:
    """A ``SessionStart:resume`` hook's progress record: when the session was resumed."""
    data = obj.get("data")
    if not isinstance(data, Mapping) or data.get("hookEvent") != "SessionStart":
        return
    name = data.get("hookName")
    stamp = obj.get("timestamp")
    if isinstance(name, str) and name.endswith(":resume") and isinstance(stamp, str):
        try:
            out.resumes.append(datetime.fromisoformat(stamp))
        except ValueError:
            return  # not a time: the mark is lost, the record is still counted as set aside


def _opt_str(obj: Mapping[str, Any], key: str, prefix: str = "") -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise BadRecord(f"`{prefix}{key}` must be a string, found {_tname(value)}")


def _version(value: object) -> tuple[int, ...] | None:
    if not isinstance(value, str):
        return None
    parts = value.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def _timestamp(obj: Mapping[str, Any]) -> datetime | None:
    value = _opt_str(obj, "timestamp")
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise BadRecord(f"`timestamp` is not an ISO 8601 time: {value[:40]!r}") from None


def _tname(value: object) -> str:
    return "null" if value is None else type(value).__name__
