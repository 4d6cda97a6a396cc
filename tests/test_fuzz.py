"""Fuzzing every reader with mutated corpus files: each case is a read or a ContextkitError naming
the file, never another exception, never a hang, and a lenient read never loses calls without
saying so (a skipped record or a record set aside).

The normal run fuzzes a few thousand cases (:data:`CASES`); a report run takes more::

    CONTEXTKIT_FUZZ_CASES=12000 uv run pytest tests/test_fuzz.py -m fuzz -s

(the ``fuzz`` test prints the counts). A failing case names its file, seed and index: the same
mutation comes back from ``contextkit.testing.mutate.mutations(shrink(data), seed=..., ...)``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.errors import ContextkitError
from contextkit.testing.mutate import KINDS, mutations, shrink
from corpus_paths import readable_corpus_files
from fuzzing import Report, fuzz_file

CASES = 2_000
LARGE = int(os.environ.get("CONTEXTKIT_FUZZ_CASES", "0"))


def _run(corpus: Path, cases: int, seed: int) -> Report:
    files = readable_corpus_files(corpus)
    per_file = math.ceil(cases / len(files))
    report = Report()
    for i, path in enumerate(files):
        fuzz_file(path, seed=seed + i, count=per_file, report=report)
    return report


def _check(report: Report, cases: int) -> None:
    print(report.summary())
    assert report.cases >= cases
    assert set(report.kinds) == set(KINDS)
    assert report.tracebacks == []
    assert report.hangs == []
    assert report.unnamed == []
    assert report.lost == []


@pytest.mark.corpus
@pytest.mark.slow
def test_mutated_corpus_files_read_or_fail_cleanly(corpus: Path) -> None:
    _check(_run(corpus, CASES, seed=0), CASES)


@pytest.mark.corpus
@pytest.mark.fuzz
@pytest.mark.skipif(LARGE == 0, reason="a long fuzz run: set CONTEXTKIT_FUZZ_CASES=<count>")
def test_many_mutated_corpus_files(corpus: Path) -> None:
    _check(_run(corpus, LARGE, seed=1_000), LARGE)


@pytest.mark.corpus
@pytest.mark.parametrize("command", ["inspect", "replay", "validate", "cost"])
def test_mutated_files_through_the_cli(corpus: Path, tmp_path: Path, command: str) -> None:
    """A sample through the commands as a user runs them (in-process): exit 0, or a
    ContextkitError (which ``contextkit.cli.main`` prints as a message, exit 2)."""
    runner = CliRunner()
    files = readable_corpus_files(corpus)[:: max(1, len(readable_corpus_files(corpus)) // 10)]
    failures = []
    for i, source in enumerate(files):
        data = shrink(source.read_bytes(), records=15, items=6)
        for j, (kind, mutated) in enumerate(mutations(data, seed=7_000 + i, count=3)):
            path = tmp_path / source.name
            path.write_bytes(mutated)
            result = runner.invoke(app, [command, str(path)])
            error = result.exception
            if error is None or isinstance(error, SystemExit | ContextkitError):
                continue
            failures.append(f"{source.name} case {j} {kind}: {type(error).__name__}: {error}")
    assert failures == []


def test_mutations_are_seeded_and_cover_every_kind() -> None:
    data = b"".join(
        b'{"type": "user", "uuid": "%d", "message": {"role": "user", "content": "hi"}, '
        b'"usage": {"input_tokens": 3}}\n' % i
        for i in range(5)
    )
    first = list(mutations(data, seed=3, count=200))
    assert first == list(mutations(data, seed=3, count=200))
    assert {kind for kind, _ in first} == set(KINDS)
    assert all(mutated != data for kind, mutated in first if kind != "truncate")
