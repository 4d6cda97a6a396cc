"""The proxy's pieces on their own: conversation keys, redaction, stream reassembly, the record
reader on bad input, the command's errors, and ``contextkit --help`` without the extra loaded."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.errors import FormatError
from contextkit.formats import load
from contextkit.proxy import assemble, conversation_key, redacted
from contextkit.wire import chat_chunks, stream_events, to_sse

HI = {"role": "user", "content": "hi"}
BODY: dict[str, Any] = {"model": "m", "max_tokens": 1, "messages": [HI]}


def test_conversation_key_sources() -> None:
    header = {"x-claude-code-session-id": "abc-123"}
    assert conversation_key("anthropic", header, BODY) == "session-abc-123"
    as_json = {**BODY, "metadata": {"user_id": json.dumps({"session_id": "s-9", "device": "d"})}}
    assert conversation_key("anthropic", {}, as_json) == "session-s-9"
    old = {**BODY, "metadata": {"user_id": "user_x_account_y_session_77aa-bb"}}
    assert conversation_key("anthropic", {}, old) == "session-77aa-bb"
    keyed = {**BODY, "prompt_cache_key": "team/42", "user": "u"}
    assert conversation_key("openai-chat", {}, keyed).startswith("prompt-cache-key-team_42-")
    assert conversation_key("openai-chat", {}, {**BODY, "user": "u1"}) == "user-u1"
    # Else the first user message: the same opening, the same conversation, however it goes on.
    longer = {**BODY, "messages": [HI, {"role": "assistant", "content": "yo"}]}
    first = conversation_key("anthropic", {}, BODY)
    assert first.startswith("prefix-")
    assert conversation_key("anthropic", {}, longer) == first
    other = {**BODY, "messages": [{"role": "user", "content": "other"}]}
    assert conversation_key("anthropic", {}, other) != first


def test_credentials_are_never_kept() -> None:
    headers = [("X-Api-Key", "k"), ("Authorization", "Bearer k"), ("Cookie", "c"), ("A", "b")]
    assert redacted(headers) == {"a": "b"}


def test_streams_reassemble_and_cuts_are_incomplete() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "hello there"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    text = to_sse(stream_events(message))
    whole = assemble("anthropic", text, streamed=True)
    assert whole.complete
    assert whole.body == message
    cut = assemble("anthropic", text[: len(text) // 2], streamed=True)
    assert not cut.complete
    completion = {
        "id": "c",
        "created": 1,
        "model": "m",
        "choices": [{"message": {"content": "hi there"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2},
    }
    chunks = "".join(
        f"data: {json.dumps(c)}\n\n" for c in chat_chunks(completion, include_usage=True)
    )
    chat = assemble("openai-chat", chunks + "data: [DONE]\n\n", streamed=True)
    assert chat.complete
    assert chat.body is not None
    assert chat.body["choices"][0]["message"]["content"] == "hi there"
    assert chat.body["usage"] == completion["usage"]
    assert not assemble("openai-chat", chunks, streamed=True).complete  # no [DONE]


def test_a_bad_record_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    good = {"contextkit_proxy": 1, "api": "anthropic", "request": BODY, "forwarded": None}
    good |= {"status": 200, "complete": True, "response": {"content": [], "role": "assistant"}}
    bad = {**good, "forwarded": "not a body"}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(FormatError) as raised:
        load(path)
    assert raised.value.line == 2
    lenient = load(path, lenient=True)
    assert len(lenient.sessions[0].calls) == 1
    assert [s.line for s in lenient.skipped] == [2]


def test_the_command_refuses_bad_options() -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["proxy", "--upstream", "localhost:1"])
    assert done.exit_code != 0
    assert "give a URL" in str(done.exception)
    done = runner.invoke(app, ["proxy", "--upstream", "http://x", "--dry-run"])
    assert "--dry-run needs --strategy" in str(done.exception)


def test_help_does_not_load_the_server_stack() -> None:
    """The command imports the proxy (starlette, uvicorn, httpx) inside the command only."""
    import contextkit.cli.proxy as command  # noqa: PLC0415  (the module under test)

    tree = ast.parse(Path(command.__file__).read_text())
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            top.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            top.add(node.module)
    assert not {m for m in top if m.startswith(("contextkit.proxy", "starlette", "uvicorn"))}
    function = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "proxy_command"
    )
    lazy = {n.module for n in ast.walk(function) if isinstance(n, ast.ImportFrom)}
    assert "contextkit.proxy" in lazy


def test_conversations_are_bounded() -> None:
    from contextkit.messages import parse_conversation  # noqa: PLC0415
    from contextkit.proxy import Conversations  # noqa: PLC0415
    from contextkit.proxy._conversations import MAX_CONVERSATIONS  # noqa: PLC0415
    from contextkit.strategies import EvictToolResults  # noqa: PLC0415
    from contextkit.testing import FixedCounter  # noqa: PLC0415

    conversations = Conversations(EvictToolResults(keep_last=1), counter=FixedCounter())
    request = parse_conversation(BODY)
    for n in range(MAX_CONVERSATIONS + 5):
        conversations.apply(f"c{n}", "anthropic", request)
    forwarded, edit, _ = conversations.apply("c0", "anthropic", request)
    assert edit.lane == MAX_CONVERSATIONS + 6  # c0 was dropped: a new lane
    (message,) = forwarded.messages
    assert [b.model_dump()["text"] for b in message.blocks] == ["hi"]


def test_the_record_folder_is_private_and_follows_no_link(tmp_path: Path) -> None:
    """Records hold every prompt: a new folder is 0700; one others can write is refused (they
    could plant a link or a file); a link planted in it is never followed (before, prompts went
    wherever the link pointed, and a planted 0666 file was appended to)."""
    import os  # noqa: PLC0415
    import stat  # noqa: PLC0415

    from contextkit.errors import ContextkitError  # noqa: PLC0415
    from contextkit.proxy import RecordWriter  # noqa: PLC0415

    fresh = tmp_path / "new" / "records"
    RecordWriter(fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ContextkitError, match="others can write this record folder"):
        RecordWriter(shared)
    writer = RecordWriter(fresh)
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched", encoding="utf-8")
    os.symlink(outside, fresh / "c1.jsonl")
    with pytest.raises(ContextkitError, match="links in the record folder are never followed"):
        writer.write({"conversation": "c1", "request": "a prompt"})
    assert outside.read_text(encoding="utf-8") == "untouched"
    writer.write({"conversation": "c2", "request": "a prompt"})
    assert stat.S_IMODE((fresh / "c2.jsonl").stat().st_mode) == 0o600


def test_stats_keep_a_row_per_recent_conversation_and_fold_the_rest() -> None:
    """Rows for the ``max_conversations`` most recently active; older ones folded into one
    ``evicted`` row, so the totals still count every exchange."""
    from contextkit.proxy._stats import Stats  # noqa: PLC0415
    from contextkit.session import Usage  # noqa: PLC0415

    stats = Stats(max_conversations=2)
    usage = Usage(input_tokens=10, output_tokens=2)
    for key in ("a", "b", "a", "c", "d"):
        stats.add(key, "claude-sonnet-4-5", usage, status=200, complete=True, edited=False)
    doc = stats.to_json()
    assert list(doc["conversations"]) == ["c", "d"]
    assert doc["evicted"]["conversations"] == 2  # b, then a (a was used again after b)
    assert doc["evicted"]["calls"] == 3
    assert doc["total"]["calls"] == 5
    assert doc["total"]["input_tokens"] == 50


def test_the_conversation_bound_is_configured() -> None:
    from contextkit.messages import parse_conversation  # noqa: PLC0415
    from contextkit.proxy import Conversations  # noqa: PLC0415
    from contextkit.strategies import EvictToolResults  # noqa: PLC0415
    from contextkit.testing import FixedCounter  # noqa: PLC0415

    conversations = Conversations(
        EvictToolResults(keep_last=1), counter=FixedCounter(), max_conversations=3
    )
    for n in range(10):
        conversations.apply(f"c{n}", "anthropic", parse_conversation(BODY))
    assert len(conversations) == 3


def test_a_recorded_body_the_proxy_could_not_parse_reads_back_as_no_call() -> None:
    """The proxy records a body it cannot parse as its text; the upstream refused it. Reading the
    record back failed the whole file ("'forwarded' must be the request body"); it is no model
    call, counted apart with a note. A 2xx answer to such a body is still a bad record."""
    from contextkit.formats.proxy_record import call_from_record  # noqa: PLC0415

    record = {"contextkit_proxy": 1, "api": "anthropic", "request": "{not json", "status": 400}
    call, note = call_from_record(record, 7)
    assert call is None
    assert note == "line 7: a request body that is not JSON (HTTP 400): no model call"
    with pytest.raises(ValueError, match="must be the request body"):
        call_from_record({**record, "status": 200, "complete": True}, 7)
