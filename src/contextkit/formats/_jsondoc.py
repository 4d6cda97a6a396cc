"""Whole-file JSON documents with positions, and sniffing a JSON file's head (shared by the
trajectory readers and the OpenAI readers).

Contract:

- :class:`JsonDoc` is a whole-file JSON document that can say on which line any element starts
  (``line_of("history", 3)``), so a reader can name the line of an offending element rather than
  only the file. Errors reading or parsing the file are :class:`FormatError` with the line.
- :func:`peek` reads the keys of a document's head (the first 64 KiB) without needing the whole
  document; it stops quietly where the head is cut.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from contextkit.formats._io import load_json

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"

Key = str | int


# --------------------------------------------------------------------------------------------------
# Whole-file JSON with positions


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _value_end(text: str, i: int) -> int:
    return _DECODER.raw_decode(text, i)[1]


def _object_entries(text: str, i: int) -> list[tuple[str, int]]:
    """``(key, value offset)`` of the object starting at ``i`` (stops quietly where text is cut)."""
    out: list[tuple[str, int]] = []
    i = _skip_ws(text, i + 1)
    try:
        while i < len(text) and text[i] != "}":
            key, i = _DECODER.raw_decode(text, i)
            i = _skip_ws(text, i)
            if i >= len(text) or text[i] != ":":
                break
            start = _skip_ws(text, i + 1)
            out.append((str(key), start))
            i = _skip_ws(text, _value_end(text, start))
            if i < len(text) and text[i] == ",":
                i = _skip_ws(text, i + 1)
    except (ValueError, IndexError):
        pass  # the head was cut inside this object: keep what was read
    return out


def _array_offsets(text: str, i: int, limit: int | None = None) -> list[int]:
    """Offsets of the elements of the array starting at ``i`` (at most ``limit`` of them)."""
    out: list[int] = []
    i = _skip_ws(text, i + 1)
    try:
        while i < len(text) and text[i] != "]":
            out.append(i)
            if limit is not None and len(out) >= limit:
                break
            i = _skip_ws(text, _value_end(text, i))
            if i < len(text) and text[i] == ",":
                i = _skip_ws(text, i + 1)
    except (ValueError, IndexError):
        pass
    return out


@dataclass
class JsonDoc:
    """A whole-file JSON document, its text, and the line where each element starts."""

    path: Path
    text: str
    value: Any
    _arrays: dict[tuple[Key, ...], list[int]] = field(default_factory=dict, repr=False)

    @cached_property
    def _newlines(self) -> list[int]:
        return [m.start() for m in re.finditer("\n", self.text)]

    def line_at(self, offset: int) -> int:
        """1-based line of a character offset."""
        return bisect.bisect_left(self._newlines, offset) + 1

    def _offset(self, keys: Sequence[Key]) -> int | None:
        offset = _skip_ws(self.text, 0)
        for depth, key in enumerate(keys):
            if isinstance(key, int):
                elements = self._elements(tuple(keys[:depth]), offset)
                if not 0 <= key < len(elements):
                    return None
                offset = elements[key]
                continue
            if offset >= len(self.text) or self.text[offset] != "{":
                return None
            found = [start for name, start in _object_entries(self.text, offset) if name == key]
            if not found:
                return None
            offset = found[-1]  # json.loads keeps the last of duplicate keys
        return offset

    def _elements(self, keys: tuple[Key, ...], offset: int) -> list[int]:
        if keys not in self._arrays:
            is_array = offset < len(self.text) and self.text[offset] == "["
            self._arrays[keys] = _array_offsets(self.text, offset) if is_array else []
        return self._arrays[keys]

    def line_of(self, *keys: Key) -> int | None:
        """The line where the value at ``keys`` starts, or None when there is no such value."""
        offset = self._offset(keys)
        return None if offset is None else self.line_at(offset)

    def element_lines(self, *keys: Key) -> tuple[int, ...]:
        """The line of each element of the array at ``keys`` (empty when it is not an array)."""
        offset = self._offset(keys)
        if offset is None:
            return ()
        return tuple(self.line_at(o) for o in self._elements(tuple(keys), offset))


def load_doc(path: Path) -> JsonDoc:
    """Parse a whole-file JSON document; a bad file is a :class:`FormatError` with its line."""
    value = load_json(path)
    return JsonDoc(path=path, text=path.read_bytes().decode("utf-8"), value=value)


# --------------------------------------------------------------------------------------------------
# Sniffing


@dataclass(frozen=True)
class Peek:
    """What the head of a JSON document shows: its kind, keys, and the keys of first elements."""

    kind: str | None
    """``"object"``, ``"list"`` or None (not JSON, or not a container)."""
    keys: tuple[str, ...] = ()
    """Top-level keys (object), or the keys of the first element (list of objects)."""
    first_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """For an object: key -> the keys of the first element of the array under that key."""
    scalars: Mapping[str, Any] = field(default_factory=dict)
    """Top-level (object) or first-element (list) string values, read where complete."""


def _keys_and_scalars(text: str, i: int) -> tuple[tuple[str, ...], dict[str, Any]]:
    entries = _object_entries(text, i)
    scalars: dict[str, Any] = {}
    for name, start in entries:
        if start < len(text) and text[start] == '"':
            try:
                scalars[name] = _DECODER.raw_decode(text, start)[0]
            except ValueError:  # not JSON, or a number past the digit limit
                continue
    return tuple(name for name, _ in entries), scalars


def _first_element_keys(text: str, start: int) -> tuple[str, ...]:
    if start >= len(text) or text[start] != "[":
        return ()
    first = _array_offsets(text, start, limit=1)
    if not first or text[first[0]] != "{":
        return ()
    return tuple(name for name, _ in _object_entries(text, first[0]))


def peek(head: str) -> Peek:
    """The structure of a JSON document's head (tolerates a head cut anywhere)."""
    text = head.lstrip("\ufeff")
    i = _skip_ws(text, 0)
    if i >= len(text) or text[i] not in "[{":
        return Peek(kind=None)
    if text[i] == "{":
        keys, scalars = _keys_and_scalars(text, i)
        first = {name: _first_element_keys(text, start) for name, start in _object_entries(text, i)}
        return Peek(kind="object", keys=keys, first_keys=first, scalars=scalars)
    first_offsets = _array_offsets(text, i, limit=1)
    if not first_offsets or text[first_offsets[0]] != "{":
        return Peek(kind="list")
    keys, scalars = _keys_and_scalars(text, first_offsets[0])
    return Peek(kind="list", keys=keys, scalars=scalars)


__all__ = ["JsonDoc", "Key", "Peek", "load_doc", "peek"]
