"""Cost per ticket reports: the baseline and each what-if, from recordings or from a profile.

Contract: :func:`estimate_recordings` and :func:`estimate_from_profile` take the what-ifs as one
:class:`WhatIfs` (each field one flag of ``contextkit cost``) and return a :class:`CostReport`:
the per-ticket baseline table, one :class:`WhatIf` per change, each re-simulated (never a scaled
total), and for recordings the recorded cost per ticket beside the simulated one; for a profile the
closed-form expectations beside the Monte Carlo. :meth:`CostReport.to_json` is the ``--json``
document; :func:`plot_report` draws the cost distribution and the breakdown bars.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contextkit.errors import ConfigError
from contextkit.estimate._core import (
    Change,
    Ticket,
    collect_tickets,
    price_tickets,
    strategy_tables,
)
from contextkit.estimate._profile import (
    CacheMode,
    Profile,
    closed_form,
    load_tools,
    simulate_profile,
    token_ratio,
    with_cache,
    with_model,
    with_system_tokens,
    with_tools,
)
from contextkit.estimate._requests import synthetic_tools
from contextkit.estimate._table import FloatArray, TicketTable, breakdown, summary
from contextkit.messages import Tool
from contextkit.models import resolve_model
from contextkit.tokens import counter_for

DEFAULT_TOOL_TOKENS = 100
"""Size of a synthetic tool schema when neither the flag nor the data gives one (an assumption)."""


@dataclass(frozen=True)
class WhatIfs:
    """The what-if flags; each set one becomes one row."""

    add_tools: int | None = None
    add_tools_file: Path | None = None
    tool_tokens: int | None = None
    system_tokens: int | None = None
    cache: CacheMode | None = None
    strategy: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class WhatIf:
    change: str
    table: TicketTable


@dataclass(frozen=True)
class CostReport:
    source: str
    model: str | None
    baseline: TicketTable
    names: tuple[str, ...]
    what_ifs: tuple[WhatIf, ...] = ()
    recorded: FloatArray | None = None
    closed_form: dict[str, float] | None = None
    notes: tuple[str, ...] = field(default=())
    unread: tuple[str, ...] = field(default=())
    """Files found in a folder that could not be read (named in ``notes`` with why)."""

    def to_json(self) -> dict[str, Any]:
        simulated = summary(self.baseline)
        truth = self._truth()
        head = _stats(truth) if truth is not None else simulated
        basis = "recorded" if truth is not None else "simulated"
        out: dict[str, Any] = {"source": self.source, "model": self.model, "basis": basis, **head}
        out["simulated"] = simulated
        out["breakdown"] = breakdown(self.baseline)
        out["what_if"] = [self._row(w, head["mean_usd"], truth) for w in self.what_ifs]
        out["recorded"] = self._recorded()
        out["closed_form"] = self.closed_form
        out["per_ticket"] = self._per_ticket()
        out["notes"] = list(self.notes)
        cleaned: dict[str, Any] = _clean(out)
        return cleaned

    def _truth(self) -> FloatArray | None:
        """Each ticket's recorded bill when every ticket has one: the headline starts from it,
        and each what-if is the bill times the simulated ratio, ticket by ticket
        (:func:`applied_to_bill`)."""
        rec = self.recorded
        if self.source != "recordings" or rec is None or not len(rec):
            return None
        return rec if bool(np.isfinite(rec).all()) else None

    def _row(
        self, what: WhatIf, base_mean: float | int | None, truth: FloatArray | None
    ) -> dict[str, Any]:
        simulated = summary(what.table)
        stats = (
            simulated
            if truth is None
            else _stats(applied_to_bill(truth, self.baseline.cost, what.table.cost))
        )
        mean = stats["mean_usd"]
        delta = None if mean is None or base_mean is None else float(mean) - float(base_mean)
        pct = None if delta is None or not base_mean else 100.0 * delta / float(base_mean)
        after, before = breakdown(what.table), breakdown(self.baseline)
        return {
            "change": what.change,
            "mean_usd": mean,
            "delta_usd": delta,
            "delta_pct": pct,
            "p90_usd": stats["p90_usd"],
            "simulated_mean_usd": simulated["mean_usd"],
            "breakdown_delta": {k: after[k] - before[k] for k in before},
        }

    def _recorded(self) -> dict[str, Any] | None:
        if self.recorded is None:
            return None
        known = np.isfinite(self.recorded)
        if not known.any():
            return None
        rec, sim = self.recorded[known], self.baseline.cost[known]
        return {
            "tickets": int(known.sum()),
            "mean_usd": float(rec.mean()),
            "p50_usd": float(np.percentile(rec, 50)),
            "p90_usd": float(np.percentile(rec, 90)),
            "max_usd": float(rec.max()),
            "simulated_mean_usd": float(np.nanmean(sim)) if np.isfinite(sim).any() else None,
        }

    def _per_ticket(self) -> list[dict[str, Any]]:
        if self.source != "recordings":
            return []
        rec = self.recorded if self.recorded is not None else np.full(len(self.names), np.nan)
        return [
            {"name": n, "cost_usd": float(c), "recorded_usd": float(r), "calls": int(k)}
            for n, c, r, k in zip(
                self.names, self.baseline.cost, rec, self.baseline.calls, strict=True
            )
        ]


def applied_to_bill(bill: FloatArray, baseline: FloatArray, changed: FloatArray) -> FloatArray:
    """A what-if on recordings with a bill: each ticket's bill times the simulated ratio (what-if
    / baseline, both simulated), never the bill plus the simulated difference: where the
    simulation runs above the bill, a difference can take the bill below zero. A ticket whose
    simulated baseline is zero keeps the difference (there is no ratio)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(baseline > 0, changed / baseline, np.nan)
    return np.where(np.isfinite(ratio), bill * ratio, bill + (changed - baseline))


