"""``contextkit usage`` beside ccusage on the same Claude Code files, team by team.

``uv run python scripts/compare_ccusage.py [CORPUS] --ccusage PATH``

Each Claude Code team of the corpus is copied into a fresh ``HOME/.claude/projects/<project>``
(ccusage reads only there), then ``ccusage claude daily --json --offline --timezone UTC`` and
``contextkit usage --json`` run on it in turn; their totals (input, cache writes, cache reads,
output, dollars) and wall times are printed side by side as a Markdown table. ccusage comes from
npm (``npm install ccusage@20.0.24``: 20.0.26 ships no linux-x64 binary). Used for the figures in
docs/comparison.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TEAMS = (
    "claude-code-viewer",
    "codemie-claude",
    "entire-claude",
    "oh-my-posh-claude",
    "packmind-claude",
    "spotter",
)
KEYS = {  # ccusage total -> contextkit total
    "inputTokens": "input_tokens",
    "cacheCreationTokens": "cache_write_tokens",
    "cacheReadTokens": "cache_read_tokens",
    "outputTokens": "output_tokens",
    "totalCost": "cost_usd",
}


def _run(command: list[str], env: dict[str, str]) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout), time.perf_counter() - start


def compare(corpus: Path, ccusage: str) -> list[str]:
    rows = [
        "| team | tool | seconds | input | cache write | cache read | output | USD |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for team in TEAMS:
        home = Path(tempfile.mkdtemp())
        try:
            project = home / ".claude" / "projects" / f"-home-me-{team}"
            shutil.copytree(corpus / team, project, ignore=shutil.ignore_patterns("*.md"))
            env = {**os.environ, "HOME": str(home)}
            theirs, t_theirs = _run(
                [ccusage, "claude", "daily", "--json", "--offline", "--timezone", "UTC"], env
            )
            ours, t_ours = _run(
                [sys.executable, "-m", "contextkit", "usage", "--json", "--lenient", str(project)],
                env,
            )
        finally:
            shutil.rmtree(home)
        a, b = theirs["totals"], ours["total"]
        rows.append(_row(team, "ccusage", t_theirs, [a[k] for k in KEYS]))
        rows.append(_row("", "contextkit", t_ours, [b[v] for v in KEYS.values()]))
    return rows


def _row(team: str, tool: str, seconds: float, values: list[float]) -> str:
    *tokens, usd = values
    cells = [f"{int(v):,}" for v in tokens] + [f"${usd:,.2f}"]
    return f"| {team} | {tool} | {seconds:.1f} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", nargs="?", default=os.environ.get("CONTEXTKIT_CORPUS"))
    parser.add_argument("--ccusage", required=True, help="the ccusage executable")
    args = parser.parse_args()
    if not args.corpus:
        parser.error("give CORPUS or set CONTEXTKIT_CORPUS")
    print("\n".join(compare(Path(args.corpus), args.ccusage)))


if __name__ == "__main__":
    main()
