"""pi session reader: the corpus file, and hand-built v1 / v3 files for the shapes it lacks
(trees with branches, compactions, bash executions, bad lines, unknown entries)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError, UnknownFormatError
from contextkit.formats import detect, load
from contextkit.formats.pi import COMPACTION_PREFIX, NO_RESULT, READER
from contextkit.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from contextkit.session import Session, Usage
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

PI_FILE = "pi-mono/large-session.jsonl"


def _assistant_entries(path: Path) -> list[dict[str, Any]]:
    """The file's assistant messages, by a plain JSON loop (independent of the reader)."""
    out = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "message" and entry["message"]["role"] == "assistant":
            out.append(entry["message"])
    return out


# --------------------------------------------------------------------------------------------------
# Corpus


@pytest.mark.corpus
def test_corpus_file_loads_strictly_with_one_call_per_assistant_message(corpus: Path) -> None:
    path = corpus / PI_FILE
    assert detect(path).name == "pi"
    loaded = load(path)
    assert loaded.skipped == ()
    (session,) = loaded.sessions
    assistants = _assistant_entries(path)
    # 453 assistant messages: 452 claude-sonnet-4-5, 1 aborted gpt-5.1-codex (SOURCES.md).
    assert len(assistants) == 453
    assert len(session.calls) == 453
    assert [c.model for c in session.calls].count("gpt-5.1-codex") == 1
    assert session.session_id == "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    assert session.set_aside == {"model_change": 1, "thinking_level_change": 103}
    assert session.compactions == ()
    assert not session.prefix_known


@pytest.mark.corpus
def test_corpus_usage_and_recorded_cost(corpus: Path) -> None:
    path = corpus / PI_FILE
    (session,) = load(path).sessions
    usages = [m["usage"] for m in _assistant_entries(path)]
    recorded = [c.usage for c in session.calls]
    assert all(u is not None for u in recorded)
    total = Usage(
        input_tokens=sum(u.input_tokens for u in recorded if u),
        cache_write_5m=sum(u.cache_write_5m for u in recorded if u),
        cache_read=sum(u.cache_read for u in recorded if u),
        output_tokens=sum(u.output_tokens for u in recorded if u),
    )
    assert total == Usage(
        input_tokens=sum(u["input"] for u in usages),
        cache_write_5m=sum(u["cacheWrite"] for u in usages),
        cache_read=sum(u["cacheRead"] for u in usages),
        output_tokens=sum(u["output"] for u in usages),
    )
    assert total.input_tokens == 1049
    assert total.output_tokens == 83156
    cost = sum(u["cost"]["total"] for u in usages)
    assert round(cost, 2) == 30.33
    assert any(f"${cost:.4f} over 453 calls" in note for note in session.notes)


@pytest.mark.corpus
def test_corpus_requests_pair_tool_calls_and_drop_unsent_turns(corpus: Path) -> None:
    (session,) = load(corpus / PI_FILE).sessions
    last = session.calls[-1].request.messages
    assert [m.role for m in last[:2]] == ["user", "assistant"]
    # Line 466 is a second assistant reply right after the one at line 465 (16 ms later), to a
    # user message the file does not hold: the only same-role neighbours.
    same_role = [i for i in range(1, len(last)) if last[i].role == last[i - 1].role]
    assert len(same_role) == 1
    assert last[same_role[0]].role == "assistant"
    for before, after in itertools.pairwise(last):
        uses = {b.id for b in before.tool_uses()}
        if uses:
            assert uses <= {r.tool_use_id for r in after.tool_results()}
    stops = [c.stop_reason for c in session.calls]
    assert stops.count("aborted") == 21
    assert stops.count("error") == 1
    # Each request holds the previous request's messages, shared, as a growing history does.
    first, second = session.calls[5].request.messages, session.calls[6].request.messages
    assert all(a is b for a, b in zip(first, second, strict=False))


@pytest.mark.corpus
def test_pi_reader_claims_no_other_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert READER.sniff(path, head) == (path == corpus / PI_FILE), path


# --------------------------------------------------------------------------------------------------
# Hand-built files

HEADER_V1 = {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/p"}
HEADER_V3 = {**HEADER_V1, "version": 3}


def _usage(tokens: int = 10, cost: float = 0.01) -> dict[str, Any]:
    return {
        "input": tokens,
        "output": 5,
        "cacheRead": 100,
        "cacheWrite": 20,
        "totalTokens": tokens + 125,
        "cost": {"total": cost},
    }


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _assistant(*content: dict[str, Any], stop: str = "stop", model: str = "m") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": list(content),
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model,
        "usage": _usage(),
        "stopReason": stop,
    }


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _call(call_id: str) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"cmd": "ls"}}


def _result(call_id: str, text: str = "out") -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "bash",
        "content": [_text(text)],
        "isError": False,
    }


