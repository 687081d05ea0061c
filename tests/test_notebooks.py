"""Every notebook: no committed outputs, taught code identical to helpers, and a full
execution in the smoke preset (through the runner, as ./run_all.sh --smoke does)."""
import ast
import importlib
import inspect
import json
import pkgutil
import textwrap
from pathlib import Path

import nbformat
import pytest

import helpers
from helpers import results, runner

ROOT = results.repo_root()
NOTEBOOKS = runner.notebooks()
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
ALL = NOTEBOOKS + SOLUTIONS
# Notebooks that explain and measure but teach no generator of their own.
TEACH_NOTHING = {"00_setup", "08_results_summary"}


def ids(paths):
    return [p.stem for p in paths]


def code_cells(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", ALL, ids=ids(ALL))
def test_committed_notebook_has_no_outputs(path):
    for cell in code_cells(path):
        assert not cell.get("outputs") and cell.get("execution_count") is None, \
            f"{path.name} has outputs: strip them (executed copies belong in runs/)"


@pytest.mark.parametrize("path", ALL, ids=ids(ALL))
def test_notebook_has_one_parameters_cell_with_preset(path):
    tagged = [c for c in code_cells(path) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: exactly one cell tagged 'parameters'"
    assert 'preset = "auto"' in tagged[0].source


def helpers_functions():
    found = {}
    for info in pkgutil.iter_modules(helpers.__path__):
        module = importlib.import_module(f"helpers.{info.name}")
        for name, obj in vars(module).items():
            if inspect.isfunction(obj) and obj.__module__ == module.__name__:
                found[name] = obj
    return found


def normalized(node):
    return ast.dump(node, annotate_fields=True, include_attributes=False)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_taught_code_is_identical_to_its_helpers_twin(path):
    twins = helpers_functions()
    taught = []
    for cell in code_cells(path):
        source = "\n".join(l for l in cell.source.splitlines() if not l.lstrip().startswith(("%", "!")))
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in twins:
                twin = ast.parse(textwrap.dedent(inspect.getsource(twins[node.name]))).body[0]
                assert normalized(node) == normalized(twin), (
                    f"{path.name} teaches {node.name} differently from "
                    f"{twins[node.name].__module__}.{node.name}: keep the two identical")
                taught.append(node.name)
    if path.stem not in TEACH_NOTHING:
        assert taught, f"{path.name} writes out none of the helpers functions it teaches"


@pytest.fixture(scope="module")
def smoke_run():
    run_root = ROOT / "runs" / "test-smoke"
    status = runner.run(NOTEBOOKS, "smoke", run_root, echo=False, promote_figures=False)
    return run_root, status


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_notebook_runs_in_the_smoke_preset(smoke_run, path):
    run_root, status = smoke_run
    entry = status[path.stem]
    assert entry["status"] == "ok", f"{path.name}: {entry.get('error')} (see {entry.get('executed')})"
    executed = nbformat.read(run_root / path.name, as_version=4)
    unexecuted = [i for i, c in enumerate(executed.cells)
                  if c.cell_type == "code" and c.source.strip() and c.execution_count is None]
    assert not unexecuted, f"{path.name}: code cells {unexecuted} never ran"
    record = json.loads((run_root / "outputs" / f"{path.stem}.json").read_text())
    assert record["preset"] == "smoke"
    assert (run_root / "data" / f"{path.stem}.csv").exists()


def test_smoke_run_never_touches_figures(smoke_run):
    manifest = ROOT / "figures" / "manifest.json"
    if manifest.exists():
        data = json.loads(manifest.read_text())
        assert all(e["preset"] == "full" and e["gpu"] != "cpu"
                   for section in data.values() for e in section.values())


@pytest.mark.parametrize("path", SOLUTIONS, ids=ids(SOLUTIONS))
def test_solution_runs_in_the_smoke_preset(path, tmp_path):
    import papermill

    papermill.execute_notebook(str(path), str(tmp_path / path.name), parameters={"preset": "smoke"},
                               kernel_name="python3", cwd=str(path.parent), progress_bar=False)


def test_every_lesson_has_solutions():
    lessons = {p.stem for p in NOTEBOOKS}
    solved = {p.stem.removesuffix("_solutions") for p in SOLUTIONS}
    assert lessons <= solved, f"lessons without solutions: {sorted(lessons - solved)}"
