"""Engine checkpoints: the tape, the view, every call and receipt, as an append-only journal.

The file is JSON lines: a header line, then one *delta* line per save. Each line is written with a
single ``write`` ending in a newline and flushed (``fsync`` too unless ``fsync=False``), so a save
costs what changed since the previous save, not the whole history again (a rewrite per save made a
300-call loop quadratic in time and disk). A kill at any moment leaves at most one torn last line
(it lacks its newline); the reader ignores it and returns the last complete state, so the file is
loadable at every instant, also while a writer is appending. The first save (and ``rewrite``)
writes a fresh file via a temporary file and a rename.

Messages are stored once each, by content: a request message that differs from a stored one only
by ``cache_control`` marks is stored as a reference plus its marks, so per-call requests with
breakpoints cost a few integers, not another copy of each marked message. A line is::

    {"messages": [payload, ...], "heads": [head, ...], "tape": [keep, [ref, ...]],
     "view": [head, keep, [ref, ...]], "calls": [...], "receipts": [...]}

where ``keep`` is how many leading entries of the previous value stay and every key is optional.

Reading validates everything; a file that is not a checkpoint, or a damaged line before the last,
is a :class:`CheckpointError` naming the file and line. Repairs (a ``tool_use`` left without its
result) are the engine's job (``ContextEngine.resume``), not the reader's.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contextkit.errors import ContextkitError
from contextkit.messages import Conversation, Message, to_payload
from contextkit.session import Call, Usage
from contextkit.strategies.base import Receipt

CHECKPOINT_FORMAT = "contextkit-checkpoint"
CHECKPOINT_VERSION = 2
_HEADER = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION}


class CheckpointError(ContextkitError):
    """A checkpoint file cannot be used."""


@dataclass(frozen=True)
class EngineState:
    """What a checkpoint holds."""

    tape: tuple[Message, ...]
    view: Conversation
    calls: tuple[Call, ...]
    receipts: tuple[Receipt, ...]


_EMPTY = EngineState(tape=(), view=Conversation(), calls=(), receipts=())


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _shared(old: Sequence[object], new: Sequence[object]) -> int:
    """How many leading items are the very same objects (C-speed check first: usually all)."""
    n = min(len(old), len(new))
    if list(map(id, old[:n])) == list(map(id, new[:n])):
        return n
    return next(i for i in range(n) if old[i] is not new[i])


def _strip_marks(payload: dict[str, Any]) -> list[list[Any]]:
    """Remove ``cache_control`` from the payload's blocks; return ``[[block, mark], ...]``."""
    content = payload.get("content")
    if not isinstance(content, list):
        return []
    marks = []
    for j, block in enumerate(content):
        if isinstance(block, dict) and "cache_control" in block:
            marks.append([j, block.pop("cache_control")])
    return marks


def _head(conversation: Conversation) -> dict[str, Any]:
    """The request without its messages (dumped without them: they can be many)."""
    return conversation.model_dump(
        mode="json", exclude_unset=True, by_alias=True, exclude={"messages"}
    )


