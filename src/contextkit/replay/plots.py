"""Plots of replays (matplotlib, Agg backend, PNG): the sawtooth of compaction, the cumulative
cost per strategy, and cost against recall across sessions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from contextkit.replay._replay import Replay


def plot_replays(replays: Sequence[Replay], out: str | Path) -> Path:
    """Context size per call and cumulative cost, one line per strategy."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for rep in replays:
        calls = np.arange(1, len(rep.rows) + 1)
        top.plot(calls, [r.context_tokens for r in rep.rows], label=rep.strategy, linewidth=1.3)
        costs = np.nan_to_num(rep.ledger.simulated.cost_usd)
        if rep.strategy == "as-recorded" and rep.ledger.recorded is not None:
            costs = np.nan_to_num(rep.ledger.recorded.cost_usd)
        bottom.plot(calls, np.cumsum(costs), label=rep.strategy, linewidth=1.3)
    if replays:
        top.axhline(replays[0].window, color="grey", linestyle=":", label="context window")
    top.set_ylabel("context tokens per call")
    bottom.set_ylabel("cumulative cost (USD)")
    bottom.set_xlabel("call")
    top.legend(fontsize=8, loc="upper left")
    title = replays[0].session.path if replays else ""
    top.set_title(f"replay of {Path(title).name}: context and cost per strategy", fontsize=10)
    return _save(fig, out)


def plot_cost_recall(results: Sequence[Mapping[str, Any]], out: str | Path) -> Path:
    """One point per session and strategy: cost relative to as-recorded against recall."""
    baseline = {
        (r["path"], r.get("session_id")): r["summary"]["cost_usd"]
        for r in results
        if r["strategy"] == "as-recorded"
    }
    fig, ax = plt.subplots(figsize=(8, 6))
    by_strategy: dict[str, list[tuple[float, float]]] = {}
    for r in results:
        base = baseline.get((r["path"], r.get("session_id")))
        cost = r["summary"]["cost_usd"]
        if not base or cost is None:
            continue
        by_strategy.setdefault(r["strategy"], []).append((cost / base, r["summary"]["recall"]))
    for name, points in by_strategy.items():
        xs, ys = zip(*points, strict=True)
        ax.scatter(xs, ys, label=name, alpha=0.7, s=24)
    ax.set_xlabel("cost relative to as-recorded")
    ax.set_ylabel("recall (share of needed facts still in view)")
    ax.axvline(0.7, color="grey", linestyle=":", linewidth=1)
    ax.axhline(0.9, color="grey", linestyle=":", linewidth=1)
    ax.legend(fontsize=8)
    ax.set_title("cost against recall, one point per session and strategy", fontsize=10)
    return _save(fig, out)


def _save(fig: Any, out: str | Path) -> Path:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["plot_cost_recall", "plot_replays"]
