"""Prices (genai-prices, corrections, overrides, tiers, dates) and the dated reference data."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from contextkit.errors import ConfigError
from contextkit.models import UNKNOWN_MODEL, openai_cached_tokens, parse_claude, resolve_model
from contextkit.pricing import (
    UNKNOWN_COST,
    ModelPrice,
    UnknownPriceWarning,
    call_cost,
    format_cost,
    load_price_overrides,
    lookup_price,
    price_or_warn,
    use_price_overrides,
)
from contextkit.session import Usage

# REFERENCE.md: input, cache write 5m, cache write 1h, cache read, output (USD per MTok)
ANTHROPIC_TABLE = {
    "claude-opus-4-5": (5, 6.25, 10, 0.50, 25),
    "claude-opus-4-6": (5, 6.25, 10, 0.50, 25),
    "claude-opus-4-7": (5, 6.25, 10, 0.50, 25),
    "claude-opus-4-20250514": (15, 18.75, 30, 1.50, 75),
    "claude-opus-4-1": (15, 18.75, 30, 1.50, 75),
    "claude-3-7-sonnet-20250219": (3, 3.75, 6, 0.30, 15),
    "claude-sonnet-4-20250514": (3, 3.75, 6, 0.30, 15),
    "claude-sonnet-4-5": (3, 3.75, 6, 0.30, 15),
    "claude-sonnet-4-6": (3, 3.75, 6, 0.30, 15),
    "claude-haiku-4-5": (1, 1.25, 2, 0.10, 5),
    "claude-3-5-haiku-20241022": (0.80, 1, 1.60, 0.08, 4),
    "claude-3-haiku-20240307": (0.25, 0.30, 0.50, 0.03, 1.25),
}
TODAY = date(2026, 11, 29)


@pytest.fixture(autouse=True)
def no_user_overrides(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("CONTEXTKIT_PRICES", raising=False)
    use_price_overrides(None)
    yield
    use_price_overrides(None)


@pytest.mark.parametrize(("model", "expected"), ANTHROPIC_TABLE.items())
def test_prices_match_the_reference_table(model: str, expected: tuple[float, ...]) -> None:
    price = lookup_price(resolve_model(model), TODAY)
    assert price is not None
    got = (price.input, price.cache_write_5m, price.cache_write_1h, price.cache_read, price.output)
    assert got == pytest.approx(expected)


@pytest.mark.parametrize(
    "alias",
    [
        "claude-sonnet-4-5",
        "claude-sonnet-4-5-20250929",
        "anthropic/claude-sonnet-4-5",
        "anthropic/claude-sonnet-4.5",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "claude-sonnet-4-5@20250929",
        "Claude-Sonnet-4-5",
    ],
)
def test_aliases_resolve_to_one_price(alias: str) -> None:
    price = lookup_price(resolve_model(alias), TODAY)
    assert price is not None
    assert price.model == alias
    assert price.source.endswith("(claude-sonnet-4-5)")


def test_openai_prices_and_cached_discount() -> None:
    for model in ("gpt-4o", "gpt-4o-2024-08-06", "openai/gpt-4o"):
        price = lookup_price(resolve_model(model), TODAY)
        assert price is not None
        assert (price.input, price.output) == (2.5, 10)
        discount = resolve_model(model).cached_input_discount()
        assert discount is not None
        assert price.cache_read == pytest.approx(price.input * (1 - discount))
        assert price.cache_write_5m == price.input  # OpenAI charges no write premium
    gpt5 = lookup_price(resolve_model("gpt-5"), TODAY)
    assert gpt5 is not None
    assert gpt5.cache_read == pytest.approx(gpt5.input * 0.1)


BETA_DAY = date(2026, 3, 1)
"""While the 1M-context beta (and with it the long-context tier) was on."""


def test_tier_applies_to_the_whole_request() -> None:
    price = lookup_price(resolve_model("claude-sonnet-4-5"), BETA_DAY)
    assert price is not None
    at = Usage(input_tokens=150_000, cache_read=50_000, output_tokens=1_000)
    above = Usage(input_tokens=150_001, cache_read=50_000, output_tokens=1_000)
    assert price.cost(at) == pytest.approx((150_000 * 3 + 50_000 * 0.3 + 1_000 * 15) / 1e6)
    assert price.cost(above) == pytest.approx((150_001 * 6 + 50_000 * 0.6 + 1_000 * 22.5) / 1e6)


def test_shipped_correction_adds_sonnet_4_long_context_tier() -> None:
    price = lookup_price(resolve_model("claude-sonnet-4-20250514"), BETA_DAY)
    assert price is not None
    assert "price_corrections.toml" in price.source
    assert price.cost(Usage(input_tokens=250_000)) == pytest.approx(250_000 * 6 / 1e6)
    assert price.cost(Usage(output_tokens=1_000_000)) == pytest.approx(15)
    # Sonnet 4.5 is not caught by the Sonnet 4 correction
    other = lookup_price(resolve_model("claude-sonnet-4-5-20250929"), BETA_DAY)
    assert other is not None
    assert "genai-prices" in other.source


def test_prices_have_effective_dates() -> None:
    before = lookup_price(resolve_model("claude-opus-4-6"), date(2026, 3, 1))
    after = lookup_price(resolve_model("claude-opus-4-6"), date(2026, 3, 13))
    assert before is not None
    assert after is not None
    assert before.tiers  # long-context tier before 2026-03-13
    assert not after.tiers
    assert after.effective_from == date(2026, 3, 13)
    big = Usage(input_tokens=300_000)
    assert before.cost(big) == 2 * after.cost(big)


def test_model_price_stays_backward_compatible() -> None:
    price = ModelPrice(
        model="m", input=1, output=2, cache_write_5m=1.25, cache_write_1h=2, cache_read=0.1
    )
    usage = Usage(
        input_tokens=10, cache_write_5m=20, cache_write_1h=30, cache_read=40, output_tokens=50
    )
    assert price.cost(usage) == pytest.approx((10 + 25 + 60 + 4 + 100) / 1e6)
    assert price.tiers == ()


def test_unknown_model_is_none_and_warns_once() -> None:
    assert lookup_price(resolve_model("no-such-model-xyz")) is None
    assert lookup_price(UNKNOWN_MODEL) is None
    with pytest.warns(UnknownPriceWarning, match="no-such-model-xyz"):
        assert price_or_warn(resolve_model("no-such-model-xyz")) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert price_or_warn(resolve_model("no-such-model-xyz")) is None
        assert call_cost(resolve_model("no-such-model-xyz"), Usage(input_tokens=5)) is None
    assert format_cost(None) == UNKNOWN_COST
    assert format_cost(0.012345) == "$0.0123"


OVERRIDE = """
[models."claude-sonnet-4-5"]
input = 1.0
output = 2.0
cache_read = 0.5
note = "negotiated"

