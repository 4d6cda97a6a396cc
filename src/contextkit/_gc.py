"""Pausing the cyclic garbage collector while a whole session is walked.

Pricing or replaying a session allocates hundreds of thousands of small containers (views,
shapes, memo entries, fact sets) and keeps most of them, so the collector runs again and again
and its full passes traverse the loaded session each time, while finding nothing to free (these
objects form no reference cycles). Measured on a 300-call replay: about 7% of its time
(``benchmarks/bench_replay.py``). Reference counting still frees everything as usual; only the
search for cycles waits until the walk ends. The same pattern as Mercurial's ``util.nogc``.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def no_cycle_collection(func: Callable[P, R]) -> Callable[P, R]:
    """Run ``func`` with the cyclic collector paused (restored after, also on error; nested
    calls and callers that already paused it leave it as they found it)."""

    @wraps(func)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return func(*args, **kwargs)
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            gc.enable()

    return paused
