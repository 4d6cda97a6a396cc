from __future__ import annotations

from contextkit.messages import Conversation, Message, TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.recall import FactIndex, extract_facts, score_call, summarise


def test_extract_facts_finds_each_kind() -> None:
    text = (
        "Reading src/orders/service.py failed: KeyError: 'currency' at line 1250 "
        "in parse_order_7 (see README.md); ok"
    )
    facts = extract_facts(text)
    assert "src/orders/service.py" in facts
    assert "KeyError: 'currency' at line 1250 in parse_order_7 (see README.md); ok" in facts
    assert "1250" in facts
    assert "parse_order_7" in facts
    assert "README.md" in facts
    assert "Reading" not in facts
    assert "failed" not in facts


def _conv(*messages: Message) -> Conversation:
    return Conversation(messages=messages)


def test_score_counts_lost_fact_only_when_it_was_in_the_tape() -> None:
    ask = Message(role="user", content="Fix the failing test")
    use = Message(
        role="assistant", content=(ToolUseBlock(id="t1", name="Read", input={"p": "a.py"}),)
    )
    result = Message(
        role="user",
        content=(ToolResultBlock(tool_use_id="t1", content="def compute_total_9(): return 4711"),),
    )
    response = Message(
        role="assistant",
        content=(TextBlock(text="compute_total_9 returns 4711; also unseen_name_3"),),
    )
    tape = _conv(ask, use, result)
    evicted = Message(
        role="user", content=(ToolResultBlock(tool_use_id="t1", content="[evicted]"),)
    )
    index = FactIndex()
    full = score_call(index, response, tape, tape)
    assert (full.needed, full.kept, full.lost) == (2, 2, ())
    cut = score_call(index, response, tape, _conv(ask, use, evicted))
    assert cut.needed == 2
    assert cut.kept == 0
    assert set(cut.lost) == {"compute_total_9", "4711"}
    report = summarise([full, cut])
    assert report.needed == 4
    assert report.kept == 2
    assert report.recall == 0.5
    assert report.examples == ((1, "4711"), (1, "compute_total_9"))


def test_no_response_needs_nothing() -> None:
    call = score_call(FactIndex(), None, _conv(), _conv())
    assert call.needed == 0
    assert summarise([call]).recall == 1.0
