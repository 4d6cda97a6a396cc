"""The columns of a fleet run's output: one table of sessions (one row per session x strategy,
plus one row per spec for a file that could not be read or held no call) and, with ``per_call``,
one table of calls. Each column has a type, a unit and a meaning; ``docs/fleet.md`` lists them
(a test checks it lists exactly these). pyarrow is imported only by :func:`arrow_schema`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contextkit.errors import ContextkitError


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    """``string``, ``int64``, ``int32``, ``float64``, ``bool``, ``timestamp`` (UTC,
    microseconds), ``date`` or ``causes`` (list of struct cause, calls, tokens, usd)."""
    unit: str
    doc: str


_KEY = (
    Column("file", "string", "path", "the session file, as the walk found it"),
    Column("file_size", "int64", "bytes", "its size when read (resume key)"),
    Column("file_mtime_ns", "int64", "ns since epoch", "its modification time (resume key)"),
    Column(
        "strategy_key",
        "string",
        "hex",
        "hash of the strategy's full settings and the run's options (resume key)",
    ),
)

SESSION_COLUMNS: tuple[Column, ...] = (
    *_KEY,
    Column(
        "status",
        "string",
        "",
        "ok, empty (no model call), error (unreadable), skipped "
        "(no reader recognises a file found in a folder)",
    ),
    Column("error", "string", "", "why the file could not be read (status error / skipped)"),
    Column("format", "string", "", "the reader that read the file"),
    Column("skipped_records", "int64", "records", "bad records a lenient read skipped"),
    Column(
        "session_index",
        "int32",
        "",
        "the session's place in its file (subagents after their parent, depth first), from 0",
    ),
    Column("session_id", "string", "", "the session's id where the file names one"),
    Column("parent_session_id", "string", "", "for a subagent: its parent session's id"),
    Column("project", "string", "", "the folder that holds the file (above subagents/)"),
    Column("model", "string", "", "the session's model (the most used one)"),
    Column("started_at", "timestamp", "UTC", "first call's time"),
    Column("ended_at", "timestamp", "UTC", "last call's time"),
    Column("day", "date", "UTC", "the day of started_at"),
    Column("calls", "int32", "calls", "model calls in the session"),
    Column("strategy", "string", "", "as-recorded, a preset, or the spec given"),
    Column(
        "cost_usd",
        "float64",
        "USD",
        "what the session costs under the strategy "
        "(as-recorded: the recorded bill where usage is recorded); null: price unknown",
    ),
    Column("recorded_cost_usd", "float64", "USD", "the recorded bill (null without usage)"),
    Column("simulated_cost_usd", "float64", "USD", "the cache simulator's cost"),
    Column("harness_compaction_usd", "float64", "USD", "the harness's own compaction calls"),
    Column("input_tokens", "int64", "tokens", "uncached input, all calls"),
    Column("cache_read_tokens", "int64", "tokens", "cache reads, all calls"),
    Column("cache_write_tokens", "int64", "tokens", "cache writes (5m + 1h), all calls"),
    Column("output_tokens", "int64", "tokens", "output, all calls"),
    Column("peak_context_tokens", "int64", "tokens", "the largest request"),
    Column("compactions", "int32", "calls", "calls at which the strategy edited the view"),
    Column("overflow_calls", "int32", "calls", "calls over the context window"),
    Column("recall", "float64", "share 0-1", "facts later calls needed that the view held"),
    Column(
        "cache_hit_rate",
        "float64",
        "share 0-1",
        "doctor: recorded reads / input (as-recorded rows of a run with the doctor)",
    ),
    Column("write_amplification", "float64", "ratio", "doctor: written / unique tokens"),
    Column(
        "cache_causes",
        "causes",
        "",
        "doctor: per cause of cache writes, {cause, calls, tokens, usd}",
    ),
)

CALL_COLUMNS: tuple[Column, ...] = (
    *_KEY,
    Column("session_index", "int32", "", "as in the sessions table"),
    Column("session_id", "string", "", "as in the sessions table"),
    Column("project", "string", "", "as in the sessions table"),
    Column("strategy", "string", "", "as in the sessions table"),
    Column("call", "int32", "", "the call's place in its session, from 0"),
    Column("timestamp", "timestamp", "UTC", "when the call was made"),
    Column("model", "string", "", "the call's model"),
    Column("context_tokens", "int64", "tokens", "the request's size under the strategy"),
    Column("input_tokens", "int64", "tokens", "uncached input"),
    Column("cache_read_tokens", "int64", "tokens", "cache reads"),
    Column("cache_write_tokens", "int64", "tokens", "cache writes"),
    Column("output_tokens", "int64", "tokens", "output"),
    Column("cost_usd", "float64", "USD", "the call's cost; null: price unknown"),
    Column("compacted", "bool", "", "the strategy edited the view at this call"),
    Column("tokens_freed", "int64", "tokens", "what that edit removed"),
    Column("overflow", "bool", "", "the request was over the context window"),
    Column(
        "miss_cause",
        "string",
        "",
        "doctor (as-recorded): the cause of most of the call's cache writes",
    ),
    Column("miss_tokens", "int64", "tokens", "doctor: the tokens that cause wrote"),
)


def arrow_schema(columns: tuple[Column, ...]) -> Any:
    """The pyarrow schema of ``columns`` (pyarrow imported here: the ``fleet`` extra)."""
    pa = import_pyarrow()
    causes = pa.list_(
        pa.struct(
            [
                ("cause", pa.string()),
                ("calls", pa.int32()),
                ("tokens", pa.int64()),
                ("usd", pa.float64()),
            ]
        )
    )
    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "int32": pa.int32(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "date": pa.date32(),
        "causes": causes,
    }
    return pa.schema([(c.name, types[c.type]) for c in columns])


def import_pyarrow() -> Any:
    try:
        import pyarrow as pa  # noqa: PLC0415  (optional extra, imported where needed)
        import pyarrow.parquet  # noqa: PLC0415  (registers pa.parquet)
    except ImportError:
        raise ContextkitError(
            "--out needs pyarrow: install the fleet extra (pip install 'contextkit[fleet]')"
        ) from None
    return pa
