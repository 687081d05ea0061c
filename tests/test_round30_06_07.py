"""Round 30, lessons 06 and 07: the sentences the students found unclear, read on every frozen
real table (full and workshop presets)."""
import re

import pandas as pd
import pytest

from helpers.course import budget, eos_sync, late_check, profiling, stats
from tests.test_round28_06_07 import RUNS06
from tests.test_round27_06_07 import DATA, RUNS07, source

INTERVAL = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")


def lines06(run):
    cost = pd.read_csv(DATA / f"06_eos_sync_regimes-{run}.csv")
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].max()))
    unclear = eos_sync.unresolved(cost)
    view = profiling.check_cost(steps, unclear)
    fig = eos_sync.budget_line(view, rule=True, cost=cost, step_budget=steps)
    said = ["CUDA graph"] if fig else []
    return cost, steps, unclear, view, fig, eos_sync.cost_line(steps, cost, unclear, True, said)


@pytest.mark.parametrize("run", RUNS06)
def test_06_answer_given_once_under_the_figure(run):
    """(1) The CUDA-graph step's timed verdict, with its range, is in the figure's line, and the
    "What it means" lines no longer repeat it; no range is added or lost."""
    cost, steps, unclear, view, fig, line = lines06(run)
    old = eos_sync.budget_line(view, rule=True) + "\n" + eos_sync.cost_line(steps, cost, unclear)
    assert "the rounds decide (below)" not in fig
    assert "timed, " in fig or "without it the step runs " in fig
    assert "With the CUDA graph step" not in line
    assert len(INTERVAL.findall(fig + "\n" + line)) == len(INTERVAL.findall(old))
    if "CUDA graph" in unclear:
        assert "can't tell apart on this machine" in fig or "rounds" in fig


def test_06_reviewed_figure_line():
    *_, fig, line = lines06("74b9f45-workshop")
    assert "idle went from 0.243 to 0.661 ms per step; timed, how many times faster the loop " \
           "without the check ran: can't tell apart on this machine (0.95–1.42)" in fig
    *_, fig, line = lines06("6e28961")
    assert "(1.279 -> 1.623 ms): without it the step runs 1.26x faster (1.25–1.28; the table's " \
           "medians: 1.27x)." in fig
    assert "(the bottom of its range, above)" in line


@pytest.mark.parametrize("run", RUNS06)
def test_06_summary_prints_a_number_in_every_preset(run):
    cost, steps, unclear, *_ = lines06(run)
    for judge in (True, False):
        line = eos_sync.summary_line(steps, unclear, judge, 32, 80, cost)
        assert re.search(r"\d+(\.\d+)?\s*(x|ms|%)", line), line
        assert not INTERVAL.search(line)
        assert ("smoke run" in line) == (not judge)
    text = source("06_eos_sync")
    assert "print(eos_sync.summary_line(step_budget, unclear, judge, int(lengths.max())" in text


def test_06_simple_model_wording():
    text = source("06_eos_sync")
    assert "idles through\n  all of that work" not in text and "all of that work" not in text
    assert "until that launch" in text


def _answers07(run):
    t = pd.read_csv(DATA / f"07_stream_interleaving-{run}.csv")
    s = late_check.summary(t)
    g = s[s["regime"] == "compiled"]
    for b in g["batch_size"]:
        part = t[(t["regime"] == "compiled") & (t["batch_size"] == b)]
        yield part, late_check.answer_line(g[g["batch_size"] == b].iloc[0], part)


@pytest.mark.parametrize("run", RUNS07)
def test_07_headline_names_the_medians_where_they_print_otherwise(run):
    """(4) A headline speedup that prints otherwise than the table's medians names them."""
    for part, line in _answers07(run):
        if "These speedups, the lesson's answer" in line:
            continue
        ms = part.set_index("method")["ms_per_step"]
        for name, called in (("interleaved", "two streams"), ("event", "one stream and an event")):
            m = re.search(re.escape(called) + r", ([\d.]+)x faster \(([^)]*)\)", line)
            if not m:
                continue
            medians = f"{ms['sync'] / ms[name]:.2f}"
            assert (m.group(1) != medians) == (f"the table's medians: {medians}x" in m.group(2)), line


def test_07_reviewed_headline():
    _, line = list(_answers07("74b9f45"))[1]
    assert "two streams, 1.23x faster (1.18–1.28; the table's medians: 1.26x)" in line
    assert "one stream and an event, 1.28x faster (1.24–1.33; the table's medians: 1.27x)" in line


@pytest.mark.parametrize("run", RUNS07)
def test_07_eager_line_is_plain(run):
    t = pd.read_csv(DATA / f"07_stream_interleaving-{run}.csv")
    line = late_check.eager_line(late_check.summary(t), True, t)
    assert "too noisy to measure" not in line and "step's size" not in line
    summary = late_check.summary(t)
    graph = summary[(summary["regime"] == "compiled") & (summary["batch_size"] == 32)]
    if m := re.search(r"spread over up to ([\d.]+) ms, more than the check costs", line):
        assert 1e3 * float(m.group(1)) > float(graph["check_cost_us"].iloc[0])


def test_07_reviewed_eager_line():
    t = pd.read_csv(DATA / "07_stream_interleaving-74b9f45.csv")
    assert late_check.eager_line(late_check.summary(t), True, t).endswith(
        "each loop's rounds spread over up to 2.30 ms, more than the check costs with the "
        "CUDA-graph step, so they cannot show a cost of that size. The figure leaves it out.")
