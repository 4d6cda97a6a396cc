"""The proxy server: a Starlette app forwarding to the upstream with httpx, run by uvicorn.

Contract:

- Every request but ``GET /stats`` is forwarded to ``upstream + path + query`` with its method,
  body and headers (hop-by-hop headers, ``host``, ``content-length`` and ``accept-encoding``
  removed; httpx negotiates its own compression and the proxy answers uncompressed). A request
  the strategy leaves unchanged is forwarded byte for byte.
- A ``text/event-stream`` answer is passed on chunk by chunk as it arrives; any other answer is
  passed on whole, with its status and headers.
- An upstream that cannot be reached is answered 502, one that times out 504 (in the API's error
  shape); a stream that breaks mid-way ends with an ``error`` event the SDKs raise on. Whatever
  happens (the client going away included), the exchange is recorded exactly once
  (:class:`~contextkit.proxy._exchange.Exchange`), complete or marked incomplete.
- With a strategy, model calls are edited per conversation
  (:class:`~contextkit.proxy._conversations.Conversations`) and the answer carries
  ``x-contextkit-edit``; with ``dry_run`` the request goes out unchanged and the record says what
  the strategy would have sent. A strategy that fails forwards the request unchanged and the
  record says why: the proxy never breaks a client's call over its own edit.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextkit.engine import check_budget
from contextkit.errors import ContextkitError
from contextkit.proxy._apis import (
    MODEL_APIS,
    Api,
    api_of,
    error_body,
    error_event,
    parse_request,
    stream_requested,
    write_request,
)
from contextkit.proxy._conversations import Conversations, conversation_key
from contextkit.proxy._exchange import Exchange
from contextkit.proxy._record import RecordWriter, json_bytes, redacted, redacted_query
from contextkit.proxy._stats import Stats
from contextkit.strategies import Strategy

try:
    import anyio
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ContextkitError(
        f"contextkit proxy needs the 'proxy' extra ({exc.name} is missing): "
        "pip install 'contextkit[proxy]'"
    ) from None

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
_DROP_REQUEST = HOP_BY_HOP | {"host", "content-length", "accept-encoding"}
_DROP_RESPONSE = HOP_BY_HOP | {"content-length", "content-encoding"}
EDIT_HEADER = "x-contextkit-edit"


@dataclass(frozen=True)
class ProxyConfig:
    """How the proxy runs (the CLI's options)."""

    upstream: str
    strategy: Strategy | None = None
    dry_run: bool = False
    record_dir: Path | None = None
    budget_tokens: int = 150_000
    context_window: int = 200_000
    timeout_s: float = 600.0
    connect_timeout_s: float = 10.0
    max_conversations: int = 512
    """Conversations whose lanes (one engine each per thread of calls) and per-conversation
    stats are kept; the least recently used beyond it are dropped (stats: folded into one
    ``evicted`` row, so totals stay whole). The proxy's memory is bounded by this times the
    largest history a conversation sends."""
    max_body_mb: float = 32.0
    """Request bodies over this many megabytes (10^6 bytes) get a 413 in the API's error shape,
    and are neither forwarded nor kept (the record says how large they were). 32: Anthropic's own
    request limit."""


class Proxy:
    """The proxy's state (record writer, stats, conversations) and its ASGI app."""

    def __init__(
        self, config: ProxyConfig, *, on_line: Callable[[str], None] | None = None
    ) -> None:
        if config.strategy is not None:  # a bad budget fails at start, not at the first call
            check_budget(config.budget_tokens, config.context_window)
        self.config = config
        self.upstream = config.upstream.rstrip("/")
        self.on_line = on_line
        self.stats = Stats(max_conversations=config.max_conversations)
        self.writer = RecordWriter(config.record_dir) if config.record_dir else None
        self.conversations = (
            Conversations(
                config.strategy,
                budget_tokens=config.budget_tokens,
                context_window=config.context_window,
                max_conversations=config.max_conversations,
            )
            if config.strategy is not None
            else None
        )
        self.client: httpx.AsyncClient | None = None
        self.app = Starlette(
            routes=[
                Route("/stats", self.stats_endpoint, methods=["GET"]),
                Route("/{path:path}", self.forward, methods=_METHODS),
            ],
            lifespan=self._lifespan,
        )

    def _lifespan(self, app: Starlette) -> Any:
        proxy = self

        class _Life:
            async def __aenter__(self) -> None:
                timeout = httpx.Timeout(
                    proxy.config.timeout_s, connect=proxy.config.connect_timeout_s
                )
                limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
                proxy.client = httpx.AsyncClient(timeout=timeout, limits=limits)

            async def __aexit__(self, *exc: object) -> None:
                if proxy.client is not None:
                    await proxy.client.aclose()

        return _Life()

    async def stats_endpoint(self, request: Request) -> Response:
        return JSONResponse(self.stats.to_json())

    # -- forwarding --------------------------------------------------------------------------

    async def forward(self, request: Request) -> Response:
        path = request.url.path
        raw = await _capped_body(request, int(self.config.max_body_mb * 1_000_000))
        if raw is None:
            return self._too_large(request)
        query = request.url.query
        api = api_of(request.method, path)
        body: Any = _json(raw)
        key = (
            conversation_key(api, request.headers, body)
            if api and isinstance(body, dict)
            else "other"
        )
        exchange = Exchange(
            api=api,
            method=request.method,
            path=path + (f"?{redacted_query(query)}" if query else ""),  # as recorded
            conversation=key,
            request_headers=redacted(request.headers.items()),
            request=body if body is not None else raw.decode("utf-8", errors="replace"),
            streamed=isinstance(body, dict) and stream_requested(body),
        )
        content = self._edited(exchange, api, body, raw)
        drop = _DROP_REQUEST | _named_in_connection(request.headers.get("connection", ""))
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in drop]
        assert self.client is not None, "the proxy is not started (lifespan)"
        upstream = self.client.build_request(
            request.method,
            self.upstream + path + (f"?{query}" if query else ""),  # as the client sent it
            headers=headers,
            content=content,
        )
        try:
            answer = await self.client.send(upstream, stream=True)
        except httpx.TimeoutException as exc:
            return self._failed(exchange, 504, f"upstream timed out ({type(exc).__name__})")
        except httpx.HTTPError as exc:
            return self._failed(
                exchange, 502, f"upstream unreachable ({type(exc).__name__}: {exc})"
            )
        drop = _DROP_RESPONSE | _named_in_connection(answer.headers.get("connection", ""))
        out_headers = {k: v for k, v in answer.headers.items() if k.lower() not in drop}
        if exchange.edit is not None:
            summary = exchange.edit.summary()
            out_headers[EDIT_HEADER] = (
                ("dry-run: would " + summary) if exchange.dry_run else summary
            )
        exchange.headers_arrived(answer.status_code, redacted(answer.headers.items()))
        exchange.streamed = answer.headers.get("content-type", "").startswith("text/event-stream")
        if exchange.streamed:
            return StreamingResponse(
                self._stream(exchange, answer), status_code=answer.status_code, headers=out_headers
            )
        try:
            data = await answer.aread()
        except httpx.HTTPError as exc:
            return self._failed(exchange, 502, f"upstream body failed ({type(exc).__name__})")
        finally:
            await answer.aclose()
        exchange.chunks.append(data)
        self._finish(exchange)
        return Response(data, status_code=answer.status_code, headers=out_headers)

    def _edited(self, exchange: Exchange, api: Api | None, body: Any, raw: bytes) -> bytes:
        """The bytes to forward: the body the strategy made, or the original ones."""
        exchange.forwarded = exchange.request
        if self.conversations is None or api not in MODEL_APIS or not isinstance(body, dict):
            return raw
        assert api is not None
        exchange.dry_run = self.config.dry_run
        if api == "openai-responses" and body.get("previous_response_id"):
            exchange.edit_error = "not edited: previous_response_id keeps the history upstream"
            return raw
        try:
            conversation = parse_request(api, body)
            view, edit, lane = self.conversations.apply(exchange.conversation, api, conversation)
            edited = write_request(api, view)
        except (ContextkitError, ValueError, TypeError, KeyError) as exc:
            exchange.edit_error = f"not edited: {type(exc).__name__}: {exc}"
            return raw
        exchange.edit, exchange.lane = edit, lane
        if self.config.dry_run:
            exchange.would_forward = edited
            return raw
        if edited == body:
            return raw
        exchange.forwarded = edited
        return json_bytes(edited)

    async def _stream(self, exchange: Exchange, answer: httpx.Response) -> AsyncIterator[bytes]:
        try:
            async for chunk in answer.aiter_bytes():
                exchange.chunks.append(chunk)
                yield chunk
            if _cut_short(exchange):
                exchange.error = "upstream stream ended before its final event"
                assert exchange.api is not None
                yield error_event(exchange.api, f"contextkit proxy: {exchange.error}")
        except httpx.HTTPError as exc:
            exchange.error = f"upstream stream broke ({type(exc).__name__})"
            assert exchange.api is not None
            yield error_event(exchange.api, f"contextkit proxy: {exchange.error}")
        except BaseException:
            exchange.client_gone = True  # cancelled: the client disconnected
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await answer.aclose()
            self._finish(exchange)

    def _too_large(self, request: Request) -> Response:
        path, cap = request.url.path, self.config.max_body_mb
        size = request.headers.get("content-length")
        said = f"{int(size):,} bytes" if size and size.isdigit() else "a body"
        exchange = Exchange(
            api=api_of(request.method, path),
            method=request.method,
            path=path + (f"?{redacted_query(request.url.query)}" if request.url.query else ""),
            conversation="other",
            request_headers=redacted(request.headers.items()),
            request=f"<{said} over the {cap:g} MB cap: not kept>",
        )
        message = f"contextkit proxy: the request body is over the {cap:g} MB cap (--max-body-mb)"
        return self._failed(exchange, 413, message)

    def _failed(self, exchange: Exchange, status: int, message: str) -> Response:
        exchange.error, exchange.status = message, status
        self._finish(exchange)
        return JSONResponse(error_body(exchange.api or "anthropic", status, message), status)

    def _finish(self, exchange: Exchange) -> None:
        line = exchange.finish(self.writer, self.stats, self.conversations)
        if line is not None and self.on_line is not None:
            self.on_line(line)


_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


async def _capped_body(request: Request, cap: int) -> bytes | None:
    """The request body, or None once it is over ``cap`` bytes (a declared length over it is not
    read at all; a chunked body is read no further than the cap)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        return None
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            return None
        parts.append(chunk)
    return b"".join(parts)


def _cut_short(exchange: Exchange) -> bool:
    """A model API's successful stream that ended without its final event (the upstream closed
    the connection early): the client is told with an error event, so its SDK raises instead of
    returning a partial answer (``stop_reason=None``) as if it were whole."""
    if exchange.api not in MODEL_APIS or exchange.status != 200 or not exchange.chunks:
        return False
    assembled = exchange.response()[1]
    return assembled is not None and not assembled.complete


def _named_in_connection(value: str) -> frozenset[str]:
    """Headers a ``Connection`` header names are hop-by-hop too (RFC 9110, 7.6.1)."""
    return frozenset(name.strip().lower() for name in value.split(",") if name.strip())


def _json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # not JSON (a number past the limit, too deep): raw
        return None


__all__ = ["EDIT_HEADER", "HOP_BY_HOP", "Proxy", "ProxyConfig"]
