"""The accountant: per-call ledgers priced as providers bill (cache writes, reads, TTLs), the same
figures from recorded usage, and a session's breakdown (:func:`inspect_session`). What a file
omits of what the harness sent (hidden prefix, content after compactions, mid-session steps,
resumes) is measured in one place, :func:`measure_omitted`, as one value that pricing consumes.
Plots are in :mod:`contextkit.accounting.plots` (matplotlib, loaded on use).
"""

from __future__ import annotations

from contextkit.accounting._calibrate import (
    MIN_PAIRS,
    SessionFactor,
    session_counter,
    session_factor,
)
from contextkit.accounting._content_gaps import (
    ContentGap,
    content_gaps,
    rescaled_gap,
    with_content_gaps,
)
from contextkit.accounting._doctor import (
    CAUSES,
    CacheDiagnosis,
    CacheEvent,
    CallCache,
    diagnose_cache,
    diagnosis_json,
)
from contextkit.accounting._gaps import (
    CompactionGap,
    compaction_gaps,
    resized_prefix,
    resumed_prefix,
    with_gaps,
)
from contextkit.accounting._inspect import (
    PARTS,
    SessionReport,
    ToolResultCost,
    heaviest_tool_results,
    inspect_session,
    report_json,
    split_user_text,
)
from contextkit.accounting._ledger import (
    CLASSES,
    Ledger,
    OutputSource,
    TokenTable,
    call_prices,
    default_cache,
    estimated_outputs_note,
    ledger_totals,
    price_session,
)
from contextkit.accounting._misses import (
    NO_MISSES,
    MissModel,
    RouteLoss,
    TurnReset,
    apply_misses,
    fit_miss_model,
    load_miss_model,
    save_miss_model,
    session_miss_model,
    shipped_miss_model,
)
from contextkit.accounting._omitted import (
    Omitted,
    OmittedContent,
    measure_omitted,
    omitted_content,
)
from contextkit.accounting._thinking import (
    describe_thinking,
    omitted_thinking,
    with_thinking,
)
from contextkit.accounting._usage import (
    BY,
    By,
    UsageGroup,
    UsageRow,
    group_usage,
    in_range,
    total,
    usage_blocks,
    usage_rows,
)

__all__ = [
    "BY",
    "CAUSES",
    "CLASSES",
    "MIN_PAIRS",
    "NO_MISSES",
    "PARTS",
    "By",
    "CacheDiagnosis",
    "CacheEvent",
    "CallCache",
    "CompactionGap",
    "ContentGap",
    "Ledger",
    "MissModel",
    "Omitted",
    "OmittedContent",
    "OutputSource",
    "RouteLoss",
    "SessionFactor",
    "SessionReport",
    "TokenTable",
    "ToolResultCost",
    "TurnReset",
    "UsageGroup",
    "UsageRow",
    "apply_misses",
    "call_prices",
    "compaction_gaps",
    "content_gaps",
    "default_cache",
    "describe_thinking",
    "diagnose_cache",
    "diagnosis_json",
    "estimated_outputs_note",
    "fit_miss_model",
    "group_usage",
    "heaviest_tool_results",
    "in_range",
    "inspect_session",
    "ledger_totals",
    "load_miss_model",
    "measure_omitted",
    "omitted_content",
    "omitted_thinking",
    "price_session",
    "report_json",
    "rescaled_gap",
    "resized_prefix",
    "resumed_prefix",
    "save_miss_model",
    "session_counter",
    "session_factor",
    "session_miss_model",
    "shipped_miss_model",
    "split_user_text",
    "total",
    "usage_blocks",
    "usage_rows",
    "with_content_gaps",
    "with_gaps",
    "with_thinking",
]