def _write(path: Path, *records: dict[str, Any] | str) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def _tree(*entries: tuple[str, str | None, dict[str, Any]]) -> list[dict[str, Any]]:
    """(id, parentId, entry) -> v3 entries."""
    ts = "2025-01-01T00:00:01Z"
    return [{**e, "id": i, "parentId": p, "timestamp": ts} for i, p, e in entries]


def _msg(message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "message": message}


def _only(path: Path, *, lenient: bool = False) -> Session:
    (session,) = load(path, lenient=lenient).sessions
    return session


def test_v1_linear_tool_round_trip_and_usage(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        HEADER_V1,
        {"type": "message", "timestamp": "2025-01-01T00:00:01Z", "message": _user("list")},
        _msg(
            _assistant(
                {"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"},
                _call("t1"),
                stop="toolUse",
            )
        ),
        _msg(_result("t1")),
        _msg(_assistant(_text("done"))),
    )
    assert detect(path).name == "pi"
    session = _only(path)
    first, second = session.calls
    assert first.stop_reason == "tool_use"
    assert second.stop_reason == "end_turn"
    assert first.usage == Usage(input_tokens=10, cache_write_5m=20, cache_read=100, output_tokens=5)
    assert first.timestamp is None or first.timestamp.year == 2025
    assert first.line == 3
    assert not first.exact
    thinking, use = first.response.blocks if first.response else ()
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.signature == "sig"
    assert isinstance(use, ToolUseBlock)
    assert use.input == {"cmd": "ls"}
    user, assistant, results = second.request.messages
    assert user.content == (TextBlock(text="list"),)
    assert assistant == first.response
    (result,) = results.blocks
    assert isinstance(result, ToolResultBlock)
    assert result.tool_use_id == "t1"
    assert any("$0.0200 over 2 calls" in n for n in session.notes)


def test_v3_tree_reads_the_path_to_the_last_entry_and_notes_other_branches(tmp_path: Path) -> None:
    entries = _tree(
        ("a", None, _msg(_user("q"))),
        ("b", "a", _msg(_assistant(_text("first answer")))),
        ("c", "b", _msg(_user("try A"))),
        ("d", "c", _msg(_assistant(_text("A")))),
        ("e", "b", {"type": "branch_summary", "fromId": "d", "summary": "A failed"}),
        ("f", "e", _msg(_user("try B"))),
        ("g", "f", _msg(_assistant(_text("B")))),
    )
    session = _only(_write(tmp_path / "t.jsonl", HEADER_V3, *entries))
    assert [c.line for c in session.calls] == [3, 8]
    last = session.calls[-1].request.messages
    assert [m.role for m in last] == ["user", "assistant", "user"]
    summary, typed = last[-1].blocks
    assert isinstance(summary, TextBlock)
    assert "A failed" in summary.text
    assert typed == TextBlock(text="try B")
    (note,) = [n for n in session.notes if "other branches" in n]
    assert "2 entries (1 assistant messages)" in note


def test_compaction_restarts_the_request_from_summary_and_kept_entries(tmp_path: Path) -> None:
    entries = _tree(
        ("a", None, _msg(_user("old"))),
        ("b", "a", _msg(_assistant(_text("old answer")))),
        ("c", "b", _msg(_user("kept"))),
        ("d", "c", _msg(_assistant(_text("kept answer")))),
        (
            "e",
            "d",
            {"type": "compaction", "summary": "S", "firstKeptEntryId": "c", "tokensBefore": 999},
        ),
        ("f", "e", {"type": "model_change", "provider": "openai", "modelId": "gpt"}),
        ("g", "f", _msg(_user("new"))),
        ("h", "g", _msg(_assistant(_text("new answer"), model="gpt"))),
    )
    session = _only(_write(tmp_path / "c.jsonl", HEADER_V3, *entries))
    assert len(session.calls) == 3
    assert session.compactions == (2,)
    assert session.set_aside == {"model_change": 1}
    assert session.calls[2].model == "gpt"
    messages = session.calls[2].request.messages
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    summary, kept = messages[0].blocks
    assert isinstance(summary, TextBlock)
    assert summary.text == COMPACTION_PREFIX + "S\n</summary>"
    assert kept == TextBlock(text="kept")
    assert messages[-1].content == (TextBlock(text="new"),)
    assert any("tokensBefore 999" in n for n in session.notes)


def test_aborted_turns_are_calls_but_not_resent_and_orphans_get_pi_results(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "a.jsonl",
        HEADER_V1,
        _msg(_user("go")),
        _msg(_assistant(stop="aborted")),
        _msg(_user("go again")),
        _msg(_assistant(_call("t1"), stop="toolUse")),
        _msg(_user("never mind")),
        _msg(_assistant(_text("ok"))),
    )
    session = _only(path)
    assert [c.stop_reason for c in session.calls] == ["aborted", "tool_use", "end_turn"]
    first_user, _use, answer = session.calls[2].request.messages
    assert [b.text for b in first_user.blocks if isinstance(b, TextBlock)] == ["go", "go again"]
    result, typed = answer.blocks
    assert isinstance(result, ToolResultBlock)
    assert result.is_error
    assert result.content == NO_RESULT
    assert typed == TextBlock(text="never mind")
    assert any("1 tool results are pi's synthetic" in n for n in session.notes)


