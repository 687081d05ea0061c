"""The published run: which run ``figures/`` comes from, its status times, and the text rendered
from them (every notebook's "On an H100" line and the instructor guide's table of times).

A full run on a CUDA GPU has one identity (``run_identity``): an id made of its UTC start time and
short commit, the commit, GPU, CPU, start and end. ``--resume`` keeps it. The runner writes it
into ``runs/<preset>/status.json`` (key ``_run``), names it in every status entry, in every
manifest entry it publishes and in the metadata of every published notebook
(``metadata.course_run``), and copies the run's status file to ``figures/run-status.json``.
``one_run_problems`` says whether ``figures/`` is one run (``tests/test_published_run.py``).

A workshop run is not published by the runner (an instructor's run must not dirty the
repository); ``python -m helpers.course.report --publish-workshop`` copies its status and the
lines the guide shows into ``docs/workshop-status.json``.

    python -m helpers.course.report --headers   # every notebook's "On an H100" cell
    python -m helpers.course.report --guide     # the times block of docs/instructor-guide.md
"""
from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import torch

from . import results
from .env import cpu_model, host_id
from .verdicts import printed_lines

RUN_KEY = "_run"  # the status file's key for the run's identity
RUN_STATUS = "run-status.json"  # in figures/: the published full run's status file
WORKSHOP_STATUS = Path("docs") / "workshop-status.json"
EARLIER_TIMES = Path("docs") / "h100-run-times.json"  # times of earlier runs, until a run is published
GUIDE = Path("docs") / "instructor-guide.md"
HEADER_TAG = "course-runs-on"
GUIDE_START, GUIDE_END = "<!-- times:start -->", "<!-- times:end -->"
CLAIMS_START, CLAIMS_END = "<!-- claims:start -->", "<!-- claims:end -->"
LINES_START, LINES_END = "<!-- workshop-lines:start -->", "<!-- workshop-lines:end -->"
ONE_LINE = "In one line:"  # every lesson's closing print starts so
CLAIMS = Path("figures") / "data" / "08_results_summary_claims.csv"
WORKSHOP_CLAIMS = Path("docs") / "workshop-claims.csv"
GIB = 2**30


# ---------------------------------------------------------------- the run's identity

def git_commit(repo: Path | None = None) -> str:
    """``$COURSE_COMMIT`` when set (whoever copied the tree to another machine names the commit
    it holds: a copy can carry a stale ``.git``, as the lent GPU hosts' copies do), else the
    checked-out commit (``-dirty`` when tracked files differ from it), else ``unknown``."""
    if os.environ.get("COURSE_COMMIT"):
        return os.environ["COURSE_COMMIT"]
    repo = repo or results.repo_root()
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode == 0 and head.stdout.strip():
            dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                    "--untracked-files=no"], capture_output=True, text=True, timeout=10)
            return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def _gpu_name() -> str:
    try:
        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except Exception:  # noqa: BLE001 - a broken driver must not stop the run from starting
        return "unknown"


def run_identity(status: dict, resume: bool = False, now: datetime.datetime | None = None) -> dict:
    """This run's identity. ``--resume`` keeps the one in ``status`` (the run it resumes, its end
    cleared, the commit it resumes at where that is not the run's, and the machine it resumes on
    where that is not the one it started on: ``resumed_on_hosts``, which ``one_run_problems``
    refuses); otherwise a new one: id ``<UTC start>-<short commit>``, commit, GPU, CPU, host,
    start."""
    old = status.get(RUN_KEY)
    if resume and isinstance(old, dict) and old.get("id"):
        when, commit = _now(now), git_commit()
        run = {**old, "end": None, "resumed": [*old.get("resumed", []), when]}
        if commit != old.get("commit"):  # the sources moved between the calls: say so
            run["resumed_at_commits"] = {**old.get("resumed_at_commits", {}), when: commit}
        host = host_id()
        if old.get("host") and host != old["host"]:  # another machine: not one run's timings
            run["resumed_on_hosts"] = {**old.get("resumed_on_hosts", {}), when: host}
        return run
    now = now or datetime.datetime.now(datetime.timezone.utc)
    commit = git_commit()
    return {"id": f"{now:%Y%m%dT%H%M%SZ}-{commit[:7]}", "commit": commit, "gpu": _gpu_name(),
            "cpu": cpu_model(), "host": host_id(), "start": _now(now), "end": None}


def _now(now: datetime.datetime | None = None) -> str:
    return (now or datetime.datetime.now(datetime.timezone.utc)).isoformat(timespec="seconds")


