"""The HTTP side of :class:`~contextkit.testing.fake_anthropic.FakeAnthropic`.

Contract: :func:`handler_for` makes a ``BaseHTTPRequestHandler`` class that passes every POST and
GET (path with its query, body, headers, method) to one ``handle`` function and writes back its
:class:`Answer`: JSON, or a server-sent-event stream of the same message
(:func:`contextkit.wire.stream_events`), with a ``request-id`` naming the response
(``req_fake_<n>`` for ``msg_fake_<n>``, as Claude Code records it in its transcripts).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from contextkit.wire import stream_events, to_sse


@dataclass(frozen=True)
class Answer:
    """What the server sends back: a status and a JSON body, or the body as an SSE stream."""

    status: int
    body: dict[str, Any]
    stream: bool = False
    sse: str | None = None
    """A stream's wire text as it is (OpenAI streams); None: Anthropic's events of ``body``."""

    def encode(self) -> tuple[str, bytes]:
        """The content type and the bytes on the wire."""
        if self.sse is not None:
            return "text/event-stream", self.sse.encode()
        if self.stream:
            return "text/event-stream", to_sse(stream_events(self.body)).encode()
        return "application/json", json.dumps(self.body).encode()


Handle = Callable[[str, str, Mapping[str, str], str], Answer]


def handler_for(handle: Handle) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the SDK reuses its connection
        # Headers and body go out in two writes; with Nagle on, the second waits for the
        # client's delayed ACK (about 40 ms a call).
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            self._answer("POST")

        def do_GET(self) -> None:
            self._answer("GET")

        def _answer(self, method: str) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length).decode("utf-8", errors="replace")
            answer = handle(self.path, raw, dict(self.headers.items()), method)
            kind, data = answer.encode()
            self.send_response(answer.status)
            self.send_header("content-type", kind)
            if answer.stream or answer.sse is not None:
                self.send_header("cache-control", "no-cache")
            self.send_header("content-length", str(len(data)))
            message_id = str(answer.body.get("id", ""))
            self.send_header("request-id", message_id.replace("msg_", "req_", 1) or "req_fake")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # tests read ``fake.requests``, not the access log

    return Handler


__all__ = ["Answer", "Handle", "handler_for"]
