"""``validate``, ``inspect`` and ``cost`` count the same calls on every Claude Code corpus file:
every session of the file, its subagents included (inline sidechains, the subagent files beside it,
subagents held only in agent_progress records)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from claude_code_json import json_call_count
from contextkit.cli import app
from contextkit.formats import detect
from corpus_paths import readable_corpus_files

runner = CliRunner()

CALLS: dict[str, int] = {
    "claude-code-log-synthetic/edge_cases.jsonl": 4,
    "claude-code-log-synthetic/representative_messages.jsonl": 5,
    "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": 7,
    "claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": 20,
    "codemie-claude/incremental-subagents/turn-2.jsonl": 17,
    "codemie-claude/incremental-subagents/turn-2/subagents/agent-a485154.jsonl": 6,
    "codemie-claude/session-196820da.jsonl": 47,
    "codemie-claude/session-9eda1058.jsonl": 5,
    "entire-claude/s-33-bdd525bfa3-0.jsonl": 15,
    "entire-claude/s-6d-9f76bd01e9-0.jsonl": 328,
    "entire-claude/s-89-7eb280e769-12.jsonl": 288,
    "entire-claude/s-bd-7375936c5c-0.jsonl": 63,
    "oh-my-posh-claude/s-55-d5cdc9f52a-0.jsonl": 52,
    "oh-my-posh-claude/s-f1-cc7fb29063-0.jsonl": 96,
    "packmind-claude/s-cc-3a3c81d623-0.jsonl": 56,
    "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl": 156,
    "spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl": 3,
    "spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl": 1,
    "spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl": 18,
    "spotter/short.jsonl": 1,
    "spotter/subagent.jsonl": 18,
    "spotter/tool_heavy.jsonl": 4,
}
"""Calls per Claude Code corpus file, subagents included (a main file with the subagent files
beside it). Before every session was checked, ``validate`` counted the top-level session only:
10 of 20 on claude-code-viewer 5c0375b4, 11 of 17 on codemie turn-2, 152 of 156 on spotter's main
file; the agent_progress subagents (s-6d's 163 calls, spotter/subagent.jsonl's 6) were counted by
none of the three."""

NOT_JSON = frozenset({"claude-code-log-synthetic/edge_cases.jsonl"})
"""Deliberately corrupted (lines that are not JSON objects): read leniently, not by the loop."""


def _run(*args: str | Path) -> dict[str, Any]:
    result = runner.invoke(app, [*map(str, args)])
    assert result.exit_code in (0, 1), result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _counts(path: Path) -> tuple[int, int, int]:
    validated = _run("validate", "--json", "--lenient", path)["files"][0]["calls"]
    inspected = sum(s["calls"] for s in _run("inspect", "--json", "--lenient", path)["sessions"])
    cost = _run("cost", "--json", "--lenient", path)
    priced = round(cost["breakdown"]["calls"] * cost["tickets"])
    return validated, inspected, priced


@pytest.mark.corpus
def test_every_claude_code_corpus_file_is_listed(corpus: Path) -> None:
    found = {
        p.relative_to(corpus).as_posix()
        for p in readable_corpus_files(corpus)
        if detect(p).name == "claude-code"
    }
    assert found == set(CALLS)


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(CALLS))
def test_validate_inspect_and_cost_count_the_same_calls(corpus: Path, name: str) -> None:
    path = corpus / name
    assert _counts(path) == (CALLS[name],) * 3
    if name not in NOT_JSON:
        assert json_call_count(path) == CALLS[name]


def _compared_calls(path: Path) -> int:
    """Calls ``compare`` replays in the file (every session, subagents included), as recorded."""
    from contextkit.replay import compare_file  # noqa: PLC0415

    result = compare_file(str(path), ["as-recorded"], lenient=True)
    assert result.error is None, result.error
    return sum(int(row["calls"]) for row in result.results)


@pytest.mark.corpus
@pytest.mark.slow
def test_every_corpus_file_is_replayed_inspected_and_validated_alike(corpus: Path) -> None:
    """Every file of the corpus, whatever its format: ``compare`` replays the calls ``inspect``
    prices and ``validate`` checks, every session of the file included (``replay`` replays the
    first and names the others it left out)."""
    differing = []
    for path in readable_corpus_files(corpus):
        validated = _run("validate", "--json", "--lenient", path)["files"][0]["calls"]
        inspected = sum(
            s["calls"] for s in _run("inspect", "--json", "--lenient", path)["sessions"]
        )
        compared = _compared_calls(path)
        if not validated == inspected == compared:
            differing.append(
                f"{path.name}: validate {validated}, inspect {inspected}, compare {compared}"
            )
    assert differing == []


@pytest.mark.corpus
def test_replay_names_the_sessions_it_left_out(corpus: Path) -> None:
    """entire-claude s-6d: the main session (165 calls) replayed, its 7 agent_progress subagents
    (163 calls) named as left out, in the table and in JSON."""
    path = corpus / "entire-claude" / "s-6d-9f76bd01e9-0.jsonl"
    doc = _run("replay", "--json", "-s", "none", path)
    assert doc["calls"] == 165
    assert len(doc["not_replayed"]) == 7
    assert (
        sum(s["calls"] for s in doc["not_replayed"])
        == CALLS[path.relative_to(corpus).as_posix()] - 165
    )
    assert all(s["subagent"] for s in doc["not_replayed"])
    shown = runner.invoke(app, ["replay", "-s", "none", str(path)])
    assert "not replayed here: 7 subagent session(s), 163 calls" in " ".join(shown.output.split())
