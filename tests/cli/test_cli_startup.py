"""The command line stays lazy: importing it (what ``contextkit --help`` does) loads no heavy
package. A new command that imports the library at module level fails here, not in a user's
terminal (``benchmarks/bench_cli.py`` measures the time this saves)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.strategies import PRESET_NAMES, PRESETS

HEAVY = ("anthropic", "matplotlib", "numpy", "tiktoken", "genai_prices", "httpx", "rich")
"""Packages no command may import before it runs (the library loads them; rich only prints)."""


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_command_line_loads_no_heavy_package() -> None:
    loaded = _modules_after("import contextkit.cli")
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert not heavy, f"import contextkit.cli pulls in {heavy[:8]}"
    library = sorted(
        m for m in loaded if m.startswith("contextkit.") and not m.startswith("contextkit.cli")
    )
    # The strategies' and peers' package surfaces (their names load on first use) give the
    # presets' and peers' names to the help texts; none of their modules loads.
    assert library == ["contextkit.errors", "contextkit.peers", "contextkit.strategies"], library


def test_help_loads_no_heavy_package() -> None:
    loaded = _modules_after(
        "import sys\nfrom contextkit.cli import main\nsys.argv = ['contextkit', 'cost', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert not sorted(m for m in loaded if m.split(".")[0] in HEAVY)


def test_the_help_names_the_presets_it_was_written_with() -> None:
    assert tuple(PRESETS) == PRESET_NAMES
    out = CliRunner().invoke(app, ["replay", "--help"]).stdout
    out = re.sub(r"-\n\s+", "-", out)  # help wraps at hyphens
    for name in PRESETS:
        assert name in out
    assert "[default: evict-tool-results]" in out


def test_version_and_python_dash_m() -> None:
    version = CliRunner().invoke(app, ["--version"])
    assert version.exit_code == 0
    assert version.stdout.startswith("contextkit ")
    done = subprocess.run(
        [sys.executable, "-m", "contextkit", "--version"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0
    assert done.stdout == version.stdout


def test_numeric_flags_are_validated() -> None:
    for args in (["--add-tools", "-3"], ["--tool-tokens", "0"], ["--tickets", "0"]):
        result = CliRunner().invoke(app, ["cost", "--profile", "x.toml", *args])
        assert result.exit_code == 2, args
        assert "Invalid value" in result.output, result.output


def test_add_tools_file_must_hold_tool_schemas(tmp_path: Path) -> None:
    profile = str(Path(__file__).parents[2] / "docs" / "examples" / "support-agent.toml")
    not_tools = tmp_path / "not-tools.json"
    not_tools.write_text('[{"role": "user", "content": "hi"}]')
    args = ["cost", "--profile", profile, "--add-tools-file", str(not_tools)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert f"{not_tools}: tool 0" in result.output
    assert "Traceback" not in result.output
    missing = CliRunner().invoke(
        app, ["cost", "--profile", profile, "--add-tools-file", str(tmp_path / "none.json")]
    )
    assert missing.exit_code == 2
    assert "does not exist" in missing.output
