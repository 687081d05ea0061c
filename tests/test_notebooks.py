"""Every notebook: no committed outputs, one parameters cell, and a full execution in the smoke
preset (through the runner, as ./run_all.sh --smoke does) that records no failed measurement and
no skip a CPU does not explain. (The taught code is checked in tests/test_lessons.py.)"""
import hashlib
import json
import re

import nbformat
import papermill
import pytest

from helpers.course import results, runner
from helpers.course.verdicts import printed_lines

ROOT = results.repo_root()
NOTEBOOKS = runner.notebooks()
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
ALL = NOTEBOOKS + SOLUTIONS


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


def tree_digest(folder):
    """Each file under ``folder`` with its size and content hash."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    figures_before = tree_digest(ROOT / "figures")
    run_root = tmp_path_factory.mktemp("smoke")
    status = runner.run(NOTEBOOKS, "smoke", run_root, echo=False, promote_figures=False)
    return run_root, status, figures_before


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_notebook_runs_in_the_smoke_preset(smoke_run, path):
    run_root, status, _ = smoke_run
    entry = status[path.stem]
    assert entry["status"] == "ok", f"{path.name}: {entry.get('error')} (see {entry.get('executed')})"
    executed = nbformat.read(run_root / path.name, as_version=4)
    unexecuted = [i for i, c in enumerate(executed.cells)
                  if c.cell_type == "code" and c.source.strip() and c.execution_count is None]
    assert not unexecuted, f"{path.name}: code cells {unexecuted} never ran"
    record = json.loads((run_root / "outputs" / f"{path.stem}.json").read_text())
    assert record["preset"] == "smoke"
    assert (run_root / "data" / f"{path.stem}.csv").exists()
    assert record["failed"] == [], f"{path.name}: failed measurements {record['failed']}"
    unexplained = [s for s in record["skipped"] if str(s["device"]).startswith("cuda")]
    assert not unexplained, f"{path.name}: skipped on a CUDA device: {unexplained}"


@pytest.mark.notebook
def test_smoke_run_leaves_figures_untouched(smoke_run):
    """A smoke run on a CPU never replaces a committed GPU figure, table or manifest entry."""
    _, _, figures_before = smoke_run
    assert tree_digest(ROOT / "figures") == figures_before


@pytest.mark.notebook
@pytest.mark.parametrize("path", SOLUTIONS, ids=ids(SOLUTIONS))
def test_solution_runs_in_the_smoke_preset(path, tmp_path):
    papermill.execute_notebook(str(path), str(tmp_path / path.name), parameters={"preset": "smoke"},
                               kernel_name="python3", cwd=str(path.parent), progress_bar=False)


def test_every_lesson_has_solutions():
    lessons = {p.stem for p in NOTEBOOKS}
    solved = {p.stem.removesuffix("_solutions") for p in SOLUTIONS}
    assert lessons <= solved, f"lessons without solutions: {sorted(lessons - solved)}"


def published_gpu() -> str:
    """The model the published run's status names ("H100", "H200")."""
    from helpers.course import published
    status = json.loads((ROOT / "figures" / published.RUN_STATUS).read_text())
    return published.short_gpu(status[published.RUN_KEY]["gpu"])


# Words that state a timing conclusion. A smoke run (tiny model, often a CPU) only exercises
# the code, so none may appear in what a notebook prints, except in the line that says so.
VERDICT_WORDS = re.compile(r"\b(faster|slower|wins?|loses|reproduced|dominates|the gain grows|"
                           r"under-reports|within noise|PASS|NOT MET)\b")
ALLOWED = ("not judged", "speedup > 1: faster than")  # the notice itself; a legend's definition


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_smoke_run_prints_no_timing_verdicts_and_shows_the_reference(smoke_run, path):
    run_root, _, _ = smoke_run
    executed = nbformat.read(run_root / path.name, as_version=4)
    judged = [line for line in printed_lines(run_root / path.name)
              if VERDICT_WORDS.search(line) and not any(a in line for a in ALLOWED)]
    assert not judged, f"{path.name} prints timing verdicts in a smoke run: {judged[:3]}"
    shown = "".join(str(o.get("data", {})) + o.get("text", "") for c in executed.cells
                    if c.cell_type == "code" for o in c.get("outputs", []))
    gpu = published_gpu()  # the published run's GPU, as its reference results name it
    assert gpu in shown, f"{path.name}: no committed {gpu} reference result shown in a smoke run"
