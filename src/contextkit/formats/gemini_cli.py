"""Reader for Gemini CLI chat recordings (``google-gemini/gemini-cli``, ``ChatRecordingService``).

Two shapes of the same ``ConversationRecord`` are read:

- legacy ``session-*.json``: one object ``{sessionId, projectHash, startTime, lastUpdated,
  messages, summary?, kind?, directories?}``;
- ``session-*.jsonl``: a metadata line (``sessionId``, ``projectHash``...), then one line per
  message record (a record with an ``id`` already seen replaces it in place), ``{"$set": {...}}``
  metadata updates (a ``messages`` list there replaces the messages) and ``{"$rewindTo": id}``
  (drops that message and every later one).

A ``MessageRecord`` has ``id``, ``timestamp``, ``type`` (``user``, ``gemini``, ``info``,
``error``, ``warning``), ``content`` (a string or Gemini parts), and on ``gemini`` messages
``toolCalls`` (``id``, ``name``, ``args``, ``result``: the ``functionResponse`` parts sent back,
``status``), ``thoughts`` (summaries, not sent back), ``tokens`` and ``model``.

What counts as a call: one model response. Gemini CLI writes a ``gemini`` record per response
that brings text or thoughts, and appends the tool calls of the following responses that bring
neither to that same record; the calls of one response are recorded together with one
``timestamp``. So each record is one call per run of tool calls sharing a timestamp (at least
one): the first has the record's text, tokens and time, the later ones only their tool calls,
no usage (Gemini CLI overwrote their tokens) and the calls' timestamp. A call's request is every
message before it, rebuilt (``exact=False``): user text, each earlier response as an assistant
message (text, then function calls), and the calls' results as tool results in the next user
message. ``info``/``error``/``warning`` records are shown to the person, never sent: set aside.

Usage is ``tokens`` (the response's ``usageMetadata``): ``input`` = promptTokenCount (includes
``cached``), ``cached`` = cachedContentTokenCount, ``output`` = candidatesTokenCount,
``thoughts`` = thoughtsTokenCount (billed as output), ``tool`` = toolUsePromptTokenCount (input
outside the prompt count), ``total`` = their sum. So ``Usage.input_tokens`` = input - cached +
tool, ``cache_read`` = cached, ``output_tokens`` = output + thoughts; Gemini bills no cache writes.
The system prompt and tool declarations are not recorded: ``prefix_known=False``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips, first_json_object, iter_jsonl, read_head
from contextkit.formats._locations import Location, Places
from contextkit.formats._trajectory import (
    Reply,
    UserTurn,
    as_str,
    calls_from_messages,
    load_doc,
    parse_time,
    peek,
)
from contextkit.messages import (
    Block,
    ImageBlock,
    Message,
    OpaqueBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    token_count,
)
from contextkit.session import LoadedFile, Session, Usage

NAME = "gemini-cli"
_SENT_TYPES = ("user", "gemini")
_FAILED_STATUSES = ("error", "cancelled")

Located = tuple[int | None, Mapping[str, Any]]


class GeminiCliReader:
    name = NAME

    def locations(self, places: Places) -> tuple[Location, ...]:
        """``~/.gemini/tmp/<project hash>/chats/session-*.json(l)`` (``google-gemini/gemini-cli``
        ``docs``: chat recording "in your project's temporary directory at
        ``~/.gemini/tmp/<project_hash>/chats``")."""
        tmp = places.home / ".gemini" / "tmp"
        return (Location("Gemini CLI", self.name, tmp, "*/chats/session-*.json*"),)

    def sniff(self, path: Path, head: str) -> bool:
        seen = peek(head)  # for JSONL this reads the metadata line, the first JSON value
        return seen.kind == "object" and {"sessionId", "projectHash"} <= set(seen.keys)

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        rewound: Counter[str] = Counter()
        if first_json_object(read_head(path)) is not None:
            metadata, located = _read_jsonl(path, skips, rewound)
        else:
            metadata, located = _read_json(path)
        session = _session(path, metadata, located, skips, rewound)
        return LoadedFile(
            path=str(path), format=NAME, sessions=(session,), skipped=tuple(skips.records)
        )


def _read_json(path: Path) -> tuple[Mapping[str, Any], list[Located]]:
    doc = load_doc(path)
    if not isinstance(doc.value, dict) or not isinstance(doc.value.get("sessionId"), str):
        raise FormatError(path, "expected a Gemini CLI conversation object (with sessionId)", 1)
    if "messages" not in doc.value:
        raise FormatError(path, "a Gemini CLI conversation needs a 'messages' list", 1)
    messages = doc.value["messages"]
    if not isinstance(messages, list):
        raise FormatError(path, "'messages' must be a list", doc.line_of("messages"))
    lines = doc.element_lines("messages")
    located = [(lines[i] if i < len(lines) else None, m) for i, m in enumerate(messages)]
    return doc.value, located


def _read_jsonl(
    path: Path, skips: Skips, rewound: Counter[str]
) -> tuple[Mapping[str, Any], list[Located]]:
    metadata: dict[str, Any] = {}
    records: dict[str, Located] = {}
    for line, record in iter_jsonl(path, skips):
        if isinstance(record.get("$rewindTo"), str):
            if record["$rewindTo"] not in records:
                skips.fail("$rewindTo names a message id no earlier line holds", line)
                continue
            rewound["rewound message"] += _rewind(records, record["$rewindTo"])
        elif isinstance(record.get("$set"), Mapping):
            _apply_or_skip(metadata, records, record["$set"], line, skips)
        elif isinstance(record.get("id"), str):
            records[record["id"]] = (line, record)  # an update keeps the record's place
        elif isinstance(record.get("sessionId"), str) and isinstance(
            record.get("projectHash"), str
        ):
            _apply_or_skip(metadata, records, record, line, skips)
        else:
            skips.fail("neither a message record, metadata, $set nor $rewindTo", line)
    if not isinstance(metadata.get("sessionId"), str):
        raise FormatError(path, "no Gemini CLI metadata line (sessionId and projectHash)", 1)
    return metadata, list(records.values())


def _rewind(records: dict[str, Located], message_id: str) -> int:
    """Drop ``message_id`` and every message after it (the user rewound); how many went."""
    ids = list(records)
    keep = ids[: ids.index(message_id)]
    for gone in ids[len(keep) :]:
        del records[gone]
    return len(ids) - len(keep)


class _BadLine(Exception):
    """A metadata line with a wrong type (internal; becomes a skip or an error)."""


def _apply_or_skip(
    metadata: dict[str, Any],
    records: dict[str, Located],
    update: Mapping[str, Any],
    line: int,
    skips: Skips,
) -> None:
    try:
        _apply_set(metadata, records, update, line)
    except _BadLine as exc:
        skips.fail(str(exc), line)


def _apply_set(
    metadata: dict[str, Any], records: dict[str, Located], update: Mapping[str, Any], line: int
) -> None:
    messages = update.get("messages")
    if messages is not None and not isinstance(messages, list):
        raise _BadLine("'messages' must be a list")
    metadata.update({k: v for k, v in update.items() if k != "messages"})
    if isinstance(messages, list):  # a full replacement, as updateMessagesFromHistory writes it
        records.clear()
        for position, message in enumerate(messages):
            key = message.get("id") if isinstance(message, Mapping) else None
            records[key if isinstance(key, str) else f"#{line}:{position}"] = (line, message)


def _check(message: object) -> str | None:
    if not isinstance(message, Mapping):
        return f"expected a message object, found {type(message).__name__}"
    if not isinstance(message.get("type"), str):
        return "a message needs a string 'type'"
    if not isinstance(message.get("toolCalls") or [], list):
        return "'toolCalls' must be a list"
    calls = message.get("toolCalls") or []
    if any(not isinstance(c, Mapping) or not isinstance(c.get("id"), str) for c in calls):
        return "each tool call must be an object with a string 'id'"
    if not isinstance(message.get("tokens") or {}, Mapping):
        return "'tokens' must be an object"
    try:
        usage_from_tokens(message.get("tokens"))
    except ValueError as exc:
        return str(exc).replace("usage.", "tokens.", 1)
    return None


def _session(
    path: Path,
    metadata: Mapping[str, Any],
    located: list[Located],
    skips: Skips,
    rewound: Counter[str],
) -> Session:
    messages: list[Message] = []
    turn = UserTurn()
    replies: list[Reply] = []
    set_aside: Counter[str] = Counter(rewound)  # messages a rewind took out of the conversation
    empty: list[int] = []  # gemini records with no text, no thoughts and no tool calls
    for index, (line, record) in enumerate(located):
        problem = _check(record)
        if problem is not None:
            skips.fail(f"message {index}: {problem}", line)
            continue
        kind = str(record["type"])
        if kind == "user":
            for block in _blocks(record.get("content")):
                turn.add(block, result=isinstance(block, ToolResultBlock))
        elif kind == "gemini":
            if not (
                record.get("toolCalls") or record.get("thoughts") or _blocks(record.get("content"))
            ):
                empty.append(index)
            runs = _runs(record.get("toolCalls") or [])
            for position, run in enumerate(runs):
                turn.flush(messages)
                first = position == 0
                replies.append(_reply(record, run, len(messages), line, first=first))
                messages.append(_assistant(record.get("content") if first else None, run))
                for call in run:
                    turn.add(_tool_result(call), result=True)
        else:
            set_aside[kind] += 1
    notes = ["the system prompt and tool declarations are not in Gemini CLI recordings"]
    if empty:
        shown = ", ".join(map(str, empty[:10]))
        notes.append(
            f"{len(empty)} gemini message(s) with no text, no thoughts and no tool calls "
            f"(messages {shown}): Gemini CLI writes a response record only when it brings one of "
            "them, so their tool calls may be missing from the file; each is read as an empty call"
        )
    if metadata.get("kind") == "subagent":
        notes.append("a subagent's recording (its parent session is the folder it is in)")
    return Session(
        path=str(path),
        format=NAME,
        session_id=as_str(metadata.get("sessionId")),
        calls=calls_from_messages(tuple(messages), replies),
        prefix_known=False,
        set_aside=dict(set_aside),
        notes=tuple(notes),
    )


def _runs(calls: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The record's tool calls split into model responses (at least one, maybe without calls).

    Gemini CLI appends the tool calls of later responses to the same record when those responses
    bring no text and no thoughts; the calls of one response are recorded together, with one
    ``timestamp``. So each run of calls with the same timestamp is one response.
    """
    runs: list[list[Mapping[str, Any]]] = [[]]
    for call in calls:
        if runs[-1] and call.get("timestamp") != runs[-1][-1].get("timestamp"):
            runs.append([])
        runs[-1].append(call)
    return runs


def _reply(
    record: Mapping[str, Any],
    run: list[Mapping[str, Any]],
    index: int,
    line: int | None,
    *,
    first: bool,
) -> Reply:
    # Only the record's first response keeps its tokens: Gemini CLI overwrites the queued tokens
    # of the responses it appends to a record.
    stamp = record.get("timestamp") if first or not run else run[0].get("timestamp")
    return Reply(
        index=index,
        line=line,
        model=as_str(record.get("model")),
        usage=usage_from_tokens(record.get("tokens")) if first else None,
        timestamp=parse_time(stamp),
    )


def usage_from_tokens(tokens: object) -> Usage | None:
    """Gemini CLI's per-message ``tokens`` as :class:`Usage` (see the module docstring)."""
    if not isinstance(tokens, Mapping):
        return None
    prompt = token_count(tokens.get("input"), "input")
    if prompt is None:
        return None
    cached = token_count(tokens.get("cached"), "cached") or 0
    tool = token_count(tokens.get("tool"), "tool") or 0
    output = (token_count(tokens.get("output"), "output") or 0) + (
        token_count(tokens.get("thoughts"), "thoughts") or 0
    )
    return Usage(
        input_tokens=max(prompt - cached, 0) + tool, cache_read=cached, output_tokens=output
    )


def _assistant(content: object, calls: list[Mapping[str, Any]]) -> Message:
    blocks: list[Block] = list(_blocks(content))
    for call in calls:
        blocks.append(
            ToolUseBlock(id=call["id"], name=str(call.get("name", "")), input=call.get("args"))
        )
    if not blocks:
        return Message(role="assistant", content="")
    return Message(role="assistant", content=tuple(blocks))


def _parts(content: object) -> Iterable[object]:
    if content is None:
        return ()
    if isinstance(content, str | Mapping):
        return (content,)
    return content if isinstance(content, list) else (content,)


def _blocks(content: object) -> tuple[Block, ...]:
    """Gemini parts (``PartListUnion``) as blocks; empty text is left out."""
    out: list[Block] = []
    for part in _parts(content):
        block = _part_block(part)
        if block is not None:
            out.append(block)
    return tuple(out)


def _part_block(part: object) -> Block | None:
    if isinstance(part, str):
        return TextBlock(text=part) if part else None
    if not isinstance(part, Mapping):
        return OpaqueBlock(type="gemini_part", part=part)
    text = part.get("text")
    if isinstance(text, str):
        if part.get("thought") is True:
            return ThinkingBlock(thinking=text)
        return TextBlock(text=text) if text else None
    if isinstance(part.get("functionResponse"), Mapping):
        response = part["functionResponse"]
        content, failed = _response_text(response.get("response"))
        call_id = as_str(response.get("id")) or as_str(response.get("name")) or ""
        return _result_block(call_id, content, failed)
    inline = part.get("inlineData")
    if isinstance(inline, Mapping) and str(inline.get("mimeType", "")).startswith("image/"):
        source = {"type": "base64", "media_type": inline["mimeType"], "data": inline.get("data")}
        return ImageBlock(source=source)
    return OpaqueBlock(type="gemini_part", part=dict(part))


def _response_text(response: object) -> tuple[str, bool]:
    """A ``functionResponse.response`` as text, and whether it reports an error."""
    if isinstance(response, Mapping):
        for key, failed in (("output", False), ("error", True)):
            value = response.get(key)
            if isinstance(value, str):
                return value, failed
    if isinstance(response, str):
        return response, False
    return json.dumps(response, ensure_ascii=False), False


def _tool_result(call: Mapping[str, Any]) -> ToolResultBlock:
    """The result the model got back for one tool call (recorded as ``functionResponse`` parts)."""
    failed = call.get("status") in _FAILED_STATUSES
    texts: list[str] = []
    for part in _parts(call.get("result")):
        block = _part_block(part)
        if isinstance(block, ToolResultBlock):
            texts.append(block.text)
            failed = failed or bool(block.is_error)
        elif isinstance(block, TextBlock):
            texts.append(block.text)
    return _result_block(call["id"], "\n".join(texts), failed)


def _result_block(tool_use_id: str, content: str, failed: bool) -> ToolResultBlock:
    if failed:  # is_error only when true, so the payload carries no "is_error": null
        return ToolResultBlock(tool_use_id=tool_use_id, content=content, is_error=True)
    return ToolResultBlock(tool_use_id=tool_use_id, content=content)


READER = GeminiCliReader()

__all__ = ["READER", "GeminiCliReader", "usage_from_tokens"]
