"""Engine checkpoints: the tape, the view, every call and receipt, as an append-only journal.

The file is a sequence of records, one a line: a header record, then one *delta* record per save.
A record is ``<length> <crc32> <json>\n`` (the byte length and CRC-32, in hex, of the JSON text),
written with a single ``write`` ending in the newline and flushed (``fsync`` too unless
``fsync=False``), so a save costs what changed since the previous save, not the whole history
again (a rewrite per save made a 300-call loop quadratic in time and disk). The first save (and
``rewrite``) writes a fresh file via a temporary file and a rename.

Failure, and what survives it:

- A kill at any moment leaves at most one torn record at the end (bytes after the last newline).
  The reader cuts it and returns the last complete state with a note (``EngineState.notes``;
  ``ContextEngine.resume`` turns it into a receipt and rewrites the file without it), so the file
  is loadable at every instant, also while a writer is appending.
- A failed write (disk full, a file size limit) is undone: the file is truncated back to its last
  complete record and the writer forgets what it thought the file held, so the next save writes
  the whole state again (atomically); the save raises :class:`CheckpointError` and the engine
  restores its state from before the call, so the same call can be made again.
- One writer per path: a writer holds an exclusive ``flock`` on ``<path>.lock`` (the path with its
  links resolved, so an alias locks the same file; it checks before every write that the lock file
  is still the one it holds, and takes it again, or stops, if it was removed or replaced; mode
  0600, it names the holding process) from its creation until it is closed or collected; a writer in
  another process gets a :class:`CheckpointError`. Within one process the newest writer takes the
  path over (``ContextEngine.resume`` after a failure) and an older one is refused on its next
  save.

Messages are stored once each, by content: a request message that differs from a stored one only
by ``cache_control`` marks is stored as a reference plus its marks, so per-call requests with
breakpoints cost a few integers, not another copy of each marked message. A record's JSON is::

    {"messages": [payload, ...], "heads": [head, ...], "tape": [keep, [ref, ...]],
     "view": [head, keep, [ref, ...]], "calls": [...], "receipts": [...]}

where ``keep`` is how many leading entries of the previous value stay and every key is optional.

Reading validates everything; a file that is not a checkpoint, or a damaged record before the
last, is a :class:`CheckpointError` naming the file and line, and never quoting the file's
content. Version 2 files (JSON lines without length and checksum) are still read. Repairs (a
``tool_use`` left without its result) are the engine's job (``ContextEngine.resume``), not the
reader's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contextkit.engine._errors import CheckpointError
from contextkit.engine._lock import PathLock, take_lock
from contextkit.errors import json_reason
from contextkit.messages import Conversation, History, Message, to_payload
from contextkit.session import Call, Usage
from contextkit.strategies import Receipt

CHECKPOINT_FORMAT = "contextkit-checkpoint"
CHECKPOINT_VERSION = 3
_LEGACY_VERSION = 2
_HEADER = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION}


@dataclass(frozen=True)
class EngineState:
    """What a checkpoint holds."""

    tape: Sequence[Message]
    view: Conversation
    calls: tuple[Call, ...]
    receipts: tuple[Receipt, ...]
    notes: tuple[str, ...] = field(default=(), compare=False)
    """What the reader noticed on the way (a torn last record it cut)."""


_EMPTY = EngineState(tape=(), view=Conversation(), calls=(), receipts=())


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _shared(old: Sequence[object], new: Sequence[object]) -> int:
    """How many leading items are the very same objects (C-speed check first: usually all)."""
    n = min(len(old), len(new))
    if isinstance(new, History) and new.shares(old):
        return n  # views of one growing list: the shorter is the longer's start
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

    def _call(self, call: Call, previous: Sequence[Message]) -> dict[str, Any]:
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


def _frame(value: object) -> bytes:
    """One record: ``<length> <crc32> <json>\\n`` (lone surrogates kept: ``surrogatepass``)."""
    body = _dumps(value).encode("utf-8", "surrogatepass")
    return b"%x %08x " % (len(body), zlib.crc32(body)) + body + b"\n"


class CheckpointWriter:
    """Saves successive states of one engine to ``path``: a fresh file first, then deltas.

    Creating one takes the path's lock (a :class:`CheckpointError` when another process holds
    it); :meth:`close` (or collecting the writer) lets it go.
    """

    def __init__(self, path: str | Path, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._encoder: _Encoder | None = None
        self._size = 0
        self._token = object()
        self._lock: PathLock | None = take_lock(self.path, self._token)

    def close(self) -> None:
        """Stop writing and let the path's lock go (when no newer writer of this process took
        it over)."""
        self._lock = None

    def save(self, state: EngineState) -> None:
        """Append what changed since the last save; on failure the file holds what it held
        before and the next save writes the whole state (:class:`CheckpointError`)."""
        self._check_owner()
        if self._encoder is None:
            self.rewrite(state)
            return
        line = self._encoder.delta(state)
        if not line:
            return
        record = _frame(line)
        try:
            self._append(record)
        except OSError as exc:
            self._encoder = None  # what the file holds is no longer what the encoder thinks
            raise CheckpointError(
                f"{self.path}: checkpoint not written ({exc.strerror or type(exc).__name__}); "
                "the file keeps the last saved state and the next save writes it all again"
            ) from exc
        self._size += len(record)

    @property
    def size(self) -> int:
        """Bytes of the file as this writer last left it."""
        return self._size

    @property
    def appends(self) -> bool:
        """The next save appends to the file (else it writes the whole state anew)."""
        return self._encoder is not None

    def cut_back(self, size: int) -> bool:
        """Undo the saves since the file was ``size`` bytes (a call whose audit line failed):
        the file is cut back to it and the next save writes the whole state again. False when
        the file could not be cut (it then still holds the later saves)."""
        try:
            fd = os.open(self.path, os.O_WRONLY)
            try:
                os.ftruncate(fd, size)
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            return False
        self._size, self._encoder = size, None
        return True

    def _append(self, record: bytes) -> None:
        # Opened per save (no handle left open between saves); one write with the newline last,
        # so a kill mid-write leaves a torn record the reader cuts.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            try:
                written = os.write(fd, record)
                while written < len(record):  # a short write: the rest, or the error
                    written += os.write(fd, record[written:])
                if self.fsync:
                    os.fsync(fd)
            except OSError:
                _cut(fd, self._size)
                raise
        finally:
            os.close(fd)

    def rewrite(self, state: EngineState) -> None:
        """Start the file again with ``state`` alone (atomically: temporary file and rename)."""
        self._check_owner()
        encoder = _Encoder()
        data = _frame(_HEADER) + _frame(encoder.delta(state))
        try:
            write_atomic(self.path, data, fsync=self.fsync)
        except OSError as exc:
            self._encoder = None
            raise CheckpointError(
                f"{self.path}: checkpoint not written ({exc.strerror or type(exc).__name__}); "
                "the file keeps the last saved state and the next save writes it all again"
            ) from exc
        self._encoder, self._size = encoder, len(data)

    def _check_owner(self) -> None:
        if self._lock is None or self._lock.owner is not self._token:
            raise CheckpointError(
                f"{self.path}: this writer no longer owns the checkpoint (closed, or a newer "
                "writer of this process took the path over): continue with that one"
            )
        self._lock.check()


def _cut(fd: int, size: int) -> None:
    """Truncate a failed append back to the last complete record (best effort: if even that
    fails, the reader cuts the torn tail and the next save rewrites the file)."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, size)


