"""A local Anthropic Messages API server for tests: the real ``anthropic`` SDK talks to it.

``FakeAnthropic(script, ...)`` is a context manager that serves ``POST /v1/messages`` (and
``/v1/messages/count_tokens``; a query such as ``?beta=true`` is accepted) on ``127.0.0.1`` from a
background thread; point a client at ``server.base_url``. It answers from a *script*: a sequence
of :class:`Reply` steps, used in order, or a callable ``(conversation) -> Reply`` that answers
every call.

It rejects what the provider rejects, with HTTP 400 and Anthropic's error body
``{"type": "error", "error": {"type": "invalid_request_error", "message": ...}}``:

- a body without ``model``, ``max_tokens`` or ``messages``, or that is not a request at all;
- messages breaking an invariant (:func:`contextkit.messages.validate`: tool pairing, roles,
  empty content, ...);
- more than 4 ``cache_control`` breakpoints, or one on a thinking block;
- thinking blocks of the latest assistant message that differ from what this server sent (text or
  signature edited, unknown signature, or, with thinking enabled, blocks dropped or reordered): the
  server keeps every thinking block it answered;
- input over ``context_window`` tokens as counted by the given counter: "prompt is too long".

A request with ``"stream": true`` that passes these checks is answered with a server-sent-event
stream of the same message (:func:`contextkit.wire.stream_events`: ``message_start`` with
the input and cache usage, block starts and ``text_delta`` / ``input_json_delta`` /
``thinking_delta`` + ``signature_delta`` deltas, ``message_delta`` with the stop reason and output
tokens, ``message_stop``); a rejected one gets the same HTTP 400 JSON error as without streaming,
as the provider answers before a stream starts.

Usage is realistic: ``input_tokens``, ``cache_creation_input_tokens`` (with the 5m/1h split) and
``cache_read_input_tokens`` come from :class:`contextkit.cache.CacheSimulator` fed with every
accepted request in order (calls taken as back to back, so nothing expires); ``cache=None``
reports the plain counted input instead, uncached. ``output_tokens`` counts the reply's blocks
(or ``Reply.output_tokens``). These are the counter's numbers, not Claude's tokenizer.
``Reply.usage`` overrides any reported field, e.g. ``{"input_tokens": 190_000}`` to make a
client believe its context is nearly full (Claude Code then auto-compacts).

Every request received is kept as a frozen :class:`ReceivedRequest` (path with its query, headers,
raw body, parsed conversation, counted tokens, status, error or response, whether it streamed)
for assertions; other methods and paths are answered 404 and recorded too. Like openai-agents'
``ScriptedModel``, leaving the ``with`` block with script steps unused, or after the server failed
(script exhausted, a callable raised: HTTP 500), raises :class:`AssertionError`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contextkit.cache import AnthropicCache, CacheSimulator
from contextkit.engine import MAX_BREAKPOINTS, count_breakpoints
from contextkit.messages import (
    Block,
    Conversation,
    RedactedThinkingBlock,
    ThinkingBlock,
    parse_block,
    parse_conversation,
    to_payload,
    validate,
)
from contextkit.testing._fake_http import Answer, handler_for
from contextkit.tokens import ApproxCounter, TokenCounter

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
STOP_REASONS = frozenset(
    {
        "end_turn",
        "tool_use",
        "max_tokens",
        "stop_sequence",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)


class Reply(BaseModel):
    """One scripted answer: the assistant's content blocks (wire payloads) and stop reason."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: tuple[Mapping[str, Any], ...]
    stop_reason: str = "end_turn"
    output_tokens: int | None = Field(None, ge=0)
    """Reported output tokens; None: the counter's count of ``content``."""
    usage: Mapping[str, Any] | None = None
    """Reported usage fields that replace the simulated ones (``input_tokens``, ...)."""

    @classmethod
    def text(cls, text: str, stop_reason: str = "end_turn") -> Reply:
        return cls(content=({"type": "text", "text": text},), stop_reason=stop_reason)

    @classmethod
    def tool_call(
        cls, id: str, name: str, input: Mapping[str, Any], text: str | None = None
    ) -> Reply:
        """A ``tool_use`` answer (with a short text before it when ``text`` is given)."""
        use = {"type": "tool_use", "id": id, "name": name, "input": dict(input)}
        blocks = ({"type": "text", "text": text}, use) if text else (use,)
        return cls(content=blocks, stop_reason="tool_use")

    @classmethod
    def of(cls, *blocks: Block | Mapping[str, Any], stop_reason: str = "end_turn") -> Reply:
        """From block models or payloads (thinking blocks without a signature get one)."""
        payloads = tuple(b if isinstance(b, Mapping) else to_payload(b) for b in blocks)
        return cls(content=payloads, stop_reason=stop_reason)