def peak_gib(run_root: Path, stem: str) -> float | None:
    """The largest ``peak_allocated_bytes`` of the tables a notebook wrote (GiB), or None."""
    try:
        record = json.loads((Path(run_root) / "outputs" / f"{stem}.json").read_text())
    except (OSError, ValueError):
        return None
    peaks = []
    for entry in record.get("files", []):
        if entry.get("kind") != "table":
            continue
        try:
            frame = pd.read_csv(Path(run_root) / entry["path"])
        except (OSError, ValueError):
            continue
        if "peak_allocated_bytes" in frame:
            column = pd.to_numeric(frame["peak_allocated_bytes"], errors="coerce").dropna()
            peaks += [float(column.max())] if len(column) else []
    return round(max(peaks) / GIB, 1) if peaks else None


# The lessons link the repository's docs as "../docs/..." from notebooks/; their published
# copies sit one folder deeper, in figures/notebooks/.
LESSON_LINK, PUBLISHED_LINK = "](../docs/", "](../../docs/"


def relink(nb: dict) -> dict:
    """A lesson's Markdown links (images, docs) rewritten to resolve from figures/notebooks/."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if LESSON_LINK in text:
                cell["source"] = text.replace(LESSON_LINK, PUBLISHED_LINK).splitlines(keepends=True)
    return nb


def stamp_notebook(path: Path, run: dict, preset: str) -> None:
    """Write the run's identity into a published notebook's metadata (``course_run``), and
    rewrite its links to the docs for the folder it is published in (``relink``)."""
    nb = relink(json.loads(Path(path).read_text()))
    nb.setdefault("metadata", {})["course_run"] = {
        "id": run["id"], "commit": run["commit"], "gpu": run["gpu"], "cpu": run["cpu"],
        "preset": preset}
    results.atomic_write_text(path, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def record_run(manifest: dict, run: dict, notebook: str, seconds=None) -> None:
    """Name ``run`` in the manifest: its identity under ``runs``, the notebook's entry under
    ``notebooks``; runs no entry names any more are dropped."""
    manifest.setdefault("runs", {})[run["id"]] = {
        k: run.get(k) for k in ("id", "commit", "gpu", "cpu", "start", "end")}
    manifest["runs"][run["id"]].update(
        {k: run[k] for k in ("host", "resumed_on_hosts") if run.get(k)})  # mixed_hosts reads them
    manifest.setdefault("notebooks", {})[notebook] = {"run": run["id"], "commit": run["commit"],
                                                      "gpu": run["gpu"]}
    manifest["notebooks"] = dict(sorted(manifest["notebooks"].items()))
    named = {e.get("run") for section in ("figures", "tables", "notebooks")
             for e in manifest.get(section, {}).values()}
    manifest["runs"] = {k: v for k, v in manifest["runs"].items() if k in named}


def publish_status(run_root: Path, figures: Path | None = None) -> Path | None:
    """Copy the run's status file to ``figures/run-status.json`` and write the run's end into
    the manifest; None when nothing of this run was published."""
    figures = Path(figures or results.figures_dir())
    status_path = Path(run_root) / "status.json"
    manifest_path = figures / "manifest.json"
    if not status_path.exists() or not manifest_path.exists():
        return None
    status = json.loads(status_path.read_text())
    run = status.get(RUN_KEY) or {}
    manifest = json.loads(manifest_path.read_text())
    if run.get("id") not in manifest.get("runs", {}):
        return None
    manifest["runs"][run["id"]]["end"] = run.get("end")
    results.atomic_write_text(manifest_path, json.dumps(manifest, indent=2) + "\n")
    return results.atomic_write_text(figures / RUN_STATUS, json.dumps(status, indent=2) + "\n")


# ---------------------------------------------------------------- is figures/ one run?

def mixed_hosts(run: dict) -> list[str]:
    """Why a run's notebooks are not all from the machine it started on (empty when they are):
    a ``--resume`` on another lent machine of the same GPU model keeps the run id, but its host
    times the eager loops at another speed, and lessons that compare across notebooks would
    compare two machines."""
    return [f"run {run.get('id')}: resumed at {when} on another machine (host {host}, "
            f"started on {run.get('host')})" for when, host in (run.get("resumed_on_hosts") or {}).items()]


def one_run_problems(figures: Path | None = None) -> list[str]:
    """Why the published set in ``figures/`` is not one run (empty when it is): the manifest
    names exactly one run with its commit, GPU, CPU, start and end; every figure, table and
    notebook entry names it; every published notebook carries it in its metadata; the
    published status file is that run's."""
    figures = Path(figures or results.figures_dir())
    path = figures / "manifest.json"
    if not path.exists():
        return [f"{path} does not exist"]
    manifest = json.loads(path.read_text())
    problems = []
    runs = manifest.get("runs") or {}
    if len(runs) != 1:
        problems.append(f"the manifest names {len(runs)} runs ({sorted(runs)}), not one")
    run_id, run = next(iter(runs.items())) if runs else (None, {})
    for key in ("commit", "gpu", "cpu", "start", "end"):
        if runs and not run.get(key):
            problems.append(f"run {run_id}: no {key} recorded")
    problems += mixed_hosts(run)
    for section in ("figures", "tables", "notebooks"):
        for name, entry in manifest.get(section, {}).items():
            if entry.get("run") != run_id:
                problems.append(f"{section} entry {name}: run {entry.get('run')!r}, not {run_id!r}")
            for key in ("commit", "gpu"):
                if key in entry and run and entry[key] != run.get(key):
                    problems.append(f"{section} entry {name}: {key} {entry[key]!r}, not {run.get(key)!r}")
    published = sorted((figures / "notebooks").glob("*.ipynb"))
    listed = set(manifest.get("notebooks", {}))
    for nb_path in published:
        meta = json.loads(nb_path.read_text()).get("metadata", {}).get("course_run") or {}
        if meta.get("id") != run_id:
            problems.append(f"notebooks/{nb_path.name}: run {meta.get('id')!r}, not {run_id!r}")
        elif meta.get("commit") != run.get("commit") or meta.get("gpu") != run.get("gpu"):
            problems.append(f"notebooks/{nb_path.name}: commit or GPU differ from the run's")
        if nb_path.name not in listed:
            problems.append(f"notebooks/{nb_path.name} has no entry in the manifest's notebooks")
    for name in {e.get("notebook") for s in ("figures", "tables")
                 for e in manifest.get(s, {}).values()} - {p.name for p in published}:
        problems.append(f"{name} has figures or tables but no published notebook")
    status_path = figures / RUN_STATUS
    if not status_path.exists():
        problems.append(f"{RUN_STATUS} (the run's status times) is missing")
    else:
        status = json.loads(status_path.read_text())
        if (status.get(RUN_KEY) or {}).get("id") != run_id:
            problems.append(f"{RUN_STATUS} is run {(status.get(RUN_KEY) or {}).get('id')!r}, not {run_id!r}")
        for nb_path in published:
            entry = status.get(nb_path.stem) or {}
            if entry.get("status") != "ok" or entry.get("run") != run_id:
                problems.append(f"{RUN_STATUS}: {nb_path.stem} did not finish ok in run {run_id!r}")
    return problems


