"""Run the course's notebooks headless with papermill: ``./run_all.sh`` calls this.

Each notebook runs in a fresh kernel with its preset injected, into ``runs/<preset>/``, and gets
one status line. A failure does not stop the others; the summary names every failure with the
failing cell's error and the executed notebook's path, and the exit status is non-zero. A
notebook that raised nothing but wrote no table or figure, or finished implausibly fast, failed
too. Only a full-preset run on a CUDA GPU in which a notebook succeeded copies its figures and
tables into ``figures/`` and its entries into ``figures/manifest.json``. Ctrl-C keeps every
finished result (``status.json`` is rewritten atomically after each notebook) and ``--resume``
re-runs only the notebooks that did not finish successfully.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from . import allocator, results
from .presets import PRESET_NAMES, ParameterError

NOTEBOOKS_DIR = results.repo_root() / "notebooks"
# A notebook that finishes faster than this did not do its work (seconds, per preset).
MIN_SECONDS = {"full": 5.0, "workshop": 2.0, "smoke": 0.5}
STATUS_FILE = "status.json"


class RunnerError(Exception):
    """Bad command-line input: the message says what is allowed."""


def notebooks(directory: Path | None = None) -> list[Path]:
    """The numbered lesson notebooks (of ``NOTEBOOKS_DIR`` by default), in order."""
    return sorted(p for p in Path(directory or NOTEBOOKS_DIR).glob("[0-9][0-9]_*.ipynb"))


def title(path: Path) -> str:
    """The notebook's first heading, as its one-line summary."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("#"):
                    return line.lstrip("# ").strip()
    return path.stem


def select(paths: list[Path], only: str | None) -> list[Path]:
    """The notebooks named by ``--only NN[,NN]``; unknown numbers are an error."""
    if not only:
        return paths
    by_number = {p.name[:2]: p for p in paths}
    given = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in given if n.zfill(2) not in by_number]
    if unknown or not given:
        raise RunnerError(f"--only {only!r}: unknown notebook number(s) {unknown or [only]}; "
                          f"available: {','.join(sorted(by_number))}")
    return [by_number[n] for n in sorted({n.zfill(2) for n in given})]


