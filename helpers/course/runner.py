"""Run the course's notebooks headless with papermill: ``./run_all.sh`` calls this.

Each notebook runs in a fresh kernel with its preset injected, into ``runs/<preset>/``, and gets
one status line (its cells' output goes to ``runs/<preset>/NN_topic.log``; ``--verbose`` echoes
it). A failure does not stop the others; the summary names every failure with the failing cell's
error and the executed notebook's path, and the exit status is non-zero. A notebook that raised
nothing but wrote no table or figure, or finished implausibly fast, failed too. Before a notebook
runs, its earlier executed copy, log and outputs are removed, so a failure never points at an old
success. ``status.json`` is merged notebook by notebook (``--only`` keeps the others' entries)
and rewritten atomically after each one, so Ctrl-C keeps every finished result and ``--resume``
re-runs only what did not finish. One run per preset at a time: ``runs/<preset>/.lock``. Only a
full-preset run on a CUDA GPU in which a notebook succeeded copies its figures, tables and
executed notebook into ``figures/``.

Importing this module imports neither torch nor papermill, so ``--list`` and ``--check-env``
(the allocator variables, checked by ``run_all.sh`` before anything imports torch) are instant.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import json
import logging
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

from .. import IMPORT_NOISE
from . import alloc_conf
from .errors import ParameterError

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = REPO / "notebooks"
# A notebook that finishes faster than this did not do its work (seconds, per preset).
MIN_SECONDS = {"full": 5.0, "workshop": 2.0, "smoke": 0.5}
STATUS_FILE = "status.json"
LOCK_FILE = ".lock"
RUN_DIR_ENV = "COURSE_RUN_DIR"  # helpers.course.results reads it; the runner sets it for each kernel


class RunnerError(Exception):
    """Bad command-line input or environment: the message says what to do instead."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; ``status`` is this run's view (what finished, what did not run)."""

    def __init__(self, status: dict):
        super().__init__("interrupted")
        self.status = status


