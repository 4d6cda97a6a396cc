"""The unit of work of a fleet run: one session file in, its rows out.

Contract: :func:`process_file` is a pure function of the file's content and the
:class:`FleetConfig` (plus the strategy keys it needs): it reads the file, replays every session in
it (subagents included, as sessions of their own) under each spec, and reduces each replay to one
flat row (:data:`contextkit.fleet.SESSION_COLUMNS`) and, with ``per_call``, one row per call. No
replay, view or request outlives the call: what goes back to the caller is plain dicts, so a
worker's memory is one file's and the caller's is the rows of the files in flight. It never
raises for a file it cannot read: the outcome says ``error`` (unreadable, bad record) or
``skipped`` (no reader recognises a file found in a folder), with the reason, and carries one row
per spec saying so, so ``--resume`` does not retry it and the output lists it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contextkit.accounting import CacheDiagnosis, diagnose_cache
from contextkit.errors import ContextkitError, UnknownFormatError
from contextkit.fleet._config import FleetConfig
from contextkit.fleet._walk import FileTask
from contextkit.formats import load
from contextkit.replay import AS_RECORDED, Replay, run_strategy, with_default_model
from contextkit.session import Session
from contextkit.strategies import clear_message_memo


@dataclass(frozen=True)
class FileOutcome:
    """One file's rows: ``status`` ``ok`` (sessions replayed), ``empty`` (no model call),
    ``error`` or ``skipped`` (with ``error`` saying why)."""

    task: FileTask
    status: str
    sessions: tuple[dict[str, Any], ...] = ()
    calls: tuple[dict[str, Any], ...] = ()
    error: str | None = None
    computed: int = field(default=0)
    """Session x strategy replays this outcome took (0 for a file not read)."""


def process_file(task: FileTask, config: FleetConfig, keys: Mapping[str, str]) -> FileOutcome:
    """Every session of ``task``'s file under every spec of ``keys`` (``spec -> strategy key``,
    the specs still to compute for this file). The strategies' message memo is cleared after
    each file: it would otherwise keep the messages of the last 200,000 alive in a worker."""
    try:
        return _process(task, config, keys)
    finally:
        clear_message_memo()


def _process(task: FileTask, config: FleetConfig, keys: Mapping[str, str]) -> FileOutcome:
    if task.error is not None:
        return _failed(task, keys, "error", task.error)
    try:
        loaded = load(task.path, lenient=config.lenient, format=config.format)
    except UnknownFormatError as exc:
        if task.named:
            return _failed(task, keys, "error", str(exc))
        return _failed(task, keys, "skipped", exc.reason)
    except ContextkitError as exc:
        return _failed(task, keys, "error", str(exc))
    base = _file_columns(task, loaded.format) | {"skipped_records": len(loaded.skipped)}
    sessions: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    found = [s for top in loaded.sessions for s in top.all_sessions() if s.calls]
    for index, raw in enumerate(found):
        session = with_default_model(raw, config.model)
        doctor = diagnose_cache(session) if config.doctor else None
        for spec, key in keys.items():
            result = run_strategy(session, spec)
            cols = base | _session_columns(session, index, task.path) | {"strategy_key": key}
            sessions.append(cols | _result_columns(result, doctor if spec == AS_RECORDED else None))
            if config.per_call:
                calls.extend(_call_rows(cols, result, doctor if spec == AS_RECORDED else None))
    if not found:
        return _failed(task, keys, "empty", None, base)
    return FileOutcome(task, "ok", tuple(sessions), tuple(calls), None, len(sessions))


def _failed(
    task: FileTask,
    keys: Mapping[str, str],
    status: str,
    error: str | None,
    base: Mapping[str, Any] | None = None,
) -> FileOutcome:
    cols = dict(base) if base is not None else _file_columns(task, None)
    rows = tuple(
        cols | {"strategy": spec, "strategy_key": key, "status": status, "error": error}
        for spec, key in keys.items()
    )
    return FileOutcome(task, status, rows, (), error)


def _file_columns(task: FileTask, format: str | None) -> dict[str, Any]:
    return {
        "file": task.path,
        "file_size": task.size,
        "file_mtime_ns": task.mtime_ns,
        "format": format,
    }


def project_of(path: str) -> str:
    """The folder that names a session's project: the file's parent folder (Claude Code:
    ``projects/<project>/<id>.jsonl``), above a ``subagents`` folder for a subagent file."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.basename(folder) == "subagents":
        folder = os.path.dirname(os.path.dirname(folder))
    return os.path.basename(folder)


