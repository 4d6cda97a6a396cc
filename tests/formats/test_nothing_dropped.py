"""Nothing dropped silently, over every reader the corpus (or a file written from it) exercises:
a lenient read of a file with one record damaged either has the calls of the clean file, or
reports what it lost, as a skipped record (with line and reason) or a record set aside by kind.
Where a reader's record is at most one call (one JSON line, one request, one step), each call
lost is one skip or set-aside; :data:`MANY_CALLS_A_RECORD` are the readers where one record can
hold several calls (the count bound is not theirs; that a loss is reported at all still is).

Mutations come from :mod:`contextkit.testing.mutate` (seeded), less the kinds that remove whole
records on purpose (``truncate``, ``drop_line``), as in the fuzz suite."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from contextkit.errors import ContextkitError, FormatError
from contextkit.formats import format_names, load
from contextkit.formats._atif_write import to_atif
from contextkit.formats.convert import convert_file
from contextkit.testing.mutate import mutations, shrink
from contextkit.wire import TARGETS
from corpus_paths import readable_corpus_files
from fuzzing import _NO_LOSS_CHECK, Outcome, _outcome

CASES_PER_FILE = 40
TRANSCRIPT = "spotter/tool_heavy.jsonl"
MANY_CALLS_A_RECORD = {
    "openhands-eval": "a line is a whole evaluation instance, its history many calls",
    "swe-agent": "a bad 'history' or 'trajectory' (or attempt) holds every call of its run",
    "gemini-cli": "a message with tool calls holds one call per tool round",
}
NOT_EXERCISED = {
    "contextkit-proxy": "its records come from the proxy (tests/test_proxy_*.py)",
    "cline": "a task folder of two files (tests/formats/test_format_cline.py)",
    "cursor": "an SQLite database",
    "opencode": "an SQLite database or a storage folder",
    "hermes": "an SQLite database or its export (tests/formats/test_format_hermes.py)",
    "hermes-trajectory": "no corpus file (tests/formats/test_format_hermes_trajectory.py)",
    "openhands-sdk": "a conversation folder of event files",
    "aider-llm": "no corpus file (tests/formats/test_format_aider.py)",
}
"""Readers this byte-level test does not reach (no single corpus-shaped file to mutate):
``tests/formats/test_nothing_dropped_built.py`` holds them to the same property on inputs built by
their own tests' builders."""


def _written_files(corpus: Path, folder: Path) -> list[Path]:
    """Files of the formats the corpus has none of, written from a corpus transcript: the three
    request forms (``convert``) and an ATIF document."""
    folder.mkdir()
    out = []
    for target in TARGETS:
        converted = convert_file(corpus / TRANSCRIPT, target)
        path = folder / f"{target}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in converted.requests))
        out.append(path)
    doc, _ = to_atif(load(corpus / TRANSCRIPT).sessions[0])
    path = folder / "trajectory.json"
    path.write_text(json.dumps(doc, indent=2))
    out.append(path)
    return out


def _reported(base: Outcome, got: Outcome) -> int:
    aside = sum(max(0, got.set_aside[k] - base.set_aside[k]) for k in got.set_aside)
    return max(0, got.skipped - base.skipped) + aside


def _check_file(source: Path, seed: int, folder: Path) -> tuple[str, int, list[str]]:
    """(format, cases read, failures) for the mutations of ``source``."""
    data = shrink(source.read_bytes(), records=15, items=6)
    path = folder / source.name
    path.write_bytes(data)
    # by name: the copy lies outside the folder some formats are known by
    name = load(source, lenient=True).format
    clean = load(path, lenient=True, format=name)
    base = _outcome(clean)
    failures: list[str] = []
    read = 0
    for index, (kind, mutated) in enumerate(mutations(data, seed=seed, count=CASES_PER_FILE)):
        if kind in _NO_LOSS_CHECK:
            continue
        path.write_bytes(mutated)
        try:
            got = _outcome(load(path, lenient=True, format=name))
        except ContextkitError:
            continue  # not read at all: an error naming the file (tests/test_fuzz.py)
        read += 1
        lost, reported = base.calls - got.calls, _reported(base, got)
        case = f"{source.name} case {index} {kind}: {lost} calls lost"
        if lost > 0 and reported == 0:
            failures.append(f"{case}, unreported")
        elif lost > reported and name not in MANY_CALLS_A_RECORD:
            failures.append(f"{case}, {reported} reported")
    return name, read, failures