# ---------------------------------------------------------------- the times, from status files

def _entries(status: dict) -> dict:
    return {k: v for k, v in status.items() if not k.startswith("_") and isinstance(v, dict)}


def _earlier(root: Path) -> tuple[dict, dict, str]:
    """Full and workshop times from ``docs/h100-run-times.json`` (several earlier runs): each
    notebook's latest successful full time, and the cold-cache workshop run."""
    data = json.loads((root / EARLIER_TIMES).read_text())
    full, workshop = {}, {}
    for name, status in data.get("runs", {}).items():
        target = full if name.startswith("full") else workshop if name.startswith(
            "workshop, cold") else None
        if target is None:
            continue
        for stem, entry in _entries(status).items():
            if entry.get("status") == "ok":
                target[stem] = {**target.get(stem, {}), **entry}
    return full, workshop, f"{data.get('gpu', 'H100')} (earlier runs, {EARLIER_TIMES.as_posix()})"


def times(root: Path | None = None) -> dict:
    """Per notebook stem: full seconds, full peak GiB, workshop seconds (None where unknown),
    from the published run's status files, else from the earlier runs' times; and the source."""
    root = Path(root or results.repo_root())
    full_path, workshop_path = root / "figures" / RUN_STATUS, root / WORKSHOP_STATUS
    source = []
    if full_path.exists():
        status = json.loads(full_path.read_text())
        run = status.get(RUN_KEY) or {}
        full = {k: v for k, v in _entries(status).items() if v.get("status") == "ok"
                and v.get("run", run.get("id")) == run.get("id")}
        gpu = run.get("gpu", "?")
        source.append(f"full: run {run.get('id', '?')} on {gpu} (figures/{RUN_STATUS})")
    else:
        full, _, label = _earlier(root)
        gpu = label
        source.append(f"full: {label}")
    if workshop_path.exists():
        status = json.loads(workshop_path.read_text())
        run = status.get(RUN_KEY) or {}
        workshop = {k: v for k, v in _entries(status).items() if v.get("status") == "ok"}
        source.append(f"workshop: run {run.get('id', '?')} on {run.get('gpu', '?')} "
                      f"({WORKSHOP_STATUS.as_posix()})")
    else:
        _, workshop, label = _earlier(root)
        source.append(f"workshop: {label}")
    peaks = _published_peaks(root)
    allocated, reserved = (peaks[column] for column in PEAKS)
    stems = sorted(set(full) | set(workshop))
    table = {s: {"full_s": (full.get(s) or {}).get("seconds"),
                 "peak_gib": (full.get(s) or {}).get("peak_allocated_gib", allocated.get(s)),
                 "reserved_gib": reserved.get(s),
                 "workshop_s": (workshop.get(s) or {}).get("seconds")} for s in stems}
    return {"notebooks": table, "source": source, "gpu": gpu, "one_run": full_path.exists()}


