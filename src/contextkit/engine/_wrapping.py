"""What the client wrappers share: one engine fed from the full history a harness passes each call,
and streams that record their final message once they complete.

Contract (each wrapper module states its client's specifics):

- :class:`WrapSession` keeps one :class:`ContextEngine` and the history the harness passed last
  time. When the history passed extends it (the usual append-only loop), only the new messages
  are added to the view; otherwise (the harness edited its history, or changed model, system or
  tools) the view starts again from it and a ``reset`` receipt says so.
- A :class:`Dialect` says how one API's request is split into history, head and parameters, how
  its messages are read, and what the harness appends after a response.
- A stream is recorded into the engine exactly once, when it completed (its final event); one
  that fails or is abandoned records nothing: the prepared request stays pending and the same
  history can be passed again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Protocol, Self

from contextkit.engine._boundary import Api, parse_response, plain, request_body
from contextkit.engine._engine import ContextEngine, Verdict, check_budget, engine_strategy
from contextkit.engine._retrieve import MAX_ROUNDS
from contextkit.errors import ContextkitError
from contextkit.messages import Message
from contextkit.strategies import Strategy

CLIENT_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")
_SENTINELS = ("NotGiven", "Omit")


class Dialect(Protocol):
    """One API's request and response shapes, for :class:`WrapSession`."""

    api: Api
    history_key: str
    """The request field holding the history (``messages``, ``input``)."""

    def split(self, kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Remove the history from ``kwargs`` (normalised to a list); return it and the head: the
        fields whose change restarts the view (model, system, tools)."""
        ...

    def configure(self, head: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
        """The engine fields (``model``, ``system``, ``tools``, ``params``) for a request."""
        ...

    def normal(self, message: Any) -> dict[str, Any]:
        """A history entry as the plain payload it is compared by."""
        ...

    def messages(self, payloads: list[dict[str, Any]]) -> tuple[Message, ...]:
        """History entries (a suffix of the history) as messages."""
        ...

    def appended(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """What the harness appends to its history for this response (normalised)."""
        ...


def _given(value: Any) -> bool:
    return value is not None and type(value).__name__ not in _SENTINELS


class ClientProxy:
    """What a wrapped client passes on to the SDK client it wraps (``_client``): every attribute
    it does not define, and the client's own context management (its HTTP connections)."""

    _client: Any

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def __enter__(self) -> Self:
        self._client.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.__exit__(*exc)

    async def __aenter__(self) -> Self:
        await self._client.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.__aexit__(*exc)


class WrapSession:
    """The engine plus what the harness sent last, shared by the sync and async paths."""

    def __init__(
        self,
        dialect: Dialect,
        strategy: Strategy | str | None,
        options: dict[str, Any],
        engine: ContextEngine | None,
    ) -> None:
        self.dialect = dialect
        self.strategy = engine_strategy(strategy)  # a bad strategy or budget fails here, at wrap
        if engine is None:
            check_budget(
                options.get("budget_tokens", 150_000), options.get("context_window", 200_000)
            )
        self.options = {"api": dialect.api, **options}
        self.engine = engine
        self.head: dict[str, Any] | None = None
        self.sent: list[dict[str, Any]] = []
        self.options_sent: dict[str, Any] = {}
        """The client options (timeouts, headers) of the harness's last call."""
        self.rounds = 0
        """Retrieval round trips answered inside the harness's current call."""
        self.raw: list[object] = []
        """The objects the harness passed (None: an entry the wrapper wrote itself), kept so that
        an unchanged prefix is recognised by identity instead of converted again."""
        if engine is not None:  # continue a resumed engine: the harness passes its tape
            body = request_body(engine.view.with_messages(engine.tape), dialect.api)
            passed, self.head = dialect.split(body)
            self.sent = [dialect.normal(m) for m in passed]
            self.raw = [None] * len(self.sent)

    def _configure(self, head: dict[str, Any], params: dict[str, Any]) -> ContextEngine:
        fields = self.dialect.configure(head, params)
        if self.engine is None:
            self.engine = ContextEngine(self.strategy, **fields, **self.options)
        else:
            self.engine.configure(**fields)
        return self.engine

    def before(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Feed the engine from one request's arguments; return the arguments to send."""
        kwargs = {k: v for k, v in kwargs.items() if _given(v)}
        if self.dialect.history_key not in kwargs:
            raise ContextkitError(f"the request needs {self.dialect.history_key}=[...]")
        stream = kwargs.pop("stream", None)
        options = {k: kwargs.pop(k) for k in CLIENT_OPTIONS if k in kwargs}
        self.options_sent, self.rounds = options, 0
        passed, head = self.dialect.split(kwargs)
        params = {k: plain(v) for k, v in kwargs.items()}
        new_head = self.engine is not None and head != self.head
        engine = self._configure(head, params)
        self.head = head
        history = None if new_head else self._history(passed)
        n = len(self.sent)
        if history is not None:
            engine.add(*self.dialect.messages(history[n:]))
        else:
            history = [self.dialect.normal(m) for m in passed]
            engine.reset_view(self.dialect.messages(history))
        self.sent, self.raw = history, list(passed)
        body = engine.prepare().body()
        if stream is not None:
            body["stream"] = stream
        return {**body, **options}

    def _history(self, passed: list[Any]) -> list[dict[str, Any]] | None:
        """The passed history as payloads if it extends the one sent last time, else None.

        Entries passed again as the very same objects are taken as unchanged (the harness
        appends; it does not edit a message in place), so a call converts only what is new.
        """
        n = len(self.sent)
        if len(passed) < n:
            return None
        normal = self.dialect.normal
        for i in range(n):
            if passed[i] is not self.raw[i] and normal(passed[i]) != self.sent[i]:
                return None
        return [*self.sent, *(normal(m) for m in passed[n:])]

    def retrieval(self, response: Any) -> dict[str, Any] | None:
        """With the engine's ``retrieval``: a complete response that only calls the retrieve
        tool is recorded, answered from the tape, and the arguments of the request to send next
        are returned; the harness never sees that exchange (the engine keeps it, so the view and
        the cached prefix go on from it). None: hand the response to the harness (``after``)."""
        engine = self.engine
        if engine is None or not engine.retrieval or self.rounds >= MAX_ROUNDS:
            return None
        body = plain(response)
        reply = engine.retrieval_answer(parse_response(body).message)
        if reply is None:
            return None
        engine.record(body)
        engine.add(reply)
        self.rounds += 1
        return {**engine.prepare().body(), **self.options_sent}

    def after(self, response: Any) -> Verdict:
        """Record a complete response (SDK object or dict) into the engine."""
        if self.engine is None:
            raise ContextkitError("a response arrived before any request was prepared")
        body = plain(response)
        result = self.engine.record(body)
        # The harness appends the response itself; count it as already sent.
        appended = self.dialect.appended(body)
        self.sent.extend(appended)
        self.raw.extend([None] * len(appended))
        return result


# -- streams ------------------------------------------------------------------------------------


class Recorder:
    """Watches a stream's events; records the final message once the stream says it is done.

    ``done(event)`` returns the final response body when ``event`` completes the stream, else
    None; ``at_end()`` is asked when the stream ends without such an event (None: not done).
    """

    def __init__(
        self,
        session: WrapSession,
        done: Callable[[Any], Mapping[str, Any] | None] | Callable[[Any], None],
        at_end: Callable[[], Mapping[str, Any] | None] = lambda: None,
    ) -> None:
        self.session = session
        self.done = done
        self.at_end = at_end
        self.recorded = False

    def see(self, event: Any) -> None:
        if not self.recorded and (body := self.done(event)) is not None:
            self._record(body)

    def end(self) -> None:
        if not self.recorded and (body := self.at_end()) is not None:
            self._record(body)

    def _record(self, body: Mapping[str, Any]) -> None:
        self.recorded = True
        self.session.after(body)


class RecordingStream:
    """An SDK stream (sync) whose events a :class:`Recorder` sees; everything else is the
    stream's own (``response``, ``close``, context management)."""

    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def __iter__(self) -> Iterator[Any]:
        for event in self._inner:
            self._recorder.see(event)
            yield event
        self._recorder.end()

    def __next__(self) -> Any:
        try:
            event = next(self._inner)
        except StopIteration:
            self._recorder.end()
            raise
        self._recorder.see(event)
        return event

    def __enter__(self) -> RecordingStream:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class AsyncRecordingStream:
    """:class:`RecordingStream` for the async clients."""

    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for event in self._inner:
            self._recorder.see(event)
            yield event
        self._recorder.end()

    async def __anext__(self) -> Any:
        try:
            event = await self._inner.__anext__()
        except StopAsyncIteration:
            self._recorder.end()
            raise
        self._recorder.see(event)
        return event

    async def __aenter__(self) -> AsyncRecordingStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


__all__ = [
    "CLIENT_OPTIONS",
    "AsyncRecordingStream",
    "Dialect",
    "Recorder",
    "RecordingStream",
    "WrapSession",
]
