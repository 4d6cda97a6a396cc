"""Claude Code loading is linear in the calls: each request extends the previous one, and that
gives exactly the messages a rebuild from the whole chain gives (corpus and synthetic files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextkit.formats import detect, load
from contextkit.formats.claude_code import _calls as calls_module
from contextkit.messages import to_payload
from contextkit.session import LoadedFile, Session
from contextkit.testing.transcripts import claude_code_transcript, write_claude_code_transcript


def _digest(session: Session) -> list[str]:
    out = []
    for call in session.calls:
        body = {"request": to_payload(call.request), "line": call.line}
        out.append(json.dumps(body, sort_keys=True, ensure_ascii=True))
    for sub in session.subagents:
        out.extend(_digest(sub))
    out.append(json.dumps(list(session.notes)))
    return out


def _loaded(loaded: LoadedFile) -> list[str]:
    return [line for session in loaded.sessions for line in _digest(session)]


def _rebuilding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request built from its whole chain (the reference the fast path must equal)."""

    def scratch(prefix: object, first: object, index: object, memo: object) -> object:
        return calls_module._scratch(first, index, memo)  # type: ignore[arg-type]

    monkeypatch.setattr(calls_module, "_next_request", scratch)


def _claude_code_files(corpus: Path) -> list[Path]:
    out = []
    for path in sorted(corpus.rglob("*.jsonl")):
        try:
            if detect(path).name == "claude-code":
                out.append(path)
        except Exception:
            continue
    return out


@pytest.mark.corpus
def test_extended_requests_equal_rebuilt_ones_on_the_corpus(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _claude_code_files(corpus)
    assert len(files) >= 15
    fast = {p: _loaded(load(p, lenient=True)) for p in files}
    _rebuilding(monkeypatch)
    for path in files:
        assert _loaded(load(path, lenient=True)) == fast[path], path


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_extended_requests_equal_rebuilt_ones_on_synthetic_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    path = write_claude_code_transcript(tmp_path / "t.jsonl", 120, seed=seed)
    fast = _loaded(load(path))
    _rebuilding(monkeypatch)
    assert _loaded(load(path)) == fast


def test_a_long_transcript_is_built_by_extension(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rebuilt = []
    scratch = calls_module._scratch

    def counted(*args: object) -> object:
        rebuilt.append(1)
        return scratch(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(calls_module, "_scratch", counted)
    path = write_claude_code_transcript(tmp_path / "t.jsonl", 1_000)
    session = load(path).sessions[0]
    assert len(session.calls) == 1_000
    assert len(rebuilt) == 1  # the first request; every other one extends the one before
    last = session.calls[-1].request.messages
    assert len(last) == 1_999
    # consecutive requests share their history: the same message objects
    assert all(a is b for a, b in zip(session.calls[-2].request.messages, last, strict=False))


def test_a_rewind_is_rebuilt(tmp_path: Path) -> None:
    """A prompt that branches off an earlier point (an edit): the next request is not the
    previous one extended, and it holds only its own branch."""
    lines = [json.loads(line) for line in claude_code_transcript(6).splitlines()]
    prompt = next(r for r in lines if r["type"] == "user" and r["parentUuid"] is None)
    branch = {**prompt, "uuid": "f" * 8 + prompt["uuid"][8:], "parentUuid": None}
    branch["message"] = {"role": "user", "content": "start over"}
    answer = {**lines[1], "uuid": "e" * 8 + lines[1]["uuid"][8:], "parentUuid": branch["uuid"]}
    answer["requestId"] = "req_branch"
    answer["message"] = {**answer["message"], "id": "msg_branch", "stop_reason": "end_turn"}
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*lines, branch, answer]))
    session = load(path).sessions[0]
    assert len(session.calls) == 7
    last = session.calls[-1].request.messages
    assert [m.content for m in last] == ["start over"]
