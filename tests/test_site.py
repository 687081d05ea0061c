"""The course website builds offline and works in a real browser: every page loads, every image
shows, every internal link resolves, and the console stays free of errors.

Needs Playwright (the Python package) and Debian's chromium at /usr/bin/chromium; without them
the test skips, unless COURSE_REQUIRE_BROWSER=1 (as CI sets), where a missing browser fails.
"""
import json
import functools
import http.server
import os
import re
import threading
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from helpers.course import site

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _browser_missing():
    try:
        import playwright.sync_api  # noqa: F401
        import nbconvert  # noqa: F401
    except ImportError as err:
        return f"{err.name} is not installed (pip install -e '.[site]')"
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    missing = _browser_missing()
    if missing:
        if os.environ.get("COURSE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"COURSE_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    out = tmp_path_factory.mktemp("site")
    pages = site.build(out)
    handler = functools.partial(QuietHandler, directory=str(out))
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield out, pages, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a browser that drops a connection it no longer needs is not a site error


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def _status(url):
    try:
        with urllib.request.urlopen(url) as reply:
            return reply.status
    except urllib.error.HTTPError as err:
        return err.code


def test_site_has_every_lesson_and_the_index(served):
    out, pages, _ = served
    names = {p.relative_to(out).as_posix() for p in pages}
    assert "index.html" in names
    for nb in site.lessons() + site.solutions():
        assert site.page_of(nb).as_posix() in names, nb.name
    index = (out / "index.html").read_text()
    assert "notebooks/00_setup.html" in index and "figures/08_results_summary.png" in index
    for page in pages:  # nothing fetched from the network
        assert "cdnjs" not in page.read_text() and "unpkg" not in page.read_text(), page.name


def test_every_internal_link_resolves(served):
    out, pages, base = served
    broken = []
    for page in pages:
        url = base + page.relative_to(out).as_posix()
        parser = Links()
        parser.feed(page.read_text())
        for href in parser.hrefs:
            target = urljoin(url, href)
            if urlsplit(target).netloc != urlsplit(base).netloc:
                continue  # external: not checked offline
            target = target.split("#")[0]
            if _status(target) != 200:
                broken.append(f"{page.relative_to(out)} -> {href}")
    assert not broken, "broken internal links:\n" + "\n".join(broken)


def test_every_page_loads_in_chromium_with_images_and_no_console_errors(served):
    from playwright.sync_api import sync_playwright

    out, pages, base = served
    problems = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        errors = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        for path in pages:
            rel = path.relative_to(out).as_posix()
            errors.clear()
            reply = page.goto(base + rel, wait_until="load")
            if reply is None or reply.status != 200:
                problems.append(f"{rel}: HTTP {reply.status if reply else 'no reply'}")
                continue
            bad = page.eval_on_selector_all(
                "img", "imgs => imgs.filter(i => !(i.complete && i.naturalWidth > 0))"
                       ".map(i => i.getAttribute('src').slice(0, 80))")
            problems += [f"{rel}: image does not load: {src}" for src in bad]
            problems += [f"{rel}: console error: {e}" for e in errors]
        browser.close()
    assert not problems, "\n".join(problems)


def test_slides_have_every_lesson_with_its_figure_and_message():
    from helpers.course import slides

    text = slides.render()
    messages = slides.key_messages()
    for nb in site.lessons():
        number = nb.stem[:2]
        assert f'id="lesson-{number}"' in text, nb.name
        assert messages.get(number), f"no key message for lesson {number} in the guide"
    # Every lesson with a published figure shows it; one without says so (a new lesson before
    # the next full GPU run publishes it).
    manifest = json.loads((Path(__file__).resolve().parent.parent / "figures" / "manifest.json").read_text())
    published = {e.get("notebook") for e in manifest.get("figures", {}).values()}
    with_figure = [nb for nb in site.lessons() if nb.name in published]
    assert len(with_figure) >= len(site.lessons()) - 2
    assert text.count('<img src="data:image/png;base64,') == len(with_figure)
    assert text.count("No published figure for this lesson yet.") == \
        len(site.lessons()) - len(with_figure)
    assert 'src="http' not in text and 'href="http' not in text  # self-contained


def test_slides_open_and_page_with_the_keyboard(served):
    from playwright.sync_api import sync_playwright

    out, pages, base = served
    assert out / "slides.html" in pages
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(base + "slides.html", wait_until="load")
        count = page.eval_on_selector_all("section.slide", "s => s.length")
        assert count == len(site.lessons()) + 1
        page.keyboard.press("ArrowRight")
        page.wait_for_function("location.hash === '#lesson-00'")
        page.keyboard.press("ArrowRight")
        page.wait_for_function("location.hash === '#lesson-01'")
        browser.close()


def test_lessons_link_to_the_previous_and_the_next_lesson(tmp_path):
    """Needs only nbconvert (the 'site' extra), no browser: three lesson pages are built."""
    pytest.importorskip("nbconvert")
    lessons = site.lessons()
    built = site.Site(tmp_path)
    pages = {i: built.notebook(lessons[i]) for i in (0, 1, len(lessons) - 1)}
    def links(i):
        text = (tmp_path / pages[i]).read_text(encoding="utf-8")
        return (re.findall(r'<a href="([^"]+)" rel="prev"', text) or
                re.findall(r'<a rel="prev" href="([^"]+)"', text),
                re.findall(r'<a href="([^"]+)" rel="next"', text) or
                re.findall(r'<a rel="next" href="([^"]+)"', text))
    prev, nxt = links(1)
    assert prev and prev[0].endswith(f"{lessons[0].stem}.html")
    assert nxt and nxt[0].endswith(f"{lessons[2].stem}.html")
    assert not links(0)[0] and links(0)[1]  # the first lesson has no previous one
    assert links(len(lessons) - 1)[0] and not links(len(lessons) - 1)[1]
    for href in prev + nxt:  # each resolves to a lesson page of the site
        assert (tmp_path / pages[1]).parent.joinpath(href).resolve().name.endswith(".html")
