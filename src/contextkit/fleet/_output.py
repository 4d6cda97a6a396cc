"""Rows to Parquet as they come, in parts that survive an interrupted run.

Contract: :class:`ParquetOutput` buffers at most ``flush_rows`` rows (or ``flush_s`` seconds of
them) and then writes them as one part file in ``<out>.parts/`` (written to a temporary name and
renamed, so a part is either whole or absent; a calls part is written before its sessions part,
and a calls part without its sessions part is discarded). What is in a whole part counts as
written: :meth:`done_keys` reads back the keys (file, size, mtime, strategy key) of the previous
output and of every whole part, and ``--resume`` skips them. :meth:`finish` streams the previous
output (rows whose key this run saw again) and every part, one row group at a time, into
``<out>`` (and ``<stem>.calls.parquet`` with per-call rows), then removes the parts: memory stays
that of one row group whatever the number of sessions.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextkit.fleet._schema import CALL_COLUMNS, SESSION_COLUMNS, arrow_schema, import_pyarrow
from contextkit.fleet._work import FileOutcome

Key = tuple[str, int, int, str]
_KEY_COLUMNS = ["file", "file_size", "file_mtime_ns", "strategy_key"]


def calls_path(out: Path) -> Path:
    """Where the per-call rows of ``out`` go: ``results.parquet`` -> ``results.calls.parquet``."""
    return out.with_name(out.stem + ".calls" + out.suffix)


class ParquetOutput:
    def __init__(
        self,
        out: Path,
        *,
        per_call: bool,
        resume: bool,
        flush_rows: int = 2000,
        flush_s: float = 10.0,
    ) -> None:
        self.pa = import_pyarrow()
        self.out = out
        self.per_call = per_call
        self.parts = out.with_name(out.name + ".parts")
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self.sessions_schema = arrow_schema(SESSION_COLUMNS)
        self.calls_schema = arrow_schema(CALL_COLUMNS)
        self._sessions: list[dict[str, Any]] = []
        self._calls: list[dict[str, Any]] = []
        self._last = time.monotonic()
        if not resume and self.parts.exists():
            shutil.rmtree(self.parts)  # a fresh run: what an interrupted one left is not kept
        self.parts.mkdir(parents=True, exist_ok=True)
        self._drop_partial()
        self._next = 1 + max((int(p.stem[2:]) for p in self._session_parts()), default=0)

    # --- reading back what is written ----------------------------------------------------

    def _session_parts(self) -> list[Path]:
        return sorted(self.parts.glob("s-*.parquet"))

    def _drop_partial(self) -> None:
        """Temporary files and calls parts whose sessions part never landed."""
        for tmp in self.parts.glob("*.tmp"):
            tmp.unlink()
        landed = {p.name[2:] for p in self._session_parts()}
        for part in self.parts.glob("c-*.parquet"):
            if part.name[2:] not in landed:
                part.unlink()

    def done_keys(self) -> set[Key]:
        """The keys of every row already written (previous output and whole parts)."""
        pq = self.pa.parquet
        done: set[Key] = set()
        sources = [self.out] if self.out.exists() else []
        for path in [*sources, *self._session_parts()]:
            table = pq.read_table(path, columns=_KEY_COLUMNS)
            done.update(zip(*(table.column(c).to_pylist() for c in _KEY_COLUMNS), strict=True))
        return done

    # --- writing --------------------------------------------------------------------------

    def add(self, outcome: FileOutcome) -> None:
        self._sessions.extend(outcome.sessions)
        if self.per_call:
            self._calls.extend(outcome.calls)
        full = len(self._sessions) + len(self._calls) >= self.flush_rows
        if full or time.monotonic() - self._last >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        self._last = time.monotonic()
        if not self._sessions:
            return
        name = f"{self._next:06d}.parquet"
        if self._calls:
            self._write(self._calls, self.calls_schema, self.parts / ("c-" + name))
        self._write(self._sessions, self.sessions_schema, self.parts / ("s-" + name))
        self._next += 1
        self._sessions, self._calls = [], []

    def _write(self, rows: list[dict[str, Any]], schema: Any, path: Path) -> None:
        table = self.pa.Table.from_pylist(rows, schema=schema)
        tmp = path.with_name(path.name + ".tmp")
        self.pa.parquet.write_table(table, tmp)
        os.replace(tmp, path)

    def finish(self, seen: set[Key]) -> None:
        """Previous output (rows seen again) and parts merged into ``out``; parts removed."""
        self.flush()
        previous = [self.out] if self.out.exists() else []
        parts = self._session_parts()
        self._merge([*previous, *parts], self.out, self.sessions_schema, seen)
        if self.per_call:
            target = calls_path(self.out)
            old = [target] if target.exists() and previous else []
            calls = [p.with_name("c-" + p.name[2:]) for p in parts]
            self._merge([*old, *(c for c in calls if c.exists())], target, self.calls_schema, seen)
        shutil.rmtree(self.parts)

    def _merge(self, sources: list[Path], target: Path, schema: Any, seen: set[Key]) -> None:
        pq = self.pa.parquet
        tmp = target.with_name(target.name + ".tmp")
        with pq.ParquetWriter(tmp, schema) as writer:
            for batch in self._batches(sources):
                keys = zip(*(batch.column(c).to_pylist() for c in _KEY_COLUMNS), strict=True)
                mask = self.pa.array([k in seen for k in keys], type=self.pa.bool_())
                kept = batch.filter(mask)
                if kept.num_rows:
                    writer.write_table(kept)
        os.replace(tmp, target)

    def _batches(self, sources: list[Path]) -> Iterator[Any]:
        for path in sources:
            file = self.pa.parquet.ParquetFile(path)
            for i in range(file.num_row_groups):
                yield file.read_row_group(i)
