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
    s_per = round(1e3 * round(s, 2) / 551, 1)
    if gap > 0 and extra > gap and s_per < per_op:
        assert ops.endswith(f"more than the whole {gap:.2f} ms gap there: the static step's idle "
                            f"time per operation was lower ({round(s, 2):.2f} ms \u00f7 551 = "
                            f"{s_per:.1f} \u00b5s), so the two steps' operations did not cost the "
                            "same on average."), (run, ops)
    elif gap > 0 and extra < gap and round(extra / gap, 2) < 1:
        assert f"about {extra / gap:.0%} of the {gap:.2f} ms gap there" in ops


def test_2518203_workshop_ops_line():
    table, lens = t04("2518203-workshop")
    ops = c04.ops_line(table, lens, OPS, 48)
    assert ops.endswith("(8.17 ms \u00f7 447 = 18.3 \u00b5s), the static step's 104 extra operations "
                        "(counted above) would add about 1.90 ms. That is more than the whole 1.35 ms gap "
                        "there: the static step's idle time per operation was lower (9.52 ms \u00f7 "
                        "551 = 17.3 \u00b5s), so the two steps' operations did not cost the same on "
                        "average.")


def test_no_several_lengths():
    for stem in ("04_static_cache", "02_kv_cache"):
        nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
        assert "several lengths" not in "".join("".join(c["source"]) for c in nb["cells"]), stem