def choose_preset(requested: str | None, cuda: bool) -> str:
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
    is not one the course's allocator check (``helpers.allocator.parse_alloc_conf``) accepts.
    PyTorch reads the variable only at the first CUDA allocation, and reports some mistakes as
    an internal assert or not at all, so the runner checks it before any notebook starts."""
    if value.strip() == allocator.DEFAULT:
        raise RunnerError(f"environment variable {var}={value!r}: {allocator.DEFAULT!r} is not a "
                          f"setting PyTorch understands; unset {var} for the default allocator")
    try:
        allocator.parse_alloc_conf(value)
    except ParameterError as error:
        raise RunnerError(f"environment variable {var}: {error}") from None


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
    for var in allocator.ALLOC_ENV_VARS:
        if environ.get(var):
            check_alloc_conf(environ[var], var)


def load_status(run_root: Path) -> dict:
    path = run_root / STATUS_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def save_status(run_root: Path, status: dict) -> None:
    results.atomic_write_text(run_root / STATUS_FILE, json.dumps(status, indent=2))


def clear_outputs(run_root: Path, stem: str) -> None:
    """Remove what an earlier run of this notebook wrote, so stale files cannot pass as new."""
    record = run_root / "outputs" / f"{stem}.json"
    if record.exists():
        for entry in json.loads(record.read_text()).get("files", []):
            (run_root / entry["path"]).unlink(missing_ok=True)
        record.unlink()


def check_outputs(run_root: Path, stem: str, seconds: float | None = None,
                  preset: str | None = None) -> str | None:
    """Why a notebook that raised no error still failed, or None if its outputs look real.
    ``seconds`` is the time its cells ran (kernel start excluded), checked against
    ``MIN_SECONDS[preset]``; None skips that check."""
    record = run_root / "outputs" / f"{stem}.json"
    if not record.exists():
        return "it never called helpers.results.start_notebook (no outputs record)"
    files = json.loads(record.read_text()).get("files", [])
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


def promote(run_root: Path, stem: str, figures: Path | None = None) -> list[str]:
    """Copy a successful full GPU run's figures and tables into ``figures/`` and replace the
    notebook's entries in ``figures/manifest.json`` (its files that the new run no longer writes
    are removed). Refuses anything not measured on CUDA with the full preset."""
    figures = figures or results.figures_dir()
    record = json.loads((run_root / "outputs" / f"{stem}.json").read_text())
    env = record["env"]
    device = str(record.get("params", {}).get("device", "cuda"))
    if record.get("preset") != "full" or env.get("gpu", "cpu") == "cpu" or not device.startswith("cuda"):
        raise RuntimeError(f"refusing to promote {stem}: preset {record.get('preset')!r} "
                           f"on {env.get('gpu')!r} (device {device!r}) is not a full run on a CUDA GPU")
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
        src, dst = run_root / entry["path"], figures / entry["path"]
        results.atomic_write(dst, lambda tmp, src=src: shutil.copyfile(src, tmp))
        copied.append(entry["path"])
        meta = {"notebook": f"{stem}.ipynb", "preset": record["preset"], "gpu": env["gpu"],
                "driver": env["driver"], "cuda": env["cuda"], "torch": env["torch"],
                "transformers": env["transformers"], "date": env["date"]}
        if entry["kind"] == "figure":
            manifest["figures"][entry["path"]] = {**meta, "csv": entry.get("csv"),
                                                  "title": entry.get("title", "")}
        else:
            manifest["tables"][entry["path"]] = {**meta, "rows": entry.get("rows")}
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
    class Handler(logging.Handler):
        def __init__(self):
            super().__init__(logging.INFO)
            self.file = open(log_path, "w")

        def emit(self, record):
            text = record.getMessage()
            self.file.write(text + ("" if text.endswith("\n") else "\n"))
            self.file.flush()
            if echo:
                for line in text.rstrip("\n").splitlines():
                    print(f"  {prefix}| {line}", flush=True)

        def close(self):
            self.file.close()
            super().close()

    return Handler()


def cell_seconds(nb) -> float | None:
    """The time the notebook's cells ran, from papermill's per-cell metadata (the kernel's
    start-up excluded, so a notebook that does nothing cannot hide behind it); None if absent."""
    durations = [cell.get("metadata", {}).get("papermill", {}).get("duration")
                 for cell in (nb or {}).get("cells", [])]
    durations = [d for d in durations if isinstance(d, (int, float))]
    return float(sum(durations)) if durations else None


def finished(run_root: Path, stem: str, entry: dict | None) -> bool:
    """True when an earlier run finished ``stem`` successfully and its outputs are still there
    (what ``--resume`` skips)."""
    return bool(entry) and entry.get("status") == "ok" and \
        check_outputs(run_root, stem) is None


def execute(path: Path, run_root: Path, preset: str, echo: bool = True, parameters=None) -> dict:
    """Run one notebook with papermill; returns its status entry (never raises for a failure
    inside the notebook)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    stem = path.stem
    output = run_root / path.name
    clear_outputs(run_root, stem)
    logger = logging.getLogger("papermill")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = _log_handler(run_root / f"{stem}.log", stem[:2], echo)
    logger.addHandler(handler)
    old_env = os.environ.get(results.RUN_DIR_ENV)
    os.environ[results.RUN_DIR_ENV] = str(run_root)
    start = time.perf_counter()
    entry = {"notebook": path.name, "executed": str(output)}
    try:
        nb = papermill.execute_notebook(str(path), str(output),
                                        parameters={"preset": preset, **(parameters or {})},
                                        kernel_name="python3", cwd=str(path.parent),
                                        progress_bar=False, log_output=True)
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
        entry.update(status="failed", seconds=round(time.perf_counter() - start, 1),
                     error=f"{type(error).__name__}: {error}".splitlines()[0])
    finally:
        logger.removeHandler(handler)
        handler.close()
        if old_env is None:
            os.environ.pop(results.RUN_DIR_ENV, None)
        else:
            os.environ[results.RUN_DIR_ENV] = old_env
    return entry