def write_atomic(path: Path, data: str | bytes, *, fsync: bool = True) -> None:
    """Write via a temporary file (mode 0600) in the same folder and rename: never a
    half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- reading --------------------------------------------------------------------------------------


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: not a readable checkpoint ({exc.strerror})") from None


def _json_object(path: Path, number: int, raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, a number past the limit
        if isinstance(exc, ValueError) and not isinstance(exc, UnicodeDecodeError):
            why = json_reason(exc)
        else:
            why = type(exc).__name__
        raise CheckpointError(f"{path}:{number}: damaged checkpoint line ({why})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}:{number}: damaged checkpoint line (not an object)")
    return data


def _unframe(path: Path, number: int, line: bytes) -> dict[str, Any]:
    length, _, rest = line.partition(b" ")
    crc, _, body = rest.partition(b" ")
    try:
        ok = int(length, 16) == len(body) and int(crc, 16) == zlib.crc32(body)
    except ValueError:
        ok = False
    if not ok:
        raise CheckpointError(
            f"{path}:{number}: damaged checkpoint record (length or checksum does not match)"
        )
    return _json_object(path, number, body)


def _records(path: Path, notes: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Complete records as JSON objects. A torn last record (no newline yet) is cut, with a
    note; version 2 files (plain JSON lines) are read as they were."""
    data = _read_bytes(path)
    complete, _, torn = data.rpartition(b"\n")
    if torn:
        at = complete.count(b"\n") + 2 if complete else 1
        notes.append(
            f"{path}:{at}: a torn last record ({len(torn)} bytes, a save cut short) was cut: "
            "the state is the last complete save"
        )
    legacy = data.startswith(b"{")
    for number, line in enumerate(complete.split(b"\n") if complete else [], start=1):
        yield number, _json_object(path, number, line) if legacy else _unframe(path, number, line)


