"""A local OpenAI API server for tests: the real ``openai`` SDK talks to it over HTTP.

``FakeOpenAI(script, ...)`` is a context manager serving ``POST /v1/chat/completions`` (Chat
Completions) and ``POST /v1/responses`` (Responses) on ``127.0.0.1`` from a background thread;
point a client at ``server.base_url`` (it ends in ``/v1``, as the SDK's own default does). It
answers from the same script as :class:`~contextkit.testing.fake_anthropic.FakeAnthropic`: a
sequence of :class:`~contextkit.testing.fake_anthropic.Reply` steps used in order, or a callable
``(conversation) -> Reply``. A reply's blocks are written in the API's own form: text and tool
calls (``tool_calls`` with ``finish_reason`` ``tool_calls``; ``function_call`` output items),
``max_tokens`` as ``length`` / an ``incomplete`` response.

It rejects what the API rejects, with HTTP 400 and OpenAI's error body
``{"error": {"message", "type": "invalid_request_error", "param", "code"}}``:

- a body that is not JSON, lacks ``model`` or ``messages`` / ``input``, or has a top-level field
  the API does not know (``Unrecognized request argument supplied``: an Anthropic field such as
  ``system`` or ``cache_control`` leaking into an OpenAI request);
- ``previous_response_id`` (this server keeps no state);
- messages breaking the tool pairing (:func:`contextkit.messages.validate` with OpenAI's rules: a
  tool call without its result, a result without its call);
- input over ``context_window`` tokens (``context_length_exceeded``).

With ``"stream": true`` the answer is a server-sent-event stream: ``chat.completion.chunk``
objects then ``data: [DONE]`` (a last usage chunk when ``stream_options.include_usage``), or the
Responses events up to ``response.completed`` (:mod:`contextkit.wire.openai_sse`).

Usage is the counter's: ``prompt_tokens`` / ``input_tokens`` count the whole request; the cached
part is the longest run of leading messages this server was sent before in one request, counted
like OpenAI's automatic prefix cache (nothing under 1,024 tokens, then in steps of 128).

Every request is kept as a frozen :class:`~contextkit.testing.fake_anthropic.ReceivedRequest`;
leaving the ``with`` block with unused steps, or after a server failure (HTTP 500), raises
:class:`AssertionError`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Any

from contextkit.messages import Conversation, Message, parse_block, to_payload, validate
from contextkit.testing._fake_http import Answer, handler_for
from contextkit.testing.fake_anthropic import ReceivedRequest, Rejected, Reply, Script
from contextkit.tokens import ApproxCounter, TokenCounter
from contextkit.wire import CHAT_REQUEST_KEYS as CHAT_KEYS
from contextkit.wire import RESPONSES_REQUEST_KEYS as RESPONSES_KEYS
from contextkit.wire import (
    chat_chunks,
    parse_chat_request,
    parse_responses_request,
    responses_events,
    to_chat_messages,
    to_openai_sse,
    to_responses_items,
)

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128


def error_body(
    message: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """OpenAI's error JSON shape."""
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


def _invalid(message: str) -> Rejected:
    return Rejected(400, "invalid_request_error", message)


