"""``contextkit validate``: exit codes, the JSON document, and bad input without tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.formats import CallViolation, check_file, group_findings, load
from contextkit.messages import repair, rules_for, validate
from corpus_paths import PENDING_READERS, corpus_files, readable_corpus_files

FIXTURES = Path(__file__).parents[1] / "fixtures" / "validate"
CLEAN = FIXTURES / "clean.jsonl"
DANGLING = FIXTURES / "dangling.jsonl"
BAD_LINES = FIXTURES / "bad_lines.jsonl"
OTHER = FIXTURES / "other_format.csv"

runner = CliRunner()


def run(*args: str | Path) -> tuple[int, str, str]:
    """Exit code, stdout and stderr, with rich's line wrapping undone (words joined by spaces)."""
    result = runner.invoke(app, ["validate", *map(str, args)])
    # Anything but a clean exit (typer.Exit / SystemExit) is an escaped exception: a bug.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, _flat(result.stdout), _flat(result.stderr)


def _flat(text: str) -> str:
    return " ".join(text.split())


def run_json(*args: str | Path) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["validate", "--json", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, json.loads(result.stdout)


def test_clean_file_exits_0_with_the_documented_json_shape() -> None:
    code, doc = run_json(CLEAN)
    assert code == 0
    assert doc == {
        "files": [
            {
                "path": str(CLEAN),
                "format": "anthropic",
                "calls": 3,
                "violations": [],
                "skipped": [],
            }
        ],
        "skipped_files": [],
    }


def test_dangling_call_exits_1_and_is_reported_once_with_the_calls_carrying_it() -> None:
    code, doc = run_json(DANGLING)
    assert code == 1
    (entry,) = doc["files"]
    assert entry["calls"] == 3
    assert entry["violations"] == [
        {
            "first_call": 1,
            "last_call": 2,
            "calls": 2,
            "code": "dangling_tool_use",
            "message_index": 1,
            "block_index": 0,
            "detail": "tool_use toolu_01 has no tool_result in the next user turn",
        }
    ]


def test_table_for_people_folds_repeats_over_calls() -> None:
    code, out, _ = run(DANGLING)
    assert code == 1
    assert "dangling_tool_use" in out
    assert "calls 1-2" in out
    assert "3 calls, 1 finding (2 violations)" in out


def _request(messages: list[dict[str, Any]]) -> str:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": "Be terse.",
        "messages": messages,
    }
    return json.dumps(body) + "\n"