class _Table:
    """Messages and heads stored so far, found by identity first, then by content."""

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[Message, int | list[Any]]] = {}
        self.by_text: dict[str, int] = {}
        self.heads: dict[str, int] = {}
        self.new_messages: list[dict[str, Any]] = []
        self.new_heads: list[dict[str, Any]] = []

    def ref(self, message: Message) -> int | list[Any]:
        """An int (stored message) or ``[int, marks]`` (a stored message plus its marks)."""
        hit = self.by_id.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        payload = to_payload(message)
        marks = _strip_marks(payload)
        text = _dumps(payload)
        index = self.by_text.get(text)
        if index is None:
            index = self.by_text[text] = len(self.by_text)
            self.new_messages.append(payload)
        found: int | list[Any] = [index, marks] if marks else index
        self.by_id[id(message)] = (message, found)  # the stored object keeps its id unique
        return found

    def head(self, conversation: Conversation) -> int:
        payload = _head(conversation)
        text = _dumps(payload)
        index = self.heads.get(text)
        if index is None:
            index = self.heads[text] = len(self.heads)
            self.new_heads.append(payload)
        return index

    def take(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.new_messages:
            out["messages"], self.new_messages = self.new_messages, []
        if self.new_heads:
            out["heads"], self.new_heads = self.new_heads, []
        return out


class _Encoder:
    """Turns successive states into delta lines; remembers what the file already holds."""

    def __init__(self) -> None:
        self.table = _Table()
        self.last = _EMPTY

    def delta(self, state: EngineState) -> dict[str, Any]:
        last, table = self.last, self.table
        line: dict[str, Any] = {}
        if state.tape is not last.tape:
            keep = _shared(last.tape, state.tape)
            line["tape"] = [keep, [table.ref(m) for m in state.tape[keep:]]]
        if state.view is not last.view:
            keep = _shared(last.view.messages, state.view.messages)
            added = [table.ref(m) for m in state.view.messages[keep:]]
            line["view"] = [table.head(state.view), keep, added]
        if len(state.calls) > len(last.calls):
            previous = last.calls[-1].request.messages if last.calls else ()
            line["calls"] = []
            for call in state.calls[len(last.calls) :]:
                line["calls"].append(self._call(call, previous))
                previous = call.request.messages
        if len(state.receipts) > len(last.receipts):
            line["receipts"] = [r.model_dump() for r in state.receipts[len(last.receipts) :]]
        self.last = state
        return {**table.take(), **line}

    def _call(self, call: Call, previous: tuple[Message, ...]) -> dict[str, Any]:
        keep = _shared(previous, call.request.messages)
        return {
            "head": self.table.head(call.request),
            "messages": [keep, [self.table.ref(m) for m in call.request.messages[keep:]]],
            "response": self.table.ref(call.response) if call.response else None,
            "usage": call.usage.model_dump() if call.usage else None,
            "model": call.model,
            "timestamp": call.timestamp.isoformat() if call.timestamp else None,
            "stop_reason": call.stop_reason,
            "request_id": call.request_id,
        }


def encode_checkpoint(state: EngineState) -> dict[str, Any]:
    """The whole state as one delta line (from the empty state), JSON-ready."""
    return _Encoder().delta(state)


class CheckpointWriter:
    """Saves successive states of one engine to ``path``: a fresh file first, then deltas."""

    def __init__(self, path: str | Path, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._encoder: _Encoder | None = None

    def save(self, state: EngineState) -> None:
        if self._encoder is None:
            self.rewrite(state)
            return
        line = self._encoder.delta(state)
        if not line:
            return
        # Opened per save (no handle left open between saves); one write with the newline last,
        # so a kill mid-write leaves a line the reader sees as torn and skips.
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(_dumps(line) + "\n")
            fh.flush()
            if self.fsync:
                os.fsync(fh.fileno())

    def rewrite(self, state: EngineState) -> None:
        """Start the file again with ``state`` alone (atomically: temporary file and rename)."""
        self._encoder = _Encoder()
        first = self._encoder.delta(state)
        write_atomic(self.path, _dumps(_HEADER) + "\n" + _dumps(first) + "\n", fsync=self.fsync)


def write_atomic(path: Path, text: str, *, fsync: bool = True) -> None:
    """Write via a temporary file in the same folder and rename: never a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- reading --------------------------------------------------------------------------------------


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Complete lines as JSON objects; a torn last line (no newline yet) is left out."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not a readable checkpoint ({exc})") from None
    complete = text.split("\n")[:-1]  # what follows the last newline is torn or empty
    for number, raw in enumerate(complete, start=1):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise CheckpointError(f"{path}:{number}: damaged checkpoint line ({exc})") from None
        if not isinstance(data, dict):
            raise CheckpointError(f"{path}:{number}: damaged checkpoint line (not an object)")
        yield number, data


class _Decoder:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.heads: list[Conversation] = []
        self.tape: list[Message] = []
        self.view_head = 0
        self.view: list[Message] = []
        self.calls: list[Call] = []
        self.receipts: list[Receipt] = []

    def message(self, ref: int | list[Any]) -> Message:
        if isinstance(ref, int):
            return self.messages[ref]
        index, marks = ref
        payload = to_payload(self.messages[index])
        for j, mark in marks:
            payload["content"][j]["cache_control"] = mark
        return Message.model_validate(payload)

    def apply(self, line: dict[str, Any]) -> None:
        self.messages.extend(Message.model_validate(m) for m in line.get("messages", ()))
        self.heads.extend(Conversation.model_validate(h) for h in line.get("heads", ()))
        if "tape" in line:
            keep, refs = line["tape"]
            self.tape[keep:] = [self.message(r) for r in refs]
        if "view" in line:
            self.view_head, keep, refs = line["view"]
            self.view[keep:] = [self.message(r) for r in refs]
        for call in line.get("calls", ()):
            self.calls.append(self._call(call))
        self.receipts.extend(Receipt.model_validate(r) for r in line.get("receipts", ()))

    def _call(self, data: dict[str, Any]) -> Call:
        keep, refs = data["messages"]
        previous = self.calls[-1].request.messages[:keep] if self.calls else ()
        messages = (*previous, *(self.message(r) for r in refs))
        return Call(
            request=self.heads[data["head"]].model_copy(update={"messages": messages}),
            response=self.message(data["response"]) if data["response"] is not None else None,
            usage=Usage.model_validate(data["usage"]) if data["usage"] else None,
            model=data["model"],
            timestamp=data["timestamp"],
            stop_reason=data["stop_reason"],
            request_id=data["request_id"],
            exact=True,
        )

    def state(self) -> EngineState:
        head = self.heads[self.view_head] if self.heads else Conversation()
        return EngineState(
            tape=tuple(self.tape),
            view=head.model_copy(update={"messages": tuple(self.view)}),
            calls=tuple(self.calls),
            receipts=tuple(self.receipts),
        )


def read_checkpoint(path: str | Path) -> EngineState:
    """The last complete state saved in ``path`` (no repair: the engine does that)."""
    path = Path(path)
    decoder = _Decoder()
    header_seen = False
    for number, line in _lines(path):
        if not header_seen:
            _check_header(path, line)
            header_seen = True
            continue
        try:
            decoder.apply(line)
        except (KeyError, IndexError, TypeError, ValueError, ValidationError) as exc:
            detail = f"{type(exc).__name__}: {exc}".splitlines()[0]
            raise CheckpointError(f"{path}:{number}: damaged checkpoint line ({detail})") from None
    if not header_seen:
        raise CheckpointError(f"{path}: empty or torn checkpoint (no complete header line)")
    return decoder.state()


def _check_header(path: Path, line: dict[str, Any]) -> None:
    if line.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}:1: not a contextkit checkpoint")
    if line.get("version") != CHECKPOINT_VERSION:
        version = line.get("version")
        raise CheckpointError(f"{path}:1: checkpoint version {version} is not supported")


__all__ = [
    "CHECKPOINT_FORMAT",
    "CHECKPOINT_VERSION",
    "CheckpointError",
    "CheckpointWriter",
    "EngineState",
    "encode_checkpoint",
    "read_checkpoint",
    "write_atomic",
]
