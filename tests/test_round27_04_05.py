"""Round 27 of mends of lessons 04 and 05, read on real GPU tables (tests/data/: the published
run 9bd8862 and its workshop run, and the earlier full and workshop runs).

04: the figure's line says where both loops' GPU sat idle longest at the drawn length (the
published 200-token point), and that nothing measured explains it; the operations line states the
static-minus-dynamic gap at each length and that why it moves is not measured. 05: the summary
quotes a new process's compile cost (this process's first graph) beside the timed graphs'; the
medians line says a median lies outside its range only where one does."""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import compiled as c05
from helpers.course import static_cache as c04
from helpers.course import stats

from tests.test_round25_04_05 import t05

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
RUNS = ["9bd8862", "9bd8862-workshop", "5274887", "5274887-workshop", "7aa1901",
        "7aa1901-workshop", "3deacb3", "f4bf2b7", "ba37cc3", "8973374", "90c3788", "eb4fe0c",
        "3deacb3-workshop", "f4bf2b7-workshop", "6bba703-workshop"]
RUNS04 = [r for r in RUNS if (DATA / f"04_static_cache-{r}.csv").exists()]
RUNS05 = [r for r in RUNS if (DATA / f"05_torch_compile-{r}.csv").exists()]
OPS = pd.DataFrame({"ops per step": [447, 551]}, index=["dynamic", "static"])


def t04(run):
    t = pd.read_csv(DATA / f"04_static_cache-{run}.csv")
    t = t[t["method"].isin(c04.EAGER)]
    return t, sorted(int(n) for n in t["seq_len"].unique())


def _cells(stem):
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"]]


@pytest.mark.parametrize("run", RUNS04)
def test_04_drawn_line_notes_the_idlest_length_only_where_true(run):
    table, lens = t04(run)
    point = c04.drawn_length(table, lens, True)
    line = c04.drawn_line(table, lens, point, True)
    idle = c04.host_ratios(table, lens)
    both = len(lens) > 1 and all(
        max(lens, key=lambda n: idle[n][i]) == point
        and sorted(idle[n][i] for n in lens)[-2] < idle[point][i] for i in (0, 1))
    assert ("sat idle longest per step at this length" in line) == both, (run, line)
    if both:
        assert f"the dynamic cache {idle[point][1]:.2f} ms" in line
        assert "nothing measured here explains" in line


def test_04_published_drawn_and_ops_lines():
    table, lens = t04("9bd8862")
    point = c04.drawn_length(table, lens, True)
    assert point == 200
    line = c04.drawn_line(table, lens, point, True)
    assert line.endswith("Both loops' GPU sat idle longest per step at this length (the dynamic "
                         "cache 6.42 ms, against 5.11 and 4.22 ms at the other lengths), which "
                         "nothing measured here explains: the table above gives every length.")
    ops = c04.ops_line(table, lens, OPS)
    # round 33: the printed idle times' gap at the priced length (400 here), the table's elsewhere
    # round 36: only the lengths the rounds tell apart (200 here), at the budget sentence's gap
    assert ops.endswith("static minus dynamic: +2.09 ms at 200 tokens.")
    assert "at every length" not in ops  # round 28: the count was made on one short cache


@pytest.mark.parametrize("run", RUNS04)
def test_04_ops_line_gaps_add_up(run):
    table, lens = t04(run)
    ops = c04.ops_line(table, lens, OPS)
    ratios = {n: r for n, r in c04.host_ratios(table, lens).items()
              if c04._told_apart(table, n) is not None}  # round 36: told-apart lengths only
    if not ratios:
        assert ops == ""
        return
    at = list(ratios)[-1]  # no point given: the longest length is priced (round 33: its printed
    # idle times' gap; the others as the table above gives them)
    gaps = [f"{round(s - d if n == at else c04._table_gap(table, n), 2) + 0.0:+.2f}"
            for n, (s, d, _) in ratios.items()]
    assert f"static minus dynamic: {stats.listed(gaps)} ms" in ops, (run, ops)
    assert "not measured here" not in ops  # round 28: one estimate, said as one


def test_04_notebook_wording():
    text = "\n".join(_cells("04_static_cache"))
    assert "shows only their net" not in text
    assert "the two costs together, not each apart" in text
    assert "copies\n  cost GPU time too" not in text
    assert "`keys moved`" in text
    assert "with the\nrange it may lie in" not in text


@pytest.mark.parametrize("run", RUNS05)
def test_05_summary_quotes_the_first_graph_cost(run):
    table, point, methods = t05(run)
    ct = c05.compilation(table)
    summary = c05.summary_line(table, ct, methods, point, True)
    found = c05._fresh(ct, table)
    runs = [k for k, _, n in (found[4] if found else []) if n == point]
    assert "new process" not in summary  # round 28: said nowhere
    if runs:
        span = f"{min(runs)}" if min(runs) == max(runs) else f"{min(runs)} to {max(runs)}"
        assert "first graph" not in summary  # round 36: the repay line's alone
        # the same numbers as the compilation cell's line
        line = c05.repay_line(ct, table)
        # round 33: the first graph's time once, in the check graphs' list or its own line
        assert f"{found[0]:.1f} s" in line
        for k in runs:
            assert f"{k} " in line


def test_05_published_summary():
    table, point, methods = t05("9bd8862")
    summary = c05.summary_line(table, c05.compilation(table), methods, point, True)
    assert summary.endswith("compiling the timed graph took 7.0 to 7.3 s.")  # round 36


@pytest.mark.parametrize("run", RUNS05)
def test_05_medians_line_says_outside_only_where_true(run):
    table, point, methods = t05(run)
    line = c05.medians_line(table, methods, point, True)
    if not line:
        return
    assert "can fall outside" not in line
    for m in methods[1:]:
        r = stats.row_speedup(table, m, c05.EAGER, seq_len=point)
        med = stats.medians_ratio(stats.method_trials(table, m, seq_len=point),
                                  stats.method_trials(table, c05.EAGER, seq_len=point))
        out = not round(r.low, 2) <= round(med, 2) <= round(r.high, 2)
        assert (f"{c05._mode(m)}: outside" in line or f"{c05._mode(m)} and" in line.split("(")[-2]
                if out else f"{c05._mode(m)}: outside" not in line), (run, line)
    if run == "9bd8862":
        assert "outside" not in line


def test_05_notebook_wording():
    text = "\n".join(_cells("05_torch_compile"))
    assert "proves" not in text
    assert "the full preset compiles both" not in text
    assert "(its claim 5)" not in text and "as its claim 5" not in text  # round 28: no numbering
    assert "This lesson compiles only the static cache; notebook 08 tests the finding" in text
