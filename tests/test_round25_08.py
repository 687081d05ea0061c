"""Round 25's review of lesson 08, checked on the published run of 7aa1901 and its workshop run
(frozen in tests/data), and on the earlier full runs frozen there."""
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, claims, summary

DATA = Path(__file__).resolve().parent / "data"
RUNS = ["7aa1901", "7aa1901-workshop", "3deacb3", "f4bf2b7", "ba37cc3", "8973374", "90c3788",
        "3deacb3-workshop", "f4bf2b7-workshop", "6bba703-workshop"]


def _read(name, run):
    path = DATA / f"{name}-{run}.csv"
    if not path.exists() and name.startswith("01") and run == "90c3788":
        path = DATA / f"{name}-{run}-published.csv"
    return pd.read_csv(path) if path.exists() else None


def _printed(run):
    ladder = _read("08_results_summary", run)
    tables = {t: _read(t, run) for t in claims.TABLES.values()}
    frame = claims.check_claims(ladder, tables, preset="workshop" if "workshop" in run else "full",
                                compile_dynamic=True)
    return ladder, tables, frame, claims.numbers(frame)


@pytest.mark.parametrize("run", RUNS)
def test_claim_7_prints_the_rule_that_decided_it(run):
    _, _, frame, lines = _printed(run)
    row = frame.iloc[6]
    rule = {claims.EXCEEDED: "exceeded: the whole range lies above 6x",
            claims.REPRODUCED: "reproduced: the range's lower end is between 4x and 6x",
            claims.NOT_REPRODUCED: "not reproduced: the whole range lies below 4x",
            claims.CANT_TELL: "can't tell: the range runs across 4x"}[row["verdict"]]
    number = re.sub(r", its upper end above 6x: on the edge of exceeded$", "", row["number"])
    assert number.endswith("; " + rule), row["number"]  # round 27: "on the edge" where above 6x
    assert run != "7aa1901" or row["verdict"] == claims.EXCEEDED


def test_4b_inverts_the_printed_estimate():
    _, _, _, lines = _printed("7aa1901")
    four = [l for l in lines if l.startswith("4b")][0]
    assert four.startswith("4b (notebook 04) 0.95x, i.e. 1.05x slower"), four
