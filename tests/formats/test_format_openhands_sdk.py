"""OpenHands V1 (software-agent-sdk) persisted conversations, on a hand-made folder fixture.

The fixture (tests/fixtures/openhands-sdk/, see its README) follows the SDK's persistence layout
and event models; the corpus holds no V1 conversation.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from contextkit.errors import FormatError, UnknownFormatError
from contextkit.formats import detect, load
from contextkit.formats.openhands.sdk import READER
from contextkit.messages import TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.session import Usage
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

FIXTURE = Path(__file__).parents[1] / "fixtures" / "openhands-sdk"
CONVERSATION = "7c1e2b4a-5d3f-4e8a-9b10-2f6d8c3a1e55"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the fixture conversation, to spoil."""
    return Path(shutil.copytree(FIXTURE / CONVERSATION, tmp_path / CONVERSATION))


def _event_file(folder: Path, index: int) -> Path:
    (path,) = (folder / "events").glob(f"event-{index:05d}-*.json")
    return path


def test_fixture_calls_usage_and_prefix() -> None:
    path = FIXTURE / CONVERSATION / "base_state.json"
    assert detect(path).name == "openhands-sdk"
    loaded = load(path)
    assert loaded.skipped == ()
    (session,) = loaded.sessions
    assert session.session_id == CONVERSATION
    assert session.prefix_known
    first, second, third = session.calls
    assert first.request.system == (
        "You are OpenHands agent, a helpful AI assistant that can interact with a computer to "
        "solve tasks."
    )
    assert [t.name for t in first.request.tools] == ["execute_bash", "str_replace_editor"]
    assert first.response is not None
    uses = [b for b in first.response.blocks if isinstance(b, ToolUseBlock)]
    assert [(u.id, u.input) for u in uses] == [
        ("toolu_01", {"command": "ls"}),
        ("toolu_02", {"command": "view", "path": "/workspace/README.md"}),
    ]  # two ActionEvents of one llm_response_id: one call
    assert first.usage == Usage(input_tokens=12, cache_write_5m=2398, output_tokens=96)
    assert second.usage == Usage(
        input_tokens=12, cache_write_5m=223, cache_read=2398, output_tokens=88
    )
    assert first.model == "litellm_proxy/claude-sonnet-4-5-20250929"
    assert [c.request_id for c in session.calls] == ["chatcmpl-a1", "chatcmpl-a2", "chatcmpl-a3"]
    assert [c.stop_reason for c in session.calls] == ["tool_use", "tool_use", "end_turn"]
    ok, failed = second.request.messages[-1].blocks
    assert ok == ToolResultBlock(tool_use_id="toolu_01", content=(TextBlock(text="notes.txt"),))
    assert isinstance(failed, ToolResultBlock)
    assert failed.is_error
    assert failed.text.startswith("Tool Execution Error. ")
    rejected = third.request.messages[-1].blocks
    assert rejected == (
        ToolResultBlock(
            tool_use_id="toolu_03", content="Action rejected: Call it greet.py instead"
        ),
    )
    assert dict(session.set_aside) == {"ConversationStateUpdateEvent": 1, "PauseEvent": 1}
    assert "recorded cost: $0.029740 (stats, every LLM of the state)" in session.notes
    assert any(n.startswith("1 LLM calls in stats have no event here") for n in session.notes)


def test_event_files_alone_are_no_format() -> None:
    for path in (FIXTURE / CONVERSATION / "events").glob("event-*.json"):
        with pytest.raises(UnknownFormatError):
            detect(path)


def test_bad_event_file_strict_and_lenient(folder: Path) -> None:
    broken = _event_file(folder, 4)
    broken.write_text('{"kind": "ObservationEvent", "id": ')
    kindless = _event_file(folder, 9)
    kindless.write_text(json.dumps({"id": "x", "source": "agent"}))
    base = folder / "base_state.json"
    with pytest.raises(FormatError) as info:
        load(base)
    assert info.value.path == str(broken)
    assert info.value.line == 1
    loaded = load(base, lenient=True)
    assert [(r.path, r.line) for r in loaded.skipped] == [(str(broken), 1), (str(kindless), 1)]
    assert "'kind'" in loaded.skipped[1].reason
    assert len(loaded.sessions[0].calls) == 2  # the agent's closing message was the bad one


def test_a_gap_in_the_indices_ends_the_log(folder: Path) -> None:
    _event_file(folder, 6).unlink()
    with pytest.raises(FormatError) as info:
        load(folder / "base_state.json")
    assert info.value.path == str(_event_file(folder, 7))
    assert "event index 6 is missing" in info.value.reason
    loaded = load(folder / "base_state.json", lenient=True)
    assert len(loaded.skipped) == 1
    assert len(loaded.sessions[0].calls) == 1  # as the SDK, nothing after the gap


def test_no_events_and_other_files(folder: Path) -> None:
    (folder / "events" / "notes.txt").write_text("not an event")
    assert dict(load(folder / "base_state.json").sessions[0].set_aside)["file:other"] == 1
    shutil.rmtree(folder / "events")
    (session,) = load(folder / "base_state.json").sessions
    assert session.calls == ()
    assert not session.prefix_known


def test_sniff_is_conservative(tmp_path: Path) -> None:
    other = tmp_path / "base_state.json"
    other.write_text(json.dumps({"id": "x", "workspace": {}}))  # no agent
    assert not READER.sniff(other, other.read_text())
    renamed = tmp_path / "state.json"
    renamed.write_text((FIXTURE / CONVERSATION / "base_state.json").read_text())
    assert not READER.sniff(renamed, renamed.read_text())


@pytest.mark.corpus
def test_sniff_claims_no_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert not READER.sniff(path, head), path
