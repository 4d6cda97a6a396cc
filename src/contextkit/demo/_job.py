"""The front door: every preset strategy on the built-in example, priced, compared and plotted.

Contract:

- :func:`run_demo` generates the project's own example session (:mod:`contextkit.session.examples`;
  no
  third-party data, no network, no API key), replays it under every preset strategy
  (:func:`contextkit.replay.run_strategy`; ``none`` is the full tape), and prices the session as
  one ticket with the cost-per-ticket library (:mod:`contextkit.estimate`): the ticket's requests
  are the ones each replay would send, so the ticket's total equals the replay's cost, split by
  content (fixed prefix, re-sent history, new input, output) and by billing class (uncached input,
  cache writes, cache reads, output).
- The default example is sized (:data:`DEMO_RESULT_SCALE`) so that the full tape outgrows the
  model's context window near its end: a comparison where no strategy is needed would say nothing.
- The best strategy is the cheapest by cost + recovery (what getting back what a later call needed
  and the view dropped would cost the agent: :mod:`contextkit.replay`), with nothing lost that
  cannot be got back and no call over the window (None when no strategy qualifies); fact, span and
  edit recall are shown beside it. Savings are against ``none``.
- Same arguments, same numbers: the example is seeded and replay is deterministic. Token counts
  come from the model's offline counter (an estimate for Claude; :attr:`DemoResult.counter`).
- :func:`write_demo_plots` writes PNGs with matplotlib's object API and the Agg canvas only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contextkit.accounting import session_counter
from contextkit.estimate import Change, Ticket, TicketTable, price_tickets
from contextkit.replay import ASSUMPTION, RULE, Replay, can_be_best, run_strategy
from contextkit.session import Session
from contextkit.session.examples import ExampleSpec, generate_session
from contextkit.strategies import PRESETS

BASELINE = "none"
RECALL_FLOOR = 0.9
DEMO_RESULT_SCALE = 1.4
"""Tool results 1.4x the generator's default: at 150 calls the full tape peaks just over 200k."""
BEST_RULE = RULE
TICKET_PARTS = ("prefix", "history", "new_input", "output")
"""The ticket's cost by content: fixed prefix, re-sent history, new input, output."""
TICKET_CLASSES = ("uncached", "cache_write", "cache_read", "output")
"""The ticket's cost by billing class."""
PLOT_FILES = ("context-per-call.png", "cumulative-cost.png", "cost-vs-recall.png")


def demo_spec(calls: int = 150, seed: int = 7) -> ExampleSpec:
    """The example the demo runs: the generator's defaults with larger tool results."""
    return ExampleSpec(calls=calls, seed=seed, result_scale=DEMO_RESULT_SCALE)


@dataclass(frozen=True)
class TicketCost:
    """One ticket (the example session) as one strategy would send it."""

    strategy: str
    cost_usd: float
    calls: int
    usd: dict[str, float]
    """USD by content part (:data:`TICKET_PARTS`) and billing class (:data:`TICKET_CLASSES`)."""
    tokens: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "cost_usd": self.cost_usd,
            "calls": self.calls,
            "by_content": {k: _part(self, k) for k in TICKET_PARTS},
            "by_class": {k: _part(self, k) for k in TICKET_CLASSES},
        }


def _part(ticket: TicketCost, key: str) -> dict[str, float]:
    return {"usd": ticket.usd[key], "tokens": ticket.tokens[key]}