class _Decoder:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.heads: list[Conversation] = []
        self.tape: list[Message] = []
        self.view_head = 0
        self.view: list[Message] = []
        self.calls: list[Call] = []
        self.receipts: list[Receipt] = []

    def copy(self) -> _Decoder:
        """The decoder as it is (its lists copied): what a repair falls back to."""
        other = _Decoder()
        other.messages, other.heads = list(self.messages), list(self.heads)
        other.tape, other.view = list(self.tape), list(self.view)
        other.calls, other.receipts = list(self.calls), list(self.receipts)
        other.view_head = self.view_head
        return other

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
            self.tape[_index(keep, len(self.tape)) :] = [self.message(r) for r in refs]
        if "view" in line:
            head, keep, refs = line["view"]
            self.view_head = _index(head, len(self.heads) - 1) if self.heads else _index(head, 0)
            self.view[_index(keep, len(self.view)) :] = [self.message(r) for r in refs]
        for call in line.get("calls", ()):
            self.calls.append(self._call(call))
        self.receipts.extend(Receipt.model_validate(r) for r in line.get("receipts", ()))

    def _call(self, data: dict[str, Any]) -> Call:
        keep, refs = data["messages"]
        previous = self.calls[-1].request.messages if self.calls else ()
        previous = previous[: _index(keep, len(previous))]
        messages = (*previous, *(self.message(r) for r in refs))
        return Call(
            request=self.heads[_index(data["head"], len(self.heads) - 1)].model_copy(
                update={"messages": messages}
            ),
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


def _index(value: object, top: int) -> int:
    """A position a record names, checked: an int from 0 to ``top`` (a ValueError otherwise,
    which the reader reports as a damaged line)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise ValueError("a position out of range")
    return value


def read_checkpoint(path: str | Path, *, repair: bool = False) -> EngineState:
    """The last complete state saved in ``path`` (no repair of the conversation: the engine does
    that). A damaged record (a flipped byte, an edit) is a :class:`CheckpointError` naming its
    line; with ``repair`` the state is the one saved before it instead, and a note says what was
    cut (the records from that line on)."""
    path = Path(path)
    decoder = _Decoder()
    header_seen = False
    notes: list[str] = []
    number = 0
    records = _records(path, notes)
    while True:
        try:
            item = next(records, None)
        except CheckpointError as exc:  # a damaged frame
            if not (repair and header_seen):
                raise
            notes.append(_cut_note(exc))
            break
        if item is None:
            break
        number, line = item
        if not header_seen:
            _check_header(path, line)
            header_seen = True
            continue
        before = decoder.copy() if repair else decoder
        try:
            decoder.apply(line)
        except (KeyError, IndexError, TypeError, ValueError, ValidationError) as exc:
            error = CheckpointError(f"{path}:{number}: damaged checkpoint line ({_no_values(exc)})")
            if not repair:
                raise error from None
            decoder = before
            notes.append(_cut_note(error))
            break
    if not header_seen:
        raise CheckpointError(f"{path}: empty or torn checkpoint (no complete header line)")
    try:
        state = decoder.state()
    except (KeyError, IndexError, TypeError, ValueError, ValidationError) as exc:
        raise CheckpointError(
            f"{path}:{number}: damaged checkpoint line ({_no_values(exc)})"
        ) from None
    return dataclasses.replace(state, notes=tuple(notes))


def _cut_note(exc: CheckpointError) -> str:
    return (
        f"{exc}; repaired: the state is the last one saved before that line, which and every "
        "record after it were cut"
    )


def _no_values(exc: Exception) -> str:
    """What went wrong, without the file's content (a value may be anything, a secret too)."""
    if isinstance(exc, ValidationError):
        where = [".".join(map(str, e["loc"])) + f" {e['type']}" for e in exc.errors()[:3]]
        return f"invalid {exc.title}: " + "; ".join(where)
    return f"{type(exc).__name__} in its structure"


def _check_header(path: Path, line: dict[str, Any]) -> None:
    if line.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}:1: not a contextkit checkpoint")
    version = line.get("version")
    if version not in (CHECKPOINT_VERSION, _LEGACY_VERSION):
        shown = version if isinstance(version, int) else "unknown"
        raise CheckpointError(f"{path}:1: checkpoint version {shown} is not supported")


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