def _stats(cost: FloatArray) -> dict[str, float | int | None]:
    """``summary``'s figures of per-ticket costs (None where no cost is known)."""
    known = cost[np.isfinite(cost)]
    if not known.size:
        return {
            "tickets": len(cost),
            "mean_usd": None,
            "p50_usd": None,
            "p90_usd": None,
            "max_usd": None,
        }
    return {
        "tickets": len(cost),
        "mean_usd": float(known.mean()),
        "p50_usd": float(np.percentile(known, 50)),
        "p90_usd": float(np.percentile(known, 90)),
        "max_usd": float(known.max()),
    }


def _clean(value: Any) -> Any:
    """NaN -> None, so the JSON is valid."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


# --- recordings ----------------------------------------------------------------------------


def _main_model(tickets: Sequence[Ticket]) -> str | None:
    models = [s.model for t in tickets for s in t.sessions if s.model]
    return max(set(models), key=models.count) if models else None


def _known_tool_tokens(tickets: Sequence[Ticket], model: str | None) -> int | None:
    counter = counter_for(resolve_model(model))
    sizes = [
        counter.count_tool(tool)
        for t in tickets
        for s in t.sessions[:1]
        for c in s.calls[:1]
        for tool in c.request.tools
    ]
    return round(sum(sizes) / len(sizes)) if sizes else None


def recording_changes(what: WhatIfs, tickets: Sequence[Ticket]) -> list[Change]:
    """One :class:`Change` per flag set (strategy excepted: it replays)."""
    model = _main_model(tickets)
    counter = counter_for(resolve_model(model))
    changes: list[Change] = []
    if what.add_tools:
        size = what.tool_tokens or _known_tool_tokens(tickets, model) or DEFAULT_TOOL_TOKENS
        tools = synthetic_tools(what.add_tools, size, counter)
        measured = sum(counter.count_tool(t) for t in tools)
        changes.append(Change(f"+{what.add_tools} tools ({measured} tokens)", add_tools=tools))
    if what.add_tools_file:
        tools = load_tools(what.add_tools_file)
        measured = sum(counter.count_tool(t) for t in tools)
        label = f"+{len(tools)} tools from {what.add_tools_file.name} ({measured} tokens)"
        changes.append(Change(label, add_tools=tools))
    if what.system_tokens:
        changes.append(
            Change(
                f"system prompt {what.system_tokens:+d} tokens", system_tokens=what.system_tokens
            )
        )
    if what.cache:
        changes.append(Change(f"cache {what.cache}", cache=what.cache))
    if what.model:
        changes.append(Change(f"model {what.model}", model=what.model))
    return changes


def estimate_recordings(
    paths: Sequence[str | Path],
    what: WhatIfs = WhatIfs(),
    *,
    lenient: bool = False,
    format: str | None = None,
    model: str | None = None,
) -> CostReport:
    """Cost per ticket of the recorded sessions under ``paths`` (read with the ``format`` reader,
    else detected), and each what-if; ``model`` for calls whose file names none."""
    read = collect_tickets(paths, lenient=lenient, format=format, model=model)
    tickets = read.tickets
    if not tickets:
        why = [n for n in read.notes if n.startswith("not read")]
        raise ConfigError(
            "no session with model calls found in: "
            + ", ".join(map(str, paths))
            + ("; " + "; ".join(why) if why else "")
        )
    baseline, recorded = price_tickets(tickets, Change())
    rows = [WhatIf(c.label, price_tickets(tickets, c)[0]) for c in recording_changes(what, tickets)]
    notes = list(read.notes) + [f"{s.path}:{s.line}: skipped: {s.reason}" for s in read.skipped]
    if what.strategy:
        replayed, plain = strategy_tables(tickets, what.strategy)
        rows.append(WhatIf(f"strategy {what.strategy}", baseline + (replayed - plain)))
        notes.append(
            "strategy: baseline + (replay under the strategy - replay without "
            "compaction); replay keeps the recorded responses"
        )
    notes.append(
        "simulated: the cache re-simulated on the recorded requests; the recorded bill "
        "stands beside it where the files carry usage"
    )
    return CostReport(
        source="recordings",
        model=_main_model(tickets),
        baseline=baseline,
        names=tuple(t.name for t in tickets),
        what_ifs=tuple(rows),
        recorded=recorded,
        notes=tuple(notes),
        unread=read.unread,
    )


# --- profile -------------------------------------------------------------------------------


def profile_changes(what: WhatIfs, profile: Profile) -> list[tuple[str, Profile]]:
    if what.strategy:
        raise ConfigError("--strategy replays recorded sessions: it needs PATHs, not --profile")
    out: list[tuple[str, Profile]] = []
    if what.add_tools:
        size = what.tool_tokens or profile.tool_tokens or DEFAULT_TOOL_TOKENS
        out.append(
            (
                f"+{what.add_tools} tools ({what.add_tools * size:g} tokens)",
                with_tools(profile, what.add_tools, size),
            )
        )
    if what.add_tools_file:
        tools = load_tools(what.add_tools_file)
        out.append(_tools_file_change(profile, tools, what.add_tools_file.name))
    if what.system_tokens:
        out.append(
            (
                f"system prompt {what.system_tokens:+d} tokens",
                with_system_tokens(profile, what.system_tokens),
            )
        )
    if what.cache:
        out.append((f"cache {what.cache}", with_cache(profile, what.cache)))
    if what.model:
        ratio = token_ratio(profile.model, what.model)
        out.append(
            (f"model {what.model} (sizes x{ratio:.3f})", with_model(profile, what.model, ratio))
        )
    return out


def _tools_file_change(profile: Profile, tools: Sequence[Tool], name: str) -> tuple[str, Profile]:
    counter = counter_for(profile.model_info)
    total = sum(counter.count_tool(t) for t in tools)
    label = f"+{len(tools)} tools from {name} ({total} tokens)"
    return label, with_tools(profile, len(tools), total / max(len(tools), 1))


FIT_TOLERANCE = 0.15
"""A fitted profile whose mean cost is further than this from its recordings' is flagged."""


