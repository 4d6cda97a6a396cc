"""Cost per ticket: from recorded sessions (with what-ifs) or from a workload profile."""

from __future__ import annotations

from contextkit.estimate._core import (
    Change,
    PricedSession,
    Ticket,
    Tickets,
    collect_tickets,
    price_session_arrays,
    price_tickets,
    strategy_tables,
)
from contextkit.estimate._dist import (
    Choice,
    Dist,
    Fixed,
    LogNormal,
    Poisson,
    Uniform,
)
from contextkit.estimate._fit import (
    fit_profile,
)
from contextkit.estimate._profile import (
    DEFAULT_TICKETS,
    CacheMode,
    Profile,
    ProfileRun,
    closed_form,
    dump_profile,
    load_profile,
    load_tools,
    parse_profile,
    simulate_profile,
    token_ratio,
    with_cache,
    with_model,
    with_system_tokens,
    with_tools,
)
from contextkit.estimate._report import (
    DEFAULT_TOOL_TOKENS,
    CostReport,
    WhatIf,
    WhatIfs,
    estimate_from_profile,
    estimate_recordings,
    plot_report,
    profile_changes,
    recording_changes,
)
from contextkit.estimate._requests import (
    synthetic_tools,
)
from contextkit.estimate._table import (
    TicketTable,
    breakdown,
    summary,
    ticket_table,
)

__all__ = [
    "DEFAULT_TICKETS",
    "DEFAULT_TOOL_TOKENS",
    "CacheMode",
    "Change",
    "Choice",
    "CostReport",
    "Dist",
    "Fixed",
    "LogNormal",
    "Poisson",
    "PricedSession",
    "Profile",
    "ProfileRun",
    "Ticket",
    "TicketTable",
    "Tickets",
    "Uniform",
    "WhatIf",
    "WhatIfs",
    "breakdown",
    "closed_form",
    "collect_tickets",
    "dump_profile",
    "estimate_from_profile",
    "estimate_recordings",
    "fit_profile",
    "load_profile",
    "load_tools",
    "parse_profile",
    "plot_report",
    "price_session_arrays",
    "price_tickets",
    "profile_changes",
    "recording_changes",
    "simulate_profile",
    "strategy_tables",
    "summary",
    "synthetic_tools",
    "ticket_table",
    "token_ratio",
    "with_cache",
    "with_model",
    "with_system_tokens",
    "with_tools",
]
