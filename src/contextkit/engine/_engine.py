"""The engine for a live agent loop: the tape, the view, cache breakpoints, checkpoints, audit.

Contract:

- The **tape** is the full history, append-only: ``add`` appends, nothing edits it.
- The **view** is what the model is sent: the previous view plus what was appended since, shaped by
  the strategy before each call (``prepare``). Once a strategy evicts or summarises, later calls
  keep that decision, so the cached prefix stays stable until the next edit.
- ``add`` takes contextkit messages, Anthropic or OpenAI (Chat Completions, Responses) message
  dicts and the SDKs' message objects; leading system messages set the system prompt when it is
  not set yet. Anything else is an ``InputError`` naming the item, and nothing is added.
- ``prepare`` returns the request to send, with ``cache_control`` breakpoints placed where the
  prefix stays stable (end of tools, end of system, end of the previous request, end of this one);
  the view itself never carries them. ``Prepared.body()`` is that request as the provider's JSON
  body, in the engine's ``api`` (``anthropic``, ``openai-chat``, ``openai-responses``; OpenAI
  caches prefixes by itself, so no breakpoints are placed for it).
- ``record`` takes the response: an SDK response object (anthropic ``Message``, openai
  ``ChatCompletion`` or ``Response``), its dict, or a contextkit assistant message with its usage
  and stop reason. Only ``end_turn`` and ``stop_sequence`` are final; ``tool_use`` asks for tools;
  ``max_tokens``, ``refusal``, ``pause_turn`` and ``model_context_window_exceeded`` are flagged as
  not finished, never taken as an answer. A response that cannot be read is a ``ResponseError``
  and changes nothing: the prepared request stays pending, so the call can be retried.
- With a checkpoint path, the state is written atomically after each ``add`` and ``record``; a kill
  at any moment leaves the last complete checkpoint. A failed write (disk full) raises
  ``CheckpointError`` and leaves the engine as it was before the call, so the call can be made
  again. ``ContextEngine.resume`` repairs a dangling ``tool_use`` (an interrupted tool run) and
  returns the repair receipts (and one for a torn last record it cut).
- With an audit path, every request is appended exactly as sent, with the stop reason of its answer.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from contextkit.engine._boundary import (
    Api,
    InputError,
    parse_response,
    request_body,
    to_messages,
)
from contextkit.engine._breakpoints import (
    BreakpointTally,
    mark_message,
    place_breakpoints,
)
from contextkit.engine._checkpoint import (
    CheckpointError,
    CheckpointWriter,
    EngineState,
    read_checkpoint,
    write_atomic,
)
from contextkit.engine._retrieve import answer, retrieval_calls, with_retrieve_tool
from contextkit.errors import ConfigError, ContextkitError
from contextkit.messages import (
    Block,
    Conversation,
    History,
    Message,
    Tool,
    to_payload,
)
from contextkit.messages import repair as repair_history
from contextkit.session import Call, Session, Usage
from contextkit.strategies import CallFacts, Compacted, Receipt, Strategy, strategy_from_spec
from contextkit.tokens import ApproxCounter, TokenCounter

FINAL_STOPS = frozenset({"end_turn", "stop_sequence"})
INCOMPLETE_STOPS = frozenset(
    {"max_tokens", "refusal", "pause_turn", "model_context_window_exceeded"}
)


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
    api: Api = "anthropic"
    """The wire form :meth:`body` writes by default (the engine's ``api``)."""

    def body(self, api: Api | None = None) -> dict[str, Any]:
        """The request as the provider's JSON body: pass it as ``client.messages.create(**body)``
        (or ``chat.completions.create``, ``responses.create`` for the OpenAI forms). The
        breakpoints are Anthropic's: the OpenAI forms are written from the view."""
        api = api or self.api
        return request_body(self.request if api == "anthropic" else self.view, api)


def _identity(view: Conversation, facts: CallFacts, /) -> Compacted:
    return Compacted(view=view)


def _head(
    model: str | None,
    system: str | Sequence[Block | Mapping[str, Any]] | None,
    tools: Sequence[Tool | Mapping[str, Any]],
    params: Mapping[str, Any] | None,
) -> Conversation:
    """A request without messages: only the fields given are set (``to_payload`` writes those)."""
    head: dict[str, Any] = dict(params or {})
    if model is not None:
        head["model"] = model
    if system is not None:
        head["system"] = system if isinstance(system, str) else tuple(system)
    if tools:
        head["tools"] = tuple(tools)
    try:
        return Conversation.model_validate(head)
    except ValidationError as exc:
        raise InputError(f"request fields: {_describe(exc)}") from None


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    return ".".join(str(part) for part in first["loc"]) + f": {first['msg']}"


def engine_strategy(strategy: Strategy | str | None) -> Strategy | None:
    """A strategy, or a spec of one (a preset name, ``NAME:key=value``, ``a >> b``, a file) made
    into one; anything else is a :class:`ConfigError` (a name passed where a strategy was
    expected failed at the first call, far from the mistake)."""
    if strategy is None or isinstance(strategy, Strategy):
        return strategy
    if isinstance(strategy, str):
        return strategy_from_spec(strategy)
    raise ConfigError(
        f"strategy must be a Strategy or a spec such as 'evict-tool-results' (got "
        f"{type(strategy).__name__})"
    )


def check_budget(budget_tokens: object, context_window: object) -> None:
    """Budget and window are positive whole numbers of tokens, the budget within the window."""
    for name, value in (("budget_tokens", budget_tokens), ("context_window", context_window)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{name} must be a positive number of tokens (got {value!r})")
    assert isinstance(budget_tokens, int)  # checked above
    assert isinstance(context_window, int)
    if budget_tokens > context_window:
        raise ConfigError(
            f"budget_tokens {budget_tokens:,} is over the context window {context_window:,}: "
            "no request could reach it"
        )


class AuditError(ContextkitError):
    """The audit line of a call could not be written. The audit log ends where it ended before
    the call (no torn line), and the call is undone as one step (``undone``): the engine and its
    checkpoint are as they were before ``record``, so recording the same response again (once the
    log can be written) works. Where the checkpoint could not be cut back either, the call stays
    recorded and checkpointed (``undone`` False) and must not be recorded again."""

    def __init__(self, path: Path, call: int, exc: OSError, *, undone: bool = False) -> None:
        then = (
            "the call is undone (engine and checkpoint as before it): record the response again "
            "once the log can be written"
            if undone
            else "the call is recorded and checkpointed, so do not record it again"
        )
        super().__init__(
            f"{path}: the audit line of call {call} could not be written "
            f"({exc.strerror or exc}); {then}; the audit log ends where it ended before it"
        )
        self.path = path
        self.call = call
        self.undone = undone
        self.os_error = exc


class ContextEngine:
    """Holds tape and view for one agent; see the module docstring for the contract."""

    def __init__(
        self,
        strategy: Strategy | str | None = None,
        *,
        model: str | None = None,
        system: str | Sequence[Block | Mapping[str, Any]] | None = None,
        tools: Sequence[Tool | Mapping[str, Any]] = (),
        params: Mapping[str, Any] | None = None,
        api: Api = "anthropic",
        counter: TokenCounter | None = None,
        budget_tokens: int = 150_000,
        context_window: int = 200_000,
        clock: Callable[[], datetime] | None = None,
        checkpoint_path: str | Path | None = None,
        checkpoint_fsync: bool = True,
        audit_path: str | Path | None = None,
        cache_breakpoints: bool = True,
        retrieval: bool = False,
    ) -> None:
        check_budget(budget_tokens, context_window)
        chosen = engine_strategy(strategy)
        self.strategy: Strategy = _identity if chosen is None else chosen
        self.retrieval = retrieval
        """Offer the retrieve tool (:mod:`._retrieve`) in every request, from the first."""
        self.counter = counter or ApproxCounter()
        self.budget_tokens = budget_tokens
        self.context_window = context_window
        self.clock = clock or (lambda: datetime.now(UTC))
        self.audit_path = Path(audit_path) if audit_path else None
        self.api: Api = api
        self.cache_breakpoints = cache_breakpoints and api == "anthropic"
        self._writer: CheckpointWriter | None = None
        if checkpoint_path:
            self._writer = CheckpointWriter(checkpoint_path, fsync=checkpoint_fsync)
        self._view = _head(model, system, tools, params)
        self._tape: Sequence[Message] = History()  # views of one list, as the tape grows
        self._calls: list[Call] = []
        self._receipts: list[Receipt] = []
        self._pending: Prepared | None = None
        self._last_request_end: Message | None = None
        self._marks = BreakpointTally()
        self._facts: CallFacts | None = None

    # -- state -------------------------------------------------------------------------------

    @property
    def checkpoint_path(self) -> Path | None:
        return self._writer.path if self._writer else None

    @property
    def tape(self) -> Sequence[Message]:
        return self._tape

    @property
    def view(self) -> Conversation:
        return self._view

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(self._calls)

    @property
    def receipts(self) -> tuple[Receipt, ...]:
        """Every change the strategy (or a repair, or a reset) made, in order."""
        return tuple(self._receipts)

    def session(self) -> Session:
        """The calls made so far as a :class:`Session` (price it with ``contextkit.accounting``)."""
        return Session(
            path=str(self.checkpoint_path or "<engine>"),
            format="engine",
            calls=tuple(self._calls),
        )

    # -- the loop ----------------------------------------------------------------------------

    def add(self, *items: object) -> None:
        """Append to the tape and to the view (the view keeps the tape's message objects).

        ``items`` are messages in any form the module docstring names; one call may hold a whole
        OpenAI message list, its leading system messages included.
        """
        if not items:
            return
        coerced = to_messages(items)
        undo = self._undo_point()
        if coerced.system is not None:
            self._set_system(coerced.system)
        messages = coerced.messages
        if messages:
            self._tape = History.of(self._tape).extended(messages)
            self._view = self._view.append(*messages)
        self._save(undo)

    def _set_system(self, system: str | tuple[Block, ...]) -> None:
        current = self._view.system
        if current is None and not self._tape:
            self._view = self._view.model_copy(update={"system": system})
        elif current != system:
            raise InputError(
                "add(): the messages carry a system prompt other than the engine's; change it "
                "with configure(system=...)"
            )

    def configure(
        self,
        *,
        model: str | None = None,
        system: str | Sequence[Block | Mapping[str, Any]] | None = None,
        tools: Sequence[Tool | Mapping[str, Any]] = (),
        params: Mapping[str, Any] | None = None,
    ) -> bool:
        """Set every request field but the messages (the view's messages stay); True if changed.

        Changing ``system`` or ``tools`` invalidates the provider's cache from that point on;
        ``max_tokens`` and other parameters travel in ``params``.
        """
        head = _head(model, system, tools, params)
        old = self._view.model_copy(update={"messages": ()})
        if to_payload(head) == {k: v for k, v in to_payload(old).items() if k != "messages"}:
            return False
        undo = self._undo_point()
        self._view = head.model_copy(update={"messages": self._view.messages})
        self._last_request_end = None
        self._save(undo)
        return True

    def reset_view(self, messages: Sequence[Message] | None = None) -> None:
        """Start the view again from the tape, or from ``messages`` (an edited history, which
        then replaces the tape); a receipt with action ``reset`` records it."""
        undo = self._undo_point()
        if messages is not None:
            self._tape = History.of(messages)
        self._view = self._view.with_messages(self._tape)
        self._last_request_end = None
        detail = f"view restarted from {len(self._tape)} messages"
        if messages is not None:
            detail += " of an edited history"
        self._receipts.append(Receipt(strategy="engine", action="reset", detail=detail))
        self._save(undo)

    def prepare(self) -> Prepared:
        """Shape the view for the next call and return the request to send."""
        base = self._facts
        if base is None or (base.counter, base.budget_tokens, base.context_window) != (
            self.counter,
            self.budget_tokens,
            self.context_window,
        ):  # validated once per setting: checking the counter against its runtime Protocol at
            # every call costs more than some strategies; a copy validates nothing
            self._facts = base = CallFacts(
                counter=self.counter,
                budget_tokens=self.budget_tokens,
                context_window=self.context_window,
            )
        update: dict[str, object] = {
            "model": self._view.model,
            "now": self.clock(),
            "call_index": len(self._calls),
        }
        if self._calls:  # what ColdCache asks: when the cache was last used, and by which model
            last = self._calls[-1]
            update |= {"previous_call_at": last.timestamp, "previous_model": last.model}
        facts = base.model_copy(update=update)
        result = self.strategy(self._view, facts)
        self._view = result.view
        self._receipts.extend(result.receipts)
        request = with_retrieve_tool(self._view) if self.retrieval else self._view
        if self.cache_breakpoints:
            request = place_breakpoints(
                request, self._last_request_end, existing=self._marks(request)
            )
        self._pending = Prepared(
            request=request,
            view=self._view,
            receipts=result.receipts,
            call_index=len(self._calls),
            api=self.api,
        )
        return self._pending

    def retrieval_answer(self, response: Message | None) -> Message | None:
        """With ``retrieval``: the user message answering a response that only calls the
        retrieve tool, from the tape (None: not such a response, or retrieval is off)."""
        if not self.retrieval:
            return None
        uses = retrieval_calls(response)
        return answer(self._tape, uses) if uses else None

    @property
    def pending(self) -> Prepared | None:
        """The prepared request no response was recorded for yet (None after ``record``)."""
        return self._pending

    def record(
        self,
        response: object,
        *,
        usage: Usage | None = None,
        stop_reason: str | None = None,
        model: str | None = None,
        request_id: str | None = None,
    ) -> Verdict:
        """Take the model's answer to the last prepared request; append it to tape and view.

        ``response`` is an SDK response object, its dict, or an assistant :class:`Message`; the
        keyword arguments override what the response says of itself. A response that cannot be
        read raises ``ResponseError`` and leaves the prepared request pending.
        """
        if self._pending is None:
            raise ContextkitError("record() without prepare(): prepare the request first")
        answer = parse_response(response)
        undo = self._undo_point()
        prepared = self._pending
        message = answer.message
        stop_reason = stop_reason if stop_reason is not None else answer.stop_reason
        call = Call(
            request=prepared.request,
            response=message,
            usage=usage if usage is not None else answer.usage,
            model=model or answer.model or prepared.request.model,
            timestamp=self.clock(),
            stop_reason=stop_reason,
            request_id=request_id if request_id is not None else answer.response_id,
            exact=True,
        )
        self._pending = None
        self._calls.append(call)
        self._last_request_end = prepared.view.messages[-1] if prepared.view.messages else None
        self._tape = History.of(self._tape).extended((message,))
        self._view = self._view.append(message)
        writer = self._writer
        cut = writer.size if writer is not None and writer.appends else None  # an append: cuttable
        self._save(undo)  # one save for the call and the response: never one without the other
        # After the checkpoint: a kill between the two loses an audit line, never makes a resumed
        # loop send a call again that the audit shows as sent.
        try:
            self._audit(call)
        except AuditError as exc:  # undone as one step where the checkpoint can be cut back
            if writer is not None and (cut is None or not writer.cut_back(cut)):
                raise  # the checkpoint holds the call: it stays recorded
            undo()
            raise AuditError(exc.path, exc.call, exc.os_error, undone=True) from None
        return verdict(stop_reason, message)

    # -- persistence -------------------------------------------------------------------------

    def _audit(self, call: Call) -> None:
        if self.audit_path is None:
            return
        line = {
            "call": len(self._calls) - 1,
            "time": call.timestamp.isoformat() if call.timestamp else None,
            "request": request_body(call.request, self.api),
            "stop_reason": call.stop_reason,
            "usage": call.usage.model_dump() if call.usage else None,
        }
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
        try:
            self.audit_path.parent.mkdir(parents=True, exist_ok=True)
            # 0600 like the checkpoint: the audit holds every request body in full.
            fd = os.open(self.audit_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            raise AuditError(self.audit_path, len(self._calls) - 1, exc) from None
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
            done = 0
            while done < len(data):
                done += os.write(fd, data[done:])
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)  # no torn line: the log ends where it ended before
            raise AuditError(self.audit_path, len(self._calls) - 1, exc) from None
        finally:
            os.close(fd)

    def _state(self) -> EngineState:
        return EngineState(
            tape=self._tape, view=self._view, calls=tuple(self._calls), receipts=self.receipts
        )

    def _undo_point(self) -> Callable[[], None]:
        """What puts the engine back as it is now (a failed checkpoint write undoes the call,
        so that the same call can be made again)."""
        tape, view, pending, end = self._tape, self._view, self._pending, self._last_request_end
        calls, receipts = len(self._calls), len(self._receipts)

        def undo() -> None:
            self._tape, self._view, self._pending, self._last_request_end = tape, view, pending, end
            del self._calls[calls:], self._receipts[receipts:]

        return undo

    def _save(self, undo: Callable[[], None] | None = None) -> None:
        if self._writer is None:
            return
        try:
            self._writer.save(self._state())
        except CheckpointError:
            if undo is not None:
                undo()
            raise

    @classmethod
    def resume(
        cls,
        path: str | Path,
        strategy: Strategy | None = None,
        *,
        repair: bool = False,
        **options: Any,
    ) -> tuple[ContextEngine, tuple[Receipt, ...]]:
        """Continue from a checkpoint (``options`` as for the constructor; the request fields
        come from the checkpoint). A dangling ``tool_use`` (the process died while a tool ran)
        is answered with an "interrupted" result; the receipts say what was repaired. The file
        is rewritten compactly (a torn last line, if any, is gone). A damaged record is a
        CheckpointError naming its line; with ``repair`` the engine resumes from the state saved
        before it (a ``cut`` receipt says which records went)."""
        state = read_checkpoint(Path(path), repair=repair)
        cut = tuple(Receipt(strategy="checkpoint", action="cut", detail=n) for n in state.notes)
        options["checkpoint_path"] = path
        engine = cls(strategy, **options)
        view, receipts = repair_history(state.view)
        n = len(state.view.messages)
        tape: Sequence[Message]
        appended = len(view.messages) >= n and all(
            a is b for a, b in zip(view.messages[:n], state.view.messages, strict=True)
        )
        if appended:  # the repair only appended (an interrupted tool call answered): the tape too
            tape = History.of(state.tape).extended(view.messages[n:])
        else:  # it dropped or changed messages (an orphan result, an empty message): repair both
            tape = repair_history(state.view.with_messages(state.tape))[0].messages
        engine._tape, engine._view = tape, view
        engine._calls = list(state.calls)
        receipts = (*cut, *receipts)
        engine._receipts = [*state.receipts, *receipts]
        if state.calls and state.calls[-1].request.messages:
            engine._last_request_end = _unmarked_end(state)
        engine._save()
        return engine, receipts


def _unmarked_end(state: EngineState) -> Message | None:
    """The view message that ended the last request (the request holds a marked copy of it)."""
    request = state.calls[-1].request.messages
    n = len(request)
    if n <= len(state.view.messages):
        candidate = state.view.messages[n - 1]
        if to_payload(mark_message(candidate)) == to_payload(request[-1]):
            return candidate
    return None


__all__ = [
    "FINAL_STOPS",
    "INCOMPLETE_STOPS",
    "AuditError",
    "ContextEngine",
    "Prepared",
    "Verdict",
    "check_budget",
    "engine_strategy",
    "verdict",
    "write_atomic",
]