def run(paths: list[Path], preset: str, run_root: Path, resume: bool = False, echo: bool = True,
        promote_figures: bool | None = None, parameters=None) -> dict:
    """Run ``paths`` in order; returns the status of every notebook (also saved to
    ``<run_root>/status.json``, which ``--resume`` reads)."""
    import torch

    run_root.mkdir(parents=True, exist_ok=True)
    status = load_status(run_root) if resume else {}
    if promote_figures is None:  # reference figures come only from unmodified full GPU runs
        promote_figures = preset == "full" and torch.cuda.is_available() and not parameters
    width = max((len(p.stem) for p in paths), default=0)
    total = time.perf_counter()
    try:
        for path in paths:
            stem = path.stem
            if resume and finished(run_root, stem, status.get(stem)):
                print(f"  skip    {stem:<{width}}  (finished in an earlier run)", flush=True)
                continue
            status[stem] = {"notebook": path.name, "status": "running"}
            save_status(run_root, status)
            print(f"  run     {stem:<{width}}  preset {preset} ...", flush=True)
            try:
                entry = execute(path, run_root, preset, echo=echo, parameters=parameters)
            except KeyboardInterrupt:
                status[stem] = {"notebook": path.name, "status": "interrupted"}
                save_status(run_root, status)
                print(f"\nInterrupted during {stem}. Earlier results are intact; "
                      "'./run_all.sh --resume' re-runs what did not finish.", flush=True)
                raise
            if entry["status"] == "ok" and promote_figures:
                try:
                    entry["promoted"] = promote(run_root, stem)
                except Exception as error:  # noqa: BLE001 - report, never half-promote silently
                    entry.update(status="failed", error=f"promotion to figures/ failed: {error}")
            status[stem] = entry
            save_status(run_root, status)
            mark = "ok" if entry["status"] == "ok" else "FAILED"
            print(f"  {mark:<6}  {stem:<{width}}  {entry['seconds']:7.1f} s", flush=True)
    finally:
        status["_total_seconds"] = round(time.perf_counter() - total, 1)
        save_status(run_root, status)
    return status


def summary(status: dict) -> tuple[str, int]:
    """A closing report (with the run's total time) and the exit code: non-zero when any
    notebook failed or did not finish."""
    entries = {k: v for k, v in status.items() if not k.startswith("_")}
    failed = {k: v for k, v in entries.items() if v.get("status") != "ok"}
    lines = [f"{len(entries) - len(failed)}/{len(entries)} notebooks ok; total time "
             f"{status.get('_total_seconds', 0):.1f} s"]
    for stem, entry in failed.items():
        state = entry.get("status", "failed")
        reason = entry.get("error") or {"interrupted": "interrupted (Ctrl-C)",
                                        "running": "did not finish (runner stopped)"}.get(state, state)
        lines.append(f"  {state.upper()} {stem}: {reason}\n"
                     f"         executed notebook: {entry.get('executed', '-')}")
    return "\n".join(lines), (1 if failed else 0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="run_all.sh", description="Run the course's notebooks headless (see ./run_all.sh --help).")
    parser.add_argument("--preset", help=f"one of {', '.join(PRESET_NAMES)} "
                                         "(default: full on a CUDA GPU, smoke otherwise)")
    parser.add_argument("--smoke", action="store_true", help="same as --preset smoke")
    parser.add_argument("--only", help="notebook numbers, e.g. 00,02")
    parser.add_argument("--list", action="store_true", help="list the notebooks and exit")
    parser.add_argument("--resume", action="store_true",
                        help="skip notebooks that finished in the last run of this preset")
    parser.add_argument("--quiet", action="store_true", help="do not echo notebook output")
    args = parser.parse_args(argv)
    try:
        paths = select(notebooks(), args.only)
        if args.list:
            for path in paths:
                print(f"{path.stem[:2]}  {path.name:<34} {title(path)}")
            return 0
        if args.smoke and args.preset not in (None, "smoke"):
            raise RunnerError("--smoke and --preset disagree; give one of them")
        import torch

        preset = choose_preset("smoke" if args.smoke else args.preset, torch.cuda.is_available())
        check_alloc_env()
        warning = bytecode_warning(torch.__file__)
        if warning:
            print(warning, flush=True)
    except RunnerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    run_root = results.repo_root() / "runs" / preset
    print(f"Running {len(paths)} notebook(s), preset {preset!r}, into {run_root}", flush=True)
    try:
        status = run(paths, preset, run_root, resume=args.resume, echo=not args.quiet)
        code = None
    except KeyboardInterrupt:
        status, code = load_status(run_root), 130
    text, failed = summary(status)
    print(text, flush=True)
    return failed if code is None else code


if __name__ == "__main__":
    sys.exit(main())
