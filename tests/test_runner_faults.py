"""The runner never points at a stale or wrong result, runs one run per preset at a time, fails
friendly on broken files and folders, and is quiet by default (CPU only).

Most tests stand a fake ``execute`` in for papermill; the quiet/verbose and stale-copy tests run
tiny real notebooks. Run folders and notebooks are temporary.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_notebook

from helpers.course import presets, results, runner
from test_reliability import make_notebook


def fake_execute(ran=None, outcome="ok"):
    """A stand-in for ``runner.execute`` that writes a notebook's table, figure, outputs record
    and executed copy, as a successful run would."""
    def execute(path, run_root, preset, echo=False, parameters=None):
        stem = path.stem
        if ran is not None:
            ran.append(stem)
        results.atomic_write_text(run_root / "data" / f"{stem}.csv", "method\nx\n")
        results.atomic_write_text(run_root / f"{stem}.png", "png")
        files = [{"kind": "table", "path": f"data/{stem}.csv"}, {"kind": "figure", "path": f"{stem}.png"}]
        results.atomic_write_text(run_root / "outputs" / f"{stem}.json", json.dumps({"files": files}))
        results.atomic_write_text(run_root / path.name, json.dumps(new_notebook()))
        return {"notebook": path.name, "executed": str(run_root / path.name), "status": outcome,
                "seconds": 1.0, "error": "" if outcome == "ok" else "cell 2: ValueError: x"}
    return execute


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A repository of three notebooks on a machine without a GPU; ``main`` runs in it."""
    paths = [make_notebook(tmp_path / "notebooks" / f"0{i}_n{i}.ipynb", "x = 1") for i in range(3)]
    monkeypatch.setattr(results, "repo_root", lambda: tmp_path)
    monkeypatch.setattr(runner, "NOTEBOOKS_DIR", tmp_path / "notebooks")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for var in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", results.RUN_DIR_ENV):
        monkeypatch.delenv(var, raising=False)
    return {"root": tmp_path, "paths": paths, "run_root": tmp_path / "runs" / "smoke"}


# --------------------------------------------------------------------------------------------
# Never a stale or wrong result.

def test_old_executed_copy_and_log_are_removed_before_a_run(tmp_path):
    run_root = tmp_path / "run"
    run_root.mkdir()
    (run_root / "05_x.ipynb").write_text("an old, fully successful executed copy")
    (run_root / "05_x.log").write_text("old log of a success\n")
    broken = tmp_path / "notebooks" / "05_x.ipynb"
    broken.parent.mkdir()
    broken.write_text('{"cells": [')  # truncated: papermill cannot even start it
    entry = runner.execute(broken, run_root, "smoke")
    assert entry["status"] == "failed"
    assert not (run_root / "05_x.ipynb").exists()
    assert "old log of a success" not in (run_root / "05_x.log").read_text()
    text, code = runner.summary({"05_x": entry})
    assert code == 1 and "executed notebook: none (it did not start)" in text


def test_only_merges_into_the_status_and_reports_its_own_notebooks(course, monkeypatch, capsys):
    monkeypatch.setattr(runner, "execute", fake_execute())
    assert runner.main(["--smoke"]) == 0
    monkeypatch.setattr(runner, "execute", fake_execute(outcome="failed"))
    assert runner.main(["--smoke", "--only", "02"]) == 1
    saved = runner.load_status(course["run_root"])
    assert {k: v["status"] for k, v in saved.items() if not k.startswith("_")} == \
        {"00_n0": "ok", "01_n1": "ok", "02_n2": "failed"}
    ran = []
    monkeypatch.setattr(runner, "execute", fake_execute(ran))
    capsys.readouterr()
    assert runner.main(["--smoke", "--resume"]) == 0
    assert ran == ["02_n2"]  # the first run's notebooks were not forgotten
    # A partial run reports only what it was asked to run.
    saved = runner.load_status(course["run_root"])
    saved["02_n2"] = {"notebook": "02_n2.ipynb", "status": "interrupted"}
    runner.save_status(course["run_root"], saved)
    capsys.readouterr()
    assert runner.main(["--smoke", "--resume", "--only", "01"]) == 0
    out = capsys.readouterr().out
    assert "1/1 notebooks ok" in out and "02_n2" not in out


