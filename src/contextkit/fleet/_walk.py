"""A lazy walk over session files: one :class:`FileTask` at a time, never the whole listing.

Contract: :func:`walk_files` yields, for each path given, the file itself (a file named
explicitly) or every file under a folder whose suffix a folder scan takes
(:data:`contextkit.replay.SESSION_SUFFIXES`), depth first, each folder's entries sorted by name
(so two walks of an unchanged tree yield the same order). A Claude Code subagent file
(``<session>/subagents/agent-*.jsonl``) whose parent session file exists is left out: its parent
reads it (as :func:`contextkit.replay.find_session_files` does). Only one folder's listing is held
at a time per level of depth; the format is not detected here (the worker does it, so the walk
stays cheap and a huge folder starts producing at once). A path that does not exist is a
:class:`FormatError`; a folder that cannot be listed is yielded as a task with its ``error``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from contextkit.errors import FormatError
from contextkit.replay import SESSION_SUFFIXES


@dataclass(frozen=True)
class FileTask:
    """One file to read, with what identifies its content for ``--resume``.

    ``named``: given explicitly (an unrecognised file is then an error, not a skip);
    ``error``: the walk could not look at it (permissions), reported like an unreadable file."""

    path: str
    size: int
    mtime_ns: int
    named: bool = False
    error: str | None = None

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.path, self.size, self.mtime_ns)


def walk_files(paths: Sequence[str | Path]) -> Iterator[FileTask]:
    """Every session file under ``paths``, lazily (see the module docstring)."""
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FormatError(path, "no such file or folder")
        if path.is_dir():
            yield from _walk_dir(str(path))
        else:
            yield _task(str(path), named=True)


def _task(path: str, named: bool = False) -> FileTask:
    try:
        st = os.stat(path)
    except OSError as exc:
        return FileTask(path, 0, 0, named, f"cannot read: {exc.strerror or exc}")
    return FileTask(path, st.st_size, st.st_mtime_ns, named)


def _walk_dir(folder: str) -> Iterator[FileTask]:
    try:
        with os.scandir(folder) as it:
            entries = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in it)
    except OSError as exc:
        yield FileTask(folder, 0, 0, False, f"cannot list folder: {exc.strerror or exc}")
        return
    for name, is_dir in entries:
        full = os.path.join(folder, name)
        if is_dir:
            yield from _walk_dir(full)
        elif os.path.splitext(name)[1] in SESSION_SUFFIXES and not _linked_subagent(full):
            yield _task(full)


def _linked_subagent(path: str) -> bool:
    parent = os.path.dirname(path)
    if os.path.basename(parent) != "subagents":
        return False
    return os.path.isfile(os.path.dirname(parent) + ".jsonl")