def test_bash_execution_and_custom_messages_reach_the_model_as_user_text(tmp_path: Path) -> None:
    bash = {"role": "bashExecution", "command": "ls", "output": "a", "exitCode": 2}
    hidden = {**bash, "excludeFromContext": True}
    entries = _tree(
        ("a", None, _msg(bash)),
        ("b", "a", _msg(hidden)),
        ("c", "b", {"type": "custom_message", "customType": "x", "content": "hi", "display": True}),
        ("d", "c", {"type": "custom", "customType": "x", "data": {}}),
        ("e", "d", {"type": "label", "targetId": "a", "label": "L"}),
        ("f", "e", _msg(_assistant(_text("seen")))),
    )
    session = _only(_write(tmp_path / "b.jsonl", HEADER_V3, *entries))
    (user,) = session.calls[0].request.messages
    texts = [b.text for b in user.blocks if isinstance(b, TextBlock)]
    assert texts == ["Ran `ls`\n```\na\n```\n\nCommand exited with code 2", "hi"]
    assert session.set_aside == {"custom": 1, "label": 1}


def test_unknown_entry_type_is_set_aside_and_counted(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "u.jsonl",
        HEADER_V1,
        _msg(_user("q")),
        {"type": "future_thing", "x": 1},
        {"type": "future_thing", "x": 2},
        _msg(_assistant(_text("a"))),
    )
    session = _only(path)
    assert len(session.calls) == 1
    assert session.set_aside == {"future_thing": 2}


def test_bad_line_is_an_error_strictly_and_a_listed_skip_leniently(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "bad.jsonl",
        HEADER_V1,
        _msg(_user("q")),
        "{not json",
        {"type": "message", "message": {"role": "assistant", "content": "not a list"}},
        {"no": "type"},
        _msg(_assistant(_text("a"))),
    )
    with pytest.raises(FormatError) as error:
        load(path)
    assert error.value.line == 3
    assert error.value.path == str(path)
    loaded = load(path, lenient=True)
    assert [s.line for s in loaded.skipped] == [3, 4, 5]
    assert "assistant message needs a 'content' list" in loaded.skipped[1].reason
    assert loaded.calls == 1


def test_tree_entry_without_id_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", HEADER_V3, _msg(_user("q")))
    with pytest.raises(FormatError, match="needs a string 'id'") as error:
        load(path)
    assert error.value.line == 2


def test_empty_file_and_header_only_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(UnknownFormatError):
        load(empty)
    with pytest.raises(FormatError, match="no pi session header"):
        READER.read(empty)
    session = _only(_write(tmp_path / "h.jsonl", HEADER_V3))
    assert session.calls == ()
    assert session.session_id == "s1"


def test_session_with_user_messages_but_no_calls(tmp_path: Path) -> None:
    path = _write(tmp_path / "n.jsonl", HEADER_V1, _msg(_user("q")), {"type": "session_info"})
    session = _only(path)
    assert session.calls == ()
    assert session.set_aside == {"session_info": 1}
    assert not any(n.startswith("recorded cost") for n in session.notes)


def test_first_record_must_be_a_header(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.jsonl", _msg(_user("q")))
    with pytest.raises(FormatError, match="not a pi session header"):
        READER.read(path)


@pytest.mark.parametrize(
    "first",
    [
        {"type": "session", "id": "x"},  # no cwd: not pi's header
        {"type": "session_meta", "payload": {}},  # Codex
        {"type": "user", "sessionId": "s"},
    ],
)
def test_sniff_is_conservative(tmp_path: Path, first: dict[str, Any]) -> None:
    path = _write(tmp_path / "o.jsonl", first)
    assert not READER.sniff(path, path.read_text())


def test_v1_compaction_names_the_first_kept_entry_by_index(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "v1c.jsonl",
        HEADER_V1,  # index 0
        _msg(_user("old")),  # 1
        _msg(_assistant(_text("old answer"))),  # 2
        _msg(_user("kept")),  # 3
        {"type": "compaction", "summary": "S", "firstKeptEntryIndex": 3, "tokensBefore": 5},
        _msg(_assistant(_text("after"))),
    )
    session = _only(path)
    assert session.compactions == (1,)
    (user,) = session.calls[1].request.messages
    summary, kept = user.blocks
    assert isinstance(summary, TextBlock)
    assert summary.text.startswith(COMPACTION_PREFIX)
    assert kept == TextBlock(text="kept")
