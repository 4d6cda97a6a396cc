"""contextkit: decide what stays in an LLM agent's context, price every call the way providers
bill it, and replay strategies on recorded sessions.

The packages, one per layer, each importing only the layers below it (import-linter checks it;
``docs/architecture.md`` says more). From the top down:

- ``cli`` (the ``contextkit`` command) and ``testing`` (doubles: fake provider servers, builders,
  hypothesis strategies);
- ``fleet`` (thousands of sessions: Parquet, DuckDB, Ray), ``adapters`` (framework hooks),
  ``proxy`` (the recording, compacting HTTP proxy);
- ``demo`` and ``report`` (the built-in example; the HTML page);
- ``estimate`` (cost per ticket, what-ifs);
- ``replay`` (a recording under a strategy, scored; ``compare``; the oracle);
- ``engine`` (``ContextEngine`` for a live loop, the SDK wrappers);
- ``peers`` (Headroom and LangChain replayed as strategies, to compare with the presets);
- ``strategies`` (what shapes the view, and how strategies compose; the presets);
- ``accounting`` (the ledger, what a file omits, the cache doctor);
- ``cache`` and ``pricing`` (the prompt-cache simulator; prices per model and token class);
- ``formats`` (one reader per harness file format);
- ``tokens`` (counters and their calibration);
- ``wire`` (provider payloads <-> messages, streams);
- ``session`` (a recorded session: calls with request, response, usage);
- ``messages`` (the frozen message model, invariants, repair);
- ``models`` (a model id resolved once: provider, window, tokenizer, dated facts);
- ``errors`` and ``_gc`` (exceptions; pausing the cycle collector).

Start with ``contextkit.engine.anthropic.wrap`` (a harness), ``contextkit.replay.replay`` (an
evaluation) or ``contextkit.formats.load`` (reading a file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    __version__: str


def __getattr__(name: str) -> str:
    # Looked up on first use: importing importlib.metadata costs the command line's start-up
    # 40-60 ms, more than a third of its whole import.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        found = version("contextkit")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found


__all__ = ["__version__"]
