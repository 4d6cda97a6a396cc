"""Checkpoints that survive failure: a full disk during ``add`` and ``record``, a kill at every
byte of a record, two writers on one path, errors that never quote the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from contextkit.engine import CheckpointError, ContextEngine, read_checkpoint
from contextkit.messages import to_payload, validate
from contextkit.testing import FixedCounter, assistant, tool_result, tool_use, user

_DISK_FULL = r"""
import json, os, resource, sys
from contextkit.engine import CheckpointError, ContextEngine, read_checkpoint
from contextkit.messages import to_payload, validate
from contextkit.testing import assistant, tool_result, tool_use, user

path = sys.argv[1]
engine = ContextEngine(model="m", checkpoint_path=path, checkpoint_fsync=False)
engine.add(user("task"))
out = {}

def full(step):
    # the file may grow by 64 bytes more: every save from now on fails mid-record
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 64, hard))
    try:
        step()
    except CheckpointError as exc:
        return str(exc)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    return None

for i in range(3):
    engine.prepare()
    response = assistant(f"step {i}", tool_uses=[tool_use(f"t{i}")])
    sizes = lambda: (len(engine.tape), len(engine.calls), len(engine.view.messages))
    before = sizes()
    failed = full(lambda: engine.record(response, stop_reason="tool_use"))
    out.setdefault("record", []).append(failed)
    out.setdefault("kept", []).append(before == sizes())
    out.setdefault("file", []).append(len(read_checkpoint(path).calls))
    engine.record(response, stop_reason="tool_use")  # the same call again: accepted
    result = user(tool_result(f"t{i}", "output " * 200))
    before = len(engine.tape)
    out.setdefault("add", []).append(full(lambda: engine.add(result)))
    out["kept"].append(before == len(engine.tape))
    engine.add(result)
