"""Round 28c (proportion: cut, do not add), lessons 06 and 07, read on every real table frozen in
tests/data/: each cut removes a repeat and keeps every fact and verdict.

06: the speedup's "why" no longer prints again the two ratios its headline holds; the profiler
line names the profiler's changed host timing once; the eager step's "can't tell apart on this
machine" is not restated as "this run cannot say what the check costs". 07: the eager line no
longer repeats the CUDA-graph step's cost; the answer keeps "can't be told apart" without
defining it; "Where it pays" prints each batch's time above no check once."""
import pytest

from helpers.course import eos_sync, late_check, stats
from tests.test_round27_06_07 import RUNS07, headline06
from tests.test_round28_06_07 import RUNS06, answer_lines07, cost_line06, gap_line06, table07


@pytest.mark.parametrize("run", RUNS06)
def test_06_why_keeps_its_facts_without_the_headline_numbers(run):
    ok, cap, head, why = headline06(run)
    if not why.startswith("The lesson quotes"):
        return
    r = stats.row_speedup(ok, eos_sync.CHECK, eos_sync.FREE, seq_len=cap)
    medians = stats.medians_ratio(*(stats.method_trials(ok, m, seq_len=cap)
                                    for m in (eos_sync.CHECK, eos_sync.FREE)))
    assert f"{r.estimate:.2f}x" in head and f"the table's medians: {medians:.2f}x" in head
    assert f"{r.estimate:.2f}x" not in why and f"{medians:.2f}x" not in why
    for m in (eos_sync.CHECK, eos_sync.FREE):  # the runs' spread stays
        runs = [1e3 * t for t in stats.method_trials(ok, m, seq_len=cap)]
        assert f"{min(runs):.0f} to {max(runs):.0f} ms" in why


@pytest.mark.parametrize("run", RUNS06)
def test_06_profiler_line_says_each_thing_once(run):
    line, steps, gaps = gap_line06(run)
    assert "need not match" not in line
    if "in this lesson's runs" in line:
        wall = steps.set_index("method")["wall_ms"]
        us = 1e3 * (wall[f"CUDA graph, {eos_sync.CHECK}"] - wall[f"CUDA graph, {eos_sync.FREE}"])
        assert line.endswith(f"the check costs {us:.0f} µs per step in this lesson's runs.")
        assert line.count("profiler") == 1  # round 32: named once, "without the profiler"


@pytest.mark.parametrize("run", RUNS06)
def test_06_overlapping_rounds_keep_the_verdict_once(run):
    cost, line = cost_line06(run)
    assert "cannot say what the check costs" not in line
    for part in line.split("\n"):
        if "how many times faster the loop without the check ran" in part:
            assert "can't tell apart on this machine (" in part and "its rounds overlap (" in part


@pytest.mark.parametrize("run", RUNS07)
def test_07_eager_line_keeps_its_ranges_and_drops_the_graph_cost(run):
    t, summary = table07(run)
    line = late_check.eager_line(summary, True, t)
    eager = summary[summary["regime"] == "eager"]
    if eager.empty or bool(eager["check_resolved"].iloc[0]):
        return
    b = int(eager["batch_size"].iloc[0])
    for m in ("sync", "no_check"):
        ms = late_check._rounds_ms(t, "eager", b, m)
        assert f"{min(ms):.2f} to {max(ms):.2f}" in line
    assert "µs" not in line
    graph = summary[(summary["regime"] == "compiled") & (summary["batch_size"] == b)]
    if not graph.empty and bool(graph["check_resolved"].iloc[0]):
        assert "more than the check costs with the CUDA-graph step" in line  # round 30


@pytest.mark.parametrize("run", RUNS07)
def test_07_answer_and_where_say_each_thing_once(run):
    for part, line in answer_lines07(run):
        assert "their runs vary more than they differ" not in line
        # round 29: stream_event_line, printed next, says whether the two are told apart
        assert "the two can't be told apart" not in line
    t, summary = table07(run)
    where = late_check.where_line(t, summary, True, profiled=32)
    for span in __import__("re").findall(r"leaving (\S+(?: to \S+)?) µs per step above", where):
        assert where.count(f"{span} µs") == 1, where
