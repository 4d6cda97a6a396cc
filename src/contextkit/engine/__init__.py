"""The live loop: :class:`ContextEngine` holds tape and view, applies a strategy before each
call, places cache breakpoints, records responses and checkpoints to disk. The client integration
is :mod:`contextkit.engine.anthropic` (imported on use: it loads the SDK).
"""

from __future__ import annotations

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
    EPHEMERAL,
    FINAL_STOPS,
    INCOMPLETE_STOPS,
    MAX_BREAKPOINTS,
    BreakpointTally,
    ContextEngine,
    Prepared,
    Verdict,
    count_breakpoints,
    place_breakpoints,
    verdict,
    write_atomic,
)

__all__ = [
    "CHECKPOINT_FORMAT",
    "CHECKPOINT_VERSION",
    "EPHEMERAL",
    "FINAL_STOPS",
    "INCOMPLETE_STOPS",
    "MAX_BREAKPOINTS",
    "BreakpointTally",
    "CheckpointError",
    "CheckpointWriter",
    "ContextEngine",
    "EngineState",
    "Prepared",
    "Verdict",
    "count_breakpoints",
    "encode_checkpoint",
    "place_breakpoints",
    "read_checkpoint",
    "verdict",
    "write_atomic",
]
