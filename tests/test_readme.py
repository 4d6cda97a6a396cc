"""Every code block of the README runs, in order, in one empty folder (later blocks use what
earlier ones wrote, as a reader following along would):

- ``python``: run as a script (a subprocess of this interpreter);
- ``toml``: written to the file its first line names (``# my-pipeline.toml``);
- ``console`` / ``bash`` / ``sh``: each ``uv run contextkit ...`` line runs through the command
  line in-process and must exit 0; ``uv run pytest`` is this suite itself and is not run again
  from inside it; any other line is an error here (add a rule, or an opt-out);
- ``text`` after ``<!-- readme-test: demo-output -->``: every line must be a line of what
  ``contextkit demo`` prints now.

A block preceded by ``<!-- readme-test: skip (reason) -->`` is not run (network, or your own
data); the reason is required and the skipped blocks are few (checked). A block preceded by
``<!-- readme-test: runs-in tests/FILE.py -->`` is run by that test file instead (it needs what
the block leaves to the reader, such as the reader's own tools): the file must exist and read the
README.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextkit.cli import app

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
FENCE = re.compile(
    r"(?:<!-- readme-test: (?P<mark>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S
)
MAX_SKIPPED = 3


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    mark: str | None
    line: int


def blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [
        Block(m["lang"], m["body"], m["mark"], text.count("\n", 0, m.start()) + 1)
        for m in FENCE.finditer(text)
    ]


def _commands(body: str) -> list[str]:
    """The command lines of a console block, comments after two spaces and ``#`` cut."""
    lines = (re.split(r"\s{2,}#", line)[0].strip() for line in body.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _normal(line: str) -> str:
    return " ".join(line.split())


def test_blocks_are_marked_and_few_are_skipped() -> None:
    found = blocks()
    assert found, "no code block in the README"
    skipped = [b for b in found if b.mark and b.mark.startswith("skip")]
    for b in skipped:
        assert re.fullmatch(r"skip \(.+\)", b.mark or ""), f"README line {b.line}: skip needs why"
    assert len(skipped) <= MAX_SKIPPED, [b.line for b in skipped]
    assert {b.lang for b in found} <= {"python", "toml", "console", "bash", "sh", "text"}


@pytest.mark.slow
def test_every_readme_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "docs").symlink_to(ROOT / "docs")  # blocks name docs/examples/... as in a checkout
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # discovery finds nothing of this machine's
    demo: str | None = None
    for block in blocks():
        where = f"README line {block.line}"
        if block.mark and block.mark.startswith("skip"):
            continue
        if block.mark and block.mark.startswith("runs-in "):
            runner = ROOT / block.mark.removeprefix("runs-in ").strip()
            assert runner.is_file(), f"{where}: {runner} does not exist"
            assert "README" in runner.read_text(encoding="utf-8"), f"{where}: {runner}"
            continue
        if block.lang == "python":
            done = subprocess.run(
                [sys.executable, "-c", block.body],
                capture_output=True,
                text=True,
                check=False,
                env=os.environ.copy(),
            )
            assert done.returncode == 0, f"{where}:\n{done.stderr}"
        elif block.lang == "toml":
            first = block.body.splitlines()[0]
            assert first.startswith("# "), f"{where}: a toml block starts with '# FILE.toml'"
            (tmp_path / first[2:].strip()).write_text(block.body, encoding="utf-8")
        elif block.lang in ("console", "bash", "sh"):
            for command in _commands(block.body):
                if command.startswith("uv run pytest"):
                    continue  # the suite running this test
                assert command.startswith("uv run contextkit "), f"{where}: {command!r}"
                args = shlex.split(command)[3:]
                result = CliRunner().invoke(app, args)
                assert result.exit_code == 0, f"{where}: {command}\n{result.output}"
                if args == ["demo"]:
                    demo = result.stdout
        elif block.mark == "demo-output":
            assert demo is not None, f"{where}: the demo's output is shown before it is run"
            printed = {_normal(line) for line in demo.splitlines()}
            for line in block.body.splitlines():
                assert _normal(line) in printed, f"{where}: the demo no longer prints {line!r}"
