"""A short slide deck built from the published run: one slide per lesson with its key figure
(``figures/*.png``, from ``figures/manifest.json``) and its key message (the instructor guide's
"Key messages" table), plus a title slide naming the run. One self-contained HTML file (images
inline, no script or style from the network): ``python -m helpers.course.site --slides``.
Arrow keys, Page Up/Down and the space bar move between slides; printing gives one slide a page.
"""
from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

from . import results

GUIDE = Path("docs") / "instructor-guide.md"
MESSAGE = re.compile(r"^\|\s*(\d{2})\s*\|\s*(.+?)\s*\|\s*$")

STYLE = """
html, body { margin: 0; height: 100%; }
body { font: 24px/1.4 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328;
       overflow-y: scroll; scroll-snap-type: y mandatory; }
section.slide { box-sizing: border-box; height: 100vh; padding: 4vh 6vw; scroll-snap-align: start;
                display: flex; flex-direction: column; border-bottom: 1px solid #ddd; }
section.slide h1 { font-size: 1.7em; margin: 0 0 0.4em; }
section.slide h2 { font-size: 1.3em; margin: 0 0 0.3em; color: #555; }
section.slide p.message { font-size: 1.15em; margin: 0 0 0.6em; }
section.slide img { flex: 1; min-height: 0; object-fit: contain; max-width: 100%; }
section.slide footer { font-size: 0.55em; color: #666; margin-top: 0.5em; }
@media print { body { overflow: visible; } section.slide { page-break-after: always; } }
"""

SCRIPT = """
document.addEventListener('keydown', function (event) {
  var slides = Array.prototype.slice.call(document.querySelectorAll('section.slide'));
  var now = slides.findIndex(function (s) { return s.getBoundingClientRect().top > -10; });
  if (now < 0) { now = slides.length - 1; }
  var step = {ArrowRight: 1, ArrowDown: 1, PageDown: 1, ' ': 1, ArrowLeft: -1, ArrowUp: -1, PageUp: -1}[event.key];
  if (!step) { return; }
  event.preventDefault();
  var next = slides[Math.max(0, Math.min(slides.length - 1, now + step))];
  next.scrollIntoView();
  history.replaceState(null, '', '#' + next.id);
});
"""


def key_messages(root: Path | None = None) -> dict:
    """Lesson number -> its key message, from the guide's "Key messages" table."""
    root = Path(root or results.repo_root())
    text = (root / GUIDE).read_text(encoding="utf-8")
    section = text.split("## Key messages", 1)[-1].split("\n## ", 1)[0]
    return {m[1]: m[2] for m in map(MESSAGE.match, section.splitlines()) if m}


def _title(path: Path) -> str:
    for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for line in source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("# ").strip()
    return path.stem


def _image(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _run_line(manifest: dict) -> str:
    runs = manifest.get("runs") or {}
    if len(runs) == 1:
        run = next(iter(runs.values()))
        return (f"Published run {run['id']}: {run.get('gpu', '?')}, commit "
                f"{str(run.get('commit', '?'))[:12]}, {str(run.get('start', ''))[:10]}")
    dates = sorted({str(e.get("date", ""))[:10] for e in manifest.get("figures", {}).values()})
    gpus = sorted({e.get("gpu", "?") for e in manifest.get("figures", {}).values()})
    return f"Published figures: {', '.join(gpus)}, {dates[0] if dates else '?'} to {dates[-1] if dates else '?'}"


def render(root: Path | None = None, title: str = "Fast token generation in PyTorch") -> str:
    """The deck's HTML."""
    root = Path(root or results.repo_root())
    figures = root / "figures"
    manifest_path = figures / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    messages = key_messages(root)
    run_line = _run_line(manifest)
    slides = [f'<section class="slide" id="title"><h1>{html.escape(title)}</h1>'
              f'<p class="message">One decode step at a time: from the naive loop to the floor '
              f'set by reading the weights, lesson by lesson.</p>'
              f'<footer>{html.escape(run_line)}</footer></section>']
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        number = path.stem[:2]
        figs = {name: e for name, e in manifest.get("figures", {}).items()
                if e.get("notebook") == path.name and (figures / name).exists()}
        key = f"{path.stem}.png" if f"{path.stem}.png" in figs else next(iter(figs), None)
        image = (f'<img src="{_image(figures / key)}" alt="{html.escape(figs[key].get("title") or key)}">'
                 if key else "<p>No published figure for this lesson yet.</p>")
        caption = (f"figures/{key} · {figs[key].get('gpu', '?')} · {str(figs[key].get('date', ''))[:10]}"
                   if key else "")
        message = messages.get(number, "")
        slides.append(f'<section class="slide" id="lesson-{number}"><h2>Lesson {number}</h2>'
                      f'<h1>{html.escape(_title(path))}</h1>'
                      f'<p class="message">{html.escape(message)}</p>{image}'
                      f'<footer>{html.escape(caption)}</footer></section>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<link rel=\"icon\" href=\"data:,\"><title>{html.escape(title)}: slides</title>"
            f"<style>{STYLE}</style></head>\n<body>\n" + "\n".join(slides)
            + f"\n<script>{SCRIPT}</script>\n</body></html>\n")


def write(out: Path, root: Path | None = None) -> Path:
    """Write the deck to ``out`` (a file path)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(root), encoding="utf-8")
    return out