PEAKS = ("peak_allocated_bytes", "peak_reserved_bytes")


def _published_peaks(root: Path) -> dict:
    """Each notebook's largest peak (GiB) of each column in ``PEAKS`` (allocated, and reserved by
    the caching allocator) in its published tables (figures/data), each table read once:
    ``{column: {stem: gib}}``."""
    peaks = {column: {} for column in PEAKS}
    path = root / "figures" / "manifest.json"
    if not path.exists():
        return peaks
    for name, entry in json.loads(path.read_text()).get("tables", {}).items():
        try:
            frame = pd.read_csv(root / "figures" / name)
        except (OSError, ValueError):
            continue
        stem = entry["notebook"].removesuffix(".ipynb")
        for column_name, found in peaks.items():
            if column_name in frame:
                column = pd.to_numeric(frame[column_name], errors="coerce").dropna()
                if len(column):
                    found[stem] = max(found.get(stem, 0.0), round(float(column.max()) / GIB, 1))
    return peaks


def short_gpu(name: str) -> str:
    """"NVIDIA H100 80GB HBM3" -> "H100" (the model the sentence names)."""
    match = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Za-z]*)\b", name or "")
    return match[1] if match else (name or "GPU")


def _seconds(value) -> str:
    return f"{value:.0f}" if isinstance(value, (int, float)) else "?"


RESERVE_TAUGHT = ("01_", "02_", "03_")  # lessons whose text reads what the allocator reserved


def header_line(stem: str, info: dict) -> str:
    """The one line of a notebook's ``course-runs-on`` cell."""
    row = info["notebooks"].get(stem, {})
    gpu = short_gpu(info.get("gpu", ""))
    needs = "**Needs** a CUDA GPU to measure; without one the smoke preset runs on the CPU."
    if row.get("full_s") is None:
        return f"**On an {gpu}**: not timed in the published run yet. {needs}"
    # the whole notebook's peak, not one loop's: the fifteenth review read it against a panel's
    # reserved too, where it differs: what the allocator held decides whether a card fits (the
    # twenty-third review: 02's naive loop allocated 2.1 GiB at once but reserved 55)
    reserved = row.get("reserved_gib")
    # twenty-fourth and -fifth: "40.9 GiB reserved next to 2.7 allocated, unexplained", and a
    # pointer to lesson 03 did not explain 08's or 02's: only where the lesson reads the reserve
    # round 26: "2.1 GiB allocated (54.9 reserved)" in 02 read as the KV cache's cost, and 04's
    # 2.5 GiB as its static cache's: the header names whose peak it is, the hungriest loop's;
    # round 27: 01's "4.3 GiB" hid the 78 GiB its naive loop held (its Memory note reads it)
    held = (f"; the allocator reserving {reserved:.1f} GiB"
            if stem[:3] in RESERVE_TAUGHT and reserved is not None and row.get("peak_gib") is not None
            and f"{reserved:.1f}" != f"{row['peak_gib']:.1f}" else "")
    # round 31: 04's "hungriest loop ... 2.4 GiB" matched nothing the lesson prints: its dynamic
    # loop's trials ran beside the static cache it keeps for reuse; the peak is the notebook's
    # whole allocation, the weights and every live tensor, whichever loop was running
    peak = (f", at most about {row['peak_gib']:.1f} GiB of GPU memory allocated at once (the weights "
            f"and every live tensor together{held})" if row.get("peak_gib") is not None else "")
    workshop = (f"; {_seconds(row['workshop_s'])} s in the workshop preset"
                if row.get("workshop_s") is not None else "; the workshop preset is not timed yet")
    # round 28: "(this run)" read as the copy in hand, a workshop run's too
    which = "the published run" if info.get("one_run") else "the published runs"
    return (f"**On an {gpu}** ({which}): {_seconds(row['full_s'])} s in the full preset{peak}"
            f"{workshop}. {needs}")


