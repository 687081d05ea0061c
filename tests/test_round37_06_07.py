"""Round 37, lessons 06 and 07, read on the frozen tables of the published run (cabd252) and older
ones. 06: the profiled gap set beside the timed cost with the reason they differ (the host's
profiled step against its timed one); the idle without the check located inside the steps; the
timeline's line (the gaps again) gone. 07: the profile line in µs only (no "93% of it" beside a
table whose "won %" is the share won back) and what the timeline shows, the two-stream loop's
host step against the event loop's; "Where it pays" without the claim line's speedups and
without ranking shares a few points apart; the right panel's late loops readable."""
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from helpers.course import budget, eos_sync, late_check  # noqa: E402
from tests.test_round26_06_07 import source  # noqa: E402
from tests.test_round27_06_07 import DATA, RUNS07  # noqa: E402
from tests.test_round28_06_07 import RUNS06, table07  # noqa: E402


def gap06(run):
    cost = pd.read_csv(DATA / f"06_eos_sync_regimes-{run}.csv")
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].max()))
    gaps = pd.read_csv(DATA / f"06_eos_sync_gaps-{run}.csv").groupby("method")[
        ["gap_before_us", "idle_inside_us", "cpu_wait_us", "cpu_us"]].median().round(1)
    return eos_sync.gap_line(gaps, steps, eos_sync.unresolved(cost)), steps, gaps


def test_06_published_gap_line():
    line, _, _ = gap06("cabd252")
    assert line == (
        "Profiled, the GPU idles 450 µs before each step with the check, after the CPU's wait, and "
        "1 µs without it. The gap is wider than the check's timed cost (299 µs) because the host's "
        "step with the check ran longer under the profiler (1707 µs against 1514 µs timed), and "
        "after the check the GPU waits for the host. Without the check the GPU's idle (14% of the "
        "timed step) lies inside the steps, 165 µs between the kernels of each replay (profiled), "
        "and in the prompt's prefill, not between steps.")


def test_06_older_run_where_the_gap_is_narrower():
    line, _, _ = gap06("898ea06")
    assert ("The gap is narrower than the check's timed cost (575 µs) because the host's step with "
            "the check ran shorter under the profiler (1681 µs against 1901 µs timed)") in line


@pytest.mark.parametrize("run", RUNS06)
def test_06_the_reason_is_given_only_where_the_numbers_agree(run):
    line, steps, gaps = gap06(run)
    m = re.search(r"(?:The gap|The gap the check adds \((\d+) µs\)) is (wider|narrower) than the "
                  r"check's timed cost \((\d+) µs\) because the host's step with the check ran "
                  r"(longer|shorter) under the profiler \((\d+) µs against (\d+) µs timed\)", line)
    if not m:
        return
    wall = steps.set_index("method")["wall_ms"]
    check, free = "CUDA graph, check every step", "CUDA graph, no check"
    cost = 1e3 * (wall[check] - wall[free])
    assert m.group(3) == f"{cost:.0f}" and m.group(6) == f"{1e3 * wall[check]:.0f}"
    assert m.group(5) == f"{gaps.at[eos_sync.CHECK, 'cpu_us']:.0f}"
    gap = gaps.at[eos_sync.CHECK, "gap_before_us"] - (
        0 if m.group(1) is None else gaps.at[eos_sync.FREE, "gap_before_us"])
    assert (m.group(2) == "wider") == (gap > cost) == (m.group(4) == "longer")
    assert not budget.about_same(gap, cost)


@pytest.mark.parametrize("run", RUNS06)
def test_06_idle_located_only_where_the_cpu_queued_ahead(run):
    line, steps, gaps = gap06(run)
    ahead = gaps.at[eos_sync.FREE, "gap_before_us"] < eos_sync.QUEUED_AHEAD_US
    assert ("lies inside the steps" in line) == ahead
    if ahead:
        assert f"{gaps.at[eos_sync.FREE, 'idle_inside_us']:.0f} µs between the kernels" in line


def test_06_notebook_shows_the_idle_inside_and_drops_the_timeline_line():
    text = source("06_eos_sync")
    assert '"idle_inside_us": "GPU idle inside µs"' in text
    assert "timeline_line" not in text and not hasattr(eos_sync, "timeline_line")
    assert "the short gaps between\n  kernels inside a step" in text


