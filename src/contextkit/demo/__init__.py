"""The built-in example job behind ``contextkit demo``: a generated session, strategies compared,
cost per ticket, plots.
"""

from __future__ import annotations

from contextkit.demo._job import (
    BASELINE,
    BEST_RULE,
    DEMO_RESULT_SCALE,
    PLOT_FILES,
    RECALL_FLOOR,
    TICKET_CLASSES,
    TICKET_PARTS,
    DemoResult,
    TicketCost,
    demo_spec,
    pick_best,
    price_as_tickets,
    run_demo,
    write_demo_plots,
)

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
