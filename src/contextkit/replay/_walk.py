"""Walking a recording: recorded requests turned into tape increments, one thread per independent
conversation (see :mod:`._replay` for the contract). Shared by the replay and the oracle's planner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from contextkit.messages import Block, Conversation, Message, same_prefix
from contextkit.session import Call, Session

# --- walking the recording ---------------------------------------------------------------------


def _strip_marks(message: Message) -> Message:
    """The message without ``cache_control``: placement is the replay's own decision."""
    if isinstance(message.content, str) or not any(map(_marked, message.content)):
        return message
    blocks = tuple(_strip_block(b) for b in message.content)
    if all(a is b for a, b in zip(blocks, message.content, strict=True)):
        return message
    return message.model_copy(update={"content": blocks})


def _marked(block: Block) -> bool:
    extra = block.__pydantic_extra__  # the attribute: the model_extra property is slower
    return extra is not None and "cache_control" in extra


def _strip_block(block: Block) -> Block:
    extra = block.model_extra or {}
    if "cache_control" not in extra:
        return block
    payload = block.model_dump(mode="python", exclude_unset=True)
    payload.pop("cache_control")
    return type(block).model_validate(payload)


@dataclass
class _Thread:
    raw: Sequence[Message]
    """The messages of the recorded request this thread last made, as recorded."""
    sent: list[Message]
    """The same messages with their marks stripped (a list: a call extends it by what it
    appended, instead of copying the whole history into a new tuple)."""
    view: Conversation
    tape: Conversation
    tape_facts: set[str] = field(default_factory=set)
    """Recall facts the tape's messages hold, grown as messages append."""
    view_facts: set[str] = field(default_factory=set)
    """The same for the view, rebuilt when the strategy changes the view (the tape's own set
    while the strategy returns the tape: both grow by the same messages)."""
    tape_lines: set[str] = field(default_factory=set)
    """Copied-span lines (:mod:`._strict`) the tape's messages hold, kept like ``tape_facts``."""
    view_lines: set[str] = field(default_factory=set)


@dataclass
class _Walker:
    """Turns recorded requests into tape increments, one thread per independent conversation."""

    session: Session
    threads: list[_Thread] = field(default_factory=list)
    _stripped: dict[int, tuple[Message, Message]] = field(default_factory=dict)

    def strip(self, message: Message) -> Message:
        hit = self._stripped.get(id(message))
        if hit is None or hit[0] is not message:
            hit = (message, _strip_marks(message))
            self._stripped[id(message)] = hit
        return hit[1]

    def step(self, index: int, call: Call) -> tuple[_Thread, tuple[Message, ...]]:
        """The thread, and the messages the recording appended since its last request.

        What was appended is everything beyond the thread's previous request: the recorded
        response (as the harness sent it back) and the new user content. A request that repeats
        the thread's previous one (a retry) appends nothing."""
        raw = call.request.messages
        thread = self._match(raw)
        if thread is not None:
            new = tuple(map(self.strip, raw[len(thread.raw) :]))
            thread.sent += new
            thread.raw = raw
            return thread, new
        messages = tuple(map(self.strip, raw))
        if index in self.session.compactions and self.threads:
            thread = self.threads[-1]
            shared = _known(messages, thread.tape.messages)  # skip the summary, keep the new
        else:
            head = call.request.model_copy(update={"messages": ()})
            thread = _Thread(raw=(), sent=[], view=head, tape=head)
            self.threads.append(thread)
            shared = 0
        thread.raw, thread.sent = raw, list(messages)
        return thread, messages[shared:]

    def _match(self, raw: Sequence[Message]) -> _Thread | None:
        """The newest thread whose previous request ``raw`` continues (or repeats)."""
        for thread in reversed(self.threads):
            n = len(thread.raw)
            if n and len(raw) >= n and (_grew(thread.raw, raw) or self._continues(raw[:n], thread)):
                return thread
        return None

    def _continues(self, prefix: Sequence[Message], thread: _Thread) -> bool:
        # Identity first (tuple comparison checks it in C before equality, and readers share
        # message objects between requests); a message that differs only by a moved cache mark
        # compares equal once stripped.
        if prefix == thread.raw:
            return True
        pairs = zip(prefix, thread.raw, thread.sent, strict=True)
        return all(a is b or self.strip(a) == s for a, b, s in pairs)


def _grew(before: Sequence[Message], raw: Sequence[Message]) -> bool:
    """``raw[: len(before)] == before`` without the slice (which copied the whole history at every
    call): O(1) for histories of one list, else one comparison in C (:func:`same_prefix`); a
    request that does not plainly continue is decided by :meth:`_Walker._continues`."""
    last = len(before) - 1
    if raw[last] is not before[last]:
        return False  # the common miss (another thread, a moved cache mark), decided in O(1)
    return same_prefix(before, raw, len(before))


def _known(messages: Sequence[Message], tape: Sequence[Message]) -> int:
    """After a harness compaction: how many leading messages are the harness's artefacts or
    content the tape already holds (the summary first, then anything already seen: a message
    whose JSON is that of a tape message). Only tape messages of the same signature (implied by
    equal JSON) are serialised: not the whole tape, whose tool results dominate."""
    by_signature: dict[object, list[Message]] = {}
    for message in tape:
        by_signature.setdefault(_signature(message), []).append(message)
    skip = 1  # the summary the harness wrote
    while skip < len(messages) and _seen(messages[skip], by_signature):
        skip += 1
    return min(skip, len(messages))


def _seen(message: Message, by_signature: dict[object, list[Message]]) -> bool:
    alike = by_signature.get(_signature(message))
    if not alike:
        return False
    key = _key(message)
    return any(_key(m) == key for m in alike)


def _key(message: Message) -> str:
    return message.model_dump_json()


_IDENTIFYING = {
    "text": "text",
    "tool_use": "id",
    "tool_result": "tool_use_id",
    "thinking": "signature",
}
"""Per block type, a field that identifies a block well (ids are unique per call)."""


def _signature(message: Message) -> object:
    """A cheap key that equal JSON (:func:`_key`) implies: the role, and per block its type and
    identifying field (the same whatever the block's class: read by the ``type`` it writes)."""
    content = message.content
    if isinstance(content, str):
        return (message.role, content)
    blocks = []
    for block in content:
        kind = getattr(block, "type", None)
        field_name = _IDENTIFYING.get(kind) if isinstance(kind, str) else None
        value = getattr(block, field_name, None) if field_name else None
        blocks.append((kind, value if isinstance(value, str) else None))  # always hashable
    return (message.role, tuple(blocks))


def _with_head(view: Conversation, request: Conversation, new: Sequence[Message]) -> Conversation:
    """The view under the recorded request's head (system, tools, params) plus the new messages."""
    if _same_head(view, request):
        return view.append(*new) if new else view
    return request.model_copy(update={"messages": (*view.messages, *new)})


def _same_head(view: Conversation, request: Conversation) -> bool:
    """Whether ``view`` and ``request`` are equal but for their messages: what pydantic's ``==``
    compares (type, extras, fields), field by field, without copying either."""
    if type(view) is not type(request):
        bare = {"messages": ()}
        return view.model_copy(update=bare) == request.model_copy(update=bare)
    return (
        view.model == request.model
        and view.system == request.system
        and view.tools == request.tools
        and view.__pydantic_extra__ == request.__pydantic_extra__
    )


__all__ = ["_Thread", "_Walker", "_known", "_with_head"]
