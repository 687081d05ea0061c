"""Round 34 of lessons 04 and 05 (proportion), read on the frozen GPU tables. 04: the medians note
is two sentences: go by the rounds, the medians can come from different rounds, runs vary (the
widest spread among the lengths whose line adds medians, named once). 05: own_code's reason is a
code comment, not a bullet; the plan line says the tokens are checked through a float32 twin; the
Plot intro says the bars are median runs."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import stats
from helpers.course import compiled as c05
from helpers.course import static_cache as c04

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
TABLES04 = sorted(DATA.glob("04_static_cache-*.csv"))


def t04(path):
    t = pd.read_csv(path)
    t = t[t["method"].isin(c04.EAGER)]
    return t, sorted(int(n) for n in t["seq_len"].unique())


def cells(stem):
    return ["".join(c["source"]) for c in
            json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]]


def test_04_published_medians_note():
    table, lens = t04(DATA / "04_static_cache-4448ee4.csv")
    assert c04.medians_note(table, lens, True) == (  # round 37: which to go by, above the plot
        "Runs vary from round to round: at 200 tokens the dynamic cache's runs took 1577 "
        "to 2688 ms.")


@pytest.mark.parametrize("path", TABLES04, ids=lambda p: p.stem)
def test_04_medians_note_is_two_sentences_naming_one_spread(path):
    table, lens = t04(path)
    note = c04.medians_note(table, lens, True)
    if note:
        assert note.count(". ") == 0 and note.endswith(" ms.") and note.count(" tokens") == 1
        assert len(note.split()) <= 50
        assert not re.search(r"rounds \d", note)  # no round numbers


def test_05_own_code_is_a_comment_not_a_bullet():
    c = cells("05_torch_compile")
    bullets = next(s for s in c if s.startswith("## The compiled step"))
    assert "own_code" not in bullets and "plumbing" not in bullets
    # round 37: one import line with a short comment (the learner cannot act on the plumbing)
    setup = next(s for s in c if "make_static_cache, own_code  # own_code: " in s)
    assert "# Course plumbing: torch.compile keeps graphs per function" not in setup


def test_05_plan_line_names_the_float32_twin():
    assert c05.plan_line(["default", "reduce-overhead"], True).endswith(
        "Each compiled loop's tokens are checked against the eager KV-cache loop's through a "
        "float32 twin of its step (the lines below).")
    assert "twin" not in c05.plan_line(["reduce-overhead"], False)


def test_05_plot_intro_says_the_bars_are_median_runs():
    plot = next(s for s in cells("05_torch_compile") if s.startswith("## Plot"))
    assert "median run" in plot and "round-by-round" in plot
