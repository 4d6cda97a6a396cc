"""Shared reading helpers for the format readers: bytes in, JSON values out, errors with lines.

Every reader goes through these so that bad input (invalid UTF-8, a truncated line, a value of the
wrong type) is reported the same way: a :class:`FormatError` naming the file and the line, or, in
lenient mode, a :class:`SkippedRecord` per line passed over.

A JSONL line holding several complete JSON values with no newline between them (a writer that lost
a newline: ``{...}{...}``) is not bad input: :func:`iter_jsonl` yields each value with that line's
number and adds a note naming the line to :attr:`Skips.notes`, in strict mode too. A line whose
values do not all parse is still an error naming the line (and the column where parsing failed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError, json_column, json_line, json_reason
from contextkit.session import SkippedRecord

HEAD_BYTES = 65536


def read_head(path: Path, size: int = HEAD_BYTES) -> str:
    """The first bytes of a file as text (undecodable bytes replaced), for format sniffing."""
    try:
        with path.open("rb") as fh:
            return fh.read(size).decode("utf-8", errors="replace")
    except OSError as exc:
        raise FormatError(path, f"cannot read file: {exc.strerror or exc}") from None


@dataclass
class Skips:
    """Collects what a lenient read passes over; raises at once when not lenient. ``notes``:
    what a read of the file recovered from without skipping anything (for the session notes)."""

    path: Path
    lenient: bool
    records: list[SkippedRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fail(self, reason: str, line: int | None = None) -> None:
        """Report a bad record: an error, or (lenient) a skip to be listed."""
        if not self.lenient:
            raise FormatError(self.path, reason, line)
        self.records.append(SkippedRecord(path=str(self.path), line=line, reason=reason))


@dataclass
class LineCheck:
    """What :func:`iter_jsonl` keeps from the reader ``name`` of ``path``: records ``classify``
    gives another format (:mod:`._mixed` sets this up for ``load`` and judges the tally after)."""

    path: Path
    name: str
    classify: Callable[[dict[str, Any]], str | None]
    """The format a record belongs to (``name`` or another), None when it does not say."""
    given: int = 0
    """Records that went to the reader."""
    runs: list[list[Any]] = field(default_factory=list)
    """``[first line, last line, format]`` of each run of records ``classify`` placed alike."""
    counts: dict[str, int] = field(default_factory=dict)
    """Records ``classify`` placed, by format."""
    withheld: list[tuple[int, str]] = field(default_factory=list)
    """``(line, format)`` of the records kept from the reader."""

    def takes(self, number: int, value: dict[str, Any]) -> bool:
        kind = self.classify(value)
        if kind is not None:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            runs = self.runs
            if runs and runs[-1][2] == kind:
                runs[-1][1] = number
            else:
                runs.append([number, number, kind])
        if kind is None or kind == self.name:
            self.given += 1
            return True
        self.withheld.append((number, kind))
        return False


LINE_CHECK: ContextVar[LineCheck | None] = ContextVar("LINE_CHECK", default=None)


def iter_jsonl(path: Path, skips: Skips) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each JSON object of each non-blank line (normally one
    per line; see the module docstring for lines that hold several). While a :class:`LineCheck`
    for ``path`` is set, records of another format are kept back and tallied there."""
    check = LINE_CHECK.get()
    if check is not None and check.path != path:
        check = None
    for number, (raw, finished) in enumerate(_lines(path), start=1):
        if not raw.strip():
            continue
        if not finished and _unfinished(raw):
            # The file's last line, cut before its end: a session still being written (or one
            # that crashed). Read up to the line before it, strict or not, and say so.
            skips.records.append(SkippedRecord(path=str(path), line=number, reason=IN_PROGRESS))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            skips.fail(f"invalid UTF-8 at byte {exc.start} of the line", number)
            continue
        for value in _line_values(text, number, skips):
            if not isinstance(value, dict):
                skips.fail(f"expected a JSON object, found {type(value).__name__}", number)
                continue
            if check is None or check.takes(number, value):
                yield number, value