@dataclass(frozen=True)
class FitCheck:
    """A fitted profile's mean cost per ticket (Monte Carlo) against the tickets it was fitted
    on: their recorded bill where every ticket has one, else their simulated cost."""

    model: str
    tickets: int
    fitted_mean_usd: float | None
    recordings_mean_usd: float | None
    basis: str
    """``recorded`` (the bill) or ``simulated`` (the recordings through the cache simulator)."""

    @property
    def error(self) -> float | None:
        """(fitted - recordings) / recordings."""
        if self.fitted_mean_usd is None or not self.recordings_mean_usd:
            return None
        return self.fitted_mean_usd / self.recordings_mean_usd - 1

    @property
    def ok(self) -> bool:
        return self.error is not None and abs(self.error) <= FIT_TOLERANCE

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "tickets": self.tickets,
            "fitted_mean_usd": self.fitted_mean_usd,
            "recordings_mean_usd": self.recordings_mean_usd,
            "basis": self.basis,
            "error": self.error,
            "within_tolerance": self.ok,
        }


def check_fit(profile: Profile, tickets: Sequence[Ticket], *, seed: int = 0) -> FitCheck:
    """Price ``profile`` (Monte Carlo, ``seed``) and the ``tickets`` it came from, and compare
    their means (:data:`FIT_TOLERANCE`)."""
    fitted = estimate_from_profile(profile, seed=seed).to_json()
    baseline, recorded = price_tickets(tickets, Change())
    source = CostReport(
        source="recordings",
        model=profile.model,
        baseline=baseline,
        names=tuple(t.name for t in tickets),
        recorded=recorded,
    ).to_json()
    return FitCheck(
        model=profile.model,
        tickets=len(tickets),
        fitted_mean_usd=fitted["mean_usd"],
        recordings_mean_usd=source["mean_usd"],
        basis=source["basis"],
    )


