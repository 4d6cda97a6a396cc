"""Files of request bodies parse what repeats once (contextkit.wire._reuse).

Each test loads a file twice, with reuse and with every body parsed on its own
(``_reuse.RECENT = 0``), and holds the two to the same requests, serialised byte for byte alike,
while the reused ones share one history per thread.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import ContextkitError
from contextkit.formats import load
from contextkit.messages import History
from contextkit.session import LoadedFile
from contextkit.wire import _reuse, to_anthropic_request

TOOLS = [{"name": "read", "description": "Read a file", "input_schema": {"type": "object"}}]


def _body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are terse."}],
        "tools": TOOLS,
        "messages": messages,
        **extra,
    }


def _thread(name: str, turns: int) -> list[dict[str, Any]]:
    """The bodies of one agent loop: each repeats the previous and adds a reply and a result,
    with the cache mark on the newest message (so it moves, as Claude Code's does)."""
    history: list[dict[str, Any]] = [{"role": "user", "content": f"{name}: start"}]
    bodies = []
    for i in range(turns):
        body = _body(copy.deepcopy(history))
        last = body["messages"][-1]
        last["content"] = [
            {"type": "text", "text": _text(last), "cache_control": {"type": "ephemeral"}}
        ]
        bodies.append(body)
        history.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"{name}{i}", "name": "read", "input": {}}],
            }
        )
        history.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"{name}{i}", "content": f"line {i}"}
                ],
            }
        )
    return bodies


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else json.dumps(content)


def _write(path: Path, bodies: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(b) + "\n" for b in bodies))
    return path


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LoadedFile, LoadedFile]:
    reused = load(path)
    with monkeypatch.context() as m:
        m.setattr(_reuse, "RECENT", 0)
        alone = load(path)
    return reused, alone


def _assert_same(reused: LoadedFile, alone: LoadedFile) -> None:
    assert reused == alone
    pairs = [
        (a, b)
        for s, t in zip(reused.sessions, alone.sessions, strict=True)
        for a, b in zip(s.calls, t.calls, strict=True)
    ]
    assert pairs
    for a, b in pairs:
        assert json.dumps(to_anthropic_request(a.request)) == json.dumps(
            to_anthropic_request(b.request)
        )
        assert a.request.model_fields_set == b.request.model_fields_set


def test_one_thread_shares_one_history_and_reads_as_each_body_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bodies = _thread("main", 12)
    reused, alone = _both(_write(tmp_path / "trace.jsonl", bodies), monkeypatch)
    _assert_same(reused, alone)
    calls = reused.sessions[0].calls
    for call, body in zip(calls, bodies, strict=True):
        assert to_anthropic_request(call.request) == body  # the round trip holds with reuse too
    messages = [c.request.messages for c in calls]
    assert all(isinstance(m, History) for m in messages)
    # Each request's messages before the moved cache mark are the previous request's objects
    # (the first body's one message carries the mark that the second's does not).
    for before, after in itertools.pairwise(calls):
        k = len(before.request.messages) - 1
        assert all(
            a is b
            for a, b in zip(before.request.messages[:k], after.request.messages[:k], strict=True)
        )
        assert after.request.tools is before.request.tools
        assert after.request.system is before.request.system
    unshared = [c for c in alone.sessions[0].calls[1:] if c.request.tools is calls[0].request.tools]
    assert not unshared  # parsed alone, nothing is shared: the test above can fail


def test_interleaved_threads_each_find_their_own_earlier_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, sub = _thread("main", 6), _thread("sub", 6)
    sub = [dict(b, system=[{"type": "text", "text": "You are a subagent."}]) for b in sub]
    bodies = [b for pair in zip(main, sub, strict=True) for b in pair]
    reused, alone = _both(_write(tmp_path / "trace.jsonl", bodies), monkeypatch)
    _assert_same(reused, alone)
    calls = reused.sessions[0].calls
    for thread in (calls[0::2], calls[1::2]):
        for before, after in itertools.pairwise(thread[1:]):
            assert after.request.messages[0] is before.request.messages[0]
    assert calls[1].request.messages[0] is not calls[0].request.messages[0]


