"""The harness of ``tests/formats/test_nothing_dropped_built.py``: places in a built input (an
element of a JSON list, a JSON line, a text line, a whole JSON file, an SQLite row or its JSON
column), the ways to spoil one (removed, replaced by a value of the wrong kind, one field of the
wrong type), and the check of one spoiled input against the clean read."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextkit.errors import ContextkitError, FormatError
from contextkit.formats import load
from fuzzing import Outcome, _outcome

REMOVE = object()
"""The place's record is taken out (the element, line, file or row)."""


@dataclass(frozen=True)
class Raw:
    """Bytes written as they are (not JSON-encoded): text that does not parse."""

    text: str


@dataclass(frozen=True)
class Place:
    """One record of a built input. ``kind``: ``list`` (an element of the JSON list in ``file``),
    ``jsonl`` (a line of ``file``), ``text`` (a line of a text file), ``file`` (the whole JSON
    file), ``row`` (an SQLite row: its ``column`` as JSON, or every column when it is empty)."""

    kind: str
    file: str
    index: int = 0
    table: str = ""
    column: str = ""

    def label(self) -> str:
        where = f"{self.table}#{self.index}" if self.kind == "row" else str(self.index)
        return f"{self.file} {self.kind} {where}{'.' + self.column if self.column else ''}"


def _rows(db: Path, table: str) -> list[int]:
    with closing(sqlite3.connect(db)) as connection:
        return [r[0] for r in connection.execute(f"SELECT rowid FROM {table} ORDER BY rowid")]


def places(root: Path, file: str, kind: str, *, table: str = "", column: str = "") -> list[Place]:
    """Every place of one kind in ``root / file``."""
    path = root / file
    if kind == "list":
        return [Place(kind, file, i) for i in range(len(json.loads(path.read_text())))]
    if kind in ("jsonl", "text"):
        return [Place(kind, file, i) for i in range(len(path.read_text().splitlines()))]
    if kind == "row":
        return [Place(kind, file, r, table, column) for r in _rows(path, table)]
    return [Place(kind, file)]


def files(root: Path, pattern: str) -> list[Place]:
    """One ``file`` place for each JSON file under ``root`` matching ``pattern``."""
    return [Place("file", str(p.relative_to(root))) for p in sorted(root.glob(pattern))]


def _get(root: Path, place: Place) -> Any:
    path = root / place.file
    if place.kind == "list":
        return json.loads(path.read_text())[place.index]
    if place.kind in ("jsonl", "text"):
        line = path.read_text().splitlines()[place.index]
        return json.loads(line) if place.kind == "jsonl" else line
    if place.kind == "file":
        return json.loads(path.read_text())
    with closing(sqlite3.connect(path)) as db:
        db.row_factory = sqlite3.Row
        (row,) = db.execute(f"SELECT * FROM {place.table} WHERE rowid = ?", (place.index,))
    if not place.column:
        return dict(row)
    try:
        return json.loads(row[place.column])
    except (TypeError, ValueError):
        return row[place.column]


_MARK = "\x00raw\x00"


def _text(value: Any) -> str:
    return value.text if isinstance(value, Raw) else json.dumps(value)


def _put(root: Path, place: Place, value: Any) -> None:
    path = root / place.file
    if place.kind == "list":
        items = json.loads(path.read_text())
        if value is REMOVE:
            del items[place.index]
        else:
            items[place.index] = _MARK if isinstance(value, Raw) else value
        text = json.dumps(items, indent=2)
        if isinstance(value, Raw):
            text = text.replace(json.dumps(_MARK), value.text)
        path.write_text(text)
    elif place.kind in ("jsonl", "text"):
        lines = path.read_text().splitlines()
        if value is REMOVE:
            del lines[place.index]
        else:
            lines[place.index] = value if place.kind == "text" else _text(value)
        path.write_text("".join(line + "\n" for line in lines))
    elif place.kind == "file":
        if value is REMOVE:
            path.unlink()
        else:
            path.write_text(_text(value) if isinstance(value, Raw) else json.dumps(value, indent=2))
    else:
        with closing(sqlite3.connect(path)) as db:
            if value is REMOVE:
                db.execute(f"DELETE FROM {place.table} WHERE rowid = ?", (place.index,))
            elif place.column:
                stored = value.text if isinstance(value, Raw) else json.dumps(value)
                sql = f"UPDATE {place.table} SET {place.column} = ? WHERE rowid = ?"
                db.execute(sql, (stored, place.index))
            else:
                sets = ", ".join(f"{k} = ?" for k in value)
                sql = f"UPDATE {place.table} SET {sets} WHERE rowid = ?"
                db.execute(sql, (*value.values(), place.index))
            db.commit()


def _wrong(value: Any) -> Any:
    """A value of another JSON type than ``value``."""
    if isinstance(value, str):
        return 7
    if value is None or isinstance(value, bool | int | float):
        return ["x"]
    return "x"