IN_PROGRESS = (
    "the last line is unfinished (in progress: a session still being written, or cut off): "
    "the file was read up to the line before it"
)


def _unfinished(raw: bytes) -> bool:
    """Whether the file's last line, which has no newline, is a record cut before its end (not
    valid JSON; a complete record without a newline is read as any other)."""
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        return json_reason(exc) != "Extra data"  # records back to back, whole: read as such
    except (ValueError, RecursionError):  # cut inside a character, or nested past the parser
        return True
    return False


def _lines(path: Path) -> Iterator[tuple[bytes, bool]]:
    """The file's lines split at ``\\n`` (without it), read as they come, each with whether it
    ended with one (only the file's last line may not): a reader holds one line at a time, not the
    file (a trace of request bodies holds its history once per call)."""
    try:
        with path.open("rb") as fh:
            for raw in fh:
                finished = raw.endswith(b"\n")
                yield (raw[:-1] if finished else raw), finished
    except OSError as exc:
        raise FormatError(path, f"cannot read file: {exc.strerror or exc}") from None


_DECODER = json.JSONDecoder()


def _line_values(text: str, number: int, skips: Skips) -> list[Any]:
    """The JSON values of one line: one as a rule; several written back to back are split (and
    noted); none when the line is not valid JSON (reported through ``skips``)."""
    try:
        return [json.loads(text)]
    except RecursionError:
        skips.fail("nested deeper than the JSON parser can read", number)
        return []
    except ValueError as exc:
        if json_reason(exc) != "Extra data":
            skips.fail(f"not valid JSON ({json_reason(exc)}, column {json_column(exc)})", number)
            return []
    values: list[Any] = []
    size = len(text)
    end = size - len(text.lstrip())  # raw_decode does not skip leading whitespace
    while end < size:
        try:
            value, end = _DECODER.raw_decode(text, end)
        except ValueError as exc:
            skips.fail(f"not valid JSON ({json_reason(exc)}, column {json_column(exc)})", number)
            return []
        values.append(value)
        while end < size and text[end].isspace():
            end += 1
    skips.notes.append(
        f"line {number} holds {len(values)} JSON records with no newline between them: "
        "each was read as a record of its own"
    )
    return values


def load_json(path: Path) -> Any:
    """Parse a whole-file JSON document; errors name the line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(path, "invalid UTF-8", line) from None
    try:
        return json.loads(text)
    except ValueError as exc:
        where = json_line(exc)
        where = where if where is not None else _long_number_line(text)
        raise FormatError(path, f"not valid JSON ({json_reason(exc)})", where) from None
    except RecursionError:
        reason = "nested deeper than the JSON parser can read"
        raise FormatError(path, reason, _deepest_line(text)) from None


_LONG_NUMBER = re.compile(r"\d{4301,}")


def _long_number_line(text: str) -> int | None:
    """The line of the first number longer than Python's integer-string limit (None: none)."""
    found = _LONG_NUMBER.search(text)
    return None if found is None else text.count("\n", 0, found.start()) + 1


def _deepest_line(text: str, limit: int = 900) -> int | None:
    """The line where brackets outside strings first nest ``limit`` deep (for the error)."""
    depth, in_string, escaped = 0, False, False
    line = 1
    for char in text:
        if char == "\n":
            line += 1
        elif in_string:
            escaped, in_string = (
                (not escaped and char == "\\"),
                in_string and (escaped or char != '"'),
            )
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth >= limit:
                return line
        elif char in "]}":
            depth -= 1
    return None


_DAMAGE_LIMIT = 64 * 1024 * 1024


