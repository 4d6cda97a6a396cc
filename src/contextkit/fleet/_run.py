"""A fleet run: walk, compute what is not written yet, write rows as they come, merge.

Contract: :func:`run_fleet` walks ``paths`` lazily (:func:`walk_files`), skips every file whose
rows for a strategy are already in the output (``resume``: same path, size, mtime and strategy
key), sends the rest to the engine, and hands each outcome to the output as it arrives. Memory
holds the files in flight, at most one part's rows, the keys already written and the keys seen
(path, size, mtime, strategy key per file: small beside a session), and a few counters: not the
sessions. An interruption (an exception, Ctrl-C) still writes every row computed before it, then
propagates; the next run with ``resume`` computes only what is missing. Unreadable files are rows
too (``status`` ``error``) and are listed in the :class:`FleetSummary`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextkit.fleet._config import FleetConfig
from contextkit.fleet._engines import Engine, Item, map_files
from contextkit.fleet._output import Key, ParquetOutput
from contextkit.fleet._schema import import_pyarrow
from contextkit.fleet._walk import walk_files
from contextkit.fleet._work import FileOutcome


@dataclass
class FleetSummary:
    """What a run did: files walked, computed and reused; sessions x strategies computed; the
    files it could not read or that no reader takes, with why; per strategy, totals over every
    ``ok`` row of the output (:func:`summarize`)."""

    out: Path
    files: int = 0
    computed_files: int = 0
    reused_files: int = 0
    computed: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, outcome: FileOutcome) -> None:
        self.computed_files += 1
        self.computed += outcome.computed
        if outcome.status in ("error", "skipped"):
            into = self.errors if outcome.status == "error" else self.skipped
            into.append((outcome.task.path, outcome.error or ""))

    def to_json(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "files": self.files,
            "computed_files": self.computed_files,
            "reused_files": self.reused_files,
            "computed": self.computed,
            "errors": [{"path": p, "error": e} for p, e in self.errors],
            "skipped": [{"path": p, "reason": e} for p, e in self.skipped],
            "strategies": self.strategies,
        }


def run_fleet(
    paths: Sequence[str | Path],
    config: FleetConfig,
    out: Path,
    *,
    engine: Engine = "process",
    jobs: int | None = None,
    resume: bool = False,
    on_file: Callable[[FileOutcome], None] | None = None,
    flush_rows: int = 2000,
    flush_s: float = 10.0,
) -> FleetSummary:
    """``config``'s work over every session file under ``paths``, written to ``out`` (Parquet;
    per-call rows to ``<stem>.calls.parquet``). See the module docstring."""
    keys = config.strategy_keys()
    sink = ParquetOutput(
        out, per_call=config.per_call, resume=resume, flush_rows=flush_rows, flush_s=flush_s
    )
    done = sink.done_keys() if resume else set()
    summary = FleetSummary(out)
    seen: set[Key] = set()

    def pending() -> Iterator[Item]:
        for task in walk_files(paths):
            summary.files += 1
            todo = {}
            for spec, key in keys.items():
                seen.add((*task.key, key))
                if (*task.key, key) not in done:
                    todo[spec] = key
            if todo:
                yield task, todo
            else:
                summary.reused_files += 1

    try:
        for outcome in map_files(pending(), config, engine, jobs):
            sink.add(outcome)
            summary.add(outcome)
            if on_file is not None:
                on_file(outcome)
    finally:
        sink.flush()  # interrupted or not, what was computed is written
    sink.finish(seen)
    summary.strategies = summarize(out)
    return summary


def summarize(out: Path) -> dict[str, dict[str, Any]]:
    """Per strategy over the ``ok`` rows of ``out``: sessions, calls, cost (summed where known,
    with how many sessions had no price) and mean recall; read one row group at a time."""
    pa = import_pyarrow()
    file = pa.parquet.ParquetFile(out)
    totals: dict[str, dict[str, Any]] = {}
    columns = ["strategy", "status", "calls", "cost_usd", "recall"]
    for i in range(file.num_row_groups):
        group = file.read_row_group(i, columns=columns).to_pylist()
        for row in group:
            if row["status"] != "ok":
                continue
            t = totals.setdefault(
                row["strategy"],
                {"sessions": 0, "calls": 0, "cost_usd": 0.0, "unpriced": 0, "recall": 0.0},
            )
            t["sessions"] += 1
            t["calls"] += row["calls"]
            t["recall"] += row["recall"]
            if row["cost_usd"] is None:
                t["unpriced"] += 1
            else:
                t["cost_usd"] += row["cost_usd"]
    for t in totals.values():
        t["recall"] = t["recall"] / t["sessions"]
    return totals