GAPS07 = pd.DataFrame({"gap_before_us": [459.0, 425.0, 7.0], "busy_us": [1040.0, 1039.0, 1040.0],
                       "cpu_us": [1700.0, 1749.0, 1190.0], "cpu_wait_us": [700.0, 12.0, 150.0]},
                      index=["sync", "interleaved", "event"])  # the published copy's medians


@pytest.mark.parametrize("run", ["cabd252", "2f157b6"])
def test_07_profile_line_says_what_the_timeline_shows(run):
    t, _ = table07(run)
    part = t[(t["regime"] == "compiled") & (t["batch_size"] == 32)]
    timed = 1e3 * part.set_index("method")["ms_per_step"]
    line = late_check.profile_line(GAPS07, timed, part)
    assert line.startswith(
        "Profiled, the GPU's idle before a step (the median over the profiled steps): 459 µs with "
        "the per-step sync, 425 µs with two streams and 7 µs with the event loop. The timeline "
        "shows why: under the profiler the two-stream loop's host step takes 1749 µs, longer than "
        "the GPU's work per step (1039 µs), so the GPU waits for the host; the event loop's takes "
        "1190 µs. Two streams cost more host work per step than one stream and an event, and the "
        "profiler magnifies it. Timed, without the profiler, two streams ran "
        f"{timed['interleaved']:.0f} µs per step against no check's {timed['no_check']:.0f} µs"), line
    assert "%" not in line and "slowed" not in line
    if run == "cabd252":
        assert "1228 µs per step against no check's 1219 µs" in line


def test_07_no_host_comparison_where_the_late_loops_take_as_long():
    even = GAPS07.assign(cpu_us=[1700.0, 1749.0, 1740.0])
    line = late_check.profile_line(even)
    assert "timeline shows why" in line and "cost more host work" not in line


@pytest.mark.parametrize("run", RUNS07)
def test_07_where_it_pays_prints_no_speedup_and_ranks_only_clear_shares(run):
    t, summary = table07(run)
    line = late_check.where_line(t, summary, True, profiled=32)
    assert not re.search(r"\dx faster", line)
    rows = summary[(summary["regime"] == "compiled")
                   & summary["check_resolved"].astype(bool)].set_index("batch_size")
    m = re.search(r"The late loops win back least at batch (\d+)", line)
    if m:
        least = int(m.group(1))
        low = {b: min(min(r["interleaved_recovered_pct"], 100), min(r["event_recovered_pct"], 100))
               for b, r in rows.iterrows()}
        assert all(low[b] - low[least] > late_check.ABOUT_SAME_PCT for b in low if b != least)


def test_07_published_where_it_pays():
    t, summary = table07("cabd252")
    assert late_check.where_line(t, summary, True, profiled=32) == (
        "Where it pays: two streams gain most over the per-step sync at batch 1; batch 32's and "
        "batch 128's are smaller. The check takes the largest share of the step at batch 1 (375 "
        "µs, 48% of the 0.79 ms step without it), so a late read can gain most there. At batches "
        "1 and 32, event ran faster than no check by the medians, but its runs can't tell the two "
        "apart.")
    claim = late_check.article_claim_line(t, summary)
    assert "1.41x faster (1.36–1.47) at batch 1" in claim  # the speedups: here, once


@pytest.mark.parametrize("run", ["cabd252", "7aa1901"])
def test_07_right_panel_reads_the_late_loops(run):
    t, _ = table07(run)
    fig, axes = plt.subplots(ncols=2)
    steps = budget.per_step(t[t["batch_size"] == 32].assign(method=lambda f: "CUDA graph, " + f["method"]))
    late_check.plot(axes, t, steps, type("P", (), {"batch_size": 32})())
    ax = axes[1]
    assert ax.get_yscale() == "symlog"
    compiled = t[(t["regime"] == "compiled") & (t["status"] == "ok")]
    ms = compiled.pivot_table(index="batch_size", columns="method", values="ms_per_step").round(3)
    labels = {x.get_text() for x in ax.texts}
    for b in ms.index:
        assert f"{1e3 * (ms.at[b, 'sync'] - ms.at[b, 'no_check']):.0f}" in labels
        for n in ("interleaved", "event"):
            assert f"{1e3 * (ms.at[b, n] - ms.at[b, 'no_check']):+.0f}" in labels
    assert "0" in [x.get_text() for x in ax.get_yticklabels()]
    plt.close(fig)


def test_07_notebook_saves_the_profiled_gaps():
    text = source("07_stream_interleaving")
    assert '"07_stream_interleaving_gaps"' in text
    assert 'csv="07_stream_interleaving_gaps"' in text
