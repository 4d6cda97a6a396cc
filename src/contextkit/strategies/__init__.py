"""Strategies that shape the view sent to the model, and their composition."""

from contextkit.strategies.base import CallFacts, Compacted, Receipt, Strategy

__all__ = ["CallFacts", "Compacted", "Receipt", "Strategy"]
