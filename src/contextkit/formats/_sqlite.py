"""Reading the SQLite databases some harnesses keep (Cursor's ``state.vscdb``, OpenCode's
``opencode.db``, Hermes' ``state.db``): read-only, and every failure a :class:`FormatError`.

Contract:

- :func:`is_sqlite` tells from a file's head (``read_head``: text, bytes replaced) whether it
  starts with the SQLite magic ``SQLite format 3\\0``.
- :func:`table_names` is for sniffing: the tables of a database opened read-only, or None when it
  cannot be opened or read (corrupt, locked, not a database): a sniff never raises.
  :func:`has_tables` is the sniff itself: the database holds the harness's tables, or it cannot
  be read and bears the harness's own file name (then the reader is chosen, and reading it
  reports the lock or the corruption instead of "not a recognised format").
- :func:`connect` opens a database read-only (``mode=ro`` URI: the harness's file is never
  written, not even a journal) and :func:`rows` runs one query; a corrupt, locked or unreadable
  database is a :class:`FormatError` naming the file and what to do, never a traceback.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import quote

from contextkit.errors import FormatError

SQLITE_MAGIC = "SQLite format 3\x00"
_TIMEOUT_S = 1.0


def is_sqlite(head: str) -> bool:
    return head.startswith(SQLITE_MAGIC)


def _uri(path: Path) -> str:
    return f"file:{quote(str(path.resolve()))}?mode=ro"


def _reason(exc: sqlite3.Error) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"the database is locked ({text}): close the harness, or load a copy of the file"
    return f"cannot read the SQLite database ({text}): the file may be corrupt or not a database"


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection; any SQLite error inside the block is a :class:`FormatError`."""
    try:
        with closing(sqlite3.connect(_uri(path), uri=True, timeout=_TIMEOUT_S)) as connection:
            yield connection
    except sqlite3.Error as exc:
        raise FormatError(path, _reason(exc)) from None


def rows(
    connection: sqlite3.Connection, sql: str, params: Sequence[object] = ()
) -> list[tuple[object, ...]]:
    """Every row of one query (errors surface through :func:`connect` as a FormatError)."""
    return list(connection.execute(sql, tuple(params)))


def table_names(path: Path) -> frozenset[str] | None:
    """The database's table names, or None when it cannot be read (for sniffing)."""
    try:
        with connect(path) as connection:
            found = rows(connection, "SELECT name FROM sqlite_master WHERE type = 'table'")
    except FormatError:
        return None
    return frozenset(str(name) for (name,) in found)


def has_tables(path: Path, required: frozenset[str], file_name: str) -> bool:
    """Whether a SQLite file is the harness's store (see the module contract)."""
    tables = table_names(path)
    if tables is None:
        return path.name == file_name
    return tables >= required


def columns(connection: sqlite3.Connection, table: str) -> frozenset[str]:
    """The column names of ``table`` (empty when there is no such table)."""
    found = rows(connection, "SELECT name FROM pragma_table_info(?)", (table,))
    return frozenset(str(name) for (name,) in found)


__all__ = ["SQLITE_MAGIC", "columns", "connect", "has_tables", "is_sqlite", "rows", "table_names"]
