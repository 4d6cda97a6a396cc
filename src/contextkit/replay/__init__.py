"""Replay: re-run a recorded session call by call under a strategy and score it (cost, cache,
peak context, recall of what later calls needed, the strict measures: copied spans and edit
feasibility), compare strategies over many files, and the hindsight ``oracle`` bound they are
measured against. Plots are in :mod:`contextkit.replay.plots`.
"""

from __future__ import annotations

from contextkit.replay._as_recorded import replay_as_recorded
from contextkit.replay._compare import (
    SESSION_SUFFIXES,
    FileResult,
    Found,
    compare,
    compare_file,
    find_session_files,
    oracle_replay,
    run_strategy,
    with_default_model,
)
from contextkit.replay._marks import (
    place_marks,
)
from contextkit.replay._oracle import (
    BOUND_NOTE,
    ORACLE,
    Oracle,
    OraclePlan,
    plan_oracle,
)
from contextkit.replay._rarity import (
    FactWeights,
    default_weights,
)
from contextkit.replay._recall import (
    CallRecall,
    FactIndex,
    RecallReport,
    extract_facts,
    score_call,
    score_facts,
    score_sets,
    wanted_facts,
    wanted_index,
)
from contextkit.replay._replay import (
    AS_RECORDED,
    ASSUMPTION,
    Replay,
    ReplayRow,
    replay,
)
from contextkit.replay._report import (
    EDIT_FLOOR,
    RULE,
    SPAN_FLOOR,
    best_saving,
    best_strategy,
    can_be_best,
    markdown_table,
    savings,
    session_tables,
    strict_fit,
    total,
)
from contextkit.replay._strict import (
    SPAN_MIN_CHARS,
    CallQuality,
    QualityReport,
    QuoteIndex,
    edit_strings,
    quote_text,
    score_quality,
    span_lines,
)

__all__ = [
    "ASSUMPTION",
    "AS_RECORDED",
    "BOUND_NOTE",
    "EDIT_FLOOR",
    "ORACLE",
    "RULE",
    "SESSION_SUFFIXES",
    "SPAN_FLOOR",
    "SPAN_MIN_CHARS",
    "CallQuality",
    "CallRecall",
    "FactIndex",
    "FactWeights",
    "FileResult",
    "Found",
    "Oracle",
    "OraclePlan",
    "QualityReport",
    "QuoteIndex",
    "RecallReport",
    "Replay",
    "ReplayRow",
    "best_saving",
    "best_strategy",
    "can_be_best",
    "compare",
    "compare_file",
    "default_weights",
    "edit_strings",
    "extract_facts",
    "find_session_files",
    "markdown_table",
    "oracle_replay",
    "place_marks",
    "plan_oracle",
    "quote_text",
    "replay",
    "replay_as_recorded",
    "run_strategy",
    "savings",
    "score_call",
    "score_facts",
    "score_quality",
    "score_sets",
    "session_tables",
    "span_lines",
    "strict_fit",
    "total",
    "wanted_facts",
    "wanted_index",
    "with_default_model",
]
