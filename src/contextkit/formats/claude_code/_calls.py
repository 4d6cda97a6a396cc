"""Claude Code transcripts, step 2: records of one thread to model calls.

Contract of :func:`build_calls` (one thread = the main conversation or one subagent):

- One call per response: the thread's assistant records grouped by ``requestId`` (else
  ``message.id``), in order of their first line. The response is those lines' blocks merged into one
  assistant :class:`Message`; ``usage`` is the last line's usage (each line carries a copy, the last
  one is the final count); ``stop_reason`` is the last one recorded, or inferred from the content
  when every line says null (recent versions write lines while streaming, before the stop reason is
  known) and the session notes say how many were inferred.
- The request is the conversation as the API received it: walk ``parentUuid`` back from the
  response's first line (through progress and system records, stopping at a ``compact_boundary``, so
  a call after a compaction starts with the summary message), then take the user/assistant records
  on that chain in file order. Parallel tool results hang off the chain on side branches (each
  result's parent is the assistant line holding its ``tool_use``): a record answering a ``tool_use``
  of the chain that the chain leaves unanswered is taken in. Every record of a response makes one
  assistant message, even when tool results were written between its lines (tools run while the
  response streams); the user records after it make one user message, tool results first, which is
  the order the API requires.
- Attachment records (their rendered ``<system-reminder>`` text) join the user message they follow
  as Claude Code 2.1.x sends them: where it answers tools, appended to the last tool result's
  content (texts trimmed and joined by blank lines); otherwise before the prompt's own blocks
  (the client moves attachments up past the prompt they follow). The client sends each record as
  a message and merges consecutive user messages: from version 2.1 (:data:`SEAM_SINCE`), where
  one ends with a text and the next starts with one, the first text gets a newline (the
  attachments of one turn make one message). Seen in 2.1.197's requests and not in 1.0.6's (the
  claude-trace corpus file); the versions between were not observed, so the boundary is a guess.
- After a compaction whose boundary names a ``preservedSegment`` (head, anchor, tail), the records
  from head to tail follow the anchor (the summary message): the client kept them verbatim and
  sends them after the summary, though the file wrote them before the boundary.
- Messages are memoised per read by the records they are made of, so consecutive requests share
  the same :class:`Message` objects for their common history, and a call's response is the very
  object that the next request holds.
- Linear in the calls: a request is built by extending the previous one with the records its chain
  adds (:class:`_Request`), and from the whole chain only where extending could differ from that
  (the chain branches or crosses a compaction, records sort into the earlier request, a result
  written since answers an earlier ``tool_use``). Both give the same messages; a test compares them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from contextkit.formats.claude_code._records import Rec
from contextkit.messages import (
    Block,
    Conversation,
    DocumentBlock,
    History,
    ImageBlock,
    Message,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.models import route_of_response
from contextkit.session import Call


@dataclass
class Index:
    """Lookups over every record a read can reach (a subagent's chain may run into its parent)."""

    by_uuid: dict[str, Rec] = field(default_factory=dict)
    groups: dict[str, list[Rec]] = field(default_factory=dict)
    """Response key -> its assistant records, in order."""
    results: dict[str, list[Rec]] = field(default_factory=dict)
    """tool_use id -> user records holding a tool_result for it, in order."""

    def add(self, records: Iterable[Rec]) -> None:
        for rec in records:
            if rec.uuid is not None:
                self.by_uuid.setdefault(rec.uuid, rec)
            if rec.kind == "assistant" and rec.key is not None:
                self.groups.setdefault(rec.key, []).append(rec)
            elif rec.kind == "user":
                for block in rec.blocks:
                    if isinstance(block, ToolResultBlock):
                        self.results.setdefault(block.tool_use_id, []).append(rec)


@dataclass
class Built:
    calls: list[Call]
    compactions: list[int]
    notes: list[str]


MessageMemo = dict[tuple[Role, tuple[Rec, ...]], Message]


def resolve_parents(records: Iterable[Rec], index: Index) -> None:
    """Point each record at its parent record (None for a root or a parent the read lacks)."""
    for rec in records:
        parent = index.by_uuid.get(rec.parent_uuid) if rec.parent_uuid else None
        rec.parent = parent if parent is not rec else None


def link_in_file_order(records: Sequence[Rec]) -> bool:
    """For a thread without a single resolvable link, make each record the next one's parent.

    Some transcripts (hand-made ones, old exports) write ``parentUuid`` null on every line; file
    order is then the only order there is. Returns True when it had to do this.
    """
    if len(records) < 2 or any(r.parent is not None for r in records):
        return False
    for before, rec in pairwise(records):
        rec.parent = before
    return True


def build_calls(records: Sequence[Rec], index: Index, memo: MessageMemo) -> Built:
    """The calls of one thread (its records in file order)."""
    groups: dict[str, list[Rec]] = {}
    for rec in records:
        if rec.kind == "assistant" and rec.key is not None:
            groups.setdefault(rec.key, []).append(rec)
    out = Built([], [], [])
    inferred = 0
    boundary_before: Rec | None = None
    prefix = _Request()
    for group in groups.values():
        prefix = _next_request(prefix, group[0], index, memo)
        chain = prefix.chain
        boundary = chain[0] if chain and chain[0].kind == "boundary" else None
        if boundary is not None and boundary is not boundary_before:
            out.compactions.append(len(out.calls))
            out.notes.append(_compaction_note(len(out.calls), boundary))
        boundary_before = boundary
        call, guessed = _call(group, prefix.messages, memo)
        inferred += guessed
        out.calls.append(call)
    if inferred:
        out.notes.append(
            f"stop_reason inferred from the response content for {inferred} of "
            f"{len(out.calls)} calls (the file records null: lines are written while streaming)"
        )
    return out


def _next_request(prefix: _Request, first: Rec, index: Index, memo: MessageMemo) -> _Request:
    """The request of ``first``: the previous one extended when it is a prefix of it, else
    built from scratch (after a compaction, a branch, records out of file order)."""
    if prefix.extendable and prefix.first is not None and prefix.first.order < first.order:
        new = _walk_to(prefix, first)
        if new is not None and _grow(prefix, new, first, index, memo, _file_order):
            prefix.first = first
            return prefix
    return _scratch(first, index, memo)


def _scratch(first: Rec, index: Index, memo: MessageMemo) -> _Request:
    chain = _chain(first)
    boundary = chain[0] if chain and chain[0].kind == "boundary" else None
    preserved = _preserved(boundary, chain, index)
    state = _Request(extendable=preserved.anchor is None)
    grown = _grow(state, chain, first, index, memo, preserved.key)
    assert grown  # from the empty request every check holds
    state.first = first
    return state


def _walk_to(prefix: _Request, first: Rec) -> list[Rec] | None:
    """The records from the end of the previous chain to ``first`` (exclusive), in chain order;
    None when the chain of ``first`` does not run through the previous chain's last record."""
    new: list[Rec] = []
    seen: set[int] = set()
    cur = first.parent
    end = prefix.chain[-1] if prefix.chain else None
    while cur is not None and cur is not end:
        if cur.kind == "boundary" or id(cur) in seen or id(cur) in prefix.in_chain:
            return None
        seen.add(id(cur))
        new.append(cur)
        cur = cur.parent
    if cur is None:
        return None
    new.reverse()
    return new


def _chain(first: Rec) -> list[Rec]:
    """The records before ``first``, root first, up to (and including) a compaction boundary."""
    out: list[Rec] = []
    seen: set[int] = set()
    cur = first.parent
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        out.append(cur)
        if cur.kind == "boundary":
            break
        cur = cur.parent
    out.reverse()
    return out


SEAM_SINCE = (2, 1)
_Order = tuple[tuple[int, int], tuple[int, int]]
_MESSAGE_KINDS = ("user", "assistant", "attachment")


@dataclass
class _Preserved:
    """A compaction's preserved segment: its records, sent right after the anchor."""

    anchor: Rec | None = None
    records: set[int] = field(default_factory=set)
    """ids of the segment's records."""

    def key(self, rec: Rec) -> _Order:
        """File order, except that the segment (and results hanging off it) follows the anchor."""
        parent = rec.parent
        inside = id(rec) in self.records or (parent is not None and id(parent) in self.records)
        if self.anchor is not None and inside:
            return (self.anchor.order, rec.order)
        return (rec.order, (-1, -1))


def _preserved(boundary: Rec | None, chain: list[Rec], index: Index) -> _Preserved:
    """The boundary's preserved segment, spliced into ``chain`` after its anchor."""
    segment = (boundary.meta or {}).get("preservedSegment") if boundary is not None else None
    if not isinstance(segment, Mapping):
        return _Preserved()
    anchor = index.by_uuid.get(str(segment.get("anchorUuid")))
    cur = index.by_uuid.get(str(segment.get("tailUuid")))
    head = segment.get("headUuid")
    records: list[Rec] = []
    while cur is not None and len(records) <= len(index.by_uuid):
        records.append(cur)
        if cur.uuid == head:
            break
        cur = cur.parent
    if anchor is None or anchor not in chain or not records or records[-1].uuid != head:
        return _Preserved()
    at = chain.index(anchor) + 1
    chain[at:at] = [r for r in reversed(records) if r not in chain]
    return _Preserved(anchor, {id(r) for r in records})


_NO_ORDER = (-1, -1)


def _file_order(rec: Rec) -> _Order:
    return (rec.order, _NO_ORDER)


@dataclass(eq=False)
class _Request:
    """One request's records, kept so that the next request can extend it in time proportional
    to what it adds (each request is the previous one plus a response and its results, so
    rebuilding it from its whole chain made a load quadratic in its calls)."""

    extendable: bool = True
    """False after a compaction with a preserved segment (its records sort out of file order)."""
    first: Rec | None = None
    chain: list[Rec] = field(default_factory=list)
    in_chain: set[int] = field(default_factory=set)
    items: set[int] = field(default_factory=set)
    """ids of the chain's message records and of the side results taken in."""
    last_order: tuple[int, int] = _NO_ORDER
    keys: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    """tool_use ids the chain or a side result answers."""
    chain_answered: set[str] = field(default_factory=set)
    side_taken: set[str] = field(default_factory=set)
    """tool_use ids a side result was taken in for (the chain left them unanswered)."""
    waiting: list[str] = field(default_factory=list)
    """tool_use ids asked and left unanswered, with results somewhere in the read."""
    complete: bool = True
    """Every response placed holds all its lines (none written after the request's response)."""
    segments: list[tuple[Role, list[Rec]]] = field(default_factory=list)
    placed: set[str] = field(default_factory=set)
    messages: History[Message] = field(default_factory=History)
    """The request so far: a view of one list the next requests extend (no copy per call)."""


def _grow(
    state: _Request,
    new: list[Rec],
    first: Rec,
    index: Index,
    memo: MessageMemo,
    key: Callable[[Rec], _Order],
) -> bool:
    """Extend ``state`` by the chain records ``new`` for the response starting at ``first``;
    False (``state`` then unusable) when the result would differ from a rebuild."""
    items = [r for r in new if r.kind in _MESSAGE_KINDS]
    if items and min(r.order for r in items) <= state.last_order:
        return False  # a record sorts into the earlier request
    asked, answered = _asked(items, first, index, state.keys)
    if answered & state.side_taken or not state.complete:
        return False
    state.chain.extend(new)
    state.in_chain.update(map(id, new))
    state.items.update(map(id, items))
    state.chain_answered |= answered
    state.answered |= answered
    for tool_id in state.waiting:
        if tool_id not in state.answered and _side_result(tool_id, first, index, state):
            return False  # a result written since answers an earlier tool_use
    state.waiting = [t for t in state.waiting if t not in state.answered]
    extra: list[Rec] = []
    for tool_id in asked:
        if tool_id in state.answered:
            continue
        rec = _side_result(tool_id, first, index, state)
        if rec is None:
            if index.results.get(tool_id):
                state.waiting.append(tool_id)
            continue
        if rec.order <= state.last_order:
            return False
        extra.append(rec)
        state.items.add(id(rec))
        state.side_taken.add(tool_id)
        state.answered.update(b.tool_use_id for b in rec.blocks if isinstance(b, ToolResultBlock))
    tail = sorted([*items, *extra], key=key)
    if tail:
        state.last_order = max(state.last_order, *(r.order for r in tail))
    _place(state, tail, first, index, memo)
    return True


def _asked(
    items: list[Rec], first: Rec, index: Index, keys: set[str]
) -> tuple[list[str], set[str]]:
    """The tool_use ids ``items`` ask (in order) and the ids they answer; ``keys`` (responses
    already read) grows."""
    asked: list[str] = []
    answered: set[str] = set()
    for rec in items:
        if rec.key is not None and rec.key in keys:
            continue
        for block in _response_blocks(rec, first, index):
            if isinstance(block, ToolUseBlock):
                asked.append(block.id)
            elif isinstance(block, ToolResultBlock):
                answered.add(block.tool_use_id)
        if rec.key is not None:
            keys.add(rec.key)
    return asked, answered


def _side_result(tool_id: str, first: Rec, index: Index, state: _Request) -> Rec | None:
    """The first record off the chain, before the response, answering ``tool_id``."""
    for rec in index.results.get(tool_id, ()):
        if rec.order < first.order and id(rec) not in state.items:
            return rec
    return None


def _place(state: _Request, tail: list[Rec], first: Rec, index: Index, memo: MessageMemo) -> None:
    """Group ``tail`` into messages after those of ``state``: a response's lines make one
    assistant message, the records between responses one user message."""
    segments = state.segments
    keep = len(segments)
    for rec in tail:
        if rec.kind == "assistant":
            assert rec.key is not None  # assistant records always get a key
            if rec.key in state.placed:
                continue  # the whole response went in at its first line
            state.placed.add(rec.key)
            group = index.groups[rec.key]
            lines = [r for r in group if r.order < first.order]
            state.complete = state.complete and len(lines) == len(group)
            segments.append(("assistant", lines))
        elif segments and segments[-1][0] == "user":
            if len(segments) == keep:
                keep -= 1
                segments[-1] = ("user", [*segments[-1][1], rec])
            else:
                segments[-1][1].append(rec)
        else:
            segments.append(("user", [rec]))
    fresh = tuple(_message(role, recs, memo) for role, recs in segments[keep:])
    state.messages = state.messages[:keep].extended(fresh)


def _response_blocks(rec: Rec, first: Rec, index: Index) -> tuple[Block, ...]:
    if rec.kind != "assistant" or rec.key is None:
        return rec.blocks
    # A response's tool_use lines may sit off the chain when results branch; take them all.
    return tuple(b for r in index.groups[rec.key] if r.order < first.order for b in r.blocks)


def _message(role: Role, recs: list[Rec], memo: MessageMemo) -> Message:
    key = (role, tuple(recs))
    found = memo.get(key)
    if found is not None:
        return found
    if role == "user" and len(recs) == 1 and recs[0].text is not None:
        message = Message(role="user", content=recs[0].text)
    elif role == "user":
        message = Message(role=role, content=tuple(_user_blocks(recs)))
    else:
        message = Message(role=role, content=tuple(_sendable([b for r in recs for b in r.blocks])))
    memo[key] = message
    return message


def _user_blocks(recs: list[Rec]) -> list[Block]:
    """Tool results first (the API rejects text before them); attachments' reminders merged into
    the last result, or else before the prompt (see the module docstring)."""
    said = [b for r in recs if r.kind != "attachment" for b in r.blocks]
    reminders = [b for r in recs if r.kind == "attachment" for b in r.blocks]
    results = [b for b in said if isinstance(b, ToolResultBlock)]
    others = [b for b in said if not isinstance(b, ToolResultBlock)]
    if not results:
        parts = [reminders, *(list(r.blocks) for r in recs if r.kind != "attachment")]
        seams = any(r.version is not None and r.version >= SEAM_SINCE for r in recs)
        return _joined(parts) if seams else [b for part in parts for b in part]
    return [*results[:-1], *_with_reminders(results[-1], reminders), *others]


def _joined(parts: list[list[Block]]) -> list[Block]:
    """The parts (one per message the client merges) as one content: where a text ends one part
    and a text starts the next, the first gets a newline, as the client joins them."""
    out: list[Block] = []
    for part in parts:
        last = out[-1] if out else None
        if part and isinstance(last, TextBlock) and isinstance(part[0], TextBlock):
            out[-1] = TextBlock(text=last.text + "\n")
        out.extend(part)
    return out


def _with_reminders(result: ToolResultBlock, reminders: list[Block]) -> list[Block]:
    """``result`` with the reminder texts appended to its content, as the client merges them."""
    texts = [b.text.strip() for b in reminders if isinstance(b, TextBlock)]
    content = result.content
    has_media = isinstance(content, tuple) and any(
        isinstance(b, ImageBlock | DocumentBlock) for b in content
    )
    if not reminders or has_media or len(texts) != len(reminders):
        return [result, *reminders]
    fields = result.model_dump(exclude_unset=True, exclude={"content"})
    if content is None or isinstance(content, str):
        joined = "\n\n".join(t for t in [(content or "").strip(), *texts] if t)
        return [ToolResultBlock(**fields, content=joined)]
    return [ToolResultBlock(**fields, content=_merged_texts([*content, *map(_text, texts)]))]


def _text(text: str) -> TextBlock:
    return TextBlock(text=text)


def _merged_texts(blocks: list[Block]) -> tuple[Block, ...]:
    """Texts trimmed, empty ones dropped, neighbours joined by a blank line."""
    out: list[Block] = []
    for block in blocks:
        if not isinstance(block, TextBlock):
            out.append(block)
            continue
        text = block.text.strip()
        last = out[-1] if out else None
        if text and isinstance(last, TextBlock):
            out[-1] = TextBlock(text=f"{last.text}\n\n{text}")
        elif text:
            out.append(TextBlock(text=text))
    return tuple(out)


def _sendable(blocks: list[Block]) -> list[Block]:
    """Without whitespace-only text blocks: models emit them between thinking and tool calls, but
    the API rejects them in a request, so Claude Code does not send them back."""
    kept = [b for b in blocks if not (isinstance(b, TextBlock) and not b.text.strip())]
    return kept or blocks


def _call(group: list[Rec], messages: Sequence[Message], memo: MessageMemo) -> tuple[Call, int]:
    first = group[0]
    response = _message("assistant", group, memo)
    usage = next((r.usage for r in reversed(group) if r.usage is not None), None)
    model = next((r.model for r in reversed(group) if r.model), None)
    stop = next((r.stop_reason for r in reversed(group) if r.stop_reason), None)
    guessed = 0
    if stop is None:
        guessed = 1
        stop = "tool_use" if any(True for _ in response.tool_uses()) else "end_turn"
    call = Call(
        request=Conversation(model=model).with_messages(messages),  # the history itself
        response=response,
        usage=usage,
        model=model,
        timestamp=first.timestamp,
        stop_reason=stop,
        request_id=next((r.request_id for r in group if r.request_id), None),
        route=route_of_response(next((r.message_id for r in group if r.message_id), None)),
        exact=False,
        line=first.line,
    )
    return call, guessed


def _compaction_note(index: int, boundary: Rec) -> str:
    meta: Mapping[str, object] = boundary.meta or {}
    trigger, pre = meta.get("trigger", "unknown"), meta.get("preTokens", "unknown")
    return (
        f"call {index} follows a compaction (line {boundary.line}, trigger {trigger}, "
        f"{pre} tokens before): its request starts with the summary"
    )
