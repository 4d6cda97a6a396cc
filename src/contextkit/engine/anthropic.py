"""Drop-in compaction for an existing ``anthropic`` client.

``wrap(client, strategy=...)`` returns a client whose ``messages.create(...)`` takes the harness's
full history as usual and sends the compacted view instead. Everything else passes through to the
wrapped client. The wrapper keeps one :class:`ContextEngine`:

- When the history the harness passes extends the one it passed last time (the usual append-only
  loop), only the new messages are added to the view; when it does not (the harness edited its
  history), the view starts again from it (a ``reset`` receipt says so).
- Request fields other than ``messages`` (``model``, ``system``, ``tools``, ``max_tokens``,
  ``thinking``, ...) become the engine's request head, so the engine's recorded calls (and audit
  log) hold exactly the body sent. Changing ``model``, ``system`` or ``tools`` keeps the engine and
  its calls, and starts the view again from the history passed. Client options (``timeout``,
  ``extra_headers``, ``extra_query``, ``extra_body``) go to the client only.
- The engine places ``cache_control`` breakpoints itself; ones the harness puts on *messages* are
  dropped (the harness marks positions in its own history, which the view no longer matches, and
  marks that stayed on old messages would pile up past the provider's limit of four). Marks on
  ``system`` and ``tools`` are kept and count against the four.
- ``wrap(client, engine=...)`` continues with an existing engine (``ContextEngine.resume`` after a
  crash): the harness then passes the engine's tape (``to_payload`` of each message) plus what
  comes next.

Streaming works as with the client itself: ``messages.create(..., stream=True)`` returns the
SDK's event stream and ``messages.stream(...)`` its stream manager (``text_stream``,
``get_final_message``, ``until_done``...). The response is recorded into the engine once the
stream delivered ``message_stop``; a stream that fails or is abandoned records nothing, and the
same history can be passed again (the retry prepares the same call).

Works with ``anthropic.Anthropic`` and ``anthropic.AsyncAnthropic`` (and the Bedrock/Vertex clients
built on the same resources); ``client.beta.messages`` is not wrapped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from anthropic.resources.messages import AsyncMessages

from contextkit.engine._boundary import Api, plain
from contextkit.engine._engine import ContextEngine
from contextkit.engine._wrapping import (
    AsyncRecordingStream,
    ClientProxy,
    Recorder,
    RecordingStream,
    WrapSession,
)
from contextkit.errors import ContextkitError
from contextkit.messages import Message, Tool
from contextkit.strategies import Strategy
from contextkit.wire import assemble_events

_HEAD_KEYS = ("model", "system", "tools")


def _unmarked(message: dict[str, Any]) -> dict[str, Any]:
    """The message payload without ``cache_control`` on its blocks (the engine places its own)."""
    content = message.get("content")
    if not isinstance(content, list) or not any(
        isinstance(b, dict) and "cache_control" in b for b in content
    ):
        return message
    blocks = [
        {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b
        for b in content
    ]
    return {**message, "content": blocks}


class AnthropicMessages:
    """The Messages API as a :class:`~contextkit.engine._wrapping.Dialect`."""

    api: Api = "anthropic"
    history_key = "messages"

    def split(self, kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        passed = list(kwargs.pop("messages"))
        head = {k: plain(kwargs.pop(k)) for k in _HEAD_KEYS if k in kwargs}
        return passed, head

    def configure(self, head: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "model": head.get("model"),
            "system": head.get("system"),
            "tools": tuple(Tool.model_validate(t) for t in head.get("tools", ())),
            "params": params,
        }

    def normal(self, message: Any) -> dict[str, Any]:
        return _unmarked(plain(message))

    def messages(self, payloads: list[dict[str, Any]]) -> tuple[Message, ...]:
        return tuple(Message.model_validate(m) for m in payloads)

    def appended(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": body.get("content", [])}]


def _recorder(session: WrapSession) -> Recorder:
    """Collects the raw events; at ``message_stop`` assembles and records the message."""
    events: list[Any] = []

    def done(event: Any) -> Mapping[str, Any] | None:
        payload = plain(event)
        if payload.get("type") not in ("text", "input_json", "citation", "thinking", "signature"):
            events.append(payload)  # the SDK's helper events repeat a delta: not on the wire
        if payload.get("type") != "message_stop":
            return None
        assembled = assemble_events(events)
        return assembled.message if assembled.complete else None

    return Recorder(session, done)


class _MessageStream(RecordingStream):
    """The SDK's ``MessageStream`` whose helpers read through the recording iterator."""

    @property
    def text_stream(self) -> Iterator[str]:
        for event in self:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                yield event.delta.text

    def until_done(self) -> None:
        for _ in self:
            pass

    def get_final_message(self) -> Any:
        self.until_done()
        return self._inner.get_final_message()

    def get_final_text(self) -> str:
        self.until_done()
        text: str = self._inner.get_final_text()
        return text


