"""The runner and the harness under bad input, failures and interruptions (CPU only).

Tiny throwaway notebooks run through ``helpers.course.runner`` with papermill: one that does real work
(``start_notebook``, a sweep, a table, a figure), one that raises, one whose kernel dies, one that
writes nothing and one that fakes its outputs in no time. Ctrl-C is a real SIGINT sent to a
runner in a subprocess. Figures are promoted only in a simulated CUDA machine, into a temporary
``figures/``. Each test fails if the behaviour it names is removed.
"""
from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import torch
from nbformat.v4 import new_code_cell, new_notebook

from helpers.course import harness, plotting, presets, results, runner
from helpers.course.presets import ParameterError, preset_values, resolve_params

REPO = results.repo_root()


def make_notebook(path: Path, *cells: str) -> Path:
    """A notebook with a papermill parameters cell (``preset``) followed by ``cells``."""
    nb = new_notebook(cells=[new_code_cell('preset = "auto"', metadata={"tags": ["parameters"]})]
                      + [new_code_cell(source) for source in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


# Real work through the helpers: a two-point sweep, its table and a figure.
GOOD = """
import time
from helpers.course import harness, plotting, results
P = {"preset": preset, "device": "cpu", "batch_size": 1}
run = results.start_notebook("00_good", P, quiet=True)
rows = harness.sweep([1, 2], lambda n: harness.bench_row(
    "noop", lambda: sum(range(1000)), device="cpu", batch_size=1, seq_len=n, repeats=1)[0],
    desc="points")
run.save_table(rows, "00_good")
fig, ax = plotting.subplots()
ax.plot([1, 2], [1, 2])
run.save_figure(fig, "00_good", csv="00_good")
time.sleep(0.6)  # stays above the monkeypatched 0.5 s minimum however fast the machine is
"""


def hand_written(stem: str) -> str:
    """A cell that writes a table, a 'figure' and the outputs record by hand, in milliseconds."""
    return f"""
import json, os, pathlib
run, stem = pathlib.Path(os.environ["COURSE_RUN_DIR"]), {stem!r}
(run / "data").mkdir(parents=True, exist_ok=True)
(run / "outputs").mkdir(parents=True, exist_ok=True)
(run / "data" / (stem + ".csv")).write_text("method,median_s\\nx,1.0\\n")
(run / (stem + ".png")).write_bytes(b"not really a png")
files = [{{"kind": "table", "path": "data/" + stem + ".csv"}},
         {{"kind": "figure", "path": stem + ".png"}}]
record = {{"notebook": stem, "preset": preset, "params": {{"device": "cpu"}},
           "env": {{"gpu": "cpu"}}, "files": files}}
(run / "outputs" / (stem + ".json")).write_text(json.dumps(record))
"""


def tree(path: Path) -> dict:
    """Every file under ``path`` with its size and modification time."""
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(path.rglob("*")) if p.is_file()} if path.exists() else {}


# --------------------------------------------------------------------------------------------
# One real smoke run of five notebooks, shared by the tests below (each kernel costs seconds).

@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("smoke")
    nbdir = root / "notebooks"
    paths = [
        make_notebook(nbdir / "00_good.ipynb", GOOD),
        make_notebook(nbdir / "01_raises.ipynb", "print('about to fail')",
                      "raise ValueError('boom: the failing cell')"),
        make_notebook(nbdir / "02_dies.ipynb", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"),
        make_notebook(nbdir / "03_nothing.ipynb", "x = 1"),
        make_notebook(nbdir / "04_too_fast.ipynb", hand_written("04_too_fast")),
    ]
    figures = root / "figures"
    figures.mkdir()
    (figures / "reference.png").write_bytes(b"a reference figure from a GPU run")
    before = {"figures": tree(figures), "repo_figures": tree(REPO / "figures")}
    run_root = root / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(runner.MIN_SECONDS, "smoke", 0.5)
        mp.setattr(results, "figures_dir", lambda: figures)
        mp.delenv(results.RUN_DIR_ENV, raising=False)
        status = runner.run(paths, "smoke", run_root, echo=False)
    return {"status": status, "run_root": run_root, "paths": paths, "figures": figures,
            "before": before}


@pytest.mark.notebook  # runs throwaway notebooks through papermill
def test_good_notebook_succeeds_with_its_outputs(smoke_run):
    entry = smoke_run["status"]["00_good"]
    assert entry["status"] == "ok", entry
    # The too-fast check uses the cells' own time, not the kernel's start-up.
    assert entry["cell_seconds"] is not None and entry["cell_seconds"] <= entry["seconds"]
    run_root = smoke_run["run_root"]
    assert pd.read_csv(run_root / "data" / "00_good.csv")["status"].tolist() == ["ok", "ok"]
    assert (run_root / "00_good.png").stat().st_size > 0


@pytest.mark.notebook  # runs throwaway notebooks through papermill
def test_failures_do_not_stop_the_run_and_are_named(smoke_run):
    status = smoke_run["status"]
    assert list(k for k in status if not k.startswith("_")) == [p.stem for p in smoke_run["paths"]]
    raised = status["01_raises"]
    assert raised["status"] == "failed"
    assert raised["error"].startswith("cell ") and "ValueError: boom: the failing cell" in raised["error"]
    assert Path(raised["executed"]).exists()
    died = status["02_dies"]
    assert died["status"] == "failed" and "DeadKernelError" in died["error"]
    assert died["error"].startswith("cell 3 ('import os, signal')"), died  # the cell it died in

    text, code = runner.summary(status)
    assert code != 0
    assert "1/5 notebooks ok; total time" in text
    for stem in ("01_raises", "02_dies", "03_nothing", "04_too_fast"):
        assert f"FAILED {stem}: " in text
        assert f"executed notebook: {status[stem]['executed']}" in text
    assert "ValueError: boom: the failing cell" in text


@pytest.mark.notebook  # runs throwaway notebooks through papermill
def test_a_notebook_that_did_nothing_fails(smoke_run):
    status = smoke_run["status"]
    assert status["03_nothing"]["status"] == "failed"
    assert "never called helpers.course.results.start_notebook" in status["03_nothing"]["error"]
    fast = status["04_too_fast"]
    assert fast["status"] == "failed" and "implausibly fast" in fast["error"], fast


def test_check_outputs_names_the_missing_table_or_figure(tmp_path):
    def record(files):
        results.atomic_write_text(tmp_path / "outputs" / "05_x.json", json.dumps({"files": files}))
        for entry in files:
            (tmp_path / entry["path"]).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / entry["path"]).write_text("x")

    record([{"kind": "figure", "path": "05_x.png"}])
    assert "did not write its results table data/05_x.csv" in runner.check_outputs(tmp_path, "05_x", 9, "smoke")
    record([{"kind": "table", "path": "data/05_x.csv"}])
    assert "wrote no figure" in runner.check_outputs(tmp_path, "05_x", 9, "smoke")
    record([{"kind": "table", "path": "data/05_x.csv"}, {"kind": "figure", "path": "05_x.png"}])
    assert runner.check_outputs(tmp_path, "05_x", 9, "smoke") is None
    (tmp_path / "05_x.png").unlink()
    assert "missing" in runner.check_outputs(tmp_path, "05_x", 9, "smoke")


@pytest.mark.notebook  # runs throwaway notebooks through papermill
def test_killed_kernel_and_failures_leave_earlier_results_intact(smoke_run):
    run_root = smoke_run["run_root"]
    assert runner.check_outputs(run_root, "00_good") is None
    saved = json.loads((run_root / runner.STATUS_FILE).read_text())
    assert saved["00_good"]["status"] == "ok" and saved["02_dies"]["status"] == "failed"


@pytest.mark.notebook  # runs throwaway notebooks through papermill
def test_sweep_progress_in_headless_log_and_in_jupyterlab(smoke_run):
    run_root = smoke_run["run_root"]
    log = (run_root / "00_good.log").read_text()
    assert "[points 1/2] 1: noop" in log and "[points 2/2] 2: noop" in log
    # The executed notebook stays quiet: no bar, no progress line (they went to the log).
    executed = nbformat.read(run_root / "00_good.ipynb", as_version=4)
    mimetypes = {key for cell in executed.cells for out in cell.get("outputs", [])
                 for key in out.get("data", {})}
    assert "application/vnd.jupyter.widget-view+json" not in mimetypes
    shown = "".join(out.get("text", "") for cell in executed.cells for out in cell.get("outputs", []))
    assert "[points" not in shown


@pytest.mark.notebook  # runs throwaway notebooks through papermill
def test_smoke_run_never_touches_figures(smoke_run):
    assert tree(smoke_run["figures"]) == smoke_run["before"]["figures"]
    assert tree(REPO / "figures") == smoke_run["before"]["repo_figures"]


@pytest.mark.notebook  # runs throwaway notebooks through papermill
def test_resume_reruns_only_what_did_not_finish(smoke_run, tmp_path, monkeypatch):
    run_root = tmp_path / "run"
    shutil.copytree(smoke_run["run_root"], run_root)
    ran = []
    writes_outputs = _gpu_execute("ok", gpu="cpu")

    def fake_execute(path, *args, **kwargs):
        ran.append(path.stem)
        return writes_outputs(path, *args, **kwargs)

    monkeypatch.setattr(runner, "execute", fake_execute)
    status = runner.run(smoke_run["paths"], "smoke", run_root, resume=True, echo=False)
    assert ran == ["01_raises", "02_dies", "03_nothing", "04_too_fast"]
    assert status["00_good"] == smoke_run["status"]["00_good"]
    # A notebook marked ok whose outputs have since disappeared is not finished.
    ran.clear()
    (run_root / "data" / "00_good.csv").unlink()
    runner.run(smoke_run["paths"], "smoke", run_root, resume=True, echo=False)
    assert ran == ["00_good"]


KERNEL_AGE = """
import json, os, pathlib, time
ticks = os.sysconf("SC_CLK_TCK")
started = int(pathlib.Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]) / ticks
age = float(pathlib.Path("/proc/uptime").read_text().split()[0]) - started
run = pathlib.Path(os.environ["COURSE_RUN_DIR"])
(run / (pathlib.Path.cwd().name + "-" + str(os.getpid()) + ".json")).write_text(
    json.dumps({"age": age, "cwd": os.getcwd()}))
time.sleep(2)
"""


@pytest.mark.notebook  # runs throwaway notebooks through papermill
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads kernel ages from /proc")
def test_each_next_kernel_boots_while_the_notebook_before_runs(tmp_path, monkeypatch):
    """The runner starts the next notebook's kernel while one runs (``runner.SPARE``): the
    second and third kernels were alive before their notebook began, in the notebooks' folder
    and the run's environment, and no kernel outlives the run."""
    nbdir = tmp_path / "notebooks"
    paths = [make_notebook(nbdir / f"0{i}_age.ipynb", KERNEL_AGE, hand_written(f"0{i}_age"))
             for i in range(3)]
    monkeypatch.setitem(runner.MIN_SECONDS, "smoke", 0.5)
    monkeypatch.delenv(results.RUN_DIR_ENV, raising=False)
    status = runner.run(paths, "smoke", tmp_path / "run", echo=False)
    assert [status[p.stem]["status"] for p in paths] == ["ok"] * 3
    ages = [json.loads(f.read_text()) for f in sorted((tmp_path / "run").glob("notebooks-*.json"),
                                                      key=lambda f: f.stat().st_mtime)]
    assert len(ages) == 3 and all(a["cwd"] == str(nbdir) for a in ages)
    assert all(a["age"] > 1.5 for a in ages[1:]), ages  # booted during the 2 s notebook before
    assert runner.SPARE.km is None and not list((tmp_path / "run").glob(runner.SpareKernel.LOG))
    children = [p for p in Path("/proc").glob("[0-9]*/stat") if p.exists()]
    kernels = []
    for stat in children:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid() and "ipykernel" in (stat.parent / "cmdline").read_text():
                kernels.append(stat.parent.name)
        except (OSError, ValueError, IndexError):
            pass
    assert not kernels, f"kernels left running: {kernels}"


def test_status_on_disk_is_current_while_a_notebook_runs(tmp_path, monkeypatch):
    """A runner killed at any moment (SIGKILL, power) leaves a status file that names every
    notebook finished so far, so ``--resume`` neither loses nor repeats them."""
    paths = [tmp_path / f"0{i}_n.ipynb" for i in range(3)]
    seen = []

    def fake_execute(path, run_root, preset, echo=True, parameters=None):
        seen.append({k: v["status"] for k, v in runner.load_status(run_root).items()
                     if not k.startswith("_")})
        return {"notebook": path.name, "status": "ok", "seconds": 0.0, "error": ""}

    monkeypatch.setattr(runner, "execute", fake_execute)
    runner.run(paths, "smoke", tmp_path / "run", echo=False)
    assert seen == [{"00_n": "running"}, {"00_n": "ok", "01_n": "running"},
                    {"00_n": "ok", "01_n": "ok", "02_n": "running"}]


# --------------------------------------------------------------------------------------------
# Ctrl-C: a real SIGINT to a runner in a subprocess, during a notebook that sleeps.

INTERRUPTIBLE_RUNNER = r"""
import signal, sys
from pathlib import Path
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background parent may ignore SIGINT
from helpers.course import results, runner
root = Path(sys.argv[1])
results.repo_root = lambda: root
runner.NOTEBOOKS_DIR = root / "notebooks"
runner.MIN_SECONDS["smoke"] = 0.0
sys.exit(runner.main(["--smoke", "--quiet"]))
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_ctrl_c_keeps_earlier_results_and_resume_finishes(tmp_path, monkeypatch):
    pid_file = tmp_path / "kernel.pid"
    paths = [
        make_notebook(tmp_path / "notebooks" / "00_quick.ipynb", hand_written("00_quick")),
        make_notebook(tmp_path / "notebooks" / "01_sleeps.ipynb",
                      f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                      "time.sleep(120)"),
        make_notebook(tmp_path / "notebooks" / "02_later.ipynb", "print('never reached')"),
    ]
    env = {k: v for k, v in os.environ.items()
           if k not in (results.RUN_DIR_ENV, "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")}
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTIBLE_RUNNER, str(tmp_path)], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while not (pid_file.exists() and pid_file.read_text()) and proc.poll() is None:
            assert time.monotonic() < deadline, "the sleeping notebook never started"
            time.sleep(0.2)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    assert "Interrupted during 01_sleeps" in out and "INTERRUPTED 01_sleeps" in out
    assert "Not run: 02_later" in out and "NOT RUN 02_later" in out  # what did not run, named
    assert "1/3 notebooks ok" in out  # counted with the notebooks it never reached
    run_root = tmp_path / "runs" / "smoke"
    status = json.loads((run_root / runner.STATUS_FILE).read_text())
    assert status["00_quick"]["status"] == "ok"
    assert status["01_sleeps"]["status"] == "interrupted"
    assert "02_later" not in status
    assert runner.check_outputs(run_root, "00_quick") is None  # intact
    kernel = int(pid_file.read_text())
    deadline = time.monotonic() + 15
    while _alive(kernel) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(kernel), "the interrupted notebook's kernel was left running"

    ran = []

    def fake_execute(path, run_root, preset, echo=True, parameters=None):
        ran.append(path.stem)
        return {"notebook": path.name, "status": "ok", "seconds": 0.0, "error": ""}

    monkeypatch.setattr(runner, "execute", fake_execute)
    status = runner.run(paths, "smoke", run_root, resume=True, echo=False)
    assert ran == ["01_sleeps", "02_later"]
    assert runner.summary(status)[1] == 0


# --------------------------------------------------------------------------------------------
# figures/ is updated only by a full-preset run on a CUDA GPU in which the notebook succeeded.

def _gpu_execute(outcome="ok", gpu="NVIDIA H100 80GB HBM3", files=("",)):
    """A stand-in for ``runner.execute`` that writes what a notebook on ``gpu`` would."""
    def fake(path, run_root, preset, echo=True, parameters=None):
        stem = path.stem
        entries = []
        for suffix in files:
            name = f"{stem}_{suffix}" if suffix else stem
            results.atomic_write_text(run_root / "data" / f"{name}.csv", "method\nx\n")
            results.atomic_write_text(run_root / f"{name}.png", "png")
            entries += [{"kind": "table", "path": f"data/{name}.csv", "rows": 1},
                        {"kind": "figure", "path": f"{name}.png", "csv": f"data/{name}.csv"}]
        env = {"gpu": gpu, "driver": "580", "cuda": "13.0", "torch": "2.11", "transformers": "5.17",
               "date": "2026-01-01"}
        # What the notebook ran with: its preset's values (a hand-edited cell would differ).
        params = {"preset": preset, "notebook": stem[:2], **preset_values(stem[:2], preset),
                  "device": "cuda"}
        record = {"notebook": stem, "preset": preset, "params": params, "env": env,
                  "files": entries}
        results.atomic_write_text(run_root / "outputs" / f"{stem}.json", json.dumps(record))
        return {"notebook": path.name, "executed": str(run_root / path.name), "status": outcome,
                "seconds": 1.0, "error": "" if outcome == "ok" else "cell 3: ValueError: x"}
    return fake


@pytest.fixture
def gpu_machine(tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    monkeypatch.setattr(results, "figures_dir", lambda: figures)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    path = make_notebook(tmp_path / "notebooks" / "07_topic.ipynb", "x = 1")
    return {"figures": figures, "paths": [path], "run_root": tmp_path / "run"}


def test_full_cuda_run_promotes_figures(gpu_machine, monkeypatch):
    monkeypatch.setattr(runner, "execute", _gpu_execute("ok", files=("a",)))
    status = runner.run(gpu_machine["paths"], "full", gpu_machine["run_root"], echo=False)
    assert status["07_topic"]["status"] == "ok"
    figures = gpu_machine["figures"]
    assert (figures / "07_topic_a.png").exists() and (figures / "data" / "07_topic_a.csv").exists()
    manifest = json.loads((figures / "manifest.json").read_text())
    assert manifest["figures"]["07_topic_a.png"]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert manifest["tables"]["data/07_topic_a.csv"]["notebook"] == "07_topic.ipynb"
    # A later run that no longer writes a file removes it from figures/ and the manifest.
    monkeypatch.setattr(runner, "execute", _gpu_execute("ok", files=("b",)))
    runner.run(gpu_machine["paths"], "full", gpu_machine["run_root"], echo=False)
    assert not (figures / "07_topic_a.png").exists() and (figures / "07_topic_b.png").exists()
    assert set(json.loads((figures / "manifest.json").read_text())["figures"]) == {"07_topic_b.png"}


@pytest.mark.parametrize("case", ["smoke preset", "workshop preset", "no GPU", "failed",
                                  "parameter override", "measured on cpu", "edited parameters cell"])
def test_other_runs_never_touch_figures(gpu_machine, monkeypatch, case):
    preset = {"smoke preset": "smoke", "workshop preset": "workshop"}.get(case, "full")
    fake = _gpu_execute("failed" if case == "failed" else "ok",
                        gpu="cpu" if case == "measured on cpu" else "H100")
    if case == "edited parameters cell":  # the runner injected only the preset; the cell said 8
        def edited(path, run_root, *args, **kwargs):
            entry = fake(path, run_root, *args, **kwargs)
            record = json.loads((run_root / "outputs" / f"{path.stem}.json").read_text())
            record["params"]["batch_size"] = 8
            results.atomic_write_text(run_root / "outputs" / f"{path.stem}.json", json.dumps(record))
            return entry
        monkeypatch.setattr(runner, "execute", edited)
    else:
        monkeypatch.setattr(runner, "execute", fake)
    if case == "no GPU":
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    promote = True if case == "measured on cpu" else None
    status = runner.run(gpu_machine["paths"], preset, gpu_machine["run_root"], echo=False,
                        promote_figures=promote,
                        parameters={"batch_size": 4} if case == "parameter override" else None)
    assert not gpu_machine["figures"].exists()
    if case == "measured on cpu":  # the promotion guard refuses and says why; the run fails
        assert status["07_topic"]["status"] == "failed"
        assert "not a full run on a CUDA GPU" in status["07_topic"]["error"]
    if case == "edited parameters cell":
        assert status["07_topic"]["status"] == "failed"
        assert "parameters that differ from the 'full' preset" in status["07_topic"]["error"]


# --------------------------------------------------------------------------------------------
# Results, figures and the run status are written atomically: an interrupted write keeps the old file.

class Interrupted(BaseException):
    pass


def half_write(path, *args, **kwargs):
    """A write that is cut short: half a file, then Ctrl-C."""
    Path(path).write_bytes(b"half")
    raise Interrupted


def test_interrupted_writes_keep_the_old_file(tmp_path, monkeypatch):
    monkeypatch.setenv(results.RUN_DIR_ENV, str(tmp_path))
    run = results.start_notebook("05_atomic", {"preset": "smoke"}, quiet=True)
    rows = [{c: 1 for c in results.REQUIRED_COLUMNS}]
    run.save_table(rows, "05_atomic")
    fig, ax = plotting.subplots()
    run.save_figure(fig, "05_atomic")
    runner.save_status(tmp_path, {"00": {"status": "ok"}})
    before = tree(tmp_path)

    with monkeypatch.context() as mp:  # a table write cut short
        mp.setattr(pd.DataFrame, "to_csv", lambda self, path, **kw: half_write(path))
        with pytest.raises(Interrupted):
            run.save_table(rows, "05_atomic")
    with monkeypatch.context() as mp:  # a figure write cut short
        mp.setattr(type(fig), "savefig", lambda self, path, **kw: half_write(path))
        with pytest.raises(Interrupted):
            run.save_figure(fig, "05_atomic")
    with monkeypatch.context() as mp:  # the status file and the outputs record cut short
        mp.setattr(Path, "write_text", lambda self, text, *a, **kw: half_write(self))
        with pytest.raises(Interrupted):
            runner.save_status(tmp_path, {"00": {"status": "failed"}})
        with pytest.raises(Interrupted):
            run.skip_unless_cuda("something")
    assert tree(tmp_path) == before  # same files, sizes and times; no temporary left behind


# --------------------------------------------------------------------------------------------
# Sweeps survive out-of-memory.

class Held:
    """Stands for the tensors a failed call held when it ran out of memory."""


def test_sweep_records_oom_cleans_the_allocator_and_goes_on(tmp_path, monkeypatch, capfd):
    monkeypatch.delenv(harness.PROGRESS_LOG_ENV, raising=False)  # start_notebook sets it below
    monkeypatch.setenv(results.RUN_DIR_ENV, str(tmp_path))
    held = []
    cleaned = []
    real_release = harness.release_memory

    def spy_release(device):
        real_release(device)
        gc.collect()
        cleaned.append([ref() is None for ref in held])

    monkeypatch.setattr(harness, "release_memory", spy_release)

    def point(seq_len):
        def fn():
            if seq_len == 8:
                tensors = Held()
                held.append(weakref.ref(tensors))
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return seq_len
        return harness.bench_row("loop", fn, device="cpu", batch_size=2, seq_len=seq_len,
                                 repeats=2)[0]

    rows = harness.sweep([4, 8, 16], point, desc="lengths")
    assert [r["status"] for r in rows] == ["ok", "oom", "ok"]
    # measure() recorded the OOM itself: the row keeps the point's columns for the table and plot.
    assert (rows[1]["method"], rows[1]["seq_len"], rows[1]["device_name"]) == ("loop", 8, "cpu")
    assert "out of memory" in rows[1]["error"]
    # Right after the OOM the allocator was cleaned, with the failed call's objects already freed.
    assert next(states for states in cleaned if states) == [True], cleaned

    run = results.start_notebook("05_oom", {"preset": "smoke"}, quiet=True)
    frame = run.save_table(rows, "05_oom")
    csv = pd.read_csv(tmp_path / "data" / "05_oom.csv")
    assert csv["status"].tolist() == ["ok", "oom", "ok"] and csv["median_s"].isna().tolist() == [False, True, False]
    fig, ax = plotting.subplots()
    plotting.lines_by_method(ax, frame, "seq_len", "median_s")
    assert [t.get_text() for t in ax.texts].count("OOM") == 1
    # Headless (the runner's COURSE_RUN_DIR is set): progress goes to the notebook's log.
    log = tmp_path / "progress.log"
    monkeypatch.setenv(harness.PROGRESS_LOG_ENV, str(log))
    capfd.readouterr()
    harness.sweep([4, 8, 16], point, desc="lengths")
    assert capfd.readouterr().err == ""
    lines = [l for l in log.read_text().splitlines() if l.startswith("[lengths ")]
    assert len(lines) == 3 and "OOM" in lines[1]


def test_sweep_turns_oom_outside_measure_into_a_row(monkeypatch):
    calls = []
    monkeypatch.setattr(harness, "release_memory", lambda device: calls.append(device))

    def point(p):
        if p["batch_size"] == 64:
            raise torch.OutOfMemoryError("CUDA out of memory while building the prompt")
        return {"method": "m", "batch_size": p["batch_size"], "status": "ok", "median_s": 0.1}

    rows = harness.sweep([{"batch_size": 8}, {"batch_size": 64}, {"batch_size": 2}], point, desc="b")
    assert [(r["batch_size"], r["status"]) for r in rows] == [(8, "ok"), (64, "oom"), (2, "ok")]
    assert calls, "the allocator was not cleaned after the OOM"


def test_other_errors_are_not_hidden_as_oom():
    def broken():
        raise ValueError("a real bug")

    with pytest.raises(ValueError, match="a real bug"):
        harness.measure(broken, device="cpu", repeats=1)
    with pytest.raises(ValueError, match="a real bug"):
        harness.sweep([1], lambda p: broken())


def test_sweep_shows_a_progress_bar_and_one_line_per_point(monkeypatch, capfd, tmp_path):
    import tqdm.auto

    bars = []

    class Bar:
        def __init__(self, *args, total=None, desc=None, **kwargs):
            self.total, self.desc, self.n = total, desc, 0
            bars.append(self)

        def update(self, n=1):
            self.n += n

        def close(self):
            pass

        def __iter__(self):
            raise AssertionError("iterate over the points, update the bar")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    monkeypatch.delenv("COURSE_RUN_DIR", raising=False)  # interactive: a bar, nothing printed
    harness.sweep([1, 2, 3], lambda p: {"method": "m", "median_s": 0.001 * p}, desc="demo")
    assert [(b.total, b.desc, b.n) for b in bars] == [(3, "demo", 3)]
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
    # Headless: no bar, nothing printed, one line per point in the notebook's log.
    log = tmp_path / "demo.log"
    monkeypatch.setenv("COURSE_RUN_DIR", str(tmp_path))
    monkeypatch.setenv(harness.PROGRESS_LOG_ENV, str(log))
    harness.sweep([1, 2, 3], lambda p: {"method": "m", "median_s": 0.001 * p}, desc="demo")
    assert len(bars) == 1
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
    lines = log.read_text().splitlines()
    assert len(lines) == 3 and lines[0].startswith("[demo 1/3] 1: m 1.0 ms")


# --------------------------------------------------------------------------------------------
# Bad input: a clear error, saying what is allowed, before any GPU work.

@pytest.mark.parametrize("kwargs, wrong, allowed", [
    (dict(preset="fast"), "unknown preset 'fast'", "['full', 'workshop', 'smoke']"),
    (dict(preset="smoke", seq_lens=[300]), "seq_lens contains 300", "Use lengths <= 252"),
    (dict(preset="smoke", batch_size=0), "batch_size must be >= 1, got 0", ">= 1"),
    (dict(preset="smoke", batch_size=2.5), "got 2.5 (float)", "must be an integer"),
    (dict(preset="smoke", seq_lens=["8"]), "seq_lens[0]", "must be an integer"),
    (dict(preset="smoke", device="cuda"), "no CUDA GPU", "preset='smoke' or device='cpu'"),
    (dict(preset="smoke", device="gpu"), "got 'gpu'", "'auto', 'cpu', 'cuda' or 'cuda:N'"),
])
def test_bad_parameters_are_rejected_clearly(monkeypatch, kwargs, wrong, allowed):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ParameterError) as error:
        resolve_params("99", **kwargs)
    assert wrong in str(error.value) and allowed in str(error.value)


@pytest.fixture
def no_run(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("bad input must be rejected before any notebook runs")

    monkeypatch.setattr(runner, "run", refuse)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for var in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.mark.parametrize("argv, env, wrong, allowed", [
    (["--only", "99"], {}, "unknown notebook number(s) ['99']", "available: 00,01"),
    (["--only", "x"], {}, "unknown notebook number(s) ['x']", "available: "),
    (["--preset", "fast"], {}, "unknown preset 'fast'", "['full', 'workshop', 'smoke']"),
    (["--preset", "full"], {}, "needs a CUDA GPU and PyTorch sees none", "--smoke"),
    (["--smoke"], {"PYTORCH_ALLOC_CONF": "expandable_segments:maybe"},
     "PYTORCH_ALLOC_CONF: allocator setting 'expandable_segments:maybe'", "must be True or False"),
    (["--smoke"], {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:10"},
     "PYTORCH_CUDA_ALLOC_CONF: allocator setting 'max_split_size_mb:10'", "an integer > 20"),
    (["--smoke"], {"PYTORCH_ALLOC_CONF": "expandable_segment:True"},
     "unknown key 'expandable_segment'", "Allowed keys: expandable_segments (True or False)"),
])
def test_runner_rejects_bad_input_before_running(no_run, capsys, argv, env, wrong, allowed):
    for var, value in env.items():
        no_run.setenv(var, value)
    assert runner.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and wrong in err and allowed in err


@pytest.mark.parametrize("value", [
    "", "expandable_segments:True", "expandable_segments:False,max_split_size_mb:128",
    " expandable_segments : True", "backend:cudaMallocAsync", "garbage_collection_threshold:0.6",
    "roundup_power2_divisions:4", "release_lock_on_cudamalloc:True",
])
def test_alloc_conf_accepts_valid_settings(value):
    runner.check_alloc_conf(value)
    runner.check_alloc_env({"PYTORCH_ALLOC_CONF": value, "PYTORCH_CUDA_ALLOC_CONF": value})


@pytest.mark.parametrize("value, wrong", [
    ("expandable_segments:true", "expandable_segments must be True or False"),
    ("expandable_segments", "'expandable_segments' is not 'key:value'"),
    ("max_split_size_mb=100", "is not 'key:value'"),
    ("max_split_size_mb:abc", "max_split_size_mb must be an integer > 20"),
    ("garbage_collection_threshold:1.0", "strictly between 0 and 1"),
    ("roundup_power2_divisions:3", "roundup_power2_divisions must be a power of two"),
    ("backend:cudaMalloc", "backend must be native or cudaMallocAsync"),
    ("default", "unset PYTORCH_ALLOC_CONF for the default allocator"),
])
def test_alloc_conf_rejects_invalid_settings(value, wrong):
    with pytest.raises(runner.RunnerError, match="PYTORCH_ALLOC_CONF") as error:
        runner.check_alloc_env({"PYTORCH_ALLOC_CONF": value})
    assert wrong in str(error.value)


def test_runner_exit_status_and_total_time(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for var in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        monkeypatch.delenv(var, raising=False)
    outcome = {"01_naive_generation": {"status": "failed", "error": "cell 4: RuntimeError: x",
                                       "executed": "runs/smoke/01_naive_generation.ipynb"},
               "_total_seconds": 12.3}
    monkeypatch.setattr(runner, "run", lambda *a, **k: outcome)
    assert runner.main(["--smoke", "--only", "01"]) == 1
    out = capsys.readouterr().out
    assert "total time 12.3 s" in out and "FAILED 01_naive_generation: cell 4: RuntimeError: x" in out
    outcome["01_naive_generation"] = {"status": "ok", "seconds": 3.0}
    assert runner.main(["--smoke", "--only", "01"]) == 0


def test_bytecode_warning_only_without_a_cache_that_can_be_written(tmp_path):
    module = tmp_path / "pkg" / "__init__.py"
    module.parent.mkdir()
    module.write_text("x = 1\n")
    assert runner.bytecode_warning(str(module), dont_write=False) is None  # the first import writes it
    warning = runner.bytecode_warning(str(module), dont_write=True)
    assert "PYTHONDONTWRITEBYTECODE" in warning and "PYTHONPYCACHEPREFIX" in warning
    import importlib.util
    cached = Path(importlib.util.cache_from_source(str(module)))
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(b"")
    assert runner.bytecode_warning(str(module), dont_write=True) is None  # a cache exists: fine
