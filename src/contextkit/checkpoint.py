"""Engine checkpoints: the tape, the view and every call, in one JSON document.

Messages are written once each and referred to by index, so a checkpoint of n calls whose requests
share their history holds O(unique messages) payloads plus O(n x view length) small integers, not n
copies of the history. Reading validates everything; a file that is not a checkpoint, or a damaged
one, is a :class:`CheckpointError` naming the file. A ``tool_use`` left without a result (the
process died while the tool ran) is repaired on load with an "interrupted" result, and the receipt
says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contextkit.errors import ContextkitError
from contextkit.messages import Conversation, Message, to_payload
from contextkit.session import Call, Usage
from contextkit.strategies.base import Receipt

CHECKPOINT_FORMAT = "contextkit-checkpoint"
CHECKPOINT_VERSION = 1


class CheckpointError(ContextkitError):
    """A checkpoint file cannot be used."""


class _Interner:
    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.items: list[dict[str, Any]] = []
        self.keep: list[Message] = []

    def ref(self, message: Message) -> int:
        found = self.index.get(id(message))
        if found is None:
            found = len(self.items)
            self.index[id(message)] = found
            self.items.append(to_payload(message))
            self.keep.append(message)
        return found

    def refs(self, messages: tuple[Message, ...]) -> list[int]:
        return [self.ref(m) for m in messages]


def _head(conversation: Conversation) -> dict[str, Any]:
    payload = to_payload(conversation)
    payload.pop("messages", None)
    return payload


@dataclass(frozen=True)
class EngineState:
    """What a checkpoint holds."""

    tape: tuple[Message, ...]
    view: Conversation
    calls: tuple[Call, ...]
    receipts: tuple[Receipt, ...]


def encode_checkpoint(state: EngineState) -> dict[str, Any]:
    """The checkpoint document (JSON-ready)."""
    table = _Interner()
    heads: dict[str, int] = {}

    def head_ref(conversation: Conversation) -> int:
        key = json.dumps(_head(conversation), sort_keys=True)
        return heads.setdefault(key, len(heads))

    calls = [
        {
            "head": head_ref(c.request),
            "messages": table.refs(c.request.messages),
            "response": table.ref(c.response) if c.response else None,
            "usage": c.usage.model_dump() if c.usage else None,
            "model": c.model,
            "timestamp": c.timestamp.isoformat() if c.timestamp else None,
            "stop_reason": c.stop_reason,
            "request_id": c.request_id,
        }
        for c in state.calls
    ]
    return {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "view_head": head_ref(state.view),
        "tape": table.refs(state.tape),
        "view": table.refs(state.view.messages),
        "calls": calls,
        "receipts": [r.model_dump() for r in state.receipts],
        "heads": [json.loads(k) for k in heads],
        "messages": table.items,
    }


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not a readable checkpoint ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: not a contextkit checkpoint")
    if data.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: checkpoint version {data.get('version')} is not supported")
    return data


def _decode(data: dict[str, Any]) -> EngineState:
    messages = [Message.model_validate(m) for m in data["messages"]]
    heads = [Conversation.model_validate(h) for h in data["heads"]]

    def conv(head: int, refs: list[int]) -> Conversation:
        return heads[head].model_copy(update={"messages": tuple(messages[i] for i in refs)})

    calls = tuple(
        Call(
            request=conv(c["head"], c["messages"]),
            response=messages[c["response"]] if c["response"] is not None else None,
            usage=Usage.model_validate(c["usage"]) if c["usage"] else None,
            model=c["model"],
            timestamp=c["timestamp"],
            stop_reason=c["stop_reason"],
            request_id=c["request_id"],
            exact=True,
        )
        for c in data["calls"]
    )
    return EngineState(
        tape=tuple(messages[i] for i in data["tape"]),
        view=conv(data["view_head"], data["view"]),
        calls=calls,
        receipts=tuple(Receipt.model_validate(r) for r in data["receipts"]),
    )


def read_checkpoint(path: Path) -> EngineState:
    """Read and validate a checkpoint (no repair: the engine does that)."""
    data = _load(path)
    try:
        return _decode(data)
    except (KeyError, IndexError, TypeError, ValidationError) as exc:
        raise CheckpointError(f"{path}: damaged checkpoint ({type(exc).__name__}: {exc})") from None
