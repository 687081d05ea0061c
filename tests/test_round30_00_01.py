"""Round 30 of mends, lessons 00 and 01, from the review of 74b9f45's workshop copies.

00: identical loops told apart ("1.190x slower (1.004–1.641)") by one run of B at 110 ms against
about 49 were called "a verdict this close to 1": the line now names the run farthest from its
loop's median, computed from the rounds, and what the other rounds say without its round; the
cell under the rounds prints the estimate once, as A / B (the medians only in the verdict line).
01: the prose's "guess to test", which the run above it could refute, became what to look for; the
Pace bullet holds whatever the Pace line says; "several lengths" became "two or more"."""
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers.course import harness, intro, stats

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
ZERO = sorted(DATA.glob("00_setup-*.csv"))
ONE = sorted(DATA.glob("01_naive_generation-*.csv"))
RANGE = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")


def _reach(table):
    n = int(table.loc[table["method"] == "loop A", "seq_len"].iloc[0])
    by_round = intro.rounds(table, "loop A", "loop B")
    ratio = stats.row_speedup(table, "loop B", "loop A", seq_len=n)
    return by_round, ratio, intro.reach(ratio, True, by_round)


def _md(name):
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    return " ".join(" ".join("".join(c["source"]) for c in nb["cells"]
                             if c["cell_type"] == "markdown").split())


@pytest.mark.parametrize("path", ZERO, ids=lambda p: p.stem)
def test_00_told_apart_names_the_farthest_run_on_every_real_table(path):
    by_round, ratio, said = _reach(pd.read_csv(path))
    told = stats.verdict(ratio) != stats.NOISE
    last = said.split("\n")[-1]
    assert last.startswith("This run told the identical loops apart") == told, said
    assert "close to 1" not in said and "trial" not in said
    assert not RANGE.search(said), said  # no range added to the lesson
    if not told:
        return
    a, b = by_round["A ms"].to_numpy(), by_round["B ms"].to_numpy()
    runs = [("A", i, a[i], np.median(a)) for i in range(len(a))] + \
           [("B", i, b[i], np.median(b)) for i in range(len(b))]
    loop, i, t, med = max(runs, key=lambda r: abs(math.log(r[2] / r[3])))
    rnd = int(by_round["round"][i])
    assert (f"Without {loop}'s run in round {rnd}, the farthest from its loop's median "
            f"({t:.1f} ms against {med:.1f}), ") in last, last  # round 32: shorter
    keep = np.arange(len(a)) != i
    rest = float(np.exp(np.mean(np.log(a[keep] / b[keep]))))
    if len(a) - 1 >= stats.MIN_TRIALS:  # f33fa03: enough rounds left for words (94d1a85's full run)
        words = stats.short(stats.speedup(b[keep], a[keep], paired=True))
        assert f"the other {len(a) - 1} rounds read {words}" in last
    else:
        assert f"the other {len(a) - 1} rounds' A / B is {rest:.3f}x" in last  # 5 rounds: 4 left
    assert "too few to judge" not in last  # not read as a verdict by helpers.course.verdicts


def test_00_the_reviewed_run_names_bs_110_ms_run():
    _, _, said = _reach(pd.read_csv(DATA / "00_setup-74b9f45-workshop.csv"))
    assert said.split("\n")[-1] == (
        "This run told the identical loops apart (1.190x slower): in later lessons, a verdict about "
        "that size may be noise. Without B's run in round 5, the farthest from its loop's median "
        "(110.5 ms against 49.7), the other 4 rounds' A / B is 0.986x (too few rounds for a "
        "verdict).")  # round 32: shorter


@pytest.mark.parametrize("slow,amp,expect", [(1.03, 0.01, "read 1.03x slower"),
                                              (1.01, 0.015, "read can't tell apart")])
def test_00_eight_rounds_give_the_others_verdict_in_words(slow, amp, expect):
    """No frozen full run told its loops apart: a full table with one run of B made slow (and B
    otherwise ``slow`` times A, give or take ``amp``) gives the other 7 rounds' verdict in words,
    without a range."""
    table = pd.read_csv(DATA / "00_setup-5274887.csv")
    b = table["method"] == "loop B"
    a_ms = np.array(harness.trials(table[table["method"] == "loop A"].iloc[0])) * 1e3
    b_ms = a_ms * slow * (1 + amp * np.array([1, -1, 0, 2, -2, 1, -1, 0]))
    b_ms[2] *= 2.5
    table.loc[b, "trials_wall_ms"] = " ".join(f"{t:.4f}" for t in b_ms)
    by_round, ratio, said = _reach(table)
    assert stats.verdict(ratio) == stats.SLOWER
    last = said.split("\n")[-1]
    assert "B's run in round 3" in last and f"), the other 7 rounds {expect}." in last, last
    assert not RANGE.search(last)


def test_00_prints_the_comparison_once_in_one_direction():
    nb = json.loads((ROOT / "notebooks" / "00_setup.ipynb").read_text())
    code = next("".join(c["source"]) for c in nb["cells"] if "by_round = intro.rounds(" in "".join(c["source"]))
    assert "B took" not in code and "median" not in code
    assert "Geometric mean of the {k} rounds' A / B: {typical:.3f}x\")" in code
    text = _md("00_setup.ipynb")
    assert "the line adds it (\"the table's medians\") only where" in text  # round 35
    assert "A \"slower\" line states 1 ÷ the estimate" in text
    assert "The cell below also divides the two medians" not in text


def test_01_prose_says_what_to_look_for_and_holds_for_every_pace_line():
    one = _md("01_naive_generation.ipynb")
    assert "A guess to test" not in one and "the more of the host's time it hides" not in one
    assert "the Idle line says what it did" not in one  # round 34: the Idle line says it
    assert "several lengths" not in one and "its runtime at two or more lengths" in one
    assert 'In the Pace line, "host" stands for everything the GPU waits for' in one  # round 31
    # the Idle line the prose points at, and Pace lines that do and do not name the host
    paces = set()
    for path in ONE:
        why = intro.growth_why(pd.read_csv(path), 16)
        assert re.search(r"^- Idle: .*; per step [\d.]+(,| and)", why, re.M), (path.stem, why)
        paces.add("host" in next(l for l in why.split("\n") if l.startswith("- Pace")))
    assert paces == {True, False}
