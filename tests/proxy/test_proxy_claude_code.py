"""The real Claude Code CLI through ``contextkit proxy`` against a strict local streaming upstream.

A scripted session (tests/claude_cli_helper.py drives the CLI offline): thinking, Bash calls with
long outputs, Read and Edit, then a ``--continue`` prompt answered by two parallel tool calls. It
runs twice: through the proxy as is, and with a strategy that clears old tool results in batches.
Each time the session completes, FakeAnthropic (which rejects what the API rejects: tool pairing,
edited thinking, more than four breakpoints) accepts every forwarded request, and the records read
back (``contextkit.formats.load``) to the very calls the upstream received. With the strategy the
requests shrink and, between edits, each request of the main loop starts with the previous one's
messages byte for byte. Marked ``claude_cli``: without the CLI these tests skip unless ``CI`` is
set.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from claude_cli_helper import Lab, cli_path
from contextkit.formats import load
from contextkit.messages import to_payload, validate
from contextkit.proxy import EDIT_HEADER, ProxyConfig, ProxyServer
from contextkit.replay import AS_RECORDED, run_strategy
from contextkit.strategies import EvictToolResults, Strategy, ToolResultsOver, When
from contextkit.testing.fake_anthropic import FakeAnthropic, ReceivedRequest, Reply
from proxy_helper import check_files, forwarded, records, unmarked

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]
TOOLS = ("Bash", "Read", "Edit")
BATCHED = When(ToolResultsOver(tokens=12_000), EvictToolResults(keep_last=1, min_freed_tokens=0))


@pytest.fixture(scope="module")
def cli() -> Path:
    path = cli_path()
    if not path.exists():
        why = f"the Claude Code CLI is not installed at {path} (.ci/run installs it with npm)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {why}")
        pytest.skip(why)
    return path


def _script(work: Path) -> tuple[list[Reply], list[tuple[str, bool]]]:
    notes = work / "notes.txt"
    notes.write_text("teh quick brown fox\n" + "".join(f"line {i}\n" for i in range(600)))
    think = {"type": "thinking", "thinking": "I should look at the numbers first."}

    def bash(id: str, command: str) -> Reply:
        return Reply.tool_call(id, "Bash", {"command": command, "description": "Run"})

    steps = [
        Reply.of(
            think,
            {"type": "text", "text": "Looking."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "Bash",
                "input": {"command": "seq 1 3000", "description": "Count"},
            },
            stop_reason="tool_use",
        ),
        Reply.tool_call("toolu_02", "Read", {"file_path": str(notes)}),
        bash("toolu_03", "seq 5000 8000"),
        Reply.tool_call(
            "toolu_04", "Edit", {"file_path": str(notes), "old_string": "teh", "new_string": "the"}
        ),
        bash("toolu_05", "seq 9000 12000"),
        Reply.text("Fixed the typo."),
        Reply.of(
            {
                "type": "tool_use",
                "id": "toolu_06",
                "name": "Bash",
                "input": {"command": "seq 1 2500", "description": "Again"},
            },
            {
                "type": "tool_use",
                "id": "toolu_07",
                "name": "Read",
                "input": {"file_path": str(notes)},
            },
            stop_reason="tool_use",
        ),
        bash("toolu_08", "head -1 notes.txt"),
        Reply.text("All good."),
    ]
    return steps, [("Fix the typo in notes.txt", False), ("Show it again", True)]


def _run(
    root: Path, cli: Path, strategy: Strategy | None
) -> tuple[tuple[ReceivedRequest, ...], list[dict[str, Any]], Path, list[str]]:
    lab = Lab(root, cli)
    steps, prompts = _script(lab.work)
    record = root / "records"
    lines: list[str] = []
    with FakeAnthropic(steps) as fake:
        config = ProxyConfig(upstream=fake.base_url, strategy=strategy, record_dir=record)
        with ProxyServer(config, on_line=lines.append) as proxy:
            for text, resume in prompts:
                out = lab.prompt(
                    fake,
                    text,
                    resume=resume,
                    tools=TOOLS,
                    env={"ANTHROPIC_BASE_URL": proxy.base_url},
                )
                assert out.strip(), "the CLI printed no answer"
        lab.keep(fake)
        requests = fake.requests
    assert "All good." in out
    return requests, records(record), record, lines


def _accepted(requests: tuple[ReceivedRequest, ...]) -> None:
    assert requests
    assert all(r.accepted for r in requests), [r.error for r in requests if not r.accepted]
    for r in requests:
        assert r.conversation is not None
        assert not validate(r.conversation)
        assert r.streamed  # the CLI streams every call


def _replays(requests: tuple[ReceivedRequest, ...], folder: Path) -> None:
    """The record files read back to the calls the upstream received, in order per file."""
    check_files(folder)
    got: list[str] = []
    for path in sorted(folder.glob("*.jsonl")):
        session = load(path).sessions[0]
        assert all(c.response is not None and c.usage is not None for c in session.calls)
        got.extend(json.dumps(to_payload(c.request), sort_keys=True) for c in session.calls)
        replay = run_strategy(session, AS_RECORDED)
        assert len(replay.rows) == len(session.calls)
    sent = [json.dumps(r.body, sort_keys=True) for r in requests]
    assert sorted(got) == sorted(sent)


def test_claude_code_through_the_proxy(tmp_path: Path, cli: Path) -> None:
    requests, recorded, folder, lines = _run(tmp_path, cli, None)
    _accepted(requests)
    assert len(requests) >= 9
    model_calls = [r for r in recorded if r["api"] == "anthropic"]
    assert len(model_calls) == len(requests)
    assert all(r["complete"] and r["streamed"] for r in model_calls)
    # Without a strategy the proxy forwards what it receives, byte for byte.
    assert [r.body for r in requests] == [r["request"] for r in model_calls]
    assert all(r["forwarded"] is None for r in model_calls)  # null: as received
    assert all(EDIT_HEADER not in r["response_headers"] for r in model_calls)
    _replays(requests, folder)
    assert len(lines) == len(requests)
    print("\n" + "\n".join(lines))


def test_claude_code_with_a_strategy(tmp_path: Path, cli: Path) -> None:
    requests, recorded, folder, lines = _run(tmp_path, cli, BATCHED)
    _accepted(requests)
    model_calls = [r for r in recorded if r["api"] == "anthropic"]
    assert [r.body for r in requests] == [forwarded(r) for r in model_calls]
    # The messages shrink (system prompt and tools, about 117 kB here, stay as they are).
    received = [len(json.dumps(r["request"]["messages"])) for r in model_calls]
    sent = [len(json.dumps(forwarded(r)["messages"])) for r in model_calls]
    assert sum(sent) < 0.7 * sum(received), (received, sent)
    assert sent[-1] < 0.5 * received[-1]
    edits = [r["edit"] for r in model_calls]
    edited = [
        i for i, e in enumerate(edits) if any(x["action"] == "evicted" for x in e["receipts"])
    ]
    assert len(edited) >= 2, [e["summary"] for e in edits]
    # One lane throughout, --continue included: the CLI sends the new prompt as a text block
    # while it carries the breakpoint and as a string afterwards, which is the same message.
    assert not any(e["reset"] for e in edits), [e["summary"] for e in edits]
    print([e["summary"] for e in edits])
    _prefix_stable(model_calls, edited)
    _replays(requests, folder)
    print("\n" + "\n".join(lines))


def _prefix_stable(model_calls: list[dict[str, Any]], edited: list[int]) -> None:
    """Within a lane, a call that made no new edit starts with the previous call's messages."""
    by_lane: dict[tuple[str, int], list[int]] = {}
    for i, r in enumerate(model_calls):
        by_lane.setdefault((r["conversation"], r["edit"]["lane"]), []).append(i)
    checked = 0
    for indices in by_lane.values():
        for before, after in itertools.pairwise(indices):
            if after in edited or model_calls[after]["edit"]["reset"]:
                continue
            old = _messages(model_calls[before])
            new = _messages(model_calls[after])
            assert new[: len(old)] == old, f"call {after} does not extend call {before}"
            checked += 1
    assert checked >= 3


def _messages(record: dict[str, Any]) -> list[str]:
    return [json.dumps(m) for m in unmarked(forwarded(record)["messages"])]