state = read_checkpoint(path)
out["calls"] = len(state.calls)
out["tape"] = [to_payload(m) for m in state.tape] == [to_payload(m) for m in engine.tape]
out["valid"] = validate(engine.prepare().request) == ()
out["notes"] = list(state.notes)
print(json.dumps(out))
"""


def _script_output(script: str, path: Path) -> dict[str, Any]:
    """What a script run in its own process (a file size limit stays there) prints, as JSON."""
    run = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out: dict[str, Any] = json.loads(run.stdout)
    return out


def test_disk_full_during_add_and_record_is_undone_and_the_call_can_be_retried(
    tmp_path: Path,
) -> None:
    path = tmp_path / "engine.ckpt"
    out = _script_output(_DISK_FULL, path)
    for message in [*out["record"], *out["add"]]:
        assert message is not None
        assert "checkpoint not written" in message
        assert "File too large" in message
    assert all(out["kept"])  # the engine is as before the failed call
    assert out["file"] == [0, 1, 2]  # the checkpoint keeps the last saved state
    assert out["calls"] == 3
    assert out["tape"]
    assert out["valid"]
    assert out["notes"] == []  # the torn bytes were cut at once: nothing left to cut


def _engine(path: Path) -> ContextEngine:
    return ContextEngine(model="m", checkpoint_path=path, checkpoint_fsync=False)


def _loop(engine: ContextEngine, rounds: int, start: int = 0) -> None:
    for i in range(start, start + rounds):
        engine.prepare()
        engine.record(assistant(f"s{i}", tool_uses=[tool_use(f"t{i}")]), stop_reason="tool_use")
        engine.add(user(tool_result(f"t{i}", f"r{i} é ✓")))


def test_a_kill_at_every_byte_of_a_record_leaves_the_state_before_it(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    engine = _engine(path)
    engine.add(user("task"))
    _loop(engine, 2)
    engine.prepare()
    before = path.read_bytes()
    engine.record(assistant("s2", tool_uses=[tool_use("t2")]), stop_reason="tool_use")
    after = path.read_bytes()
    assert after.startswith(before)
    assert after.endswith(b"\n")
    old = read_checkpoint(path)
    assert len(old.calls) == 3
    assert old.notes == ()
    del engine
    for cut in range(len(before), len(after)):
        path.write_bytes(after[:cut])
        state = read_checkpoint(path)
        assert len(state.calls) == 2, cut
        assert len(state.tape) == 5
        assert bool(state.notes) == (cut > len(before)), cut
    # the last torn one: resume cuts it, says so, and goes on with a valid request
    resumed, receipts = ContextEngine.resume(path, counter=FixedCounter(), checkpoint_fsync=False)
    assert [r.action for r in receipts] == ["cut"]
    assert "torn last record" in receipts[0].detail
    assert validate(resumed.prepare().request) == ()
    resumed.record(assistant("done"), stop_reason="end_turn")
    again = read_checkpoint(path)
    assert again.notes == ()
    assert len(again.calls) == 3


def test_a_damaged_record_before_the_last_is_an_error_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    engine = _engine(path)
    engine.add(user("task"))
    _loop(engine, 2)
    lines = path.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if b"r0 " in line)
    assert at < len(lines) - 2  # not the last record
    lines[at] = lines[at].replace(b"r0 ", b"r9 ")  # same length, wrong checksum
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(CheckpointError, match=rf"engine.ckpt:{at + 1}: damaged checkpoint record"):
        read_checkpoint(path)


def test_errors_never_quote_the_file(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    engine = _engine(path)
    engine.add(user("task"))
    _loop(engine, 1)
    text = path.read_bytes().split(b"\n")
    header = text[0]
    body = json.dumps(
        {
            "calls": [
                {
                    "head": 0,
                    "messages": [0, []],
                    "response": None,
                    "usage": {"input_tokens": "sk-SECRET-1234"},
                    "model": None,
                    "timestamp": None,
                    "stop_reason": None,
                    "request_id": None,
                }
            ]
        }
    )
    raw = body.encode()
    record = b"%x %08x " % (len(raw), zlib.crc32(raw)) + raw
    path.write_bytes(b"\n".join([header, text[1], record, b""]))
    with pytest.raises(CheckpointError) as info:
        read_checkpoint(path)
    assert "engine.ckpt:3" in str(info.value)
    assert "SECRET" not in str(info.value)
    assert "input_tokens" in str(info.value)


_HOLDER = """
import sys
from contextkit.engine import ContextEngine
from contextkit.testing import user
engine = ContextEngine(model="m", checkpoint_path=sys.argv[1], checkpoint_fsync=False)
engine.add(user("task"))
print("ready", flush=True)
sys.stdin.readline()
engine.add(user("more"))
print("done", flush=True)
"""


def test_a_second_writer_on_one_path_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(
            CheckpointError, match=rf"in use by another writer \(process {child.pid}"
        ):
            _engine(path)
        with pytest.raises(CheckpointError, match="in use by another writer"):
            ContextEngine.resume(path)
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
    finally:
        child.stdin.close()
        child.wait(timeout=60)
        child.stdout.close()
    assert child.returncode == 0
    # the first writer was never disturbed; once it is gone, the path is free
    assert [m.content for m in read_checkpoint(path).tape] == ["task", "more"]
    resumed, _ = ContextEngine.resume(path)
    assert len(resumed.tape) == 2


def test_within_a_process_the_newest_writer_takes_the_path_over(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    first = _engine(path)
    first.add(user("task"))
    second, _ = ContextEngine.resume(path)
    second.add(user("more"))
    with pytest.raises(CheckpointError, match="no longer owns the checkpoint"):
        first.add(user("stale"))
    assert [m.content for m in first.tape] == ["task"]  # undone, like any failed save
    assert [m.content for m in read_checkpoint(path).tape] == ["task", "more"]


def test_checkpoint_and_lock_are_private(tmp_path: Path) -> None:
    path = tmp_path / "engine.ckpt"
    engine = _engine(path)
    engine.add(user("task"))
    _loop(engine, 1)
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "engine.ckpt.lock").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "engine.ckpt.lock").read_text() == str(os.getpid())


def test_a_version_2_checkpoint_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "old.ckpt"
    message = to_payload(user("task"))
    lines = [
        {"format": "contextkit-checkpoint", "version": 2},
        {"messages": [message], "heads": [{"model": "m"}], "tape": [0, [0]], "view": [0, 0, [0]]},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    state = read_checkpoint(path)
    assert [m.content for m in state.tape] == ["task"]
    engine, _ = ContextEngine.resume(path)
    engine.add(user("more"))
    assert path.read_bytes()[:1] != b"{"  # rewritten as version 3
    assert len(read_checkpoint(path).tape) == 2


@pytest.mark.parametrize("odd", ["orphan result", "empty message"])
def test_a_checkpoint_of_input_add_accepted_always_resumes(tmp_path: Path, odd: str) -> None:
    """``add`` accepts what a harness hands it; a checkpoint of that must resume. An orphan
    ``tool_result`` (its call not in the history) or an empty user message ending the history is
    dropped on resume, with a receipt (a repair that only shortened the history raised
    ``ValueError`` from a strict ``zip`` before)."""
    path = tmp_path / "run.ckpt"
    engine = ContextEngine(checkpoint_path=path)
    engine.add(user("Start."))
    engine.prepare()
    engine.record(assistant("Working."))
    if odd == "orphan result":  # last: the repair only drops what ends the history
        engine.add(user(tool_result("toolu_gone", "a result whose call is not here")))
    else:
        engine.add({"role": "user", "content": []})
    resumed, receipts = ContextEngine.resume(path)
    assert receipts, "the repair is reported"
    assert validate(resumed.view) == ()
    assert validate(resumed.view.with_messages(resumed.tape)) == ()
    resumed.add(user("Go on."))
    resumed.prepare()  # and the loop goes on
    resumed.record(assistant("Done."))
    again, _ = ContextEngine.resume(path)
    assert len(again.calls) == 2


_AUDIT_FULL = r"""
import json, os, resource, sys
from contextkit.engine import AuditError, ContextEngine
from contextkit.testing import assistant, user

