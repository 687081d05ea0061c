"""Round 32 of lessons 04 and 05, read on every frozen GPU table. 04: the operations line gives
the measured gap on a line of its own, then the estimate in two sentences (the price, then how it
meets the gap); exercise 1 says the whole run's ratio is exactly 2.00. 05: the repay counts say
they leave out the float32 check graphs, and one line, in words, sets this run against the
article's finding that compiling helps."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import compiled as c05
from helpers.course import static_cache as c04
from helpers.course import stats
from helpers.static import attention_work
from test_round29_04_05 import t04
from test_round31_04_05 import _ops, ops_line_of

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
TABLES04 = sorted(DATA.glob("04_static_cache-*.csv"))
TABLES05 = sorted(p for p in DATA.glob("05_torch_compile-*.csv") if "compilation" not in p.stem)
RANGE = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")


def _t05(path):
    t = pd.read_csv(path)
    return t, sorted(int(n) for n in t["seq_len"].unique()), [c05.EAGER] + [
        m for m in t["method"].unique() if m != c05.EAGER]


@pytest.mark.parametrize("path", TABLES04, ids=lambda p: p.stem)
def test_04_ops_line_gap_then_estimate_in_short_sentences(path):
    line, _ = ops_line_of(path)
    if not line:
        return
    gap = line  # round 35: the estimate is cut
    assert "\n" not in gap
    assert gap.startswith("The GPU's idle time per step, static minus dynamic: ")
    assert gap.endswith(" tokens.") and len(re.findall(r"\.(?:\s|$)", gap)) == 1
    assert not RANGE.search(line)


def test_04_published_ops_line():
    t, _ = t04(DATA / "04_static_cache-94d1a85.csv")
    line = c04.ops_line(t, [100, 200, 400], _ops([100, 200, 400]), 100)
    assert line == (
        "The GPU's idle time per step, static minus dynamic: +1.13, +1.63 and +1.28 ms at 100, 200 "
        "and 400 tokens.")  # round 35: no estimate


@pytest.mark.parametrize("prompt_len, new_tokens", [(16, 8), (16, 50), (16, 100), (16, 400), (7, 3)])
def test_04_exercise_whole_run_ratio_is_exactly_two(prompt_len, new_tokens):
    work = attention_work(prompt_len, new_tokens, prompt_len + new_tokens)
    assert work["static_over_useful"] == 2.0
    nb = json.loads((REPO / "notebooks" / "04_static_cache.ipynb").read_text())
    text = " ".join("".join(c["source"]) for c in nb["cells"]).replace("\n   ", " ")
    assert "the whole run's, exactly 2.00, is higher than these because" in text
    assert "the whole run's ratio is higher" not in text


@pytest.mark.parametrize("path", TABLES05, ids=lambda p: p.stem)
def test_05_repay_line_says_the_check_graphs_are_left_out(path):
    table, _, _ = _t05(path)
    line = c05.repay_line(c05.compilation(table), table)
    checks = [x for x in line.split("\n") if x.startswith("The float32 check graphs")]
    has_checks = "check_first_call_s" in table and table["check_first_call_s"].notna().any()
    assert len(checks) == (1 if has_checks else 0), line
    for x in checks:
        assert x.startswith("The float32 check graphs, compiled just before and left out of these "
                            "counts: ")


@pytest.mark.parametrize("path", TABLES05, ids=lambda p: p.stem)
def test_05_against_the_article_in_words(path):
    table, lens, methods = _t05(path)
    line = c05.against_article(table, methods, lens, True)
    assert c05.against_article(table, methods, lens, False) == ""
    assert not RANGE.search(line)  # no new range: the verdict lines carry them
    words = {stats.verdict(stats.row_speedup(table, m, c05.EAGER, seq_len=n))
             for m in methods[1:] for n in lens}
    if words == {stats.FASTER}:  # round 33: one length is named as one
        where = (f"at the length it timed ({lens[0]} tokens)" if len(lens) == 1
                 else "at every length it timed")
        assert line == ("Against the article, which finds that compiling helps: this run agrees, "
                        f"every compiled loop faster {where}.")
    else:
        assert "agrees only in part" in line or "does not find it" in line


def test_05_against_the_article_where_a_loop_is_slower():
    table, lens, methods = _t05(DATA / "05_torch_compile-94d1a85.csv")
    d, r = c05.name("default"), c05.name("reduce-overhead")
    swap = table.copy()  # eager and default's timings swapped: default now the slower
    swap["method"] = swap["method"].map({c05.EAGER: d, d: c05.EAGER}).fillna(swap["method"])
    assert c05.against_article(swap, methods, lens, True) == (
        "Against the article, which finds that compiling helps: this run agrees only in part "
        "(default at 100 tokens: slower; reduce-overhead at 100 tokens: faster).")
    swap["method"] = table["method"].map({c05.EAGER: r, r: c05.EAGER}).fillna(table["method"])
    assert "this run does not find it (default at 100 tokens: slower; reduce-overhead" in (
        c05.against_article(swap, methods, lens, True))


def test_05_notebook_prints_it_before_the_baseline_line():
    nb = json.loads((REPO / "notebooks" / "05_torch_compile.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert code.index("lesson.against_article(table, methods, P.seq_lens, judge)") < code.index(
        "lesson.baseline_line(table, point, methods, earlier)")
