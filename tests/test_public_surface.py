"""The public surface: every name a module's ``__all__`` lists resolves, and the strategies'
lazy package surface hands out names that work on their own (in a fresh process, where nothing
else loaded the registry)."""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import subprocess
import sys

import pytest

import contextkit


def _modules() -> list[str]:
    return sorted(
        m.name
        for m in pkgutil.walk_packages(contextkit.__path__, prefix="contextkit.")
        if not m.name.endswith("__main__")
    )


@pytest.mark.parametrize("name", _modules())
def test_every_name_in_all_resolves(name: str) -> None:
    module = importlib.import_module(name)
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not have: {missing}"
    assert len(set(getattr(module, "__all__", ()))) == len(getattr(module, "__all__", ()))


def test_the_top_level_package_has_a_version_and_a_map() -> None:
    assert contextkit.__version__ == importlib.metadata.version("contextkit")
    doc = contextkit.__doc__ or ""
    packages = {m.name for m in pkgutil.iter_modules(contextkit.__path__) if m.ispkg}
    assert packages <= set(doc.replace("`", " ").split()), "the map names every package"


@pytest.mark.parametrize(
    "code",
    [
        "from contextkit.strategies import Pipeline, SlidingWindow\n"
        "assert Pipeline(SlidingWindow(), SlidingWindow()).kind == 'pipeline'",
        "from contextkit.strategies import EvictToolResults, SlidingWindow\n"
        "assert (SlidingWindow() >> EvictToolResults()).kind == 'pipeline'",
        "import contextkit.strategies as s\n"
        "assert tuple(s.PRESETS) == s.PRESET_NAMES and 'SlidingWindow' in dir(s)",
    ],
)
def test_a_strategy_name_loaded_alone_works(code: str) -> None:
    """Found while moving the registry out of the combinators: a leaf loaded first had no ``>>``
    and a combinator loaded first was not fully defined."""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
