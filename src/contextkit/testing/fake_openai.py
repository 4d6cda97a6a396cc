"""A local OpenAI API server for tests: the real ``openai`` SDK talks to it.

``FakeOpenAI(script)`` is a context manager serving ``POST /v1/chat/completions`` and
``POST /v1/responses`` on ``127.0.0.1`` from a background thread (point a client at
``server.base_url``, which ends in ``/v1``). The script is as for
:class:`~contextkit.testing.fake_anthropic.FakeAnthropic`: :class:`Reply` steps used in order (the
content in Anthropic-shaped blocks; text and ``tool_use`` are written as OpenAI messages or
items), or a callable ``(conversation) -> Reply``.

It is strict: a body the contextkit readers cannot parse, or whose messages break an invariant
(:func:`contextkit.messages.validate`: every tool call answered once, no orphan result, ...), is
answered 400 with OpenAI's error shape. ``"stream": true`` is answered with the API's stream:
``chat.completion.chunk`` objects then ``data: [DONE]`` (usage in a last chunk with
``stream_options.include_usage``), or the Responses events from ``response.created`` to
``response.completed``. Usage counts the input with the server's counter (nothing cached).
Every request is kept in :attr:`FakeOpenAI.requests` (path, body, status, error).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from contextkit.formats.openai_chat import parse_chat_request, to_chat_messages
from contextkit.formats.openai_responses import parse_responses_request, to_responses_items
from contextkit.messages import Conversation, Message, parse_block, validate
from contextkit.testing.fake_anthropic import Reply, Script
from contextkit.tokens import ApproxCounter, TokenCounter

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"


@dataclass(frozen=True)
class OpenAIRequest:
    index: int
    path: str
    body: Any
    status: int
    error: str | None
    stream: bool


class FakeOpenAI:
    """A scripted OpenAI Chat Completions and Responses API on localhost (module docstring)."""

    def __init__(self, script: Script, *, counter: TokenCounter | None = None) -> None:
        self.counter = counter or ApproxCounter()
        self._steps = None if callable(script) else list(script)
        self._answer = script if callable(script) else None
        self._used = 0
        self._lock = threading.Lock()
        self._requests: list[OpenAIRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake server is not running: use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> tuple[OpenAIRequest, ...]:
        with self._lock:
            return tuple(self._requests)

    def __enter__(self) -> FakeOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        if exc_type is None and self._steps is not None and self._used < len(self._steps):
            raise AssertionError(f"FakeOpenAI: {len(self._steps) - self._used} step(s) unused")

    # -- answering ---------------------------------------------------------------------------

    def handle(self, path: str, raw: str) -> tuple[int, dict[str, Any], bool]:
        """(status, body, stream) for one request."""
        route = path.split("?", 1)[0]
        with self._lock:
            index = len(self._requests)
            body: Any = None
            try:
                body = json.loads(raw)
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                conversation = self._parse(route, body)
                reply = self._next(conversation)
                answer = self._answer_body(route, body, conversation, reply, index)
            except (ValueError, LookupError) as exc:
                status = 404 if isinstance(exc, LookupError) else 400
                self._requests.append(OpenAIRequest(index, path, body, status, str(exc), False))
                error = {"message": str(exc), "type": "invalid_request_error", "param": None}
                return status, {"error": {**error, "code": None}}, False
            stream = body.get("stream") is True
            self._requests.append(OpenAIRequest(index, path, body, 200, None, stream))
            return 200, answer, stream

    def _parse(self, route: str, body: Mapping[str, Any]) -> Conversation:
        if route == CHAT_PATH:
            conversation = parse_chat_request(body)
        elif route == RESPONSES_PATH:
            conversation = parse_responses_request(body)
        else:
            raise LookupError(f"no route for POST {route}")
        if not isinstance(body.get("model"), str):
            raise ValueError("model: a model is required")
        violations = validate(conversation)
        if violations:
            v = violations[0]
            raise ValueError(f"messages.{v.message_index}: {v.detail or v.code} ({v.code})")
        return conversation

    def _next(self, conversation: Conversation) -> Reply:
        if self._answer is not None:
            return self._answer(conversation)
        assert self._steps is not None
        if self._used >= len(self._steps):
            raise ValueError(f"script exhausted after {len(self._steps)} steps")
        self._used += 1
        return self._steps[self._used - 1]

    def _answer_body(
        self,
        route: str,
        body: Mapping[str, Any],
        conversation: Conversation,
        reply: Reply,
        index: int,
    ) -> dict[str, Any]:
        message = Message(role="assistant", content=tuple(parse_block(b) for b in reply.content))
        prompt = self.counter.count_conversation(conversation)
        output = reply.output_tokens or sum(self.counter.count_block(b) for b in message.blocks)
        model = str(body["model"])
        if route == CHAT_PATH:
            chat = to_chat_messages(None, [message])[0]
            finish = "tool_calls" if chat.get("tool_calls") else "stop"
            return {
                "id": f"chatcmpl-fake{index:06d}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": chat, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": output,
                    "total_tokens": prompt + output,
                    "prompt_tokens_details": {"cached_tokens": 0},
                },
            }
        items = to_responses_items(None, [message])
        for n, item in enumerate(items):
            item.setdefault("id", f"item_fake{index:06d}_{n}")
            item.setdefault("status", "completed")
        return {
            "id": f"resp_fake{index:06d}",
            "object": "response",
            "created_at": int(time.time()),
            "model": model,
            "status": "completed",
            "output": items,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + output,
            },
        }


def chat_chunks(completion: Mapping[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects that stream ``completion``."""
    base = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }
    choice = completion["choices"][0]
    message = choice["message"]
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    text = message.get("content") or ""
    for start in range(0, len(text), 16):
        delta = {"content": text[start : start + 16]}
        yield {**base, "choices": [{"index": 0, "delta": delta}]}
    for n, call in enumerate(message.get("tool_calls") or ()):
        head = {"index": n, "id": call["id"], "type": "function"}
        name = {"name": call["function"]["name"], "arguments": ""}
        yield {
            **base,
            "choices": [{"index": 0, "delta": {"tool_calls": [{**head, "function": name}]}}],
        }
        args = call["function"]["arguments"]
        for start in range(0, len(args), 8):
            part = {"index": n, "function": {"arguments": args[start : start + 8]}}
            yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [part]}}]}
    finish = [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]
    yield {**base, "choices": finish}
    if include_usage:
        yield {**base, "choices": [], "usage": completion["usage"]}


