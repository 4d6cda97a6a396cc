"""The ``anthropic`` wrapper end to end: the real SDK against the local fake server.

No part of the SDK is mocked: requests go over HTTP to
``contextkit.testing.fake_anthropic.FakeAnthropic``,
which rejects what the provider rejects (invariants, breakpoints, thinking edits, window).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import pytest

from agent_loop_helper import (
    BUDGET_TOKENS,
    MODEL,
    SYSTEM,
    TOOLS,
    WINDOW_TOKENS,
    client_for,
    engine_options,
    resume_engine,
    run_loop,
    strategy,
)
from contextkit.cache import AnthropicCache
from contextkit.engine import RETRIEVE_TOOL_NAME, read_checkpoint
from contextkit.engine.anthropic import wrap
from contextkit.errors import ContextkitError
from contextkit.messages import (
    INTERRUPTED_TEXT,
    Conversation,
    ThinkingBlock,
    ToolResultBlock,
    to_payload,
)
from contextkit.strategies import PLACEHOLDER_PREFIX, EvictToolResults
from contextkit.testing.fake_anthropic import FakeAnthropic, Reply, tool_loop_replies
from contextkit.tokens import ApproxCounter
from contextkit.wire import assemble_stream, stream_events, to_sse

HELPER = Path(__file__).parents[1] / "agent_loop_helper.py"
TASK: Any = {"role": "user", "content": "Fix the failing test."}


def _server(script: Any, **options: Any) -> FakeAnthropic:
    return FakeAnthropic(script, counter=ApproxCounter(), context_window=WINDOW_TOKENS, **options)


def _history_tokens(history: list[dict[str, Any]]) -> int:
    """What the full history would cost as one request (what the harness would send unwrapped)."""
    plain = json.loads(json.dumps(history, default=lambda o: o.model_dump(exclude_none=True)))
    body = {"model": MODEL, "system": SYSTEM, "tools": TOOLS, "messages": plain}
    return ApproxCounter().count_conversation(Conversation.model_validate(body))


# -- (a) a long loop stays under budget --------------------------------------------------------


def test_300_call_loop_stays_under_budget_while_history_grows(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    with (
        _server(tool_loop_replies(299)) as server,
        client_for(server.base_url, audit_path=audit) as client,
    ):
        history: list[dict[str, Any]] = [TASK]
        calls, stop = run_loop(client, history)
        assert (calls, stop) == (300, "end_turn")
        assert server.rejections == ()
        seen = server.requests
        assert len(seen) == 300
        assert max(r.input_tokens or 0 for r in seen) <= BUDGET_TOKENS
        assert len(history) == 600
        assert _history_tokens(history) > 50 * BUDGET_TOKENS
        assert len(client.engine.tape) == 600
        # The audit log holds exactly the bodies the server received, in order.
        lines = [json.loads(line) for line in audit.read_text().splitlines()]
        assert [line["request"] for line in lines] == [r.body for r in seen]


def test_without_compaction_the_same_loop_is_rejected() -> None:
    """The control: the fake server does reject an over-long prompt, so the test above can fail."""

    def script(conversation: Conversation) -> Reply:
        n = len(conversation.messages)
        return Reply.tool_call(f"toolu_{n}", "read_file", {"path": f"f{n}.py"})

    with _server(script) as server:
        with (
            _sdk(server) as sdk,
            pytest.raises(anthropic.BadRequestError, match="prompt is too long") as info,
        ):
            run_loop(wrap(sdk, None, **engine_options()), [TASK])
        assert info.value.status_code == 400
        assert info.value.body == {  # the SDK hands over Anthropic's error object
            "type": "error",
            "error": {"type": "invalid_request_error", "message": server.rejections[0].error},
        }


# -- (b) the checkpoint survives a kill --------------------------------------------------------


def _wait_for(predicate: Any, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the child process")
        time.sleep(0.05)


def _recorded_calls(path: Path) -> int:
    try:
        return len(read_checkpoint(path).calls)
    except ContextkitError:
        return 0


def test_checkpoint_survives_a_kill_and_the_loop_resumes(tmp_path: Path) -> None:
    total, hang_at = 120, 60
    answered = 0

    def script(conversation: Conversation) -> Reply:
        nonlocal answered
        answered += 1
        if answered >= total:
            return Reply.text("All tests pass.")
        return Reply.tool_call(f"toolu_{answered:04d}", "read_file", {"path": f"f{answered}.py"})

    checkpoint = tmp_path / "loop.ckpt"
    with _server(script) as server:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HELPER.parent), *sys.path])}
        child = subprocess.Popen(
            [sys.executable, str(HELPER), server.base_url, str(checkpoint), str(hang_at)], env=env
        )
        try:
            _wait_for(lambda: _recorded_calls(checkpoint) >= hang_at or child.poll() is not None)
            assert child.poll() is None, "the child exited before it was killed"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert child.returncode == -signal.SIGKILL

        engine, receipts = resume_engine(str(checkpoint))
        assert [r.action for r in receipts] == ["inserted"]  # the hung tool's call, answered
        assert engine.tape[-1].role == "user"
        assert engine.tape[-1].blocks[0].model_dump().get("content") == INTERRUPTED_TEXT
        history = [to_payload(m) for m in engine.tape]
        with client_for(server.base_url, engine=engine) as client:
            calls, stop = run_loop(client, history)

    assert stop == "end_turn"
    assert hang_at + calls == total
    assert server.rejections == ()
    assert max(r.input_tokens or 0 for r in server.requests) <= BUDGET_TOKENS
    assert len(engine.calls) == total


# -- (c) an edited history resets the view ------------------------------------------------------


def test_an_edited_history_resets_the_view() -> None:
    replies = [Reply.text("Which file?"), *tool_loop_replies(2)]
    with _server(replies) as server, client_for(server.base_url) as client:
        history: list[dict[str, Any]] = [TASK]
        first = client.messages.create(
            model=MODEL, max_tokens=100, system=SYSTEM, tools=TOOLS, messages=history
        )
        history += [{"role": "assistant", "content": first.content}]
        history += [{"role": "user", "content": "tests/test_app.py"}]
        # The harness drops the assistant's question: two user messages in a row (merged by the
        # provider) and a history that no longer extends what was sent.
        del history[1]
        run_loop(client, history)
        engine = client.engine
        resets = [r for r in engine.receipts if r.action == "reset"]
        assert len(resets) == 1
        assert "edited history" in resets[0].detail
        second = server.requests[1].body["messages"]
        assert all("Which file?" not in json.dumps(m) for m in second)
        assert [m["role"] for m in second] == ["user", "user"]
        assert [to_payload(m) for m in engine.tape[:2]] == [TASK, history[1]]


# -- (d) AsyncAnthropic --------------------------------------------------------------------------


def test_async_client_is_wrapped_too() -> None:
    async def loop(base_url: str) -> tuple[int, list[dict[str, Any]]]:
        sdk = anthropic.AsyncAnthropic(base_url=base_url, api_key="test", max_retries=0)
        client = wrap(sdk, strategy(), **engine_options())
        history: list[dict[str, Any]] = [TASK]
        for calls in range(1, 100):
            response = await client.messages.create(
                model=MODEL, max_tokens=100, system=SYSTEM, tools=TOOLS, messages=history
            )
            history.append({"role": "assistant", "content": response.content})
            if response.stop_reason != "tool_use":
                await client.close()
                return calls, history
            use = next(b for b in response.content if b.type == "tool_use")
            content = "x = 1\n" * 3_000
            history.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use.id, "content": content}],
                }
            )
        raise AssertionError("the loop did not end")

    with _server(tool_loop_replies(12)) as server:
        calls, history = asyncio.run(loop(server.base_url))
    assert calls == 13
    assert _history_tokens(history) > BUDGET_TOKENS
    assert max(r.input_tokens or 0 for r in server.requests) <= BUDGET_TOKENS
    assert server.rejections == ()


# -- (e) streaming ---------------------------------------------------------------------------------


def _tool_result(response: Any) -> dict[str, Any]:
    use = next(b for b in response.content if b.type == "tool_use")
    content = [{"type": "tool_result", "tool_use_id": use.id, "content": "x = 1\n" * 3_000}]
    return {"role": "user", "content": content}


def test_messages_stream_records_each_final_message_and_compacts() -> None:
    with _server(tool_loop_replies(11)) as server, client_for(server.base_url) as client:
        history: list[dict[str, Any]] = [TASK]
        texts: list[str] = []
        for _ in range(12):
            with client.messages.stream(
                model=MODEL, max_tokens=100, system=SYSTEM, tools=TOOLS, messages=history
            ) as stream:
                texts.append("".join(stream.text_stream))
                response = stream.get_final_message()
            history.append({"role": "assistant", "content": response.content})
            if response.stop_reason != "tool_use":
                break
            history.append(_tool_result(response))
        engine = client.engine
    assert len(engine.calls) == 12 == len(server.requests)
    assert all(r.streamed for r in server.requests)
    assert server.rejections == ()
    assert texts[0] == "Step 0."
    assert texts[-1] == "done"
    assert _history_tokens(history) > BUDGET_TOKENS
    assert max(r.input_tokens or 0 for r in server.requests) <= BUDGET_TOKENS
    recorded = [json.loads(r.response or "")["usage"] for r in server.requests]
    assert [c.usage.output_tokens if c.usage else None for c in engine.calls] == [
        u["output_tokens"] for u in recorded
    ]
    assert engine.calls[-1].stop_reason == "end_turn"
    assert not any(r.action == "reset" for r in engine.receipts)


def test_create_stream_true_records_when_the_events_end() -> None:
    with _server(tool_loop_replies(1)) as server, client_for(server.base_url) as client:
        history: list[dict[str, Any]] = [TASK]
        for _ in range(2):
            events = client.messages.create(
                model=MODEL, max_tokens=100, tools=TOOLS, messages=history, stream=True
            )
            kinds = [event.type for event in events]
            assert kinds[-1] == "message_stop"
            last = client.engine.tape[-1]
            history.append({"role": "assistant", "content": [to_payload(b) for b in last.blocks]})
            if client.engine.calls[-1].stop_reason == "end_turn":
                break
            history.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_0000", "content": "ok"}
                    ],
                }
            )
        assert server.requests[0].body["stream"] is True
        engine = client.engine
    assert [c.stop_reason for c in engine.calls] == ["tool_use", "end_turn"]
    assert engine.calls[0].response is not None
    assert engine.calls[0].response.blocks[-1].type == "tool_use"
    assert engine.calls[0].request_id == "msg_fake_000000"


def test_an_abandoned_stream_records_nothing_and_the_call_can_be_retried() -> None:
    long_text = Reply.text("word " * 400)
    with _server([long_text, long_text]) as server, client_for(server.base_url) as client:
        with client.messages.stream(model=MODEL, max_tokens=900, messages=[TASK]) as stream:
            next(iter(stream.text_stream))  # the harness gives up after the first delta
        engine = client.engine
        assert engine.calls == ()
        assert engine.pending is not None
        assert [m.role for m in engine.tape] == ["user"]
        with client.messages.stream(model=MODEL, max_tokens=900, messages=[TASK]) as stream:
            message = stream.get_final_message()
        assert len(engine.calls) == 1
        assert engine.pending is None
        assert [m.role for m in engine.tape] == ["user", "assistant"]
        assert server.requests[0].body == server.requests[1].body
    assert message.content[0].type == "text"


def test_async_streams_record_too() -> None:
    async def run(base_url: str) -> tuple[int, list[str]]:
        sdk = anthropic.AsyncAnthropic(base_url=base_url, api_key="test", max_retries=0)
        client = wrap(sdk, strategy(), **engine_options())
        history: list[dict[str, Any]] = [TASK]
        kinds: list[str] = []
        async with client.messages.stream(
            model=MODEL, max_tokens=100, tools=TOOLS, messages=history
        ) as stream:
            text = "".join([t async for t in stream.text_stream])
            first = await stream.get_final_message()
        assert text == "Step 0."
        history += [{"role": "assistant", "content": first.content}, _tool_result(first)]
        events = await client.messages.create(
            model=MODEL, max_tokens=100, tools=TOOLS, messages=history, stream=True
        )
        async for event in events:
            kinds.append(event.type)
        await client.close()
        return len(client.engine.calls), kinds

    with _server(tool_loop_replies(1)) as server:
        calls, kinds = asyncio.run(run(server.base_url))
    assert calls == 2
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"
    assert server.rejections == ()


# -- the wrapper's request ------------------------------------------------------------------------


def test_harness_marks_on_messages_give_way_to_the_engines() -> None:
    """A harness that marks its last message each call would pile marks past four."""
    with _server(tool_loop_replies(6)) as server, client_for(server.base_url) as client:
        history: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": "Go."}]}
        ]
        for _ in range(7):
            last = history[-1]["content"][-1]
            last["cache_control"] = {"type": "ephemeral"}
            response = client.messages.create(
                model=MODEL, max_tokens=100, system=SYSTEM, tools=TOOLS, messages=history
            )
            history.append(
                {"role": "assistant", "content": [b.model_dump() for b in response.content]}
            )
            if response.stop_reason != "tool_use":
                break
            use = history[-1]["content"][-1]
            history.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "ok"}],
                }
            )
        assert server.rejections == ()
        assert len(server.requests) == 7
        assert not any(r.action == "reset" for r in client.engine.receipts)


def test_other_parameters_reach_the_body_and_client_options_do_not() -> None:
    with _server([Reply.text("hi")]) as server, client_for(server.base_url) as client:
        client.messages.create(
            model=MODEL,
            max_tokens=77,
            stop_sequences=["END"],
            metadata={"user_id": "u1"},
            messages=[TASK],
            extra_headers={"x-test": "1"},
            timeout=30,
        )
        body = server.requests[0].body
    assert body["max_tokens"] == 77
    assert body["stop_sequences"] == ["END"]
    assert body["metadata"] == {"user_id": "u1"}
    assert "extra_headers" not in body
    assert "timeout" not in body
    assert to_payload(client.engine.calls[0].request) == body


# -- the fake server itself ------------------------------------------------------------------------


def _sdk(server: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="test", max_retries=0)


def _reject(server: FakeAnthropic, **body: Any) -> str:
    body.setdefault("max_tokens", 10)
    with _sdk(server) as sdk, pytest.raises(anthropic.BadRequestError) as info:
        sdk.messages.create(model=MODEL, **body)
    assert info.value.status_code == 400
    error = info.value.response.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    message: str = error["error"]["message"]
    return message


def test_fake_rejects_invariant_violations() -> None:
    dangling = [
        TASK,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
        },
        {"role": "user", "content": "never mind"},
    ]
    with _server([]) as server:
        assert "dangling_tool_use" in _reject(server, messages=dangling)
        assert len(server.rejections) == 1
        assert server.rejections[0].conversation is not None


def test_fake_rejects_more_than_four_breakpoints() -> None:
    marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    with _server([]) as server:
        message = _reject(server, messages=[{"role": "user", "content": [marked] * 5}])
    assert "maximum of 4 blocks with cache_control" in message


def test_fake_rejects_a_long_prompt() -> None:
    with _server([]) as server:
        message = _reject(server, messages=[{"role": "user", "content": "word " * 20_000}])
    assert message.startswith("prompt is too long: ")


def test_fake_holds_the_latest_thinking_to_what_it_sent() -> None:
    thinking = {"type": "thinking", "thinking": "Let me look."}
    use = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}
    replies = [Reply.of(thinking, use, stop_reason="tool_use"), Reply.text("done")]
    enabled: Any = {"type": "enabled", "budget_tokens": 1024}
    with _server(replies) as server, _sdk(server) as sdk:
        first = sdk.messages.create(model=MODEL, max_tokens=2048, thinking=enabled, messages=[TASK])
        sent = [b.model_dump(exclude_none=True) for b in first.content]
        assert sent[0]["signature"]  # the server signs what it sends
        result = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        }
        edited = [{**sent[0], "thinking": "Something else."}, sent[1]]
        for content in (edited, [sent[1]]):
            history = [TASK, {"role": "assistant", "content": content}, result]
            message = _reject(server, thinking=enabled, max_tokens=2048, messages=history)
            assert "thinking" in message
        history = [TASK, {"role": "assistant", "content": sent}, result]
        answer = sdk.messages.create(
            model=MODEL, max_tokens=2048, thinking=enabled, messages=history
        )
        assert answer.stop_reason == "end_turn"
    block = ThinkingBlock.model_validate(sent[0])
    assert block.signature == sent[0]["signature"]


def test_fake_fails_when_steps_go_unused_or_run_out() -> None:
    with pytest.raises(AssertionError, match="1 scripted step"), _server([Reply.text("a")]):
        pass
    server = _server([])
    with (
        pytest.raises(AssertionError, match="script exhausted"),
        server,
        _sdk(server) as sdk,
        pytest.raises(anthropic.InternalServerError),
    ):
        sdk.messages.create(model=MODEL, max_tokens=10, messages=[TASK])
    assert server.requests[0].status == 500


def test_fake_usage_follows_the_cache_and_records_are_frozen() -> None:
    big = "context " * 2_000
    replies = [Reply.text("one"), Reply.text("two")]
    with (
        _server(replies, cache=AnthropicCache(min_tokens=1024)) as server,
        client_for(server.base_url) as client,
    ):
        history: list[dict[str, Any]] = [{"role": "user", "content": big}]
        first = client.messages.create(model=MODEL, max_tokens=10, messages=history)
        history += [
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": "more"},
        ]
        second = client.messages.create(model=MODEL, max_tokens=10, messages=history)
        record = server.requests[0]
        with pytest.raises(Exception, match="frozen"):
            record.status = 500  # type: ignore[misc]
        record.body["messages"].clear()
        assert record.body["messages"]
    assert first.usage.cache_creation_input_tokens
    assert not first.usage.cache_read_input_tokens
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert client.engine.calls[1].usage is not None
    assert client.engine.calls[1].usage.cache_read == second.usage.cache_read_input_tokens


# -- the fake server streams -------------------------------------------------------------------

THINK_AND_CALL = Reply.of(
    {"type": "thinking", "thinking": "The tests live in tests/; read the failing one first."},
    {"type": "text", "text": "Reading the test."},
    {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "tests/test_x.py"}},
    stop_reason="tool_use",
)


def test_stream_events_assemble_back_to_the_message() -> None:
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [
            {"type": "thinking", "thinking": "x" * 150, "signature": "sig"},
            {"type": "text", "text": "y" * 130},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": [1, 2], "b": "z" * 80}},
            {"type": "tool_use", "id": "t2", "name": "g", "input": {}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "cache_read_input_tokens": 7, "output_tokens": 42},
    }
    events = stream_events(body)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["message_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert events[0]["message"]["usage"]["output_tokens"] == 1  # a placeholder, as the API sends
    deltas = {e["delta"]["type"] for e in events if e["type"] == "content_block_delta"}
    assert deltas == {"thinking_delta", "signature_delta", "text_delta", "input_json_delta"}
    assembled = assemble_stream(to_sse(events))
    assert assembled.complete
    assert assembled.message == body


def test_fake_streams_what_it_would_answer_and_records_headers() -> None:
    enabled: Any = {"type": "enabled", "budget_tokens": 1024}
    with _server([THINK_AND_CALL, THINK_AND_CALL]) as server, _sdk(server) as sdk:
        with sdk.messages.stream(
            model=MODEL, max_tokens=2048, thinking=enabled, messages=[TASK]
        ) as stream:
            streamed = stream.get_final_message()
        plain = sdk.messages.create(  # the path Claude Code posts to
            model=MODEL,
            max_tokens=2048,
            thinking=enabled,
            messages=[TASK],
            extra_query={"beta": "true"},
        )
        first, second = server.requests
    assert (first.streamed, second.streamed) == (True, False)
    assert (first.path, second.path) == ("/v1/messages", "/v1/messages?beta=true")
    assert first.headers["user-agent"].startswith("Anthropic/Python")
    assert "anthropic-version" in first.headers
    assert streamed.model_dump(exclude={"id"}) == plain.model_dump(exclude={"id"})
    assert [b.type for b in streamed.content] == ["thinking", "text", "tool_use"]
    recorded = json.loads(first.response or "")["usage"]["output_tokens"]
    assert streamed.usage.output_tokens == recorded


def test_fake_rejects_an_invalid_streamed_request_before_streaming() -> None:
    with _server([]) as server, _sdk(server) as sdk:
        with pytest.raises(anthropic.BadRequestError) as info:
            sdk.messages.create(
                model=MODEL, max_tokens=10, messages=[{"role": "user", "content": []}], stream=True
            )
        assert info.value.status_code == 400
        assert server.rejections[0].streamed is False
        other = urllib.request.Request(server.base_url + "/v1/other", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(other, timeout=10)
    assert [(r.method, r.path, r.status) for r in server.other_requests] == [
        ("POST", "/v1/other", 404)
    ]


def test_fake_reports_the_usage_a_reply_scripts() -> None:
    full = {"input_tokens": 190_000, "cache_creation_input_tokens": 0}
    replies = [Reply(content=({"type": "text", "text": "ok"},), usage=full)]
    with (
        _server(replies) as server,
        _sdk(server) as sdk,
        sdk.messages.stream(model=MODEL, max_tokens=10, messages=[TASK]) as stream,
    ):
        usage = stream.get_final_message().usage
    assert usage.input_tokens == 190_000
    assert usage.cache_creation_input_tokens == 0
    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_5m_input_tokens == 0


# -- eviction the model can undo: the retrieve tool --------------------------------------------


def test_a_retrieval_is_answered_inside_the_call_from_the_tape() -> None:
    """With ``retrieval=True`` the retrieve tool is last in every request's tools from the first
    call; when the model asks for an evicted result, the wrapper answers from the tape and sends
    the request again inside the same ``create``: the harness sees only the final answer."""

    def script(request: Conversation) -> Reply:
        results = [b for m in request.messages for b in m.blocks if isinstance(b, ToolResultBlock)]
        if len(results) < 3:  # the harness's own loop: read three files
            n = len(results)
            return Reply.tool_call(f"toolu_{n:04d}", "read_file", {"path": f"src/f{n}.py"})
        last = results[-1]
        if last.tool_use_id == "toolu_r":  # the retrieval's answer arrived
            return Reply.text(f"The first file said: {last.text}")
        first = results[0]
        assert first.text.startswith(PLACEHOLDER_PREFIX)  # evicted: the model asks for it back
        return Reply.tool_call("toolu_r", RETRIEVE_TOOL_NAME, {"tool_use_id": "toolu_0000"})

    evict = EvictToolResults(keep_last=1, min_freed_tokens=0)
    with _server(script) as server:
        sdk = anthropic.Anthropic(base_url=server.base_url, api_key="test", max_retries=0)
        client = wrap(sdk, evict, retrieval=True, **engine_options())
        history: list[Any] = [TASK]
        answers = []
        for _ in range(4):
            response = client.messages.create(
                model=MODEL, max_tokens=512, system=SYSTEM, tools=TOOLS, messages=history
            )
            answers.append(response)
            history.append({"role": "assistant", "content": response.content})
            uses = [b for b in response.content if b.type == "tool_use"]
            if not uses:
                break
            assert uses[0].name == "read_file"  # the harness never sees a retrieve call
            n = uses[0].id[-1]
            content = f"secret-{n} " + "x" * 400
            history.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": uses[0].id, "content": content}
                    ],
                }
            )
        assert answers[-1].content[0].text.startswith("The first file said: secret-0 ")
        seen = server.requests
        assert len(seen) == 5  # four harness calls, one retrieval answered inside the last
        assert server.rejections == ()
        tools = {json.dumps(r.body["tools"], sort_keys=True) for r in seen}
        assert len(tools) == 1  # the same tool list, retrieve tool last, from the first call
        assert seen[0].body["tools"][-1]["name"] == RETRIEVE_TOOL_NAME
        assert len(client.engine.calls) == 5
        sdk.close()


def test_a_strategy_name_is_taken_and_bad_options_fail_at_wrap() -> None:
    """``wrap(client, strategy="evict-tool-results")`` was accepted and failed at the first call
    (``TypeError: 'str' object is not callable``); a negative budget, or one over the window, was
    accepted in silence. A spec is made a strategy; the rest are clear errors at wrap time."""
    import anthropic  # noqa: PLC0415

    from contextkit.engine import ContextEngine  # noqa: PLC0415
    from contextkit.engine.anthropic import wrap as wrap_anthropic  # noqa: PLC0415
    from contextkit.errors import ConfigError  # noqa: PLC0415
    from contextkit.strategies import strategy_from_spec  # noqa: PLC0415

    client = anthropic.Anthropic(api_key="test", base_url="http://127.0.0.1:9")
    wrapped = wrap_anthropic(client, strategy="evict-tool-results")
    assert wrapped is not None
    engine = ContextEngine("evict-tool-results")
    assert engine.strategy == strategy_from_spec("evict-tool-results")  # the preset, made
    for options, said in (
        ({"strategy": "no-such-strategy"}, "unknown strategy"),
        ({"strategy": 42}, "must be a Strategy or a spec"),
        ({"budget_tokens": -5}, "budget_tokens must be a positive"),
        ({"budget_tokens": 300_000, "context_window": 200_000}, "over the context window"),
    ):
        with pytest.raises(ConfigError, match=said):
            wrap_anthropic(client, **options)
