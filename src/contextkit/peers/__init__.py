"""What evaluators would otherwise pick, replayed as contextkit strategies: the same accountant,
recall, probes and recovery score them as they score the presets.

Each peer is an extra, imported when the peer is first built (:data:`PEERS`):

- ``headroom-proxy`` / ``headroom-library``: Headroom's ``compress()`` with its offline
  compressors, as its proxy applies it and as a harness calls the library on every request
  (:mod:`._headroom`; ``pip install headroom-ai``);
- ``langchain-trim`` / ``langchain-summary``: LangChain's ``trim_messages`` on every request and
  its ``SummarizationMiddleware`` (:mod:`._langchain`; ``pip install langchain``).

A peer object keeps what it sent per conversation (a proxy's or a client's state), so use a new
one per session replayed: :func:`peer` builds one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from contextkit.errors import ConfigError

if TYPE_CHECKING:  # loaded with the first peer built: naming peers loads no strategy
    from contextkit.peers._rewriting import RequestRewriter


def _headroom_proxy() -> RequestRewriter:
    from contextkit.peers._headroom import HeadroomCompress  # noqa: PLC0415

    return HeadroomCompress("proxy")


def _headroom_library() -> RequestRewriter:
    from contextkit.peers._headroom import HeadroomCompress  # noqa: PLC0415

    return HeadroomCompress("library")


def _langchain_trim() -> RequestRewriter:
    from contextkit.peers._langchain import LangChainTrim  # noqa: PLC0415

    return LangChainTrim()


def _langchain_summary() -> RequestRewriter:
    from contextkit.peers._langchain import LangChainSummary  # noqa: PLC0415

    return LangChainSummary()


PEERS: Mapping[str, Callable[[], RequestRewriter]] = {
    "headroom-proxy": _headroom_proxy,
    "headroom-library": _headroom_library,
    "langchain-trim": _langchain_trim,
    "langchain-summary": _langchain_summary,
}
PEER_NAMES = tuple(PEERS)


def __getattr__(name: str) -> Any:
    if name == "RequestRewriter":
        from contextkit.peers._rewriting import RequestRewriter  # noqa: PLC0415

        return RequestRewriter
    raise AttributeError(f"module 'contextkit.peers' has no attribute {name!r}")


def peer(name: str) -> RequestRewriter:
    """A new peer strategy by name (:data:`PEER_NAMES`); a clear error when its extra is missing."""
    make = PEERS.get(name)
    if make is None:
        raise ConfigError(f"no peer named {name!r}; peers: {', '.join(PEER_NAMES)}")
    return make()


__all__ = ["PEERS", "PEER_NAMES", "RequestRewriter", "peer"]