def test_resume_checks_the_executed_notebook(course, monkeypatch):
    monkeypatch.setattr(runner, "execute", fake_execute())
    runner.run(course["paths"], "smoke", course["run_root"])
    (course["run_root"] / "01_n1.ipynb").unlink()
    (course["run_root"] / "02_n2.ipynb").write_text("{truncated")
    ran = []
    monkeypatch.setattr(runner, "execute", fake_execute(ran))
    runner.run(course["paths"], "smoke", course["run_root"], resume=True)
    assert ran == ["01_n1", "02_n2"]


# --------------------------------------------------------------------------------------------
# One run per preset at a time.

def test_a_second_run_of_a_preset_is_refused_and_told_who_holds_it(course, monkeypatch, capsys):
    monkeypatch.setattr(runner, "execute", fake_execute())
    with runner.run_lock(course["run_root"]):
        with pytest.raises(runner.RunnerError) as error:
            runner.run(course["paths"], "smoke", course["run_root"])
        assert runner.main(["--smoke"]) == 2
    message = str(error.value)
    assert "is in use by another run" in message
    assert f"pid {os.getpid()}, started " in message
    assert capsys.readouterr().err.startswith("error: ")
    assert not (course["run_root"] / runner.STATUS_FILE).exists()  # nothing was run
    runner.run(course["paths"], "smoke", course["run_root"])  # released: the next run goes


# --------------------------------------------------------------------------------------------
# Friendly failures: one line that names the file and what to do.

def error_line(capsys):
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: ")
    return err


