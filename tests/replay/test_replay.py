"""Replay and compare on hand-built sessions: the view walk, the baselines, recall, the CLI.

Every session here is built in the test, so each expected figure can be worked out by hand.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import contextkit.cli as cli_main
from contextkit.cli import _app as cli_app
from contextkit.cli import _tables as tables
from contextkit.cli import app
from contextkit.cli import replay as cli_replay
from contextkit.formats import load
from contextkit.messages import (
    Conversation,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    parse_conversation,
    to_payload,
    validate,
)
from contextkit.replay import (
    AS_RECORDED,
    ORACLE,
    best_saving,
    best_strategy,
    compare,
    compare_file,
    find_session_files,
    replay,
    replay_as_recorded,
    run_strategy,
    savings,
    with_default_model,
)
from contextkit.replay._walk import _known
from contextkit.session import Call, Session, Usage
from contextkit.strategies import (
    PLACEHOLDER_PREFIX,
    CallFacts,
    Compacted,
    EvictToolResults,
    Receipt,
    Strategy,
    strategy_from_spec,
)
from contextkit.testing import (
    FixedCounter,
    assistant,
    conversation,
    fixed_price,
    tool_result,
    tool_use,
    user,
)
from contextkit.wire import to_anthropic_request

PRICE = fixed_price("test")
MODEL = "claude-sonnet-4-5-20250929"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SUMMARY_KEYS = {
    "input_tokens",
    "cache_read",
    "cache_write",
    "output",
    "cost_usd",
    "harness_compaction_usd",
    "peak_context_tokens",
    "compactions",
    "overflow_calls",
    "refused_calls",
    "recovery_with_retrieval_usd",
    "cost_plus_recovery_with_retrieval_usd",
    "recall",
    "simulated_cost_usd",
    "weighted_recall",
    "span_recall",
    "spans",
    "edit_feasibility",
    "edits",
    "edits_infeasible",
    "edits_unseen",
    "summariser_usd",
    "summariser_calls",
    "recovery_usd",
    "recoveries",
    "unrecoverable",
    "cost_plus_recovery_usd",
    "subagent_reruns",
    "probes",
    "probe_artifacts",
    "probe_task",
    "probe_instructions",
    "probe_decisions",
    "probe_errors",
    "probe_next",
}


# --- building sessions -------------------------------------------------------------------------


def _call(
    messages: Sequence[Message],
    response: Message,
    i: int,
    usage: Usage | None = None,
    system: str | None = "You are a test agent.",
) -> Call:
    return Call(
        request=conversation(*messages, system=system, model=MODEL),
        response=response,
        usage=usage,
        model=MODEL,
        timestamp=START + timedelta(seconds=10 * i),
        stop_reason="tool_use" if any(response.tool_uses()) else "end_turn",
    )


def _session(calls: Sequence[Call], compactions: tuple[int, ...] = ()) -> Session:
    return Session(path="hand-built", format="test", calls=tuple(calls), compactions=compactions)


def _agent_loop(turns: int = 4, result_chars: int = 400) -> list[Call]:
    """A task worked through with tools: call k sends everything before plus one result."""
    history: list[Message] = [user("Fix the failing test in orders/service.py")]
    calls = []
    for i in range(turns):
        body = f"def compute_total_{i}(): return {4700 + i}\n" + "x" * result_chars
        response = assistant(f"Step {i}: reading", tool_uses=[tool_use(f"t{i}", "Read")])
        calls.append(_call(history, response, i))
        history = [*history, response, user(tool_result(f"t{i}", body))]
    final = assistant("compute_total_0 returns 4700 and compute_total_1 returns 4701")
    calls.append(_call(history, final, turns))
    return calls


@dataclass
class Recorder:
    """Wraps a strategy and keeps every view it was given (the replay's input views)."""

    inner: Strategy
    given: list[Conversation] = field(default_factory=list)

    def __call__(self, view: Conversation, facts: CallFacts, /) -> Compacted:
        self.given.append(view)
        return self.inner(view, facts)


def _keep(view: Conversation, facts: CallFacts, /) -> Compacted:
    return Compacted(view=view)


def _evict_old_results(view: Conversation, facts: CallFacts, /) -> Compacted:
    """Replace the content of every tool result but those in the last message."""
    messages = list(view.messages)
    receipts = []
    for i, message in enumerate(messages[:-1]):
        if any(message.tool_results()):
            blocks = tuple(
                ToolResultBlock(tool_use_id=b.tool_use_id, content="[evicted]")
                if isinstance(b, ToolResultBlock) and b.content != "[evicted]"
                else b
                for b in message.blocks
            )
            if blocks != message.blocks:
                messages[i] = message.model_copy(update={"content": blocks})
                receipts.append(Receipt(strategy="test", action="evicted", message_index=i))
    if not receipts:
        return Compacted(view=view)
    return Compacted(view=view.with_messages(messages), receipts=tuple(receipts))


def _texts(messages: Sequence[Message]) -> list[str]:
    return [json.dumps(to_payload(m), sort_keys=True) for m in messages]


def _unmarked(value: Any) -> Any:
    """A payload without ``cache_control`` anywhere (placement is the replay's own)."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def _wire(request: Conversation) -> Any:
    """The request as the provider reads it: no marks, string content as one text block."""
    payload = _unmarked(to_payload(request))
    if isinstance(payload.get("system"), str):
        payload["system"] = [{"type": "text", "text": payload["system"]}]
    for message in payload.get("messages", []):
        if isinstance(message["content"], str):
            message["content"] = [{"type": "text", "text": message["content"]}]
    return payload


# --- the view walk -----------------------------------------------------------------------------


def test_appended_messages_are_the_request_beyond_the_previous_one() -> None:
    session = _session(_agent_loop())
    recorder = Recorder(_evict_old_results)
    replay(session, recorder, counter=FixedCounter(), price=PRICE)
    views = recorder.given
    assert len(views) == len(session.calls)
    for k in range(1, len(session.calls)):
        previous = session.calls[k - 1].request.messages
        recorded = session.calls[k].request.messages
        appended = recorded[len(previous) :]
        # The input view is the previous *output* view plus what the recording appended.
        shaped = _evict_old_results(views[k - 1], CallFacts()).view
        assert _texts(views[k].messages) == _texts([*shaped.messages, *appended])
    # Path dependence: the result evicted at call 2 stays evicted in the later views.
    assert "[evicted]" in json.dumps(to_payload(views[-1]))


def test_a_harness_compaction_does_not_feed_its_summary_back() -> None:
    u1, u2, u3, u4 = user("task one"), user("more"), user("after compaction"), user("next")
    a1, a2, a3 = assistant("ok one"), assistant("ok two"), assistant("ok three")
    summary = user("This session is being continued from a previous conversation. Summary: ...")
    calls = [
        _call([u1], a1, 0),
        _call([u1, a1, u2], a2, 1),
        _call([summary, u3], a3, 2),  # the harness compacted its own history here
        _call([summary, u3, a3, u4], assistant("done"), 3),
    ]
    recorder = Recorder(_keep)
    result = replay(_session(calls, compactions=(2,)), recorder, counter=FixedCounter())
    views = recorder.given
    assert _texts(views[2].messages) == _texts([u1, a1, u2, u3])
    assert _texts(views[3].messages) == _texts([u1, a1, u2, u3, a3, u4])
    assert all("continued from a previous" not in json.dumps(to_payload(v)) for v in views)
    assert len(result.requests) == 4


def test_after_a_harness_compaction_content_is_known_by_its_json() -> None:
    """The messages after the summary that the tape already holds are skipped, as equal copies
    (a reader parses every request anew) as well as the same objects; a message that differs
    from a tape message only where its signature does not look (an extra field, another block
    after the same first one) is new content."""
    use = ToolUseBlock(id="t1", name="Read", input={"path": "a.py"})
    result = ToolResultBlock(tool_use_id="t1", content="print(1)")
    tape = (
        user("task"),
        Message(role="assistant", content=(use,)),
        Message(role="user", content=(result,)),
    )
    summary = user("This session is being continued from a previous conversation.")
    copies = tuple(m.model_copy(deep=True) for m in tape[1:])
    assert all(a is not b for a, b in zip(copies, tape[1:], strict=True))
    assert _known((summary, *copies, user("next")), tape) == 3
    marked = result.model_copy(update={"is_error": True})  # same id: same signature
    assert _known((summary, Message(role="user", content=(marked,))), tape) == 1
    longer = Message(role="assistant", content=(use, TextBlock(text="and more")))
    assert _known((summary, longer), tape) == 1
    assert _known((summary,), tape) == 1
    assert _known((summary, user("task")), tape) == 2


def test_side_threads_are_kept_apart() -> None:
    u1, u2, u3 = user("task"), user("go on"), user("and finish")
    a1, a2 = assistant("first"), assistant("second")
    title = user("Write a 5-word title for: task")
    calls = [
        _call([u1], a1, 0),
        _call([u1, a1, u2], a2, 1),
        _call([title], assistant("Fixing the task"), 2, system="You write titles."),
        _call([u1, a1, u2, a2, u3], assistant("done"), 3),
    ]
    recorder = Recorder(_keep)
    replay(_session(calls), recorder, counter=FixedCounter())
    views = recorder.given
    assert _texts(views[2].messages) == _texts([title])
    assert views[2].system == "You write titles."
    assert _texts(views[3].messages) == _texts([u1, a1, u2, a2, u3])
    assert views[3].system == "You are a test agent."


def test_a_retry_repeating_the_previous_request_appends_nothing() -> None:
    u1, a1, u2 = user("task"), assistant("first"), user("go on")
    calls = [_call([u1], a1, 0), _call([u1, a1, u2], assistant("x"), 1)]
    calls.append(_call([u1, a1, u2], assistant("retried"), 2))
    recorder = Recorder(_keep)
    result = replay(_session(calls), recorder, counter=FixedCounter())
    assert _texts(recorder.given[2].messages) == _texts([u1, a1, u2])
    assert len(result.rows) == 3


# --- baselines ---------------------------------------------------------------------------------


def test_none_equals_the_tape() -> None:
    session = _session(_agent_loop())
    recorder = Recorder(strategy_from_spec("none"))
    result = replay(session, recorder, name="none", counter=FixedCounter())
    for call, view, request in zip(session.calls, recorder.given, result.requests, strict=True):
        assert to_payload(view) == to_payload(call.request)
        assert _wire(request) == _wire(call.request)
        assert set(to_payload(request)) == set(to_payload(call.request))
    assert result.recall.recall == 1.0
    assert result.summary()["compactions"] == 0


def _wide_loop(calls: int = 5, width: int = 12) -> list[Call]:
    """Each call answers with ``width`` parallel tool uses: more than the cache's 20-block
    lookback is appended between two requests."""
    history: list[Message] = [user("Read every module of the orders package")]
    out = []
    for i in range(calls):
        uses = [tool_use(f"t{i}_{k}", "Read", {"path": f"orders/m{k}.py"}) for k in range(width)]
        response = assistant(f"Step {i}", tool_uses=uses)
        out.append(_call(history, response, i))
        results = [tool_result(f"t{i}_{k}", f"def f{k}(): return {k}\n" * 30) for k in range(width)]
        history = [*history, response, user(*results)]
    return out


def _reparsed(session: Session) -> Session:
    """The same recording as a reader that parses every request on its own would give it (equal
    messages, no object shared between requests: the anthropic reader, proxy logs)."""
    calls = tuple(
        c.model_copy(update={"request": parse_conversation(to_payload(c.request))})
        for c in session.calls
    )
    return session.model_copy(update={"calls": calls})


@pytest.mark.parametrize("strategy", [_keep, _evict_old_results])
def test_replay_does_not_depend_on_readers_sharing_message_objects(strategy: Strategy) -> None:
    """Requests parsed one by one (equal copies of the history) replay as requests that share
    their history: same rows, same requests (the previous request's end is still marked)."""
    shared = _session(_wide_loop())
    copied = _reparsed(shared)
    assert copied.calls[1].request.messages[0] is not shared.calls[1].request.messages[0]
    runs = [replay(s, strategy, counter=FixedCounter(), price=PRICE) for s in (shared, copied)]
    assert [r.model_dump() for r in runs[0].rows] == [r.model_dump() for r in runs[1].rows]
    assert [to_payload(r) for r in runs[0].requests] == [to_payload(r) for r in runs[1].requests]
    if strategy is _keep:  # the lookback found the previous request's end
        assert all(r.cache_read > 0 for r in runs[1].rows[2:])  # call 1 wrote the first


def test_overflow_is_flagged_over_the_window() -> None:
    session = _session(_agent_loop(turns=6, result_chars=2000))
    counter = FixedCounter()
    window = counter.count_conversation(session.calls[3].request)
    result = replay(session, strategy_from_spec("none"), counter=counter, window=window)
    flags = [r.overflow for r in result.rows]
    sizes = [r.context_tokens for r in result.rows]
    assert flags == [size > window for size in sizes]
    assert flags[:4] == [False] * 4
    assert flags[4:] == [True] * 3
    assert result.summary()["overflow_calls"] == 3


def test_as_recorded_reproduces_the_recorded_bill() -> None:
    usages = [
        Usage(input_tokens=12, cache_write_5m=900, cache_read=0, output_tokens=40),
        Usage(input_tokens=3, cache_write_5m=150, cache_read=900, output_tokens=55),
        Usage(input_tokens=3, cache_write_1h=200, cache_read=1050, output_tokens=20),
        Usage(input_tokens=5, cache_write_5m=120, cache_read=1250, output_tokens=70),
        Usage(input_tokens=9, cache_write_5m=0, cache_read=1370, output_tokens=31),
    ]
    calls = [c.model_copy(update={"usage": u}) for c, u in zip(_agent_loop(), usages, strict=True)]
    result = replay_as_recorded(_session(calls), counter=FixedCounter(), price=PRICE)
    summary = result.summary()
    assert summary["cost_usd"] == pytest.approx(sum(PRICE.cost(u) for u in usages), abs=1e-12)
    assert summary["input_tokens"] == sum(u.input_tokens for u in usages)
    assert summary["cache_read"] == sum(u.cache_read for u in usages)
    assert summary["cache_write"] == sum(u.cache_write for u in usages)
    assert summary["output"] == sum(u.output_tokens for u in usages)
    assert result.recorded_cost_usd == pytest.approx(summary["cost_usd"])


def test_recall_drops_when_a_strategy_evicts_what_the_next_response_quotes() -> None:
    session = _session(_agent_loop())
    kept = replay(session, _keep, counter=FixedCounter(), price=PRICE)
    evicted = replay(session, _evict_old_results, counter=FixedCounter(), price=PRICE)
    assert kept.recall.recall == 1.0
    assert kept.recall.needed > 0
    assert evicted.recall.needed == kept.recall.needed
    assert evicted.recall.recall < 1.0
    lost = {fact for _, fact in evicted.recall.examples}
    assert {"compute_total_0", "4700"} <= lost
    assert evicted.rows[-1].kept < evicted.rows[-1].needed


def test_tool_result_eviction_loses_recall_on_a_long_loop() -> None:
    session = _session(_agent_loop(turns=8, result_chars=3000))
    evict = EvictToolResults(keep_last=1, min_freed_tokens=0)
    result = replay(session, evict, counter=FixedCounter(), price=PRICE)
    assert result.summary()["compactions"] > 0
    assert result.recall.recall < 1.0


# --- the command line --------------------------------------------------------------------------


def _write_pairs(path: Path, calls: Sequence[Call]) -> Path:
    """An ``anthropic`` request/response JSONL file of the calls (usage included when set)."""
    lines = []
    for call in calls:
        assert call.response is not None
        usage = call.usage or Usage(input_tokens=10, output_tokens=5)
        response = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": to_payload(call.response)["content"]
            if not isinstance(call.response.content, str)
            else [{"type": "text", "text": call.response.content}],
            "stop_reason": call.stop_reason,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_write,
                "cache_read_input_tokens": usage.cache_read,
                "output_tokens": usage.output_tokens,
            },
        }
        request = {"max_tokens": 1024, **to_anthropic_request(call.request)}
        lines.append(json.dumps({"request": request, "response": response}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    return _write_pairs(tmp_path / "loop.jsonl", _agent_loop(turns=5, result_chars=1500))


def _run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_replay_json_shape(session_file: Path) -> None:
    out = json.loads(_run("replay", str(session_file), "-s", "sliding-window", "--json").stdout)
    keys = {"path", "strategy", "model", "calls", "summary", "recorded_cost_usd", "rows"}
    assert keys | {"recoveries", "not_replayed"} <= set(out)
    assert set(out["summary"]) == SUMMARY_KEYS
    assert out["path"] == str(session_file)
    assert out["strategy"] == "sliding-window"
    assert out["model"] == MODEL
    assert out["calls"] == 6
    assert len(out["rows"]) == 6
    assert out["rows"][0]["call"] == 0
    assert isinstance(out["recorded_cost_usd"], float)


@pytest.fixture
def pipe_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """The consoles as the command line builds them when its output is a pipe (whatever the
    terminal or ``COLUMNS`` of the test run)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    console, err_console = cli_app._console(), cli_app._console(stderr=True)
    for module in (cli_app, cli_replay, cli_main):
        if hasattr(module, "console"):
            monkeypatch.setattr(module, "console", console)
        monkeypatch.setattr(module, "err_console", err_console)


@pytest.mark.usefixtures("pipe_console")
def test_replay_table_shows_whole_numbers_when_not_a_terminal(session_file: Path) -> None:
    """Output to a pipe or a log is not cut to 80 columns ("14,77…"): every figure of the
    summary appears whole, short by default and in full with ``--wide``, as in the JSON."""
    out = _run("replay", str(session_file), "-s", "sliding-window").stdout
    wide = _run("replay", str(session_file), "-s", "sliding-window", "--wide").stdout
    summary = json.loads(_run("replay", str(session_file), "-s", "sliding-window", "--json").stdout)
    assert not re.search(r"[\d$]…|…[\d$]", out)  # a path may be shortened, a figure never
    assert "…" not in wide
    figures = summary["summary"]
    for key in ("input_tokens", "cache_read", "cache_write", "peak_context_tokens"):
        assert f"{figures[key]:,}" in wide
        assert tables.tokens(figures[key]) in out
    assert f"{figures['recall']:.3f}" in out


@pytest.mark.usefixtures("pipe_console")
def test_compare_table_names_sessions_below_their_common_folder(
    session_file: Path, tmp_path: Path
) -> None:
    (tmp_path / "more").mkdir()
    _write_pairs(tmp_path / "more" / "short.jsonl", _agent_loop(turns=2))
    out = _run("compare", str(tmp_path), "-s", "none").stdout
    assert f"paths under {tmp_path}" in out
    assert "more/short.jsonl" in out
    assert str(session_file) not in out  # named below the folder: loop.jsonl
    assert cli_replay._common_folder(["/a/b/x.jsonl"]) == ""  # one session: its whole path


@pytest.mark.usefixtures("pipe_console")
def test_cli_warnings_are_one_line_of_text(capsys: pytest.CaptureFixture[str]) -> None:
    """The command line shows a warning's text on one line (however long: price warnings run
    to some 280 characters), not the source line that raised it."""
    long = "no price known " + "x" * 300 + " [models.x]"
    cli_main._show_warning(UserWarning(long), UserWarning, "f.py", 1)
    err = capsys.readouterr().err
    assert err == f"warning: {long}\n"


@pytest.mark.usefixtures("pipe_console")
def test_the_command_line_installs_its_warning_display(
    session_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    unpriced = session_file.with_name("unpriced.jsonl")
    unpriced.write_text(session_file.read_text().replace(MODEL, "mystery-model-41"))
    monkeypatch.setattr(sys, "argv", ["contextkit", "replay", str(unpriced), "-s", "none"])
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # restored after
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # the suite turns warnings into errors
        with pytest.raises(SystemExit) as done:
            cli_main.main()
    assert done.value.code in (0, None)
    err = capsys.readouterr().err
    assert "warning: no price known for model 'mystery-model-41'" in err
    assert "UnknownPriceWarning" not in err  # not Python's display (file:line: Category: ...)


def test_replay_as_recorded_json_is_the_recorded_bill(session_file: Path) -> None:
    out = json.loads(_run("replay", str(session_file), "-s", AS_RECORDED, "--json").stdout)
    assert out["summary"]["cost_usd"] == pytest.approx(out["recorded_cost_usd"])
    assert out["summary"]["input_tokens"] == 60  # 6 calls x 10 recorded uncached tokens


def test_compare_json_shape(session_file: Path, tmp_path: Path) -> None:
    other = _write_pairs(tmp_path / "short.jsonl", _agent_loop(turns=2))
    (tmp_path / "notes.txt").write_text("not a session", encoding="utf-8")
    out = json.loads(
        _run("compare", str(tmp_path), "-s", "none", "-s", AS_RECORDED, "--json").stdout
    )
    assert set(out) >= {"results"}
    rows = out["results"]
    assert len(rows) == 4
    assert {(Path(r["path"]).name, r["strategy"]) for r in rows} == {
        (f.name, s) for f in (session_file, other) for s in ("none", AS_RECORDED)
    }
    for row in rows:
        assert set(row["summary"]) == SUMMARY_KEYS
        assert row["calls"] in (3, 6)


def test_dump_requests_validate_and_load_back(session_file: Path, tmp_path: Path) -> None:
    dump = tmp_path / "dump.jsonl"
    spec = tmp_path / "evict.json"
    config = {"kind": "evict-tool-results", "keep_last": 1, "min_freed_tokens": 0}
    spec.write_text(json.dumps(config), encoding="utf-8")
    _run("replay", str(session_file), "-s", str(spec), "--dump-requests", str(dump))
    lines = dump.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6
    loaded = load(dump)
    assert loaded.format == "anthropic"
    requests = [c.request for c in loaded.sessions[0].calls]
    assert len(requests) == 6
    for request in requests:
        assert validate(request) == ()
    assert PLACEHOLDER_PREFIX in json.loads(lines[-1])["messages"][2]["content"][0]["content"]


def test_plot_writes_a_png(session_file: Path, tmp_path: Path) -> None:
    png = tmp_path / "plots" / "replay.png"
    _run("replay", str(session_file), "-s", "summary", "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    compare_png = tmp_path / "compare.png"
    _run("compare", str(session_file), "--plot", str(compare_png))
    assert compare_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed entry point in a subprocess: exit codes and stderr as a user sees them."""
    code = "from contextkit.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("replay", "/no/such/session.jsonl"),
        ("compare", "/no/such/folder"),
        ("replay", "{bad}", "--strategy", "no-such-strategy"),
    ],
)
def test_bad_input_exits_2_with_a_message(args: tuple[str, ...], session_file: Path) -> None:
    args = tuple(str(session_file) if a == "{bad}" else a for a in args)
    done = _cli(*args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "error" in done.stderr.lower()
    assert args[1] in done.stderr or "no-such-strategy" in done.stderr


def test_a_file_no_reader_takes_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"request": {"messages": "oops"}}\n{not json\n', encoding="utf-8")
    done = _cli("replay", str(bad))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert str(bad) in done.stderr


# --- the library side of compare -----------------------------------------------------------------


def test_compare_runs_in_processes_like_in_one(session_file: Path, tmp_path: Path) -> None:
    other = _write_pairs(tmp_path / "short.jsonl", _agent_loop(turns=2))
    specs = ("none", "summary", AS_RECORDED)
    serial = compare([session_file, other], specs, jobs=1)
    parallel = compare([session_file, other], specs, jobs=2)
    assert [r.results for r in serial] == [r.results for r in parallel]
    assert [r.path for r in serial] == [str(session_file), str(other)]


def test_find_session_files_lists_what_it_skips(tmp_path: Path) -> None:
    _write_pairs(tmp_path / "a.jsonl", _agent_loop(turns=1))
    (tmp_path / "b.json").write_text('{"hello": 1}', encoding="utf-8")
    found = find_session_files([tmp_path])
    assert [p.name for p in found.files] == ["a.jsonl"]
    assert [Path(p).name for p, _ in found.skipped] == ["b.json"]


def test_compare_file_reports_an_unreadable_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"request": {"messages": [{"role": "user"}]}, "response": null}\n')
    result = compare_file(str(bad), ("none",))
    assert result.error is not None
    assert result.results == ()