def _session_columns(session: Session, index: int, path: str) -> dict[str, Any]:
    times = [c.timestamp for c in session.calls if c.timestamp is not None]
    start = _utc(min(times)) if times else None
    return {
        "session_index": index,
        "session_id": session.session_id,
        "parent_session_id": session.parent_session_id,
        "project": project_of(path),
        "model": session.model,
        "started_at": start,
        "ended_at": _utc(max(times)) if times else None,
        "day": start.date() if start is not None else None,
        "calls": len(session.calls),
    }


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _result_columns(result: Replay, doctor: CacheDiagnosis | None) -> dict[str, Any]:
    s = result.summary()
    row: dict[str, Any] = {
        "strategy": result.strategy,
        "status": "ok",
        "error": None,
        "cost_usd": s["cost_usd"],
        "recorded_cost_usd": result.recorded_cost_usd,
        "simulated_cost_usd": result.cost_usd,
        "harness_compaction_usd": s["harness_compaction_usd"],
        "input_tokens": s["input_tokens"],
        "cache_read_tokens": s["cache_read"],
        "cache_write_tokens": s["cache_write"],
        "output_tokens": s["output"],
        "peak_context_tokens": s["peak_context_tokens"],
        "compactions": s["compactions"],
        "overflow_calls": s["overflow_calls"],
        "recall": s["recall"],
    }
    if doctor is not None:
        causes = doctor.by_cause()
        calls: dict[str, set[int]] = {}
        for event in (e for c in doctor.calls for e in c.events):
            calls.setdefault(event.cause, set()).add(event.call)
        row["cache_hit_rate"] = doctor.hit_rate
        row["write_amplification"] = doctor.write_amplification
        row["cache_causes"] = [
            {"cause": cause, "calls": len(calls[cause]), "tokens": tokens, "usd": usd}
            for cause, (tokens, usd) in causes.items()
        ]
    return row


def _call_rows(
    cols: Mapping[str, Any], result: Replay, doctor: CacheDiagnosis | None
) -> list[dict[str, Any]]:
    names = ("file", "file_size", "file_mtime_ns", "strategy_key", "session_index", "session_id")
    head = {k: cols[k] for k in (*names, "project")}
    head["strategy"] = result.strategy
    out = []
    for row in result.rows:
        call = result.session.calls[row.call]
        cause, tokens = _miss(doctor, row.call)
        out.append(
            head
            | {
                "call": row.call,
                "timestamp": _utc(call.timestamp) if call.timestamp is not None else None,
                "model": call.model or call.request.model,
                "context_tokens": row.context_tokens,
                "input_tokens": row.input_tokens,
                "cache_read_tokens": row.cache_read,
                "cache_write_tokens": row.cache_write,
                "output_tokens": row.output_tokens,
                "cost_usd": row.cost_usd,
                "compacted": row.compacted,
                "tokens_freed": row.tokens_freed,
                "overflow": row.overflow,
                "miss_cause": cause,
                "miss_tokens": tokens,
            }
        )
    return out


def _miss(doctor: CacheDiagnosis | None, call: int) -> tuple[str | None, int | None]:
    """The cause that wrote the most of this call's cache writes (the doctor's), if any."""
    if doctor is None or call >= len(doctor.calls) or not doctor.calls[call].events:
        return None, None
    top = max(doctor.calls[call].events, key=lambda e: e.tokens)
    return top.cause, top.tokens
