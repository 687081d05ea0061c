"""Round 29 of lessons 04 and 05, read on every frozen GPU table (tests/data/04_static_cache-*.csv
and 05_torch_compile-*.csv, full and workshop). 04: where a verdict adds the table's medians
("1.18x slower (1.14–1.24; the table's medians: 1.26x)"), a note after the verdicts says which to
go by and why the two differ (from which rounds the middle runs came); the summary no longer
repeats the medians; "Against the article" is a computed line, not template prose. 05: the repay
block comes after the verdicts it quotes; the template parentheses are gone."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, stats
from helpers.course import compiled as c05
from helpers.course import static_cache as c04

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
RANGE = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")  # tests/test_lesson_shape.py's
TABLES04 = sorted(DATA.glob("04_static_cache-*.csv"))
TABLES05 = sorted(p for p in DATA.glob("05_torch_compile-*.csv") if "compilation" not in p.stem)


def t04(path):
    t = pd.read_csv(path)
    t = t[t["method"].isin(c04.EAGER)]
    return t, sorted(int(n) for n in t["seq_len"].unique())


def cells(stem):
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    return nb["cells"]


def src(cell):
    return "".join(cell["source"])


# --- 04: the medians note ----------------------------------------------------------------------

@pytest.mark.parametrize("path", TABLES04, ids=lambda p: p.stem)
def test_04_medians_note_where_a_verdict_adds_the_medians(path):
    table, lens = t04(path)
    with_medians = [n for n in lens if "the table's medians" in c04.eager_verdict(table, n, True)
                    and stats.row_speedup(table, c04.STATIC, c04.DYNAMIC, seq_len=n).n >= stats.MIN_TRIALS]
    note = c04.medians_note(table, lens, True)
    assert c04.medians_note(table, lens, False) == ""  # a smoke run concludes nothing
    if not with_medians:
        assert note == ""
        return
    assert note.startswith("Runs vary from round to round: ")  # round 37: which to go by, above the plot
    assert not RANGE.search(note)  # no interval statement added
    # round 34: the widest spread among those lengths, named once: a real one, fastest to slowest
    n, lo, hi = map(int, re.search(r"at (\d+) tokens the \w+ cache's runs took (\d+) to (\d+) ms",
                                   note).groups())
    assert n in with_medians and note.count(" tokens") == 1
    spreads = {(k, m): stats.method_trials(table, m, seq_len=k) for k in with_medians for m in c04.EAGER}
    widest = max(max(r) / min(r) for r in spreads.values())
    assert any(k == n and f"{1e3 * min(r):.0f}" == str(lo) and f"{1e3 * max(r):.0f}" == str(hi)
               and max(r) / min(r) == widest for (k, _), r in spreads.items())


def test_04_medians_note_on_the_reviewed_run():
    table, lens = t04(DATA / "04_static_cache-6e28961.csv")
    assert c04.eager_verdict(table, 400, True).endswith(
        "1.18x slower (1.14–1.24; the table's medians: 1.26x).")
    assert c04.medians_note(table, lens, True).endswith(
        "at 400 tokens the static cache's runs took 2893 to 3462 ms.")


@pytest.mark.parametrize("path", TABLES04, ids=lambda p: p.stem)
def test_04_answer_line_leaves_the_medians_to_the_verdicts(path):
    table, lens = t04(path)
    steps = budget.per_step(table, c04.METHODS, seq_len=max(lens))
    assert "the table's medians" not in c04.answer_line(table, steps, lens, True, max(lens))


# --- 04: against the article -------------------------------------------------------------------

@pytest.mark.parametrize("path", TABLES04, ids=lambda p: p.stem)
def test_04_against_article_is_computed_from_the_verdicts(path):
    table, lens = t04(path)
    line = c04.against_article(table, lens, True)
    assert c04.against_article(table, lens, False) == ""
    if not set(lens) & set(c04.ARTICLE):
        assert line == ""  # the summary line says this run cannot test the claim
        return
    assert line.startswith("Against the article: ") and not RANGE.search(line)
    words = {n: stats.verdict(stats.row_speedup(table, c04.STATIC, c04.DYNAMIC, seq_len=n))
             for n in lens if n in c04.ARTICLE}
    opposite = [n for n, w in words.items() if w != stats.NOISE and w != c04.ARTICLE[n]]
    if not opposite:
        assert "at no length it timed did this run find the opposite" in line
        return
    for n in opposite:
        said = re.search(rf"it found the static cache (\w+) at ([\d, and]*\b{n}\b[\d, and]*) tokens, "
                         r"this run (\w+)", line)
        assert said and said.group(1) == c04.ARTICLE[n] and said.group(3) == words[n], (n, line)
    for n in set(words) - set(opposite):
        assert not re.search(rf"it found the static cache \w+ at [\d, and]*\b{n}\b", line)
    host = c04.host_lengths(table, lens)
    if all(words[n] == stats.SLOWER and host.get(n, 0) > 0 for n in opposite):
        assert "There the GPU's work per step was about the same and the static step waited longer" in line


def test_04_against_article_on_the_reviewed_run():
    table, lens = t04(DATA / "04_static_cache-6e28961.csv")
    assert c04.against_article(table, lens, True) == (
        "Against the article: it found the static cache faster at 200 and 400 tokens, this run "
        "slower. There the GPU's work per step was about the same and the static step waited longer "
        "on the host: to win, its step would have to take the host less time than the dynamic "
        "step's, as the copies it saves are GPU work and the GPU already waits on the host. The "
        "article's host, GPU and library versions are not this machine's.")


def test_04_notebook_prints_the_new_lines_and_drops_the_template():
    c = cells("04_static_cache")
    code = "\n".join(src(x) for x in c if x["cell_type"] == "code")
    text = "\n".join(src(x) for x in c if x["cell_type"] == "markdown")
    assert "lesson.medians_note(table, P.seq_lens, judge)" in code
    assert "lesson.against_article(table, P.seq_lens, judge)" in code
    assert "timed none of them" not in text and "**Against the article.**" not in text
    assert "the note after the verdicts says which to go by" not in text  # round 37: said once
    assert "the medians can come from different rounds" in text.replace("\n", " ")
    # the article line comes after the verdicts and before the summary
    order = [i for i, x in enumerate(c) if "medians_note" in src(x) or "against_article" in src(x)
             or src(x).startswith("## Summary")]
    assert len(order) == 3 and order == sorted(order)
    assert not RANGE.search(text)


# --- 05 ----------------------------------------------------------------------------------------

def test_05_repay_block_follows_the_verdicts_it_quotes():
    c = cells("05_torch_compile")
    heads = [src(x).split("\n", 1)[0] for x in c if x["cell_type"] == "markdown"]
    where = {h: i for i, h in enumerate(heads)}
    assert where["## What it means"] < where["## Compilation, apart from the runtime"] \
        < where["## Summary and takeaways"]
    first = {k: next(i for i, x in enumerate(c) if k in src(x))
             for k in ("stats.plain(ratio, judge)", "lesson.repay_line(", "lesson.summary_line(")}
    assert first["stats.plain(ratio, judge)"] < first["lesson.repay_line("] < first["lesson.summary_line("]


@pytest.mark.parametrize("path", TABLES05, ids=lambda p: p.stem)
def test_05_repay_line_points_up_to_the_verdicts(path):
    t = pd.read_csv(path)
    said = c05.repay_line(c05.compilation(t), t)
    assert "verdicts below" not in said
    assert "the speedup the verdicts above quote" in said
    point = int(t["seq_len"].max())
    for x in re.findall(r"at (\d+\.\d+)x, a run saves", said):  # the speedups the verdicts print
        assert any(f"{stats.row_speedup(t, m, c05.EAGER, seq_len=point).estimate:.2f}" == x
                   for m in t["method"].unique() if m != c05.EAGER), (path.stem, x)


def test_05_prose_drops_the_template_parentheses():
    text = "\n".join(src(x) for x in cells("05_torch_compile") if x["cell_type"] == "markdown")
    assert "where the preset compiles it" not in text
    assert "and otherwise says so" not in text
    assert "the last line below compares its time\nwith notebook 04's in this run." in text