def _riding_session(tmp_path: Path, calls: int) -> Path:
    """Call 0 is clean; from call 1 on, every request carries one unanswered tool call."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "List the files."}]
    lines = [_request(history)]
    history += [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        },
        {"role": "user", "content": "Never mind."},
    ]
    for i in range(1, calls):
        lines.append(_request(history))
        history += [
            {"role": "assistant", "content": f"reply {i}"},
            {"role": "user", "content": f"question {i}"},
        ]
    path = tmp_path / "riding.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_a_bad_message_riding_50_calls_is_one_finding(tmp_path: Path) -> None:
    path = _riding_session(tmp_path, 51)
    code, doc = run_json(path)
    assert code == 1
    (entry,) = doc["files"]
    assert entry["calls"] == 51
    (finding,) = entry["violations"]
    assert (finding["first_call"], finding["last_call"], finding["calls"]) == (1, 50, 50)
    assert finding["code"] == "dangling_tool_use"
    assert (finding["message_index"], finding["block_index"]) == (1, 0)
    code, out, _ = run(path)
    assert code == 1
    assert out.count("dangling_tool_use") == 1
    assert "calls 1-50" in out
    assert "51 calls, 1 finding (50 violations)" in out


def test_a_finding_that_goes_away_and_comes_back_is_two_runs() -> None:
    def at(call: int, session: int = 0) -> CallViolation:
        return CallViolation(
            call=call, code="x", message_index=1, block_index=0, detail="d", session=session
        )

    runs = group_findings([at(0), at(1), at(3), at(4, session=1), at(5, session=1)])
    assert [(f.first_call, f.last_call, f.calls) for f in runs] == [(0, 1, 2), (3, 3, 1), (4, 5, 2)]


def test_a_folder_is_read_and_files_no_reader_takes_are_listed_as_skipped(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.jsonl").write_bytes(CLEAN.read_bytes())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_bytes(DANGLING.read_bytes())
    (tmp_path / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    code, doc = run_json(tmp_path)
    assert code == 1
    assert [Path(f["path"]).name for f in doc["files"]] == ["a.jsonl", "b.jsonl"]
    (skipped,) = doc["skipped_files"]
    assert skipped["path"] == str(tmp_path / "notes.json")
    assert "not a recognised session format" in skipped["reason"]
    code, out, err = run(tmp_path)
    assert code == 1
    assert f"skipped {tmp_path / 'notes.json'}" in out
    assert "Traceback" not in out + err


def test_a_folder_without_session_files_exits_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    code, _, err = run(tmp_path)
    assert code == 2
    assert f"no session file found in {tmp_path}" in err


def test_unreadable_file_wins_over_violations() -> None:
    code, doc = run_json(DANGLING, OTHER)
    assert code == 2
    first, second = doc["files"]
    assert first["violations"]
    assert second["format"] is None
    assert second["calls"] == 0
    assert str(OTHER) in second["error"]
    assert "not a recognised session format" in second["error"]


def test_strict_read_names_file_and_line_of_the_first_bad_record() -> None:
    code, out, err = run(BAD_LINES)
    assert code == 2
    assert f"{BAD_LINES}:2: not valid JSON" in err
    assert "Traceback" not in out + err


def test_lenient_lists_each_skipped_line() -> None:
    code, doc = run_json("--lenient", BAD_LINES)
    assert code == 0
    (entry,) = doc["files"]
    assert entry["calls"] == 1
    assert [s["line"] for s in entry["skipped"]] == [2, 3, 4, 5]
    assert all(s["reason"] for s in entry["skipped"])
    _, out, _ = run("--lenient", BAD_LINES)
    for line in (2, 3, 4, 5):
        assert f"skipped line {line}:" in out


def test_missing_file_and_binary_file_exit_2_without_traceback(tmp_path: Path) -> None:
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    missing = tmp_path / "missing.jsonl"
    code, doc = run_json(missing, binary)
    assert code == 2
    errors = [f["error"] for f in doc["files"]]
    assert errors[0] == f"{missing}: no such file"
    assert str(binary) in errors[1]
    code, out, err = run(missing, binary)
    assert code == 2
    assert "Traceback" not in out + err
    assert "no such file" in err


def test_unknown_rules_exit_2() -> None:
    code, _, err = run("--rules", "bedrock", CLEAN)
    assert code == 2
    assert "unknown provider rules" in err


def test_strict_rules_still_pass_a_clean_file() -> None:
    code, _ = run_json("--rules", "strict", CLEAN)
    assert code == 0


def test_the_installed_entry_point_reports_bad_input_without_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"\x00\xff{not json")
    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run(
        [sys.executable, "-c", "from contextkit.cli import main; main()", "validate", str(junk)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stdout + result.stderr
    assert "junk.json" in result.stderr


# --------------------------------------------------------------------------------------------------
# fuzzed input: whatever the bytes, an exit code in {0, 1, 2}, one JSON document, no traceback


def _corrupt(data: bytes, how: str, at: int, junk: bytes) -> bytes:
    at %= len(data) + 1
    if how == "truncate":
        return data[:at]
    if how == "replace":
        return data[:at] + junk + data[at + len(junk) :]
    if how == "insert":
        return data[:at] + junk + data[at:]
    return junk


@settings(max_examples=80, deadline=None)
@given(
    source=st.sampled_from([CLEAN, DANGLING, BAD_LINES]),
    how=st.sampled_from(["truncate", "replace", "insert", "random"]),
    at=st.integers(0, 2_000),
    junk=st.binary(min_size=1, max_size=40)
    | st.sampled_from([b"\n", b'"', b"}", b"\xff\xfe", b"null", b'{"type":1}', b"[]"]),
    lenient=st.booleans(),
)
def test_corrupted_files_never_crash(
    source: Path, how: str, at: int, junk: bytes, lenient: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / source.name
        path.write_bytes(_corrupt(source.read_bytes(), how, at, junk))
        args = ["--lenient", path] if lenient else [path]
        result = runner.invoke(app, ["validate", "--json", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code in (0, 1, 2)
    assert "Traceback" not in result.output
    (entry,) = json.loads(result.stdout)["files"]
    if result.exit_code == 2:
        assert str(path) in entry["error"]
        assert entry["format"] is None
    else:
        assert "error" not in entry
        assert entry["calls"] >= 0


# --------------------------------------------------------------------------------------------------
# the recorded corpus (fails, not skips, when $CONTEXTKIT_CORPUS is set and readers are missing)


def test_corpus_file_reads_leniently_and_validates(corpus: Path, corpus_file: Path) -> None:
    """Every corpus file, one test each (files without a reader yet: strict xfail, issue 18)."""
    code, doc = run_json("--lenient", corpus_file)
    (entry,) = doc["files"]
    assert "error" not in entry, entry["error"]
    assert code in (0, 1)
    assert entry["calls"] > 0


def test_corpus_every_readable_file_reads_in_one_run(corpus: Path) -> None:
    files = readable_corpus_files(corpus)
    assert files, f"no session files under {corpus}"
    code, doc = run_json("--lenient", *files)
    unreadable = {f["path"]: f["error"] for f in doc["files"] if "error" in f}
    assert unreadable == {}
    assert code in (0, 1)
    assert all(f["calls"] > 0 for f in doc["files"]), [f["path"] for f in doc["files"]]


def test_corpus_pending_readers_name_files_that_exist(corpus: Path) -> None:
    """A stale entry of the pending table would leave a file out of the corpus loops unseen (the
    table is empty while every corpus file has a reader)."""
    for name in PENDING_READERS:
        assert (corpus / name).is_file(), name
    assert len(corpus_files(corpus)) - len(readable_corpus_files(corpus)) == len(PENDING_READERS)


def test_corpus_exact_requests_that_got_a_response_are_valid(corpus: Path) -> None:
    """A request the provider answered was accepted: validate must not flag it (no false alarm)."""
    rules = rules_for("anthropic")
    checked = 0
    for path in readable_corpus_files(corpus):
        report = check_file(path, lenient=True, rules=rules)
        assert report.error is None, report.error
        loaded = load(path, lenient=True)
        if loaded.format not in ("anthropic", "claude-trace"):
            continue
        for session in loaded.sessions:
            for call in session.calls:
                if call.exact and call.response is not None:
                    assert validate(call.request) == (), (path, call.line)
                    checked += 1
    assert checked > 0


def test_corpus_every_request_repairs_to_valid(corpus: Path) -> None:
    for path in readable_corpus_files(corpus):
        loaded = load(path, lenient=True)
        for session in loaded.sessions:
            for call in session.calls:
                fixed, receipts = repair(call.request)
                assert validate(fixed) == (), (path, call.line)
                assert (fixed is call.request) == (not receipts)
