"""Cost per ticket from recordings: ticket grouping, baseline, and what-ifs that re-simulate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contextkit.accounting import price_session
from contextkit.estimate import (
    Change,
    Ticket,
    WhatIfs,
    collect_tickets,
    estimate_from_profile,
    estimate_recordings,
    parse_profile,
    price_tickets,
    strategy_tables,
    synthetic_tools,
)
from contextkit.estimate._requests import Editor, padding_text
from contextkit.pricing import PER_MILLION, lookup_price
from contextkit.session import Session
from contextkit.session.examples import ExampleSpec, generate_session
from contextkit.tokens import counter_for


@pytest.fixture(scope="module")
def session() -> Session:
    return generate_session(ExampleSpec(calls=14, user_turns=2, seed=3))


def _ticket(session: Session) -> list[Ticket]:
    return [Ticket("example", (session,))]


def test_baseline_matches_price_session(session: Session) -> None:
    table, recorded = price_tickets(_ticket(session), Change())
    ledger = price_session(session)
    assert table.cost[0] == pytest.approx(ledger.simulated.total_cost, rel=1e-12)
    assert np.isnan(recorded[0])  # the generator records no usage
    assert table.calls[0] == len(session.calls)
    # Content split and class split add up to the same dollars.
    parts = sum(table.usd[k] for k in ("prefix", "history", "new_input", "output"))
    classes = sum(table.usd[k] for k in ("uncached", "cache_write", "cache_read", "output"))
    np.testing.assert_allclose(parts, table.cost)
    np.testing.assert_allclose(classes, table.cost)


def test_cache_off_prices_every_token_as_input(session: Session) -> None:
    table, _ = price_tickets(_ticket(session), Change(cache="off"))
    price = lookup_price(session.model_info)
    assert price is not None
    assert table.tokens["cache_read"][0] == 0
    assert table.tokens["cache_write"][0] == 0
    context = table.tokens["prefix"] + table.tokens["history"] + table.tokens["new_input"]
    expected = (context * price.input + table.tokens["output"] * price.output) / PER_MILLION
    np.testing.assert_allclose(table.cost, expected)


def test_added_tools_cost_their_tokens_on_every_call(session: Session) -> None:
    counter = counter_for(session.model_info)
    tools = synthetic_tools(5, 80, counter)
    added = sum(counter.count_tool(t) for t in tools)
    assert abs(added - 5 * 80) <= 5
    off, _ = price_tickets(_ticket(session), Change(cache="off"))
    more, _ = price_tickets(_ticket(session), Change(cache="off", add_tools=tools))
    price = lookup_price(session.model_info)
    assert price is not None
    calls = len(session.calls)
    assert more.tokens["prefix"][0] - off.tokens["prefix"][0] == added * calls
    assert more.cost[0] - off.cost[0] == pytest.approx(added * calls * price.input / PER_MILLION)
    # With the cache on, the addition is written once per cold prefix and read after.
    base, _ = price_tickets(_ticket(session), Change())
    cached, _ = price_tickets(_ticket(session), Change(add_tools=tools))
    d_write = cached.tokens["cache_write"][0] - base.tokens["cache_write"][0]
    d_read = cached.tokens["cache_read"][0] - base.tokens["cache_read"][0]
    assert d_write >= added
    assert d_read > 0
    assert d_write + d_read + cached.tokens["uncached"][0] - base.tokens["uncached"][0] == (
        added * calls
    )


def test_system_padding_grows_the_prefix(session: Session) -> None:
    counter = counter_for(session.model_info)
    pad = counter.count_text(padding_text(500, counter))
    assert 495 <= pad <= 505
    base, _ = price_tickets(_ticket(session), Change(cache="off"))
    padded, _ = price_tickets(_ticket(session), Change(cache="off", system_tokens=500))
    grown = (padded.tokens["prefix"][0] - base.tokens["prefix"][0]) / len(session.calls)
    assert abs(grown - pad) <= 2  # text joined to the system prompt may merge a token


def test_cache_ttl_and_model_what_ifs(session: Session) -> None:
    hour, _ = price_tickets(_ticket(session), Change(cache="1h"))
    assert hour.tokens["cache_write"][0] > 0
    haiku, _ = price_tickets(_ticket(session), Change(model="claude-haiku-4-5"))
    base, _ = price_tickets(_ticket(session), Change())
    assert haiku.cost[0] < base.cost[0] / 2  # Haiku 4.5 costs a third of Sonnet per token
    # Haiku 4.5 caches nothing under 4,096 tokens: the short first calls are uncached.
    assert haiku.tokens["uncached"][0] >= base.tokens["uncached"][0]


def test_editor_keeps_structural_sharing(session: Session) -> None:
    counter = counter_for(session.model_info)
    editor = Editor(add_tools=synthetic_tools(2, 50, counter), system_prefix="Be brief. ")
    first = editor(session.calls[3].request)
    second = editor(session.calls[4].request)
    assert first.tools is second.tools
    assert len(first.tools) == len(session.calls[3].request.tools) + 2
    shared = session.calls[3].request.messages
    assert all(a is b for a, b in zip(first.messages, shared, strict=False))
    assert isinstance(first.system, str)
    assert first.system.startswith("Be brief. ")


def test_strategy_none_changes_nothing(session: Session) -> None:
    replayed, plain = strategy_tables(_ticket(session), "none")
    np.testing.assert_allclose(replayed.cost, plain.cost)


@pytest.mark.corpus
def test_subagents_priced_into_their_parent(corpus: Path) -> None:
    read = collect_tickets([corpus / "spotter"])
    names = [Path(t.name).name for t in read.tickets]
    main = next(
        t for t in read.tickets if t.name.endswith("258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    )
    assert len(main.sessions) == 3  # the main session, a subagent, the compaction request
    assert not any(n.startswith("agent-a881341") for n in names)  # not a ticket of its own
    assert "agent-afc096d.jsonl" in names  # its parent file is missing: its own ticket
    assert any("not read" in n for n in read.notes)


@pytest.mark.corpus
def test_baseline_matches_accounting_on_corpus(corpus: Path) -> None:
    folders = [corpus / "spotter", corpus / "claude-code-viewer", corpus / "entire-claude"]
    tickets = collect_tickets(folders).tickets  # compactions and resumes among them
    table, recorded = price_tickets(tickets, Change())
    for i, ticket in enumerate(tickets):
        ledgers = [price_session(s, output="recorded") for s in ticket.sessions]
        assert table.cost[i] == pytest.approx(sum(led.simulated.total_cost or 0 for led in ledgers))
        assert recorded[i] == pytest.approx(
            sum(led.recorded.total_cost or 0 for led in ledgers if led.recorded is not None)
        )


@pytest.mark.corpus
def test_model_what_if_retokenises(corpus: Path) -> None:
    tickets = collect_tickets([corpus / "spotter" / "subagent.jsonl"]).tickets
    base, _ = price_tickets(tickets, Change())
    other, _ = price_tickets(tickets, Change(model="claude-opus-4-7"))
    # Opus 4.7's tokenizer yields more tokens for the same text; same prices per token as 4.6.
    assert other.tokens["prefix"][0] > base.tokens["prefix"][0]
    assert other.cost[0] > base.cost[0]


@pytest.mark.corpus
def test_headline_and_what_ifs_start_from_the_recorded_bill(corpus: Path) -> None:
    """Every ticket has its bill: the headline is the bill, each what-if the bill plus the
    simulated difference ticket by ticket, the simulated figures beside them."""
    report = estimate_recordings([corpus / "spotter"], WhatIfs(cache="1h"))
    doc = report.to_json()
    assert doc["basis"] == "recorded"
    assert report.recorded is not None
    assert doc["mean_usd"] == pytest.approx(float(report.recorded.mean()))
    assert doc["simulated"]["mean_usd"] == pytest.approx(float(report.baseline.cost.mean()))
    (what,) = report.what_ifs
    expected = report.recorded + (what.table.cost - report.baseline.cost)
    (row,) = doc["what_if"]
    assert row["mean_usd"] == pytest.approx(float(expected.mean()))
    assert row["delta_usd"] == pytest.approx(float(expected.mean() - report.recorded.mean()))
    assert row["simulated_mean_usd"] == pytest.approx(float(what.table.cost.mean()))


def test_headline_is_simulated_without_a_bill() -> None:
    report = estimate_from_profile(parse_profile('model = "claude-sonnet-4-5"\ntools = 3\n'))
    assert report.to_json()["basis"] == "simulated"


def test_a_what_if_applies_the_simulated_ratio_to_the_bill() -> None:
    """The README's own what-if once printed a negative cost per ticket: the bill ($0.10) plus a
    simulated difference (-$0.12) taken on a simulation 70% above the bill. The ratio (what-if /
    baseline, both simulated) applied to the bill cannot go below zero."""
    from contextkit.estimate._report import applied_to_bill  # noqa: PLC0415

    bill = np.array([0.10, 0.20, 0.05])
    baseline = np.array([0.17, 0.20, 0.0])
    changed = np.array([0.05, 0.30, 0.01])
    out = applied_to_bill(bill, baseline, changed)
    assert out[0] == pytest.approx(0.10 * 0.05 / 0.17)
    assert out[0] > 0 > bill[0] + changed[0] - baseline[0]
    assert out[1] == pytest.approx(0.30)
    assert out[2] == pytest.approx(0.06)  # no simulated baseline: no ratio, the difference
