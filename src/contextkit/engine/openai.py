"""Drop-in compaction for an existing ``openai`` client (the ``openai`` extra).

``wrap(client, strategy=...)`` returns a client whose ``chat.completions.create(...)`` and
``responses.create(...)`` take the harness's full history as usual and send the compacted view
instead; everything else passes through to the wrapped client. It behaves like
:func:`contextkit.engine.anthropic.wrap` (same options: strategy, ``budget_tokens``, ``counter``,
``checkpoint_path``, ``audit_path``, ``engine=``):

- Chat Completions: the leading ``system``/``developer`` messages, ``model`` and ``tools`` are
  the request head (a change restarts the view); the other parameters travel as they are.
  Messages go through :mod:`contextkit.wire.openai_chat`, so a body is written back exactly as
  the harness would have sent it, less what the strategy removed.
- Responses: ``instructions``, ``model`` and ``tools`` are the head; ``input`` (a string or a list
  of items) is the history, read by :mod:`contextkit.wire.openai_responses`. The harness
  appends ``response.output`` to its input as usual. ``previous_response_id`` is refused: with
  server-side history there is nothing on the client to compact.
- OpenAI caches prefixes by itself: no ``cache_control`` is placed.
- ``stream=True`` returns the SDK's stream; the response is recorded once it completed (the
  chunks up to ``finish_reason`` and ``[DONE]``, or ``response.completed``). Chat Completions
  streams report usage only when asked: pass ``stream_options={"include_usage": True}`` for the
  engine's calls to carry it. A stream that fails or is abandoned records nothing; the same
  history can be passed again. The SDK's ``.stream()`` and ``.parse()`` helpers are refused
  rather than sent uncompacted.

Works with ``openai.OpenAI`` and ``openai.AsyncOpenAI`` (and the Azure clients built on them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from contextkit.messages import Message
from contextkit.strategies import Strategy
from contextkit.wire import (
    META,
    assemble_chat_chunks,
    from_responses_items,
    parse_chat_messages,
    parse_chat_request,
    parse_responses_request,
)

try:
    from openai.resources.chat.completions import AsyncCompletions
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ContextkitError(
        "contextkit.engine.openai needs the openai SDK: pip install 'contextkit[openai]'"
    ) from exc

_SYSTEM_ROLES = ("system", "developer")
_REFUSED = (
    "contextkit's openai wrapper compacts create() only; {name}() would send the history "
    "uncompacted: call create() (stream=True streams)"
)


def _head_fields(conversation: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "model": conversation.model if "model" in conversation.model_fields_set else None,
        "system": conversation.system,
        "tools": conversation.tools,
        "params": {META: (conversation.model_extra or {})[META]},
    }
    return fields


def _suffix(payloads: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """A history suffix that starts with a system message reads as a mid-conversation one (a
    user message marked with its role), as it would in the whole history: parse it after a
    stand-in user message, dropped again."""
    if payloads and payloads[0].get("role") in _SYSTEM_ROLES:
        stand_in: dict[str, Any] = {"role": "user", "content": "."}
        if kind == "responses":
            stand_in["type"] = "message"
        return [stand_in, *payloads]
    return payloads


class ChatCompletions:
    """Chat Completions as a :class:`~contextkit.engine._wrapping.Dialect`."""

    api: Api = "openai-chat"
    history_key = "messages"

    def split(self, kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        passed = list(kwargs.pop("messages"))
        n = 0
        while n < len(passed) and self.normal(passed[n]).get("role") in _SYSTEM_ROLES:
            n += 1
        head = {k: plain(kwargs.pop(k)) for k in ("model", "tools") if k in kwargs}
        head["system"] = [self.normal(m) for m in passed[:n]]
        return passed[n:], head

    def configure(self, head: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
        body = {k: head[k] for k in ("model", "tools") if k in head}
        return _head_fields(parse_chat_request({**body, **params, "messages": head["system"]}))

    def normal(self, message: Any) -> dict[str, Any]:
        payload: dict[str, Any] = plain(message)
        if payload.get("annotations") == []:  # the SDK's empty list, absent from a harness's dict
            del payload["annotations"]
        return payload

    def messages(self, payloads: list[dict[str, Any]]) -> tuple[Message, ...]:
        padded = _suffix(payloads, "chat")
        _, messages = parse_chat_messages(padded)
        return tuple(messages[1:] if padded is not payloads else messages)

    def appended(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [self.normal(body["choices"][0]["message"])]


class Responses:
    """The Responses API as a :class:`~contextkit.engine._wrapping.Dialect`."""

    api: Api = "openai-responses"
    history_key = "input"

    def split(self, kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        if kwargs.get("previous_response_id") is not None:
            raise ContextkitError(
                "responses.create(previous_response_id=...) keeps the history on the server, "
                "where contextkit cannot compact it: pass the whole input instead"
            )
        raw = kwargs.pop("input")
        passed = [{"role": "user", "content": raw}] if isinstance(raw, str) else list(raw)
        head = {k: plain(kwargs.pop(k)) for k in ("model", "tools", "instructions") if k in kwargs}
        return passed, head

    def configure(self, head: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
        return _head_fields(parse_responses_request({**head, **params, "input": []}))

    def normal(self, message: Any) -> dict[str, Any]:
        payload: dict[str, Any] = plain(message)
        return payload

    def messages(self, payloads: list[dict[str, Any]]) -> tuple[Message, ...]:
        padded = _suffix(payloads, "responses")
        _, messages = from_responses_items(padded)
        return tuple(messages[1:] if padded is not payloads else messages)

    def appended(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [self.normal(item) for item in body.get("output", [])]


def _chat_recorder(session: WrapSession) -> Recorder:
    chunks: list[Mapping[str, Any]] = []

    def see(event: Any) -> None:
        chunks.append(plain(event))  # the completion is known only at the end

    def at_end() -> Mapping[str, Any] | None:
        assembled = assemble_chat_chunks(chunks)
        return assembled.completion if assembled.complete else None

    return Recorder(session, see, at_end)


def _responses_recorder(session: WrapSession) -> Recorder:
    def done(event: Any) -> Mapping[str, Any] | None:
        if getattr(event, "type", None) in ("response.completed", "response.incomplete"):
            body: Mapping[str, Any] = plain(event)["response"]
            return body
        return None

    return Recorder(session, done)


class _Resource:
    """``chat.completions`` or ``responses``: ``create`` compacts, the rest passes through."""

    def __init__(self, inner: Any, session: WrapSession, recorder: Any, is_async: bool) -> None:
        self._inner = inner
        self._session = session
        self._recorder = recorder
        self._async = is_async

    def create(self, **kwargs: Any) -> Any:
        payload = self._session.before(dict(kwargs))
        if self._async:
            return self._create_async(payload)
        response = self._inner.create(**payload)
        if payload.get("stream"):
            return RecordingStream(response, self._recorder(self._session))
        while (again := self._session.retrieval(response)) is not None:
            response = self._inner.create(**again)
        self._session.after(response)
        return response

    async def _create_async(self, payload: dict[str, Any]) -> Any:
        response = await self._inner.create(**payload)
        if payload.get("stream"):
            return AsyncRecordingStream(response, self._recorder(self._session))
        while (again := self._session.retrieval(response)) is not None:
            response = await self._inner.create(**again)
        self._session.after(response)
        return response

    def stream(self, **kwargs: Any) -> Any:
        raise ContextkitError(_REFUSED.format(name="stream"))

    def parse(self, **kwargs: Any) -> Any:
        raise ContextkitError(_REFUSED.format(name="parse"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Namespace:
    """``client.chat``: its ``completions`` wrapped, the rest the client's own."""

    def __init__(self, inner: Any, completions: _Resource) -> None:
        self._inner = inner
        self.completions = completions

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class WrappedOpenAI(ClientProxy):
    """The wrapped client (see the module docstring)."""

    def __init__(
        self,
        client: Any,
        strategy: Strategy | str | None,
        options: dict[str, Any],
        engine: ContextEngine | None = None,
    ) -> None:
        self._client = client
        is_async = isinstance(client.chat.completions, AsyncCompletions)
        chat_engine = engine if engine is not None and engine.api == "openai-chat" else None
        responses_engine = engine if engine is not None and engine.api != "openai-chat" else None
        self._chat = WrapSession(ChatCompletions(), strategy, options, chat_engine)
        self._responses = WrapSession(Responses(), strategy, options, responses_engine)
        completions = _Resource(client.chat.completions, self._chat, _chat_recorder, is_async)
        self.chat: Any = _Namespace(client.chat, completions)
        self.responses: Any = _Resource(
            client.responses, self._responses, _responses_recorder, is_async
        )

    @property
    def engine(self) -> ContextEngine:
        """The engine behind the API the harness calls; exists after one call."""
        used = [s.engine for s in (self._chat, self._responses) if s.engine is not None]
        if not used:
            raise ContextkitError("no call has been made through the wrapper yet")
        if len(used) > 1:
            raise ContextkitError(
                "both chat.completions and responses were called: each has its own engine "
                "(chat_engine, responses_engine)"
            )
        return used[0]

    @property
    def chat_engine(self) -> ContextEngine | None:
        return self._chat.engine

    @property
    def responses_engine(self) -> ContextEngine | None:
        return self._responses.engine


def wrap(
    client: Any,
    strategy: Strategy | str | None = None,
    *,
    engine: ContextEngine | None = None,
    **options: Any,
) -> WrappedOpenAI:
    """Wrap an ``openai.OpenAI`` or ``AsyncOpenAI`` client; ``options`` go to the
    :class:`ContextEngine`, or pass an existing ``engine`` (its ``api`` says which API it serves;
    then ``strategy`` and ``options`` must be left out)."""
    if engine is not None and (strategy is not None or options):
        raise ContextkitError("wrap(engine=...) takes the engine as it is: no strategy or options")
    if engine is not None and engine.api == "anthropic":
        raise ContextkitError("wrap(engine=...): the engine serves the anthropic API, not openai")
    return WrappedOpenAI(client, strategy, options, engine)


__all__ = ["ChatCompletions", "Responses", "WrappedOpenAI", "wrap"]