def estimate_from_profile(
    profile: Profile,
    what: WhatIfs = WhatIfs(),
    *,
    tickets: int | None = None,
    seed: int | None = None,
) -> CostReport:
    """Monte Carlo cost per ticket of ``profile`` (same seed for every what-if)."""
    run = simulate_profile(profile, tickets, seed)
    rows = [
        WhatIf(label, simulate_profile(p, tickets, seed).table)
        for label, p in profile_changes(what, profile)
    ]
    notes = [
        f"Monte Carlo: {run.table.n} tickets, seed {run.seed}; what-ifs draw the same tickets",
        "closed form: exact expectation without cache and with an always-warm cache (no TTL "
        "expiry, no minimum length, no price tiers)",
        *profile.notes,
    ]
    return CostReport(
        source="profile",
        model=profile.model,
        baseline=run.table,
        names=(),
        what_ifs=tuple(rows),
        closed_form=closed_form(profile),
        notes=tuple(notes),
    )


# --- plot ----------------------------------------------------------------------------------


def plot_report(report: CostReport, out: str | Path) -> Path:
    """PNG: cost per ticket distribution (baseline and what-ifs) and breakdown bars."""
    import matplotlib  # noqa: PLC0415  (only for --plot)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    series = [("baseline", report.baseline), *((w.change, w.table) for w in report.what_ifs)]
    finite = [t.cost[np.isfinite(t.cost)] for _, t in series]
    top = max((float(np.percentile(c, 99)) for c in finite if c.size), default=1.0) or 1.0
    bins = np.linspace(0, top, 40)
    for (label, _), cost in zip(series, finite, strict=True):
        left.hist(cost, bins=bins, histtype="step", linewidth=1.5, label=label)
    left.set(xlabel="USD per ticket", ylabel="tickets", title="Cost per ticket")
    left.legend(fontsize=8)
    parts = ("prefix", "history", "new_input", "output")
    bottom = np.zeros(len(series))
    for part in parts:
        values = np.array([breakdown(t)[f"{part}_usd"] for _, t in series])
        right.bar(range(len(series)), values, bottom=bottom, label=part.replace("_", " "))
        bottom += values
    right.set_xticks(range(len(series)), [s for s, _ in series], rotation=20, fontsize=8)
    right.set(ylabel="mean USD per ticket", title="Where the money goes")
    right.legend(fontsize=8)
    fig.tight_layout()
    path = Path(out)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = [
    "DEFAULT_TOOL_TOKENS",
    "CostReport",
    "WhatIf",
    "WhatIfs",
    "estimate_from_profile",
    "estimate_recordings",
    "plot_report",
    "profile_changes",
    "recording_changes",
]
