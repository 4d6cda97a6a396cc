"""What a command reads: the paths it was given, folders expanded; with no path or ``--all``, also
the sessions :func:`contextkit.formats.discover` finds where each harness keeps them.

Contract (shared by ``inspect``, ``validate``, ``compare`` and ``cost``):

- a file named explicitly is kept as named (a missing or unreadable one is its reader's error,
  naming it); a folder is scanned as ``compare`` always scanned it
  (:func:`contextkit.replay.find_session_files`: every file a reader recognises, subagent files
  through their parent, files no reader takes returned as skipped, never errors);
- with no path, or ``--all``, the default locations of every harness are searched and one line per
  location that holds sessions is printed on stderr (``found N session file(s) of HARNESS in
  PATH``), or ``nothing found`` with the places looked in. Nothing found there is not an error:
  the command reports nothing and exits 0 (there was nothing to check or price);
- paths named explicitly that hold no session file are an error (exit 2): the user pointed at
  something and it is not what they thought.

Exit codes of the commands that read many files (``inspect``, ``compare``, ``cost``, ``report``;
:func:`read_outcome`): 0 every file was read; 1 some could not be read (each named on stderr, and
in ``--json``, with why; the rest reported as usual); 2 none could be read, or bad input. A file
with a bad record is not read in strict mode (the error names its line); ``--lenient`` reads it
and lists the records it skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contextkit.cli._app import err_console
from contextkit.errors import ContextkitError, FormatError

if TYPE_CHECKING:
    from contextkit.formats import Discovered
    from contextkit.session import LoadedFile


@dataclass(frozen=True)
class Selection:
    """The files a command reads, the folder files no reader took, and whether the default
    locations were searched."""

    files: tuple[Path, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    discovered: bool = False


def select_paths(
    paths: Sequence[Path] | None, every: bool = False, *, missing_ok: bool = False
) -> Selection:
    """``paths`` expanded, plus (no path, or ``every``) what discovery finds on this machine. A
    named path that does not exist is an error, unless ``missing_ok`` (then it is kept, for the
    reader to report with the others)."""
    from contextkit.replay import find_session_files  # noqa: PLC0415  (loads the readers)

    named = list(paths or [])
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    for path in named:
        if not missing_ok and not path.exists():
            raise FormatError(path, "no such file or folder")
        if not path.is_dir():
            files.append(path)
            continue
        found = find_session_files([path])
        files.extend(found.files)
        skipped.extend(found.skipped)
    searched = every or not named
    if searched:
        files.extend(p for d in discover_here() for p in d.files if p not in files)
    if not files and not searched:
        raise ContextkitError(
            "no session file found in " + ", ".join(map(str, named)) + _hint(skipped)
        )
    return Selection(tuple(files), tuple(skipped), searched)


def discover_here() -> tuple[Discovered, ...]:
    """Discovery with this process's home, environment and directory; its lines on stderr."""
    from contextkit.formats import discover  # noqa: PLC0415  (loads the readers)

    found = discover(Path.home(), os.environ, cwd=Path.cwd())
    print_discovery(found)
    return found


def print_discovery(found: Sequence[Discovered]) -> None:
    """``found N session file(s) of HARNESS in PATH`` per location that holds any, or ``nothing
    found`` with the places looked in."""
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when something prints)

    hits = [d for d in found if d.files]
    for d in hits:
        err_console.print(
            f"found {len(d.files)} session file(s) of {d.harness} in {escape(str(d.path))}",
            highlight=False,
            soft_wrap=True,
        )
    if not hits:
        looked = ", ".join(str(d.path) for d in found)
        err_console.print(
            f"nothing found in the default locations ({escape(looked)})",
            highlight=False,
            soft_wrap=True,
        )


def print_skipped(skipped: Sequence[tuple[str, str]]) -> None:
    """One stderr line per folder file no reader recognises."""
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when something prints)

    for path, reason in skipped:
        err_console.print(
            f"[yellow]skipped[/] {escape(path)}: {escape(reason)}", highlight=False, soft_wrap=True
        )


def each_loaded(
    paths: Sequence[Path],
    unread: list[tuple[str, str]],
    *,
    lenient: bool = False,
    format_name: str | None = None,
) -> Iterator[tuple[Path, LoadedFile]]:
    """Each file of ``paths`` read (with the ``format_name`` reader, else detected), its skipped
    records listed on stderr; a file that cannot be read is added to ``unread`` with why."""
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when something prints)

    from contextkit.formats import load  # noqa: PLC0415  (loads the readers)

    for path in paths:
        try:
            loaded = load(path, lenient=lenient, format=format_name)
        except FormatError as exc:
            unread.append((str(path), unread_reason(exc)))
            continue
        for skip in loaded.skipped:
            err_console.print(
                f"[yellow]skipped[/] {escape(skip.path)}:{skip.line}: {escape(skip.reason)}",
                highlight=False,
            )
        yield path, loaded


def read_outcome(read: int, unread: int) -> int:
    """The exit code of a command over many files: 0 all read, 1 some unreadable, 2 none read."""
    if not unread:
        return 0
    return 1 if read else 2


def unread_reason(exc: FormatError) -> str:
    """Why a file was not read, as the error says it (a bad record: with the ``--lenient`` hint)."""
    from contextkit.errors import MixedFormatError, UnknownFormatError  # noqa: PLC0415

    bad_record = not isinstance(exc, MixedFormatError | UnknownFormatError)
    if bad_record and getattr(exc, "line", None) is not None:
        return f"{exc} (--lenient skips bad records and lists each one)"
    return str(exc)


def print_unread(unread: Sequence[tuple[str, str]]) -> None:
    """One stderr line per file that could not be read, with why."""
    from rich.markup import escape  # noqa: PLC0415  (rich loads only when something prints)

    for _, reason in unread:  # the reason names the file
        err_console.print(f"[red]not read[/] {escape(reason)}", highlight=False, soft_wrap=True)


def _hint(skipped: Sequence[tuple[str, str]]) -> str:
    return f" ({len(skipped)} file(s) not recognised, e.g. {skipped[0][1]})" if skipped else ""
