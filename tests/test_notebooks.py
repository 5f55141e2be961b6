"""The notebooks in notebooks/ run end to end in a fresh kernel, without a cell error, and are
the ones notebooks/build.py defines (so the committed outputs come from the committed cells).

TRACEJIT_NOTEBOOK_QUICK=1 makes them short (fewer training steps, fewer timing sizes).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
# Installed, not imported: the notebooks import them in their own kernel, and importing them
# here (sklearn alone 1.8 s) cost every pytest worker that time at collection.
_missing = [m for m in ("nbclient", "ipykernel", "matplotlib", "sklearn")
            if importlib.util.find_spec(m) is None]
if _missing:
    pytest.skip(f"could not find {', '.join(_missing)}", allow_module_level=True)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _build_module():
    spec = importlib.util.spec_from_file_location("notebooks_build", NOTEBOOKS / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build = _build_module()
NAMES = sorted(build.NOTEBOOKS)


def test_every_notebook_file_is_built_by_build_py():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == NAMES
    assert [n[:2] for n in NAMES] == ["01", "02", "03", "04"]


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_has_build_py_cells_and_outputs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    expected = build.make_notebook(build.NOTEBOOKS[name])
    assert [(c.cell_type, c.source) for c in nb.cells] == [
        (c.cell_type, c.source) for c in expected.cells], (
        f"{name} differs from notebooks/build.py: run `python notebooks/build.py {name[:2]}`")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"{name} was committed unexecuted"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{name} was committed with an error output: {errors[0].ename}"


def _has_png(nb) -> bool:
    return any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
               for o in c.outputs)


# make test runs the quickstart and the training notebook; the fusion and debugging tours
# (13 s of kernels) run in make test-slow, their committed outputs checked above in both.
@pytest.mark.parametrize("name", [n if n[:2] in ("01", "03") else pytest.param(
    n, marks=pytest.mark.slow) for n in NAMES])
def test_notebook_executes_without_errors(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    # Raises CellExecutionError (naming the cell and the traceback) on the first failing cell.
    # No per-cell time limit: how long a busy machine takes to compile is no failure (a cell
    # once ran out of 300 s that way); CI's own limit stops a hang.
    build.execute(nb, timeout=None, env={"TRACEJIT_NOTEBOOK_QUICK": "1"})
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    if name[:2] in ("02", "03", "04"):
        assert _has_png(nb), f"{name} should draw a plot"