class _AsyncMessageStream(AsyncRecordingStream):
    @property
    async def text_stream(self) -> AsyncIterator[str]:
        async for event in self:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                yield event.delta.text

    async def until_done(self) -> None:
        async for _ in self:
            pass

    async def get_final_message(self) -> Any:
        await self.until_done()
        return await self._inner.get_final_message()

    async def get_final_text(self) -> str:
        await self.until_done()
        text: str = await self._inner.get_final_text()
        return text


class _StreamManager:
    """``messages.stream(...)``: the SDK's manager, entered to a recording ``MessageStream``."""

    def __init__(self, inner: Any, session: WrapSession) -> None:
        self._inner = inner
        self._session = session

    def __enter__(self) -> _MessageStream:
        return _MessageStream(self._inner.__enter__(), _recorder(self._session))

    def __exit__(self, *exc: object) -> None:
        self._inner.__exit__(*exc)

    async def __aenter__(self) -> _AsyncMessageStream:
        return _AsyncMessageStream(await self._inner.__aenter__(), _recorder(self._session))

    async def __aexit__(self, *exc: object) -> None:
        await self._inner.__aexit__(*exc)


class _MessagesBase:
    """What the sync and async ``messages`` resources share: all but ``create``."""

    def __init__(self, inner: Any, session: WrapSession) -> None:
        self._inner = inner
        self._session = session

    def stream(self, **kwargs: Any) -> _StreamManager:
        payload = self._session.before(dict(kwargs))
        payload.pop("stream", None)
        return _StreamManager(self._inner.stream(**payload), self._session)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Messages(_MessagesBase):
    def create(self, **kwargs: Any) -> Any:
        payload = self._session.before(dict(kwargs))
        response = self._inner.create(**payload)
        if payload.get("stream"):
            return RecordingStream(response, _recorder(self._session))
        while (again := self._session.retrieval(response)) is not None:
            response = self._inner.create(**again)
        self._session.after(response)
        return response


class _AsyncMessages(_MessagesBase):
    async def create(self, **kwargs: Any) -> Any:
        payload = self._session.before(dict(kwargs))
        response = await self._inner.create(**payload)
        if payload.get("stream"):
            return AsyncRecordingStream(response, _recorder(self._session))
        while (again := self._session.retrieval(response)) is not None:
            response = await self._inner.create(**again)
        self._session.after(response)
        return response


class WrappedClient(ClientProxy):
    """The wrapped client: ``messages.create`` compacts; everything else is the client's own."""

    def __init__(
        self,
        client: Any,
        strategy: Strategy | str | None,
        options: dict[str, Any],
        engine: ContextEngine | None = None,
    ) -> None:
        self._client = client
        self._session = WrapSession(AnthropicMessages(), strategy, options, engine)
        # Any: ``create`` returns the SDK's own Message (or an awaitable of it, for async clients).
        self.messages: Any
        if isinstance(client.messages, AsyncMessages):
            self.messages = _AsyncMessages(client.messages, self._session)
        else:
            self.messages = _Messages(client.messages, self._session)

    @property
    def engine(self) -> ContextEngine:
        """The engine behind the wrapper (tape, view, calls, receipts); exists after one call."""
        if self._session.engine is None:
            raise ContextkitError("no call has been made through the wrapper yet")
        return self._session.engine


def wrap(
    client: Any,
    strategy: Strategy | str | None = None,
    *,
    engine: ContextEngine | None = None,
    **options: Any,
) -> WrappedClient:
    """Wrap an ``anthropic.Anthropic`` or ``AsyncAnthropic`` client; ``options`` go to the
    :class:`ContextEngine` (``budget_tokens``, ``counter``, ``checkpoint_path``, ...), or pass an
    existing ``engine`` (then ``strategy`` and ``options`` must be left out)."""
    if engine is not None and (strategy is not None or options):
        raise ContextkitError("wrap(engine=...) takes the engine as it is: no strategy or options")
    return WrappedClient(client, strategy, options, engine)


__all__ = ["AnthropicMessages", "WrappedClient", "wrap"]
