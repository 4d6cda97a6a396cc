"""What a strategy's own summary calls cost in a replay (billed apart from the views it shapes).

Contract:

- Every ``summarised`` or ``summary_discarded`` receipt is one summariser call, priced at the
  call where the strategy made it, also when its summary was discarded (the call was made).
- A receipt with ``usage`` (the ``anthropic`` summariser, a scripted one with usage) is priced as
  billed, on the receipt's model (else the call's).
- A receipt without usage (the offline hand-off) is priced as the model call it stands in for:
  the request the ``anthropic`` summariser sends by default, i.e. the view as the strategy was
  given it, on the call's model, with the summary instruction appended. The part of it the thread's
  previous request sent is read from the cache unless the cache is cold at this call (the TTL
  passed, the model changed, the harness reset it: :class:`ColdCache`); the rest is written (the
  request puts a breakpoint on the view's last block); the instruction is uncached input; the
  output is the summary's tokens (``summary_tokens``).
- What it leaves out: the summary call's cache write does not warm the request that follows (the
  compacted view's prefix differs past the system prompt and tools), and a cached prefix shorter
  than the provider's minimum is still counted as read.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextkit.messages import Conversation, Receipt
from contextkit.models import resolve_model
from contextkit.pricing import ModelPrice, price_or_warn
from contextkit.session import Usage
from contextkit.strategies import SUMMARY_INSTRUCTION, CallFacts, ColdCache

SUMMARY_ACTIONS = frozenset({"summarised", "summary_discarded"})
_COLD = ColdCache()


@dataclass(frozen=True)
class SummariserCall:
    """One summariser call a strategy made during a replay."""

    call: int
    usage: Usage
    model: str | None
    modelled: bool
    """True: the usage is modelled (an offline summariser), not billed by a provider."""
    cost_usd: float | None
    """None when the model's price is unknown."""


def modelled_usage(
    view: Conversation, previous: Conversation | None, facts: CallFacts, output_tokens: int
) -> Usage:
    """The usage of a summary request that replays ``view`` with the instruction appended, the
    thread having last sent ``previous`` (see the module docstring)."""
    total = facts.input_tokens(view)
    warm = previous is not None and bool(previous.messages) and not _COLD(view, facts)
    cached = min(facts.input_tokens(previous), total) if warm and previous is not None else 0
    written = total - cached
    long_ttl = facts.cache_ttl_s >= 3_600
    return Usage(
        input_tokens=facts.counter.count_text(SUMMARY_INSTRUCTION),
        cache_read=cached,
        cache_write_5m=0 if long_ttl else written,
        cache_write_1h=written if long_ttl else 0,
        output_tokens=output_tokens,
    )


@dataclass
class SummariserBill:
    """Collects the summariser calls of one replay, pricing each as it comes."""

    price: ModelPrice | None = None
    """The replay's price override (for calls on the session's own model), else looked up."""
    session_model: str | None = None
    calls: list[SummariserCall] | None = None
    _prices: dict[str, ModelPrice | None] | None = None

    def add(
        self,
        index: int,
        receipts: tuple[Receipt, ...],
        view: Conversation,
        previous: Conversation | None,
        facts: CallFacts,
    ) -> None:
        """Bill the summariser calls among ``receipts`` (made at call ``index``)."""
        for receipt in receipts:
            if receipt.action not in SUMMARY_ACTIONS:
                continue
            if receipt.usage is not None:
                usage, model, modelled = receipt.usage, receipt.model or facts.model, False
            elif receipt.summary_tokens is not None:
                usage = modelled_usage(view, previous, facts, receipt.summary_tokens)
                model, modelled = facts.model, True
            else:
                continue  # a summary of unknown size from an unknown summariser: nothing to bill
            cost = self._price(model, facts)
            bill = cost.cost(usage) if cost is not None else None
            if self.calls is None:
                self.calls = []
            self.calls.append(SummariserCall(index, usage, model, modelled, bill))

    def _price(self, model: str | None, facts: CallFacts) -> ModelPrice | None:
        if self.price is not None and (model is None or model == self.session_model):
            return self.price
        if model is None:
            return None
        if self._prices is None:
            self._prices = {}
        if model not in self._prices:
            self._prices[model] = price_or_warn(resolve_model(model), facts.now)
        return self._prices[model]

    def per_call(self, calls: int) -> list[float | None]:
        """USD of the summariser calls made at each of ``calls`` calls (None: a price unknown)."""
        out: list[float | None] = [0.0] * calls
        for c in self.calls or ():
            before = out[c.call]
            out[c.call] = None if before is None or c.cost_usd is None else before + c.cost_usd
        return out


__all__ = ["SUMMARY_ACTIONS", "SummariserBill", "SummariserCall", "modelled_usage"]
