"""One definition of "simulated": the recorded requests through the cache simulator, with the
output tokens the recording billed. ``inspect``'s simulated cost, ``cost``'s simulated mean of a
one-session ticket and the replay of the full tape (``none``, on a session the harness never
compacted, with breakpoints where the harness put them) are the same figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextkit.cli import app

SESSION = "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"


def _json(*args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.corpus
def test_simulated_is_one_figure_in_inspect_cost_and_compare(corpus: Path) -> None:
    path = str(corpus / SESSION)
    (inspected,) = _json("inspect", path)["sessions"]
    cost = _json("cost", path)
    rows = {r["strategy"]: r["summary"] for r in _json("compare", path)["results"]}
    simulated = inspected["simulated"]["cost_usd"]
    assert cost["simulated"]["mean_usd"] == pytest.approx(simulated, rel=1e-5)
    assert rows["none"]["cost_usd"] == pytest.approx(simulated, rel=1e-5)
    # the bill is the bill everywhere
    bill = inspected["recorded"]["cost_usd"]
    assert rows["as-recorded"]["cost_usd"] == pytest.approx(bill, rel=1e-5)
    assert cost["mean_usd"] == pytest.approx(bill, rel=1e-5)
    # output tokens as billed, not counted from the responses
    assert inspected["simulated"]["output"] == inspected["recorded"]["output"]
