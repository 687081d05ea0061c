"""Round 36 (proportion): 05's idle line gives only each mode's share of the eager step's GPU
idle (the ms are the budget sentences'), its summary leaves the repay counts and the first graph
to the repay line, and 04's idle gaps are printed only at the lengths the rounds tell apart."""
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, stats
from helpers.course import compiled as c05
from helpers.course import static_cache as c04

DATA = Path(__file__).resolve().parent / "data"
TABLES04 = sorted(DATA.glob("04_static_cache-*.csv"))
TABLES05 = sorted(DATA.glob("05_torch_compile-*.csv"))


def _methods05(t):
    return [m for m in [c05.EAGER, c05.name("default"), c05.name("reduce-overhead")]
            if m in set(t["method"])]


@pytest.mark.parametrize("path", TABLES05, ids=lambda p: p.stem)
def test_05_idle_line_repeats_no_budget_number(path):
    t = pd.read_csv(path)
    point, methods = int(t["seq_len"].max()), _methods05(t)
    steps = budget.per_step(t, methods, seq_len=point)
    line = c05.idle_line(steps, methods)
    assert " ms" not in line  # the times per step are the budget sentences'
    assert line.count("% ") + line.count("%;") + line.count("%.") + line.count("%,") == len(methods) - 1
    summary = c05.summary_line(t, c05.compilation(t), methods, point, True)
    assert "repaid" not in summary and "first graph" not in summary


def test_05_reviewed_run_lines():
    t = pd.read_csv(DATA / "05_torch_compile-2f157b6.csv")
    methods = _methods05(t)
    steps = budget.per_step(t, methods, seq_len=100)
    assert c05.idle_line(steps, methods) == (
        "Against eager, the GPU's idle time per step fell: default by 63%, reduce-overhead by "
        "93%; most of each gain is time the GPU waited on the host, not faster kernels.")
    assert c05.summary_line(t, c05.compilation(t), methods, 100, True) == (
        "In one line: at 100 tokens, against the eager static-cache loop: reduce-overhead 7.65x "
        "faster (7.49–7.82) and default 2.47x faster (2.39–2.57); compiling the timed graph took "
        "8.8 to 11.0 s.")


@pytest.mark.parametrize("path", TABLES04, ids=lambda p: p.stem)
def test_04_idle_gaps_only_where_the_rounds_tell_apart(path):
    t = pd.read_csv(path)
    lens = sorted(int(n) for n in t["seq_len"].unique())
    point = c04.drawn_length(t, lens, True)
    told = [n for n in lens if c04._told_apart(t, n) is not None]
    line = c04.ops_line(t, lens, None, point)
    if not told:
        assert line == ""
        return
    assert line.endswith(f"ms at {stats.listed([str(n) for n in told])} tokens.")
    # every gap printed has the sign of its verdict (the static cache slower: more idle)
    gaps = [float(g) for g in re.findall(r"[+-]\d+\.\d+", line)]
    assert len(gaps) == len(told)
    for n, gap in zip(told, gaps):
        assert (gap > 0) == (stats.verdict(c04._told_apart(t, n)) == stats.SLOWER)


def test_04_reviewed_run_leaves_out_the_400_token_medians_gap():
    t = pd.read_csv(DATA / "04_static_cache-2f157b6.csv")
    assert c04.ops_line(t, [100, 200, 400], None, 200) == (
        "The GPU's idle time per step, static minus dynamic: +0.20 ms at 200 tokens.")