def shown(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it (shorter messages)."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def notebooks(directory: Path | None = None) -> list[Path]:
    """The numbered lesson notebooks (of ``NOTEBOOKS_DIR`` by default), in order."""
    return sorted(p for p in Path(directory or NOTEBOOKS_DIR).glob("[0-9][0-9]_*.ipynb"))


def read_notebook(path: Path) -> dict:
    """The notebook's JSON; RunnerError naming the file and the fix when it cannot be read."""
    try:
        nb = json.loads(Path(path).read_text())
        if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
            raise ValueError("no list of cells")
        return nb
    except (OSError, UnicodeDecodeError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error).splitlines()[0]
        raise RunnerError(f"{shown(path)} is not a readable notebook ({reason}); restore it with "
                          f"'git checkout -- {shown(path)}' or fix it in JupyterLab") from None


def title(path: Path) -> str:
    """The notebook's first heading, as its one-line summary."""
    for cell in read_notebook(path)["cells"]:
        if cell.get("cell_type") == "markdown":
            source = cell.get("source", "")
            for line in ("".join(source) if isinstance(source, list) else source).splitlines():
                if line.startswith("#"):
                    return line.lstrip("# ").strip()
    return path.stem


def select(paths: list[Path], only: str | None) -> list[Path]:
    """The notebooks named by ``--only NN[,NN]``; unknown numbers, or none, are an error."""
    if only is None:
        return paths
    by_number = {p.name[:2]: p for p in paths}
    given = [n.strip() for n in only.split(",") if n.strip()]
    if not given:
        raise RunnerError(f"--only {only!r} names no notebook; give numbers such as --only 00,02 "
                          f"(available: {','.join(sorted(by_number))})")
    unknown = [n for n in given if n.zfill(2) not in by_number]
    if unknown:
        raise RunnerError(f"--only {only!r}: unknown notebook number(s) {unknown}; "
                          f"available: {','.join(sorted(by_number))}")
    return [by_number[n] for n in sorted({n.zfill(2) for n in given})]


def choose_preset(requested: str | None, cuda: bool) -> str:
    from .presets import PRESET_NAMES

    if requested is None:
        if not cuda:
            print("No CUDA GPU found (torch.cuda.is_available() is False): running the 'smoke' "
                  "preset, a tiny model on the CPU that checks the notebooks run. It measures "
                  "nothing about GPUs, and figures/ is left as it is.", flush=True)
        return "full" if cuda else "smoke"
    if requested not in PRESET_NAMES:
        raise RunnerError(f"unknown preset {requested!r}; choose one of {list(PRESET_NAMES)}")
    if requested != "smoke" and not cuda:
        raise RunnerError(f"preset {requested!r} needs a CUDA GPU and PyTorch sees none; "
                          "run './run_all.sh --smoke' on this machine")
    return requested


def check_alloc_conf(value: str, var: str = "PYTORCH_ALLOC_CONF") -> None:
    """Raise RunnerError when the allocator setting ``value`` of the environment variable ``var``
    is not one the course accepts (``helpers.course.alloc_conf``). Pure Python: ``run_all.sh`` runs it
    before anything imports torch, since a CUDA build of PyTorch may abort on a value it cannot
    parse, and PyTorch reports other mistakes only at the first CUDA allocation or not at all."""
    if value.strip() == alloc_conf.DEFAULT:
        raise RunnerError(f"environment variable {var}={value!r}: {alloc_conf.DEFAULT!r} is not a "
                          f"setting PyTorch understands; unset {var} for the default allocator")
    try:
        alloc_conf.parse_alloc_conf(value)
    except ParameterError as error:
        raise RunnerError(f"environment variable {var}: {error}") from None


def check_run_dir(environ=None, figures: Path | None = None) -> None:
    """``COURSE_RUN_DIR`` may not point into ``figures/``: only the runner's promotion, after a
    full run on a CUDA GPU, writes there."""
    environ = os.environ if environ is None else environ
    value = environ.get(RUN_DIR_ENV)
    figures = Path(figures or REPO / "figures").resolve()
    if value and (Path(value).resolve() == figures or figures in Path(value).resolve().parents):
        raise RunnerError(f"environment variable {RUN_DIR_ENV}={value!r} points into "
                          f"{shown(figures)}/, which only a full run on a CUDA GPU updates; "
                          f"unset {RUN_DIR_ENV} (runs go to runs/<preset>/)")


def bytecode_warning(module_file: str, dont_write: bool | None = None) -> str | None:
    """A warning when Python has no bytecode cache for ``module_file`` (torch's ``__init__.py``)
    and may not write one (``PYTHONDONTWRITEBYTECODE``): then every kernel recompiles torch's and
    transformers' sources at import, 5-15 s per notebook. None when the cache is there or can be
    written (the first notebook then pays once)."""
    import importlib.util

    dont_write = sys.dont_write_bytecode if dont_write is None else dont_write
    if not dont_write or Path(importlib.util.cache_from_source(module_file)).exists():
        return None
    return ("note: Python may not write bytecode (PYTHONDONTWRITEBYTECODE is set) and finds none "
            "for torch, so every notebook recompiles torch and transformers at import (5-15 s "
            "each). To fix: unset PYTHONDONTWRITEBYTECODE and set PYTHONPYCACHEPREFIX to a "
            "writable folder (docs/troubleshooting.md).")


def check_alloc_env(environ=None) -> None:
    """Check the allocator variables of the environment the kernels will inherit."""
    environ = os.environ if environ is None else environ
    for var in alloc_conf.ALLOC_ENV_VARS:
        if environ.get(var):
            check_alloc_conf(environ[var], var)


def load_status(run_root: Path, strict: bool = False) -> dict:
    """The run's status file, or {} when there is none. An unreadable one is rebuilt from the
    executed notebooks that are there when ``strict`` (``--resume`` keeps what finished),
    otherwise noted and started afresh."""
    path = run_root / STATUS_FILE
    if not path.exists():
        return {}
    try:
        status = json.loads(path.read_text())
        if not isinstance(status, dict):
            raise ValueError("not a JSON object")
        return status
    except (OSError, UnicodeDecodeError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error).splitlines()[0]
        if strict:
            status = status_from_executed(run_root)
            done = sorted(k for k, v in status.items() if v["status"] == "ok")
            print(f"note: {shown(path)} was unreadable ({reason}); rebuilt from the executed "
                  f"notebooks in {shown(run_root)}: {len(done)} finished "
                  f"({', '.join(k[:2] for k in done) or 'none'}), the others run again", flush=True)
            return status
        print(f"note: {shown(path)} was unreadable ({reason}); starting a new one", flush=True)
        return {}


def completed_without_error(nb: dict) -> bool:
    """True when an executed notebook shows no error output and no cell that papermill left
    pending, running or failed (an interrupted copy has such cells)."""
    if (nb.get("metadata", {}).get("papermill") or {}).get("exception"):
        return False
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        if (cell.get("metadata", {}).get("papermill") or {}).get("status") in ("pending", "running", "failed"):
            return False
        if any(out.get("output_type") == "error" for out in cell.get("outputs", [])):
            return False
    return True


def status_from_executed(run_root: Path) -> dict:
    """A status rebuilt from the executed notebooks in ``run_root`` (``NN_topic.ipynb``): one
    that completed without an error output counts as finished (``--resume`` then also checks
    its outputs, as for any entry), any other as failed."""
    status = {}
    for executed in notebooks(run_root):
        try:
            ok = completed_without_error(read_notebook(executed))
        except RunnerError:
            ok = False
        status[executed.stem] = {"notebook": executed.name, "executed": str(executed),
                                 "status": "ok" if ok else "failed",
                                 "error": "" if ok else "rebuilt from its executed copy: not finished",
                                 "rebuilt": True}
    return status


def save_status(run_root: Path, status: dict) -> None:
    from . import results

    results.atomic_write_text(run_root / STATUS_FILE, json.dumps(status, indent=2))


def _record(run_root: Path, stem: str) -> dict | None:
    """The outputs record a notebook wrote (``outputs/<stem>.json``); None if absent or unreadable."""
    try:
        record = json.loads((run_root / "outputs" / f"{stem}.json").read_text())
        return record if isinstance(record, dict) else None
    except (OSError, ValueError):
        return None


def clear_outputs(run_root: Path, stem: str) -> None:
    """Remove what an earlier run of this notebook wrote (its files, outputs record, executed
    copy and log), so stale files can neither pass as new nor be named in a failure."""
    for entry in (_record(run_root, stem) or {}).get("files", []):
        (run_root / entry["path"]).unlink(missing_ok=True)
    for name in (f"outputs/{stem}.json", f"{stem}.ipynb", f"{stem}.log"):
        (run_root / name).unlink(missing_ok=True)


def check_outputs(run_root: Path, stem: str, seconds: float | None = None,
                  preset: str | None = None) -> str | None:
    """Why a notebook that raised no error still failed, or None if its outputs look real.
    ``seconds`` is the time its cells ran (kernel start excluded), checked against
    ``MIN_SECONDS[preset]``; None skips that check."""
    path = run_root / "outputs" / f"{stem}.json"
    if not path.exists():
        return "it never called helpers.course.results.start_notebook (no outputs record)"
    record = _record(run_root, stem)
    if record is None:
        return f"its outputs record {shown(path)} is unreadable"
    files = record.get("files", [])
    missing = [f["path"] for f in files if not (run_root / f["path"]).exists()]
    if missing:
        return f"files it recorded are missing: {missing}"
    if f"data/{stem}.csv" not in {f["path"] for f in files}:
        return f"it did not write its results table data/{stem}.csv"
    if not any(f["kind"] == "figure" for f in files):
        return "it wrote no figure"
    if seconds is not None and seconds < MIN_SECONDS[preset]:
        return (f"it finished in {seconds:.2f}s, implausibly fast for preset {preset!r} "
                f"(minimum {MIN_SECONDS[preset]}s): did it skip its work?")
    return None


def _copy(src: Path, dst: Path) -> None:
    from . import results

    results.atomic_write(dst, lambda tmp: shutil.copyfile(src, tmp))


def params_differ(record: dict, stem: str) -> str | None:
    """How the parameters a notebook ran with (its outputs record, written by
    ``results.start_notebook`` from the resolved ``P``) differ from its preset's values, or None.
    The runner injects only ``preset``; a value typed into the notebook's parameters cell shows
    up here."""
    from . import presets

    ran = record.get("params") or {}
    try:
        expected = presets.preset_values(stem[:2], record.get("preset"))
    except Exception as error:  # noqa: BLE001 - an unknown preset is a difference too
        return str(error)
    diffs = []
    for key, value in expected.items():
        check = presets.SCHEMA.get(key)
        if check is not None and key != "device":  # as resolve_params normalises it
            with contextlib.suppress(Exception):
                value = check(key, value)
        want = json.loads(json.dumps(value, default=str))
        if key == "device" and value == "auto":
            continue  # resolved to whatever the machine has
        if key not in ran:
            diffs.append(f"{key} missing")
        elif ran[key] != want:
            diffs.append(f"{key}={ran[key]!r}, preset {want!r}")
    diffs += [f"{key}={ran[key]!r} not in the preset" for key in ran
              if key not in expected and key not in ("preset", "notebook")]
    return "; ".join(diffs) or None


# Warnings that a kernel prints while importing, before ``helpers`` can silence them (a lesson
# that imports transformers first): tqdm cannot draw notebook progress bars without ipywidgets.
KERNEL_QUIET = (f"ignore:{IMPORT_NOISE}",)


def kernel_warnings(current: str) -> str:
    """``PYTHONWARNINGS`` for the kernels: ``current`` plus the filters of ``KERNEL_QUIET``."""
    parts = [p for p in current.split(",") if p]
    return ",".join(parts + [q for q in KERNEL_QUIET if q not in parts])


def promote(run_root: Path, stem: str, figures: Path | None = None,
            run: dict | None = None) -> list[str]:
    """Copy a successful full GPU run's figures, tables and executed notebook (with its
    outputs, to ``figures/notebooks/``) into ``figures/`` and replace the notebook's entries in
    ``figures/manifest.json`` (its files that the new run no longer writes are removed). Refuses
    anything not measured on CUDA with the full preset. ``run`` (``published.run_identity``) is
    named in every entry, in the manifest's ``runs`` and in the published notebook's metadata."""
    from . import published, results

    figures = figures or results.figures_dir()
    record = json.loads((run_root / "outputs" / f"{stem}.json").read_text())
    env = record["env"]
    device = str(record.get("params", {}).get("device", "cuda"))
    if record.get("preset") != "full" or env.get("gpu", "cpu") == "cpu" or not device.startswith("cuda"):
        raise RuntimeError(f"refusing to promote {stem}: preset {record.get('preset')!r} "
                           f"on {env.get('gpu')!r} (device {device!r}) is not a full run on a CUDA GPU")
    changed = params_differ(record, stem)
    if changed:  # a parameters cell edited by hand: the run is not the preset's
        raise RuntimeError(f"refusing to promote {stem}: it ran with parameters that differ from "
                           f"the {record['preset']!r} preset ({changed}); restore its parameters "
                           f"cell (git checkout -- notebooks/{stem}.ipynb) and run it again")
    manifest_path = figures / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest.setdefault("figures", {})
    manifest.setdefault("tables", {})
    previous = set()
    for section in ("figures", "tables"):
        for key in [k for k, v in manifest[section].items() if v.get("notebook") == f"{stem}.ipynb"]:
            previous.add(key)
            del manifest[section][key]
    copied = []
    for entry in record["files"]:
        _copy(run_root / entry["path"], figures / entry["path"])
        copied.append(entry["path"])
        meta = {"notebook": f"{stem}.ipynb", "preset": record["preset"], "gpu": env["gpu"],
                "driver": env["driver"], "cuda": env["cuda"], "torch": env["torch"],
                "transformers": env["transformers"], "cpu": env.get("cpu", "unknown"),
                "date": env["date"]}
        if run:
            meta.update(run=run["id"], commit=run["commit"])
        if entry["kind"] == "figure":
            manifest["figures"][entry["path"]] = {**meta, "csv": entry.get("csv"),
                                                  "title": entry.get("title", "")}
        else:
            manifest["tables"][entry["path"]] = {**meta, "rows": entry.get("rows")}
    executed = run_root / f"{stem}.ipynb"
    if executed.exists():  # the published run: every output, readable without a GPU
        _copy(executed, figures / "notebooks" / executed.name)
        copied.append(f"notebooks/{executed.name}")
        if run:
            published.stamp_notebook(figures / "notebooks" / executed.name, run, record["preset"])
    if run:
        published.record_run(manifest, run, f"{stem}.ipynb")
    for section in ("figures", "tables"):
        manifest[section] = dict(sorted(manifest[section].items()))
    results.atomic_write_text(manifest_path, json.dumps(manifest, indent=2) + "\n")
    for stale in previous - set(copied):
        (figures / stale).unlink(missing_ok=True)
    readme = figures.parent / "README.md"
    if readme.exists():  # the README beside figures/ shows what figures/ now holds
        from . import report

        report.update_readme(readme, figures)
    return copied


def _log_handler(log_path: Path, prefix: str, echo: bool):
    """Papermill's log (cell markers and the cells' output) into the notebook's log file, echoed
    with ``--verbose``; remembers the cell being executed, to name it if the kernel dies."""
    class Handler(logging.Handler):
        def __init__(self):
            super().__init__(logging.INFO)
            self.file = open(log_path, "a")  # appends: the kernel's own stderr goes there too
            self.cell = None

        def emit(self, record):
            text = record.getMessage()
            if text.startswith("Executing Cell "):
                self.cell = text[len("Executing Cell "):].rstrip("-").strip()
            self.file.write(text + ("" if text.endswith("\n") else "\n"))
            self.file.flush()
            if echo:
                for line in text.rstrip("\n").splitlines():
                    print(f"  {prefix}| {line}", flush=True)

        def close(self):
            self.file.close()
            super().close()

    return Handler()


@contextlib.contextmanager
def _output_to(log_path: Path, enabled: bool):
    """Send this process's stdout and stderr file descriptors, which the kernel inherits, to
    the notebook's log: its start-up warnings ("Kernel is running over TCP without encryption")
    and native messages stay out of the status lines."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    target = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def cell_seconds(nb) -> float | None:
    """The time the notebook's cells ran, from papermill's per-cell metadata (the kernel's
    start-up excluded, so a notebook that does nothing cannot hide behind it); None if absent."""
    durations = [cell.get("metadata", {}).get("papermill", {}).get("duration")
                 for cell in (nb or {}).get("cells", [])]
    durations = [d for d in durations if isinstance(d, (int, float))]
    return float(sum(durations)) if durations else None


def dead_cell(executed: Path, logged: str | None) -> str:
    """Which cell a kernel died in: the last code cell papermill started in the executed
    notebook (numbered as Jupyter numbers a fresh run's cells), else the cell it last logged."""
    try:
        cells = json.loads(executed.read_text())["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        cells = []
    found, number = None, 0
    for cell in cells:
        if cell.get("cell_type") == "code":
            number += 1
            if cell.get("metadata", {}).get("papermill", {}).get("start_time"):
                found = (number, cell.get("source", ""))
    if found is None:
        return f"notebook cell {logged}" if logged else "an unknown cell"
    number, source = found
    text = "".join(source) if isinstance(source, list) else source
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"cell {number} ({first[:60]!r})"


def executed_ok(path: Path) -> bool:
    """True when the executed notebook is there and reads as a notebook."""
    try:
        read_notebook(path)
        return True
    except RunnerError:
        return False


def finished(run_root: Path, stem: str, entry: dict | None) -> bool:
    """True when an earlier run finished ``stem`` successfully and its outputs and executed
    notebook are still there (what ``--resume`` skips)."""
    return bool(entry) and entry.get("status") == "ok" and \
        check_outputs(run_root, stem) is None and executed_ok(run_root / f"{stem}.ipynb")


class SpareKernel:
    """One Python kernel started ahead of the notebook that will use it: it boots while the
    notebook before runs, so each notebook after the first skips a kernel start (about a second
    on a GPU host). A notebook takes the spare only if it was started in the same working
    directory and environment; otherwise, or without one, papermill starts its own, as usual.
    Its own output (start-up warnings, native messages) goes to a file of its own that becomes
    the log of the notebook that takes it."""

    LOG = ".spare-kernel.log"

    def __init__(self):
        self.km, self.key, self.log, self.wanted = None, None, None, False

    @staticmethod
    def _key(cwd) -> tuple:
        return str(cwd), tuple(sorted(os.environ.items()))

    def start(self, cwd, run_root: Path, echo: bool) -> None:
        self.close()
        log = None if echo else run_root / self.LOG
        try:
            from jupyter_client.manager import AsyncKernelManager
            from jupyter_client.utils import run_sync

            km = AsyncKernelManager(kernel_name="python3")
            with contextlib.ExitStack() as stack:
                out = {}
                if log is not None:
                    stream = stack.enter_context(open(log, "w"))
                    out = {"stdout": stream, "stderr": stream}
                run_sync(km.start_kernel)(cwd=str(cwd), **out)
        except Exception:  # noqa: BLE001 - no spare: the next notebook starts its own kernel
            return
        self.km, self.key, self.log = km, self._key(cwd), log

    def take(self, cwd, log_path: Path):
        """The spare kernel's manager for a notebook run in ``cwd``, its output now going to
        ``log_path`` (the caller shuts it down: ``stop``), or None."""
        km, key, log = self.km, self.key, self.log
        self.km = self.key = self.log = None
        if km is not None and key != self._key(cwd):
            self.stop(km)
            km = None
        if log is not None:
            if km is not None:
                log.replace(log_path)  # same file: the kernel keeps writing into it
            else:
                log.unlink(missing_ok=True)
        return km

    @staticmethod
    def stop(km) -> None:
        from jupyter_client.utils import run_sync

        with contextlib.suppress(Exception):  # already dead, or never fully started
            run_sync(km.shutdown_kernel)(now=True)

    def close(self) -> None:
        if self.km is not None:
            self.stop(self.km)
        if self.log is not None:
            self.log.unlink(missing_ok=True)
        self.km = self.key = self.log = None


SPARE = SpareKernel()  # run() says when one is wanted (more notebooks follow) and closes it


def execute(path: Path, run_root: Path, preset: str, echo: bool = False, parameters=None) -> dict:
    """Run one notebook with papermill; returns its status entry (never raises for a failure
    inside the notebook). Its output goes to ``<stem>.log``, echoed when ``echo``."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from . import results

    stem = path.stem
    output = run_root / path.name
    clear_outputs(run_root, stem)
    logger = logging.getLogger("papermill")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    log_path = run_root / f"{stem}.log"
    old_env = os.environ.get(results.RUN_DIR_ENV)
    os.environ[results.RUN_DIR_ENV] = str(run_root)
    start = time.perf_counter()
    kernel = SPARE.take(path.parent, log_path)  # started while the notebook before ran, if any
    handler = _log_handler(log_path, stem[:2], echo)
    logger.addHandler(handler)
    if SPARE.wanted:  # the next notebook's, booting while this one runs
        SPARE.start(path.parent, run_root, echo)
    entry = {"notebook": path.name, "executed": str(output)}
    try:
        with _output_to(log_path, enabled=not echo):
            nb = papermill.execute_notebook(str(path), str(output),
                                            **({"km": kernel} if kernel else {}),
                                            parameters={"preset": preset, **(parameters or {})},
                                            kernel_name="python3", cwd=str(path.parent),
                                            progress_bar=False, log_output=True,
                                            # the last cell has run and written its files: stop
                                            # the kernel at once (a graceful stop waits ~1-2 s
                                            # a notebook for the process to wind down)
                                            shutdown_kernel="immediate")
        seconds = time.perf_counter() - start
        work = cell_seconds(nb)
        problem = check_outputs(run_root, stem, seconds if work is None else work, preset)
        entry.update(status="failed" if problem else "ok", seconds=round(seconds, 1),
                     cell_seconds=None if work is None else round(work, 2),
                     error=f"no error raised, but {problem}" if problem else "")
    except PapermillExecutionError as error:
        entry.update(status="failed", seconds=round(time.perf_counter() - start, 1),
                     error=f"cell {error.exec_count}: {error.ename}: {error.evalue}".strip())
    except KeyboardInterrupt:
        entry.update(status="interrupted", seconds=round(time.perf_counter() - start, 1),
                     error="interrupted")
        raise
    except Exception as error:  # noqa: BLE001 - a dead kernel or a broken notebook file
        message = f"{type(error).__name__}: {error}".splitlines()[0]
        if type(error).__name__ == "DeadKernelError":
            message = f"{dead_cell(output, handler.cell)}: {message}"
        entry.update(status="failed", seconds=round(time.perf_counter() - start, 1), error=message)
    finally:
        if kernel is not None:  # papermill shuts down only the kernels it started
            SPARE.stop(kernel)
        logger.removeHandler(handler)
        handler.close()
        if old_env is None:
            os.environ.pop(results.RUN_DIR_ENV, None)
        else:
            os.environ[results.RUN_DIR_ENV] = old_env
    return entry


@contextlib.contextmanager
def run_lock(run_root: Path):
    """Hold ``<run_root>/.lock`` for the run (an advisory lock, released when the process ends,
    even killed); a second run of the same preset is refused with who holds it."""
    try:
        run_root.mkdir(parents=True, exist_ok=True)
        handle = open(run_root / LOCK_FILE, "a+")
    except OSError as error:
        raise RunnerError(f"cannot write to {shown(run_root)} ({error.strerror}); make it "
                          f"writable (chmod -R u+w {shown(run_root)}) or remove it") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "a process that has not written its name yet"
        handle.close()
        raise RunnerError(f"{shown(run_root)} is in use by another run ({holder}); wait for it "
                          "to finish, or stop it, then run again") from None
    try:
        os.chmod(run_root / LOCK_FILE, 0o644)
        handle.seek(0)
        handle.truncate()
        started = datetime.datetime.now().isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()}, started {started}: "
                     f"{shlex.join(['./run_all.sh', *sys.argv[1:]])}\n")
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the lock


def run(paths: list[Path], preset: str, run_root: Path, resume: bool = False, echo: bool = False,
        promote_figures: bool | None = None, parameters=None) -> dict:
    """Run ``paths`` in order; returns this run's status of each of them (merged into
    ``<run_root>/status.json``, which keeps other notebooks' entries and ``--resume`` reads).
    Ctrl-C raises RunInterrupted, which carries that status."""
    import torch

    from . import results

    if Path(run_root).resolve() == results.figures_dir().resolve() or \
            results.figures_dir().resolve() in Path(run_root).resolve().parents:
        raise RunnerError(f"refusing to run into {run_root}: figures/ is written only by "
                          "promotion after a full run on a CUDA GPU")
    if promote_figures is None:  # reference figures come only from unmodified full GPU runs
        promote_figures = preset == "full" and torch.cuda.is_available() and not parameters
    from . import published

    with run_lock(run_root):
        status = load_status(run_root, strict=resume)
        identity = status[published.RUN_KEY] = published.run_identity(status, resume)  # --resume keeps it
        if mixed := published.mixed_hosts(identity):  # said now, not only when publishing refuses
            print(f"  note    {mixed[-1]}: the notebooks of this run cannot be published together; "
                  "to publish, start a new run (without --resume) and keep one machine for all of it",
                  flush=True)
        os.environ["COURSE_RUN_ID"] = identity["id"]  # each kernel records it (results.RUN_ID_ENV)
        os.environ["PYTHONWARNINGS"] = kernel_warnings(os.environ.get("PYTHONWARNINGS", ""))
        this = {}
        width = max((len(p.stem) for p in paths), default=0)
        total = time.perf_counter()
        stem = None
        try:
            for index, path in enumerate(paths):
                stem = path.stem
                SPARE.wanted = index + 1 < len(paths)
                if resume and finished(run_root, stem, status.get(stem)):
                    this[stem] = status[stem]
                    print(f"  skip    {stem:<{width}}  (finished in an earlier run)", flush=True)
                    continue
                status[stem] = {"notebook": path.name, "status": "running"}
                save_status(run_root, status)
                print(f"  run     {stem:<{width}}  preset {preset} ...", flush=True)
                entry = execute(path, run_root, preset, echo=echo, parameters=parameters)
                entry["run"] = identity["id"]
                peak = published.peak_gib(run_root, stem) if entry["status"] == "ok" else None
                if peak is not None:  # read once: it parses every table the notebook wrote
                    entry["peak_allocated_gib"] = peak
                if entry["status"] == "ok" and promote_figures:
                    try:
                        entry["promoted"] = promote(run_root, stem, run=identity)
                    except Exception as error:  # noqa: BLE001 - report, never half-promote silently
                        entry.update(status="failed", error=f"promotion to figures/ failed: {error}")
                status[stem] = this[stem] = entry
                save_status(run_root, status)
                mark = "ok" if entry["status"] == "ok" else "FAILED"
                print(f"  {mark:<6}  {stem:<{width}}  {entry['seconds']:7.1f} s", flush=True)
                stem = None
        except KeyboardInterrupt:
            if stem is not None:
                status[stem] = this[stem] = {"notebook": f"{stem}.ipynb", "status": "interrupted",
                                             "executed": str(run_root / f"{stem}.ipynb")}
            not_run = [p.stem for p in paths if p.stem not in this]
            for name in not_run:
                this[name] = {"notebook": f"{name}.ipynb", "status": "not run"}
            this["_total_seconds"] = round(time.perf_counter() - total, 1)
            print(f"\nInterrupted during {stem or 'the run'}"
                  + (f" (its partial output: {shown(run_root / f'{stem}.log')})" if stem else "")
                  + f". Not run: {', '.join(not_run) or 'none'}. Finished results are kept; "
                  "'./run_all.sh --resume' (with the same options) re-runs what did not finish.",
                  flush=True)
            raise RunInterrupted(this) from None
        finally:
            SPARE.close()
            SPARE.wanted = False
            status["_total_seconds"] = round(time.perf_counter() - total, 1)
            identity["end"] = published._now()
            save_status(run_root, status)
            if promote_figures:  # the published run's status times go beside its figures
                published.publish_status(run_root)
        this["_total_seconds"] = status["_total_seconds"]
    return this


def summary(status: dict) -> tuple[str, int]:
    """A closing report of one run (with its total time) and the exit code: non-zero when any
    notebook failed or did not finish."""
    entries = {k: v for k, v in status.items() if not k.startswith("_")}
    failed = {k: v for k, v in entries.items() if v.get("status") != "ok"}
    lines = [f"{len(entries) - len(failed)}/{len(entries)} notebooks ok; total time "
             f"{status.get('_total_seconds', 0):.1f} s"]
    for stem, entry in failed.items():
        state = entry.get("status", "failed")
        reason = entry.get("error") or {
            "interrupted": "interrupted (Ctrl-C)",
            "running": "did not finish (runner stopped)",
            "not run": "the run stopped before it; './run_all.sh --resume' runs it"}.get(state, state)
        executed = entry.get("executed")
        where = executed if executed and Path(executed).exists() else "none (it did not start)"
        lines.append(f"  {state.upper()} {stem}: {reason}\n"
                     f"         executed notebook: {where}")
    return "\n".join(lines), (1 if failed else 0)


# The options a user can give (run_all.sh's modes included); --check-env is run_all.sh's own.
USAGE = ("./run_all.sh [--lab [ARGS] | --test [ARGS] | --site] [--smoke | --preset NAME] "
         "[--only NN[,NN]] [--resume] [--list] [--verbose | --quiet] [--help]")
PRESETS = ("full", "workshop", "smoke")  # helpers.course.presets.PRESET_NAMES, without torch


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run_all.sh", usage=USAGE, allow_abbrev=False,
        description="Run the course's notebooks headless (see ./run_all.sh --help).")
    parser.add_argument("--preset", help="one of full, workshop, smoke "
                                         "(default: full on a CUDA GPU, smoke otherwise)")
    parser.add_argument("--smoke", action="store_true", help="same as --preset smoke")
    parser.add_argument("--only", help="notebook numbers, e.g. 00,02")
    parser.add_argument("--list", action="store_true", help="list the notebooks and exit")
    parser.add_argument("--resume", action="store_true",
                        help="skip notebooks that finished in the last run of this preset")
    parser.add_argument("--verbose", action="store_true",
                        help="echo every cell's output and the kernels' messages")
    parser.add_argument("--quiet", action="store_true",
                        help="one status line per notebook (the default)")
    parser.add_argument("--check-env", action="store_true", help=argparse.SUPPRESS)
    return parser


def check_args(args) -> list[Path]:
    """The notebooks the arguments name; RunnerError for options that disagree or a preset
    that does not exist. Pure Python: run_all.sh runs it before anything imports torch."""
    paths = select(notebooks(), args.only)
    if args.smoke and args.preset not in (None, "smoke"):
        raise RunnerError("--smoke and --preset disagree; give one of them")
    if args.preset is not None and args.preset not in PRESETS:
        raise RunnerError(f"unknown preset {args.preset!r}; choose one of {list(PRESETS)}")
    if args.verbose and args.quiet:
        raise RunnerError("--verbose and --quiet disagree; give one of them")
    return paths


def next_step(status: dict, preset: str, run_root: Path) -> str:
    """One line after a run: where its results are and what to do next."""
    entries = {k: v for k, v in status.items() if not k.startswith("_")}
    failed = sorted(k[:2] for k, v in entries.items() if v.get("status") != "ok")
    flag = "--smoke" if preset == "smoke" else f"--preset {preset}"
    where = (f"Results in {shown(run_root)}/ (executed notebooks NN_topic.ipynb, figures "
             "NN_topic.png, tables data/NN_topic.csv)")
    if failed:
        then = (f"read each failure above in its executed notebook, then "
                f"'./run_all.sh {flag} --only {','.join(failed)}' re-runs what failed")
    elif any(v.get("promoted") for v in entries.values()):
        where += "; published into figures/ and README.md's results"
        then = "review them with 'git diff --stat figures README.md'"
    elif preset == "smoke":
        then = ("open them in JupyterLab ('./run_all.sh --lab'); a smoke run exercises the code, it "
                "measures nothing: the measurements need a CUDA GPU ('./run_all.sh' there)")
    else:
        then = (f"open them in JupyterLab ('./run_all.sh --lab'), or compare with the published run: "
                f"'{shown(Path(sys.executable))} -m helpers.course.verdicts {shown(run_root)} "
                "figures/notebooks'")
    return f"{where}. Next: {then}."


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        paths = check_args(args)
        if args.check_env:
            check_alloc_env()
            check_run_dir()
            return 0
        titles = {path: title(path) for path in paths}  # an unreadable notebook stops here
        if args.list:
            for path in paths:
                print(f"{path.stem[:2]}  {path.name:<34} {titles[path]}")
            return 0
        check_alloc_env()
        check_run_dir()
        import torch

        preset = choose_preset("smoke" if args.smoke else args.preset, torch.cuda.is_available())
        warning = bytecode_warning(torch.__file__)
        if warning:
            print(warning, flush=True)
        from . import results

        run_root = results.repo_root() / "runs" / preset
        print(f"Running {len(paths)} notebook(s), preset {preset!r}, into {shown(run_root)}"
              + ("" if args.verbose else f" (each notebook's output: {shown(run_root)}/NN_topic.log)"),
              flush=True)
        try:
            status, code = run(paths, preset, run_root, resume=args.resume,
                               echo=args.verbose), None
        except RunInterrupted as interrupted:
            status, code = interrupted.status, 130
    except RunnerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a folder or file the run cannot write
        where = shown(Path(error.filename)) if error.filename else "a file of the run"
        print(f"error: cannot write {where} ({error.strerror}); make it writable or remove it, "
              "then run again", file=sys.stderr)
        return 2
    text, failed = summary(status)
    print(text, flush=True)
    if code is None:
        print(next_step(status, preset, run_root), flush=True)
    return failed if code is None else code


if __name__ == "__main__":
    sys.exit(main())
