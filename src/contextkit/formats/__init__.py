"""Harness file formats: one reader per format (a module, or a subpackage for a harness that needs
several), each a reader of recorded sessions.

``load(path)`` detects the format from the file's head and returns a :class:`LoadedFile`. A file
no reader recognises raises :class:`UnknownFormatError` listing what was tried. Readers are strict
by default (the first bad record is an error naming file and line); ``lenient=True`` skips bad
records and lists each one in ``LoadedFile.skipped``.

A reader module exposes ``READER``, an object with ``name``, ``sniff(path, head) -> bool`` and
``read(path, *, lenient) -> LoadedFile``, and has one line in :mod:`._registry`. Harnesses whose
files need several modules (or that write several formats) are subpackages: ``claude_code``,
``openhands``, ``aider``, ``hermes``, ``tau``. The wire codecs the readers share (request and
response bodies of each provider API) are :mod:`contextkit.wire`. Detection asks the readers in
the registry's order, most specific first; a JSON-lines file none claims goes to the format most
of its first records belong to. A file holding records of several formats is a
:class:`MixedFormatError` saying which lines are which; a few strays among one format's records
are an error naming them, or (lenient) skipped records (:mod:`._mixed`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Protocol

from contextkit.errors import ContextkitError, FormatError, MixedFormatError, UnknownFormatError
from contextkit.formats._check import (
    CallViolation,
    FileReport,
    Finding,
    check_file,
    exit_code,
    group_findings,
)
from contextkit.formats._io import json_damage, read_head
from contextkit.formats._locations import (
    Discovered,
    Locating,
    Location,
    Places,
    candidates,
    shown_order,
)
from contextkit.formats._mixed import checked_read, head_vote
from contextkit.session import LoadedFile


class FormatReader(Protocol):
    @property
    def name(self) -> str: ...

    def sniff(self, path: Path, head: str) -> bool:
        """True when the file (its name and its first bytes) looks like this format."""
        ...

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile: ...


@cache
def readers() -> tuple[FormatReader, ...]:
    """Every reader, in detection order (:mod:`._registry`, loaded on first use)."""
    from contextkit.formats._registry import READERS  # noqa: PLC0415  (loads every reader)

    return READERS


def format_names() -> tuple[str, ...]:
    return tuple(r.name for r in readers())


def _not_a_file(path: Path) -> str:
    """Why ``path`` is not a file to read (never opened: a FIFO would block the read)."""
    if path.is_symlink() and not path.exists():
        return "a symbolic link that loops or points to nothing"
    if not path.exists():
        return "no such file"
    if path.is_fifo():
        return "a FIFO (named pipe), not a regular file: not read"
    if path.is_dir():
        return "a folder, not a file"
    return "not a regular file (a socket or a device): not read"


def detect(path: str | Path) -> FormatReader:
    """The reader for ``path``, or :class:`UnknownFormatError`."""
    p = Path(path)
    if not p.is_file():
        raise FormatError(p, _not_a_file(p))
    head = read_head(p)
    if not head.strip():
        raise UnknownFormatError(p, "the file is empty")
    for reader in readers():
        if _sniffs(reader, p, head):
            return reader
    voted = head_vote(p) if head.lstrip().startswith("{") else None
    for reader in readers():
        if reader.name == voted:
            return reader
    reason, line = "not a recognised session format", None
    damage = json_damage(p, head)
    if damage is not None:
        line, problem = damage
        reason += f": {problem} (which may be why)"
    raise UnknownFormatError(p, reason + " (tried: " + ", ".join(format_names()) + ")", line)


_ODD_INPUT = (
    RecursionError,
    TypeError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
    ArithmeticError,
)
"""What a reader or sniffer may trip over on input it was not written for (a value of the wrong
type, nesting deeper than the JSON parser goes): at this boundary it is the file's fault, named."""


def _sniffs(reader: FormatReader, path: Path, head: str) -> bool:
    """``reader.sniff``, where a sniffer that trips over the head means: not this format."""
    try:
        return reader.sniff(path, head)
    except _ODD_INPUT:
        return False


def _read(reader: FormatReader, path: Path, lenient: bool) -> LoadedFile:
    try:
        return checked_read(lambda: reader.read(path, lenient=lenient), reader.name, path, lenient)
    except ContextkitError:
        raise
    except RecursionError:
        raise FormatError(path, "nested deeper than the JSON parser can read") from None
    except _ODD_INPUT as exc:
        reason = f"cannot be read as {reader.name} ({type(exc).__name__}: {exc})"
        raise FormatError(path, reason) from None


def load(path: str | Path, *, lenient: bool = False, format: str | None = None) -> LoadedFile:
    """Read one file, detecting its format unless ``format`` names one. Whatever the input, the
    answer is a file read or a :class:`~contextkit.errors.ContextkitError` naming the file."""
    p = Path(path)
    if format is None:
        return _read(detect(p), p, lenient)
    if not p.is_file():
        raise FormatError(p, _not_a_file(p))
    for reader in readers():
        if reader.name == format:
            return _read(reader, p, lenient)
    raise UnknownFormatError(p, f"unknown format {format!r} (known: {', '.join(format_names())})")


def load_many(paths: Sequence[str | Path], *, lenient: bool = False) -> list[LoadedFile]:
    return [load(p, lenient=lenient) for p in paths]


def default_locations(
    home: Path,
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    platform: str = sys.platform,
) -> tuple[Location, ...]:
    """Every harness's default locations for this home, environment, current directory (aider;
    none: aider is left out) and platform (``sys.platform`` values): what each reader that knows
    its harness's says (:class:`Locating`), most used harness first."""
    places = Places(home, env, cwd, platform)
    found = [
        location
        for reader in readers()
        if isinstance(reader, Locating)
        for location in reader.locations(places)
    ]
    return tuple(sorted(found, key=shown_order))


def look_in(location: Location) -> Discovered:
    """The files at ``location`` that its harness's reader takes; the others (no reader, or
    another reader) listed as skipped with the reason. Never raises for what it finds."""
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    for path in candidates(location):
        try:
            name = detect(path).name
        except ContextkitError as exc:
            skipped.append((str(path), str(exc)))
            continue
        if name == location.format:
            files.append(path)
        else:
            skipped.append((str(path), f"read as {name}, not {location.format}"))
    return Discovered(
        location.harness, location.format, location.path, tuple(files), tuple(skipped)
    )


def discover(
    home: Path,
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    platform: str = sys.platform,
) -> tuple[Discovered, ...]:
    """What each of :func:`default_locations` holds, in their order (empty ones included): the
    sessions of every supported harness on a machine with this home and environment."""
    return tuple(look_in(loc) for loc in default_locations(home, env, cwd=cwd, platform=platform))


__all__ = [
    "CallViolation",
    "Discovered",
    "FileReport",
    "Finding",
    "FormatReader",
    "Locating",
    "Location",
    "MixedFormatError",
    "Places",
    "check_file",
    "default_locations",
    "detect",
    "discover",
    "exit_code",
    "format_names",
    "group_findings",
    "load",
    "load_many",
    "look_in",
    "readers",
]
