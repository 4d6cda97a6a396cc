"""The anthropic and openai Python SDKs (sync, async, streaming) through ``contextkit proxy``.

Each SDK talks to the proxy, the proxy to a strict local upstream (FakeAnthropic / FakeOpenAI).
What the clients get is what the upstream answered; the records hold every exchange, without
credentials, in files 0600, and ``contextkit.formats.load`` reads them back to the very calls the
upstream received.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.messages import Conversation, ToolResultBlock, parse_conversation, to_payload
from contextkit.proxy import EDIT_HEADER, ProxyConfig, ProxyServer
from contextkit.strategies import EvictToolResults, ToolResultsOver, When
from contextkit.testing.fake_anthropic import FakeAnthropic, Reply
from contextkit.testing.fake_openai import FakeOpenAI
from contextkit.wire import parse_chat_request, parse_responses_request
from proxy_helper import check_files, forwarded, records, replayed_calls, unmarked

MODEL = "claude-sonnet-4-5"
GPT = "gpt-4.1"
TOOL = {
    "name": "read_file",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def _answer(conversation: Conversation) -> Reply:
    """A tool call first, then a text answer once the last message holds a result."""
    last = conversation.messages[-1]
    if any(isinstance(b, ToolResultBlock) for b in last.blocks):
        return Reply.text("done")
    return Reply.tool_call(f"toolu_{len(conversation.messages):04d}", "read_file", {"path": "a.py"})


@pytest.fixture
def anthropic_proxy(tmp_path: Path) -> Iterator[tuple[FakeAnthropic, ProxyServer, list[str]]]:
    lines: list[str] = []
    with (
        FakeAnthropic(_answer) as fake,
        ProxyServer(
            ProxyConfig(upstream=fake.base_url, record_dir=tmp_path / "rec"), on_line=lines.append
        ) as proxy,
    ):
        yield fake, proxy, lines


def _history(first: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": first}]


def _then(history: list[dict[str, Any]], content: list[Any], tool_id: str) -> list[dict[str, Any]]:
    result = {"type": "tool_result", "tool_use_id": tool_id, "content": "print('a')\n" * 80}
    return [
        *history,
        {"role": "assistant", "content": content},
        {"role": "user", "content": [result]},
    ]


def _blocks(message: Any) -> list[Any]:
    return [b.model_dump(mode="json", exclude_none=True) for b in message.content]


def _sync_anthropic(client: Any, stream: bool) -> None:
    history = _history(f"sync stream={stream}")
    for _ in range(2):
        kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 256, "tools": [TOOL]}
        if stream:
            with client.messages.stream(messages=history, **kwargs) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(messages=history, **kwargs)
        if message.stop_reason != "tool_use":
            assert message.content[0].type == "text"
            return
        history = _then(history, _blocks(message), message.content[0].id)
    raise AssertionError("no final answer")


async def _async_anthropic(client: Any, stream: bool) -> None:
    history = _history(f"async stream={stream}")
    for _ in range(2):
        kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 256, "tools": [TOOL]}
        if stream:
            async with client.messages.stream(messages=history, **kwargs) as events:
                message = await events.get_final_message()
        else:
            message = await client.messages.create(messages=history, **kwargs)
        if message.stop_reason != "tool_use":
            return
        history = _then(history, _blocks(message), message.content[0].id)
    raise AssertionError("no final answer")


def test_anthropic_sdk_sync_async_streaming(
    anthropic_proxy: tuple[FakeAnthropic, ProxyServer, list[str]], tmp_path: Path
) -> None:
    fake, proxy, lines = anthropic_proxy
    headers = {"cookie": "session-cookie=1"}
    client = anthropic.Anthropic(
        base_url=proxy.base_url, api_key="sk-ant-test", max_retries=0, default_headers=headers
    )
    _sync_anthropic(client, stream=False)
    _sync_anthropic(client, stream=True)

    async def both() -> None:
        async with anthropic.AsyncAnthropic(
            base_url=proxy.base_url, api_key="sk-ant-test", max_retries=0
        ) as aclient:
            await _async_anthropic(aclient, stream=False)
            await _async_anthropic(aclient, stream=True)

    asyncio.run(both())
    count = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    client.close()
    assert count.input_tokens > 0
    assert len(fake.accepted) == 8
    assert not fake.rejections
    # The upstream saw the client's key; the record never does.
    assert all("sk-ant-test" in str(r.headers) for r in fake.requests)
    folder = tmp_path / "rec"
    check_files(folder)
    recorded = records(folder)
    assert len(recorded) == 9  # 8 calls + count_tokens, each once
    assert all(r["complete"] for r in recorded)
    assert all(r["status"] == 200 for r in recorded)
    assert sum(r["streamed"] for r in recorded) == 4
    # Four conversations (one per first message), each replays to the calls the upstream got.
    calls = replayed_calls(folder)
    assert len(calls) == 8
    sent = sorted(json.dumps(r.body, sort_keys=True) for r in fake.requests)
    assert sorted(json.dumps(to_payload(c.request), sort_keys=True) for c in calls) == sent
    for call in calls:
        assert call.usage is not None
        assert call.response is not None
    # One console line per model call, and /stats adds up to the same money.
    assert len(lines) == 8
    assert all("so far $" in line for line in lines)
    stats = httpx.get(proxy.base_url + "/stats").json()
    assert stats["total"]["calls"] == 8
    assert len(stats["conversations"]) == 4
    assert stats["total"]["cost_usd"] == pytest.approx(
        sum(c["cost_usd"] for c in recorded if c["cost_usd"])
    )


BATCHED = When(ToolResultsOver(tokens=500), EvictToolResults(keep_last=1, min_freed_tokens=0))
"""Evicts in batches: once the results in view pass 500 tokens (about every third call here)."""


def test_anthropic_strategy_edits_and_keeps_the_prefix(tmp_path: Path) -> None:
    with FakeAnthropic(lambda c: _loop_reply(c, 8)) as fake:
        config = ProxyConfig(upstream=fake.base_url, strategy=BATCHED, record_dir=tmp_path)
        with ProxyServer(config) as proxy, contextlib.ExitStack() as stack:
            http = httpx.Client(base_url=proxy.base_url, headers={"x-api-key": "sk-ant-test"})
            stack.callback(http.close)
            history = _history("loop")
            edits = []
            while True:
                body = {"model": MODEL, "max_tokens": 64, "tools": [TOOL], "messages": history}
                answer = http.post("/v1/messages", json=body)
                assert answer.status_code == 200, answer.text
                edits.append(answer.headers[EDIT_HEADER])
                message = answer.json()
                if message["stop_reason"] != "tool_use":
                    break
                history = _then(history, message["content"], message["content"][-1]["id"])
    assert not fake.rejections
    assert len(fake.accepted) == 9
    check_files(tmp_path)
    recorded = records(tmp_path)
    # The client sent its full history each time; the upstream got less once results went.
    sizes = [(len(json.dumps(r["request"])), len(json.dumps(forwarded(r)))) for r in recorded]
    assert sizes[-1][1] < sizes[-1][0] * 0.8
    edited = [i for i, e in enumerate(edits) if "evicted" in e]
    assert len(edited) >= 2, edits
    # Between edits, each forwarded request starts with the previous one's messages, byte for
    # byte (cache marks aside: the engine moves them to the new end).
    bodies = [unmarked(r.body["messages"]) for r in fake.requests]
    for k in range(1, len(bodies)):
        if k in edited:
            continue
        before = [json.dumps(m) for m in bodies[k - 1]]
        assert [json.dumps(m) for m in bodies[k][: len(before)]] == before, k
    # Breakpoints: never more than four, one on the last message of every request.
    for request in fake.requests:
        last = request.body["messages"][-1]["content"]
        assert isinstance(last, list)
        assert "cache_control" in last[-1]
    calls = replayed_calls(tmp_path)
    assert [to_payload(c.request) for c in calls] == [r.body for r in fake.requests]
    # The commands read the records: replay, cost, inspect.
    (path,) = tmp_path.glob("*.jsonl")
    runner = CliRunner()
    done = runner.invoke(app, ["replay", str(path), "-s", "evict-tool-results", "--json"])
    assert done.exit_code == 0, done.output
    assert len(json.loads(done.output)["rows"]) == 9
    for command in (["cost", str(path)], ["inspect", str(path), "--cache"]):
        assert runner.invoke(app, command).exit_code == 0, command
    edit = recorded[edited[0]]["edit"]
    assert edit["applied"]
    assert any(r["action"] == "evicted" for r in edit["receipts"])


def _loop_reply(conversation: Conversation, calls: int) -> Reply:
    done = sum(1 for m in conversation.messages if m.role == "assistant")
    if done >= calls:
        return Reply.text("finished")
    return Reply.tool_call(f"toolu_{done:04d}", "read_file", {"path": f"f{done}.py"})


def test_dry_run_forwards_unchanged_and_records_the_edit(tmp_path: Path) -> None:
    strategy = EvictToolResults(keep_last=1, min_freed_tokens=0)
    with FakeAnthropic(lambda c: _loop_reply(c, 3)) as fake:
        config = ProxyConfig(
            upstream=fake.base_url, strategy=strategy, dry_run=True, record_dir=tmp_path
        )
        with ProxyServer(config) as proxy, contextlib.ExitStack() as stack:
            http = httpx.Client(base_url=proxy.base_url)
            stack.callback(http.close)
            history = _history("dry")
            for _ in range(4):
                body = {"model": MODEL, "max_tokens": 64, "messages": history}
                answer = http.post("/v1/messages", json=body)
                assert answer.headers[EDIT_HEADER].startswith("dry-run: would ")
                message = answer.json()
                if message["stop_reason"] != "tool_use":
                    break
                history = _then(history, message["content"], message["content"][-1]["id"])
    recorded = records(tmp_path)
    assert [r.body for r in fake.requests] == [r["request"] for r in recorded]
    last = recorded[-1]
    assert "evicted" in last["edit"]["summary"]
    assert last["edit"]["dry_run"]
    assert not last["edit"]["applied"]
    assert len(json.dumps(last["would_forward"])) < len(json.dumps(last["request"]))
    assert parse_conversation(last["would_forward"]).messages  # a valid request it would send


# -- openai --------------------------------------------------------------------------------------

FUNCTION = {
    "type": "function",
    "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}},
}
RESPONSES_TOOL = {"type": "function", "name": "read_file", "parameters": {"type": "object"}}


def _function(arguments: str) -> dict[str, str]:
    return {"name": "read_file", "arguments": arguments}


def _chat_turns(client: Any, stream: bool) -> None:
    messages: list[Any] = [{"role": "user", "content": f"chat stream={stream}"}]
    for _ in range(2):
        if stream:
            chunks = client.chat.completions.create(
                model=GPT,
                messages=messages,
                tools=[FUNCTION],
                stream=True,
                stream_options={"include_usage": True},
            )
            calls: dict[int, dict[str, Any]] = {}
            text = ""
            for chunk in chunks:
                for choice in chunk.choices:
                    text += choice.delta.content or ""
                    for part in choice.delta.tool_calls or ():
                        call = calls.setdefault(part.index, {"id": part.id, "args": ""})
                        call["args"] += part.function.arguments or "" if part.function else ""
            tool_calls = [
                {"id": c["id"], "type": "function", "function": _function(c["args"])}
                for c in calls.values()
            ]
        else:
            done = client.chat.completions.create(model=GPT, messages=messages, tools=[FUNCTION])
            text = done.choices[0].message.content or ""
            tool_calls = [t.model_dump() for t in done.choices[0].message.tool_calls or ()]
        if not tool_calls:
            assert text == "done"
            return
        messages += [
            {"role": "assistant", "content": None, "tool_calls": tool_calls},
            {"role": "tool", "tool_call_id": tool_calls[0]["id"], "content": "x = 1"},
        ]
    raise AssertionError("no final answer")


def test_openai_sdk_chat_and_responses_through_the_proxy(tmp_path: Path) -> None:
    lines: list[str] = []
    with FakeOpenAI(_answer) as fake:
        upstream = fake.base_url.removesuffix("/v1")
        config = ProxyConfig(upstream=upstream, record_dir=tmp_path)
        with ProxyServer(config, on_line=lines.append) as proxy:
            client: Any = openai.OpenAI(
                base_url=proxy.base_url + "/v1", api_key="sk-openai-test", max_retries=0
            )
            _chat_turns(client, stream=False)
            _chat_turns(client, stream=True)
            first = client.responses.create(model=GPT, input="responses", tools=[RESPONSES_TOOL])
            call = next(o for o in first.output if o.type == "function_call")
            follow = [
                {"role": "user", "content": "responses"},
                call.model_dump(exclude_none=True),
                {"type": "function_call_output", "call_id": call.call_id, "output": "x = 1"},
            ]
            events = list(client.responses.create(model=GPT, input=follow, stream=True))
            assert events[-1].type == "response.completed"

            async def async_chat() -> str:
                async with openai.AsyncOpenAI(
                    base_url=proxy.base_url + "/v1", api_key="sk-openai-test", max_retries=0
                ) as aclient:
                    done = await aclient.chat.completions.create(
                        model=GPT, messages=[{"role": "user", "content": "async"}]
                    )
                calls = done.choices[0].message.tool_calls or []
                return calls[0].id

            assert asyncio.run(async_chat()).startswith("toolu_")
            client.close()
    assert all(r.status == 200 for r in fake.requests)
    assert len(fake.requests) == 7
    check_files(tmp_path)
    recorded = records(tmp_path)
    assert len(recorded) == 7
    assert all(r["complete"] for r in recorded)
    calls = replayed_calls(tmp_path)
    assert len(calls) == 7
    parse = {"/v1/chat/completions": parse_chat_request, "/v1/responses": parse_responses_request}
    upstream_got = sorted(
        json.dumps(to_payload(parse[r.path](r.body)), sort_keys=True) for r in fake.requests
    )
    assert sorted(json.dumps(to_payload(c.request), sort_keys=True) for c in calls) == upstream_got
    streamed = [c for c, r in zip(calls, recorded, strict=True) if r["streamed"]]
    assert streamed
    assert all(c.usage is not None and c.response is not None for c in streamed)
    assert len(lines) == 7


def test_openai_chat_strategy_edits_the_forwarded_history(tmp_path: Path) -> None:
    with FakeOpenAI(lambda c: _loop_reply(c, 6)) as fake:
        upstream = fake.base_url.removesuffix("/v1")
        config = ProxyConfig(upstream=upstream, strategy=BATCHED, record_dir=tmp_path)
        with ProxyServer(config) as proxy, httpx.Client(base_url=proxy.base_url) as http:
            messages: list[Any] = [{"role": "user", "content": "loop"}]
            while True:
                body = {"model": GPT, "messages": messages, "tools": [FUNCTION]}
                answer = http.post("/v1/chat/completions", json=body)
                assert answer.status_code == 200, answer.text
                choice = answer.json()["choices"][0]["message"]
                if not choice.get("tool_calls"):
                    break
                call = choice["tool_calls"][0]
                result = {"role": "tool", "tool_call_id": call["id"], "content": "x = 1\n" * 150}
                messages += [choice, result]
    assert all(r.status == 200 for r in fake.requests)  # a strict upstream took every edit
    assert len(fake.requests) == 7
    recorded = records(tmp_path)
    assert any("evicted" in (r["edit"]["summary"] or "") for r in recorded)
    last = recorded[-1]
    assert len(json.dumps(forwarded(last))) < 0.7 * len(json.dumps(last["request"]))
    assert not any("cache_control" in json.dumps(forwarded(r)) for r in recorded)
    calls = replayed_calls(tmp_path)
    got = [json.dumps(to_payload(c.request), sort_keys=True) for c in calls]
    sent = [
        json.dumps(to_payload(parse_chat_request(r.body)), sort_keys=True) for r in fake.requests
    ]
    assert got == sent


SECRETS = {
    "x-api-key": "sk-ant-secret-1",
    "x-auth-token": "secret-2",
    "anthropic-api-key": "secret-3",
    "x-goog-api-key": "secret-4",
}
QUERY_SECRETS = {"key": "secret-5", "api_key": "secret-6", "access_token": "secret-7"}


def test_no_credential_reaches_a_record(tmp_path: Path) -> None:
    """Every header and query parameter whose name suggests a credential is left out of the
    records (deny by default), while the upstream still gets them; searched for every value sent
    (``x-auth-token``, ``anthropic-api-key`` and ``?key=`` / ``?api_key=`` were kept before)."""
    with FakeAnthropic([Reply.text("hi")]) as fake:
        config = ProxyConfig(upstream=fake.base_url, record_dir=tmp_path)
        with ProxyServer(config) as proxy, httpx.Client(base_url=proxy.base_url) as http:
            body = {
                "model": MODEL,
                "max_tokens": 16,
                "messages": [{"role": "user", "content": "x"}],
            }
            query = "&".join(f"{k}={v}" for k, v in QUERY_SECRETS.items()) + "&beta=true"
            answer = http.post(f"/v1/messages?{query}", json=body, headers=SECRETS)
            assert answer.status_code == 200, answer.text
    (received,) = fake.requests
    assert received.headers["x-auth-token"] == "secret-2"  # forwarded as sent
    assert "key=secret-5" in received.path
    text = "".join(p.read_text(encoding="utf-8") for p in tmp_path.rglob("*") if p.is_file())
    assert text, "the exchange was recorded"
    for value in (*SECRETS.values(), *QUERY_SECRETS.values()):
        assert value not in text, value
    (record,) = records(tmp_path)
    assert "beta=true" in record["path"]
    assert "key=REDACTED" in record["path"]


def test_a_body_the_proxy_cannot_parse_is_forwarded_and_recorded(tmp_path: Path) -> None:
    """A number past Python's digit limit, nesting 100,000 deep, a lone surrogate escaped in a
    message: each request reaches the upstream (which answers in its own error shape, or
    accepts it) and is recorded; none gets a plain-text 500 from the proxy (all three did)."""
    valid = '{"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "%s"}]}'
    bodies = {
        "long number": valid.replace('"max_tokens": 8', '"max_tokens": ' + "9" * 5_000),
        "deep nesting": '{"model": "m", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "lone surrogate": valid % "a \\ud800 b",
    }
    with FakeAnthropic(lambda c: Reply.text("ok")) as fake:
        config = ProxyConfig(upstream=fake.base_url, record_dir=tmp_path, strategy=BATCHED)
        with ProxyServer(config) as proxy, httpx.Client(base_url=proxy.base_url) as http:
            answers = {
                name: http.post(
                    "/v1/messages", content=body, headers={"content-type": "application/json"}
                )
                for name, body in bodies.items()
            }
    for name, answer in answers.items():
        assert answer.status_code in (200, 400), (name, answer.status_code, answer.text)
        assert isinstance(answer.json(), dict), name  # the upstream's JSON, not a proxy 500
    assert answers["long number"].json()["type"] == "error"
    assert answers["deep nesting"].json()["type"] == "error"
    assert len(fake.requests) + len(fake.rejections) >= 3
    assert len(records(tmp_path)) == 3  # every exchange recorded once


def test_a_stream_the_upstream_ends_early_makes_the_sdk_raise(tmp_path: Path) -> None:
    """The upstream ends its response well formed but before ``message_stop``: the proxy adds
    the API's error event, so the Anthropic SDK raises instead of handing back half an answer
    with ``stop_reason=None`` (it passed the short stream on as a normal 200 before)."""
    from proxy_upstream import DripUpstream  # noqa: PLC0415

    with DripUpstream() as upstream:
        config = ProxyConfig(upstream=upstream.base_url, record_dir=tmp_path)
        with ProxyServer(config) as proxy:
            client = anthropic.Anthropic(base_url=proxy.base_url, api_key="k", max_retries=0)

            def ask(text: str) -> list[Any]:
                said: Any = [{"role": "user", "content": text}]
                stream = client.messages.create(
                    model=MODEL, max_tokens=64, stream=True, messages=said
                )
                return list(stream)

            with pytest.raises(anthropic.APIError, match="ended before its final event"):
                ask("fault:end")
            whole = ask("hello")
            assert whole[-1].type == "message_stop"  # a whole stream passes as it was
            client.close()
    cut, fine = records(tmp_path)
    assert cut["complete"] is False
    assert "ended before its final event" in cut["error"]
    assert fine["complete"] is True


def test_a_body_over_the_cap_gets_a_413_and_is_not_kept(tmp_path: Path) -> None:
    """A 20 MB binary body was recorded as 47 MB of text: bodies over ``max_body_mb`` get a 413
    in the API's error shape, declared or chunked, and the record keeps only their size."""
    with FakeAnthropic(lambda c: Reply.text("ok")) as fake:
        config = ProxyConfig(upstream=fake.base_url, record_dir=tmp_path, max_body_mb=1.0)
        with ProxyServer(config) as proxy, httpx.Client(base_url=proxy.base_url) as http:
            blob = os.urandom(2_000_000)
            declared = http.post("/v1/messages", content=blob)
            chunked = http.post("/v1/messages", content=iter([blob[:600_000]] * 3))
            small = http.post(
                "/v1/messages",
                json={
                    "model": MODEL,
                    "max_tokens": 8,
                    "messages": [{"role": "user", "content": "hi"}],
                },
            )
    for answer in (declared, chunked):
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"]["type"] == "request_too_large"
    assert small.status_code == 200
    assert len(fake.requests) == 1  # only the small one reached the upstream
    kept = records(tmp_path)
    assert len(kept) == 3
    big = [r for r in kept if r["status"] == 413]
    assert len(big) == 2
    assert "2,000,000 bytes over the 1 MB cap" in big[0]["request"]
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) < 100_000
