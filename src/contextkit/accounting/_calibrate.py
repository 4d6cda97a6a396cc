"""A session's token counter, calibrated on the session's own recorded usage.

Claude's tokenizer is not public: contextkit counts with tiktoken scaled by a factor fitted per
tokenizer generation on recorded sessions (:mod:`contextkit.tokens`). A model that shipped after
the last fit has no such factor (the 5-series: about 30% more tokens than the generation before
for the same text), and a team's content (code, prose, languages) moves the factor too. A file
with recorded usage says what the provider counted at every call, so the factor of the session
itself can be measured, with no fit to any other recording:

- between two consecutive calls that only appended to the request (no compaction, no harness
  reset, no resume), the billed input grew by ``factor x`` the text the counter sees appended, plus
  the fixed overheads of the messages and tool blocks appended (the hidden prefix cancels);
- :func:`session_factor` is the median of those ratios over the pairs that appended at least
  :data:`MIN_GROWTH` tokens of text (:data:`MIN_PAIRS` of them at least: fewer say too little,
  and the shipped factor stays). Thinking text keeps its scale relative to the factor. Thinking a
  file holds without its text or summarised (:mod:`._thinking`) is left out of the count, and
  what it appended, sized from the billed output, is taken off the growth before the ratio.

:func:`session_counter` is the counter every command uses for a session: the shipped counter,
with the session's factor in place where there is one. Its name says so (``x1.52, measured on
this session``), and so does every ledger's note on the counter. Sessions without usage, and
other models than the session's own (a what-if), keep the shipped counter.
"""

from __future__ import annotations

import statistics
import warnings
import weakref
from dataclasses import dataclass

from contextkit.accounting._thinking import omitted_thinking, without_thinking
from contextkit.cache import strip_prior_thinking
from contextkit.messages import Conversation, ThinkingBlock
from contextkit.models import ModelInfo
from contextkit.session import Session
from contextkit.tokens import (
    CalibratedCounter,
    TokenCounter,
    UnfittedTokenizerWarning,
    counter_for,
)

MIN_GROWTH = 200
"""Text tokens (by the uncalibrated encoding) a call must append for its growth to measure the
factor: smaller steps are dominated by the per-message overheads and rounding."""
MIN_PAIRS = 5
"""Pairs of calls a session needs before its own factor replaces the shipped one."""
SESSION_NOTE = "measured on this session"


@dataclass(frozen=True)
class SessionFactor:
    factor: float
    pairs: int
    """How many pairs of consecutive calls measured it."""


_LAST: list[tuple[weakref.ref[Session], str, SessionFactor | None]] = []
"""The last session measured (weakly: it must not outlive its file in a fleet worker), with the
counter it was measured for: a comparison replays one session under every strategy in turn."""


def session_factor(session: Session, counter: CalibratedCounter) -> SessionFactor | None:
    """The factor ``session``'s recorded usage shows for ``counter``'s encoding (see the module
    docstring), or None when fewer than :data:`MIN_PAIRS` pairs measure it. Measured once per
    session object in a row."""
    for seen, name, measured in _LAST:
        if seen() is session and name == counter.name:
            return measured
    measured = _measure(session, counter)
    _LAST[:] = [(weakref.ref(session), counter.name, measured)]
    return measured


def _measure(session: Session, counter: CalibratedCounter) -> SessionFactor | None:
    params = counter.params
    thinking = params.thinking_scale / params.factor
    ones = CalibratedCounter(
        counter.base,
        params.model_copy(update={"factor": 1.0, "thinking_factor": thinking}),
        counter.model,
    )
    twos = CalibratedCounter(
        counter.base,
        params.model_copy(update={"factor": 2.0, "thinking_factor": 2.0 * thinking}),
        counter.model,
    )
    ratios: list[float] = []
    previous: tuple[int, int, int] | None = None
    compactions = set(session.compactions)
    unseen = omitted_thinking(session, counter)
    requests = without_thinking([c.request for c in session.calls], unseen)
    for index, (call, sent) in enumerate(zip(session.calls, requests, strict=True)):
        if call.usage is None:
            previous = None
            continue
        request = strip_prior_thinking(sent)
        one, two = ones.count_conversation(request), twos.count_conversation(request)
        billed = call.usage.total_input - _carried(request, unseen)
        text, fixed = two - one, 2 * one - two
        if previous is not None and index not in compactions and call.cache_reset is None:
            grown, overheads, paid = text - previous[0], fixed - previous[1], billed - previous[2]
            if grown >= MIN_GROWTH and paid > 0:
                ratios.append((paid - overheads) / grown)
        previous = (text, fixed, billed)
    if len(ratios) < MIN_PAIRS:
        return None
    return SessionFactor(statistics.median(ratios), len(ratios))


def _carried(request: Conversation, unseen: dict[str, int]) -> int:
    """Billed tokens of the thinking ``request`` carries that the bill sized
    (:func:`omitted_thinking`; its text is left out of the count)."""
    if not unseen:
        return 0
    return sum(
        unseen.get(b.signature, 0)
        for m in request.messages
        if not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ThinkingBlock) and b.signature
    )


_WARNED: set[str] = set()
"""Models already named as unfitted in this process (once each, not once per session)."""


def _warn_unfitted(counter: CalibratedCounter) -> None:
    if counter.params.fitted or counter.name in _WARNED:
        return
    _WARNED.add(counter.name)
    warnings.warn(
        f"{counter.model.id or counter.params.family}: no calibration is fitted for this model's "
        f"tokenizer, and the session has too little usage to measure its own: counts are "
        f"{counter.name}, which may be several percent off (a file with recorded usage measures "
        "its own factor)",
        UnfittedTokenizerWarning,
        stacklevel=3,
    )


def session_counter(session: Session, model: ModelInfo | None = None) -> TokenCounter:
    """The counter for ``session`` (or for ``model``, a what-if: then the shipped one): the
    shipped counter of its model, with the factor its own recorded usage measures in place."""
    own = session.model_info
    counter = counter_for(model or own)
    if (model is not None and model != own) or not isinstance(counter, CalibratedCounter):
        return counter
    measured = session_factor(session, counter)
    if measured is None:
        _warn_unfitted(counter)
        return counter
    params = counter.params
    scale = measured.factor / params.factor
    update = {
        "factor": measured.factor,
        "thinking_factor": params.thinking_scale * scale,
        "fitted": True,
        "note": f"{SESSION_NOTE} ({measured.pairs} pairs of calls)",
    }
    return CalibratedCounter(counter.base, params.model_copy(update=update), counter.model)


__all__ = ["MIN_GROWTH", "MIN_PAIRS", "SessionFactor", "session_counter", "session_factor"]
