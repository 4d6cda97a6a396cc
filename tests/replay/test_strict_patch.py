"""Edit feasibility of Codex ``apply_patch`` calls: each hunk's context and removed lines must
be in the view at that call, like an ``Edit``'s ``old_string``; on a hand-built session and on
the corpus Codex rollout."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from contextkit.formats import load
from contextkit.messages import Message
from contextkit.replay import edit_strings, replay
from contextkit.replay._patch import patch_old_texts
from contextkit.session import Call, Session
from contextkit.strategies import EvictToolResults, NoCompaction
from contextkit.testing import FixedCounter, assistant, conversation, tool_result, tool_use, user

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SOURCE = [
    "def compute_total(items, tax_rate):",
    "    total = sum(item.price for item in items) * (1 + tax_rate)",
    "    return round(total, 2)",
    "",
    "def describe(order):",
    "    return f'order {order.id}'",
]
PATCH = "\n".join(
    [
        "*** Begin Patch",
        "*** Update File: billing/total.py",
        "@@ def compute_total(items, tax_rate):",
        "-    total = sum(item.price for item in items) * (1 + tax_rate)",
        "-    return round(total, 2)",
        "+    subtotal = sum(item.price for item in items)",
        "+    return round(subtotal * (1 + tax_rate), 2)",
        "@@",
        " def describe(order):",
        "+    # an order's label",
        "     return f'order {order.id}'",
        "*** Add File: billing/notes.md",
        "+ new file: nothing to find",
        "*** Delete File: billing/old.py",
        "*** End Patch",
        "",
    ]
)
HUNKS = (
    "    total = sum(item.price for item in items) * (1 + tax_rate)\n    return round(total, 2)",
    "def describe(order):\n    return f'order {order.id}'",
)
EVICT_ALL = EvictToolResults(keep_last=0, min_result_tokens=0, min_freed_tokens=0)
CODEX = "codemie-codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"


def test_each_hunk_needs_its_context_and_removed_lines_in_order() -> None:
    assert tuple(patch_old_texts(PATCH)) == HUNKS
    assert tuple(patch_old_texts("no patch here")) == ()
    only_added = "*** Begin Patch\n*** Update File: a.py\n@@\n+x = 1\n*** End Patch\n"
    assert tuple(patch_old_texts(only_added)) == ()


def test_patches_as_free_text_or_in_a_shell_command_are_edits() -> None:
    free = assistant(tool_uses=[tool_use("p", "apply_patch", PATCH)])
    assert edit_strings(free) == HUNKS
    shell = assistant(
        tool_uses=[
            tool_use("s", "shell", {"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}EOF"]})
        ]
    )
    assert edit_strings(shell) == HUNKS


def _session(responses: Sequence[Message], results: Sequence[Message]) -> Session:
    history: list[Message] = [user("Fix the rounding in billing/total.py")]
    calls = []
    for k, response in enumerate(responses):
        request = conversation(*history, system="You are a test agent.", model="gpt-5")
        calls.append(
            Call(request=request, response=response, timestamp=START + timedelta(seconds=10 * k))
        )
        if k < len(results):
            history = [*history, response, results[k]]
    return Session(path="hand-built", format="test", calls=tuple(calls))


def _patch_session(shown: Sequence[str] = SOURCE) -> Session:
    """Show the file (numbered, as ``nl -ba`` prints it), list a folder, then patch the file."""
    numbered = "\n".join(f"{i + 1:>6}\t{line}" for i, line in enumerate(shown))
    return _session(
        [
            assistant(
                tool_uses=[tool_use("c1", "shell", {"command": ["nl", "-ba", "billing/total.py"]})]
            ),
            assistant(tool_uses=[tool_use("c2", "shell", {"command": ["ls", "billing"]})]),
            assistant("Patching", tool_uses=[tool_use("c3", "apply_patch", PATCH)]),
        ],
        [user(tool_result("c1", numbered)), user(tool_result("c2", "total.py\nold.py"))],
    )


def test_the_full_tape_makes_every_hunk_feasible() -> None:
    quality = replay(_patch_session(), NoCompaction(), counter=FixedCounter()).quality
    assert quality is not None
    assert (quality.edits_needed, quality.edits_feasible, quality.edits_unseen) == (2, 2, 0)


def test_evicting_the_file_makes_the_patch_infeasible() -> None:
    quality = replay(_patch_session(), EVICT_ALL, counter=FixedCounter()).quality
    assert quality is not None
    assert (quality.edits_needed, quality.edits_feasible) == (2, 0)
    assert quality.edit_feasibility == 0.0
    assert any(call == 2 and "total = sum" in text for call, text in quality.examples)


def test_a_hunk_the_tape_never_showed_is_unseen() -> None:
    quality = replay(_patch_session(SOURCE[:3]), EVICT_ALL, counter=FixedCounter()).quality
    assert quality is not None
    assert (quality.edits_needed, quality.edits_feasible, quality.edits_unseen) == (1, 0, 1)


def test_the_corpus_codex_rollout_patches_count_as_edits(corpus: Path) -> None:
    path = corpus / CODEX
    if not path.is_file():
        pytest.skip(f"{CODEX} is not in this corpus")
    session = load(path, lenient=True).sessions[0]
    patches = [
        c
        for c in session.calls
        if c.response and any(b.name == "apply_patch" for b in c.response.tool_uses())
    ]
    assert len(patches) == 3
    full = replay(session, NoCompaction()).quality
    assert full is not None
    # Four hunks, each shown to the model before it patched: all feasible on the full tape.
    assert (full.edits_needed, full.edits_feasible, full.edits_unseen) == (4, 4, 0)
    evicted = replay(session, EVICT_ALL).quality
    assert evicted is not None
    assert evicted.edits_needed == 4
    assert evicted.edits_feasible < 4  # the file contents evicted: some hunks no longer seen
