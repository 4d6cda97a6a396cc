"""Fleet runs: the same rows on every engine, a lazy walk, bounded work in flight, unreadable files
reported, interrupted runs resumed with no session computed twice and none lost."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import signal
import time
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import contextkit.fleet._engines as engines
from contextkit.cli import app
from contextkit.fleet import (
    CALL_COLUMNS,
    SESSION_COLUMNS,
    FileOutcome,
    FileTask,
    FleetConfig,
    calls_path,
    import_ray,
    map_files,
    process_file,
    run_fleet,
    walk_files,
)
from contextkit.fleet.synthetic import write_fleet
from contextkit.formats import load
from contextkit.messages import Message

# Some corpus files name no model (or a placeholder): their cost is null, with a warning.
pytestmark = pytest.mark.filterwarnings("ignore::contextkit.pricing.UnknownPriceWarning")

DOCS = Path(__file__).parents[2] / "docs" / "fleet.md"
FLEET = 16
CONFIG = FleetConfig(specs=("as-recorded", "evict-tool-results"), doctor=True, per_call=True)
SMALL = (
    "spotter/short.jsonl",
    "spotter/tool_heavy.jsonl",
    "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "swe-agent/function_calling_simple.traj",
    "openhands/basic.json",
    "codemie-gemini/session-2026-01-16T11-01-file-ops-37b7abef.json",
    "mini-swe-agent",  # a folder: walked
    "SOURCES.md",  # named, no reader: an error row
)


def rows(path: Path) -> list[dict[str, Any]]:
    return sorted(
        pq.read_table(path).to_pylist(),
        key=lambda r: (r["file"], r["session_index"] or 0, r["strategy"]),
    )


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fleet")
    write_fleet(folder, FLEET, seed=3, max_calls=25)
    return folder


@pytest.fixture(scope="module")
def subset(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The corpus subset run serially: the reference every engine must match."""
    paths = [corpus / p for p in SMALL]
    out = tmp_path_factory.mktemp("serial") / "serial.parquet"
    summary = run_fleet(paths, CONFIG, out, engine="serial")
    return {"paths": paths, "rows": rows(out), "calls": rows(calls_path(out)), "summary": summary}


# --- the same rows everywhere ---------------------------------------------------------------


@pytest.mark.corpus
def test_serial_rows_are_complete(subset: dict[str, Any]) -> None:
    found = subset["rows"]
    ok = [r for r in found if r["status"] == "ok"]
    assert {r["strategy"] for r in ok} == {"as-recorded", "evict-tool-results"}
    assert len(ok) >= 14  # two strategies x every session with calls
    assert {c.name for c in SESSION_COLUMNS} == set(found[0])
    recorded = [r for r in ok if r["strategy"] == "as-recorded" and r["recorded_cost_usd"]]
    assert recorded
    assert all(r["cache_causes"] for r in recorded)
    assert all(r["cache_causes"] is None for r in ok if r["strategy"] != "as-recorded")
    calls = subset["calls"]
    assert sum(r["calls"] for r in ok) == len(calls)
    errors = [r for r in found if r["status"] == "error"]
    assert {Path(r["file"]).name for r in errors} == {"SOURCES.md"}
    assert "not a recognised session format" in errors[0]["error"]
    assert [Path(p).name for p, _ in subset["summary"].errors] == ["SOURCES.md"]


