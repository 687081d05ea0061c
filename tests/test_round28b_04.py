"""Round 28b of lesson 04, read on every frozen GPU table (tests/data/04_static_cache-*.csv, full
and workshop): where the price of the static step's extra operations exceeds the idle gap, the
operations line says so plainly and why the two can differ (the static step's own idle time per
operation, computed), not "as much as the whole gap or more"; no "several lengths" for a preset
that runs one."""
import json
from pathlib import Path

import pytest

from helpers.course import static_cache as c04

from tests.test_round27_04_05 import OPS, t04
from tests.test_round28_04_05 import RUNS04, price04

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("run", RUNS04)
def test_ops_line_says_plainly_how_the_price_meets_the_gap(run):
    ops, _, s, idle, gap, per_op, extra = price04(run)
    assert "or more" not in ops and "as much as" not in ops
    assert "gap there" not in ops  # round 35: the price against the medians' gap is cut


def test_2518203_workshop_ops_line():
    table, lens = t04("2518203-workshop")
    ops = c04.ops_line(table, lens, OPS, 48)
    assert ops == ("The GPU's idle time per step, static minus dynamic: +1.35 ms at 48 tokens.")


def test_no_several_lengths():
    for stem in ("04_static_cache", "02_kv_cache"):
        nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
        assert "several lengths" not in "".join("".join(c["source"]) for c in nb["cells"]), stem
