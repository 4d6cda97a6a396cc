"""Sessions: what a recorded file or a live loop tells about each model call (:class:`Session`,
:class:`Call`, :class:`LoadedFile`). Built on :mod:`contextkit.messages`; synthetic example
sessions are in :mod:`contextkit.session.examples`.
"""

from __future__ import annotations

from contextkit.session._model import (
    Call,
    CapturedPrefix,
    LoadedFile,
    Record,
    Session,
    SkippedRecord,
    Usage,
)

__all__ = [
    "Call",
    "CapturedPrefix",
    "LoadedFile",
    "Record",
    "Session",
    "SkippedRecord",
    "Usage",
]