def rewrite_headers(paths, info: dict) -> list[Path]:
    """Rewrite the ``course-runs-on`` cell of every notebook in ``paths``; returns those changed.
    A notebook without the cell is left alone."""
    changed = []
    for path in paths:
        path = Path(path)
        nb = json.loads(path.read_text())
        stem = path.stem.removesuffix("_solutions")
        touched = False
        for cell in nb.get("cells", []):
            if HEADER_TAG in cell.get("metadata", {}).get("tags", []):
                line = header_line(stem, info)
                old = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                if old != line:
                    cell["source"] = line
                    touched = True
        if touched:
            results.atomic_write_text(path, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            changed.append(path)
    return changed


def header_paths(root: Path | None = None) -> list[Path]:
    root = Path(root or results.repo_root())
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")) + \
        sorted((root / "figures" / "notebooks").glob("[0-9][0-9]_*.ipynb"))


# ---------------------------------------------------------------- the guide's block

BUDGET = {"full": 1200, "workshop": 300, "workshop_each": 60}


def guide_block(info: dict, root: Path | None = None) -> str:
    """Markdown for the guide's times block: per notebook full and workshop seconds and peak
    memory, the totals against the budgets, and where the numbers come from."""
    root = Path(root or results.repo_root())
    titles = {}
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        titles[path.stem] = path.stem[3:].replace("_", " ")
    rows = info["notebooks"]
    lines = ["| notebook | full, s | peak GiB (full) | workshop, s |", "|---|---|---|---|"]
    total_full = total_workshop = 0.0
    for stem in sorted(set(rows) | set(titles)):
        row = rows.get(stem, {})
        total_full += row.get("full_s") or 0
        total_workshop += row.get("workshop_s") or 0
        over = " (over 60 s)" if (row.get("workshop_s") or 0) > BUDGET["workshop_each"] else ""
        peak = f"{row['peak_gib']:.1f}" if row.get("peak_gib") is not None else "–"
        full = _seconds(row.get("full_s")) if row.get("full_s") is not None else "–"
        workshop = _seconds(row.get("workshop_s")) if row.get("workshop_s") is not None else "–"
        lines.append(f"| {stem[:2]} {titles.get(stem, stem[3:].replace('_', ' '))} | {full} | "
                     f"{peak} | {workshop}{over} |")
    stems = sorted(titles)

    def untimed(key):  # a total over fewer notebooks says which ones it leaves out
        gone = [s[:2] for s in stems if rows.get(s, {}).get(key) is None]
        return f"; without {', '.join(gone)}: not timed" if gone else ""

    lines.append(f"| **total** | **{total_full:.0f}** ({total_full / 60:.1f} min; budget "
                 f"{BUDGET['full']}{untimed('full_s')}) | | **{total_workshop:.0f}** "
                 f"({total_workshop / 60:.1f} min; budget {BUDGET['workshop']}"
                 f"{untimed('workshop_s')}) |")
    lines += ["", "Seconds of wall clock per notebook, kernel start included, from "
              + "; ".join(info["source"]) + ". Rendered by "
              "`python -m helpers.course.report --guide`; do not edit by hand."]
    return "\n".join(lines) + "\n"


def replace_block(text: str, start: str, end: str, block: str) -> str:
    if start not in text or end not in text:
        raise ValueError(f"the markers {start} ... {end} are missing")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{block}{end}{tail}"


def one_line(notebook: Path) -> str | None:
    """The last "In one line: ..." that an executed notebook printed (its answer in a sentence)."""
    if not notebook.exists():
        return None
    said = [line for line in printed_lines(notebook) if line.startswith(ONE_LINE)]
    return said[-1][len(ONE_LINE):].strip() if said else None


def lines_block(root: Path | None = None) -> str:
    """Markdown: what each lesson printed as its answer in the committed workshop run."""
    root = Path(root or results.repo_root())
    path = root / WORKSHOP_STATUS
    if not path.exists():
        return "No workshop run committed yet.\n"
    status = json.loads(path.read_text())
    run, said = status.get(RUN_KEY) or {}, status.get("_one_line") or {}
    lines = [f"What each lesson printed as its answer (\"In one line\") in the workshop run "
             f"{run.get('id', '?')} on {run.get('gpu', '?')}, commit {str(run.get('commit', '?'))[:7]}:", ""]
    for stem in sorted(p.stem for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        text = said.get(stem) or ("did not finish in that run" if stem in status.get("_unfinished", [])
                                  else "no answer line recorded")
        lines.append(f"- **{stem[:2]}**: {text}")
    lines += ["", "Rendered from `docs/workshop-status.json` by "
              "`python -m helpers.course.report --guide`; do not edit by hand."]
    return "\n".join(lines) + "\n"


def update_guide(guide: Path | None = None, root: Path | None = None) -> bool:
    """Rewrite the guide's times block from the status files; True if it changed."""
    root = Path(root or results.repo_root())
    guide = Path(guide or root / GUIDE)
    text = guide.read_text()
    new = replace_block(text, GUIDE_START, GUIDE_END, guide_block(times(root), root))
    if CLAIMS_START in new:
        new = replace_block(new, CLAIMS_START, CLAIMS_END, claims_block(root))
    if LINES_START in new:
        new = replace_block(new, LINES_START, LINES_END, lines_block(root))
    if new != text:
        results.atomic_write_text(guide, new)
    return new != text


def claims_block(root: Path | None = None) -> str:
    """Markdown: every claim 08 judges, its verdict in the published full run and in the
    committed workshop run (``docs/workshop-claims.csv``), side by side."""
    root = Path(root or results.repo_root())
    read = lambda path: (pd.read_csv(root / path).set_index("claim")["verdict"].to_dict()
                         if (root / path).exists() else {})
    full, workshop = read(CLAIMS), read(WORKSHOP_CLAIMS)
    if not full and not workshop:
        return "No claims table committed yet.\n"
    note = "" if workshop else " (no workshop run committed yet)"
    lines = ["| claim | full run | workshop run |", "|---|---|---|"]
    for claim in dict.fromkeys([*full, *workshop]):
        lines.append(f"| {claim} | {full.get(claim, '–')} | {workshop.get(claim, '–')}{note if not workshop else ''} |")
    lines += ["", f"From `{CLAIMS.as_posix()}` and `{WORKSHOP_CLAIMS.as_posix()}`; rendered by "
              "`python -m helpers.course.report --guide`."]
    return "\n".join(lines) + "\n"


def publish_workshop(run_root: Path | None = None, root: Path | None = None,
                     partial: bool = False) -> Path:
    """Copy a finished workshop run's status (``runs/workshop/status.json``) to
    ``docs/workshop-status.json``. Refused unless it ran on a CUDA GPU and every notebook of the
    course finished ok in it; with ``partial``, a run that stopped early is published too, its
    unfinished notebooks named in the copy (``_unfinished``) and in the guide's total."""
    root = Path(root or results.repo_root())
    run_root = Path(run_root or root / "runs" / "workshop")
    status = json.loads((run_root / "status.json").read_text())
    run = status.get(RUN_KEY) or {}
    entries = _entries(status)
    stems = {p.stem for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    missing = sorted(s for s in stems if (entries.get(s) or {}).get("status") != "ok"
                     or (entries[s].get("run") or run.get("id")) != run.get("id"))
    if (missing and not (partial and len(missing) < len(stems))) or \
            run.get("gpu", "cpu") in ("cpu", "unknown"):
        raise ValueError(f"{run_root}/status.json is not a whole workshop run on a CUDA GPU "
                         f"(GPU {run.get('gpu')!r}; not finished ok: {missing or 'none'})")
    status = {k: v for k, v in status.items() if k not in ("_unfinished", "_one_line")}
    if missing:
        status["_unfinished"] = missing
    status["_one_line"] = {stem: line for stem in sorted(stems - set(missing))
                           if (line := one_line(run_root / f"{stem}.ipynb"))}
    claims = run_root / "data" / "08_results_summary_claims.csv"
    if claims.exists():
        results.atomic_write(root / WORKSHOP_CLAIMS, lambda tmp: tmp.write_bytes(claims.read_bytes()))
    return results.atomic_write_text(root / WORKSHOP_STATUS, json.dumps(status, indent=2) + "\n")
