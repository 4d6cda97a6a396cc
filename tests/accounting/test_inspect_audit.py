"""``inspect`` on the wrapper's own audit log (``wrap(..., audit_path=...)``): the usage and stop
reason each line carries are read, and a tool result a strategy replaced with a placeholder is
not reported as riding every later call at full size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.engine.anthropic import wrap
from contextkit.strategies import strategy_from_spec
from contextkit.testing.fake_anthropic import FakeAnthropic, tool_loop_replies
from contextkit.tokens import ApproxCounter

CALLS = 16


def _audited_loop(audit: Path) -> list[dict[str, Any]]:
    """A tool loop through the wrapper against the fake server; the usage it reported per call."""
    with FakeAnthropic(tool_loop_replies(CALLS - 1), counter=ApproxCounter()) as server:
        sdk = anthropic.Anthropic(base_url=server.base_url, api_key="offline", max_retries=0)
        client = wrap(
            sdk,
            strategy=strategy_from_spec("evict-tool-results"),
            budget_tokens=30_000,
            audit_path=audit,
        )
        history: list[Any] = [{"role": "user", "content": "Fix the failing test."}]
        usages = []
        while True:
            response = client.messages.create(
                model="claude-sonnet-4-5", max_tokens=1024, messages=history
            )
            usages.append(response.usage.model_dump())
            history.append({"role": "assistant", "content": response.content})
            if response.stop_reason != "tool_use":
                return usages
            call = next(b for b in response.content if b.type == "tool_use")
            result = "def f():\n    return 1\n" * 600
            history.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call.id, "content": result}],
                }
            )


def test_inspect_reads_the_audit_log_usage_stop_reasons_and_evictions(tmp_path: Path) -> None:
    audit = tmp_path / "requests.jsonl"
    usages = _audited_loop(audit)
    result = CliRunner().invoke(app, ["inspect", str(audit), "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["sessions"]
    assert entry["calls"] == CALLS
    assert entry["stop_reasons"] == {"tool_use": CALLS - 1, "end_turn": 1}
    recorded = entry["recorded"]
    assert recorded["cache_read"] == sum(u["cache_read_input_tokens"] or 0 for u in usages)
    assert recorded["output"] == sum(u["output_tokens"] for u in usages)
    heaviest = entry["heaviest_tool_results"]
    evicted = [t for t in heaviest if t["evicted_at_call"] is not None]
    assert evicted, heaviest  # the strategy cleared old results: the log shows placeholders
    for item in evicted:
        # carried at full size from its first call up to the call that carried the placeholder
        assert item["carried_by_calls"] == item["evicted_at_call"] - item["first_call"]
        assert item["carried_by_calls"] < CALLS - item["first_call"]
