"""Drop-in compaction for an existing ``anthropic`` client.

``wrap(client, strategy=...)`` returns a client whose ``messages.create(...)`` takes the harness's
full history as usual and sends the compacted view instead. Everything else passes through to the
wrapped client. The wrapper keeps a :class:`ContextEngine`: when the history the harness passes
extends the one it passed last time (the usual append-only loop), only the new messages are added
to the view; when it does not (the harness edited its history), the view starts again from it.
Changing ``system``, ``tools`` or ``model`` also starts a new view.

Works with ``anthropic.Anthropic`` (sync) and ``anthropic.AsyncAnthropic`` (async). Streaming
(``stream=True``) is refused with a clear error rather than silently sent uncompacted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextkit.engine import ContextEngine, Prepared, Verdict
from contextkit.errors import ContextkitError
from contextkit.messages import Message, Tool, to_payload
from contextkit.session import Usage
from contextkit.strategies.base import Strategy

_HEAD_KEYS = ("model", "system", "tools")


def _plain(value: Any) -> Any:
    """SDK objects to plain JSON values (None fields dropped, as the API omits them)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class _Session:
    """The engine plus what the harness sent last, shared by the sync and async paths."""

    def __init__(self, strategy: Strategy | None, options: dict[str, Any]) -> None:
        self.strategy = strategy
        self.options = options
        self.engine: ContextEngine | None = None
        self.head: dict[str, Any] | None = None
        self.sent: list[dict[str, Any]] = []

    def _new_engine(self, head: dict[str, Any]) -> ContextEngine:
        return ContextEngine(
            self.strategy,
            model=head.get("model"),
            system=head.get("system"),
            tools=tuple(Tool.model_validate(t) for t in head.get("tools", ())),
            **self.options,
        )

    def before(self, kwargs: dict[str, Any]) -> tuple[Prepared, dict[str, Any]]:
        if kwargs.get("stream"):
            raise ContextkitError(
                "contextkit's wrapper does not support stream=True yet: call without streaming"
            )
        history = [_plain(m) for m in kwargs.pop("messages")]
        head = {k: _plain(kwargs.pop(k)) for k in _HEAD_KEYS if k in kwargs}
        if self.engine is None or head != self.head:
            self.engine, self.head, self.sent = self._new_engine(head), head, []
        engine = self.engine
        if len(history) >= len(self.sent) and history[: len(self.sent)] == self.sent:
            engine.add(*(Message.model_validate(m) for m in history[len(self.sent) :]))
        else:
            engine.reset_view([Message.model_validate(m) for m in history])
        self.sent = history
        prepared = engine.prepare()
        payload = to_payload(prepared.request)
        return prepared, {**kwargs, **payload}

    def after(self, response: Any) -> Verdict:
        assert self.engine is not None
        body = _plain(response)
        message = Message(role="assistant", content=tuple(body.get("content", ())))
        usage = Usage.from_anthropic(body["usage"]) if isinstance(body.get("usage"), dict) else None
        result = self.engine.record(
            message,
            usage=usage,
            stop_reason=body.get("stop_reason"),
            model=body.get("model"),
            request_id=body.get("id"),
        )
        # The harness appends the assistant message itself; count it as already sent.
        self.sent.append({"role": "assistant", "content": body.get("content", [])})
        return result


class _Messages:
    def __init__(self, inner: Any, session: _Session) -> None:
        self._inner = inner
        self._session = session

    def create(self, **kwargs: Any) -> Any:
        _, payload = self._session.before(dict(kwargs))
        response = self._inner.create(**payload)
        self._session.after(response)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _AsyncMessages(_Messages):
    async def create(self, **kwargs: Any) -> Any:
        _, payload = self._session.before(dict(kwargs))
        response = await self._inner.create(**payload)
        self._session.after(response)
        return response


class WrappedClient:
    """The wrapped client: ``messages.create`` compacts; everything else is the client's own."""

    def __init__(self, client: Any, strategy: Strategy | None, options: dict[str, Any]) -> None:
        self._client = client
        self._session = _Session(strategy, options)
        is_async = type(client).__name__.startswith("Async")
        kind = _AsyncMessages if is_async else _Messages
        self.messages = kind(client.messages, self._session)

    @property
    def engine(self) -> ContextEngine:
        """The engine behind the wrapper (tape, view, calls, receipts); exists after one call."""
        if self._session.engine is None:
            raise ContextkitError("no call has been made through the wrapper yet")
        return self._session.engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def wrap(client: Any, strategy: Strategy | None = None, **options: Any) -> WrappedClient:
    """Wrap an ``anthropic.Anthropic`` or ``AsyncAnthropic`` client; options go to the engine."""
    return WrappedClient(client, strategy, options)


__all__ = ["WrappedClient", "wrap"]