@pytest.mark.corpus
@pytest.mark.slow
def test_every_lost_call_is_reported(corpus: Path, tmp_path: Path) -> None:
    sources = [*readable_corpus_files(corpus), *_written_files(corpus, tmp_path / "written")]
    work = tmp_path / "work"
    work.mkdir()
    formats: Counter[str] = Counter()
    failures: list[str] = []
    for seed, source in enumerate(sources):
        name, read, failed = _check_file(source, seed, work)
        formats[name] += read
        failures.extend(failed)
    assert failures == []
    # every reader is exercised with reads to compare, or listed with why it is not
    assert set(formats) | set(NOT_EXERCISED) == set(format_names())
    assert not set(formats) & set(NOT_EXERCISED)
    assert all(count >= 5 for count in formats.values()), formats


@pytest.mark.corpus
@pytest.mark.parametrize("key", ["trajectory", "history"])
def test_a_null_swe_agent_trajectory_or_history_is_reported(
    corpus: Path, tmp_path: Path, key: str
) -> None:
    """The history of this file stops before the last step, which is a call of its own: with
    ``trajectory`` null that call is gone, and the read says so (it used to say nothing). A null
    ``history`` is reported too (the calls are rebuilt from the steps, without the messages)."""
    source = corpus / "swe-agent" / "6e44b9__sweagenttestrepo-1c2844.traj"
    doc = json.loads(source.read_text())
    clean = load(source)
    doc[key] = None
    path = tmp_path / source.name
    text = json.dumps(doc, indent=2)
    path.write_text(text)
    line = text[: text.index(f'"{key}": null')].count("\n") + 1
    with pytest.raises(FormatError, match=f"'{key}' is null") as info:
        load(path)
    assert info.value.line == line
    loaded = load(path, lenient=True)
    assert [(r.line, r.reason) for r in loaded.skipped] == [
        (line, f"'{key}' is null (expected a list)")
    ]
    if key == "trajectory":
        assert loaded.calls == clean.calls - 1  # the step past the history
    else:
        assert loaded.calls == clean.calls  # rebuilt from the steps, as for a file without one


@pytest.mark.corpus
def test_a_swe_agent_trajectory_step_that_is_not_an_object_is_reported(
    corpus: Path, tmp_path: Path
) -> None:
    """Found by the fuzz run (seed 39, case 4: ``trajectory`` replaced by ``[1, [2]]``): the
    steps past the history are calls, and with the steps gone the read had 2 calls of 5 and said
    nothing. Each step that is not an object is now a bad record of its line."""
    source = corpus / "swe-agent" / "6e44b9__sweagenttestrepo-1c2844.traj"
    doc = json.loads(source.read_text())
    doc["trajectory"] = [1, *doc["trajectory"][1:]]
    path = tmp_path / source.name
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(FormatError, match="trajectory step 0 is not an object"):
        load(path)
    loaded = load(path, lenient=True)
    assert [r.reason for r in loaded.skipped] == ["trajectory step 0 is not an object"]


@pytest.mark.corpus
def test_swe_agent_calls_its_own_totals_count_and_it_does_not_hold_are_named(
    corpus: Path, tmp_path: Path
) -> None:
    """Found by the 20,000-case fuzz run (seed 1039, case 248: a flipped byte renamed the
    ``trajectory`` key): the steps past the history are gone, and the file reads as a history of
    fewer calls than its ``model_stats`` counts. The note says how many it does not hold."""
    source = corpus / "swe-agent" / "6e44b9__sweagenttestrepo-1c2844.traj"
    doc = json.loads(source.read_text())
    doc["tsajectory"] = doc.pop("trajectory")
    path = tmp_path / source.name
    path.write_text(json.dumps(doc, indent=2))
    (session,) = load(path).sessions
    assert len(session.calls) == 4
    assert (
        "model_stats counts 5 API calls, the history shows 4: 1 call(s) the file does not hold"
        in (session.notes)
    )
