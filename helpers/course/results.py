"""Result tables, the run folder and the figure manifest.

A notebook starts its run with ``run = start_notebook(name, params)`` and writes everything
through ``run`` into its run folder (``runs/<preset>/`` when run by
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
import warnings
from pathlib import Path

import pandas as pd

from .env import environment, print_report

REQUIRED_COLUMNS = ["method", "batch_size", "seq_len", "repeats", "median_s", "min_s", "max_s",
                    "tokens_per_s", "peak_allocated_bytes", "peak_reserved_bytes",
                    "fragmentation_pct", "device_name"]
RUN_DIR_ENV = "COURSE_RUN_DIR"
RUN_ID_ENV = "COURSE_RUN_ID"  # the runner sets it: every notebook of one run records the same id
FAILED = "failed"  # the status of a row whose method raised (helpers.ladder)


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


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
    os.chmod(tmp, 0o644)  # mkstemp makes it 0600; results are read by others too
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text))


SMOKE_MARK = "smoke run: exercises the code, not a measurement"


def mark_smoke(fig) -> None:
    """Stamp a smoke run's figure so that it cannot pass for a measurement: a red banner across
    its top and the same words large, light and diagonal over the plots."""
    width, height = fig.get_size_inches()
    size = min(28.0, 2.5 * width, 5.4 * height)  # the diagonal fits inside the figure
    mark = fig.text(0.5, 0.5, SMOKE_MARK, fontsize=size, color="#d62728", alpha=0.18,
                    rotation=25, ha="center", va="center", weight="bold", zorder=1000,
                    gid="smoke-mark")
    mark.set_in_layout(False)  # never widens a tight bounding box
    fig.text(0.5, 1.0, f"  {SMOKE_MARK.upper()}  ", fontsize=min(12.0, 2.2 * width), color="white",
             weight="bold",
             ha="center", va="bottom", zorder=1001, gid="smoke-banner",
             bbox=dict(boxstyle="square,pad=0.3", facecolor="#d62728", edgecolor="none"))


class MeasurementFailed(RuntimeError):
    """A table was saved with rows whose status is ``failed``: the run must not pass as good."""


class Run:
    """One notebook's run: what it is (name, parameters, environment) and every file it wrote,
    kept in ``outputs/<notebook>.json`` of the run folder. Made by ``start_notebook``."""

    def __init__(self, notebook: str, params):
        self.notebook = notebook
        self.params = dict(params)
        self.env = environment()
        self.record = {"notebook": notebook, "preset": self.params.get("preset"),
                       "params": self.params, "env": self.env, "files": [], "skipped": [],
                       "failed": []}
        if os.environ.get(RUN_ID_ENV):  # the runner's run: 08 reads only tables of the same run
            self.record["run_id"] = os.environ[RUN_ID_ENV]
        self._write_record()

    def _write_record(self):
        atomic_write_text(run_dir() / "outputs" / f"{self.notebook}.json",
                          json.dumps(self.record, indent=2, default=str))

    def _record(self, kind: str, path: Path, **extra):
        rel = str(Path(path).relative_to(run_dir()))
        self.record["files"] = [f for f in self.record["files"] if f["path"] != rel]
        self.record["files"].append({"kind": kind, "path": rel, **extra})
        self._write_record()

    def save_table(self, rows, name: str, require_schema: bool = True) -> pd.DataFrame:
        """Write rows to ``data/<name>.csv`` in the run folder and record it. Measurement tables
        must carry every shared column; set ``require_schema=False`` for other tables. Rows
        with status ``failed`` are written (the evidence) and then raise ``MeasurementFailed``:
        a broken method fails the run instead of vanishing from it."""
        frame = table_frame(rows)
        if frame.empty:
            raise ValueError(f"table {name!r} has no rows")
        missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
        if require_schema and missing:
            raise ValueError(f"table {name!r} lacks the shared columns {missing}")
        path = run_dir() / "data" / f"{name}.csv"
        atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))
        self._record("table", path, rows=len(frame))
        failed = frame[frame["status"] == FAILED] if "status" in frame else frame.iloc[:0]
        if len(failed):
            errors = [f"{r.get('method', '?')}: {r.get('error', '')}" for r in failed.to_dict("records")]
            self.record["failed"] += [f"{name}: {e}" for e in errors]
            self._write_record()
            raise MeasurementFailed(f"table {name!r} has {len(failed)} failed row(s): "
                                    + "; ".join(errors))
        return frame

    def footer(self, batch=None) -> str:
        """GPU, versions, preset and batch size (the sweep's sizes where there is one, or
        ``batch`` for a figure of one point of the sweep), for the foot of every figure."""
        parts = [self.env.get("gpu", "?"), f"torch {self.env.get('torch', '?')}",
                 f"transformers {self.env.get('transformers', '?')}",
                 f"preset {self.params.get('preset')}"]
        sizes = self.params.get("batch_sizes")
        if batch is not None:
            parts.append(f"batch {batch}")
        elif sizes:
            parts.append("batch " + ", ".join(str(b) for b in sizes))
        elif "batch_size" in self.params:
            parts.append(f"batch {self.params['batch_size']}")
        return " · ".join(parts)

    def save_figure(self, fig, name: str, csv: str | None = None, title: str = "",
                    batch=None) -> None:
        """Add the footer (and, on a smoke run, the smoke mark), write ``<name>.png`` into the run
        folder atomically and record it with the CSV behind it (``csv`` is a table name given to
        ``save_table``). ``batch``: the batch size the figure shows, where it is one point of
        the notebook's sweep (the footer names the sweep's sizes otherwise)."""
        fig.text(0.01, -0.02, self.footer(batch), fontsize=8, color="#555555", ha="left", va="top")
        if self.params.get("preset") == "smoke":
            mark_smoke(fig)
        path = run_dir() / f"{name}.png"
        atomic_write(path, lambda tmp: fig.savefig(tmp, format="png"))
        self._record("figure", path, csv=f"data/{csv}.csv" if csv else None, title=title)

    def skip_unless_cuda(self, what: str) -> bool:
        """True (after printing why and recording it) when this run's device is not CUDA:
        GPU-only cells start with ``if not run.skip_unless_cuda("the profiler timeline"):`` so a
        CPU smoke run skips them visibly instead of failing or pretending. The record keeps
        each skip with its device; a skip on a CUDA device never happens, so any found there
        is a bug."""
        device = str(self.params.get("device", "cpu"))
        if device.startswith("cuda"):
            return False
        print(f"SKIPPED on {device}: {what} (needs a CUDA GPU)")
        self.record["skipped"].append({"what": what, "device": device})
        self._write_record()
        return True


def start_notebook(notebook: str, params, quiet: bool = False) -> Run:
    """Start the run of ``notebook`` (e.g. ``"01_naive_generation"``): record its parameters
    and environment, print both (unless ``quiet``), and return the ``Run`` through which the
    notebook saves its tables and figures (``run.save_table``, ``run.save_figure``)."""
    run = Run(notebook, params)
    quiet_known_noise()
    if os.environ.get(RUN_DIR_ENV):  # headless: harness.sweep's progress goes to the run's log
        os.environ["COURSE_PROGRESS_LOG"] = str(run_dir() / f"{notebook}.log")
    if not quiet:
        print_report(run.env, params)
    return run


# Messages PyTorch prints on a healthy run that say nothing to a learner: silenced by message, so
# any other warning still shows (and fails the runner's stderr check of a published run).
KNOWN_NOISE = (
    "Online softmax is disabled on the fly",  # Inductor's note on how it split a reduction
    "Profiler clears events at the end of each cycle",
)


def quiet_known_noise() -> None:
    for message in KNOWN_NOISE:
        warnings.filterwarnings("ignore", message=f"(?s).*{message}")  # (?s): Inductor's text starts with a newline


def table_frame(rows) -> pd.DataFrame:
    """Rows (dicts) as a DataFrame whose first columns are the shared schema, in order."""
    frame = pd.DataFrame(list(rows))
    first = [c for c in REQUIRED_COLUMNS if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


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
         "peak_reserved_bytes": ("peak reserved MiB", 2**-20), "fragmentation_pct": ("unused %", 1.0)}  # reserved but unused


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