audit, checkpoint = sys.argv[1], sys.argv[1] + ".ckpt"
engine = ContextEngine(model="m", audit_path=audit, checkpoint_path=checkpoint)
for turn in range(6):  # the audit logs every request whole: it outgrows the checkpoint
    engine.add(user(f"task {turn} " * 300))
    engine.prepare()
    engine.record(assistant(f"answer {turn}"))
out = {"lines": [], "error": None}
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
engine.add(user("more " * 100))
engine.prepare()
before = os.path.getsize(checkpoint)
assert before + 5_000 < os.path.getsize(audit)  # room for the checkpoint's save, not the line
resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(audit) + 100, hard))
try:
    engine.record(assistant("two"))
except AuditError as exc:
    out["error"] = str(exc)
    out["undone"] = exc.undone
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
out["calls"] = len(engine.calls)
out["checkpoint_as_before"] = os.path.getsize(checkpoint) == before
engine.record(assistant("two"))  # the retry works
engine.add(user("last"))
engine.prepare()
engine.record(assistant("three"))
with open(audit, encoding="utf-8") as fh:
    out["lines"] = [json.loads(line)["call"] for line in fh]
resumed, _ = ContextEngine.resume(checkpoint)
out["resumed_calls"] = len(resumed.calls)
print(json.dumps(out))
"""


def test_an_audit_log_that_cannot_be_written_undoes_the_call_and_the_retry_works(
    tmp_path: Path,
) -> None:
    """Disk full while writing the audit log: the call is undone as one step (the engine and its
    checkpoint as before ``record``), the log ends where it ended before (no torn line), and
    recording the same response again works once the disk has room. It raised a raw OSError and
    left a torn line at first; then the call stayed recorded and the retry failed ("record()
    without prepare()")."""
    audit = tmp_path / "audit.jsonl"
    out = _script_output(_AUDIT_FULL, audit)
    assert out["error"] is not None
    assert "the audit line of call 6 could not be written (File too large)" in out["error"]
    assert "the call is undone" in out["error"]
    assert out["undone"] is True
    assert out["calls"] == 6
    assert out["checkpoint_as_before"] is True
    assert out["lines"] == list(range(8))  # every call logged once, every line whole
    assert out["resumed_calls"] == 8


def _holder(path: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    return child


def _release(child: subprocess.Popen[str]) -> tuple[str, str]:
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    out, err = child.communicate(timeout=60)
    return out, err


def test_an_alias_of_the_path_is_the_same_checkpoint(tmp_path: Path) -> None:
    """A linked folder or file naming the same checkpoint locks the same lock file (two writers
    through two names both wrote before)."""
    path = tmp_path / "real" / "engine.ckpt"
    path.parent.mkdir()
    (tmp_path / "alias").symlink_to(path.parent)
    child = _holder(path)
    try:
        with pytest.raises(CheckpointError, match="in use by another writer"):
            _engine(tmp_path / "alias" / "engine.ckpt")
    finally:
        out, _ = _release(child)
    assert out.strip() == "done"


def test_a_removed_lock_file_does_not_admit_a_second_writer(tmp_path: Path) -> None:
    """Deleting ``<path>.lock`` while a writer runs: a second writer can then take a new lock
    file, and the first stops at its next write instead of writing beside it (both wrote, and the
    checkpoint became unreadable, before)."""
    path = tmp_path / "engine.ckpt"
    child = _holder(path)
    try:
        path.with_name(path.name + ".lock").unlink()
        second = _engine(path)
        second.add(user("mine"))
    finally:
        out, err = _release(child)
    assert "done" not in out
    assert "in use by another writer" in err  # the first writer's next save refused
    assert [m.content for m in read_checkpoint(path).tape] == ["mine"]
    second.add(user("still mine"))
    assert [m.content for m in read_checkpoint(path).tape] == ["mine", "still mine"]


_ODD_VALUES: tuple[object, ...] = (None, -1, 0, "x", [], {}, True, 1.5, [1], {"a": 1}, 10**30)


def _paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _set(value: Any, where: tuple[object, ...], new: object) -> Any:
    if not where:
        return new
    value[where[0]] = _set(value[where[0]], where[1:], new)
    return value


def test_a_hand_edited_checkpoint_resumes_or_says_where_it_is_damaged(tmp_path: Path) -> None:
    """600 edits that keep each record's frame valid (its length and checksum made again), each
    a value of another type or out of range somewhere in one record: ``resume`` either works or
    raises a CheckpointError naming the file and line, never a traceback (111 of 600 ended in
    ValueError, TypeError or IndexError before)."""
    import random  # noqa: PLC0415

    from contextkit.engine._checkpoint import _frame  # noqa: PLC0415

    source = tmp_path / "base.ckpt"
    engine = _engine(source)
    _loop(engine, 3)
    del engine
    lines = source.read_bytes().split(b"\n")[:-1]
    outcomes: Counter[str] = Counter()
    for seed in range(600):
        rng = random.Random(seed)
        number = rng.randrange(1, len(lines))
        record = json.loads(lines[number].split(b" ", 2)[2])
        where = rng.choice(_paths(record)[1:])
        edited = _set(record, where, rng.choice(_ODD_VALUES))
        lines_now = [*lines[:number], _frame(edited).rstrip(b"\n"), *lines[number + 1 :]]
        path = tmp_path / f"edit-{seed}.ckpt"
        path.write_bytes(b"\n".join(lines_now) + b"\n")
        error: str | None = None
        try:
            ContextEngine.resume(path)
        except CheckpointError as exc:
            error = str(exc)
        if error is not None:
            assert error.startswith(f"{path}:")  # names the file and the line
        outcomes["named" if error is not None else "resumed"] += 1
    assert outcomes["named"] > 0
    assert outcomes["resumed"] > 0
    assert sum(outcomes.values()) == 600


def test_a_damaged_middle_record_can_be_cut_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A flipped byte in a middle record: ``resume`` names the line; ``resume(repair=True)`` and
    ``contextkit checkpoint --repair`` keep every record before it, with a receipt saying what was
    cut, and the file resumes plainly afterwards (before, nothing before it could be recovered)."""
    from contextkit.cli import main  # noqa: PLC0415

    path = tmp_path / "engine.ckpt"
    engine = _engine(path)
    _loop(engine, 4)
    del engine
    lines = path.read_bytes().split(b"\n")
    damaged = 4  # a middle record (1-based: header, then one per save)
    body = bytearray(lines[damaged - 1])
    body[-3] ^= 0x01
    lines[damaged - 1] = bytes(body)
    path.write_bytes(b"\n".join(lines))
    copy = tmp_path / "copy.ckpt"
    copy.write_bytes(path.read_bytes())
    with pytest.raises(CheckpointError, match=rf"{path}:{damaged}:"):
        ContextEngine.resume(path)
    before = read_checkpoint(path, repair=True)
    assert before.notes
    assert f"{path}:{damaged}:" in before.notes[0]
    resumed, receipts = ContextEngine.resume(path, repair=True)
    assert receipts[0].action == "cut"  # then, maybe, an interrupted tool call answered
    assert len(resumed.tape) >= len(before.tape) > 0
    del resumed
    again, repaired = ContextEngine.resume(path)  # rewritten whole: nothing left to cut
    assert repaired == ()
    del again
    monkeypatch.setattr(sys, "argv", ["contextkit", "checkpoint", str(copy)])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2
    assert f"{copy}:{damaged}:" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["contextkit", "checkpoint", str(copy), "--repair"])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 0
    shown = capsys.readouterr().out
    assert "cut:" in shown
    assert "message(s) on the tape" in shown


def test_anything_add_accepts_resume_restores(tmp_path: Path) -> None:
    """A property over generated message sequences of any shape (valid, or valid ones broken:
    orphan results, dangling calls, empty or duplicated messages, roles swapped): what ``add``
    accepts, checkpointed, ``resume`` restores, its view a request the provider accepts, and the
    loop goes on from there."""
    from hypothesis import HealthCheck, given, settings  # noqa: PLC0415

    from contextkit.engine import InputError  # noqa: PLC0415
    from contextkit.testing.strategies import any_conversations  # noqa: PLC0415

    runs = iter(range(10_000))
    resumed_runs: list[int] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(any_conversations(max_messages=8))
    def check(conversation: Any) -> None:
        path = tmp_path / f"run-{next(runs)}.ckpt"
        engine = _engine(path)
        added = 0
        for message in conversation.messages:
            try:
                engine.add(message)
            except InputError:
                continue  # refused, with a reason: not part of what must resume
            added += 1
        del engine
        if not added:
            return  # nothing was saved: there is no checkpoint to resume
        resumed, _ = ContextEngine.resume(path)
        assert validate(resumed.view) == () or not resumed.view.messages
        resumed.add(user("go on"))
        resumed.prepare()
        resumed.record(assistant("ok"))
        assert len(resumed.calls) == 1
        resumed_runs.append(added)

    check()
    assert len(resumed_runs) >= 50  # most generated sequences were added and resumed
    assert max(resumed_runs) >= 4
