"""The README's results section, rendered from figures/ (manifest, CSVs) and nothing else, so
the numbers a reader sees on the front page are the committed measurements.

``python -m helpers.course.report`` rewrites the block between the README's results markers; the
runner calls it after it promotes a full GPU run, and a test checks that the two agree.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from . import published, results

START, END = "<!-- results:start -->", "<!-- results:end -->"
SUMMARY = "08_results_summary"


def _ms(seconds) -> str:
    return f"{seconds * 1e3:,.0f}" if pd.notna(seconds) else "–"


def render(figures: Path | None = None) -> str:
    """Markdown for the results section, or a note that no GPU run has been committed."""
    figures = figures or results.figures_dir()
    manifest_path = figures / "manifest.json"
    if not manifest_path.exists():
        return "No full-preset GPU run has been committed yet: run `./run_all.sh` on a CUDA GPU.\n"
    manifest = json.loads(manifest_path.read_text())["figures"]
    lines = []
    summary = manifest.get(f"{SUMMARY}.png")
    if summary:
        lines += [f"Measured on an **{summary['gpu']}** (driver {summary['driver']}, CUDA "
                  f"{summary['cuda']}, torch {summary['torch']}, transformers "
                  f"{summary['transformers']}), full preset, batch 32, {summary['date'][:10]}.",
                  "", f"![Every method against the naive loop](figures/{SUMMARY}.png)", ""]
        ladder = figures / "data" / f"{SUMMARY}.csv"
        if ladder.exists():
            frame = pd.read_csv(ladder)
            missing = frame[frame["status"] != "ok"]
            frame = frame[frame["status"] == "ok"].sort_values(["seq_len", "median_s"])
            lines += ["| method | new tokens | median ms | × naive | ÷ floor | × `generate()` static |",
                      "|---|---|---|---|---|---|"]
            for _, r in frame.iterrows():
                lines.append(f"| {r['method']} | {r['seq_len']} | {_ms(r['median_s'])} | "
                             f"{r['speedup_vs_naive']:.2f} | {r['floor_ratio']:.1f} | "
                             f"{r['speedup_vs_generate_static']:.2f} |")
            lines.append("")
            for _, r in missing.iterrows():  # a method that did not run is named, never dropped
                lines.append(f"- **{r['method']}, {r['seq_len']} tokens: {r['status']}**"
                             f"{': ' + str(r['error']) if pd.notna(r.get('error')) else ''}")
            lines += [""] if len(missing) else []
        claims = figures / "data" / f"{SUMMARY}_claims.csv"
        if claims.exists():
            lines += ["**The article's claims on this GPU** (judged by notebook 08 from the data):", "",
                      "| claim | verdict | evidence |", "|---|---|---|"]
            for _, r in pd.read_csv(claims).iterrows():
                lines.append(f"| {r['claim']} | **{r['verdict']}** | {r['evidence']} |")
            lines.append("")
    lines += ["Every figure, with the notebook and the run it came from "
              "(`figures/manifest.json` names GPU, driver, versions, preset and date; "
              "the CSV behind each is in `figures/data/`):", ""]
    for name, entry in manifest.items():
        lines.append(f"- [{entry.get('title') or name}](figures/{name}) — "
                     f"`{entry['notebook']}`, {entry['gpu']}, {entry['date'][:10]}")
    return "\n".join(lines) + "\n"


def update_readme(readme: Path | None = None, figures: Path | None = None) -> bool:
    """Replace the README's results block; True if it changed."""
    readme = readme or results.repo_root() / "README.md"
    text = readme.read_text()
    if START not in text or END not in text:
        raise ValueError(f"{readme} lacks the markers {START} ... {END}")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{render(figures)}{END}{tail}"
    if new != text:
        results.atomic_write_text(readme, new)
    return new != text


# ------------------------------------------------ reference results where a notebook cannot measure

GIB = 2**30
# Columns shown from a notebook's main table, in this order, where present.
KEY_COLUMNS = ["method", "regime", "mode", "allocator", "condition", "batch_size", "seq_len",
               "median_s", "min_s", "max_s", "tokens_per_s", "peak_allocated_bytes",
               "peak_reserved_bytes", "fragmentation_pct", "status"]
SIDE_TABLE_MAX_ROWS = 12  # a notebook's other tables are shown whole up to this size, else named


def cannot_measure(params) -> bool:
    """True where a notebook's own timings say nothing about a GPU: the smoke preset, or a
    device that is not CUDA."""
    return params.get("preset") == "smoke" or not str(params.get("device", "cpu")).startswith("cuda")


def readable(frame):
    """A table in readable units: seconds as ms, bytes as GiB, rounded; columns renamed."""
    out = frame.copy()
    names = {}
    for col in list(out.columns):
        if col.endswith("_s") and not col.endswith("per_s") and pd.api.types.is_numeric_dtype(out[col]):
            out[col] = (out[col] * 1e3).round(2)
            names[col] = col[:-2] + " ms"
        elif col.endswith("_bytes") and pd.api.types.is_numeric_dtype(out[col]):
            out[col] = (out[col] / GIB).round(2)
            names[col] = col[:-6] + " GiB"
        elif pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].round(2)
    return out.rename(columns=names).rename(columns=lambda c: c.replace("_", " "))


