"""Errors from whole-document JSON readers name a line: a bad token count in a usage object of a
corpus-shaped file (the file written as pretty JSON, one value a line) is an error naming the
field and a line at or before the bad value, inside the record that holds it; ``--lenient``
skips that record, listed with the same line. Also: a JSON file damaged so that no reader claims
it names the line where parsing fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError, UnknownFormatError
from contextkit.formats import load

COUNT_KEYS = ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "input")
FILES = {
    "openhands": "openhands/basic.json",
    "tau2-bench": "tau2-bench/gpt-4.1_airline_default_gpt-4.1_1trials.json",
    "gemini-cli": "codemie-gemini",
}


def _usages(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """``(path, key)`` of every token count in a usage-like object, in document order."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in COUNT_KEYS and isinstance(item, int) and not isinstance(item, bool):
                yield path, key
            yield from _usages(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _usages(item, (*path, index))


def _source(corpus: Path, name: str) -> Path:
    found = corpus / FILES[name]
    if found.is_dir():
        found = next(p for p in sorted(found.rglob("*.json")) if load(p).format == name)
    return found


def _set(doc: Any, path: tuple[Any, ...], key: str, value: Any) -> None:
    for step in path:
        doc = doc[step]
    doc[key] = value


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("bad", [-1, 1.5, "12", [3]])
def test_a_bad_count_names_its_line(corpus: Path, tmp_path: Path, name: str, bad: Any) -> None:
    source = _source(corpus, name)
    doc = json.loads(source.read_text())
    path_in_doc, key = next(_usages(doc))
    _set(doc, path_in_doc, key, "BAD-MARK")
    text = json.dumps(doc, indent=2).replace('"BAD-MARK"', json.dumps(bad))
    target = tmp_path / source.name
    target.write_text(text)
    bad_line = text[: text.index(f'"{key}": {json.dumps(bad)}')].count("\n") + 1
    with pytest.raises(FormatError) as info:
        load(target, format=name)
    error = info.value
    assert key in error.reason, error
    assert error.line is not None, error
    assert error.line <= bad_line
    assert "cannot be read as" not in error.reason  # the reader's own check, not the boundary's
    loaded = load(target, format=name, lenient=True)
    assert [r.line for r in loaded.skipped] == [error.line]


@pytest.mark.corpus
@pytest.mark.parametrize(
    "name", ["swe-agent/function_calling_simple.traj", "openhands/basic.json", *FILES.values()]
)
def test_a_damaged_json_file_names_the_line(corpus: Path, tmp_path: Path, name: str) -> None:
    source = corpus / name
    if source.is_dir():
        source = sorted(source.rglob("*.json"))[0]
    text = json.dumps(json.loads(source.read_text()), indent=2)
    lines = text.split("\n")
    at = len(lines) // 2
    lines[at] = lines[at] + " }}} ,,"
    target = tmp_path / source.name
    target.write_text("\n".join(lines))
    with pytest.raises(FormatError) as info:
        load(target)
    assert info.value.line == at + 1, info.value
    assert "not valid JSON" in str(info.value)
    assert isinstance(info.value, UnknownFormatError) or "not valid JSON" in info.value.reason


@pytest.mark.corpus
@pytest.mark.parametrize("key", ["input", "cacheWrite", "cacheRead", "output"])
def test_a_bad_pi_count_is_a_bad_line(corpus: Path, tmp_path: Path, key: str) -> None:
    """pi checked only that ``usage`` is an object: a bad count in it stopped the whole read
    without a line (``cannot be read as pi``)."""
    lines = (corpus / "pi-mono/large-session.jsonl").read_text().splitlines()
    at = next(
        i
        for i, line in enumerate(lines)
        if isinstance(json.loads(line).get("message", {}).get("usage"), dict)
    )
    record = json.loads(lines[at])
    record["message"]["usage"][key] = -3
    lines[at] = json.dumps(record)
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == at + 1
    assert f"message.usage.{key} must be a non-negative integer" in info.value.reason
    assert [r.line for r in load(path, lenient=True).skipped] == [at + 1]
