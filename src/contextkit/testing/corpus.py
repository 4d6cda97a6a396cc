"""Every session of a folder of recordings, one file loaded at a time: what the corpus tests, the
digest script and the fitting scripts walk over."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from contextkit.formats import load
from contextkit.replay import find_session_files
from contextkit.session import Session


def labelled_sessions(root: Path) -> Iterator[tuple[str, Session]]:
    """``(label, session)`` for every session with calls under ``root``, subagents included,
    labelled ``file[#index][/subagent id]`` (the file relative to ``root``). Files are read
    leniently (a broken record is skipped and listed in the file's ``skipped``, not fatal) and one
    at a time, so memory follows the largest file."""
    for path in find_session_files([root]).files:
        loaded = load(path, lenient=True)
        name = str(path.relative_to(root))
        for i, top in enumerate(loaded.sessions):
            label = name if len(loaded.sessions) == 1 else f"{name}#{i}"
            for sub in top.all_sessions():
                if sub.calls:
                    suffix = "" if sub is top else f"/{sub.session_id}"
                    yield label + suffix, sub


__all__ = ["labelled_sessions"]