def test_run_strategy_names_the_replay() -> None:
    session = _session(_agent_loop(turns=2))
    assert run_strategy(session, "none").strategy == "none"
    assert run_strategy(session, AS_RECORDED).strategy == AS_RECORDED


def test_compare_markdown_table(session_file: Path, tmp_path: Path) -> None:
    _write_pairs(tmp_path / "short.jsonl", _agent_loop(turns=2))
    out = _run("compare", str(tmp_path), "-s", AS_RECORDED, "-s", "none", "--markdown").stdout
    lines = out.splitlines()
    assert lines[0] == "| session | calls | as-recorded | none | best vs as-recorded |"
    assert lines[1] == "|---|---|---|---|---|"
    assert sorted(line.split(" | ")[0] for line in lines[2:]) == ["| loop.jsonl", "| short.jsonl"]
    # $cost / copied-span recall / feasible edits, and the best against as-recorded
    assert all(line.count("$") == 2 and "1.00 / 100% | none " in line for line in lines[2:])
    assert all("no strategy acted (peak context" in line for line in lines[2:])


def _summary(
    cost: float | None,
    recovery: float = 0.0,
    lost: int = 0,
    spans: float = 1.0,
    **more: int,
) -> dict[str, Any]:
    base = {"cost_usd": cost, "recall": 1.0, "overflow_calls": 0, "compactions": 0}
    total = None if cost is None else cost + recovery
    recovered = {
        "recovery_usd": recovery,
        "unrecoverable": lost,
        "cost_plus_recovery_usd": total,
        "span_recall": spans,
        "edit_feasibility": 1.0,
    }
    return base | recovered | {"peak_context_tokens": 50_000} | more


