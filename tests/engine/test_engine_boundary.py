"""``ContextEngine`` used directly, as a harness would without reading its source: provider dicts
and SDK objects in, provider-ready bodies out, SDK responses recorded, bad input named."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.types import Message as AnthropicMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.responses import Response
from pydantic import ValidationError

from contextkit.engine import ContextEngine, InputError, ResponseError
from contextkit.errors import ContextkitError
from contextkit.messages import Conversation, Message, ToolResultBlock, to_payload
from contextkit.strategies import EvictToolResults
from contextkit.testing import FixedCounter
from contextkit.testing.fake_anthropic import FakeAnthropic, tool_loop_replies
from contextkit.testing.strategies import valid_conversations
from contextkit.wire import to_format

README = Path(__file__).resolve().parents[2] / "README.md"
USE: Any = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}}
RESULT: Any = {"type": "tool_result", "tool_use_id": "t1", "content": "x = 1\n" * 400}

ANTHROPIC_RESPONSE: Any = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "Done."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": 4},
}
CHAT_RESPONSE: Any = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-5.1",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "b.py"}'},
                    }
                ],
            },
        }
    ],
    "usage": {
        "prompt_tokens": 30,
        "completion_tokens": 5,
        "total_tokens": 35,
        "prompt_tokens_details": {"cached_tokens": 10},
    },
}
RESPONSES_RESPONSE: Any = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "gpt-5.1",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_a",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hello.", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 20,
        "output_tokens": 2,
        "total_tokens": 22,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}


def _engine(**options: Any) -> ContextEngine:
    return ContextEngine(
        EvictToolResults(keep_last=1),
        model="claude-sonnet-4-6",
        params={"max_tokens": 512},
        counter=FixedCounter(),
        **options,
    )


# -- add -------------------------------------------------------------------------------------------


def test_anthropic_dicts_go_through_a_strategy() -> None:
    """The bug this fixes: add(dict) was accepted and prepare() then failed in a strategy."""
    engine = _engine(budget_tokens=300)
    engine.add({"role": "user", "content": "Fix it."})
    for i in range(3):
        use = {**USE, "id": f"t{i}"}
        engine.add({"role": "assistant", "content": [use]})
        engine.add({"role": "user", "content": [{**RESULT, "tool_use_id": f"t{i}"}]})
    body = engine.prepare().body()
    assert body["model"] == "claude-sonnet-4-6"
    assert body["max_tokens"] == 512
    results = [b for m in engine.view.messages for b in m.blocks if isinstance(b, ToolResultBlock)]
    assert len(results) == 3
    assert results[0].content != RESULT["content"]  # evicted: the strategy ran on the dicts
    assert all(isinstance(m, Message) for m in engine.tape)


def test_an_openai_chat_list_sets_the_system_prompt_and_merges_tool_messages() -> None:
    engine = ContextEngine(model="gpt-5.1", api="openai-chat", counter=FixedCounter())
    sdk_message = ChatCompletionMessage.model_validate(CHAT_RESPONSE["choices"][0]["message"])
    engine.add(
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Read two files."},
        sdk_message,
        {"role": "tool", "tool_call_id": "call_1", "content": "one"},
    )
    assert engine.view.system == "Be brief."
    assert [m.role for m in engine.tape] == ["user", "assistant", "user"]
    assert engine.tape[1].blocks[0].type == "tool_use"
    body = engine.prepare().body()
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][2]["tool_calls"][0]["function"]["name"] == "read_file"
    assert "cache_control" not in str(body)  # OpenAI caches by itself


def test_sdk_objects_and_responses_items_are_accepted() -> None:
    engine = ContextEngine(counter=FixedCounter())
    sdk_answer = AnthropicMessage.model_validate(ANTHROPIC_RESPONSE)
    engine.add({"role": "user", "content": "Hi."}, sdk_answer)
    assert to_payload(engine.tape[1]) == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Done."}],
    }
    items = ContextEngine(api="openai-responses", counter=FixedCounter())
    items.add(
        {"role": "user", "content": "Hi."},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    )
    assert [m.role for m in items.tape] == ["user", "assistant", "user"]
    assert items.prepare().body()["input"][1]["type"] == "function_call"


@pytest.mark.parametrize(
    ("item", "match"),
    [
        ({"role": "user", "content": [{"type": "tool_result"}]}, r"item 1 .*tool_use_id"),
        ({"role": "robot", "content": "x"}, r"item 1 \(anthropic message\): role"),
        ("just text", r"item 1: 'str' is not a message"),
        (42, r"item 1: 'int' is not a message"),
        ({"role": "tool", "content": "no id"}, r"items from 1 \(openai-chat.*tool_call_id"),
    ],
)
def test_bad_input_is_a_named_error_and_adds_nothing(item: Any, match: str) -> None:
    engine = _engine()
    engine.add({"role": "user", "content": "first"})
    with pytest.raises(InputError, match=match) as info:
        engine.add({"role": "assistant", "content": "ok"}, item)
    assert not isinstance(info.value.__cause__, ValidationError)
    assert len(engine.tape) == 1


def test_a_second_system_prompt_is_refused() -> None:
    engine = ContextEngine(system="One.", counter=FixedCounter())
    engine.add({"role": "user", "content": "x"})
    with pytest.raises(InputError, match="configure"):
        engine.add({"role": "system", "content": "Two."}, {"role": "user", "content": "y"})


# -- record ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "stop", "usage_input", "api"),
    [
        (AnthropicMessage.model_validate(ANTHROPIC_RESPONSE), "end_turn", 16, "anthropic"),
        (ANTHROPIC_RESPONSE, "end_turn", 16, "anthropic"),
        (ChatCompletion.model_validate(CHAT_RESPONSE), "tool_use", 30, "openai-chat"),
        (Response.model_validate(RESPONSES_RESPONSE), "end_turn", 20, "openai-responses"),
    ],
)
def test_record_takes_sdk_responses_and_their_dicts(
    response: Any, stop: str, usage_input: int, api: Any
) -> None:
    engine = ContextEngine(model="m", api=api, counter=FixedCounter())
    engine.add({"role": "user", "content": "Go."})
    engine.prepare()
    verdict = engine.record(response)
    call = engine.calls[0]
    assert call.stop_reason == stop == verdict.stop_reason
    assert call.usage is not None
    assert call.usage.input_tokens + call.usage.cache_read == usage_input
    assert call.request_id is not None
    assert engine.tape[-1].role == "assistant"
    assert verdict.needs_tools == (stop == "tool_use")


def test_a_bad_response_keeps_the_prepared_call_for_a_retry(tmp_path: Path) -> None:
    engine = _engine(checkpoint_path=tmp_path / "run.ckpt")
    engine.add({"role": "user", "content": "Go."})
    prepared = engine.prepare()
    for bad in (
        {"type": "error", "error": {"message": "overloaded"}},
        {"content": "nope"},
        [1],
        None,
    ):
        with pytest.raises(ResponseError, match=r"record\(\)"):
            engine.record(bad)
        assert engine.pending is prepared
        assert engine.calls == ()
        assert len(engine.tape) == 1
    engine.record(ANTHROPIC_RESPONSE)
    assert len(engine.calls) == 1
    assert engine.pending is None
    resumed, _ = ContextEngine.resume(tmp_path / "run.ckpt")
    assert len(resumed.calls) == 1


def test_record_without_prepare_is_still_refused() -> None:
    with pytest.raises(ContextkitError, match="prepare"):
        _engine().record(ANTHROPIC_RESPONSE)


def test_body_in_each_wire_form() -> None:
    engine = _engine()
    engine.add({"role": "user", "content": "Go."})
    prepared = engine.prepare()
    text = prepared.body()["messages"][0]["content"][0]
    assert text == {"type": "text", "text": "Go.", "cache_control": {"type": "ephemeral"}}
    chat = prepared.body("openai-chat")
    assert chat["messages"] == [{"role": "user", "content": "Go."}]
    assert prepared.body("openai-responses")["input"][0]["role"] == "user"
    with pytest.raises(InputError, match="unknown api"):
        prepared.body("gemini")  # type: ignore[arg-type]


# -- the README example --------------------------------------------------------------------------


def _readme_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    found: list[str] = [b for b in blocks if "ContextEngine(" in b and "engine.record(" in b]
    assert len(found) == 1, "README.md should hold one ContextEngine example"
    return found[0]


def test_the_readme_engine_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    example = _readme_example()
    assert len(example.strip().splitlines()) <= 14
    used: list[int] = []

    def run_tools(response: anthropic.types.Message) -> list[dict[str, Any]]:
        used.append(len(response.content))
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": "line\n" * 2_000}
            for b in response.content
            if b.type == "tool_use"
        ]
        return [{"role": "user", "content": results}]

    with FakeAnthropic(tool_loop_replies(5)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        namespace: dict[str, Any] = {"run_tools": run_tools}
        exec(compile(example, str(README), "exec"), namespace)
        engine: ContextEngine = namespace["engine"]
        assert server.rejections == ()
        assert len(server.requests) == 6
    assert len(used) == 5
    assert engine.calls[-1].stop_reason == "end_turn"
    assert [r.body for r in server.requests] == [
        c.request and to_payload(c.request) for c in engine.calls
    ]


# -- property: what goes in as a provider's dicts comes out as them -------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_conversations(max_turns=3), st.sampled_from(["anthropic", "openai-chat"]))
def test_provider_dicts_round_trip_through_the_engine(conversation: Conversation, api: Any) -> None:
    body, _ = to_format(conversation.model_copy(update={"tools": ()}), api)
    engine = ContextEngine(api=api, counter=FixedCounter(), cache_breakpoints=False)
    if api == "anthropic" and "system" in body:
        engine.configure(system=body["system"])
    engine.add(*body["messages"])
    assert engine.prepare().body()["messages"] == body["messages"]
    assert len(engine.tape) <= len(body["messages"])
