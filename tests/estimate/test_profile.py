"""Workload profiles: distributions, Monte Carlo against the closed form, what-ifs, TOML, fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contextkit.errors import ConfigError
from contextkit.estimate import (
    Change,
    Choice,
    LogNormal,
    Poisson,
    Profile,
    Uniform,
    closed_form,
    collect_tickets,
    dump_profile,
    fit_profile,
    parse_profile,
    price_tickets,
    simulate_profile,
    with_cache,
    with_tools,
)
from contextkit.pricing import PER_MILLION

FIXED = """
model = "claude-sonnet-4-5"
cache = "off"
system_tokens = 300
tools = 9
tool_tokens = 75
tool_overhead_tokens = 346
user_turns = 3
calls_per_turn = 4
user_message_tokens = 80
tool_result_tokens = 500
output_tokens = 120
seconds_between_calls = 3
seconds_between_turns = 30
"""

RANDOM = """
model = "claude-sonnet-4-5"
cache = "off"
system_tokens = 400
tools = 9
tool_tokens = 75
user_turns = {dist = "poisson", mean = 2.5}
calls_per_turn = {dist = "lognormal", mean = 4, sd = 3}
user_message_tokens = {dist = "lognormal", mean = 80, sd = 50}
tool_result_tokens = {dist = "lognormal", mean = 500, sd = 800}
output_tokens = {dist = "uniform", low = 50, high = 200}
seconds_between_calls = {dist = "choice", values = [2, 5, 30]}
seconds_between_turns = {dist = "lognormal", mean = 200, sd = 300}
"""


def _fixed(**update: object) -> Profile:
    return parse_profile(FIXED).model_copy(update=update)


def test_fixed_profile_without_cache_equals_closed_form() -> None:
    profile = _fixed()
    run = simulate_profile(profile, tickets=500, seed=3)
    expected = closed_form(profile)["no_cache_usd"]
    assert run.table.cost.mean() == pytest.approx(expected, rel=1e-3)
    # By hand: 12 calls; prefix 300 + 9*75 + 346 (the hidden tool prompt, as given) = 1321.
    assert profile.prefix_tokens == 1321
    assert run.table.calls[0] == 12


def test_fixed_profile_hand_computed_contexts() -> None:
    profile = _fixed(
        user_turns=parse_profile(FIXED.replace("user_turns = 3", "user_turns = 1")).user_turns,
        calls_per_turn=_fixed().calls_per_turn,
    )
    run = simulate_profile(profile, tickets=1)
    # Turn of 4 calls: u; +o+r; +o+r; +o+r  ->  contexts P+80, P+700, P+1320, P+1940.
    p = 1321
    assert run.arrays.context.tolist() == [p + 80, p + 700, p + 1320, p + 1940]
    assert run.arrays.new.tolist() == [80, 620, 620, 620]


def test_random_profile_monte_carlo_close_to_closed_form() -> None:
    profile = parse_profile(RANDOM)
    run = simulate_profile(profile, tickets=60_000, seed=11)
    form = closed_form(profile)
    assert run.table.calls.mean() == pytest.approx(form["calls"], rel=0.02)
    assert run.table.cost.mean() == pytest.approx(form["no_cache_usd"], rel=0.03)


def test_always_warm_cache_equals_warm_closed_form() -> None:
    profile = _fixed(cache="1h")
    run = simulate_profile(profile, tickets=10)
    assert run.table.cost.mean() == pytest.approx(closed_form(profile)["warm_cache_usd"], rel=1e-9)
    assert run.arrays.write_5m.sum() == 0  # 1h writes only
    cold = _fixed(cache="1h", prefix_warm=False)
    cold_run = simulate_profile(cold, tickets=10)
    assert cold_run.table.cost.mean() == pytest.approx(closed_form(cold)["warm_cache_usd"])


def test_adding_tools_without_cache_adds_tokens_times_calls_times_input_price() -> None:
    profile = parse_profile(RANDOM)
    more = with_tools(profile, 5, 75)
    base = simulate_profile(profile, tickets=5000, seed=5).table
    after = simulate_profile(more, tickets=5000, seed=5).table
    price = profile.price()
    expected = 5 * 75 * base.calls * price.input / PER_MILLION
    np.testing.assert_allclose(after.cost - base.cost, expected, rtol=1e-9)


def test_adding_tools_with_cache_reads_them_every_call() -> None:
    profile = _fixed(cache="5m")
    base = simulate_profile(profile, tickets=3).table
    after = simulate_profile(with_tools(profile, 5, 75), tickets=3).table
    added = 5 * 75
    # Warm prefix, no expiry (gaps 3 s and 30 s < 5 min): every call reads the addition.
    np.testing.assert_allclose(after.tokens["cache_read"] - base.tokens["cache_read"], added * 12)
    np.testing.assert_allclose(after.tokens["cache_write"] - base.tokens["cache_write"], 0)
    cold = _fixed(cache="5m", prefix_warm=False)
    base = simulate_profile(cold, tickets=3).table
    after = simulate_profile(with_tools(cold, 5, 75), tickets=3).table
    # Cold prefix: call 1 writes the addition, the 11 calls after read it.
    np.testing.assert_allclose(after.tokens["cache_write"] - base.tokens["cache_write"], added)
    np.testing.assert_allclose(after.tokens["cache_read"] - base.tokens["cache_read"], added * 11)
    price = cold.price()
    delta = (added * price.cache_write_5m + added * 11 * price.cache_read) / PER_MILLION
    np.testing.assert_allclose(after.cost - base.cost, delta)


def test_ttl_expiry_between_turns_rewrites_the_history() -> None:
    profile = _fixed(
        cache="5m",
        seconds_between_turns=parse_profile(
            FIXED.replace("seconds_between_turns = 30", "seconds_between_turns = 600")
        ).seconds_between_turns,
    )
    run = simulate_profile(profile, tickets=1)
    a = run.arrays
    turn_starts = [0, 4, 8]
    for k in range(12):
        if k in turn_starts:  # expired: only the warm prefix is read
            assert a.read[k] == profile.prefix_tokens
        else:
            assert a.read[k] == a.context[k - 1]
    np.testing.assert_allclose(a.read + a.write_5m, a.context)


def test_below_minimum_nothing_is_cached() -> None:
    profile = _fixed(cache="5m", min_cache_tokens=100_000)
    run = simulate_profile(profile, tickets=2)
    assert run.arrays.read.sum() == 0
    assert run.arrays.write_5m.sum() == 0
    off = simulate_profile(with_cache(profile, "off"), tickets=2)
    np.testing.assert_allclose(run.table.cost, off.table.cost)


@pytest.mark.parametrize(
    "dist",
    [
        Poisson(mean=2.5),
        Poisson(mean=0.4),
        LogNormal(mean=4, sd=3),
        Uniform(low=0, high=5),
        Choice(values=(1, 2, 9), weights=(3, 1, 1)),
    ],
)
def test_count_moments_match_samples(dist: Poisson | LogNormal | Uniform | Choice) -> None:
    draws = dist.count_sample(np.random.default_rng(0), 400_000).astype(float)
    m1, m2 = dist.count_moments()
    assert draws.min() >= 1
    assert draws.mean() == pytest.approx(m1, rel=0.01)
    assert (draws**2).mean() == pytest.approx(m2, rel=0.02)


def test_toml_round_trip_and_errors(tmp_path: Path) -> None:
    profile = parse_profile(RANDOM)
    assert parse_profile(dump_profile(profile)) == profile
    with pytest.raises(ConfigError, match=r"bad\.toml: user_turns"):
        parse_profile(FIXED.replace("user_turns = 3", 'user_turns = {dist="zipf"}'), "bad.toml")
    with pytest.raises(ConfigError, match="invalid TOML"):
        parse_profile("model = ", "x.toml")
    with pytest.raises(ConfigError, match="cache"):
        parse_profile(FIXED.replace('cache = "off"', 'cache = "2h"'))
    tools = tmp_path / "tools.json"
    tools.write_text('[{"name": "a", "description": "look up an order", "input_schema": {}}]')
    (tmp_path / "p.toml").write_text(FIXED.replace("tools = 9", 'tools_file = "tools.json"'))
    from contextkit.estimate import load_profile  # noqa: PLC0415

    loaded = load_profile(tmp_path / "p.toml")
    assert loaded.tools == 1
    assert 0 < loaded.tool_tokens < 75


@pytest.mark.corpus
def test_fit_then_profile_mean_within_15_percent_of_recorded(corpus: Path) -> None:
    folders = ["claude-code-log-synthetic", "claude-code-viewer", "codemie-claude", "spotter"]
    tickets = collect_tickets([corpus / f for f in folders], lenient=True).tickets
    _, recorded = price_tickets(tickets, Change())
    assert np.isfinite(recorded).all()
    profile = fit_profile(tickets)
    estimate = simulate_profile(profile, tickets=20_000, seed=0).table.cost.mean()
    ratio = estimate / recorded.mean()
    print(
        f"recorded mean {recorded.mean():.4f} over {len(tickets)} tickets; "
        f"fitted profile {estimate:.4f} (x{ratio:.3f})"
    )
    assert abs(ratio - 1) < 0.15
