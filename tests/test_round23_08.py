"""Round 23's review of lesson 08, checked on real GPU tables: the 15:19 run of f4bf2b7 (frozen in tests/data)
and the round-22 workshop copies (tests/data, "6bba703-workshop")."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, claims, summary

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def _tables(run):
    if run == "published":
        read = lambda name: pd.read_csv(DATA / f"{name}-f4bf2b7.csv")  # noqa: E731
    else:
        read = lambda name: pd.read_csv(DATA / f"{name}-{run}.csv")  # noqa: E731
    return read("08_results_summary"), {name: read(name) for name in claims.TABLES.values()}


def _printed(run):
    ladder, tables = _tables(run)
    frame = claims.check_claims(ladder, tables, preset="workshop" if "workshop" in run else "full")
    return ladder, tables, frame, claims.numbers(frame)


@pytest.mark.parametrize("run", ["published", "6bba703-workshop"])
def test_the_numbers_say_rounds_against_medians_nowhere(run):
    """The rounds' estimate against the table's medians is said once, in the Measure text; the
    claim lines carry one number each, with no "i.e." inversions (6a's "0.99x, i.e. 1.01x
    smaller")."""
    _, _, frame, lines = _printed(run)
    # round 28: claim 4's parts name notebook 04's medians where they lie apart from the rounds
    body = re.sub(r"; notebook\s+04's medians: [^)]*", "", "\n".join(lines[2:]))
    # round 27: claim 4's timed parts give every range as a speed-up, "0.78x, i.e. 1.29x slower"
    assert "i.e." not in "\n".join(l for l in lines[2:] if not l.startswith("4"))
    for word in ("medians", "from the rounds", "estimates"):
        assert word not in body, (word, body)
    assert all(len(line) <= 100 for text in lines for line in text.split("\n"))


def test_claim_6_parts_print_both_gains_and_their_ratios_range():
    """Published: "1.34x at batch 1 vs 1.36x at 32: can't tell apart on this machine (0.87–1.15)";
    the ratio of the two printed gains lies inside the printed range."""
    _, _, frame, lines = _printed("published")
    parts = [" ".join(l.split()) for l in lines if l.startswith("6")]  # round 32: wrapped
    assert len(parts) == 2
    for line in parts:
        found = re.search(r"(\d\.\d\d)x at batch 1 vs (\d\.\d\d)x at (\d+): .*\((\d\.\d\d)–(\d\.\d\d)\)",
                          line)
        assert found, line
        g1, gb, _, low, high = found.groups()
        assert float(low) <= float(g1) / float(gb) <= float(high), line
    assert parts[0].startswith("6a (notebook 07) 1.34x at batch 1 vs 1.36x at 32: 0.99x, can't "
                               "tell apart")  # round 32: the ratio the range bounds, first


@pytest.mark.parametrize("run,columns", [
    ("published", ["× naive (rounds)", "÷ floor", "× generate() static (rounds)"]),
    ("6bba703-workshop", ["× naive (rounds)", "÷ floor", "× generate() (rounds)"])])
def test_the_ladder_shows_one_peer_column(run, columns):
    ladder, _ = _tables(run)
    view = summary.view(ladder)
    assert [c for c in view.columns if c.startswith(("×", "÷"))] == columns


def test_no_sizes_line_with_the_ladder_alone():
    ladder, _ = _tables("published")
    lines = claims.numbers(claims.check_claims(ladder, {}))
    assert not any(line.startswith("Each notebook") for line in lines)
