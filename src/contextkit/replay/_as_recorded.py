"""``as-recorded``: the recording itself, replayed: the recorded requests and, where the file has
it, the recorded usage (the real bill), with the harness's own compaction calls counted in its
cost and its own summaries probed like a strategy's."""

from __future__ import annotations

from dataclasses import replace

from contextkit.accounting import price_session, session_counter
from contextkit.messages import Receipt
from contextkit.pricing import ModelPrice
from contextkit.replay._probes import probe_harness
from contextkit.replay._recall import CallRecall, RecallReport
from contextkit.replay._replay import AS_RECORDED, Replay, rows_of
from contextkit.session import Session
from contextkit.tokens import TokenCounter


def replay_as_recorded(
    session: Session,
    *,
    counter: TokenCounter | None = None,
    price: ModelPrice | None = None,
    window: int | None = None,
) -> Replay:
    """The recording itself: recorded requests, recorded usage where present (the real bill)."""
    model = session.model_info
    counter = counter or session_counter(session)
    window = window or model.context_window or 200_000
    ledger = price_session(session, counter, price, output="recorded")
    none: list[tuple[Receipt, ...]] = [() for _ in session.calls]
    accepted = [c.usage is not None for c in session.calls]
    recall = [CallRecall(0, 0, ())] * len(session.calls)
    shown = ledger  # with recorded usage, the rows are the bill, as the session's row is
    if ledger.recorded is not None:
        billed = ledger.recorded
        shown = replace(ledger, simulated=billed, context_tokens=billed.total_input)
    rows = rows_of(session, shown, none, recall, window, accepted=accepted)
    harness, harness_simulated, harness_notes = _harness_compactions(session)
    return Replay(
        harness_usd=harness,
        harness_simulated_usd=harness_simulated,
        session=session,
        strategy=AS_RECORDED,
        sent=tuple(c.request for c in session.calls),
        receipts=tuple(() for _ in session.calls),
        ledger=ledger,
        recall=RecallReport(0, 0, ()),
        rows=rows,
        window=window,
        notes=(
            "the recording as it was: recorded requests and, where present, recorded usage",
            *harness_notes,
        ),
        views=tuple(c.request for c in session.calls),
        tapes=tuple(c.request for c in session.calls),
        probes=probe_harness(session),
    )


def _harness_compactions(session: Session) -> tuple[float, float, tuple[str, ...]]:
    """The recorded and the simulated cost of the calls the harness made to compact this
    session (its own compaction subagents), which belong to what the recording cost."""
    subs = [s for s in session.subagents if s.harness_compaction and s.calls]
    if not subs:
        return 0.0, 0.0, ()
    ledgers = [price_session(s, output="recorded") for s in subs]
    total = sum(float(g.recorded.total_cost or 0.0) for g in ledgers if g.recorded is not None)
    simulated = sum(float(g.simulated.total_cost or 0.0) for g in ledgers)
    calls = sum(len(s.calls) for s in subs)
    note = (
        f"as-recorded includes the harness's own compaction: {calls} call(s) in "
        f"{len(subs)} compaction subagent(s), ${total:.4f} (also listed as their own sessions)"
    )
    return total, simulated, (note,)


__all__ = ["replay_as_recorded"]
