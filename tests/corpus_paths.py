"""Where the recorded corpus's session files are (imported by tests; not a fixture module, so it
does not clash with the conftest modules of tests/ and benchmarks/)."""

from __future__ import annotations

from pathlib import Path


def corpus_files(root: Path) -> list[Path]:
    """Every session file of the corpus (data files only; notes and licences left out)."""
    return sorted(
        p for p in root.rglob("*") if p.is_file() and p.suffix in {".jsonl", ".json", ".traj"}
    )
