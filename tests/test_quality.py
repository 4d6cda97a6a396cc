"""Lint, format and types are tests too: ruff and mypy --strict over src, tests, benchmarks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ["src", "tests", "benchmarks"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is not installed in this environment (it is a dev dependency)")
    return found


def test_ruff_lint() -> None:
    result = _run(_tool("ruff"), "check", *TARGETS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(_tool("ruff"), "format", "--check", *TARGETS)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_strict() -> None:
    result = _run(_tool("mypy"), "--strict", *TARGETS)
    assert result.returncode == 0, result.stdout + result.stderr
