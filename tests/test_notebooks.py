"""The notebooks: stored without outputs, in step with ``notebooks/build.py``, and each runs end to
end offline in a kernel of this project's interpreter (executed in memory: files stay clean).

The kernel: ``ipykernel.kernelspec.install`` writes a ``python3`` spec naming ``sys.executable``
into a temporary prefix, and ``JUPYTER_PATH`` puts it first, so a ``python3`` kernel the user
installed elsewhere cannot be picked instead. A cell appended in memory prints the kernel's
interpreter, which must be this one.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat as _nbformat
import pytest
from ipykernel.kernelspec import install
from nbclient import NotebookClient

nbformat: Any = _nbformat  # nbformat's functions carry no annotations
ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))
WHICH_PYTHON = "import sys; print(sys.executable)"


def _load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("notebooks_build", FOLDER / "build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    prefix = tmp_path_factory.mktemp("jupyter")
    install(kernel_name="python3", prefix=str(prefix))
    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    patch = pytest.MonkeyPatch()
    patch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    patch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core warns without it
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        patch.setenv(key, dead)  # the kernel inherits: any download attempt fails fast
    patch.setenv("NO_PROXY", "127.0.0.1,localhost")  # the kernel's own channels are local
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        patch.delenv(key)
    yield
    patch.undo()


def test_there_are_four_notebooks() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "01-array-is-the-state.ipynb",
        "02-strategies-compared.ipynb",
        "03-cost-per-ticket.ipynb",
        "04-fleet-in-duckdb.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_clean_and_valid(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: a code cell was stored with outputs"
            assert cell.execution_count is None


def test_files_match_the_generator() -> None:
    build = _load_build()
    for name, cells in build.NOTEBOOKS.items():
        stored = nbformat.read(FOLDER / name, as_version=4)
        assert stored == build.build(cells), f"{name} is stale: run notebooks/build.py"


def _errors(nb: Any) -> list[str]:
    return [
        f"{o.get('ename')}: {o.get('evalue')}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.output_type == "error"
    ]


def _stderr(nb: Any) -> str:
    return "".join(
        o.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.output_type == "stream" and o.name == "stderr"
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_end_to_end(path: Path, kernel_env: None) -> None:
    before = path.read_bytes()
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(WHICH_PYTHON))
    client = NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(FOLDER)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    assert _errors(nb) == []
    assert not re.search(r"\w+Warning: ", _stderr(nb)), _stderr(nb)  # a Python warning
    which = nb.cells[-1].outputs[0]["text"].strip()
    assert Path(which).resolve() == Path(sys.executable).resolve()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "data" in o]
    assert any("image/png" in o["data"] for o in images), "no plot was drawn"
    assert path.read_bytes() == before, "executing the notebook changed the stored file"