@dataclass(frozen=True)
class DemoResult:
    spec: ExampleSpec
    session: Session
    replays: tuple[Replay, ...]
    """One per strategy, ``none`` first."""
    tickets: tuple[TicketCost, ...]
    """The ticket under ``none``, then under the best strategy (when there is one)."""
    best: str | None
    counter: str

    @property
    def baseline(self) -> Replay:
        return self.replays[0]

    def replay_of(self, strategy: str) -> Replay:
        return next(r for r in self.replays if r.strategy == strategy)

    def saving(self, strategy: str) -> tuple[float, float] | None:
        """(USD saved, share saved) by ``strategy`` against ``none`` (None: cost unknown)."""
        base, cost = self.baseline.cost_usd, self.replay_of(strategy).cost_usd
        if base is None or cost is None or base == 0:
            return None
        return base - cost, (base - cost) / base

    def to_json(self) -> dict[str, Any]:
        return {
            "example": {**self.spec.model_dump(mode="json"), "calls": len(self.session.calls)},
            "model": self.session.model,
            "window_tokens": self.baseline.window,
            "counter": self.counter,
            "baseline": BASELINE,
            "strategies": [self._row(r) for r in self.replays],
            "best": self._best_json(),
            "ticket": [t.to_json() for t in self.tickets],
            "notes": [ASSUMPTION, "token counts are offline estimates; prices are list prices"],
        }

    def _row(self, rep: Replay) -> dict[str, Any]:
        saved = self.saving(rep.strategy)
        return {
            "strategy": rep.strategy,
            **rep.summary(),
            "saved_usd": saved[0] if saved else None,
            "saved_share": saved[1] if saved else None,
        }

    def _best_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": BEST_RULE, "strategy": self.best}
        if self.best is not None:
            out.update(self._row(self.replay_of(self.best)))
        return out


def pick_best(replays: Sequence[Replay]) -> Replay | None:
    """The replay that is cheapest by cost + recovery, with nothing lost that cannot be got back
    and no overflowing call (:func:`contextkit.replay.can_be_best`)."""
    fit = [(r, r.summary()) for r in replays]
    fit = [(r, s) for r, s in fit if can_be_best(s)]
    # Ties go to the earlier replay: ``none`` first, so a strategy must beat the full tape.
    ranked = sorted(
        enumerate(fit), key=lambda pair: (pair[1][1]["cost_plus_recovery_usd"], pair[0])
    )
    return ranked[0][1][0] if ranked else None


def _as_sent(session: Session, rep: Replay) -> Session:
    """The session with each request as the replay would have sent it (breakpoints placed)."""
    calls = tuple(
        c.model_copy(update={"request": r})
        for c, r in zip(session.calls, rep.requests, strict=True)
    )
    return session.model_copy(update={"calls": calls})


def price_as_tickets(session: Session, replays: Sequence[Replay]) -> tuple[TicketCost, ...]:
    """Each replay's requests priced as one ticket by :func:`contextkit.estimate.price_tickets`.

    For a file without its system prompt and tools (Claude Code), the estimate infers their size
    from each ticket's first request as sent: a strategy that shrank call 1 makes it too large
    (the replay's own ledger infers it from the recorded request). The demo's session holds its
    prefix, so the demo is not affected."""
    tickets = [Ticket(r.strategy, (_as_sent(session, r),)) for r in replays]
    table, _recorded = price_tickets(tickets, Change())
    return tuple(_ticket(table, i, r.strategy) for i, r in enumerate(replays))


def _ticket(table: TicketTable, i: int, strategy: str) -> TicketCost:
    keys = (*TICKET_PARTS, *TICKET_CLASSES)
    return TicketCost(
        strategy=strategy,
        cost_usd=float(table.cost[i]),
        calls=int(table.calls[i]),
        usd={k: float(table.usd[k][i]) for k in keys},
        tokens={k: float(table.tokens[k][i]) for k in keys},
    )


def run_demo(
    spec: ExampleSpec | None = None, strategies: Sequence[str] = tuple(PRESETS)
) -> DemoResult:
    """Replay the example under ``strategies`` (``none`` is always run, first) and price it."""
    spec = spec or demo_spec()
    session = generate_session(spec)
    counter = session_counter(session)  # shared: each block is tokenised once
    names = [BASELINE, *(s for s in strategies if s != BASELINE)]
    replays = tuple(run_strategy(session, name, counter=counter) for name in names)
    best = pick_best(replays)
    priced = [replays[0]] if best is None or best is replays[0] else [replays[0], best]
    return DemoResult(
        spec=spec,
        session=session,
        replays=replays,
        tickets=price_as_tickets(session, priced),
        best=best.strategy if best is not None else None,
        counter=counter.name,
    )