def _nested(value: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """One field one level down of the wrong type: in an object field, or in an element (or
    the element itself) of a list field."""
    for key, inner in value.items():
        if isinstance(inner, dict):
            for sub, sub_value in inner.items():
                yield (
                    f"{key}.{sub} of the wrong type",
                    {**value, key: {**inner, sub: _wrong(sub_value)}},
                )
        elif isinstance(inner, list):
            for i, item in enumerate(inner):
                items = list(inner)
                items[i] = "junk"
                yield f"{key}[{i}] a string", {**value, key: items}
                for sub, sub_value in item.items() if isinstance(item, dict) else ():
                    items[i] = {**item, sub: _wrong(sub_value)}
                    yield f"{key}[{i}].{sub} of the wrong type", {**value, key: list(items)}


def spoilt(place: Place, value: Any, *, deep: bool = False) -> Iterator[tuple[str, Any]]:
    """(kind, replacement) for the record ``value`` at ``place``; ``deep``: fields one level
    down too (:func:`_nested`)."""
    yield "removed", REMOVE
    if place.kind == "text":
        yield "garbage line", "@@ not a line of this file"
        yield "prefix cut", value.split(" ", 1)[-1] if " " in value else value + "!"
        return
    if place.kind == "row" and not place.column:
        for key, field_value in value.items():
            yield f"{key} of the wrong type", {key: 7 if isinstance(field_value, str) else "x"}
        return
    yield "not JSON", Raw("{not json")
    yield "a string", "junk"
    if isinstance(value, dict):
        yield "empty object", {}
        for key, field_value in value.items():
            yield f"{key} of the wrong type", {**value, key: _wrong(field_value)}
        if deep:
            yield from _nested(value)
    elif isinstance(value, list):
        yield "empty list", []


@dataclass(frozen=True)
class Reader:
    """A reader under test: ``build(folder)`` writes a clean input and returns the path to load;
    ``places(root)`` lists its records; ``lines``: the format's errors name a line."""

    name: str
    build: Callable[[Path], Path]
    places: Callable[[Path], list[Place]]
    lines: bool = True
    many_calls: bool = False
    """One record can hold several calls (the count bound is not the reader's)."""
    referred: Callable[[Place], bool] = lambda place: False
    """The places other records refer to: their removal must be reported too (once)."""


@dataclass
class Result:
    cases: int = 0
    read: int = 0
    """Cases the lenient read read (the others were clean errors)."""
    errors: int = 0
    failures: list[str] = field(default_factory=list)


def _reported(base: Outcome, got: Outcome) -> int:
    aside = sum(max(0, got.set_aside[k] - base.set_aside[k]) for k in got.set_aside)
    return max(0, got.skipped - base.skipped) + aside


def _load(path: Path, lenient: bool, name: str) -> Any:
    return load(path, lenient=lenient, format=name)


def check(reader: Reader, folder: Path, *, deep: bool = False) -> Result:
    """Every place of ``reader``'s input spoilt every way, one at a time (``deep``: and every
    field one level down, :func:`spoilt`)."""
    clean_root = folder / "clean"
    clean_root.mkdir()
    target = reader.build(clean_root).relative_to(clean_root)
    base = _outcome(_load(clean_root / target, True, reader.name))
    assert base.calls > 0, (reader.name, base)
    assert base.skipped == 0, (reader.name, base)
    result = Result()
    for place in reader.places(clean_root):
        for kind, value in spoilt(place, _get(clean_root, place), deep=deep):
            if value is REMOVE and place.kind == "file" and Path(place.file) == target:
                continue  # no file to read: not a record of it
            case_root = folder / "case"
            shutil.rmtree(case_root, ignore_errors=True)
            shutil.copytree(clean_root, case_root)
            _put(case_root, place, value)
            label = f"{reader.name} {place.label()} {kind}"
            result.cases += 1
            problem = _one(reader, case_root, target, base, kind, reader.referred(place))
            if problem == "error":
                result.errors += 1
            elif problem:
                result.failures.append(f"{label}: {problem}")
            else:
                result.read += 1
    return result


def _strict(reader: Reader, path: Path, root: Path, removed: bool) -> str | None:
    """None if the strict read is a read or a clean error naming the file (and the line, but
    for a missing record: there is no line to name)."""
    try:
        _load(path, False, reader.name)
    except FormatError as exc:
        if "cannot be read as" in exc.reason:  # the load boundary caught a reader's exception
            return f"a reader's stray exception: {exc}"
        if not exc.path.startswith(str(root)):
            return f"strict error not naming the file: {exc}"
        if reader.lines and exc.line is None and not removed:
            return f"strict error naming no line: {exc}"
    except ContextkitError:
        pass
    except Exception as exc:  # what the property looks for
        return f"strict read raised {type(exc).__name__}: {exc}"
    return None


def _one(reader: Reader, root: Path, target: Path, base: Outcome, kind: str, referred: bool) -> str:
    """A problem with one spoilt input, ``error`` for a clean error, or ``""``. ``referred``: a
    removed record others refer to, whose loss must be reported (at least once: the reader
    cannot tell how many calls it held)."""
    path = root / target
    problem = _strict(reader, path, root, kind == "removed")
    if problem:
        return problem
    try:
        got = _outcome(_load(path, True, reader.name))
    except ContextkitError:
        return "error"  # not read at all: a clean error naming the file (checked strictly)
    except Exception as exc:
        return f"lenient read raised {type(exc).__name__}: {exc}"
    lost, reported = base.calls - got.calls, _reported(base, got)
    if kind == "removed":
        return f"{lost} calls lost, unreported" if referred and lost > 0 and not reported else ""
    if lost > 0 and reported == 0:
        return f"{lost} of {base.calls} calls lost, unreported"
    if lost > reported and not reader.many_calls:
        return f"{lost} calls lost, {reported} reported"
    if got.skipped > base.skipped:
        try:
            _load(path, False, reader.name)
        except ContextkitError:
            pass
        else:
            return "lenient read skipped a record the strict read accepted"
    return ""