class FakeOpenAI:
    """A scripted OpenAI API on localhost (see the module docstring)."""

    def __init__(
        self, script: Script, *, counter: TokenCounter | None = None, context_window: int = 200_000
    ) -> None:
        self.counter = counter or ApproxCounter()
        self.context_window = context_window
        self._steps = None if callable(script) else list(script)
        self._answer = script if callable(script) else None
        self._used = 0
        self._seen: list[tuple[dict[str, Any], ...]] = []
        self._requests: list[ReceivedRequest] = []
        self._failures: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake server is not running: use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(self.handle))
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
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if exc_type is None:
            self.assert_done()

    @property
    def requests(self) -> tuple[ReceivedRequest, ...]:
        with self._lock:
            return tuple(self._requests)

    @property
    def rejections(self) -> tuple[ReceivedRequest, ...]:
        return tuple(r for r in self.requests if r.status == 400)

    def assert_done(self) -> None:
        problems = list(self._failures)
        unused = 0 if self._steps is None else len(self._steps) - self._used
        if unused:
            problems.append(f"{unused} scripted step(s) were never used")
        if problems:
            raise AssertionError("FakeOpenAI: " + "; ".join(problems))

    # -- serving -----------------------------------------------------------------------------

    def handle(
        self, path: str, raw: str, headers: Mapping[str, str] | None = None, method: str = "POST"
    ) -> Answer:
        seen = {k.lower(): v for k, v in (headers or {}).items()}
        route = path.split("?", 1)[0]
        with self._lock:
            index = len(self._requests)
            record: dict[str, Any] = {
                "index": index,
                "raw": raw,
                "path": path,
                "method": method,
                "headers": seen,
            }
            conversation: Conversation | None = None
            tokens: int | None = None
            try:
                if method != "POST" or route not in (CHAT_PATH, RESPONSES_PATH):
                    raise Rejected(404, "not_found_error", f"no route for {method} {path}")
                body, conversation = _parse(raw, route)
                tokens = self.counter.count_conversation(conversation)
                self._check(conversation, tokens)
                answer, response = self._reply(route, body, conversation, tokens, index)
            except Rejected as rejected:
                if rejected.status >= 500:
                    self._failures.append(f"request {index}: {rejected.message}")
                code = (
                    "context_length_exceeded"
                    if "maximum context length" in rejected.message
                    else None
                )
                self._requests.append(
                    ReceivedRequest(
                        **record,
                        conversation=conversation,
                        input_tokens=tokens,
                        status=rejected.status,
                        error=rejected.message,
                    )
                )
                return Answer(rejected.status, error_body(rejected.message, code=code))
            self._requests.append(
                ReceivedRequest(
                    **record,
                    conversation=conversation,
                    input_tokens=tokens,
                    status=200,
                    response=json.dumps(response),
                    streamed=answer.sse is not None,
                )
            )
            return answer

    def _check(self, conversation: Conversation, tokens: int) -> None:
        violations = validate(conversation, provider="openai")
        if violations:
            v = violations[0]
            raise _invalid(f"messages.[{v.message_index}]: {v.detail or v.code} ({v.code})")
        if tokens > self.context_window:
            raise _invalid(
                f"This model's maximum context length is {self.context_window} tokens. However, "
                f"your messages resulted in {tokens} tokens."
            )

    def _next_reply(self, conversation: Conversation) -> Reply:
        if self._answer is not None:
            try:
                return self._answer(conversation)
            except Exception as exc:  # the script's own bug: report it as the server failing
                raise Rejected(500, "server_error", f"the script raised {exc!r}") from None
        assert self._steps is not None
        if self._used >= len(self._steps):
            raise Rejected(500, "server_error", f"script exhausted after {len(self._steps)} steps")
        self._used += 1
        return self._steps[self._used - 1]

    def _cached(self, conversation: Conversation) -> int:
        """Tokens of the longest run of leading messages some earlier request had too."""
        payloads = tuple(to_payload(m) for m in conversation.messages)
        best = 0
        for earlier in self._seen:
            n = 0
            while n < min(len(earlier), len(payloads)) and earlier[n] == payloads[n]:
                n += 1
            best = max(best, n)
        self._seen.append(payloads)
        if best == 0:
            return 0
        prefix = self.counter.count_conversation(
            conversation.with_messages(conversation.messages[:best])
        )
        return 0 if prefix < CACHE_MIN_TOKENS else prefix - prefix % CACHE_STEP_TOKENS

    def _reply(
        self,
        route: str,
        body: Mapping[str, Any],
        conversation: Conversation,
        tokens: int,
        index: int,
    ) -> tuple[Answer, dict[str, Any]]:
        reply = self._next_reply(conversation)
        if reply.stop_reason not in FINISH:
            raise Rejected(500, "server_error", f"scripted stop_reason {reply.stop_reason!r}")
        message = Message(role="assistant", content=tuple(parse_block(b) for b in reply.content))
        output = reply.output_tokens
        if output is None:
            output = sum(self.counter.count_block(b) for b in message.blocks)
        cached = self._cached(conversation)
        model = str(body.get("model"))
        stream = body.get("stream") is True
        if route == CHAT_PATH:
            completion = _completion(
                message, reply.stop_reason, model, index, (tokens, cached, output)
            )
            if not stream:
                return Answer(200, completion), completion
            options = body.get("stream_options")
            usage = isinstance(options, Mapping) and options.get("include_usage") is True
            sse = to_openai_sse(chat_chunks(completion, include_usage=usage), named=False)
            return Answer(200, completion, sse=sse), completion
        response = _response(message, reply.stop_reason, model, index, (tokens, cached, output))
        if not stream:
            return Answer(200, response), response
        return Answer(
            200, response, sse=to_openai_sse(responses_events(response), named=True)
        ), response


def _parse(raw: str, route: str) -> tuple[dict[str, Any], Conversation]:
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise _invalid(f"We could not parse the JSON body of your request: {exc}") from None
    if not isinstance(body, dict):
        raise _invalid("The request body must be a JSON object")
    chat = route == CHAT_PATH
    known, history = (CHAT_KEYS, "messages") if chat else (RESPONSES_KEYS, "input")
    for field in ("model", history):
        if field not in body:
            raise _invalid(f"Missing required parameter: '{field}'.")
    unknown = sorted(set(body) - known)
    if unknown:
        raise _invalid(f"Unrecognized request argument supplied: {unknown[0]}")
    if body.get("previous_response_id") is not None:
        raise _invalid("previous_response_id: this test server keeps no responses")
    try:
        return body, (parse_chat_request(body) if chat else parse_responses_request(body))
    except (ValueError, TypeError, KeyError) as exc:
        raise _invalid(f"Invalid '{history}': {exc}") from None


def _completion(
    message: Message, stop: str, model: str, index: int, usage: tuple[int, int, int]
) -> dict[str, Any]:
    tokens, cached, output = usage
    chat = to_chat_messages(None, [message])[0]
    return {
        "id": f"chatcmpl-fake{index:06d}",
        "object": "chat.completion",
        "created": 1_700_000_000 + index,
        "model": model,
        "choices": [{"index": 0, "message": chat, "finish_reason": FINISH[stop], "logprobs": None}],
        "usage": {
            "prompt_tokens": tokens,
            "completion_tokens": output,
            "total_tokens": tokens + output,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def _response(
    message: Message, stop: str, model: str, index: int, usage: tuple[int, int, int]
) -> dict[str, Any]:
    tokens, cached, output = usage
    items = to_responses_items(None, [message])
    for n, item in enumerate(items):
        prefix = "fc" if item.get("type") == "function_call" else "msg"
        item.setdefault("id", f"{prefix}_fake{index:06d}_{n}")
        item.setdefault("status", "completed")
    incomplete = stop == "max_tokens"
    return {
        "id": f"resp_fake{index:06d}",
        "object": "response",
        "created_at": 1_700_000_000 + index,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "error": None,
        "model": model,
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + output,
        },
    }


__all__ = ["CHAT_PATH", "RESPONSES_PATH", "FakeOpenAI", "error_body"]