def test_best_is_the_cheapest_by_cost_plus_recovery_with_nothing_unrecoverable() -> None:
    """The ranking of the scoring issue: cost + what it costs to get back what was dropped; a
    strategy that loses what cannot be got back (text the user typed, a subagent's report with no
    run to repeat) is never best, however cheap; span recall is a column, not a threshold."""
    row = {
        AS_RECORDED: _summary(10.0),
        "none": _summary(9.0),
        "evict": _summary(5.0, recovery=1.0, spans=0.9, compactions=4),  # 6.0 in all
        "cheap-but-refetches": _summary(4.0, recovery=2.5, compactions=9),  # 6.5 in all
        "loses-user-text": _summary(2.0, lost=1, compactions=9),  # cheapest, but unrecoverable
        "over": _summary(1.0, overflow_calls=2),  # cheaper still, but overflows
        ORACLE: _summary(0.5, compactions=2),  # a bound, never the best
    }
    assert best_strategy(row) == "evict"
    assert best_saving(row, calls=40) == "evict -40%, -33% vs none (recovery $1.00)"
    row["none"] = _summary(9.0, overflow_calls=3)
    assert best_saving(row, calls=40) == (
        "evict -40%, -33% vs none (which overflows the window at 3 calls) (recovery $1.00)"
    )
    row["none"] = _summary(9.0)
    row["evict"] = _summary(7.5, recovery=0.5, compactions=4)
    assert best_strategy(row) == "cheap-but-refetches"
    quiet = {AS_RECORDED: _summary(10.0), "none": _summary(10.5), "evict": _summary(10.5)}
    assert best_saving(quiet, calls=5) == "none +5%: no strategy acted (peak context 50,000 tokens)"
    assert best_saving(quiet, calls=1) == "none +5%: one call, nothing to compact"
    unbilled = {AS_RECORDED: _summary(None), "none": _summary(1.0)}
    assert best_saving(unbilled, 3) == "no as-recorded cost (usage or price unknown)"
    only_lossy = {**quiet, "lossy": _summary(2.0, lost=2, compactions=3)}
    assert best_saving(only_lossy, calls=5) == (
        "none +5%: only strategies that lost what cannot be got back acted"
    )
    lossy = {AS_RECORDED: _summary(10.0), "lossy": _summary(2.0, lost=1, compactions=1)}
    assert best_saving(lossy, 3) == (
        "no strategy kept every call in the window and every request one the provider accepts "
        "without an unrecoverable loss"
    )
    refused = {**row, "refused": _summary(0.1, refused_calls=1, compactions=1)}
    assert best_strategy(refused) == best_strategy(row)  # the provider would refuse a request


