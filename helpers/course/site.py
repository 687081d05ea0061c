"""The course website, built offline: ``./run_all.sh --site [--out site]`` (which runs
``python -m helpers.course.site`` with the project's interpreter).

Every lesson and its solutions become an HTML page (nbconvert's ``lab`` template, without its
CDN scripts, so a page needs nothing from the network). A lesson's page comes from its published
run (``figures/notebooks/<stem>.ipynb``, executed on a GPU, with outputs) where one is committed,
else from the teaching notebook in ``notebooks/`` under a banner that says so. The index page is
the README; Markdown files the pages link to (the instructor guide, troubleshooting) become pages
too, and every other file a page links to or shows (figures, diagrams, data) is copied beside
it, so every internal link of the site resolves. Each lesson's page links to the previous and the
next lesson, at its top and its foot.
"""
from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
from pathlib import Path, PurePosixPath

from . import results

ROOT = results.repo_root()
PUBLISHED = ROOT / "figures" / "notebooks"
DEFAULT_OUT = ROOT / "site"
TITLE = "Fast token generation in PyTorch"

# The lab template without what it would fetch from a CDN: require.js, MathJax, mermaid and
# the widget manager (no lesson uses LaTeX, diagrams in mermaid or live widgets).
TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}<link rel="icon" href="data:,"><style>""" + """
.course-nav { font: 14px sans-serif; padding: 8px 16px; background: #f3f4f6; border-bottom: 1px solid #ddd; }
.course-pager { font: 14px sans-serif; display: flex; justify-content: space-between; gap: 16px;
                padding: 12px 16px; border-top: 1px solid #ddd; margin-top: 24px; }
.course-banner { font: 14px sans-serif; margin: 12px 16px; padding: 10px 14px; background: #fff7e0;
                 border-left: 4px solid #e0a800; }
</style>{%- endblock extra_css -%}
{%- block body_header -%}{{ super() }}{{ resources.course_header }}{%- endblock body_header -%}
{%- block body_footer -%}{{ resources.course_footer }}{{ super() }}{%- endblock body_footer -%}
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{title}</title>
<style>
body {{ font: 16px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 980px;
       margin: 0 auto; padding: 0 16px 48px; color: #1f2328; }}
img {{ max-width: 100%; }}
table {{ border-collapse: collapse; margin: 12px 0; font-size: 14px; }}
th, td {{ border: 1px solid #d0d7de; padding: 4px 8px; }}
code, pre {{ background: #f6f8fa; }}
pre {{ padding: 8px; overflow-x: auto; }}
.course-nav {{ font-size: 14px; padding: 8px 0; border-bottom: 1px solid #ddd; }}
</style></head>
<body>{nav}
{body}
</body></html>
"""

ATTR = re.compile(r'(?P<attr>\b(?:href|src))="(?P<url>[^"]*)"')


def lessons() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def solutions() -> list[Path]:
    return sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))


def _heading(notebook: Path) -> str:
    """A notebook's first Markdown heading (its title), else its file name."""
    from .runner import RunnerError, title

    try:
        return title(notebook)
    except RunnerError:
        return notebook.stem


def page_of(source: Path) -> PurePosixPath:
    """Where a repository file's page lands in the site (repository-relative, .ipynb/.md -> .html)."""
    rel = PurePosixPath(source.resolve().relative_to(ROOT).as_posix())
    if rel.parts[:2] == ("figures", "notebooks"):  # a published copy stands in for its lesson
        rel = PurePosixPath("notebooks", rel.name)
    if rel.as_posix() == "README.md":
        return PurePosixPath("index.html")
    return rel.with_suffix(".html") if rel.suffix in (".ipynb", ".md") else rel


def _relative(target: PurePosixPath, page: PurePosixPath) -> str:
    up = len(page.parent.parts)
    return "/".join([".."] * up + list(target.parts)) if up else target.as_posix()


class Site:
    """One build: pages written so far, and Markdown files still to render."""

    def __init__(self, out: Path):
        self.out = out
        self.pending: list[Path] = []
        self.done: set[PurePosixPath] = set()
        self.order = [(page_of(nb), _heading(nb)) for nb in lessons()]  # previous/next links

    def link(self, url: str, source_dir: Path, page: PurePosixPath) -> str:
        """``url`` as seen from ``page``: notebooks and Markdown point at their pages, any other
        repository file is copied into the site; external links and anchors are left alone."""
        if not url or url.startswith(("#", "data:", "mailto:")) or re.match(r"^[a-z][a-z0-9+.-]*:", url):
            return url
        path, _, fragment = url.partition("#")
        target = (source_dir / path).resolve()
        try:
            target.relative_to(ROOT)
        except ValueError:
            return url
        if not target.exists():
            return url  # left broken on purpose: the link test names it
        if target.suffix == ".ipynb":
            lesson = ROOT / "notebooks" / target.name
            solution = ROOT / "notebooks" / "solutions" / target.name
            target = next((p for p in (lesson, solution) if p.exists()), target)
        elif target.suffix == ".md":
            self.pending.append(target)
        elif target.is_file():
            dest = self.out / page_of(target)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(target, dest)
        new = _relative(page_of(target), page)
        return f"{new}#{fragment}" if fragment else new

    def rewrite(self, text: str, source_dir: Path, page: PurePosixPath) -> str:
        return ATTR.sub(lambda m: f'{m["attr"]}="{self.link(html.unescape(m["url"]), source_dir, page)}"',
                        text)

    def nav(self, page: PurePosixPath) -> str:
        return (f'<nav class="course-nav"><a href="{_relative(PurePosixPath("index.html"), page)}">'
                f'{TITLE}</a>{self.pager(page, "header")}</nav>')

    def pager(self, page: PurePosixPath, where: str) -> str:
        """A lesson's links to the previous and the next lesson (nothing on other pages)."""
        pages = [p for p, _ in self.order]
        if page not in pages:
            return ""
        i = pages.index(page)
        links = []
        if i > 0:
            links.append(f'<a rel="prev" href="{_relative(pages[i - 1], page)}">'
                         f'&larr; {html.escape(self.order[i - 1][1])}</a>')
        else:
            links.append("<span></span>")
        if i + 1 < len(pages):
            links.append(f'<a rel="next" href="{_relative(pages[i + 1], page)}">'
                         f'{html.escape(self.order[i + 1][1])} &rarr;</a>')
        if where == "header":
            return f' &middot; lesson {i + 1} of {len(pages)}'
        return f'<nav class="course-pager">{"".join(links)}</nav>'

    def write(self, page: PurePosixPath, text: str) -> None:
        dest = self.out / page
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        self.done.add(page)

    def notebook(self, teaching: Path) -> PurePosixPath:
        import jinja2
        import nbformat
        from nbconvert import HTMLExporter

        published = PUBLISHED / teaching.name
        source = published if published.exists() else teaching
        page = page_of(teaching)
        banner = "" if published.exists() else (
            '<div class="course-banner">This page shows the teaching notebook, without outputs: '
            "no published GPU run of it is committed yet (<code>figures/notebooks/</code>). "
            "The measured results are on the <a href=\"" + _relative(PurePosixPath("index.html"), page)
            + "\">front page</a>.</div>")
        exporter = HTMLExporter(template_name="lab",
                                extra_loaders=[jinja2.DictLoader({"course.html.j2": TEMPLATE})],
                                template_file="course.html.j2")
        nb = nbformat.read(source, as_version=4)
        body, _ = exporter.from_notebook_node(
            nb, resources={"course_header": self.nav(page) + banner + self.pager(page, "top"),
                           "course_footer": self.pager(page, "footer")})
        # Links resolve from the folder of the copy shown (a published copy's links are
        # rewritten for figures/notebooks/: published.relink).
        self.write(page, self.rewrite(body, source.parent, page))
        return page

    def markdown(self, source: Path, title: str | None = None) -> PurePosixPath:
        from nbconvert.filters.markdown_mistune import markdown2html_mistune

        page = page_of(source)
        if page in self.done:
            return page
        text = source.read_text(encoding="utf-8")
        if page.as_posix() == "index.html":  # the README, plus the worked solutions it does not list
            text += "\n## Worked solutions\n\n" + "".join(
                f"- [{nb.stem}]({nb.relative_to(ROOT).as_posix()})\n" for nb in solutions())
        heading = re.search(r"^# (.+)$", text, re.M)
        body = self.rewrite(markdown2html_mistune(text), source.parent, page)
        self.write(page, PAGE.format(title=html.escape(title or (heading[1] if heading else source.stem)),
                                     nav="" if page.name == "index.html" and len(page.parts) == 1
                                     else self.nav(page), body=body))
        return page


def build(out: Path | None = None) -> list[Path]:
    """Build the site into ``out`` (default ``site/``, emptied first); returns the HTML pages."""
    out = Path(out or DEFAULT_OUT)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    site = Site(out)
    for nb in lessons() + solutions():
        site.notebook(nb)
    site.markdown(ROOT / "README.md", title=TITLE)
    while site.pending:
        site.markdown(site.pending.pop())
    from . import slides

    slides.write(out / "slides.html")  # the deck: each lesson's key figure and message
    site.done.add(PurePosixPath("slides.html"))
    return sorted(out / p for p in site.done)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="./run_all.sh --site", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (emptied first)")
    parser.add_argument("--slides", action="store_true",
                        help="write only the slide deck, <out>/slides.html (no other page)")
    args = parser.parse_args(argv)
    if args.slides:
        from . import slides

        print(f"wrote {slides.write(args.out / 'slides.html')}")
        return 0
    pages = build(args.out)
    published = sum((PUBLISHED / p.name).exists() for p in lessons())
    print(f"{len(pages)} pages in {args.out} ({published}/{len(lessons())} lessons from a published "
          f"run); open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