def _label(entry) -> str:
    return (f"{entry.get('gpu', '?')} · {entry.get('preset', '?')} preset · "
            f"{str(entry.get('date', '?'))[:10]} · torch {entry.get('torch', '?')} · "
            f"transformers {entry.get('transformers', '?')}")


def reference(notebook: str, figures: Path | None = None) -> list[tuple[str, object]]:
    """The committed GPU result of ``notebook`` (e.g. ``"02_kv_cache"``) as parts to show:
    ``("text", markdown)``, ``("table", frame)`` and ``("image", path)``. A notebook with no
    committed result gets one text part that says so (never an exception)."""
    figures = figures or results.figures_dir()
    stem = notebook.removesuffix(".ipynb")
    manifest_path = figures / "manifest.json"
    if not manifest_path.exists():
        return [("text", f"No committed GPU result for `{stem}`: `{manifest_path}` does not exist "
                         "yet. Run `./run_all.sh` on a CUDA GPU to make one.")]
    manifest = json.loads(manifest_path.read_text())
    mine = lambda section: {name: e for name, e in manifest.get(section, {}).items()
                            if e.get("notebook") == f"{stem}.ipynb"}
    tables, images = mine("tables"), mine("figures")
    if not tables and not images:
        return [("text", f"No committed GPU result for `{stem}` in `figures/manifest.json`. Run "
                         f"`./run_all.sh --only {stem[:2]}` on a CUDA GPU to make one.")]
    first = next(iter({**tables, **images}.values()))
    parts = [("text", f"**Reference result: {_label(first)}.** This machine's own timings above "
                      "only exercise the code (smoke preset or no CUDA GPU); the numbers the "
                      "lesson talks about are these, committed from a full run on a GPU.")]
    main = f"data/{stem}.csv"
    for name in sorted(tables, key=lambda n: n != main):
        path = figures / name
        if not path.exists():
            parts.append(("text", f"`figures/{name}` is listed in the manifest but missing."))
            continue
        frame = pd.read_csv(path)
        if name == main:
            frame = frame[[c for c in KEY_COLUMNS if c in frame]]
        elif len(frame) > SIDE_TABLE_MAX_ROWS:
            parts.append(("text", f"Also committed: `figures/{name}` ({len(frame)} rows)."))
            continue
        parts += [("text", f"`figures/{name}`"), ("table", readable(frame))]
    for name, entry in images.items():
        path = figures / name
        if path.exists():
            parts += [("text", f"*{entry.get('title') or name}* ({_label(entry)})"), ("image", path)]
        else:
            parts.append(("text", f"`figures/{name}` is listed in the manifest but missing."))
    return parts


def show_reference(notebook: str, figures: Path | None = None) -> None:
    """Display ``reference(notebook)`` in a notebook (or print it in a terminal)."""
    try:
        from IPython.display import Image, Markdown, display
    except ImportError:  # plain Python: text only
        for kind, value in reference(notebook, figures):
            print(value.to_string(index=False) if kind == "table" else value)
        return
    for kind, value in reference(notebook, figures):
        if kind == "text":
            display(Markdown(value))
        elif kind == "table":
            display(value.style.hide(axis="index").format(precision=2, thousands=","))
        else:
            display(Image(filename=str(value)))


def main(argv=None) -> int:
    """``python -m helpers.course.report``: the README's results block; with ``--headers``,
    every notebook's "On an <GPU>" cell; with ``--guide``, the instructor guide's times; with
    ``--publish-workshop``, the workshop run's status into docs/ (``helpers.course.published``)."""
    parser = argparse.ArgumentParser(prog="python -m helpers.course.report", description=main.__doc__)
    parser.add_argument("--headers", action="store_true",
                        help="rewrite every notebook's course-runs-on cell from the run's status files")
    parser.add_argument("--guide", action="store_true",
                        help="rewrite the times block of docs/instructor-guide.md")
    parser.add_argument("--publish-workshop", action="store_true",
                        help="copy runs/workshop/status.json to docs/workshop-status.json")
    parser.add_argument("--partial", action="store_true",
                        help="with --publish-workshop: also a run that stopped early, its "
                             "unfinished notebooks named")
    args = parser.parse_args(argv)
    if args.publish_workshop:
        print(f"wrote {published.publish_workshop(partial=args.partial)}")
    if args.headers:
        changed = published.rewrite_headers(published.header_paths(), published.times())
        print(f"{len(changed)} notebook(s) rewritten: {', '.join(p.name for p in changed) or 'none'}")
    if args.guide:
        print("guide updated" if published.update_guide() else "guide already up to date")
    if not (args.headers or args.guide or args.publish_workshop):
        print("README updated" if update_readme() else "README already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
