"""Result tables, the run folder and the figure manifest.

A notebook writes everything into its run folder (``runs/<preset>/`` when run by
``./run_all.sh``, ``runs/interactive/`` from JupyterLab): tables to ``data/<name>.csv``,
figures to ``<name>.png``, and a record of both with the environment to
``outputs/<notebook>.json``. Only the runner copies them into ``figures/``, and only after a
successful full-preset run on a CUDA GPU, so a CPU or a failed run never replaces a reference.
Every file is written to a temporary name first and then renamed: an interrupted run cannot
leave half a file.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pandas as pd

from .env import environment, print_report

REQUIRED_COLUMNS = ["method", "batch_size", "seq_len", "repeats", "median_s", "min_s", "max_s",
                    "tokens_per_s", "peak_allocated_bytes", "peak_reserved_bytes",
                    "fragmentation_pct", "device_name"]
RUN_DIR_ENV = "COURSE_RUN_DIR"

_current: dict = {}


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def figures_dir() -> Path:
    return repo_root() / "figures"


def run_dir() -> Path:
    """Where this run writes: ``$COURSE_RUN_DIR`` (set by the runner) or ``runs/interactive``."""
    return Path(os.environ.get(RUN_DIR_ENV) or repo_root() / "runs" / "interactive")


def atomic_write(path: Path, write) -> Path:
    """Call ``write(tmp_path)`` and rename the result onto ``path`` (atomic on one filesystem)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text))


def start_notebook(notebook: str, params, quiet: bool = False) -> dict:
    """Name the notebook this kernel runs (e.g. ``"01_naive_generation"``), record its
    parameters and environment, and print both; later ``save_table``/``save_figure`` calls are
    recorded under it. Returns the environment report."""
    _current.clear()
    _current.update(notebook=notebook, preset=params.get("preset"), skipped=[],
                    params={k: v for k, v in params.items()}, env=environment(), files=[])
    _write_record()
    if not quiet:
        print_report(_current["env"], params)
    return _current["env"]


def _write_record():
    if _current:
        atomic_write_text(run_dir() / "outputs" / f"{_current['notebook']}.json",
                          json.dumps(_current, indent=2, default=str))


def _record(kind: str, path: Path, **extra):
    if not _current:
        raise RuntimeError("call helpers.results.start_notebook(name, params) before saving results")
    rel = str(Path(path).relative_to(run_dir()))
    _current["files"] = [f for f in _current["files"] if f["path"] != rel]
    _current["files"].append({"kind": kind, "path": rel, **extra})
    _write_record()


def record_skip(what: str):
    """Note a GPU-only step that this run skipped (shown in the outputs record)."""
    if _current:
        _current.setdefault("skipped", []).append(what)
        _write_record()


def table_frame(rows) -> pd.DataFrame:
    """Rows (dicts) as a DataFrame whose first columns are the shared schema, in order."""
    frame = pd.DataFrame(list(rows))
    first = [c for c in REQUIRED_COLUMNS if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


def save_table(rows, name: str, require_schema: bool = True) -> pd.DataFrame:
    """Write rows to ``data/<name>.csv`` in the run folder and record it. Measurement tables
    must carry every shared column; set ``require_schema=False`` for other tables."""
    frame = table_frame(rows)
    if frame.empty:
        raise ValueError(f"table {name!r} has no rows")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if require_schema and missing:
        raise ValueError(f"table {name!r} lacks the shared columns {missing}")
    path = run_dir() / "data" / f"{name}.csv"
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))
    _record("table", path, rows=len(frame))
    return frame


def record_figure(path: Path, csv: str | None = None, title: str = ""):
    _record("figure", path, csv=csv, title=title)


def load_table(name: str, prefer: str = "run") -> pd.DataFrame:
    """A table by name: from this run's folder, else the committed ``figures/data``."""
    candidates = [run_dir() / "data" / f"{name}.csv", figures_dir() / "data" / f"{name}.csv"]
    if prefer != "run":
        candidates.reverse()
    for path in candidates:
        if path.exists():
            return pd.read_csv(path)
    raise FileNotFoundError(f"no table {name!r} in {candidates[0].parent} or {candidates[1].parent}")


UNITS = {"median_s": ("median ms", 1e3), "min_s": ("min ms", 1e3), "max_s": ("max ms", 1e3),
         "tokens_per_s": ("tokens/s", 1.0), "peak_allocated_bytes": ("peak alloc MiB", 2**-20),
         "peak_reserved_bytes": ("peak reserved MiB", 2**-20), "fragmentation_pct": ("frag %", 1.0)}


def pretty(frame: pd.DataFrame, columns=None, digits: int = 1) -> pd.DataFrame:
    """A results table in readable units (ms, MiB, %) for display; the CSV keeps raw units."""
    columns = columns or [c for c in ["method", "batch_size", "seq_len", "status", "median_s",
                                      "min_s", "max_s", "tokens_per_s", "peak_allocated_bytes",
                                      "peak_reserved_bytes", "fragmentation_pct"] if c in frame]
    out = frame[columns].copy()
    for column, (label, scale) in UNITS.items():
        if column in out:
            out[column] = (out[column].astype(float) * scale).round(digits)
            out = out.rename(columns={column: label})
    return out.reset_index(drop=True)
