"""The HTML report: one self-contained page for a session or a folder of sessions.

:func:`build_report` gathers the figures with the library's own functions (loading, pricing, the
cache doctor, the estimate's what-ifs, optionally the strategy comparison) into a frozen
:class:`ReportData`; :func:`render_html` turns it into one HTML document with inline SVG charts and
no network reference; :func:`write_report` does both and writes the file. See ``docs/report.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from contextkit.estimate import WhatIfs
from contextkit.report._collect import (
    DEFAULT_STRATEGIES,
    DEFAULT_WHAT_IFS,
    Failure,
    HeavyResult,
    ReportData,
    SessionFacts,
    build_report,
    project_of,
    session_facts,
)
from contextkit.report._html import render_html


def write_report(
    files: Sequence[Path],
    out: Path,
    *,
    roots: Sequence[Path] = (),
    skipped: Sequence[tuple[str, str]] = (),
    what_ifs: WhatIfs = DEFAULT_WHAT_IFS,
    strategies: Sequence[str] | None = None,
    jobs: int = 1,
    lenient: bool = False,
    format: str | None = None,
) -> ReportData:
    """:func:`build_report` of ``files``, rendered and written to ``out`` (UTF-8)."""
    data = build_report(
        files,
        roots=roots,
        skipped=skipped,
        what_ifs=what_ifs,
        strategies=strategies,
        jobs=jobs,
        lenient=lenient,
        format=format,
    )
    out.write_text(render_html(data), encoding="utf-8")
    return data


__all__ = [
    "DEFAULT_STRATEGIES",
    "DEFAULT_WHAT_IFS",
    "Failure",
    "HeavyResult",
    "ReportData",
    "SessionFacts",
    "build_report",
    "project_of",
    "render_html",
    "session_facts",
    "write_report",
]
