"""Claude Code session transcripts (``~/.claude/projects/<project>/<session-id>.jsonl``).

Contract:

- ``READER.read(path)`` returns one :class:`Session` per file: the main conversation, with its
  subagents as ``Session.subagents``: inline sidechains (``isSidechain: true`` lines of older
  versions, linked to the Task/Agent call whose ``prompt`` is their first message) and the files
  ``<dir>/<session-id>/subagents/agent-*.jsonl`` of newer versions (linked through the ``agentId``
  the parent's tool result or ``agent_progress`` records name). ``agent-acompact-*`` files are the
  summary request of an auto-compaction; their chain runs into the parent's history, so their
  request is rebuilt with it. An agent with neither (2.1.x files copied without their folder)
  whose messages the parent's ``agent_progress`` records hold is a subagent session rebuilt from
  those messages in file order, with its last response taken from the Task result.
- Output tokens the file records as a stream-start placeholder are counted from the response
  content (``Call.output_estimated``), as :mod:`._outputs` describes; a session note
  says how many.
- Loading a subagent file directly gives that subagent's session, linked to the parent file when
  it lies where Claude Code puts it (``<dir>/<session-id>.jsonl``); when it does not, the notes say
  so and what is missing.
- Calls, requests and compactions are rebuilt as :mod:`._calls` describes; records
  are parsed as :mod:`._records` describes. Every request is a reconstruction
  (``Call.exact`` False) and holds messages only: these files record neither the system prompt nor
  the tool definitions, so ``Session.prefix_known`` is False.
- Strict by default: a malformed line, or a field we need with a wrong type, is a
  :class:`FormatError` naming the file (the subagent file, when it is there) and line. With
  ``lenient=True`` such lines are skipped and each is listed in ``LoadedFile.skipped``.
- Cache resets the transcript shows only by their trigger (``Call.cache_reset``), a user text
  that opens with it: after a ``<task-notification>`` (a background task finished) Claude Code's
  next request reads its cache only up to the end of the system prompt and rewrites the messages
  level; after an ``/mcp`` command it rewrites the system prompt too (the MCP instructions in it
  changed; every ``/mcp`` is taken as a reconnect, since the file does not say what it did). Seen
  on every such event in the corpus (reads drop to exactly the tools + system size) and reported
  upstream (anthropics/claude-code issues on cache reads "pinned to the stable-prefix boundary"
  and on MCP reconnects). A session taken up again by a new process (after ``/exit``, or where a
  ``SessionStart`` hook ran with the ``resume`` matcher) rewrites the system prompt too: the new
  process builds it again, with the git status and environment of that moment, so its size
  changes as well (the accountant measures it again from that call's usage). Resets without a
  trigger in the file (the same issues call them intermittent) cannot be seen and are not
  modelled.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from contextkit._gc import no_cycle_collection
from contextkit.formats._io import Skips, head_objects
from contextkit.formats._locations import Location, Places
from contextkit.formats.claude_code._calls import (
    Index,
    MessageMemo,
    build_calls,
    link_in_file_order,
    resolve_parents,
)
from contextkit.formats.claude_code._outputs import count_placeholder_outputs
from contextkit.formats.claude_code._records import ParsedFile, Rec, parse_file
from contextkit.formats.claude_code.prefix import captured_prefix
from contextkit.messages import Message, TextBlock, extends
from contextkit.session import Call, LoadedFile, Session, SkippedRecord

FORMAT = "claude-code"
PREFIX_NOTE = (
    "Claude Code transcripts do not record the system prompt or the tool definitions: requests "
    "hold the messages only (prefix_known=False)"
)
_SNIFF_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "progress", "file-history-snapshot"}
    | {"queue-operation", "custom-title", "attachment"}
)
_SNAPSHOT_START = re.compile(r'\{\s*"type"\s*:\s*"(file-history-snapshot|summary|queue-operation)"')
_SNIFF_KEYS = frozenset({"parentUuid", "sessionId", "leafUuid", "isSidechain", "messageId"})


@dataclass
class _Read:
    """State of one read: the lookups over every file it parsed, the message memo, the skips."""

    lenient: bool
    index: Index = field(default_factory=Index)
    memo: MessageMemo = field(default_factory=dict)
    skipped: list[SkippedRecord] = field(default_factory=list)

    def parse(self, path: Path, rank: int) -> ParsedFile:
        skips = Skips(path, self.lenient)
        parsed = parse_file(path, skips, rank)
        self.skipped.extend(skips.records)
        self.index.add(parsed.records)
        return parsed


class ClaudeCodeReader:
    name = FORMAT

    def locations(self, places: Places) -> tuple[Location, ...]:
        """``$CLAUDE_CONFIG_DIR/projects`` else ``~/.claude/projects/<project>/<id>.jsonl``
        (Claude Code docs and readers of its transcripts, e.g. ``claudeConfigDir`` in public
        tools: ``env.CLAUDE_CONFIG_DIR || ~/.claude``)."""
        claude = places.dir("CLAUDE_CONFIG_DIR", places.home / ".claude")
        return (Location("Claude Code", self.name, claude / "projects", "*/*.jsonl"),)

    def sniff(self, path: Path, head: str) -> bool:
        """True when most of the first records look like Claude Code records: one such line
        among the records of another format does not make the file a transcript."""
        looks = others = 0
        # Whole lines, past the head: another format's records may be longer than the head.
        for value in head_objects(path, limit=20):
            if isinstance(value, dict) and looks_like_record(value):
                looks += 1
            elif isinstance(value, dict):
                others += 1
        if looks or others:
            return looks > others
        # The first line may be longer than the head (a large snapshot): match its opening.
        start = head.lstrip()[:200]
        return _SNAPSHOT_START.match(start) is not None or (
            start.startswith("{") and '"parentUuid"' in head and '"sessionId"' in head
        )

    @no_cycle_collection  # a read allocates many objects and frees none: see contextkit._gc
    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        state = _Read(lenient)
        parsed = state.parse(path, rank=0)
        messages = [r for r in parsed.records if r.kind in ("user", "assistant")]
        if messages and all(r.sidechain for r in messages):
            sessions = _subagent_file_sessions(path, parsed, state)
        else:
            sessions = (_main_session(path, parsed, state),)
        return LoadedFile(
            path=str(path), format=FORMAT, sessions=sessions, skipped=tuple(state.skipped)
        )


READER = ClaudeCodeReader()


def load_claude_code(path: str | Path, *, lenient: bool = False) -> LoadedFile:
    """Read one Claude Code transcript (main session with its subagents, or one subagent file)."""
    return READER.read(Path(path), lenient=lenient)


def looks_like_record(value: dict[str, Any]) -> bool:
    kind = value.get("type")
    return isinstance(kind, str) and kind in _SNIFF_TYPES and not _SNIFF_KEYS.isdisjoint(value)


# --------------------------------------------------------------------------------------------------
# Main session


def _main_session(path: Path, parsed: ParsedFile, state: _Read) -> Session:
    sub_files = sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))
    sub_parsed = [state.parse(f, rank=i + 1) for i, f in enumerate(sub_files)]
    resolve_parents(parsed.records, state.index)
    main = [r for r in parsed.records if not r.sidechain]
    session_id = _common_session_id(main) or path.stem
    subagents = [
        _thread_session(path, thread, state, session_id, _inline_link(thread, parsed))
        for thread in _sidechain_threads(r for r in parsed.records if r.sidechain)
    ]
    for sub in sub_parsed:
        resolve_parents(sub.records, state.index)
        subagents.extend(_agent_file_sessions(sub, parsed, state, session_id))
    known = {s.session_id for s in subagents}
    subagents.extend(
        _progress_session(path, agent, parsed, state, session_id)
        for agent in parsed.progress
        if agent not in known
    )
    return _session(
        path,
        main,
        state,
        session_id=session_id,
        subagents=tuple(subagents),
        set_aside=parsed.set_aside,
        notes=parsed.notes,
        resumes=parsed.resumes,
    )


def _session(
    path: Path,
    thread: Sequence[Rec],
    state: _Read,
    *,
    session_id: str | None,
    set_aside: Counter[str],
    subagents: tuple[Session, ...] = (),
    parent_session_id: str | None = None,
    parent_tool_use_id: str | None = None,
    notes: Sequence[str] = (),
    resumes: Sequence[datetime] = (),
) -> Session:
    ordered = sorted(thread, key=lambda r: r.order)
    file_order = link_in_file_order(ordered)
    built = build_calls(ordered, state.index, state.memo)
    reset_calls, resumed = _with_cache_resets(built.calls, resumes)
    reset_calls, unread = _read_through(reset_calls)
    calls, counted = count_placeholder_outputs(reset_calls)
    extra = ["no parentUuid links in this thread: messages taken in file order"] * file_order
    if unread:
        extra.append(
            f"{len(unread)} cache reset trigger(s) whose call read the previous call's cache in "
            f"full (calls {', '.join(map(str, unread[:8]))}{', ...' if len(unread) > 8 else ''}): "
            "the reads show no reset, so none is taken"
        )
    broken = [r for r in ordered if r.parent_uuid and r.parent is None]
    if broken:
        extra.append(
            f"{len(broken)} record(s) name a parentUuid the file does not hold (first at line "
            f"{broken[0].line}): requests after them lack the history before that point"
        )
    version = _client_version(ordered)
    return Session(
        path=str(path),
        format=FORMAT,
        session_id=session_id,
        context_window=_window(calls),
        calls=calls,
        subagents=subagents,
        parent_session_id=parent_session_id,
        parent_tool_use_id=parent_tool_use_id,
        prefix_known=False,
        compactions=tuple(built.compactions),
        resumes=resumed,
        client_version=version,
        captured_prefix=captured_prefix(version, subagent=parent_session_id is not None),
        set_aside=dict(sorted(set_aside.items())),
        notes=(PREFIX_NOTE, *notes, *extra, *built.notes, *([counted] if counted else [])),
    )


def _client_version(records: Sequence[Rec]) -> str | None:
    """The version most of ``records`` were written by (None: none says)."""
    versions = Counter(r.version for r in records if r.version is not None)
    if not versions:
        return None
    return ".".join(str(p) for p in versions.most_common(1)[0][0])


CLAUDE_CODE_WINDOW = 200_000
"""The window Claude Code runs a model with unless its id names another (``claude-opus-4-6[1m]``):
it ran Opus 4.6 at 200k in every corpus session, compacting near 167k (REFERENCE.md, 2026-12)."""


def _window(calls: Sequence[Call]) -> int | None:
    """200k, unless a call's model id names its window (None: the id's own holds)."""
    for call in calls:
        info = call.model_info
        if info.context_window != info.max_context_window:
            return None
    return CLAUDE_CODE_WINDOW


Level = Literal["messages", "system"]
_EXIT: tuple[tuple[str, Level], ...] = (("<command-name>/exit</command-name>", "system"),)
"""The trigger that ends the process: the next call is a resumption."""
_RESETS: tuple[tuple[str, Level], ...] = (
    ("<command-name>/mcp</command-name>", "system"),
    *_EXIT,
    ("<task-notification>", "messages"),
)
"""What Claude Code rewrites of its cache after a user message holding the marker (see the
module docstring); the first match wins."""


def _with_cache_resets(
    calls: Sequence[Call], resumes: Sequence[datetime] = ()
) -> tuple[tuple[Call, ...], tuple[int, ...]]:
    """``calls`` with ``cache_reset`` set where a new user message holds a reset trigger (new: past
    the previous request's messages, which a request extending it repeats as the same or equal
    messages), and ``"system"`` on the first call after each resume (a new process: its system
    prompt, with the git status and environment of that moment, is built anew); and the indices
    of those first calls."""
    out: list[Call] = []
    resumed: list[int] = []
    before: Sequence[Message] = ()
    previous: datetime | None = None
    for call in calls:
        messages = call.request.messages
        n = len(before)
        shared = extends(messages, before)
        reset = _reset_in(messages[n:]) if shared and out else None
        when = call.timestamp
        exited = reset == "system" and _reset_in(messages[n:], _EXIT) is not None
        if out and (exited or _resumed_between(previous, when, resumes)):
            reset = "system"
            resumed.append(len(out))
        out.append(call.model_copy(update={"cache_reset": reset}) if reset else call)
        before = messages
        previous = when if when is not None else previous
    return tuple(out), tuple(resumed)


READ_THROUGH = 0.9
"""A call that read this share of what the call before it had cached read through any trigger."""
MIN_CACHED = 1024
"""Below the smallest cacheable prefix the reads say nothing about a reset."""


def _read_through(calls: Sequence[Call]) -> tuple[tuple[Call, ...], list[int]]:
    """``calls`` with ``cache_reset`` cleared where the call's recorded reads show none (it read
    at least :data:`READ_THROUGH` of the previous call's cached end), and the indices cleared. A
    trigger says a reset may happen; the usage says whether it did."""
    out: list[Call] = []
    cleared: list[int] = []
    for i, call in enumerate(calls):
        prev = calls[i - 1].usage if i else None
        usage = call.usage
        if call.cache_reset is not None and prev is not None and usage is not None:
            cached = prev.cache_read + prev.cache_write
            if cached >= MIN_CACHED and usage.cache_read >= READ_THROUGH * cached:
                cleared.append(i)
                out.append(call.model_copy(update={"cache_reset": None}))
                continue
        out.append(call)
    return tuple(out), cleared


def _resumed_between(
    previous: datetime | None, when: datetime | None, resumes: Sequence[datetime]
) -> bool:
    if previous is None or when is None:
        return False
    return any(previous < t <= when for t in resumes)


def _reset_in(
    messages: Sequence[Message], triggers: Sequence[tuple[str, Level]] | None = None
) -> Level | None:
    """The reset a user text opening with a trigger (of ``triggers``, default all) asks for (the
    harness sends each as a text of its own; a text that only quotes one, further in, is not the
    harness's)."""
    texts = [t.lstrip() for m in messages if m.role == "user" for t in _texts(m)]
    for marker, level in _RESETS if triggers is None else triggers:
        if any(t.startswith(marker) for t in texts):
            return level
    return None


def _texts(message: Message) -> list[str]:
    if isinstance(message.content, str):
        return [message.content]
    return [b.text for b in message.content if isinstance(b, TextBlock)]


# --------------------------------------------------------------------------------------------------
# Subagents


def _sidechain_threads(records: Iterable[Rec]) -> list[list[Rec]]:
    """Sidechain records grouped by agent (``agentId``) or, in older files, by chain root."""
    threads: dict[str, list[Rec]] = {}
    for rec in records:
        threads.setdefault(_thread_key(rec), []).append(rec)
    return list(threads.values())


def _thread_key(rec: Rec) -> str:
    """The nearest ``agentId`` up the sidechain (a line may lack it), else the chain's root."""
    seen: set[int] = set()
    while rec.agent_id is None and rec.parent is not None and rec.parent.sidechain:
        if id(rec) in seen:
            break
        seen.add(id(rec))
        rec = rec.parent
    return f"agent:{rec.agent_id}" if rec.agent_id else f"root:{id(rec)}"


@dataclass
class _Link:
    agent_id: str | None
    tool_use_id: str | None
    notes: tuple[str, ...] = ()


def _inline_link(thread: list[Rec], parent: ParsedFile) -> _Link:
    agent = next((r.agent_id for r in thread if r.agent_id), None)
    first = next((r for r in sorted(thread, key=lambda r: r.order) if r.kind == "user"), None)
    prompt = None if first is None else _plain_text(first)
    tool_use = parent.agent_links.get(agent) if agent else None
    tool_use = tool_use or (parent.task_prompts.get(prompt) if prompt is not None else None)
    notes: tuple[str, ...] = ("sidechain written inline in the parent session file",)
    if tool_use is None:
        notes += ("no Task/Agent call in the parent session matches this sidechain",)
    root_uuid = first.uuid if first is not None else None
    return _Link(agent or root_uuid, tool_use, notes)


def _plain_text(rec: Rec) -> str:
    if rec.text is not None:
        return rec.text
    return "\n".join(b.text for b in rec.blocks if isinstance(b, TextBlock))


def _thread_session(
    path: Path, thread: list[Rec], state: _Read, parent_id: str | None, link: _Link
) -> Session:
    return _session(
        path,
        thread,
        state,
        session_id=link.agent_id,
        set_aside=Counter(),
        parent_session_id=parent_id,
        parent_tool_use_id=link.tool_use_id,
        notes=link.notes,
    )


PROGRESS_NOTE = (
    "subagent recorded only as agent_progress records in the parent file (no subagents/ file): "
    "its requests are rebuilt from those messages in file order"
)


def _progress_session(
    path: Path, agent: str, parsed: ParsedFile, state: _Read, parent_id: str | None
) -> Session:
    """The session of a subagent whose messages survive only in ``agent_progress`` records,
    with its last response from the Task result when the file holds it."""
    thread = list(parsed.progress[agent])
    notes = [PROGRESS_NOTE]
    final = parsed.agent_results.get(agent)
    usage = final.usage if final is not None else None
    if final is not None and usage is not None and not usage.total_input + usage.output_tokens:
        notes.append(
            f"the Task result at line {final.line} records all-zero usage for the subagent's last "
            "response (nothing billed): no call is taken from it"
        )
        final = None
    if final is not None:
        final.model = next((r.model for r in reversed(thread) if r.model), None)
        thread.append(final)
        notes.append(
            f"its last response (the answer returned to the parent) is recorded only in the "
            f"Task result at line {final.line} (toolUseResult content and usage): taken from there"
        )
    state.index.add(thread)
    return _session(
        path,
        thread,
        state,
        session_id=agent,
        set_aside=Counter(),
        parent_session_id=parent_id,
        parent_tool_use_id=parsed.agent_links.get(agent),
        notes=notes,
    )


def _agent_file_sessions(
    sub: ParsedFile, parent: ParsedFile | None, state: _Read, parent_id: str | None
) -> list[Session]:
    """The session(s) of one ``agent-*.jsonl`` file (one per agent; normally exactly one)."""
    out: list[Session] = []
    threads = _sidechain_threads(sub.records) if sub.records else [[]]
    for thread in threads:
        agent = next((r.agent_id for r in thread if r.agent_id), None)
        agent = agent or sub.path.stem.removeprefix("agent-")
        session = _session(
            sub.path,
            thread,
            state,
            session_id=agent,
            set_aside=sub.set_aside,
            parent_session_id=parent_id or _common_session_id(thread),
            parent_tool_use_id=parent.agent_links.get(agent) if parent else None,
            notes=(*_agent_notes(agent, parent), *sub.notes),
        )
        if agent.startswith("acompact"):  # Claude Code's own compaction request
            session = session.model_copy(update={"harness_compaction": True})
        out.append(session)
    return out


def _agent_notes(agent: str, parent: ParsedFile | None) -> tuple[str, ...]:
    if agent.startswith("acompact"):
        return (
            "summary request of an auto-compaction (agent-acompact-*): no tool call started it; "
            "its request continues the parent's history when the parent file is loaded",
        )
    if parent is None:
        return ()
    if agent not in parent.agent_links:
        return (f"no Task/Agent call in the parent session names agentId {agent}",)
    return ()


def _subagent_file_sessions(path: Path, parsed: ParsedFile, state: _Read) -> tuple[Session, ...]:
    """A subagent file loaded on its own: link it to its parent file when that is present."""
    parent_id = _common_session_id(parsed.records)
    expected = _parent_file(path, parent_id)
    parent = None
    if expected is not None and expected.is_file():
        parent = state.parse(expected, rank=-1)  # rank -1: its records precede the subagent's
        resolve_parents(parent.records, state.index)
    resolve_parents(parsed.records, state.index)
    sessions = _agent_file_sessions(parsed, parent, state, parent_id)
    if parent is None:
        missing = (
            f"parent session file {expected} not found" if expected else "parent session unknown"
        )
        note = (
            f"{missing}: loaded on its own, so parent_tool_use_id is unknown and history the "
            "subagent inherited from the parent (if any) is missing from its requests"
        )
        sessions = [s.model_copy(update={"notes": (*s.notes, note)}) for s in sessions]
    return tuple(sessions)


def _parent_file(path: Path, session_id: str | None) -> Path | None:
    """Where Claude Code puts the parent of ``<dir>/<session>/subagents/agent-*.jsonl``."""
    if path.parent.name != "subagents":
        return None
    folder = path.parent.parent
    # The folder is named after the session file; a renamed copy keeps the pair consistent.
    by_folder = folder.parent / f"{folder.name}.jsonl"
    if by_folder.is_file() or not session_id:
        return by_folder
    return folder.parent / f"{session_id}.jsonl"


def _common_session_id(records: Iterable[Rec]) -> str | None:
    counts = Counter(r.session_id for r in records if r.session_id)
    return counts.most_common(1)[0][0] if counts else None


__all__ = ["FORMAT", "READER", "ClaudeCodeReader", "load_claude_code", "looks_like_record"]
