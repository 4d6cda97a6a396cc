"""The engine for a live agent loop: the tape, the view, cache breakpoints, checkpoints, audit.

Contract:

- The **tape** is the full history, append-only: ``add`` appends, nothing edits it.
- The **view** is what the model is sent: the previous view plus what was appended since, shaped by
  the strategy before each call (``prepare``). Once a strategy evicts or summarises, later calls
  keep that decision, so the cached prefix stays stable until the next edit.
- ``prepare`` returns the request to send, with ``cache_control`` breakpoints placed where the
  prefix stays stable (end of tools, end of system, end of the previous request, end of this one);
  the view itself never carries them.
- ``record`` takes the response, its usage and stop reason. Only ``end_turn`` and ``stop_sequence``
  are final; ``tool_use`` asks for tools; ``max_tokens``, ``refusal``, ``pause_turn`` and
  ``model_context_window_exceeded`` are flagged as not finished, never taken as an answer.
- With a checkpoint path, the state is written atomically after each ``add`` and ``record``; a kill
  at any moment leaves the last complete checkpoint. ``ContextEngine.resume`` repairs a dangling
  ``tool_use`` (an interrupted tool run) and returns the repair receipts.
- With an audit path, every request is appended exactly as sent, with the stop reason of its answer.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from contextkit.checkpoint import EngineState, encode_checkpoint, read_checkpoint
from contextkit.errors import ContextkitError
from contextkit.invariants import repair
from contextkit.messages import (
    Block,
    Conversation,
    Message,
    RedactedThinkingBlock,
    ThinkingBlock,
    Tool,
    to_payload,
)
from contextkit.session import Call, Session, Usage
from contextkit.strategies.base import CallFacts, Compacted, Receipt, Strategy
from contextkit.tokens import ApproxCounter, TokenCounter

FINAL_STOPS = frozenset({"end_turn", "stop_sequence"})
INCOMPLETE_STOPS = frozenset(
    {"max_tokens", "refusal", "pause_turn", "model_context_window_exceeded"}
)
EPHEMERAL: Mapping[str, str] = {"type": "ephemeral"}


class Verdict(BaseModel):
    """What a response means for the loop."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stop_reason: str | None
    finished: bool
    """True only for a final answer (``end_turn``, ``stop_sequence``)."""
    needs_tools: bool
    incomplete: bool
    """True when the response stopped short (length, refusal, pause, full window)."""


def verdict(stop_reason: str | None, response: Message | None = None) -> Verdict:
    has_tools = response is not None and any(True for _ in response.tool_uses())
    return Verdict(
        stop_reason=stop_reason,
        finished=stop_reason in FINAL_STOPS and not has_tools,
        needs_tools=stop_reason == "tool_use" or has_tools,
        incomplete=stop_reason in INCOMPLETE_STOPS or stop_reason is None,
    )