def responses_events(response: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The Responses stream events of ``response`` (created, items, deltas, completed)."""
    shell = {**response, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "response": shell}
    for n, item in enumerate(response["output"]):
        if item.get("type") == "message":
            opened = {**item, "content": [], "status": "in_progress"}
            yield {"type": "response.output_item.added", "output_index": n, "item": opened}
            for c, part in enumerate(item.get("content") or ()):
                where = {"item_id": item["id"], "output_index": n, "content_index": c}
                yield {"type": "response.content_part.added", **where, "part": {**part, "text": ""}}
                text = part.get("text", "")
                for start in range(0, len(text), 16):
                    delta = text[start : start + 16]
                    yield {"type": "response.output_text.delta", **where, "delta": delta}
                yield {"type": "response.output_text.done", **where, "text": text}
                yield {"type": "response.content_part.done", **where, "part": part}
        else:
            added = {**item, "arguments": ""} if item.get("type") == "function_call" else item
            yield {"type": "response.output_item.added", "output_index": n, "item": added}
            if item.get("type") == "function_call":
                where = {"item_id": item["id"], "output_index": n}
                args = item["arguments"]
                yield {"type": "response.function_call_arguments.delta", **where, "delta": args}
                yield {"type": "response.function_call_arguments.done", **where, "arguments": args}
        yield {"type": "response.output_item.done", "output_index": n, "item": item}
    yield {"type": "response.completed", "response": dict(response)}


def _sse(route: str, body: Mapping[str, Any], request: Mapping[str, Any]) -> bytes:
    out: list[str] = []
    if route == CHAT_PATH:
        options = request.get("stream_options")
        usage = isinstance(options, Mapping) and options.get("include_usage") is True
        out = [f"data: {json.dumps(c)}\n\n" for c in chat_chunks(body, usage)]
        out.append("data: [DONE]\n\n")
    else:
        for number, event in enumerate(responses_events(body)):
            numbered = {**event, "sequence_number": number}
            out.append(f"event: {event['type']}\ndata: {json.dumps(numbered)}\n\n")
    return "".join(out).encode()


def _handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length).decode("utf-8", errors="replace")
            status, body, stream = server.handle(self.path, raw)
            if stream:
                data = _sse(self.path.split("?", 1)[0], body, json.loads(raw))
                kind = "text/event-stream"
            else:
                data, kind = json.dumps(body).encode(), "application/json"
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


__all__ = [
    "CHAT_PATH",
    "RESPONSES_PATH",
    "FakeOpenAI",
    "OpenAIRequest",
    "chat_chunks",
    "responses_events",
]
