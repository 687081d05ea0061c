"""The shape of a lesson (issue 23, STYLE.md's teaching habits): short enough to read, statistics
spoken plainly outside 00 and the appendix, the time budget shown and read in every lesson
01-09, and published copies that show no warnings, logs or tracebacks.

The teaching notebooks are checked here on every run; their published copies (figures/notebooks/,
the last full GPU run) are checked too, since those are what a reader without a GPU reads."""
import json
import os
import re
from pathlib import Path

import pytest

from helpers.course import runner

REPO = Path(__file__).resolve().parent.parent
LESSONS = [p for p in runner.notebooks() if p.stem[:2] <= "09"]
ALL = runner.notebooks()  # 10 and 11 (the floor issue) follow the same limits of length and words
# COURSE_PUBLISHED_COPIES: another folder of executed copies to hold to the published copies'
# checks (.ci/gpu/publish.py points it at a GPU run before promoting it)
PUBLISHED = Path(os.environ.get("COURSE_PUBLISHED_COPIES") or REPO / "figures" / "notebooks")
MAX_WORDS, MAX_CODE_LINES, MAX_INTERVALS = 1500, 250, 5
# Statistics words taught once, in 00 and docs/method.md; project targets never in a lesson.
JARGON = re.compile(r"\b(felt|paired|bootstrap\w*|family|within noise|95% CI)\b", re.I)
TARGETS = re.compile(r"MISSED|NOT MET")
# budget.plot / budget.sentence, or a lesson's own wrapper of them (its source calls them).
DRAW_BUDGET = ("budget.plot(", "late_check.plot(", "expandable.plot_gpu_work(", "lesson.plot_gpu_work(")
READ_BUDGET = ("budget.sentence(", "postprocess.call_sentence(", "growth.pace_lines(",
               "lesson.speed_line(", "eos_sync.budget_line(", "intro.budget_line(",
               "summary.figure_line(")  # round 34: 08's budget.sentence behind its helper
INTERVAL = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")  # "(1.70–1.80; the table's medians: 1.69x)" too


def cells(path):
    return json.loads(path.read_text())["cells"]


def source(cell):
    return "".join(cell["source"])


def prose(path):
    return "\n".join(source(c) for c in cells(path) if c["cell_type"] == "markdown")


def outputs(path):
    """Every text a reader sees under the code cells: streams, results, errors."""
    texts = []
    for cell in cells(path):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append(("stream:" + out.get("name", ""), "".join(out.get("text", ""))))
            elif out.get("output_type") == "error":
                texts.append(("error", f"{out.get('ename')}: {out.get('evalue')}"))
            else:
                texts.append(("data", "".join(out.get("data", {}).get("text/plain", ""))))
    return texts


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem[:2])
def test_a_lesson_is_short_enough_to_read(path):
    words = len(re.sub(r"\(https?://[^)]*\)", "", prose(path)).split())
    code = sum(len([line for line in source(c).splitlines() if line.strip()])
               for c in cells(path) if c["cell_type"] == "code")
    assert words <= MAX_WORDS, f"{path.name}: {words} words of prose (at most {MAX_WORDS})"
    assert code <= MAX_CODE_LINES, f"{path.name}: {code} code lines (at most {MAX_CODE_LINES})"


@pytest.mark.parametrize("path", [p for p in ALL if p.stem[:2] != "00"], ids=lambda p: p.stem[:2])
def test_statistics_are_spoken_plainly_and_no_targets_appear(path):
    text = prose(path)
    assert not JARGON.findall(text), f"{path.name}: {sorted(set(JARGON.findall(text)))}"
    assert not TARGETS.findall(text)


@pytest.mark.parametrize("path", [p for p in LESSONS if "01" <= p.stem[:2] <= "09"],
                         ids=lambda p: p.stem[:2])
def test_every_lesson_shows_and_reads_the_time_budget(path):
    code = "\n".join(source(c) for c in cells(path) if c["cell_type"] == "code")
    draws = any(call in code for call in DRAW_BUDGET)
    reads = any(call in code for call in READ_BUDGET)
    assert draws and reads, \
        f"{path.name} must draw the time budget (budget.plot) and read it (budget.sentence)"


