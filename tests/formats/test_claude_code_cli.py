"""The Claude Code reader against the real client: the CLI runs offline against FakeAnthropic.

Three scripted sessions (tests/claude_cli_helper.py drives them; each runs once per test run):

- ``tools``: a thinking block, Bash, Read and Edit (executed by the CLI in its scratch working
  folder), then a second prompt with ``--continue`` answered by two parallel tool calls;
- ``agent``: an Agent tool call whose subagent runs Bash, with its own transcript file;
- ``compact``: a long prompt, then a reply whose usage reports 75,000 input tokens while
  ``CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000``: the CLI compacts mid-turn (its summary request is
  not in the transcript), keeps the unanswered tool exchange, then a ``--continue`` prompt.

For every request the server accepted, the reader's rebuilt request (``formats.load`` of the
transcript) must hold the same messages, block for block, except the parts the transcript does
not hold (tests/claude_cli_compare.py names them); the system prompt and the tools are never in
the transcript and are reported in tokens. Marked ``claude_cli``: without the CLI these tests skip,
unless ``CI`` is set, when they fail (``.ci/run`` installs it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from types import ModuleType

import pytest

from claude_cli_compare import (
    COMPACT_KIND,
    SUBAGENT_LISTING_KIND,
    USER_CONTEXT_KIND,
    CallDiff,
    compare_call,
    is_compaction,
    pair_calls,
    report,
)
from claude_cli_helper import REPO, Lab, cli_path, cli_version
from contextkit.formats import load
from contextkit.formats.claude_code.prefix import RequestPrefix, claude_code_prefix
from contextkit.messages import TextBlock, ThinkingBlock, ToolResultBlock
from contextkit.session import LoadedFile
from contextkit.testing.fake_anthropic import FakeAnthropic, ReceivedRequest, Reply

pytestmark = pytest.mark.claude_cli
TOOLS = ("Bash", "Read", "Edit", "Agent")
KNOWN_HIDDEN = frozenset({USER_CONTEXT_KIND, SUBAGENT_LISTING_KIND})


@pytest.fixture(scope="module")
def cli() -> Path:
    path = cli_path()
    if not path.exists():
        why = f"the Claude Code CLI is not installed at {path} (.ci/run installs it with npm)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {why}")
        pytest.skip(why)
    return path


@dataclass
class Run:
    """One scripted session: its lab folder, what the server received, what the reader read."""

    lab: Lab
    requests: tuple[ReceivedRequest, ...]
    loaded: LoadedFile
    diffs: list[CallDiff]
    unpaired: list[ReceivedRequest]


Prompt = tuple[str, bool]
Session = Callable[[Path], tuple[list[Reply], list[Prompt], dict[str, str]]]


def _run(root: Path, cli: Path, session: Session) -> Run:
    lab = Lab(root, cli)
    steps, prompts, env = session(lab.work)
    with FakeAnthropic(steps) as server:
        for text, resume in prompts:
            lab.prompt(server, text, resume=resume, tools=TOOLS, env=env)
        lab.keep(server)
        requests = server.requests
    return _compared(lab, requests)


def _compared(lab: Lab, requests: tuple[ReceivedRequest, ...]) -> Run:
    root = lab.root
    loaded = load(lab.main_transcript())
    pairs = pair_calls(requests, loaded.sessions)
    diffs = [compare_call(r, c) for r, c in pairs if c is not None]
    text = report(diffs)
    (root / "report.txt").write_text(text + "\n")
    print(f"\n{root}\n{text}")  # the per-message report (pytest -s shows it)
    return Run(lab, requests, loaded, diffs, [r for r, c in pairs if c is None])


def _tools_session(work: Path) -> tuple[list[Reply], list[Prompt], dict[str, str]]:
    notes = work / "notes.txt"
    notes.write_text("teh quick brown fox\n")
    think = {"type": "thinking", "thinking": "I should list the files first."}
    bash = {"command": "ls", "description": "List files"}
    steps = [
        Reply.of(
            think,
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": bash},
            stop_reason="tool_use",
        ),
        Reply.tool_call("toolu_02", "Read", {"file_path": str(notes)}),
        Reply.tool_call(
            "toolu_03", "Edit", {"file_path": str(notes), "old_string": "teh", "new_string": "the"}
        ),
        Reply.text("Fixed the typo."),
        Reply.of(
            {"type": "tool_use", "id": "toolu_04", "name": "Bash", "input": {"command": "cat *"}},
            {
                "type": "tool_use",
                "id": "toolu_05",
                "name": "Read",
                "input": {"file_path": str(notes)},
            },
            stop_reason="tool_use",
        ),
        Reply.text("All good."),
    ]
    return steps, [("Fix the typo in notes.txt", False), ("Show it again", True)], {}


def _agent_session(work: Path) -> tuple[list[Reply], list[Prompt], dict[str, str]]:
    (work / "notes.txt").write_text("teh quick brown fox\n")
    task = {
        "description": "Find notes",
        "prompt": "Find the notes file and report its first word.",
        "subagent_type": "general-purpose",
    }
    steps = [
        Reply.tool_call("toolu_a1", "Agent", task),
        Reply.tool_call(
            "toolu_s1", "Bash", {"command": "head -1 notes.txt", "description": "Head"}
        ),
        Reply.text("The first word is teh."),
        Reply.text("The subagent says: teh."),
    ]
    return steps, [("Ask a subagent for the first word of notes.txt", False)], {}


FILLER = "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(1500))
NEAR_FULL = {"input_tokens": 75_000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
SUMMARY = "<analysis>short</analysis>\n<summary>The user asked to remember 7.</summary>"


def _compact_session(work: Path) -> tuple[list[Reply], list[Prompt], dict[str, str]]:
    # The CLI compacts when the reported context (75k) is over its threshold (window 100k - 20k
    # output reserve - 13k) and its own estimate of the messages (the filler) makes the fixed part
    # small enough for a compaction to help.
    echo = {"command": "echo 8", "description": "Echo"}
    steps = [
        Reply.tool_call("toolu_c1", "Bash", {"command": "echo 7", "description": "Echo"}),
        Reply(
            content=({"type": "tool_use", "id": "toolu_c2", "name": "Bash", "input": echo},),
            stop_reason="tool_use",
            usage=NEAR_FULL,
        ),
        Reply.text(SUMMARY),
        Reply.text("Continuing after compaction."),
        Reply.text("It was 7."),
    ]
    prompts = [("Remember the number 7.\n" + FILLER, False), ("What number?", True)]
    return steps, prompts, {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}


def _command_session(work: Path) -> tuple[list[Reply], list[Prompt], dict[str, str]]:
    # CLAUDE.md goes into the user context (hidden); the custom command's expansion is recorded.
    (work / "CLAUDE.md").write_text("Answer in one word.\n")
    commands = work / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text("Say hello to $ARGUMENTS politely.\n")
    steps = [
        Reply.tool_call("toolu_g1", "Bash", {"command": "echo hi", "description": "Echo"}),
        Reply.text("Hello, Ada."),
        Reply.text("Again."),
    ]
    return steps, [("/greet Ada", False), ("and again", True)], {}


SESSIONS: dict[str, Session] = {
    "tools": _tools_session,
    "agent": _agent_session,
    "compact": _compact_session,
    "command": _command_session,
}
QUEUED = "Also say which file you read."


def _queued_run(root: Path, cli: Path) -> Run:
    lab = Lab(root, cli)
    wait = {"command": "while [ ! -f gate ]; do sleep 0.05; done; echo hi", "description": "Wait"}
    steps = [Reply.tool_call("toolu_q1", "Bash", wait), Reply.text("Done, and noted.")]
    with FakeAnthropic(steps) as server:
        lab.prompt_while_busy(server, "Run the slow step", QUEUED, lab.work / "gate")
        lab.keep(server)
        requests = server.requests
    return _compared(lab, requests)


@pytest.fixture(scope="module")
def runs(cli: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    out = {name: _run(tmp_path_factory.mktemp(name), cli, s) for name, s in SESSIONS.items()}
    out["queued"] = _queued_run(tmp_path_factory.mktemp("queued"), cli)
    return out


# --------------------------------------------------------------------------------------------------


def test_the_cli_ran_the_scripted_tools(runs: dict[str, Run]) -> None:
    tools = runs["tools"]
    assert (tools.lab.work / "notes.txt").read_text() == "the quick brown fox\n"
    transcript = tools.lab.main_transcript()
    assert transcript.parent.name == str(tools.lab.work).replace("/", "-").replace("_", "-")
    assert stat.S_IMODE(transcript.stat().st_mode) == 0o600
    body = tools.requests[0].body
    assert body["stream"] is True
    assert tools.requests[0].path == "/v1/messages?beta=true"
    assert all(r.accepted for run in runs.values() for r in run.requests)


NAMES = sorted([*SESSIONS, "queued"])


@pytest.mark.parametrize("name", NAMES)
def test_rebuilt_messages_are_the_sent_ones_but_for_known_hidden_parts(
    runs: dict[str, Run], name: str
) -> None:
    run = runs[name]
    assert run.diffs
    bad = [d for d in run.diffs if not d.exact]
    assert not bad, report(bad)
    hidden = {kind for d in run.diffs for m in d.messages for kind in m.hidden}
    assert hidden <= KNOWN_HIDDEN
    assert all(m.unexplained == 0 for d in run.diffs for m in d.messages)
    assert all(set(d.prefix) == {"system", "tools"} for d in run.diffs)
    assert all(not d.call.request.system and not d.call.request.tools for d in run.diffs if d.call)


@pytest.mark.parametrize("name", NAMES)
def test_every_request_has_its_call_but_the_compaction_request(
    runs: dict[str, Run], name: str
) -> None:
    run = runs[name]
    assert all(is_compaction(r) for r in run.unpaired)
    assert len(run.unpaired) == (1 if name == "compact" else 0)
    calls = [c for top in run.loaded.sessions for s in top.all_sessions() for c in s.calls]
    assert len(calls) == len(run.diffs)


def test_the_user_context_is_the_only_gap_of_the_main_sessions(runs: dict[str, Run]) -> None:
    for name in ("tools", "compact", "command", "queued"):
        for diff in runs[name].diffs:
            first, *rest = diff.messages
            assert set(first.hidden) == {USER_CONTEXT_KIND}
            assert 60 <= first.hidden[USER_CONTEXT_KIND] <= 200  # with CLAUDE.md: about 160
            assert all(not m.hidden for m in rest)


def test_thinking_goes_back_with_the_servers_signature(runs: dict[str, Run]) -> None:
    run = runs["tools"]
    sent = json.loads(run.requests[0].response or "")["content"][0]
    blocks = [b for d in run.diffs[1:] if d.call for b in d.call.request.messages[1].blocks]
    thinking = [b for b in blocks if isinstance(b, ThinkingBlock)]
    assert [(b.thinking, b.signature) for b in thinking] == [
        (sent["thinking"], sent["signature"])
    ] * (len(run.diffs) - 1)


def test_the_subagent_is_its_own_linked_session(runs: dict[str, Run]) -> None:
    run = runs["agent"]
    (main,) = run.loaded.sessions
    (sub,) = main.subagents
    assert sub.parent_tool_use_id == "toolu_a1"
    assert len(sub.calls) == 2
    assert len(main.calls) == 2
    sub_diffs = [d for d in run.diffs if d.call in sub.calls]
    assert [set(m.hidden) for m in sub_diffs[1].messages] == [
        {USER_CONTEXT_KIND},
        set(),
        {SUBAGENT_LISTING_KIND},
    ]


def test_auto_compaction_is_read_from_the_transcript(runs: dict[str, Run]) -> None:
    run = runs["compact"]
    (main,) = run.loaded.sessions
    assert main.compactions == (2,)
    (summary_request,) = run.unpaired
    assert summary_request.index == 2
    after = main.calls[2].request.messages
    assert "This session is being continued" in str(after[0].content)
    assert [b.type for m in after[1:3] for b in m.blocks] == ["tool_use", "tool_result"]
    response = main.calls[2].response
    assert response is not None
    assert response.blocks[0].type == "text"


def test_the_summary_request_is_the_history_before_it_plus_the_instruction(
    runs: dict[str, Run],
) -> None:
    # The transcript does not record it, but it can be rebuilt: the request of the call before,
    # with the instruction after the last tool result (the preserved exchange is left out).
    run = runs["compact"]
    (summary_request,) = run.unpaired
    before = run.loaded.sessions[0].calls[1]
    diff = compare_call(summary_request, before)
    assert diff.exact, report([diff])
    assert set(diff.messages[-1].hidden) == {COMPACT_KIND}
    assert 1_000 < diff.messages[-1].hidden[COMPACT_KIND] < 2_000
    print(f"\ncompaction instruction: {diff.messages[-1].hidden[COMPACT_KIND]} tokens")


def test_a_queued_message_reaches_the_model_with_the_next_tool_result(runs: dict[str, Run]) -> None:
    run = runs["queued"]
    last = run.diffs[-1].call
    assert last is not None
    result = last.request.messages[-1].blocks[0]
    assert isinstance(result, ToolResultBlock)
    assert QUEUED in result.text
    assert "The user sent a new message while you were working" in result.text


def test_a_custom_command_is_sent_as_recorded(runs: dict[str, Run]) -> None:
    first = runs["command"].diffs[0]
    assert first.exact
    assert first.call is not None
    texts = [b.text for b in first.call.request.messages[0].blocks if isinstance(b, TextBlock)]
    assert any(t.startswith("<command-message>greet</command-message>") for t in texts)
    assert texts[-1] == "Say hello to Ada politely.\n"


def _known_hidden_total(diffs: Sequence[CallDiff]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for d in diffs:
        for m in d.messages:
            for kind, tokens in m.hidden.items():
                totals[kind] = totals.get(kind, 0) + tokens
    return totals


def test_report_sums_the_gap_by_kind(
    runs: dict[str, Run], capsys: pytest.CaptureFixture[str]
) -> None:
    diffs = [d for run in runs.values() for d in run.diffs]
    totals = _known_hidden_total(diffs)
    with capsys.disabled():
        print(f"\nhidden message parts over {len(diffs)} requests (tokens): {totals}")
    assert set(totals) == KNOWN_HIDDEN


def _prefix_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "claude_code_prefix_script", REPO / "scripts" / "claude_code_prefix.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _same_shape(measured: RequestPrefix, recorded: RequestPrefix) -> None:
    """Equal but for sizes, which move with the working folder, platform and date (within 2%)."""
    sized = {"system", "tool_tokens"}
    assert measured.model_dump(exclude=sized) == recorded.model_dump(exclude=sized)
    assert [(b.cache_control, b.opening[:25]) for b in measured.system] == [
        (b.cache_control, b.opening[:25]) for b in recorded.system
    ]
    assert abs(measured.system_chars - recorded.system_chars) <= 0.02 * recorded.system_chars
    assert abs(measured.tool_tokens - recorded.tool_tokens) <= 0.02 * recorded.tool_tokens


def test_the_hidden_prefix_recorded_for_this_version_is_what_it_sends(
    cli: Path, runs: dict[str, Run]
) -> None:
    version = cli_version(cli)
    captured = (runs["agent"].lab.root / "requests.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in captured]
    measured = _prefix_script().measure(records, date.today())
    assert measured.version == version
    recorded = claude_code_prefix(version)
    assert recorded is not None, (
        f"no hidden prefix recorded for Claude Code {version}: run scripts/claude_code_prefix.py "
        "on a captured requests.jsonl (see its docstring)"
    )
    _same_shape(measured.main, recorded.main)
    assert measured.subagent is not None
    assert recorded.subagent is not None
    _same_shape(measured.subagent, recorded.subagent)
