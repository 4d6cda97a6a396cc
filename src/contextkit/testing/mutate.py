"""A seeded mutator of recorded sessions, for fuzzing the readers (``tests/test_fuzz.py``).

:func:`mutations` yields ``(kind, data)`` pairs: the bytes of a file after one mutation, chosen
and placed by a :class:`random.Random` of the given seed, so a failing case is found again from its
seed and index. The kinds (:data:`KINDS`) are what a hostile user or a broken disk produces:

- ``truncate``, ``flip_bytes``, ``drop_line``, ``duplicate_line``: damage to the bytes or lines;
- ``invalid_utf8``: bytes that are not UTF-8 inside a string;
- ``lone_surrogate``: a string holding an unpaired surrogate escape (``"\\ud800"``);
- ``wrong_type``: a value of the JSON document replaced by one of another type;
- ``deep_nesting``: a value replaced by arrays or objects nested thousands deep;
- ``token_count``: a token count (any key holding ``token``) set to ``1e999``, ``NaN``, a negative
  number, a fraction, a huge integer, a string, a list or an object;
- ``list_type``: a ``type`` or ``role`` value wrapped in a list (unhashable);
- ``long_number``: a number (or, where there is none, any value) replaced by an integer of 5,000
  digits, past Python's limit for converting one;
- ``half_line``: the last line cut mid-way and left without its newline (a session still being
  written, or one whose writer crashed);
- ``utf8_bom``: a UTF-8 byte order mark before the first byte; ``utf16``: the whole file in
  UTF-16 (an editor's "save as").

Structural kinds work on JSON: a JSON-lines file has one line mutated; a JSON document one node.
A file that is not JSON gets the byte-level kinds. :func:`shrink` cuts a file to its first records
so a fuzz run stays fast.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

KINDS: tuple[str, ...] = (
    "truncate",
    "flip_bytes",
    "drop_line",
    "duplicate_line",
    "invalid_utf8",
    "lone_surrogate",
    "wrong_type",
    "deep_nesting",
    "token_count",
    "list_type",
    "long_number",
    "half_line",
    "utf8_bom",
    "utf16",
)
_STRUCTURAL = frozenset(
    {"lone_surrogate", "wrong_type", "deep_nesting", "token_count", "list_type", "long_number"}
)
_BYTE_KINDS = ("truncate", "flip_bytes", "invalid_utf8", "drop_line", "duplicate_line")
_BAD_COUNTS = ("1e999", "NaN", "-Infinity", "-7", "2.5", "1e30", str(2**80), '"12"', "[3]",
               '{"n": 1}', "true", "null")  # fmt: skip
_OTHER_VALUES = ("null", "true", "0", "-1", "1.5", '""', '"x"', "[]", "{}", "[1, [2]]",
                 '{"type": "text"}')  # fmt: skip
_MARK = "\x00contextkit-mutation\x00"
"""Placeholder a node is replaced by before dumping; the dump's ``"<mark>"`` is then replaced by
raw JSON text (``1e999``, ``NaN``, deep nesting are not values ``json.dumps`` writes)."""


def shrink(data: bytes, *, records: int = 30, items: int = 12) -> bytes:
    """The file's first ``records`` lines (JSON lines or text), or a JSON document with every
    list cut to its first ``items`` entries."""
    text = data.decode("utf-8", "surrogatepass")
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if doc is not None:
            return json.dumps(_cut_lists(doc, items), ensure_ascii=False).encode(
                "utf-8", "surrogatepass"
            )
    return "".join(text.splitlines(keepends=True)[:records]).encode("utf-8", "surrogatepass")


def _cut_lists(value: Any, items: int) -> Any:
    if isinstance(value, list):
        return [_cut_lists(v, items) for v in value[:items]]
    if isinstance(value, dict):
        return {k: _cut_lists(v, items) for k, v in value.items()}
    return value


def mutations(data: bytes, *, seed: int, count: int) -> Iterator[tuple[str, bytes]]:
    """``count`` mutated copies of ``data`` (a kind and the bytes), seeded."""
    rng = random.Random(seed)
    lines = data.splitlines(keepends=True)
    jsonl = _json_lines(lines)
    document = None if jsonl else _document(data)
    for _ in range(count):
        kind = rng.choice(KINDS)
        if kind in _STRUCTURAL and jsonl:
            at = rng.choice(jsonl)
            line = _mutate_json(json.loads(lines[at]), kind, rng)
            if line is not None:
                yield kind, b"".join([*lines[:at], line.encode() + b"\n", *lines[at + 1 :]])
                continue
        elif kind in _STRUCTURAL and document is not None:
            mutated = _mutate_json(document, kind, rng)
            if mutated is not None:
                yield kind, mutated.encode()
                continue
        if kind in _STRUCTURAL:
            kind = rng.choice(_BYTE_KINDS)
        yield kind, _bytes(data, lines, kind, rng)


def _json_lines(lines: list[bytes]) -> list[int]:
    """Indexes of lines holding a JSON object (none unless most non-blank lines do)."""
    found = []
    for i, line in enumerate(lines):
        try:
            if isinstance(json.loads(line), dict):
                found.append(i)
        except ValueError:
            continue
    filled = sum(1 for line in lines if line.strip())
    return found if len(found) >= 2 and 2 * len(found) >= filled else []


def _document(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


def _bytes(data: bytes, lines: list[bytes], kind: str, rng: random.Random) -> bytes:
    if kind == "utf8_bom":
        return b"\xef\xbb\xbf" + data
    if kind == "utf16":
        return data.decode("utf-8", "surrogatepass").encode("utf-16", "surrogatepass")
    if kind == "half_line":
        body = data.rstrip(b"\n")
        cut = body.rfind(b"\n") + 1  # the last line's start
        last = body[cut:]
        return body[:cut] + last[: max(len(last) // 2, 1)] if last else data
    if kind == "truncate" or not data:
        return data[: rng.randrange(len(data) + 1)]
    if kind == "flip_bytes":
        out = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    if kind == "invalid_utf8":
        at = rng.randrange(len(data))
        return data[:at] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88")) + data[at:]
    if len(lines) < 2:
        return data[: len(data) // 2]
    at = rng.randrange(len(lines))
    if kind == "drop_line":
        return b"".join(lines[:at] + lines[at + 1 :])
    return b"".join(lines[: at + 1] + lines[at:])  # duplicate_line


def _mutate_json(doc: Any, kind: str, rng: random.Random) -> str | None:
    """``doc`` dumped with one node replaced as ``kind`` says; None when it has no such node."""
    if kind == "token_count":
        paths = _paths(doc, lambda key, _: isinstance(key, str) and "token" in key.lower())
        raw = rng.choice(_BAD_COUNTS)
    elif kind == "list_type":
        paths = _paths(doc, lambda key, value: key in ("type", "role") and isinstance(value, str))
        raw = ""
    elif kind == "lone_surrogate":
        paths = _paths(doc, lambda _, value: isinstance(value, str))
        raw = ""
    elif kind == "long_number":
        numbers = _paths(doc, lambda _, value: isinstance(value, int | float))
        paths = numbers or _paths(doc, lambda _, __: True)
        raw = "9" * 5_000
    else:
        paths = _paths(doc, lambda _, __: True)
        raw = rng.choice(_OTHER_VALUES) if kind == "wrong_type" else _deep(rng)
    if not paths:
        return None
    path = rng.choice(paths)
    old = _get(doc, path)
    if kind == "list_type":
        raw = json.dumps([old])
    elif kind == "lone_surrogate":
        cut = rng.randrange(len(old) + 1)
        raw = json.dumps(old[:cut])[:-1] + rng.choice(("\\ud800", "\\udfff", "\\udc00x")) + '"'
        raw = raw[:-1] + json.dumps(old[cut:])[1:]
    text = json.dumps(_replaced(doc, path, _MARK), ensure_ascii=False)
    return text.replace(json.dumps(_MARK, ensure_ascii=False), raw, 1)


def _deep(rng: random.Random) -> str:
    depth = rng.choice((2_000, 20_000, 100_000))
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


Path_ = tuple[str | int, ...]


def _paths(doc: Any, wanted: Any, limit: int = 5_000) -> list[Path_]:
    """Paths of nodes (not the root) for which ``wanted(key, value)`` holds."""
    out: list[Path_] = []
    stack: list[tuple[Path_, Any]] = [((), doc)]
    while stack and len(out) < limit:
        path, value = stack.pop()
        children: list[tuple[str | int, Any]] = []
        if isinstance(value, dict):
            children = list(value.items())
        elif isinstance(value, list):
            children = list(enumerate(value))
        for key, child in children:
            if wanted(key, child):
                out.append((*path, key))
            stack.append(((*path, key), child))
    return out


def _get(doc: Any, path: Path_) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _replaced(doc: Any, path: Path_, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in doc.items()}
    return [(_replaced(v, rest, new) if i == head else v) for i, v in enumerate(doc)]


__all__ = ["KINDS", "mutations", "shrink"]
