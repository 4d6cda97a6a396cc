"""Convert every call of a recorded file to one wire form (``contextkit convert``): the file
loaded by any reader, each request written by :func:`contextkit.wire.to_format`, with what the
target could not carry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextkit.formats import load
from contextkit.session import Record
from contextkit.wire import TARGETS, ConversionError, ConversionWarning, Target, to_format


class ConvertedFile(Record):
    """Every call of a file as a request body of the target form, with what could not be carried."""

    path: str
    source_format: str
    target: str
    requests: tuple[dict[str, Any], ...]
    warnings: tuple[ConversionWarning, ...]
    skipped: tuple[str, ...] = ()


def convert_file(path: str | Path, target: Target, *, lenient: bool = False) -> ConvertedFile:
    """Load any supported file and convert the request of each call (sessions depth first,
    subagents after their parent). Warning locations start with ``call K`` (0-based over the
    output lines)."""
    if target not in TARGETS:
        raise ConversionError(f"unknown target {target!r} (known: {', '.join(TARGETS)})")
    loaded = load(path, lenient=lenient)
    requests: list[dict[str, Any]] = []
    warnings: list[ConversionWarning] = []
    for session in (s for top in loaded.sessions for s in top.all_sessions()):
        for call in session.calls:
            payload, found = to_format(call.request, target)
            prefix = f"call {len(requests)}"
            warnings.extend(
                w.model_copy(update={"location": f"{prefix} {w.location}"}) for w in found
            )
            requests.append(payload)
    skipped = tuple(f"{s.path}:{s.line}: {s.reason}" for s in loaded.skipped)
    return ConvertedFile(
        path=str(path),
        source_format=loaded.format,
        target=target,
        requests=tuple(requests),
        warnings=tuple(warnings),
        skipped=skipped,
    )


__all__ = ["ConvertedFile", "convert_file"]
