"""Plots shared by the commands: context size per call and cumulative cost, one line per ledger.

Contract: functions draw on a matplotlib ``Axes`` given by the caller (so other commands can put
them in their own figures) or save a PNG. Only matplotlib's object API and the Agg canvas are used:
no pyplot, no global backend switch, nothing shown on screen. Recorded figures, where a ledger has
them, are drawn dashed beside the simulated ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from contextkit.accounting._ledger import Ledger


def _label(ledger: Ledger, label: str | None) -> str:
    return label or Path(ledger.path).name


def plot_context(
    ax: Any, ledgers: Sequence[Ledger], labels: Sequence[str | None] | None = None
) -> None:
    """Input tokens sent per call (the whole context), simulated and recorded."""
    for i, ledger in enumerate(ledgers):
        name = _label(ledger, labels[i] if labels else None)
        calls = np.arange(1, ledger.calls + 1)
        (line,) = ax.plot(calls, ledger.context_tokens, label=name)
        if ledger.recorded is not None:
            ax.plot(calls, ledger.recorded.total_input, "--", color=line.get_color(), alpha=0.7)
    ax.set_xlabel("call")
    ax.set_ylabel("context (input tokens)")
    ax.set_title("Context size per call (dashed: recorded)")
    ax.grid(alpha=0.3)


def plot_cumulative_cost(
    ax: Any, ledgers: Sequence[Ledger], labels: Sequence[str | None] | None = None
) -> None:
    """Cumulative USD over calls, simulated and recorded (ledgers without prices are skipped)."""
    drawn = False
    for i, ledger in enumerate(ledgers):
        if ledger.simulated.total_cost is None:
            continue
        name = _label(ledger, labels[i] if labels else None)
        calls = np.arange(1, ledger.calls + 1)
        (line,) = ax.plot(calls, np.cumsum(ledger.simulated.cost_usd), label=name)
        if ledger.recorded is not None and ledger.recorded.total_cost is not None:
            recorded = np.cumsum(ledger.recorded.cost_usd)
            ax.plot(calls, recorded, "--", color=line.get_color(), alpha=0.7)
        drawn = True
    if not drawn:
        ax.text(
            0.5, 0.5, "cost unknown (no price for the model)", ha="center", transform=ax.transAxes
        )
    ax.set_xlabel("call")
    ax.set_ylabel("cumulative cost (USD)")
    ax.set_title("Cumulative cost (dashed: recorded)")
    ax.grid(alpha=0.3)


def save_session_plots(
    ledgers: Sequence[Ledger], path: str | Path, labels: Sequence[str | None] | None = None
) -> Path:
    """A PNG with both plots side by side; returns its path."""
    figure = Figure(figsize=(12, 4.5), layout="constrained")
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    plot_context(left, ledgers, labels)
    plot_cumulative_cost(right, ledgers, labels)
    if 1 < len(ledgers) <= 12:
        left.legend(fontsize="small")
    out = Path(path)
    figure.savefig(out, dpi=110)
    return out


__all__ = ["plot_context", "plot_cumulative_cost", "save_session_plots"]
