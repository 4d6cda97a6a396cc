"""The engine's own errors that more than one of its modules raise."""

from __future__ import annotations

from contextkit.errors import ContextkitError


class CheckpointError(ContextkitError):
    """A checkpoint file cannot be used."""


__all__ = ["CheckpointError"]
