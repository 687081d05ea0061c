"""Round 36, lessons 00 and 01: the order count names the position that took longer in more
rounds, on every frozen 00 table; two bookkeeping asides are cut from 00; 01's Memory bullet no
longer reads "up to the whole card; there ... retries" beside a row that filled the card with no
retry."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers.course import intro

ROOT = Path(__file__).resolve().parents[1]
ZERO = sorted((ROOT / "tests" / "data").glob("00_setup-*.csv"))
OLD = ("The loop that ran first took longer in {count} rounds; alternating the order keeps "
       "a cost of running first{largely} out of the estimate.")


def _md(name):
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", ZERO, ids=lambda p: p.stem.split("-", 1)[1])
def test_00_order_line_names_the_slower_position(path):
    by_round = intro.rounds(pd.read_csv(path), "loop A", "loop B")
    a, b = by_round["A ms"].to_numpy(float), by_round["B ms"].to_numpy(float)
    order = by_round["order"].astype(str).str[0].to_numpy()
    line = intro._first_place(a, b, order)
    q = np.where(order == "A", a / b, b / a)
    k, first, second = len(q), int((q > 1).sum()), int((q < 1).sum())
    who, m = ("first", first) if first >= second else ("second", second)
    assert m * 2 >= k  # the count printed is never the minority
    told = f"all {k}" if m == k else f"{m} of the {k}"
    assert line.startswith(f"The loop that ran {who} took longer in {told} rounds")
    about = 2 * m - k <= 2  # round 37: about half says plainly that there is no such cost
    assert ("about half: this run shows no cost" in line) == about
    assert ("largely" in line) == (k % 2 == 1 and not about) and "none of" not in line
    old = OLD.format(count=f"all {k}" if first == k else f"none of the {k}" if first == 0
                     else f"{first} of the {k}", largely="" if k % 2 == 0 else " largely")
    assert len(line) <= len(old)  # round 36: never longer


def test_00_reviewed_run_says_second():
    by_round = intro.rounds(pd.read_csv(ROOT / "tests/data/00_setup-2f157b6.csv"), "loop A", "loop B")
    a, b = by_round["A ms"].to_numpy(float), by_round["B ms"].to_numpy(float)
    line = intro._first_place(a, b, by_round["order"].astype(str).str[0].to_numpy())
    assert line == ("The loop that ran second took longer in 6 of the 8 rounds; alternating the "
                    "order keeps such a cost out of the estimate.")


def test_00_asides_are_cut():
    text = _md("00_setup.ipynb")
    assert "no later lesson reads it" not in text and "cpu_median_s`) only shows" not in text
    assert "once more than B" not in text and "(the column `order` below). In the right panel" in text
    assert "## Idea 1: the step's time budget\nIdea 1 takes a decode step" in text


def test_01_memory_bullet_matches_a_full_card_without_retries():
    text = " ".join(_md("01_naive_generation.ipynb").split())
    assert "up to the whole card" not in text
    assert ("Peak reserved grows towards the sum of all steps' logits; where the card cannot hold "
            "it, the allocator frees its cache and retries") in text
    # the reviewed run: 200 tokens filled the card (139.1 GiB) with no retry, 300 retried
    t = pd.read_csv(ROOT / "tests/data/01_naive_generation-2f157b6.csv").set_index("seq_len")
    assert t.loc[200, "alloc_retries"] == 0 and t.loc[300, "alloc_retries"] > 0
    assert round(t.loc[200, "peak_reserved_bytes"] / 2**30, 1) == round(
        t.loc[300, "peak_reserved_bytes"] / 2**30, 1)