def test_savings_are_against_the_simulated_recording_none_and_the_oracle() -> None:
    recorded = _summary(12.0) | {"simulated_cost_usd": 10.0}  # billed 12, simulated 10
    row = {AS_RECORDED: recorded, "none": _summary(20.0), "evict": _summary(8.0)}
    row[ORACLE] = _summary(5.0)
    saved = savings(row)
    assert saved["evict"] == pytest.approx(
        {"vs_as_recorded": -0.2, "vs_none": -0.6, "vs_oracle": 0.6}
    )
    assert saved[AS_RECORDED]["vs_as_recorded"] == 0.0
    assert saved[AS_RECORDED]["vs_none"] == pytest.approx(-0.5)  # simulated, not billed
    assert saved[ORACLE]["vs_oracle"] == 0.0


def test_default_model_fills_only_calls_that_name_none() -> None:
    ask = Conversation(messages=(Message(role="user", content="hi"),))
    named = Call(request=ask, model="claude-sonnet-4-5")
    nameless = Call(request=ask)
    session = Session(path="x", format="tau-bench", calls=(named, nameless))
    filled = with_default_model(session, "gpt-4o")
    assert [c.model for c in filled.calls] == ["claude-sonnet-4-5", "gpt-4o"]
    assert filled.calls[0] is named
    assert with_default_model(session, None) is session
    complete = Session(path="x", format="claude-code", calls=(named,))
    assert with_default_model(complete, "gpt-4o") is complete


@pytest.mark.corpus
def test_the_harness_compaction_call_belongs_to_the_recorded_cost(corpus: Path) -> None:
    """Claude Code's agent-acompact-* subagent is its own compaction request: as-recorded adds
    its recorded cost to the parent's, and says so."""
    (session,) = load(corpus / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl").sessions
    (compaction,) = [s for s in session.subagents if s.harness_compaction]
    own = replay_as_recorded(compaction).summary()["cost_usd"]
    parent = replay_as_recorded(session)
    summary = parent.summary()
    assert own is not None
    assert parent.recorded_cost_usd is not None
    assert summary["harness_compaction_usd"] == pytest.approx(own)
    assert summary["cost_usd"] == pytest.approx(parent.recorded_cost_usd + own)
    assert any("harness's own compaction" in n for n in parent.to_json()["notes"])
    others = [s for s in session.subagents if not s.harness_compaction]
    assert others  # a Task subagent is not a compaction
