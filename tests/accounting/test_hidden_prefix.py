"""The hidden prefix of a file without its system prompt and tools: measured from call 1's usage,
or, without usage, known from the capture of the same client version
(:mod:`contextkit.accounting._hidden`)."""

from __future__ import annotations

from pathlib import Path

from contextkit.accounting import price_session
from contextkit.formats import load
from contextkit.formats.claude_code.prefix import captured_prefix, claude_code_prefix
from contextkit.messages import Conversation
from contextkit.session import Call, Session
from contextkit.testing import assistant, user
from contextkit.tokens import CalibratedCounter, counter_for


def _no_usage(version: str | None, *, parent: str | None = None) -> Session:
    request = Conversation(model="claude-sonnet-4-5", messages=(user("hello"),))
    call = Call(request=request, response=assistant("hi"), model="claude-sonnet-4-5")
    return Session(
        path="built",
        format="claude-code",
        calls=(call,),
        prefix_known=False,
        client_version=version,
        captured_prefix=captured_prefix(version, subagent=parent is not None),
        parent_session_id=parent,
    )


def test_a_captured_version_without_usage_gets_the_captured_prefix() -> None:
    capture = claude_code_prefix("2.1.197")
    assert capture is not None
    session = _no_usage("2.1.197")
    counter = counter_for(session.model_info)
    assert isinstance(counter, CalibratedCounter)
    ledger = price_session(session, counter)
    expected = round(
        (capture.main.system_tokens + capture.main.tool_tokens) * counter.params.factor
    )
    assert ledger.prefix_inferred_tokens == expected
    assert any("Claude Code 2.1.197 main requests, captured" in n for n in ledger.notes)
    # the simulated call carries it: call 1 writes it with the message
    assert int(ledger.context_tokens[0]) >= expected
    sub = price_session(_no_usage("2.1.197", parent="p"), counter)
    assert capture.subagent is not None
    sub_tokens = capture.subagent.system_tokens + capture.subagent.tool_tokens
    assert sub.prefix_inferred_tokens == round(sub_tokens * counter.params.factor)


def test_a_version_never_captured_leaves_the_size_unknown() -> None:
    for version in ("1.0.0", None):
        ledger = price_session(_no_usage(version))
        assert ledger.prefix_inferred_tokens is None
        assert any("their size is unknown" in n for n in ledger.notes)


def test_the_reader_keeps_the_client_version(corpus: Path) -> None:
    (top,) = load(corpus / "codemie-claude" / "session-196820da.jsonl").sessions
    assert top.client_version == "2.0.76"
    spotter = load(corpus / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl").sessions[0]
    assert {s.client_version for s in spotter.all_sessions()} == {"2.1.39"}
    # 2.0.76 and 2.1.39 were never captured: the reader puts no prefix on them
    assert top.captured_prefix is None
    assert all(s.captured_prefix is None for s in spotter.all_sessions())


def test_the_reader_puts_the_capture_of_its_version_on_main_and_subagent_sessions(
    tmp_path: Path,
) -> None:
    """Where the capture exists, the reader puts it on the session (the main conversation's set,
    or a subagent's own), so the accountant learns it without reading formats."""
    from contextkit.testing.transcripts import write_claude_code_transcript  # noqa: PLC0415

    path = write_claude_code_transcript(tmp_path / "t.jsonl", 3)
    text = path.read_text(encoding="utf-8").replace('"version": "2.1.38"', '"version": "2.1.197"')
    path.write_text(text, encoding="utf-8")
    (session,) = load(path).sessions
    assert session.client_version == "2.1.197"
    assert session.captured_prefix == captured_prefix("2.1.197", subagent=False)
    assert session.captured_prefix is not None
    assert "main requests" in session.captured_prefix.source