Script = Sequence[Reply] | Callable[[Conversation], Reply]


class ReceivedRequest(BaseModel):
    """One ``POST /v1/messages`` as the server received it, and what it answered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    raw: str
    """The body exactly as received."""
    path: str = MESSAGES_PATH
    """The request path with its query (``/v1/messages?beta=true``)."""
    method: str = "POST"
    headers: Mapping[str, str] = Field(default_factory=dict)
    """The request headers, names lower-cased."""
    streamed: bool = False
    """True when the answer was a server-sent-event stream (``response`` holds its message)."""
    conversation: Conversation | None
    """The body parsed (None when it did not parse)."""
    input_tokens: int | None
    """The input as counted by the server's counter (None when the body did not parse)."""
    status: int
    error: str | None = None
    response: str | None = None
    """The response body (JSON text) when ``status`` is 200."""

    @property
    def body(self) -> dict[str, Any]:
        """A fresh copy of the body (the record itself never changes)."""
        data: dict[str, Any] = json.loads(self.raw)
        return data

    @property
    def accepted(self) -> bool:
        return self.status == 200


class Rejected(Exception):
    """What the provider would answer instead of a message (status, error type, message)."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


def error_body(kind: str, message: str) -> dict[str, Any]:
    """Anthropic's error JSON shape."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def _invalid(message: str) -> Rejected:
    return Rejected(400, "invalid_request_error", message)


def _parse(raw: str) -> Conversation:
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise _invalid(f"There was an error parsing the body: {exc}") from None
    if not isinstance(body, dict):
        raise _invalid("The request body must be a JSON object")
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            raise _invalid(f"{field}: Field required")
    if not isinstance(body.get("stream", False), bool):
        raise _invalid("stream: Input should be a valid boolean")
    try:
        return parse_conversation(body)
    except ValidationError as exc:
        raise _invalid(str(exc).splitlines()[0]) from None


def _thinking_locations(conversation: Conversation) -> Iterator[tuple[int, int, Block]]:
    for i, message in enumerate(conversation.messages):
        for j, block in enumerate(message.blocks):
            if isinstance(block, ThinkingBlock | RedactedThinkingBlock):
                yield i, j, block


def _check_breakpoints(conversation: Conversation) -> None:
    found = count_breakpoints(conversation)
    if found > MAX_BREAKPOINTS:
        raise _invalid(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {found}."
        )
    for i, j, block in _thinking_locations(conversation):
        if (block.model_extra or {}).get("cache_control") is not None:
            raise _invalid(f"messages.{i}.content.{j}: cache_control cannot be set on {block.type}")


def _check_invariants(conversation: Conversation) -> None:
    violations = validate(conversation)
    if violations:
        v = violations[0]
        where = f"messages.{v.message_index}" if v.message_index is not None else "messages"
        if v.block_index is not None:
            where += f".content.{v.block_index}"
        raise _invalid(f"{where}: {v.detail or v.code} ({v.code})")


def _signature(text: str) -> str:
    return "sig_" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _thinking_key(block: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)