def json_damage(path: Path, head: str) -> tuple[int, str] | None:
    """For a file no reader claims: the line and the problem that keeps a JSON file (``.json``,
    ``.traj``: the whole document; ``.jsonl``: its first record) from parsing, or None when it
    parses or is not meant to be JSON. Detection names it: a damaged file is then not just an
    unknown format."""
    if path.suffix not in (".json", ".traj", ".jsonl") or head.lstrip()[:1] not in ("{", "["):
        return None
    if path.suffix == ".jsonl":
        return _first_line_damage(head)
    if path.stat().st_size > _DAMAGE_LIMIT:
        return None
    try:
        load_json(path)
    except FormatError as exc:
        return None if exc.line is None else (exc.line, exc.reason)
    return None


def _first_line_damage(head: str) -> tuple[int, str] | None:
    data = head.encode("utf-8", errors="replace")
    skip = len(data) - len(data.lstrip())
    first = data[skip:].split(b"\n", 1)[0]
    if len(first) >= len(data) - skip and len(data) >= HEAD_BYTES - 4:
        return None  # a first line longer than the head: not judged from a part of it
    line = data.count(b"\n", 0, skip) + 1
    try:
        json.loads(first)
    except ValueError as exc:
        return (
            line,
            f"line {line} is not valid JSON ({json_reason(exc)}, column {json_column(exc)})",
        )
    except RecursionError:
        return line, f"line {line} is nested deeper than the JSON parser can read"
    return None


def first_json_object(head: str) -> dict[str, Any] | None:
    """The first line of ``head`` parsed as a JSON object, or None (for JSONL sniffing)."""
    line = head.split("\n", 1)[0].strip()
    try:
        value = json.loads(line)
    except ValueError:  # not JSON, or a number past the digit limit
        return None
    return value if isinstance(value, dict) else None


SNIFF_RECORDS = 16
"""How many JSONL records a reader may look at to tell its format from a neutral first call."""
_LINE_LIMIT = 256 * 1024 * 1024
_PLAIN_KEYS = frozenset(
    {"model", "messages", "stream", "temperature", "top_p", "max_tokens", "metadata"}
)
"""Request fields the Anthropic and the OpenAI chat forms share, name and meaning alike."""


def head_objects(path: Path, limit: int = SNIFF_RECORDS) -> list[object]:
    """The first ``limit`` non-blank lines of a JSONL file, parsed (for sniffing).

    Whole lines are read, even past the sniffing head: request bodies with a whole conversation are
    often longer than the head. Reading stops at the first line that is not valid JSON.
    """
    out: list[object] = []
    try:
        with path.open("rb") as fh:
            for raw in iter(lambda: fh.readline(_LINE_LIMIT), b""):
                if raw.strip():
                    out.append(json.loads(raw.decode("utf-8")))
                    if len(out) >= limit:
                        break
    except (OSError, ValueError, RecursionError):
        pass
    return out


def is_plain_text_body(value: object) -> bool:
    """A request body both the Anthropic and the OpenAI chat forms write alike: user/assistant
    messages of plain text and no form-specific field (a first call without a system prompt)."""
    if not isinstance(value, dict) or not set(value) - {"tools"} <= _PLAIN_KEYS:
        return False
    if value.get("tools", []) != []:
        return False
    messages = value.get("messages")
    return isinstance(messages, list) and all(_plain_message(m) for m in messages)


def _plain_message(message: object) -> bool:
    if not isinstance(message, dict) or set(message) != {"role", "content"}:
        return False
    content = message["content"]
    if message["role"] not in ("user", "assistant"):
        return False
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(b, dict) and set(b) == {"type", "text"} and b["type"] == "text" for b in content
    )


def sniff_records(
    path: Path, decides: Callable[[object], bool], *, plain_only: bool = False
) -> bool:
    """True when, among the first records of a JSONL file, the first that is not a neutral plain
    text body satisfies ``decides``. A file of neutral bodies only is claimed when ``plain_only``
    (by the reader of last resort), else left to other readers."""
    values = head_objects(path)
    for value in values:
        if not is_plain_text_body(value):
            return decides(value)
    return plain_only and bool(values)