def write_demo_plots(result: DemoResult, folder: str | Path) -> tuple[Path, ...]:
    """The sawtooth, cumulative cost and cost against recall, as PNGs in ``folder`` (created)."""
    # Imported here: matplotlib is slow to load and only this function needs it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
    from matplotlib.figure import Figure  # noqa: PLC0415

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    labels: list[str | None] = [_label(result, r.strategy) for r in result.replays]
    drawers: tuple[Callable[[Any], None], ...] = (
        lambda ax: _sawtooth(ax, result, labels),
        lambda ax: _cumulative(ax, result, labels),
        lambda ax: _cost_recall(ax, result),
    )
    paths = []
    for name, draw in zip(PLOT_FILES, drawers, strict=True):
        figure = Figure(figsize=(10, 5.5), layout="constrained")
        FigureCanvasAgg(figure)
        ax = figure.subplots()
        draw(ax)
        ax.legend(fontsize="small")
        paths.append(out / name)
        figure.savefig(paths[-1], dpi=110)
    return tuple(paths)


def _label(result: DemoResult, strategy: str) -> str:
    """The strategy's name, marked when best or when an earlier strategy sent the same sizes."""
    rep = result.replay_of(strategy)
    name = f"{strategy} (best)" if strategy == result.best else strategy
    for earlier in result.replays[: result.replays.index(rep)]:
        if earlier.cost_usd == rep.cost_usd and _same_sizes(earlier, rep):
            return f"{name} (= {earlier.strategy})"
    return name


def _same_sizes(a: Replay, b: Replay) -> bool:
    return bool(np.array_equal(a.ledger.context_tokens, b.ledger.context_tokens))


def _sawtooth(ax: Any, result: DemoResult, labels: Sequence[str | None]) -> None:
    from contextkit.accounting.plots import plot_context  # noqa: PLC0415  (matplotlib loads slowly)

    plot_context(ax, [r.ledger for r in result.replays], labels)
    ax.axhline(result.baseline.window, color="grey", linestyle=":", label="context window")
    ax.set_title(f"Context sent per call, {len(result.session.calls)}-call example session")


def _cumulative(ax: Any, result: DemoResult, labels: Sequence[str | None]) -> None:
    from contextkit.accounting.plots import plot_cumulative_cost  # noqa: PLC0415  (matplotlib loads slowly)

    plot_cumulative_cost(ax, [r.ledger for r in result.replays], labels)
    ax.set_title("Cumulative cost per strategy (the example has no recorded bill)")


def _cost_recall(ax: Any, result: DemoResult) -> None:
    """One point per strategy: session cost against recall; the qualifying region shaded."""
    ax.axhspan(RECALL_FLOOR, 1.005, color="green", alpha=0.06, label=f"recall >= {RECALL_FLOOR}")
    points: dict[tuple[float, float], list[str]] = {}
    for rep in result.replays:
        if rep.cost_usd is not None:
            key = (round(rep.cost_usd, 6), round(rep.recall.recall, 6))
            if key not in points:  # one marker per distinct point; its label names them all
                overflow = any(row.overflow for row in rep.rows)
                ax.scatter([key[0]], [key[1]], marker="x" if overflow else "o", s=50)
            points.setdefault(key, []).append(rep.strategy)
    for (cost, recall), names in points.items():
        text = " = ".join(f"{n} (best)" if n == result.best else n for n in names)
        ax.annotate(text, (cost, recall), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.margins(x=0.25)  # room for the labels of the rightmost points
    ax.set_xlabel("session cost (USD)")
    ax.set_ylabel("recall (needed facts still in view)")
    ax.set_title("Cost against recall per strategy (x: some call overflows the window)")
    ax.grid(alpha=0.3)


__all__ = [
    "BASELINE",
    "BEST_RULE",
    "DEMO_RESULT_SCALE",
    "PLOT_FILES",
    "RECALL_FLOOR",
    "TICKET_CLASSES",
    "TICKET_PARTS",
    "DemoResult",
    "TicketCost",
    "demo_spec",
    "pick_best",
    "price_as_tickets",
    "run_demo",
    "write_demo_plots",
]
