"""Round 35's review of 00 and 01: 00 states the medians' rule as ``stats.say`` applies it; 01's
Why head says the split explains the median run, and its Sum line's total is the sum of the terms
it prints, on every frozen 01 table."""
import json
import re
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import intro, stats

DATA = Path(__file__).parent / "data"
ONE = sorted(DATA.glob("01_naive_generation-*.csv"))
ZERO = sorted(DATA.glob("00_setup-*.csv"))


def _md(name):
    nb = json.load(open(Path("notebooks") / name))
    return " ".join(" ".join("".join(c["source"]) for c in nb["cells"]
                             if c["cell_type"] == "markdown").split())


def test_00_states_when_the_medians_are_named():
    text = _md("00_setup.ipynb")
    assert "Quote the verdict's first number" not in text and "for comparison only" not in text
    assert (f"only where it lies more than {round(100 * stats.MEDIANS_APART)}% from the estimate "
            "or outside the range") in text


@pytest.mark.parametrize("path", ZERO, ids=lambda p: p.stem)
def test_00_medians_named_exactly_where_the_prose_says(path):
    table = pd.read_csv(path)
    n = int(table[table["method"] == "loop A"]["seq_len"].iloc[0])
    ratio = stats.row_speedup(table, "loop B", "loop A", seq_len=n)
    said = stats.say(table, "loop B", "loop A", True, seq_len=n)
    a, b = (float(table[table["method"] == m]["median_s"].iloc[0]) for m in ("loop A", "loop B"))
    med = a / b
    _, est, low, high, shown, digits = stats._printed(ratio, med)
    outside = not round(low, digits) <= round(shown, digits) <= round(high, digits)
    assert ("the table's medians" in said) == (stats.medians_apart(med, ratio.estimate) or outside), said


def test_01_plot_prose_reads_plainly():
    assert "which What it means reads" not in _md("01_naive_generation.ipynb")


@pytest.mark.parametrize("path", ONE, ids=lambda p: p.stem)
def test_01_sum_prints_the_sum_of_its_printed_terms(path):
    why = intro.growth_why(pd.read_csv(path), 16)
    head = why.split("\n")[0]
    assert head.startswith("Why: the lines below split the median run into the GPU's work"), head
    grew = re.search(r"median run went from \d+ to \d+ ms \(([\d.]+)x\)\.$", head)[1]
    s = re.search(r"run, ([\d.]+) × ([\d.]+) \+ ([\d.]+) × ([\d.]+) = ([\d.]+)(?: ≈ ([\d.]+))?\.$", why)
    if s is None:
        assert "- Sum:" not in why
        return
    a, w, b, i = (Decimal(s[k]) for k in range(1, 5))
    assert a + b == 1
    total = str((a * w + b * i).quantize(Decimal("0.01"), rounding="ROUND_HALF_UP"))
    assert s[5] == total, why
    assert (s[6] or s[5]) == grew and (s[6] is None) == (total == grew), why


def test_01_reviewed_run_sum():
    why = intro.growth_why(pd.read_csv(DATA / "01_naive_generation-2f157b6.csv"), 16)
    assert why.endswith("0.516 × 3.36 + 0.484 × 0.93 = 2.18."), why
    assert "from 987 to 2153 ms (2.18x).\nThe answer's 2.27x above reads every round instead: keep that one." in why