def test_an_edited_history_shares_only_the_messages_before_the_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bodies = _thread("main", 5)
    edited = copy.deepcopy(bodies[-1])
    edited["messages"][2]["content"][0]["content"] = "edited"  # a tool result replaced
    edited["messages"][4]["content"][0]["cache_control"] = None  # null: not the same as absent
    after = _thread("main", 6)[-1]  # grows from the unedited history again
    reused, alone = _both(_write(tmp_path / "t.jsonl", [*bodies, edited, after]), monkeypatch)
    _assert_same(reused, alone)
    calls = reused.sessions[0].calls
    assert to_anthropic_request(calls[5].request) == edited  # "cache_control": null kept
    assert calls[5].request.messages[1] is calls[4].request.messages[1]
    assert calls[5].request.messages[2] is not calls[4].request.messages[2]
    assert to_anthropic_request(calls[4].request) == bodies[-1]  # the older request unchanged
    assert to_anthropic_request(calls[6].request) == after


def test_a_bad_message_after_a_repeated_prefix_is_named_by_its_index_in_the_body(
    tmp_path: Path,
) -> None:
    bodies = _thread("main", 3)
    bad = copy.deepcopy(bodies[-1])
    bad["messages"].append({"role": "user", "content": 7})
    path = _write(tmp_path / "trace.jsonl", [*bodies, bad])
    index = len(bad["messages"]) - 1
    with pytest.raises(ContextkitError, match=rf"trace\.jsonl:4: .*messages\.{index}\.content"):
        load(path)
    lenient = load(path, lenient=True)
    assert len(lenient.sessions[0].calls) == 3
    assert [s.line for s in lenient.skipped] == [4]
    assert f"messages.{index}.content" in lenient.skipped[0].reason


def test_proxy_records_reuse_anthropic_bodies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }
    records = [
        {
            "contextkit_proxy": i + 1,
            "api": "anthropic",
            "method": "POST",
            "path": "/v1/messages",
            "request": body,
            "status": 200,
            "complete": True,
            "response": response,
        }
        for i, body in enumerate(_thread("main", 6))
    ]
    path = tmp_path / "proxy.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    reused, alone = _both(path, monkeypatch)
    assert reused.format == "contextkit-proxy"
    _assert_same(reused, alone)
    calls = reused.sessions[0].calls
    assert calls[-1].request.messages[0] is calls[1].request.messages[0]


@pytest.mark.corpus
def test_the_claude_trace_corpus_file_reads_as_each_body_alone(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = sorted((corpus / "claude-trace-lemmy").glob("*.jsonl"))
    assert files
    for path in files:
        reused, alone = _both(path, monkeypatch)
        _assert_same(reused, alone)


@pytest.mark.parametrize(
    ("first", "again"),
    [({"x": 1}, {"x": 1.0}), ({"x": 1}, {"x": True}), ({"a": 1, "b": 2}, {"b": 2, "a": 1})],
)
def test_values_python_calls_equal_but_json_writes_apart_are_not_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: Any, again: Any
) -> None:
    def use(value: Any) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": value}],
        }

    start = {"role": "user", "content": "go"}
    bodies = [
        _body([start, use(first), {"role": "user", "content": "more"}]),
        _body([start, use(again), {"role": "user", "content": "more"}, use(first)]),
    ]
    bodies[1]["tools"] = [dict(TOOLS[0], input_schema={"type": "object", "x": 1.0})]
    reused, alone = _both(_write(tmp_path / "trace.jsonl", bodies), monkeypatch)
    _assert_same(reused, alone)
    for call, body in zip(reused.sessions[0].calls, bodies, strict=True):
        written = to_anthropic_request(call.request)  # declared fields first, then the others
        for key in ("messages", "tools"):
            assert json.dumps(written[key]) == json.dumps(body[key])