@pytest.mark.corpus
def test_the_process_pool_writes_the_same_rows(subset: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "pool.parquet"
    run_fleet(subset["paths"], CONFIG, out, engine="process", jobs=2)
    assert rows(out) == subset["rows"]
    assert rows(calls_path(out)) == subset["calls"]


@pytest.mark.corpus
@pytest.mark.slow
def test_ray_tasks_write_the_same_rows(subset: dict[str, Any], tmp_path: Path) -> None:
    try:
        ray = import_ray()
    except Exception as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have ray (dev group): {exc}")
        pytest.skip(str(exc))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "ray.parquet"
        run_fleet(subset["paths"], CONFIG, out, engine="ray")
        assert ray.is_initialized()  # the run used the test's cluster and left it running
    finally:
        ray.shutdown()
    assert rows(out) == subset["rows"]
    assert rows(calls_path(out)) == subset["calls"]


# --- lazy walk, bounded flight ---------------------------------------------------------------


def test_walk_is_lazy_sorted_and_skips_linked_subagents(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "s1" / "subagents").mkdir(parents=True)
    for name in ("b/2.jsonl", "a/s1.jsonl", "a/s1/subagents/agent-x.jsonl", "a/notes.txt"):
        (tmp_path / name).write_text("{}\n")
    (tmp_path / "c" / "subagents").mkdir(parents=True)  # no parent file: walked
    (tmp_path / "c" / "subagents" / "agent-y.jsonl").write_text("{}\n")
    walk = walk_files([tmp_path])
    assert isinstance(walk, Iterator)
    found = [Path(t.path).relative_to(tmp_path).as_posix() for t in walk]
    assert found == ["a/s1.jsonl", "b/2.jsonl", "c/subagents/agent-y.jsonl"]


def test_the_engine_pulls_files_only_as_workers_free_up(fleet: Path) -> None:
    pulled = 0

    def items() -> Iterator[tuple[FileTask, Mapping[str, str]]]:
        nonlocal pulled
        for task in walk_files([fleet]):
            pulled += 1
            yield task, FleetConfig().strategy_keys()

    outcomes = map_files(items(), FleetConfig(), "process", jobs=2)
    first = next(outcomes)
    assert first.status == "ok"
    assert pulled <= 2 * 2 + 1  # the window, not the folder
    assert isinstance(outcomes, Generator)
    outcomes.close()  # stops the pool


# --- unreadable files ------------------------------------------------------------------------


def test_unreadable_files_are_rows_listed_and_exit_1(fleet: Path, tmp_path: Path) -> None:
    """Some files unreadable (the rest read): exit 1, as in every command over many files."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    good = next(fleet.rglob("*.jsonl"))
    (folder / "good.jsonl").write_bytes(good.read_bytes())
    lines = good.read_text().splitlines()
    (folder / "broken.jsonl").write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    (folder / "notes.md").write_text("# not a session\n")
    out = tmp_path / "r.parquet"
    result = CliRunner().invoke(
        app, ["compare", str(folder), "-s", "as-recorded", "--out", str(out), "-q", "--json"]
    )
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert [Path(e["path"]).name for e in doc["errors"]] == ["broken.jsonl"]
    assert [Path(e["path"]).name for e in doc["skipped"]] == ["notes.md"]
    assert "broken.jsonl:2" in result.stderr  # file and line
    status = {Path(r["file"]).name: r["status"] for r in rows(out)}
    assert status == {"good.jsonl": "ok", "broken.jsonl": "error", "notes.md": "skipped"}


# --- resume ----------------------------------------------------------------------------------


class Counting:
    """process_file that counts what it computed, and raises at the ``fail_at``-th file."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.files: list[str] = []
        self.fail_at = fail_at

    def __call__(self, task: FileTask, config: FleetConfig, keys: Mapping[str, str]) -> Any:
        if self.fail_at is not None and len(self.files) + 1 == self.fail_at:
            raise KeyboardInterrupt  # as Ctrl-C would, mid-run
        self.files.append(task.path)
        return process_file(task, config, keys)


def test_an_interrupted_run_resumes_without_recomputing(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = tmp_path / "ref.parquet"
    run_fleet([fleet], CONFIG, reference, engine="serial")
    out = tmp_path / "out.parquet"
    first = Counting(fail_at=7)
    monkeypatch.setattr(engines, "process_file", first)
    with pytest.raises(KeyboardInterrupt):
        run_fleet([fleet], CONFIG, out, engine="serial", flush_rows=7)
    assert len(first.files) == 6
    assert not out.exists()  # only parts: the run did not finish
    second = Counting()
    monkeypatch.setattr(engines, "process_file", second)
    summary = run_fleet([fleet], CONFIG, out, engine="serial", resume=True)
    assert sorted(first.files + second.files) == sorted(str(p) for p in fleet.rglob("*.jsonl"))
    assert summary.reused_files == 6
    assert summary.computed_files == FLEET - 6
    assert rows(out) == rows(reference)  # none lost, none twice
    assert rows(calls_path(out)) == rows(calls_path(reference))
    third = Counting()
    monkeypatch.setattr(engines, "process_file", third)
    run_fleet([fleet], CONFIG, out, engine="serial", resume=True)
    assert third.files == []
    assert rows(out) == rows(reference)


def _run_until_killed(fleet: Path, out: Path) -> None:
    run_fleet([fleet], FleetConfig(), out, engine="serial", flush_rows=1)


def test_a_killed_run_resumes_from_what_it_wrote(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "killed.parquet"
    child = multiprocessing.get_context("fork").Process(target=_run_until_killed, args=(fleet, out))
    child.start()
    parts = out.with_name(out.name + ".parts")
    deadline = time.monotonic() + 60
    while len(list(parts.glob("s-*.parquet"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    written = {r["file"] for p in parts.glob("s-*.parquet") for r in pq.read_table(p).to_pylist()}
    assert 4 <= len(written) < FLEET
    counting = Counting()
    monkeypatch.setattr(engines, "process_file", counting)
    run_fleet([fleet], FleetConfig(), out, engine="serial", resume=True)
    assert set(counting.files) == {str(p) for p in fleet.rglob("*.jsonl")} - written
    final = rows(out)
    assert len(final) == FLEET
    assert len({r["file"] for r in final}) == FLEET


def test_a_changed_file_or_strategy_is_recomputed(fleet: Path, tmp_path: Path) -> None:
    folder = tmp_path / "two"
    folder.mkdir()
    for i, path in enumerate(sorted(fleet.rglob("*.jsonl"))[:2]):
        (folder / f"{i}.jsonl").write_bytes(path.read_bytes())
    out = tmp_path / "o.parquet"
    first = run_fleet([folder], FleetConfig(), out, engine="serial")
    assert first.computed_files == 2
    os.utime(folder / "0.jsonl", ns=(1, 1))
    again = run_fleet([folder], FleetConfig(), out, engine="serial", resume=True)
    assert (again.computed_files, again.reused_files) == (1, 1)
    assert len(rows(out)) == 2  # the stale row of the changed file is gone
    more = FleetConfig(specs=("as-recorded", "sliding-window"))
    grown = run_fleet([folder], more, out, engine="serial", resume=True)
    assert grown.computed == 2  # only the new strategy, for both files
    assert sorted(r["strategy"] for r in rows(out)) == ["as-recorded"] * 2 + ["sliding-window"] * 2


def test_strategy_keys_name_settings_not_names() -> None:
    a = FleetConfig(specs=("evict-tool-results",)).strategy_keys()
    b = FleetConfig(specs=("evict-tool-results",), per_call=True).strategy_keys()
    assert a != b
    assert a == FleetConfig(specs=("evict-tool-results",)).strategy_keys()
    peers = FleetConfig(specs=("langchain-trim", "headroom-proxy")).strategy_keys()
    assert len(set(peers.values())) == 2  # a fleet run takes the peers too, keyed by name


# --- CLI -------------------------------------------------------------------------------------


def test_inspect_cost_and_compare_write_parquet(fleet: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    inspect_out = tmp_path / "i.parquet"
    result = runner.invoke(
        app, ["inspect", str(fleet), "--cache", "--out", str(inspect_out), "--per-call", "-q"]
    )
    assert result.exit_code == 0, result.output
    assert "totals per strategy" in result.stdout
    found = rows(inspect_out)
    assert len(found) == FLEET
    assert all(r["cache_causes"] for r in found)
    calls = pq.read_table(calls_path(inspect_out))
    assert {c.name for c in CALL_COLUMNS} == set(calls.column_names)
    cost_out = tmp_path / "c.parquet"
    what = ["--strategy", "sliding-window", "--json", "--engine", "serial"]
    result = runner.invoke(app, ["cost", str(fleet), "--out", str(cost_out), *what])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc["strategies"]) == {"as-recorded", "sliding-window"}
    assert doc["strategies"]["as-recorded"]["sessions"] == FLEET
    again = runner.invoke(
        app,
        ["cost", str(fleet), "--out", str(cost_out), "--resume", "--json", "--engine", "serial"],
    )
    assert json.loads(again.stdout)["reused_files"] == FLEET


@pytest.mark.parametrize(
    "args",
    [["--resume"], ["--per-call"], ["--engine", "ray"], ["--out", "x.parquet", "--plot", "p.png"]],
)
def test_fleet_options_without_out_or_with_table_options_are_usage_errors(
    fleet: Path, args: list[str]
) -> None:
    result = CliRunner().invoke(app, ["compare", str(fleet), *args])
    assert result.exit_code == 2
    assert "--out" in result.output


def test_unknown_engine_is_a_usage_error(fleet: Path) -> None:
    result = CliRunner().invoke(app, ["compare", str(fleet), "--out", "x.parquet", "--engine", "x"])
    assert result.exit_code == 2
    assert "unknown engine" in result.output


# --- synthetic fleets and the documented schema ----------------------------------------------


def test_synthetic_fleets_are_seeded_and_read_as_claude_code(tmp_path: Path) -> None:
    a = write_fleet(tmp_path / "a", 12, seed=7, max_calls=60)
    b = write_fleet(tmp_path / "b", 12, seed=7, max_calls=60)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert a[0].read_bytes() != write_fleet(tmp_path / "c", 1, seed=8)[0].read_bytes()
    sessions = [load(p).sessions[0] for p in a]
    assert all(load(p).format == "claude-code" for p in a[:3])
    calls = sorted(len(s.calls) for s in sessions)
    assert 3 <= calls[len(calls) // 2] <= 40  # the corpus median is 11
    assert all(c.usage is not None for s in sessions for c in s.calls)
    assert len({p.parent.name for p in a}) > 3


def test_docs_list_every_column_with_its_type() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for column in (*SESSION_COLUMNS, *CALL_COLUMNS):
        assert f"| `{column.name}` | {column.type} |" in text, column.name


def test_outcomes_are_plain_values(fleet: Path) -> None:
    task = next(walk_files([fleet]))
    outcome = process_file(task, CONFIG, CONFIG.strategy_keys())
    assert isinstance(outcome, FileOutcome)
    json.dumps([{k: str(v) for k, v in r.items()} for r in outcome.sessions])
    assert outcome.computed == 2


def _live_messages() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Message))


def test_a_worker_keeps_no_message_of_the_files_it_finished(fleet: Path) -> None:
    """Memory flat in the number of sessions: after each file, nothing (a strategy's identity
    memo, a cached head and its counter) keeps that file's messages alive in the process."""
    tasks = list(walk_files([fleet]))
    keys = CONFIG.strategy_keys()
    process_file(tasks[0], CONFIG, keys)  # what a first file loads once (prices, readers)
    before = _live_messages()
    for task in tasks[1:]:
        assert process_file(task, CONFIG, keys).status == "ok"
    # No growth. (Fewer is possible in a full test run: bounded memos of earlier tests let go.)
    assert _live_messages() <= before