[[models."my-local-model"]]
input = 0.1
output = 0.2

[[models."my-local-model"]]
since = 2026-06-01
input = 0.3
output = 0.4
match = ["my-local-model-", "acme/"]
"""


def test_user_override_file_takes_precedence(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(OVERRIDE)
    use_price_overrides(path)
    price = lookup_price(resolve_model("claude-sonnet-4-5-20250929"), TODAY)
    assert price is not None
    assert (price.input, price.output, price.cache_read) == (1.0, 2.0, 0.5)
    assert price.cache_write_5m == 1.0  # a class left out costs the input price
    assert str(path) in price.source
    assert "negotiated" in price.source
    early = lookup_price(resolve_model("my-local-model"), date(2026, 1, 1))
    late = lookup_price(resolve_model("acme/anything"), date(2026, 7, 1))
    assert early is not None
    assert late is not None
    assert (early.input, late.input) == (0.1, 0.3)
    assert late.effective_from == date(2026, 6, 1)


def test_override_file_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env-prices.toml"
    path.write_text(OVERRIDE)
    monkeypatch.setenv("CONTEXTKIT_PRICES", str(path))
    price = lookup_price(resolve_model("my-local-model-v2"), TODAY)
    assert price is not None
    assert price.input == 0.3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models.x\ninput = 1", "invalid TOML"),
        ('[models."x"]\ninput = "cheap"\noutput = 1', "models.'x'"),
        ('[models."x"]\ninput = 1\noutput = 1\nbogus = 2', "bogus"),
        ("models = 3", "'models' must be a table"),
    ],
)
def test_bad_override_file_names_file_and_entry(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_price_overrides(path)
    assert str(path) in str(info.value)


def test_missing_override_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        use_price_overrides(tmp_path / "absent.toml")


# --- reference data ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("claude-sonnet-4-5-20250929", "sonnet-4.5"),
        ("claude-3-5-haiku-20241022", "haiku-3.5"),
        ("claude-3-7-sonnet-latest", "sonnet-3.7"),
        ("claude-sonnet-4-20250514", "sonnet-4"),
        ("claude-opus-4-1", "opus-4.1"),
        ("bedrock/us.anthropic.claude-opus-4-7-v1:0", "opus-4.7"),
        ("claude-sonnet-4@20250514", "sonnet-4"),
    ],
)
def test_parse_claude(model: str, key: str) -> None:
    parsed = parse_claude(model)
    assert parsed is not None
    assert parsed.key == key


def test_min_cacheable_tokens_with_the_sonnet_4_6_change() -> None:
    assert resolve_model("claude-sonnet-4-6").cache_min_tokens(date(2026, 5, 12)) == 2048
    assert resolve_model("claude-sonnet-4-6").cache_min_tokens(date(2026, 5, 13)) == 1024
    assert resolve_model("claude-opus-4-5").cache_min_tokens() == 4096
    assert resolve_model("claude-haiku-4-5-20251001").cache_min_tokens() == 4096
    assert resolve_model("claude-3-5-haiku-20241022").cache_min_tokens() == 2048
    assert resolve_model("claude-opus-4-7").cache_min_tokens() == 2048
    assert resolve_model("claude-sonnet-4-20250514").cache_min_tokens() == 1024
    assert resolve_model("gpt-4o").cache_min_tokens() == 1024


def test_tool_use_overhead_by_family_choice_and_date() -> None:
    july = date(2026, 7, 2)
    assert resolve_model("claude-sonnet-4-5").tool_overhead("auto", july) == 496
    assert (
        resolve_model("claude-sonnet-4-5").tool_overhead({"type": "tool", "name": "x"}, july) == 588
    )
    assert resolve_model("claude-opus-4-6").tool_overhead(None, july) == 497
    assert resolve_model("claude-opus-4-7").tool_overhead("any", july) == 804
    assert resolve_model("claude-sonnet-4").tool_overhead("auto", july) == 313
    assert resolve_model("claude-sonnet-4").tool_overhead("auto", date(2026, 2, 1)) == 346
    assert resolve_model("claude-3-5-haiku-20241022").tool_overhead({"type": "any"}) == 340
    assert resolve_model("gpt-4o").tool_overhead("auto") == 0


def test_context_windows() -> None:
    assert resolve_model("claude-opus-4-6").context_window == 1_000_000
    assert resolve_model("claude-sonnet-4-6").context_window == 1_000_000
    assert resolve_model("claude-sonnet-4-5-20250929").context_window == 200_000
    assert resolve_model("claude-3-5-haiku-20241022").context_window == 200_000
    assert resolve_model("gpt-4o").context_window == 128_000  # from genai-prices' data
    assert resolve_model("no-such-model").context_window is None


def test_image_tokens_old_and_current_formula() -> None:
    old = date(2026, 1, 1)
    assert UNKNOWN_MODEL.image_tokens(1000, 1000, old) == 1334  # ceil(1e6 / 750)
    assert UNKNOWN_MODEL.image_tokens(3000, 3000, old) == 1600  # resized to 1568 px, then capped
    assert (
        resolve_model("claude-sonnet-4-5").image_tokens(1000, 1000, TODAY) == 1296
    )  # 36 x 36 patches
    assert resolve_model("claude-sonnet-4-5").image_tokens(4000, 3000, TODAY) == 1568
    assert resolve_model("claude-opus-4-7").image_tokens(4000, 3000, TODAY) == 4784
    assert UNKNOWN_MODEL.image_tokens(0, 10) == 0


def test_openai_cache_steps() -> None:
    assert openai_cached_tokens(1023) == 0
    assert openai_cached_tokens(1024) == 1024
    assert openai_cached_tokens(1151) == 1024
    assert openai_cached_tokens(1152) == 1152
    assert resolve_model("gpt-4.1-mini").cached_input_discount() == 0.75
    assert resolve_model("gpt-4o-mini").cached_input_discount() == 0.5
    assert resolve_model("llama").cached_input_discount() is None


def test_the_sonnet_long_context_tier_ends_with_the_1m_beta() -> None:
    during = lookup_price(resolve_model("claude-sonnet-4-5-20250929"), date(2026, 3, 1))
    after = lookup_price(resolve_model("claude-sonnet-4-5-20250929"), date(2026, 11, 2))
    assert during is not None
    assert after is not None
    assert [t.above_input_tokens for t in during.tiers] == [200_000]
    assert after.tiers == ()
    big = Usage(input_tokens=250_000)
    assert during.cost(big) == pytest.approx(250_000 * 6.0 / 1e6)
    assert after.cost(big) == pytest.approx(250_000 * 3.0 / 1e6)
