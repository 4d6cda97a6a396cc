"""The live loop: :class:`ContextEngine` holds tape and view, applies a strategy before each
call, places cache breakpoints, records responses and checkpoints to disk, and (with
``retrieval=True``) offers a retrieve tool that gets an evicted result back from the tape. The
client integrations are :mod:`contextkit.engine.anthropic` and :mod:`contextkit.engine.openai`
(imported on use: each loads its SDK).
"""

from __future__ import annotations

from contextkit.engine._boundary import APIS, Api, InputError, ResponseError, request_body
from contextkit.engine._breakpoints import (
    EPHEMERAL,
    MAX_BREAKPOINTS,
    BreakpointTally,
    count_breakpoints,
    place_breakpoints,
)
from contextkit.engine._checkpoint import (
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    CheckpointError,
    CheckpointWriter,
    EngineState,
    encode_checkpoint,
    read_checkpoint,
)
from contextkit.engine._engine import (
    FINAL_STOPS,
    INCOMPLETE_STOPS,
    AuditError,
    ContextEngine,
    Prepared,
    Verdict,
    check_budget,
    engine_strategy,
    verdict,
    write_atomic,
)
from contextkit.engine._retrieve import (
    RETRIEVE_TOOL,
    RETRIEVE_TOOL_NAME,
    retrieval_calls,
    retrieve_tool_schema,
    with_retrieve_tool,
)

__all__ = [
    "APIS",
    "CHECKPOINT_FORMAT",
    "CHECKPOINT_VERSION",
    "EPHEMERAL",
    "FINAL_STOPS",
    "INCOMPLETE_STOPS",
    "MAX_BREAKPOINTS",
    "RETRIEVE_TOOL",
    "RETRIEVE_TOOL_NAME",
    "Api",
    "AuditError",
    "BreakpointTally",
    "CheckpointError",
    "CheckpointWriter",
    "ContextEngine",
    "EngineState",
    "InputError",
    "Prepared",
    "ResponseError",
    "Verdict",
    "check_budget",
    "count_breakpoints",
    "encode_checkpoint",
    "engine_strategy",
    "place_breakpoints",
    "read_checkpoint",
    "request_body",
    "retrieval_calls",
    "retrieve_tool_schema",
    "verdict",
    "with_retrieve_tool",
    "write_atomic",
]
