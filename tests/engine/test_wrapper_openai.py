"""The ``openai`` wrapper end to end: the real SDK over HTTP against the local fake server.

``contextkit.testing.fake_openai.FakeOpenAI`` rejects what the API rejects (tool pairing, unknown
request fields, an over-long prompt), so a wrapper that sent a broken or oversized body fails here.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from agent_loop_helper import BUDGET_TOKENS, WINDOW_TOKENS, engine_options, strategy, tool_output
from contextkit.engine import ContextEngine, request_body
from contextkit.engine.openai import WrappedOpenAI, wrap
from contextkit.errors import ContextkitError
from contextkit.messages import Conversation
from contextkit.testing.fake_anthropic import Reply, tool_loop_replies
from contextkit.testing.fake_openai import FakeOpenAI
from contextkit.tokens import ApproxCounter
from contextkit.wire import assemble_chat_chunks, chat_chunks, parse_chat_request

MODEL = "gpt-5.1"
SYSTEM: Any = {"role": "system", "content": "You are a coding agent. Read files with read_file."}
TASK: Any = {"role": "user", "content": "Fix the failing test."}
CHAT_TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
RESPONSES_TOOLS: Any = [{**CHAT_TOOLS[0]["function"], "type": "function"}]


def _server(script: Any) -> FakeOpenAI:
    return FakeOpenAI(script, counter=ApproxCounter(), context_window=WINDOW_TOKENS)


def _client(server: FakeOpenAI, **options: Any) -> WrappedOpenAI:
    sdk = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    return wrap(sdk, strategy(), **engine_options(**options))


def _results(calls: list[Any], step: int) -> list[dict[str, Any]]:
    return [
        {"role": "tool", "tool_call_id": c.id, "content": tool_output(step, "f.py")} for c in calls
    ]


def _full_tokens(messages: list[Any]) -> int:
    plain = [m if isinstance(m, dict) else m.model_dump(exclude_none=True) for m in messages]
    conversation = parse_chat_request({"model": MODEL, "tools": CHAT_TOOLS, "messages": plain})
    return ApproxCounter().count_conversation(conversation)


# -- Chat Completions ------------------------------------------------------------------------------


def test_chat_loop_stays_under_budget_and_the_audit_holds_the_bodies_sent(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    with _server(tool_loop_replies(39)) as server, _client(server, audit_path=audit) as client:
        messages: list[Any] = [SYSTEM, TASK]
        for step in range(40):
            response = client.chat.completions.create(
                model=MODEL, messages=messages, tools=CHAT_TOOLS, max_completion_tokens=500
            )
            message = response.choices[0].message
            messages.append(message)  # the SDK object, as harnesses append it
            if response.choices[0].finish_reason != "tool_calls":
                break
            messages += _results(message.tool_calls or [], step)
        engine = client.engine
        seen = server.requests
    assert len(seen) == 40
    assert server.rejections == ()
    assert _full_tokens(messages) > 10 * BUDGET_TOKENS
    assert max(r.input_tokens or 0 for r in seen) <= BUDGET_TOKENS
    assert not any(r.action == "reset" for r in engine.receipts)
    assert any(r.action != "reset" for r in engine.receipts)  # the strategy did act
    assert all(r.body["messages"][0] == SYSTEM for r in seen)
    assert all(r.body["max_completion_tokens"] == 500 for r in seen)
    assert all("cache_control" not in r.raw for r in seen)
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [line["request"] for line in lines] == [r.body for r in seen]
    assert engine.calls[-1].stop_reason == "end_turn"
    assert engine.calls[0].usage is not None
    assert engine.calls[0].usage.input_tokens == seen[0].input_tokens


def test_without_compaction_the_fake_rejects_the_long_prompt() -> None:
    def script(conversation: Conversation) -> Reply:
        n = len(conversation.messages)
        return Reply.tool_call(f"call_{n}", "read_file", {"path": f"f{n}.py"})

    with _server(script) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        client = wrap(sdk, None, **engine_options())
        messages: list[Any] = [SYSTEM, TASK]

        def loop() -> None:
            for step in range(40):
                response = client.chat.completions.create(model=MODEL, messages=messages)
                message = response.choices[0].message
                messages.extend([message, *_results(message.tool_calls or [], step)])

        with pytest.raises(openai.BadRequestError, match="maximum context length") as info:
            loop()
        assert info.value.code == "context_length_exceeded"


def _harness_message(chunks: list[Any]) -> dict[str, Any]:
    """What a streaming harness accumulates from the deltas it printed."""
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for part in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(
                part.index,
                {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
            )
            call["id"] = part.id or call["id"]
            call["function"]["name"] += (part.function and part.function.name) or ""
            call["function"]["arguments"] += (part.function and part.function.arguments) or ""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def test_chat_stream_records_the_assembled_completion_with_its_usage() -> None:
    with _server(tool_loop_replies(5)) as server, _client(server) as client:
        messages: list[Any] = [SYSTEM, TASK]
        for step in range(6):
            stream = client.chat.completions.create(
                model=MODEL,
                messages=messages,
                tools=CHAT_TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            )
            chunks = list(stream)
            message = _harness_message(chunks)
            messages.append(message)
            if "tool_calls" not in message:
                break
            messages += [
                {"role": "tool", "tool_call_id": c["id"], "content": tool_output(step, "f.py")}
                for c in message["tool_calls"]
            ]
        engine = client.engine
    assert len(engine.calls) == 6
    assert all(r.streamed for r in server.requests)
    assert server.rejections == ()
    assert not any(r.action == "reset" for r in engine.receipts)
    recorded = [json.loads(r.response or "")["usage"] for r in server.requests]
    assert [c.usage.output_tokens if c.usage else None for c in engine.calls] == [
        u["completion_tokens"] for u in recorded
    ]
    assert [c.stop_reason for c in engine.calls] == ["tool_use"] * 5 + ["end_turn"]


def test_an_abandoned_chat_stream_records_nothing_and_can_be_retried() -> None:
    long_text = Reply.text("word " * 300)
    with _server([long_text, long_text]) as server, _client(server) as client:
        stream = client.chat.completions.create(model=MODEL, messages=[TASK], stream=True)
        next(iter(stream))
        stream.close()
        assert client.engine.calls == ()
        assert client.engine.pending is not None
        again = client.chat.completions.create(model=MODEL, messages=[TASK], stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in again if c.choices)
        assert len(client.engine.calls) == 1
        assert server.requests[0].body == server.requests[1].body
    assert text == "word " * 300


def test_chat_chunks_assemble_back_to_the_completion() -> None:
    completion: dict[str, Any] = {
        "id": "c1",
        "created": 5,
        "model": MODEL,
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "x" * 150,
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "f", "arguments": json.dumps({"p": "y" * 90})},
                        },
                        {
                            "id": "b",
                            "type": "function",
                            "function": {"name": "g", "arguments": "{}"},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }
    assembled = assemble_chat_chunks(chat_chunks(completion, include_usage=True))
    assert assembled.complete
    assert assembled.completion == completion
    assert not assemble_chat_chunks(chat_chunks(completion)[:-1]).complete


# -- Responses -------------------------------------------------------------------------------------


def test_responses_loop_streaming_and_not_appends_output_items() -> None:
    with _server(tool_loop_replies(7)) as server, _client(server) as client:
        items: list[Any] = [{"role": "user", "content": "Fix the failing test."}]
        for step in range(8):
            common: Any = {"model": MODEL, "instructions": SYSTEM["content"], "input": items}
            if step % 2:
                events = list(client.responses.create(**common, tools=RESPONSES_TOOLS, stream=True))
                assert events[-1].type == "response.completed"
                response = events[-1].response
            else:
                response = client.responses.create(**common, tools=RESPONSES_TOOLS)
            items += response.output
            calls = [o for o in response.output if o.type == "function_call"]
            if not calls:
                break
            items += [
                {
                    "type": "function_call_output",
                    "call_id": c.call_id,
                    "output": tool_output(step, "f"),
                }
                for c in calls
            ]
        engine = client.engine
    assert len(engine.calls) == 8
    assert server.rejections == ()
    assert [r.streamed for r in server.requests] == [False, True] * 4
    assert max(r.input_tokens or 0 for r in server.requests) <= BUDGET_TOKENS
    assert not any(r.action == "reset" for r in engine.receipts)
    assert all(r.body["instructions"] == SYSTEM["content"] for r in server.requests)
    assert engine.calls[-1].stop_reason == "end_turn"
    assert engine.calls[1].usage is not None


def test_previous_response_id_and_sdk_helpers_are_refused_before_sending() -> None:
    with _server([]) as server, _client(server) as client:
        with pytest.raises(ContextkitError, match="previous_response_id"):
            client.responses.create(model=MODEL, input="hi", previous_response_id="resp_1")
        with pytest.raises(ContextkitError, match="uncompacted"):
            client.chat.completions.stream(model=MODEL, messages=[TASK])
        assert server.requests == ()


# -- async -----------------------------------------------------------------------------------------


def test_async_client_chat_and_responses_stream() -> None:
    async def run(base_url: str) -> tuple[int, int, list[str]]:
        sdk = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
        client = wrap(sdk, strategy(), **engine_options())
        first = await client.chat.completions.create(model=MODEL, messages=[SYSTEM, TASK])
        messages = [SYSTEM, TASK, first.choices[0].message, {"role": "user", "content": "more"}]
        stream = await client.chat.completions.create(model=MODEL, messages=messages, stream=True)
        async for _ in stream:
            pass
        chat_calls = len(client.chat_engine.calls) if client.chat_engine else 0
        kinds: list[str] = []
        events = await client.responses.create(model=MODEL, input="hello", stream=True)
        async for event in events:
            kinds.append(event.type)
        responses_calls = len(client.responses_engine.calls) if client.responses_engine else 0
        await client.close()
        return chat_calls, responses_calls, kinds

    replies = [Reply.text("one"), Reply.text("two"), Reply.text("three")]
    with _server(replies) as server:
        chat_calls, responses_calls, kinds = asyncio.run(run(server.base_url))
    assert (chat_calls, responses_calls) == (2, 1)
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert server.rejections == ()


# -- the fake server itself ------------------------------------------------------------------------


def test_fake_rejects_what_openai_rejects() -> None:
    with _server([]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        orphan: Any = [TASK, {"role": "tool", "tool_call_id": "nope", "content": "x"}]
        with pytest.raises(openai.BadRequestError, match="orphan"):
            sdk.chat.completions.create(model=MODEL, messages=orphan)
        with pytest.raises(openai.BadRequestError, match="Unrecognized request argument"):
            sdk.chat.completions.create(model=MODEL, messages=[TASK], extra_body={"system": "x"})
        dangling: Any = [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]
        with pytest.raises(openai.BadRequestError):
            sdk.responses.create(model=MODEL, input=[TASK, *dangling, TASK])
    assert len(server.rejections) == 3


def test_a_resumed_engine_continues_the_same_chat_without_a_reset(tmp_path: Path) -> None:
    checkpoint = tmp_path / "chat.ckpt"
    with _server(tool_loop_replies(3)) as server:
        client = _client(server, checkpoint_path=checkpoint)
        messages: list[Any] = [SYSTEM, TASK]
        for step in range(2):
            response = client.chat.completions.create(
                model=MODEL, messages=messages, tools=CHAT_TOOLS
            )
            message = response.choices[0].message
            messages += [message, *_results(message.tool_calls or [], step)]
        client.close()
        engine, receipts = ContextEngine.resume(
            checkpoint, strategy(), api="openai-chat", **engine_options()
        )
        assert [r.action for r in receipts] == ["inserted"]  # the unanswered call, as after a kill
        # The harness continues from the engine's tape (its own list died with the process).
        tape = request_body(engine.view.with_messages(engine.tape), "openai-chat")["messages"]
        messages = [SYSTEM, *tape[1:]]
        assert messages[-1]["role"] == "tool"
        sdk = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        resumed = wrap(sdk, engine=engine)
        for step in range(2, 4):
            response = resumed.chat.completions.create(
                model=MODEL, messages=messages, tools=CHAT_TOOLS
            )
            message = response.choices[0].message
            messages += [message, *_results(message.tool_calls or [], step)]
        resumed.close()
    assert response.choices[0].finish_reason == "stop"
    assert len(engine.calls) == 4
    assert not any(r.action == "reset" for r in engine.receipts)
    assert server.rejections == ()
    with pytest.raises(ContextkitError, match="anthropic API"):
        wrap(sdk, engine=ContextEngine())
