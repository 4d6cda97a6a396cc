"""Headroom (PyPI ``headroom-ai``) replayed as a strategy: its ``compress()`` with the offline
compressors only.

Contract of :class:`HeadroomCompress`:

- Every request's messages go through ``headroom.compress`` (Anthropic message dicts, as
  :func:`~contextkit.messages.to_payload` writes them) with ``kompress_model="disabled"``: the ML
  text compressor would download a model, so only its offline transforms run (SmartCrusher on
  JSON and tables, its content router, the cache aligner). ``HEADROOM_OFFLINE=1`` and
  ``HEADROOM_TELEMETRY=off`` are set (unless already set) before it is imported: it opens no
  connection.
- ``mode="proxy"``: as its proxy applies it in its default cache mode. The client's history goes
  through the proxy, which sends its own earlier output again byte for byte and compresses only what
  is new: the tool is given the previous output plus what was appended, with
  ``frozen_message_count`` the messages the previous request sent while the provider's cache still
  holds them (none when it is cold: then the proxy may rewrite them all).
- ``mode="library"``: as a harness calls the library on every request (``compress(messages,
  model=...)`` on its full history, the documented one-liner): the full history is compressed
  anew each time, so earlier messages may come out differently from one request to the next.
- Messages Headroom leaves equal come back as the same objects. Headroom's CCR markers (it may
  replace content with a marker its proxy can expand through a retrieve tool) stay in the view
  as Headroom writes them; the replay does not model that tool.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Literal

from contextkit.errors import ContextkitError
from contextkit.messages import Conversation, Message, Receipt, to_payload
from contextkit.peers._rewriting import RequestRewriter, reuse_unchanged
from contextkit.strategies import CallFacts

INSTALL = "pip install 'contextkit[headroom]' (or: pip install headroom-ai)"
DEFAULT_MODEL = "claude-sonnet-4-5"
"""The model named to Headroom when the call names none (it picks its token counter by it)."""


def _compress() -> Any:
    os.environ.setdefault("HEADROOM_OFFLINE", "1")
    os.environ.setdefault("HEADROOM_TELEMETRY", "off")
    try:
        from headroom import compress  # noqa: PLC0415  (an extra, imported when first used)
    except ImportError as exc:
        raise ContextkitError(f"the headroom peers need headroom-ai: {INSTALL} ({exc})") from None
    for name in ("headroom", "headroom.transforms", "headroom.compress"):
        logging.getLogger(name).setLevel(logging.ERROR)  # per-process notices, not findings
    return compress


class HeadroomCompress(RequestRewriter):
    """Headroom's ``compress()`` on every request (see the module docstring)."""

    def __init__(self, mode: Literal["proxy", "library"] = "proxy") -> None:
        super().__init__()
        if mode not in ("proxy", "library"):
            raise ContextkitError(f"headroom mode {mode!r}: use 'proxy' or 'library'")
        self.mode = mode
        self.name = f"headroom-{mode}"
        self.keeps_history = mode == "library"
        self._fn: Any = None

    def rewrite(
        self, messages: tuple[Message, ...], facts: CallFacts, frozen: int
    ) -> tuple[tuple[Message, ...], tuple[Receipt, ...]]:
        if not messages:
            return messages, ()
        if self._fn is None:
            self._fn = _compress()
        payload = to_payload(Conversation(messages=messages))["messages"]
        options: dict[str, Any] = {"kompress_model": "disabled"}
        if self.mode == "proxy":
            options["frozen_message_count"] = frozen
        try:
            result = self._fn(
                payload,
                model=facts.model or DEFAULT_MODEL,
                model_limit=facts.context_window,
                **options,
            )
        except Exception as exc:  # a peer's own failure, named as such
            raise ContextkitError(
                f"headroom compress() failed at call {facts.call_index}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if result.messages == payload:
            return messages, ()
        try:
            out = tuple(Message.model_validate(m) for m in result.messages)
        except ValueError as exc:
            raise ContextkitError(
                f"headroom returned messages contextkit cannot read at call {facts.call_index}: "
                f"{exc}"
            ) from exc
        return reuse_unchanged(messages, out), ()


__all__ = ["HeadroomCompress"]
