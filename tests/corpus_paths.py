"""Where the recorded corpus's session files are (imported by tests; not a fixture module, so it
does not clash with the conftest modules of tests/ and benchmarks/)."""

from __future__ import annotations

from pathlib import Path

NOTES = frozenset({"SOURCES.md", "README.upstream.md"})
"""The corpus's own notes and licences: not sessions."""

SESSION_SUFFIXES = frozenset({".jsonl", ".json", ".traj", ".md"})

PENDING_READERS: dict[str, str] = {}
"""Corpus files no reader takes yet, relative to the corpus root. The per-file "reads" test marks
exactly these as strict expected failures, so an entry must go as soon as its reader works; the
tests that loop over the corpus leave them out (they cannot be read) through
:func:`readable_corpus_files`, never silently."""


def corpus_files(root: Path) -> list[Path]:
    """Every session file of the corpus (data files only; notes and licences left out)."""
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in SESSION_SUFFIXES and p.name not in NOTES
    )


def pending_reason(root: Path, path: Path) -> str | None:
    """Why ``path`` cannot be read yet (an entry of :data:`PENDING_READERS`), else None."""
    return PENDING_READERS.get(path.relative_to(root).as_posix())


def readable_corpus_files(root: Path) -> list[Path]:
    """The corpus files that have a reader: :func:`corpus_files` less :data:`PENDING_READERS`."""
    return [p for p in corpus_files(root) if pending_reason(root, p) is None]
