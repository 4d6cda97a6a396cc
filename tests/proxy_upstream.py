"""A streaming Anthropic upstream for the proxy's load and fault tests.

Streams drip: each server-sent event is its own HTTP chunk, ``drip_s`` apart. The first user
message picks the behaviour: ``fault:429`` / ``fault:500`` / ``fault:529`` answer that error;
``fault:slow`` waits ``slow_s`` before answering (longer than the proxy's timeout);
``fault:cut`` sends half the stream then drops the connection; ``fault:end`` sends half the
stream then ends the response cleanly (no final event); ``fault:long`` streams
about 60 events slowly, ``fault:endless`` about 450 (10 s and more: for a client that goes away
mid-stream); anything else streams a short text answer.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from contextkit.wire import stream_events, to_sse

LONG_DRIP_S = 0.025
"""``fault:long`` streams this slowly at least: a client that goes away finds it still running."""
ERRORS = {
    "429": ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    "500": ("api_error", "Internal server error"),
    "529": ("overloaded_error", "Overloaded"),
}


def _message(text: str, model: str, index: int) -> dict[str, Any]:
    return {
        "id": f"msg_up_{index:06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 100 + index % 7,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 12,
        },
    }


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default backlog of 5 resets connections under load
    daemon_threads = True


class DripUpstream:
    def __init__(self, drip_s: float = 0.002, slow_s: float = 3.0) -> None:
        self.drip_s = drip_s
        self.slow_s = slow_s
        self.count = 0
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> DripUpstream:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def next_index(self) -> int:
        with self._lock:
            self.count += 1
            return self.count


def _first_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else str(content[0].get("text", ""))


def _handler(server: DripUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw)
                first = _first_text(body)
            except (ValueError, RecursionError, KeyError, IndexError, TypeError, AttributeError):
                problem = {"type": "invalid_request_error", "message": "not a valid request"}
                self._json(400, {"type": "error", "error": problem})
                return
            index = server.next_index()
            fault = first.split(":", 1)[1].split()[0] if first.startswith("fault:") else ""
            if fault in ERRORS:
                kind, message = ERRORS[fault]
                self._json(
                    int(fault), {"type": "error", "error": {"type": kind, "message": message}}
                )
                return
            if fault == "slow":
                time.sleep(server.slow_s)
            words = {"long": 60, "endless": 600}.get(fault, 6)
            text = " ".join(f"word{i}" for i in range(words))
            events = stream_events(_message(text, body["model"], index), chunk_chars=8)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("request-id", f"req_up_{index:06d}")
            self.end_headers()
            for n, event in enumerate(events):
                if fault == "cut" and n == len(events) // 2:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if fault == "end" and n == len(events) // 2:
                    break  # the body ends well formed, without the final event
                if not self._chunk(to_sse([event]).encode()):
                    return
                slow = fault in ("long", "endless")
                time.sleep(max(server.drip_s, LONG_DRIP_S) if slow else server.drip_s)
            self.wfile.write(b"0\r\n\r\n")

        def _chunk(self, data: bytes) -> bool:
            try:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            except OSError:  # the proxy went away (its client disconnected)
                self.close_connection = True
                return False
            return True

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