class _Thinking:
    """Every thinking block the server sent, to hold the latest assistant message to them."""

    def __init__(self) -> None:
        self.sent: set[str] = set()
        self.by_tool_use: dict[str, list[str]] = {}

    def sign(self, content: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The content with signed thinking blocks, remembered."""
        out = [dict(b) for b in content]
        for block in out:
            if block.get("type") == "thinking" and not block.get("signature"):
                block["signature"] = _signature(str(block.get("thinking", "")))
        keys = [_thinking_key(b) for b in out if b.get("type") in ("thinking", "redacted_thinking")]
        self.sent.update(keys)
        for block in out:
            if block.get("type") == "tool_use":
                self.by_tool_use[str(block.get("id"))] = keys
        return out

    def check(self, conversation: Conversation, thinking_enabled: bool) -> None:
        messages = conversation.messages
        last = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), None
        )
        if last is None:
            return
        message = messages[last]
        keys = [
            _thinking_key(to_payload(b))
            for b in message.blocks
            if isinstance(b, ThinkingBlock | RedactedThinkingBlock)
        ]
        if any(k not in self.sent for k in keys):
            raise _invalid(
                f"messages.{last}: thinking or redacted_thinking blocks in the latest assistant "
                "message cannot be modified. These blocks must remain as they were in the "
                "original response."
            )
        expected = next(
            (self.by_tool_use[u.id] for u in message.tool_uses() if u.id in self.by_tool_use), None
        )
        if thinking_enabled and expected is not None and keys != expected:
            raise _invalid(
                f"messages.{last}: the latest assistant message must keep the thinking blocks of "
                "the original response, unmodified and in order, when thinking is enabled"
            )


class FakeAnthropic:
    """A scripted Anthropic Messages API on localhost (see the module docstring)."""

    def __init__(
        self,
        script: Script,
        *,
        counter: TokenCounter | None = None,
        context_window: int = 200_000,
        cache: AnthropicCache | None = None,
        use_cache: bool = True,
    ) -> None:
        self.counter = counter or ApproxCounter()
        self.context_window = context_window
        self._steps = None if callable(script) else list(script)
        self._answer = script if callable(script) else None
        self._used = 0
        config = cache or AnthropicCache()
        self._cache = CacheSimulator(config, self.counter) if use_cache else None
        self._thinking = _Thinking()
        self._requests: list[ReceivedRequest] = []
        self._others: list[ReceivedRequest] = []
        self._failures: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.count_tokens_calls = 0

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake server is not running: use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeAnthropic:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(self.handle))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None:
            self.assert_done()

    # -- what happened -----------------------------------------------------------------------

    @property
    def requests(self) -> tuple[ReceivedRequest, ...]:
        with self._lock:
            return tuple(self._requests)

    @property
    def other_requests(self) -> tuple[ReceivedRequest, ...]:
        """Requests to any other path or method (``count_tokens``, 404s), in order."""
        with self._lock:
            return tuple(self._others)

    @property
    def accepted(self) -> tuple[ReceivedRequest, ...]:
        return tuple(r for r in self.requests if r.accepted)

    @property
    def rejections(self) -> tuple[ReceivedRequest, ...]:
        return tuple(r for r in self.requests if r.status == 400)

    @property
    def unused_steps(self) -> int:
        return 0 if self._steps is None else len(self._steps) - self._used

    def assert_done(self) -> None:
        """Fail when script steps went unused or the server failed (HTTP 500)."""
        problems = list(self._failures)
        if self.unused_steps:
            problems.append(f"{self.unused_steps} scripted step(s) were never used")
        if problems:
            raise AssertionError("FakeAnthropic: " + "; ".join(problems))

    # -- serving -----------------------------------------------------------------------------

    def handle(
        self,
        path: str,
        raw: str,
        headers: Mapping[str, str] | None = None,
        method: str = "POST",
    ) -> Answer:
        """The answer to one request (serialised: the script runs in order). ``path`` may carry
        a query string; ``headers`` are recorded with the request."""
        seen = {k.lower(): v for k, v in (headers or {}).items()}
        route = path.split("?", 1)[0]
        with self._lock:
            if method == "POST" and route == MESSAGES_PATH:
                return self._messages(raw, path, seen)
            if method == "POST" and route == COUNT_TOKENS_PATH:
                answer = self._count_tokens(raw)
            else:
                answer = Answer(404, error_body("not_found_error", f"no route for {method} {path}"))
            other = ReceivedRequest(
                index=len(self._others),
                raw=raw,
                path=path,
                method=method,
                headers=seen,
                conversation=None,
                input_tokens=answer.body.get("input_tokens"),
                status=answer.status,
                response=json.dumps(answer.body),
            )
            self._others.append(other)
            return answer

    def _count_tokens(self, raw: str) -> Answer:
        self.count_tokens_calls += 1
        try:
            body = json.loads(raw)
            body.setdefault("max_tokens", 1)
            conversation = parse_conversation(body)
        except (ValueError, ValidationError, AttributeError) as exc:
            return Answer(400, error_body("invalid_request_error", str(exc).splitlines()[0]))
        return Answer(200, {"input_tokens": self.counter.count_conversation(conversation)})

    def _messages(self, raw: str, path: str, headers: Mapping[str, str]) -> Answer:
        index = len(self._requests)
        conversation: Conversation | None = None
        tokens: int | None = None
        seen: dict[str, Any] = {"index": index, "raw": raw, "path": path, "headers": headers}
        try:
            conversation = _parse(raw)
            tokens = self.counter.count_conversation(conversation)
            self._check(conversation, tokens)
            body = self._reply(conversation, index)
        except Rejected as rejected:
            if rejected.status >= 500:
                self._failures.append(f"request {index}: {rejected.message}")
            self._requests.append(
                ReceivedRequest(
                    **seen,
                    conversation=conversation,
                    input_tokens=tokens,
                    status=rejected.status,
                    error=rejected.message,
                )
            )
            return Answer(rejected.status, error_body(rejected.kind, rejected.message))
        stream = bool((conversation.model_extra or {}).get("stream"))
        self._requests.append(
            ReceivedRequest(
                **seen,
                conversation=conversation,
                input_tokens=tokens,
                status=200,
                response=json.dumps(body),
                streamed=stream,
            )
        )
        return Answer(200, body, stream=stream)

    def _check(self, conversation: Conversation, tokens: int) -> None:
        _check_breakpoints(conversation)
        _check_invariants(conversation)
        thinking = (conversation.model_extra or {}).get("thinking")
        enabled = isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")
        self._thinking.check(conversation, enabled)
        if tokens > self.context_window:
            raise _invalid(f"prompt is too long: {tokens} tokens > {self.context_window} maximum")

    def _next_reply(self, conversation: Conversation) -> Reply:
        if self._answer is not None:
            try:
                return self._answer(conversation)
            except Exception as exc:  # the script's own bug: report it as the server failing
                raise Rejected(500, "api_error", f"the script raised {exc!r}") from None
        assert self._steps is not None
        if self._used >= len(self._steps):
            raise Rejected(500, "api_error", f"script exhausted after {len(self._steps)} steps")
        self._used += 1
        return self._steps[self._used - 1]

    def _reply(self, conversation: Conversation, index: int) -> dict[str, Any]:
        reply = self._next_reply(conversation)
        if reply.stop_reason not in STOP_REASONS:
            raise Rejected(500, "api_error", f"scripted stop_reason {reply.stop_reason!r}")
        content = self._thinking.sign(reply.content)
        output = reply.output_tokens
        if output is None:
            output = sum(self.counter.count_block(parse_block(b)) for b in content)
        return {
            "id": f"msg_fake_{index:06d}",
            "type": "message",
            "role": "assistant",
            "model": conversation.model,
            "content": content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": _overridden(self._usage(conversation, output), reply.usage or {}),
        }

    def _usage(self, conversation: Conversation, output: int) -> dict[str, Any]:
        if self._cache is None:
            total = self.counter.count_conversation(conversation)
            w5m = w1h = read = 0
        else:
            usage = self._cache.step(conversation).usage
            total, w5m, w1h, read = (
                usage.input_tokens,
                usage.cache_write_5m,
                usage.cache_write_1h,
                usage.cache_read,
            )
        return {
            "input_tokens": total,
            "cache_creation_input_tokens": w5m + w1h,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": w5m, "ephemeral_1h_input_tokens": w1h},
            "output_tokens": output,
            "service_tier": "standard",
        }


def _overridden(usage: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``usage`` with the scripted fields; a new cache write total resets the 5m/1h split to
    match it (clients read the split, not the total)."""
    out = {**usage, **override}
    if "cache_creation_input_tokens" in override and "cache_creation" not in override:
        total = override["cache_creation_input_tokens"]
        out["cache_creation"] = {"ephemeral_5m_input_tokens": total, "ephemeral_1h_input_tokens": 0}
    return out


def tool_loop_replies(
    calls: int, *, name: str = "read_file", final: str = "done"
) -> tuple[Reply, ...]:
    """``calls`` tool calls (ids ``toolu_0000``...) then a final text answer: a loop's script."""
    steps = [
        Reply.tool_call(f"toolu_{i:04d}", name, {"path": f"src/file_{i}.py"}, text=f"Step {i}.")
        for i in range(calls)
    ]
    return (*steps, Reply.text(final))


__all__ = [
    "COUNT_TOKENS_PATH",
    "MESSAGES_PATH",
    "Answer",
    "FakeAnthropic",
    "ReceivedRequest",
    "Rejected",
    "Reply",
    "Script",
    "error_body",
    "tool_loop_replies",
]
