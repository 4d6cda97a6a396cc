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

Works with ``anthropic.Anthropic`` and ``anthropic.AsyncAnthropic`` (and the Bedrock/Vertex clients
built on the same resources). Streaming (``stream=True`` or ``messages.stream(...)``) is refused
with a clear error rather than silently sent uncompacted; ``client.beta.messages`` is not wrapped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anthropic import NotGiven, Omit
from anthropic.resources.messages import AsyncMessages

from contextkit.engine._engine import ContextEngine, Prepared, Verdict
from contextkit.errors import ContextkitError
from contextkit.messages import Message, Tool, to_payload
from contextkit.session import Usage
from contextkit.strategies.base import Strategy

_HEAD_KEYS = ("model", "system", "tools")
_CLIENT_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")
STREAMING_REFUSED = (
    "contextkit's wrapper does not support streaming yet (stream=True or messages.stream): "
    "call messages.create without streaming, or use ContextEngine.prepare/record around your "
    "own streaming call"
)


def _plain(value: Any) -> Any:
    """SDK objects to plain JSON values (None fields dropped, as the API omits them)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


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


class _Session:
    """The engine plus what the harness sent last, shared by the sync and async paths."""

    def __init__(
        self, strategy: Strategy | None, options: dict[str, Any], engine: ContextEngine | None
    ) -> None:
        self.strategy = strategy
        self.options = options
        self.engine = engine
        self.head: dict[str, Any] | None = None
        self.sent: list[dict[str, Any]] = []
        self.raw: list[object] = []
        """The objects the harness passed (None: a message the wrapper wrote itself), kept so
        that an unchanged prefix is recognised by identity instead of converted again."""
        if engine is not None:
            self.sent = [to_payload(m) for m in engine.tape]
            self.raw = [None] * len(self.sent)
            payload = to_payload(engine.view)
            self.head = {k: payload[k] for k in _HEAD_KEYS if k in payload}

    def _configure(self, head: dict[str, Any], params: dict[str, Any]) -> ContextEngine:
        fields: dict[str, Any] = {
            "model": head.get("model"),
            "system": head.get("system"),
            "tools": tuple(Tool.model_validate(t) for t in head.get("tools", ())),
            "params": params,
        }
        if self.engine is None:
            self.engine = ContextEngine(self.strategy, **fields, **self.options)
        else:
            self.engine.configure(**fields)
        return self.engine

    def before(self, kwargs: dict[str, Any]) -> tuple[Prepared, dict[str, Any]]:
        if kwargs.get("stream"):
            raise ContextkitError(STREAMING_REFUSED)
        if "messages" not in kwargs:
            raise ContextkitError("messages.create() needs messages=[...]")
        # NOT_GIVEN / omit are the SDK's "leave it out" sentinels: drop them like the SDK does.
        kwargs = {k: v for k, v in kwargs.items() if not isinstance(v, NotGiven | Omit)}
        passed = list(kwargs.pop("messages"))
        options = {k: kwargs.pop(k) for k in _CLIENT_OPTIONS if k in kwargs}
        head = {k: _plain(kwargs.pop(k)) for k in _HEAD_KEYS if k in kwargs}
        params = {k: _plain(v) for k, v in kwargs.items() if v is not None}
        new_head = self.engine is not None and head != self.head
        engine = self._configure(head, params)
        self.head = head
        history = self._history(passed)
        n = len(self.sent)
        if history is not None and not new_head:
            engine.add(*(Message.model_validate(m) for m in history[n:]))
        else:
            history = [_unmarked(_plain(m)) for m in passed]
            engine.reset_view([Message.model_validate(m) for m in history])
        self.sent, self.raw = history, passed
        prepared = engine.prepare()
        return prepared, {**to_payload(prepared.request), **options}

    def _history(self, passed: list[Any]) -> list[dict[str, Any]] | None:
        """The passed history as payloads if it extends the one sent last time, else None.

        Messages passed again as the very same objects are taken as unchanged (the harness
        appends; it does not edit a message in place), so a call converts only what is new
        instead of the whole, ever-growing history.
        """
        n = len(self.sent)
        if len(passed) < n:
            return None
        history = list(self.sent)
        for i in range(n):
            if passed[i] is not self.raw[i] and _unmarked(_plain(passed[i])) != self.sent[i]:
                return None
        history.extend(_unmarked(_plain(m)) for m in passed[n:])
        return history

    def after(self, response: Any) -> Verdict:
        assert self.engine is not None
        body = _plain(response)
        content = body.get("content", [])
        message = Message(role="assistant", content=tuple(content))
        usage = Usage.from_anthropic(body["usage"]) if isinstance(body.get("usage"), dict) else None
        result = self.engine.record(
            message,
            usage=usage,
            stop_reason=body.get("stop_reason"),
            model=body.get("model"),
            request_id=body.get("id"),
        )
        # The harness appends the assistant message itself; count it as already sent.
        self.sent.append({"role": "assistant", "content": content})
        self.raw.append(None)
        return result


class _MessagesBase:
    """What the sync and async ``messages`` resources share: all but ``create``."""

    def __init__(self, inner: Any, session: _Session) -> None:
        self._inner = inner
        self._session = session

    def stream(self, **kwargs: Any) -> Any:
        raise ContextkitError(STREAMING_REFUSED)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Messages(_MessagesBase):
    def create(self, **kwargs: Any) -> Any:
        _, payload = self._session.before(dict(kwargs))
        response = self._inner.create(**payload)
        self._session.after(response)
        return response


class _AsyncMessages(_MessagesBase):
    async def create(self, **kwargs: Any) -> Any:
        _, payload = self._session.before(dict(kwargs))
        response = await self._inner.create(**payload)
        self._session.after(response)
        return response


class WrappedClient:
    """The wrapped client: ``messages.create`` compacts; everything else is the client's own."""

    def __init__(
        self,
        client: Any,
        strategy: Strategy | None,
        options: dict[str, Any],
        engine: ContextEngine | None = None,
    ) -> None:
        self._client = client
        self._session = _Session(strategy, options, engine)
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

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    # The client's own context management (closing its HTTP connections).
    def __enter__(self) -> WrappedClient:
        self._client.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.__exit__(*exc)

    async def __aenter__(self) -> WrappedClient:
        await self._client.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.__aexit__(*exc)


def wrap(
    client: Any,
    strategy: Strategy | None = None,
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


__all__ = ["STREAMING_REFUSED", "WrappedClient", "wrap"]
