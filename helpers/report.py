"""The README's results section, rendered from figures/ (manifest, CSVs) and nothing else, so
the numbers a reader sees on the front page are the committed measurements.

``python -m helpers.report`` rewrites the block between the README's results markers; the
runner calls it after it promotes a full GPU run, and a test checks that the two agree.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from . import results

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
            frame = frame[frame["status"] == "ok"].sort_values(["seq_len", "median_s"])
            lines += ["| method | new tokens | median ms | × naive | ÷ floor | × `generate()` static |",
                      "|---|---|---|---|---|---|"]
            for _, r in frame.iterrows():
                lines.append(f"| {r['method']} | {r['seq_len']} | {_ms(r['median_s'])} | "
                             f"{r['speedup_vs_naive']:.1f} | {r['floor_ratio']:.1f} | "
                             f"{r['speedup_vs_generate_static']:.2f} |")
            lines.append("")
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


if __name__ == "__main__":
    print("README updated" if update_readme() else "README already up to date")
    sys.exit(0)
