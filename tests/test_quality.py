"""Lint, format and types are tests too: ruff and mypy --strict over src, tests, benchmarks."""

from __future__ import annotations

import os
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


def _lint_imports(src: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package under ``src`` with the contracts of ``config``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [_tool("lint-imports"), "--config", str(config), "--no-cache"],
        cwd=src.parent,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


LAYERS = "one package per layer: a lower layer never imports a higher one"
NO_CIRCLES = "no import circle between the modules of a package"
NO_FILES = "the library's core reads no file format: what a file omits comes on the Session"


def test_layers_and_no_circles() -> None:
    """The contracts in pyproject.toml: a lower layer never imports a higher one, and no two
    modules of a package import each other in a circle."""
    result = _lint_imports(ROOT / "src", ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    out = " ".join(result.stdout.split())
    assert f"{LAYERS} KEPT" in out
    assert f"{NO_CIRCLES} KEPT" in out
    assert f"{NO_FILES} KEPT" in out


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # the message model reaching up to the CLI
        ("messages/_model.py", "import contextkit.cli", LAYERS),
        # the cache simulator importing the accountant (one layer up)
        ("cache/_simulator.py", "import contextkit.accounting", LAYERS),
        # a wire codec reaching up to the file readers (the wire layer sits below formats)
        ("wire/anthropic.py", "import contextkit.formats", LAYERS),
        # a wire codec counting tokens (tokens sit above the wire layer)
        ("wire/openai_chat.py", "import contextkit.tokens", LAYERS),
        # the accountant learning from a reader what a file omits (the reader puts it on the
        # Session)
        ("accounting/_hidden.py", "import contextkit.formats.claude_code", NO_FILES),
        # two modules of one package importing each other
        ("tokens/_text.py", "import contextkit.tokens._memo", NO_CIRCLES),
    ],
)
def test_layering_contract_fails_on_a_wrong_import(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    """The same contracts on a copy of the package with one wrong import added: seen failing."""
    shutil.copytree(ROOT / "src" / "contextkit", tmp_path / "src" / "contextkit")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "src" / "contextkit" / module
    target.write_text(target.read_text() + f"\n{line}  # deliberately wrong\n")
    result = _lint_imports(tmp_path / "src", tmp_path / "pyproject.toml")
    assert result.returncode != 0, result.stdout
    assert f"{broken} BROKEN" in " ".join(result.stdout.split())


def _layout_packages() -> set[str]:
    """The packages (``name/``) and top-level modules (``name.py``) the architecture page's layout
    names: the first word of each entry, and every ``*.py`` its text names."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = page.split("```\nsrc/contextkit/\n", 1)[1].split("```", 1)[0]
    names = set()
    for line in block.splitlines():
        words = [w.rstrip(":;,") for w in line.split()]
        if line.startswith("  ") and not line.startswith("   ") and words:
            names.add(words[0].rstrip("/").removesuffix(".py"))
        names.update(w.removesuffix(".py") for w in words if w.endswith(".py") and "/" not in w)
    return names


def test_the_architecture_page_names_every_package() -> None:
    """docs/architecture.md's layout lists exactly the packages of ``src/contextkit`` (and its
    top-level modules): a package added, moved or removed without the page fails here."""
    src = ROOT / "src" / "contextkit"
    packages = {p.name for p in src.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in src.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert _layout_packages() == packages | modules