def test_unwritable_run_folder_is_one_line(course, monkeypatch, capsys):
    (course["root"] / "runs").write_text("a file where the run folder should be")
    monkeypatch.setattr(runner, "execute", fake_execute())
    assert runner.main(["--smoke"]) == 2
    err = error_line(capsys)
    assert "cannot write to" in err and "runs/smoke" in err and "writable" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_run_folder_is_one_line(course, monkeypatch, capsys):
    course["run_root"].mkdir(parents=True)
    course["run_root"].chmod(stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.setattr(runner, "execute", fake_execute())
    try:
        assert runner.main(["--smoke"]) == 2
    finally:
        course["run_root"].chmod(0o755)
    assert "writable" in error_line(capsys)


def test_corrupt_status_with_resume_is_rebuilt_from_the_executed_notebooks(course, monkeypatch, capsys):
    monkeypatch.setattr(runner, "execute", fake_execute())
    assert runner.main(["--smoke"]) == 0
    (course["run_root"] / runner.STATUS_FILE).write_text('{"00_n0": {"status": "ok"')
    broken = new_notebook(cells=[new_code_cell("1/0")])  # 01's executed copy shows an error
    broken.cells[0].outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError",
                                                      evalue="division by zero", traceback=[])]
    nbformat.write(broken, course["run_root"] / "01_n1.ipynb")
    capsys.readouterr()
    ran = []
    monkeypatch.setattr(runner, "execute", fake_execute(ran))
    assert runner.main(["--smoke", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "status.json was unreadable" in out and "rebuilt from the executed notebooks" in out
    assert "2 finished (00, 02)" in out
    assert ran == ["01_n1"]  # only the notebook whose executed copy shows an error runs again
    assert runner.main(["--smoke"]) == 0  # without --resume: noted, and a new status written


def test_an_interrupted_executed_copy_does_not_count_as_finished():
    nb = new_notebook(cells=[new_code_cell("x = 1"), new_code_cell("y = 2")])
    nb.cells[0].metadata["papermill"] = {"status": "completed"}
    nb.cells[1].metadata["papermill"] = {"status": "pending"}
    assert not runner.completed_without_error(nb)
    nb.cells[1].metadata["papermill"] = {"status": "completed"}
    assert runner.completed_without_error(nb)


def test_a_mistyped_option_shows_the_users_options_not_the_internal_ones(capsys):
    with pytest.raises(SystemExit) as exit_:
        runner.main(["--onyl", "02"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --onyl 02" in err
    assert "--lab" in err and "--test" in err and "--site" in err and "--check-env" not in err
    assert runner.PRESETS == __import__("helpers.course.presets", fromlist=["x"]).PRESET_NAMES


def test_after_a_run_one_line_says_where_the_results_are_and_what_next(course, monkeypatch, capsys):
    monkeypatch.setattr(runner, "execute", fake_execute())
    assert runner.main(["--smoke"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("Results in ") and "runs/smoke/" in last
    assert "Next:" in last and "--lab" in last and "measures nothing" in last
    monkeypatch.setattr(runner, "execute", fake_execute(outcome="failed"))
    assert runner.main(["--smoke", "--only", "01"]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "'./run_all.sh --smoke --only 01' re-runs what failed" in last


def test_smoke_figures_carry_a_visible_mark(tmp_path, monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv(results.RUN_DIR_ENV, str(tmp_path))
    for preset, marked in (("smoke", True), ("full", False)):
        run = results.start_notebook("02_x", {"preset": preset}, quiet=True)
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([1, 2])
        run.save_figure(fig, f"02_x_{preset}")
        texts = [t.get_text() for t in fig.texts]
        assert (results.SMOKE_MARK in texts) == marked, texts
        assert any(results.SMOKE_MARK.upper() in t for t in texts) == marked
        plt.close(fig)
    assert results.SMOKE_MARK == "smoke run: exercises the code, not a measurement"


def test_unreadable_notebook_is_one_line(course, capsys):
    course["paths"][1].write_text('{"cells": [')
    for argv in (["--list"], ["--smoke"]):
        assert runner.main(argv) == 2
        err = error_line(capsys)
        assert "01_n1.ipynb is not a readable notebook" in err and "git checkout" in err


def test_empty_only_is_an_error(course, capsys):
    assert runner.main(["--smoke", "--only", ""]) == 2
    assert "names no notebook" in error_line(capsys)
    assert runner.main(["--list", "--only", " , "]) == 2


def test_course_run_dir_can_never_send_a_run_into_figures(course, monkeypatch, capsys):
    monkeypatch.setenv(results.RUN_DIR_ENV, str(runner.REPO / "figures" / "data"))
    monkeypatch.setattr(runner, "execute", fake_execute())
    assert runner.main(["--smoke"]) == 2
    assert "COURSE_RUN_DIR" in error_line(capsys)
    with pytest.raises(runner.RunnerError, match="figures/ is written only by promotion"):
        runner.run(course["paths"], "smoke", results.figures_dir() / "smoke")


def test_executed_notebook_is_published_beside_the_figures_only_by_a_full_gpu_run(tmp_path):
    """Issue 13: a promoted notebook's executed copy (with outputs) goes to figures/notebooks/."""
    run_root, figures = tmp_path / "run", tmp_path / "figures"
    stem = "07_topic"
    results.atomic_write_text(run_root / "data" / f"{stem}.csv", "method\nx\n")
    results.atomic_write_text(run_root / f"{stem}.png", "png")
    executed = new_notebook(cells=[new_code_cell("print(1)")])
    executed.cells[0].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    nbformat.write(executed, run_root / f"{stem}.ipynb")
    env = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580", "cuda": "13.0", "torch": "2.11",
           "transformers": "5.17", "date": "2026-01-01"}
    params = {"preset": "full", "notebook": "07", **presets.preset_values("07", "full")}
    record = {"notebook": stem, "preset": "full", "params": params, "env": env,
              "files": [{"kind": "table", "path": f"data/{stem}.csv"},
                        {"kind": "figure", "path": f"{stem}.png", "csv": f"data/{stem}.csv"}]}
    results.atomic_write_text(run_root / "outputs" / f"{stem}.json", json.dumps(record))
    copied = runner.promote(run_root, stem, figures)
    assert f"notebooks/{stem}.ipynb" in copied
    published = nbformat.read(figures / "notebooks" / f"{stem}.ipynb", as_version=4)
    assert published.cells[0].outputs[0]["text"] == "1\n"
    # A parameters cell edited by hand (the record shows what the notebook ran with) is refused.
    (figures / "notebooks" / f"{stem}.ipynb").unlink()
    results.atomic_write_text(run_root / "outputs" / f"{stem}.json",
                              json.dumps({**record, "params": {**params, "batch_size": 8}}))
    with pytest.raises(RuntimeError, match=r"parameters that differ from the 'full' preset "
                                           r"\(batch_size=8, preset 32\)"):
        runner.promote(run_root, stem, figures)
    assert not (figures / "notebooks" / f"{stem}.ipynb").exists()
    # A smoke (CPU) record is refused before anything is copied.
    record.update(preset="smoke", env={**env, "gpu": "cpu"})
    results.atomic_write_text(run_root / "outputs" / f"{stem}.json", json.dumps(record))
    with pytest.raises(RuntimeError, match="not a full run on a CUDA GPU"):
        runner.promote(run_root, stem, figures)
    assert not (figures / "notebooks" / f"{stem}.ipynb").exists()


# --------------------------------------------------------------------------------------------
# Quiet by default: a status line per notebook and the summary; cells and kernels with --verbose.

@pytest.fixture
def one_real_notebook(course, monkeypatch):
    for path in course["paths"][1:]:
        path.unlink()
    make_notebook(course["paths"][0], "print('a line from a cell')")
    monkeypatch.setitem(runner.MIN_SECONDS, "smoke", 0.0)
    return course


def test_quiet_by_default(one_real_notebook, capfd):
    assert runner.main(["--smoke"]) == 1  # it writes no table: failed, which is beside the point
    out, err = capfd.readouterr()
    assert "a line from a cell" not in out + err and "Executing Cell" not in out + err
    assert "without encryption" not in out + err
    lines = [l for l in out.splitlines() if l.strip()]
    assert [l.split()[0] for l in lines] == ["Running", "run", "FAILED", "0/1", "FAILED",
                                             "executed", "Results"], lines
    log = (one_real_notebook["run_root"] / "00_n0.log").read_text()
    assert "a line from a cell" in log  # the output is kept, in the log


def test_verbose_echoes_cells_and_kernel_messages(one_real_notebook, capfd):
    runner.main(["--smoke", "--verbose"])
    out, err = capfd.readouterr()
    assert "00| a line from a cell" in out and "Executing Cell" in out


def test_result_files_are_readable_by_others(tmp_path, monkeypatch):
    """Written through a private temporary file (mkstemp makes it 0600), results end up 0644."""
    monkeypatch.setattr(runner, "execute", fake_execute())
    paths = [make_notebook(tmp_path / "notebooks" / "00_n.ipynb", "x = 1")]
    runner.run(paths, "smoke", tmp_path / "run")
    for name in ("status.json", "data/00_n.csv", "00_n.png", "outputs/00_n.json", ".lock"):
        assert stat.S_IMODE((tmp_path / "run" / name).stat().st_mode) == 0o644, name


def test_kernels_get_the_import_warning_filter():
    """A lesson that imports transformers before helpers (04: StaticCache) printed tqdm's
    'IProgress not found' on the GPU host: the runner hands every kernel a PYTHONWARNINGS
    filter for it, keeping the caller's own filters, once."""
    import subprocess
    import sys
    from helpers.course import runner
    env = runner.kernel_warnings("default::DeprecationWarning")
    assert env.split(",")[0] == "default::DeprecationWarning"
    assert runner.kernel_warnings(env) == env
    code = ("import warnings\nfrom tqdm import TqdmWarning\n"
            "warnings.warn(TqdmWarning('IProgress not found. Please update jupyter and ipywidgets.'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONWARNINGS": runner.kernel_warnings("")})
    assert out.returncode == 0 and "IProgress" not in out.stderr, out.stderr
