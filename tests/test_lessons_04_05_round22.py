"""Round 22's mends of lessons 04 and 05, read on real GPU tables: the published full run's CSVs
(figures/data/), three earlier full runs' and the 13:41 workshop run of 6bba703 (frozen in
tests/data/ as NAME-COMMIT.csv), the copy the students read.

04: a printed line says which of the article's lengths (100, 200, 400) this run timed and what it
found at each, and where it timed none, that none is tested; with one length the figure's line
says so rather than "where the caches differ most clearly". 05: a printed line says which modes
this run compiled (a mode left out is not measured here) and whether the tokens were checked;
the prose names no batch size or mode that a preset changes."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import compiled as c05
from helpers.course import static_cache as c04
from helpers.course import stats

REPO = Path(__file__).resolve().parent.parent
RUNS = ["8973374", "90c3788", "eb4fe0c", "6bba703-workshop"]


def tables(name):
    out = []
    path = REPO / "figures" / "data" / f"{name}.csv"
    if path.exists():
        out.append(("published", pd.read_csv(path)))
    for commit in RUNS:
        frozen = REPO / "tests" / "data" / f"{name}-{commit}.csv"
        if frozen.exists():
            out.append((commit, pd.read_csv(frozen)))
    if not out:
        pytest.skip(f"no {name}.csv")
    return out


def prose(stem):
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def code(stem):
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


# --- 04 ------------------------------------------------------------------------------------------

def _word(table, n):
    ratio = stats.row_speedup(table, c04.STATIC, c04.DYNAMIC, seq_len=n)
    word = stats.verdict(ratio)
    return "can't tell apart" if word == stats.NOISE else word


@pytest.mark.parametrize("run", range(5))
def test_04_article_line_says_what_this_run_timed_and_found(run):
    found = tables("04_static_cache")
    if run >= len(found):
        pytest.skip("no such run's table")
    name, table = found[run]
    table = table[table["method"].isin(c04.EAGER)]
    lens = sorted(table["seq_len"].unique().tolist())
    line = c04.article_line(table, lens, True)
    assert line.startswith("The article timed 100, 200 and 400 tokens (the static cache slower at "
                           "100, faster at 200 and 400); this run timed "), (name, line)
    flags = c04.disturbed(table, lens)
    if set(c04.ARTICLE) <= set(lens):  # the full preset: every article length, each read
        assert "this run timed all of them: " in line and "not tested" not in line, line
        for n in c04.ARTICLE:
            word = _word(table, n)
            same = "as the article found" if word == c04.ARTICLE[n] else f"the article: {c04.ARTICLE[n]}"
            assert f"{n} tokens {word} ({'disturbed; ' * (n in flags)}{same})" in line, (name, line)
    else:  # the workshop preset: 48 tokens, none of the article's
        assert lens == [48], name
        word = _word(table, 48)
        assert word == "slower", name  # the students' copy: 1.13x slower (1.05-1.22)
        assert line == (
            "The article timed 100, 200 and 400 tokens (the static cache slower at 100, faster at "
            "200 and 400); this run timed none of them, so none of its findings is tested here. "
            "At 48 tokens, not one of its lengths, the static cache was slower; at its nearest "
            "length, 100, the article found it slower.")
    # the verdict lines no longer repeat the article: one line says it
    for n in lens:
        assert "article" not in c04.eager_verdict(table, n, True)
    assert c04.article_line(table, lens, False) == ""  # a smoke run prints no conclusion


def test_04_article_line_names_the_lengths_not_tested():
    table = tables("04_static_cache")[0][1]
    table = table[table["method"].isin(c04.EAGER)]
    part = table[table["seq_len"].isin([100, 400])]
    line = c04.article_line(part, [100, 400], True)
    assert "this run timed 100 and 400: 100 tokens " in line
    assert line.endswith("; not tested here: faster at 200."), line
    # several lengths the article did not time (the smoke preset's shape): one compact list
    short = pd.concat([table[table["seq_len"] == 100].assign(seq_len=8),
                       table[table["seq_len"] == 200].assign(seq_len=16)])
    line = c04.article_line(short, [8, 16], True)
    assert line.endswith(
        "this run timed none of them, so none of its findings is tested here. At lengths not its "
        f"own, this run against the article at its nearest: 8 tokens {_word(short, 8)} (100: "
        f"slower), 16 tokens {_word(short, 16)} (100: slower)."), line


def test_04_figure_line_with_one_length_names_no_choice():
    _, table = [t for t in tables("04_static_cache") if t[0] == "6bba703-workshop"][0]
    assert c04.drawn_length(table, [48], True) == 48
    assert c04.drawn_line(table, [48], 48, True) == "The figure draws 48 tokens, this run's only length."


def test_04_prose_names_no_preset_size():
    text = prose("04_static_cache")
    # exercise 2 sets its own sizes (a 400-token run at batch 32): a hypothetical, not this run
    for stale in ("lengths, batch 32", "at the article's lengths", "nearly twice", "Medians alone",
                  "leaving out any a slow"):
        assert stale not in text, stale
    assert "lesson.article_line(table, P.seq_lens, judge)" in code("04_static_cache")


# --- 05 ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("run", range(5))
def test_05_plan_line_says_which_modes_ran_and_whether_tokens_were_checked(run):
    found = tables("05_torch_compile")
    if run >= len(found):
        pytest.skip("no such run's table")
    name, table = found[run]
    modes = [m for m in table["mode"].unique() if m != "eager"]
    checked = bool(table["check_first_call_s"].notna().any())
    line = c05.plan_line(modes, checked)
    graphs = c05.graphs_line(c05.compilation(table), table, checked)
    if name == "6bba703-workshop":  # the students' copy: reduce-overhead only, no token check
        assert (modes, checked) == (["reduce-overhead"], False)
        assert line == (
            "This run compiles the decode step in reduce-overhead mode only: the default mode "
            "(fused kernels, no CUDA graph) is not compiled, so its effect is not measured here. "
            "The compiled tokens are not checked against the eager KV-cache loop's in this run "
            "(check_tokens False).")
        assert graphs.startswith("Graphs compiled: reduce-overhead 1 (one at each length, the "
                                 "TF32 graph timed: the tokens were not checked, so no float32 "
                                 "check graph); while timing: 0."), graphs
    else:  # the full preset: both modes, each checked
        assert (modes, checked) == (["default", "reduce-overhead"], True), name
        assert line == ("This run compiles the decode step in default and reduce-overhead modes. "
                        "Each compiled loop's tokens are checked against the eager KV-cache "
                        "loop's (the lines below).")
        assert "float32 check, TF32 timed" in graphs
    # the count of graphs agrees with the check: two a mode with it, one without
    assert re.findall(r"(?:default|reduce-overhead) (\d)", graphs) == [str(1 + checked)] * len(modes)


def test_05_plan_line_on_a_cpu_smoke_run():
    assert c05.plan_line(["default"], True).startswith(
        "This run compiles the decode step in default mode only: reduce-overhead (the CUDA graph) "
        "is not compiled, so its effect is not measured here.")
    assert c05.plan_line([], False) == "This run compiles no mode: nothing compiled is measured here."


def test_05_prose_names_no_preset_size_or_mode_as_run():
    text = prose("05_torch_compile")
    for stale in ("batch 32", "32×", "token-identical", "(full preset)", "it runs **",
                  "does each remove", "can do some of both"):
        assert stale not in text, stale
    assert "lesson.plan_line(steps, P.check_tokens)" in code("05_torch_compile")
