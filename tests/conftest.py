"""Shared fixtures. The recorded corpus is read from $CONTEXTKIT_CORPUS, never copied here.

When CONTEXTKIT_CORPUS is unset, corpus tests skip with a reason. When it is set (CI sets it), a
missing folder is a failure, not a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
