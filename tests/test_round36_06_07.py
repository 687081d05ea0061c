"""Round 36, lessons 06 and 07 (say each thing once), read on every frozen real table (full and
workshop presets). 06: the check's timed cost is given under the figure only (the profiler line
and the summary do not repeat its µs or ms); the eager step's "can't tell" is said in "What it
means" only; the early-stop table fits one block, its all-ok status column left out. 07: the
results table has one level of short headers and fits 80 characters; the profiled line names
the per-step sync's gap once."""
import re

import pandas as pd
import pytest

from helpers.course import budget, eos_sync, late_check, profiling
from tests.test_round26_06_07 import source
from tests.test_round27_06_07 import DATA, RUNS06 as STOP_RUNS, RUNS07
from tests.test_round28_06_07 import RUNS06, table07


def one_block(frame) -> str:
    with pd.option_context("display.width", 80, "display.max_columns", 20):
        text = repr(frame)
    assert "\\" not in text and max(map(len, text.splitlines())) <= 80, text
    return text


def lines06(run):
    cost = pd.read_csv(DATA / f"06_eos_sync_regimes-{run}.csv")
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].max()))
    unclear = eos_sync.unresolved(cost)
    view = profiling.check_cost(steps, unclear)
    figure = eos_sync.budget_line(view, rule=True, cost=cost, step_budget=steps)
    said = ["CUDA graph"] if figure else []
    return dict(cost=cost, steps=steps, unclear=unclear, view=view, figure=figure,
                eager=figure and eos_sync.eager_row_line(view, steps),
                means=eos_sync.cost_line(steps, cost, unclear, True, said),
                summary=eos_sync.summary_line(steps, unclear, True, 80, 200, cost))


@pytest.mark.parametrize("run", STOP_RUNS)
def test_06_early_stop_table_is_one_block(run):
    table = pd.read_csv(DATA / f"06_eos_sync-{run}.csv")
    shown = eos_sync.stop_view(table)
    one_block(shown)
    assert ("status" in shown.columns) == (table["status"] != "ok").any()
    assert {"cap", "tokens", "useful"} <= set(shown.columns)
    assert "eos_sync.stop_view(table)" in source("06_eos_sync")


def test_06_a_failed_row_keeps_the_status_column():
    table = pd.read_csv(DATA / "06_eos_sync-2f157b6.csv")
    table.loc[0, "status"] = "oom"
    assert "status" in eos_sync.stop_view(table).columns


@pytest.mark.parametrize("run", RUNS06)
def test_06_the_check_cost_is_said_once(run):
    r = lines06(run)
    wall = r["steps"].set_index("method")["wall_ms"]
    check, free = "CUDA graph, check every step", "CUDA graph, no check"
    assert "cannot show what the check adds" not in (r["eager"] or "")
    if not r["figure"] or "CUDA graph" in r["unclear"] or not wall[check] > wall[free]:
        return
    us = f"{1e3 * (wall[check] - wall[free]):.0f} µs"
    ms = f"{wall[check] - wall[free]:.3f} ms"
    assert ms in r["figure"]
    gaps = pd.read_csv(DATA / f"06_eos_sync_gaps-{run}.csv").groupby("method")[
        ["gap_before_us", "cpu_wait_us", "cpu_us"]].median().round(1)
    gap = eos_sync.gap_line(gaps, r["steps"], r["unclear"])
    # round 37: the timed µs only as the reason the profiled gap differs ("timed cost (299 µs)")
    assert f"{us} per step" not in gap and ms not in gap and gap.count(us) <= 1
    assert "table's medians" not in r["summary"] and " ms" not in r["summary"]
    assert re.search(r"made each step \d\.\d\dx as long\.$", r["summary"]), r["summary"]
    if "eager" in r["unclear"] and r["eager"]:  # the verdict is printed in What it means only
        assert "can't tell apart on this machine" in r["means"] or "rounds" in r["means"]


def test_06_reviewed_lines():
    r = lines06("2f157b6")
    assert r["eager"] == ("With the eager step the GPU idles 74% of the step even without the "
                          "check: the host sets that step's pace.")
    assert r["summary"] == ("This run: with the check the batch stopped after 80 of the cap's 200 "
                            "tokens (40% of the cap); with the CUDA-graph step the check's idle "
                            "made each step 1.30x as long.")
    assert "can't tell apart on this machine (0.96–1.11)" in r["means"]


@pytest.mark.parametrize("run", RUNS07)
def test_07_table_has_one_level_of_short_headers(run):
    _, summary = table07(run)
    shown = late_check.view(summary, compact=True)
    assert not isinstance(shown.columns, pd.MultiIndex)
    text = one_block(shown)
    assert text.splitlines()[0].split()[:1] == ["batch"] or "step" in text.splitlines()[0]
    for name in ("cost µs", "streams won %", "event won %"):
        assert name in shown.columns


def test_07_profiled_line_names_the_sync_gap_once():
    t, _ = table07("43fefa3")
    part = t[(t["regime"] == "compiled") & (t["batch_size"] == 32)]
    timed = 1e3 * part.set_index("method")["ms_per_step"]
    gaps = pd.DataFrame({"gap_before_us": {"sync": 417.0, "interleaved": 5.0, "event": 5.0}})
    line = late_check.profile_line(gaps, timed, part)
    assert line.count("417 µs") == 1, line
    assert line.startswith("Profiled, the GPU's idle before a step (the median over the profiled "
                           "steps): 417 µs with the per-step sync, 5 µs with two streams and 5 µs "
                           "with the event loop."), line  # round 37: no "1% of it"
