"""Round 28b of lesson 02, read on every frozen GPU table (tests/data/02_kv_cache-*.csv, full and
workshop): each length's verdict names the table's medians where their ratio lies more than
stats.MEDIANS_APART from the rounds' estimate (the 2518203 workshop run: 143.3 / 124.1 = 1.15x
beside a printed 1.05x); the prose claims no constant host cost, no "several lengths" for a
two-length preset, and gives the reason the bars' ratio can differ from the gain."""
import glob
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import growth, stats

ROOT = Path(__file__).resolve().parents[1]
T02 = sorted(glob.glob(str(ROOT / "tests" / "data" / "02_kv_cache-*.csv")))
NAMES = {"naive": "naive", "kv_cache": "KV cache"}


def _text():
    nb = json.loads((ROOT / "notebooks" / "02_kv_cache.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", T02, ids=lambda p: Path(p).stem)
def test_length_line_names_the_medians_where_apart(path):
    t = pd.read_csv(path)
    for n in sorted(int(x) for x in t["seq_len"].unique()):
        line = growth.length_line(t, "kv_cache", "naive", True, n, NAMES)
        r = stats.row_speedup(t, "kv_cache", "naive", seq_len=n)
        m = (t[(t.method == "naive") & (t.seq_len == n)].iloc[0].median_s
             / t[(t.method == "kv_cache") & (t.seq_len == n)].iloc[0].median_s)
        if stats.medians_apart(m, r.estimate):
            assert "the table's medians: " in line, (path, n, line)
            word, *_ = stats._printed(r, m)
            shown = m if word != stats.SLOWER else 1 / m
            if word == stats.NOISE and m < 1:
                assert f"i.e. {1 / m:.2f}" in line or f"i.e. {1 / m:.3f}" in line, line
            else:
                assert f"{shown:.2f}x" in line or f"{shown:.3f}x" in line, (path, n, line)
        assert line.count("the table's medians") <= 1 and "its speedup" not in line


def test_2518203_workshop_lines():
    t = pd.read_csv(ROOT / "tests" / "data" / "02_kv_cache-2518203-workshop.csv")
    assert growth.length_line(t, "kv_cache", "naive", True, 20, NAMES) == (
        "  20 tokens: KV cache against naive: 1.05x, can't tell apart on this machine (0.92–1.19; "
        "the table's medians: 1.15x faster)\n             one round of 8 (the slowest KV cache run) "
        "read 0.76x; without it, the other 7 can't tell the loops apart either")  # round 31, 33
    assert growth.length_line(t, "kv_cache", "naive", True, 120, NAMES) == (
        " 120 tokens: KV cache against naive: 1.28x faster (1.22–1.35; the table's medians: 1.33x)")


def test_prose_claims_no_constant_host_cost():
    text = _text()
    assert "about the same at every length" not in text
    assert "can still grow with the length: the line above says whether it did here" not in text  # round 29: cut
    # the line above says so whether it grew or not, on every table
    for path in T02:
        why = growth.pace_lines(pd.read_csv(path), "kv_cache", "naive", NAMES)[-1]
        assert ("This time grew with the length, in its fastest run too" in why) != (
            "shows no cost that grows" in why), path


def test_plot_paragraph_and_intro():
    text = _text()
    assert "so their ratio is\nnot the gain" not in text
    assert "the two medians can come\nfrom different rounds" in text
    assert "several lengths" not in text
    assert "at the lengths the setup prints" in text
