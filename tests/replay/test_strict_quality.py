"""The strict quality measures (copied-span recall, edit feasibility) and rarity-weighted recall,
on hand-built sessions whose answers are known, and on the corpus: evicting every tool result
must now score badly (fact recall alone kept it at 0.86-0.94)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from contextkit.formats import load
from contextkit.messages import Message
from contextkit.replay import (
    FactWeights,
    default_weights,
    edit_strings,
    quote_text,
    replay,
    span_lines,
    strict_fit,
)
from contextkit.session import Call, Session
from contextkit.strategies import EvictToolResults, NoCompaction
from contextkit.testing import FixedCounter, assistant, conversation, tool_result, tool_use, user

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SOURCE = [
    "def compute_total(items, tax_rate):",
    "    total = sum(item.price for item in items) * (1 + tax_rate)",
    "    return round(total, 2)",
]
READ = "\n".join(f"{i + 1:>6}→{line}" for i, line in enumerate(SOURCE))  # as Read prints it
OLD = "\n".join(SOURCE[:2])
EVICT_ALL = EvictToolResults(keep_last=0, min_result_tokens=0, min_freed_tokens=0)


def _session(responses: Sequence[Message], results: Sequence[Message]) -> Session:
    """Call k sends the task, then each earlier response and its result; responses[k] answers."""
    history: list[Message] = [user("Fix the rounding in billing/total.py")]
    calls = []
    for k, response in enumerate(responses):
        request = conversation(*history, system="You are a test agent.", model="claude-sonnet-4-5")
        when = START + timedelta(seconds=10 * k)
        calls.append(Call(request=request, response=response, timestamp=when))
        if k < len(results):
            history = [*history, response, results[k]]
    return Session(path="hand-built", format="test", calls=tuple(calls))


def _edit_session(old: str = OLD) -> Session:
    """Read the file, list a folder, then edit the file quoting two of its lines."""
    edit = tool_use(
        "t3", "Edit", {"file_path": "billing/total.py", "old_string": old, "new_string": "x"}
    )
    copied = f"The line\n  {SOURCE[1].strip()}\nrounds too late.\n"
    copied += "My own words, not copied from anywhere."
    return _session(
        [
            assistant(
                "Reading", tool_uses=[tool_use("t1", "Read", {"file_path": "billing/total.py"})]
            ),
            assistant("Listing", tool_uses=[tool_use("t2", "Bash", {"command": "ls billing"})]),
            assistant(copied, tool_uses=[edit]),
        ],
        [user(tool_result("t1", READ)), user(tool_result("t2", "total.py\n__init__.py"))],
    )


def test_quote_text_removes_line_number_gutters_and_reads_tool_inputs() -> None:
    text = quote_text(user(tool_result("t1", READ)))
    assert text.splitlines() == SOURCE
    edit = assistant(tool_uses=[tool_use("t", "Edit", {"old_string": "a\nb", "new_string": "c"})])
    assert quote_text(edit).splitlines() == ["a", "b", "c"]  # string values, not escaped JSON


def test_span_lines_are_long_stripped_lines_with_letters() -> None:
    text = f"  {SOURCE[1]}  \nshort line\n{'-' * 40}\n{SOURCE[0]}"
    assert span_lines(text) == {SOURCE[1].strip(), SOURCE[0]}


def test_edit_strings_of_every_edit_tool_shape() -> None:
    response = assistant(
        tool_uses=[
            tool_use("a", "Edit", {"old_string": "one", "new_string": "1"}),
            tool_use(
                "b", "str_replace_based_edit_tool", {"command": "str_replace", "old_str": "two"}
            ),
            tool_use(
                "c", "MultiEdit", {"edits": [{"old_string": "three"}, {"old_string": "four"}]}
            ),
            tool_use("d", "edit", {"oldText": "five", "newText": "5"}),
            tool_use("e", "Edit", {"old_string": "", "new_string": "created"}),  # empty: no test
            tool_use("f", "Bash", {"command": "ls"}),
        ]
    )
    assert edit_strings(response) == ("one", "two", "three", "four", "five")


def test_the_full_tape_keeps_every_copied_span_and_edit() -> None:
    result = replay(_edit_session(), NoCompaction(), counter=FixedCounter())
    quality = result.quality
    assert quality is not None
    # Copied: SOURCE[1] (in the text and the old_string) and SOURCE[0] (the old_string's first
    # line): two distinct lines. "My own words..." is in no earlier message: not a copied span.
    assert (quality.spans_needed, quality.spans_kept) == (2, 2)
    assert (quality.edits_needed, quality.edits_feasible, quality.edits_unseen) == (1, 1, 0)
    assert quality.span_recall == 1.0
    assert quality.edit_feasibility == 1.0


def test_evicting_the_read_loses_its_spans_and_makes_the_edit_infeasible() -> None:
    """The case that must fail: the view no longer holds what the recorded Edit replaced."""
    result = replay(_edit_session(), EVICT_ALL, counter=FixedCounter())
    quality = result.quality
    assert quality is not None
    assert (quality.spans_needed, quality.spans_kept) == (2, 0)
    assert (quality.edits_needed, quality.edits_feasible) == (1, 0)
    assert quality.span_recall == 0.0
    assert quality.edit_feasibility == 0.0
    assert quality.edits_infeasible == 1
    assert any(
        call == 2 and text.startswith("def compute_total") for call, text in quality.examples
    )
    assert not strict_fit(result.summary())
    # Fact recall alone still finds most of it (compute_total, tax_rate are in the Edit's input).
    assert result.recall.recall > quality.span_recall


def test_an_edit_the_tape_never_held_is_unseen_not_infeasible() -> None:
    result = replay(_edit_session(old="a line nobody showed the model"), EVICT_ALL)
    quality = result.quality
    assert quality is not None
    assert (quality.edits_needed, quality.edits_unseen) == (0, 1)
    assert quality.edit_feasibility == 1.0


def test_rarity_weights_count_common_facts_little() -> None:
    weights = FactWeights(sessions=9, df={"common_name": 9, "rather_rare": 2})
    assert weights("common_name") == 0.0
    assert weights("rather_rare") == pytest.approx(math.log(10 / 3))
    assert weights("never_seen_before") == pytest.approx(math.log(10 / 2))  # as found once
    assert weights.total(["common_name", "rather_rare"]) == pytest.approx(math.log(10 / 3))
    shipped = default_weights()
    assert shipped.sessions > 100  # the corpus's frequencies, shipped as package data
    assert shipped.df


def test_weighted_recall_forgives_losing_a_common_fact_only() -> None:
    """The last answer names a fact only the evicted result held: one that every session has
    (weight 0), or a rare one. Losing either costs the same plain recall; weighted recall
    counts only the rare one."""
    result_text = "common_name = 1\nrare_identifier_42 = 2\n" + "filler line\n" * 200
    responses = [
        assistant("Reading", tool_uses=[tool_use("t1", "Read", {"file_path": "a.py"})]),
        assistant("Listing", tool_uses=[tool_use("t2", "Bash", {"command": "ls"})]),
        assistant("common_name is set"),
    ]
    results = [user(tool_result("t1", result_text)), user(tool_result("t2", "a.py"))]
    weights = FactWeights(sessions=9, df={"common_name": 9})
    lost_common = replay(_session(responses, results), EVICT_ALL, weights=weights)
    assert lost_common.recall.recall < 1.0
    assert lost_common.recall.weighted_recall == 1.0  # only a weightless fact was lost
    responses[2] = assistant("rare_identifier_42 is set")
    lost_rare = replay(_session(responses, results), EVICT_ALL, weights=weights)
    assert lost_rare.recall.weighted_recall < 1.0


LONG = [
    "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "entire-claude/s-89-7eb280e769-12.jsonl",
    "entire-claude/s-6d-9f76bd01e9-0.jsonl",
    "pi-mono/large-session.jsonl",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", LONG)
def test_evicting_every_result_fails_the_strict_measures_on_long_sessions(
    corpus: Path, name: str
) -> None:
    session = load(corpus / name, lenient=True).sessions[0]
    result = replay(session, EVICT_ALL)
    quality = result.quality
    assert quality is not None
    assert quality.spans_needed > 100
    assert quality.edits_needed > 5
    assert quality.span_recall < 0.95
    assert quality.edit_feasibility < 1.0
    assert not strict_fit(result.summary())
    assert result.recall.recall > quality.span_recall - 0.05  # facts alone look far better
