"""Shared fixtures. The recorded corpus is read from $CONTEXTKIT_CORPUS, never copied here.

When CONTEXTKIT_CORPUS is unset, corpus tests skip with a reason. When it is set (CI sets it), a
missing folder is a failure, not a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from corpus_paths import corpus_files, pending_reason

CORPUS_ENV = "CONTEXTKIT_CORPUS"


def corpus_root() -> Path | None:
    value = os.environ.get(CORPUS_ENV)
    return Path(value) if value else None


@pytest.fixture(scope="session")
def corpus() -> Path:
    root = corpus_root()
    if root is None:
        pytest.skip(f"{CORPUS_ENV} is not set: the recorded-session corpus tests need it")
    if not root.is_dir():
        pytest.fail(f"{CORPUS_ENV}={root} is set but the folder does not exist")
    return root


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``corpus_file``: one test per corpus file, those without a reader yet marked as strict
    expected failures (so each mark must go when its reader lands). Without a corpus there is one
    placeholder case; the test's ``corpus`` fixture then skips or fails as for every corpus test."""
    if "corpus_file" not in metafunc.fixturenames:
        return
    root = corpus_root()
    if root is None or not root.is_dir():
        metafunc.parametrize("corpus_file", [pytest.param(None, id="no-corpus")])
        return
    params = []
    for path in corpus_files(root):
        reason = pending_reason(root, path)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(path, id=path.relative_to(root).as_posix(), marks=marks))
    metafunc.parametrize("corpus_file", params)
