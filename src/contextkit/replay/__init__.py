"""Replay: re-run a recorded session call by call under a strategy and score it (cost, cache,
peak context, recall of what later calls needed), and compare strategies over many files. Plots
are in :mod:`contextkit.replay.plots`.
"""

from __future__ import annotations

from contextkit.replay._compare import (
    SESSION_SUFFIXES,
    FileResult,
    Found,
    best_saving,
    best_strategy,
    compare,
    compare_file,
    find_session_files,
    markdown_table,
    run_strategy,
    with_default_model,
)
from contextkit.replay._marks import (
    place_marks,
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
    replay_as_recorded,
)

__all__ = [
    "ASSUMPTION",
    "AS_RECORDED",
    "SESSION_SUFFIXES",
    "CallRecall",
    "FactIndex",
    "FileResult",
    "Found",
    "RecallReport",
    "Replay",
    "ReplayRow",
    "best_saving",
    "best_strategy",
    "compare",
    "compare_file",
    "extract_facts",
    "find_session_files",
    "markdown_table",
    "place_marks",
    "replay",
    "replay_as_recorded",
    "run_strategy",
    "score_call",
    "score_facts",
    "score_sets",
    "wanted_facts",
    "wanted_index",
    "with_default_model",
]