class Prepared(BaseModel):
    """One call ready to send."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    request: Conversation
    """The view with cache breakpoints: send this."""
    view: Conversation
    receipts: tuple[Receipt, ...]
    call_index: int


def _identity(view: Conversation, facts: CallFacts, /) -> Compacted:
    return Compacted(view=view)


class ContextEngine:
    """Holds tape and view for one agent; see the module docstring for the contract."""

    def __init__(
        self,
        strategy: Strategy | None = None,
        *,
        model: str | None = None,
        system: str | Sequence[Block] | None = None,
        tools: Sequence[Tool] = (),
        params: Mapping[str, Any] | None = None,
        counter: TokenCounter | None = None,
        budget_tokens: int = 150_000,
        context_window: int = 200_000,
        clock: Callable[[], datetime] | None = None,
        checkpoint_path: str | Path | None = None,
        audit_path: str | Path | None = None,
        cache_breakpoints: bool = True,
    ) -> None:
        self.strategy: Strategy = strategy or _identity
        self.counter = counter or ApproxCounter()
        self.budget_tokens = budget_tokens
        self.context_window = context_window
        self.clock = clock or (lambda: datetime.now(UTC))
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path else None
        self.audit_path = Path(audit_path) if audit_path else None
        self.cache_breakpoints = cache_breakpoints
        head: dict[str, Any] = dict(params or {})
        if model is not None:
            head["model"] = model
        if system is not None:
            head["system"] = system if isinstance(system, str) else tuple(system)
        if tools:
            head["tools"] = tuple(tools)
        self._view = Conversation.model_validate(head)
        self._tape: tuple[Message, ...] = ()
        self._calls: list[Call] = []
        self._receipts: list[Receipt] = []
        self._pending: Prepared | None = None
        self._last_request_end: Message | None = None

    # -- state -------------------------------------------------------------------------------

    @property
    def tape(self) -> tuple[Message, ...]:
        return self._tape

    @property
    def view(self) -> Conversation:
        return self._view

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(self._calls)

    @property
    def receipts(self) -> tuple[Receipt, ...]:
        """Every change the strategy (or a repair) made, in order."""
        return tuple(self._receipts)

    def session(self) -> Session:
        """The calls made so far as a :class:`Session` (price it with ``contextkit.accounting``)."""
        return Session(
            path=str(self.checkpoint_path or "<engine>"),
            format="engine",
            calls=tuple(self._calls),
        )

    # -- the loop ----------------------------------------------------------------------------

    def add(self, *messages: Message) -> None:
        """Append to the tape and to the view (the view keeps the tape's message objects)."""
        self._tape = (*self._tape, *messages)
        self._view = self._view.append(*messages)
        self._save()

    def reset_view(self, messages: Sequence[Message] | None = None) -> None:
        """Start the view again from the tape (or the given history), after an edited history."""
        if messages is not None:
            self._tape = tuple(messages)
        self._view = self._view.with_messages(self._tape)
        self._last_request_end = None
        self._save()

    def prepare(self) -> Prepared:
        """Shape the view for the next call and return the request to send."""
        facts = CallFacts(
            counter=self.counter,
            budget_tokens=self.budget_tokens,
            context_window=self.context_window,
            model=self._view.model,
            now=self.clock(),
            call_index=len(self._calls),
        )
        result = self.strategy(self._view, facts)
        self._view = result.view
        self._receipts.extend(result.receipts)
        request = self._view
        if self.cache_breakpoints:
            request = place_breakpoints(self._view, self._last_request_end)
        self._pending = Prepared(
            request=request, view=self._view, receipts=result.receipts, call_index=len(self._calls)
        )
        return self._pending

    def record(
        self,
        response: Message,
        *,
        usage: Usage | None = None,
        stop_reason: str | None = None,
        model: str | None = None,
        request_id: str | None = None,
    ) -> Verdict:
        """Take the model's answer to the last prepared request; append it to tape and view."""
        if self._pending is None:
            raise ContextkitError("record() without prepare(): prepare the request first")
        prepared, self._pending = self._pending, None
        call = Call(
            request=prepared.request,
            response=response,
            usage=usage,
            model=model or prepared.request.model,
            timestamp=self.clock(),
            stop_reason=stop_reason,
            request_id=request_id,
            exact=True,
        )
        self._calls.append(call)
        self._last_request_end = prepared.view.messages[-1] if prepared.view.messages else None
        self._audit(call)
        self.add(response)
        return verdict(stop_reason, response)

    # -- persistence -------------------------------------------------------------------------

    def _audit(self, call: Call) -> None:
        if self.audit_path is None:
            return
        line = {
            "call": len(self._calls) - 1,
            "time": call.timestamp.isoformat() if call.timestamp else None,
            "request": to_payload(call.request),
            "stop_reason": call.stop_reason,
            "usage": call.usage.model_dump() if call.usage else None,
        }
        with self.audit_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")

    def _state(self) -> EngineState:
        return EngineState(
            tape=self._tape, view=self._view, calls=tuple(self._calls), receipts=self.receipts
        )

    def _save(self) -> None:
        if self.checkpoint_path is not None:
            text = json.dumps(encode_checkpoint(self._state()), ensure_ascii=False)
            write_atomic(self.checkpoint_path, text)

    @classmethod
    def resume(
        cls, path: str | Path, strategy: Strategy | None = None, **options: Any
    ) -> tuple[ContextEngine, tuple[Receipt, ...]]:
        """Continue from a checkpoint. A dangling ``tool_use`` (the process died while a tool
        ran) is answered with an "interrupted" result; the receipts say what was repaired."""
        state = read_checkpoint(Path(path))
        engine = cls(strategy, **options)
        view, receipts = repair(state.view)
        added = view.messages[len(state.view.messages) :]
        kept = view.messages[: len(state.view.messages)]
        if all(a is b for a, b in zip(kept, state.view.messages, strict=True)):
            tape = (*state.tape, *added)  # the repair only appended: the tape gets the same
        else:
            tape = repair(state.view.with_messages(state.tape))[0].messages
        engine._tape, engine._view = tape, view
        engine._calls = list(state.calls)
        engine._receipts = [*state.receipts, *receipts]
        if state.calls and state.calls[-1].request.messages:
            engine._last_request_end = state.calls[-1].request.messages[-1]
        engine.checkpoint_path = Path(path)
        engine._save()
        return engine, receipts


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename: never a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- cache breakpoints --------------------------------------------------------------------------


def _cacheable(block: Block) -> bool:
    return not isinstance(block, ThinkingBlock | RedactedThinkingBlock)


def cache_mark(ttl_s: int = 300) -> dict[str, str]:
    """The ``cache_control`` value for a TTL (5 minutes is the provider's default)."""
    return {"type": "ephemeral", "ttl": "1h"} if ttl_s >= 3600 else dict(EPHEMERAL)


def _mark_message(message: Message, mark: Mapping[str, str] = EPHEMERAL) -> Message:
    """The message with a breakpoint on its last block that may carry one (or unchanged)."""
    blocks = message.blocks
    for i in range(len(blocks) - 1, -1, -1):
        if _cacheable(blocks[i]):
            marked = blocks[i].model_copy(update={"cache_control": dict(mark)})
            return message.model_copy(update={"content": (*blocks[:i], marked, *blocks[i + 1 :])})
    return message


def place_breakpoints(
    view: Conversation, previous_end: Message | None = None, ttl_s: int = 300
) -> Conversation:
    """Up to four breakpoints where the prefix stays stable.

    End of tools and end of system (they change rarely); the last message of the previous request
    when the view still holds it (so a call that appends more than 20 blocks still reads the entry
    the previous call wrote); and the last message (written for the next call).
    """
    mark = cache_mark(ttl_s)
    update: dict[str, Any] = {}
    if view.tools:
        last = view.tools[-1].model_copy(update={"cache_control": dict(mark)})
        update["tools"] = (*view.tools[:-1], last)
    if view.system is not None and view.system_blocks:
        blocks = view.system_blocks
        marked = blocks[-1].model_copy(update={"cache_control": dict(mark)})
        update["system"] = (*blocks[:-1], marked)
    messages = list(view.messages)
    if messages:
        messages[-1] = _mark_message(messages[-1], mark)
        if previous_end is not None:
            for i in range(len(messages) - 2, -1, -1):
                if view.messages[i] is previous_end:
                    messages[i] = _mark_message(messages[i], mark)
                    break
        update["messages"] = tuple(messages)
    return view.model_copy(update=update) if update else view


__all__ = [
    "FINAL_STOPS",
    "INCOMPLETE_STOPS",
    "ContextEngine",
    "Prepared",
    "Verdict",
    "place_breakpoints",
    "verdict",
    "write_atomic",
]