def test_the_wrappers_really_draw_and_read_the_budget():
    import inspect

    from helpers import postprocess
    from helpers.course import late_check

    assert "budget.plot(" in inspect.getsource(late_check.plot)
    assert "budget.per_step" in inspect.getsource(postprocess) or \
        "budget" in inspect.getsource(postprocess.call_sentence)
    from helpers.course import expandable, growth
    assert "budget.per_step(" in inspect.getsource(growth.pace_lines)  # 02 reads every length's
    assert '"gpu_ms"' in inspect.getsource(expandable.speed_line)  # 03 reads budget.per_step's rows
    from helpers.course import intro
    assert "budget.sentence(" in inspect.getsource(intro.budget_line)  # 01, without its pace
    from helpers.course import summary
    assert "_sentence(budget" in inspect.getsource(summary.figure_line)  # 08: budget.sentence


# The published copies in figures/notebooks/ come from the last full GPU run, made before the
# lessons were rewritten to this shape; the next full run replaces them, and then these checks
# must pass: the marker lifts itself once lesson 10's copy is published.
OLD_PUBLISHED = pytest.mark.xfail(
    not (PUBLISHED / "10_cuda_graph_step.ipynb").exists(), strict=False,
    reason="published copies predate the rewritten lessons; the next full GPU run replaces them")


def published(stem):
    path = PUBLISHED / f"{stem}.ipynb"
    if not path.exists():
        pytest.skip(f"no published copy of {stem}")
    return path


@OLD_PUBLISHED
@pytest.mark.parametrize("stem", [p.stem for p in runner.notebooks()], ids=lambda s: s[:2])
def test_a_published_copy_shows_no_warning_log_or_traceback(stem):
    bad = [(kind, text[:120]) for kind, text in outputs(published(stem))
           if kind in ("stream:stderr", "error")]
    assert not bad, f"{stem}: {len(bad)} stderr/error outputs, first {bad[:2]}"


@OLD_PUBLISHED
@pytest.mark.parametrize("stem", [p.stem for p in ALL if p.stem[:2] != "00"],
                         ids=lambda s: s[:2])
def test_a_published_copy_speaks_plainly(stem):
    path = published(stem)
    text = "\n".join(t for _, t in outputs(path))
    assert not TARGETS.findall(text), f"{stem} prints a project target"
    jargon = JARGON.findall(text)
    assert not jargon, f"{stem} prints {sorted(set(jargon))}"
    if stem[:2] not in ("08", "11"):  # the two ladders: one interval per rung
        count = len(INTERVAL.findall(text + prose(path)))
        assert count <= MAX_INTERVALS, f"{stem}: {count} interval statements"


@OLD_PUBLISHED
@pytest.mark.parametrize("stem", [p.stem for p in LESSONS], ids=lambda s: s[:2])
def test_a_published_summary_states_a_number(stem):
    """The summary (from its heading to the exercises) holds at least one number, in its prose
    or printed by a code cell inside it."""
    if stem.startswith("06_") and "-7aa1901" in (PUBLISHED.parent / "manifest.json").read_text():
        # round 24 dropped 06's summary line ("the longest row ended at 40% of the cap") and
        # 7aa1901's run published that; the source has it back, the next full run replaces this copy
        pytest.xfail("06's copy from run 7aa1901 lacks the summary line the source restores")
    inside, found = False, []
    for cell in cells(published(stem)):
        text = source(cell)
        if cell["cell_type"] == "markdown" and re.search(r"^#+ .*Summary", text, re.M):
            inside = True
        if inside:
            found.append(text if cell["cell_type"] == "markdown" else
                         "\n".join("".join(o.get("text", "")) for o in cell.get("outputs", [])))
            if cell["cell_type"] == "markdown" and re.search(r"^#+ .*Exercises", text, re.M):
                break
    summary = "\n".join(found)
    assert summary, f"{stem}: no Summary section"
    assert re.search(r"\d+(\.\d+)?\s*(x|ms|%|s\b|GiB|MiB)", summary), \
        f"{stem}: the summary states no number"
