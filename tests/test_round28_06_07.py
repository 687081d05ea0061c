"""Round 28, lessons 06 and 07: the sentences the students found wrong, read on every frozen real
table (full and workshop presets)."""
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from helpers.course import budget, eos_sync, late_check, plotting, stats  # noqa: E402
from tests.test_round27_06_07 import DATA, RUNS07, source  # noqa: E402

RUNS06 = sorted(p.name[len("06_eos_sync_regimes-"):-4] for p in DATA.glob("06_eos_sync_regimes-*.csv"))


def gap_line06(run):
    """06's profiler line on one frozen run's tables, with the per-step budget and the gaps it reads."""
    cost = pd.read_csv(DATA / f"06_eos_sync_regimes-{run}.csv")
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].max()))
    gaps = pd.read_csv(DATA / f"06_eos_sync_gaps-{run}.csv").groupby("method")[
        ["gap_before_us", "cpu_wait_us", "cpu_us"]].median().round(1)
    return eos_sync.gap_line(gaps, steps, eos_sync.unresolved(cost)), steps, gaps


def table07(run):
    t = pd.read_csv(DATA / f"07_stream_interleaving-{run}.csv")
    return t, late_check.summary(t)


def cost_line06(run):
    """06's check-cost table on one frozen run, and the cost line printed from it."""
    cost = pd.read_csv(DATA / f"06_eos_sync_regimes-{run}.csv")
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].max()))
    return cost, eos_sync.cost_line(steps, cost, eos_sync.unresolved(cost))


def answer_lines07(run):
    """07's answer line at each batch size of the compiled step: (that batch's rows, the line)."""
    t, summary = table07(run)
    graph = summary[summary["regime"] == "compiled"]
    for b in graph["batch_size"]:
        part = t[(t["regime"] == "compiled") & (t["batch_size"] == b)]
        yield part, late_check.answer_line(graph[graph["batch_size"] == b].iloc[0], part)


@pytest.mark.parametrize("run", RUNS07)
def test_07_answer_never_pairs_the_faster_loop_with_the_smaller_share(run):
    for part, line in answer_lines07(run):
        x = [float(v) for v in re.findall(r"(?:two streams|one stream and an event), ([\d.]+)x faster", line)]
        pct = [float(v) for v in re.findall(r"recovers about (\d+)%", line)]
        if len(x) == 2 and len(pct) == 2:  # both paired: the printed readings agree
            assert (x[0] - x[1]) * (pct[0] - pct[1]) >= 0, line
        if "the lesson's answer, compare the loops round by round" in line:  # the shares follow the medians, and both are named
            ms = part.set_index("method")["ms_per_step"]
            assert (f"two streams {ms['sync'] / ms['interleaved']:.2f}x, the event "
                    f"{ms['sync'] / ms['event']:.2f}x") in line
            assert "recovers" not in line and "the table's medians:" not in line


def test_07_published_answer_line_reads_as_one_basis():
    t, summary = table07("898ea06")
    row = summary[(summary["regime"] == "compiled") & (summary["batch_size"] == 32)].iloc[0]
    part = t[(t["regime"] == "compiled") & (t["batch_size"] == 32)]
    assert late_check.answer_line(row, part) == (
        "In one line: with the CUDA-graph step at batch 32, reading the stop flag one step late, "
        "against the per-step sync: two streams, 1.44x faster (1.34–1.56); one stream and an "
        "event, 1.33x faster (1.11–1.51). These speedups, the lesson's answer, compare the loops "
        "round by round; the table's medians take each loop's middle time on its own, not always "
        "from the same round, so they can differ: two streams 1.35x, the event 1.37x, ranking the "
        "two the other way; of the check's 505 µs per step, two streams win back 94% and the "
        "event 97%.")


@pytest.mark.parametrize("run", RUNS07)
def test_07_a_late_loop_below_no_check_is_said_not_hidden(run):
    t, summary = table07(run)
    line = late_check.where_line(t, summary, True, profiled=32)
    rows = summary[(summary["regime"] == "compiled") & summary["check_resolved"].astype(bool)]
    for _, r in rows.iterrows():
        left = [round(1e3 * (r[n] - r["no_check"])) for n in ("interleaved", "event")]
        if line and min(left) < 0:
            # round 34: in its own sentence; round 37: batches with the same reading in one
            assert re.search(rf"At batch(es)? [\d, and]*\b{int(r['batch_size'])}\b[\d, and]*, ", line), line
            assert "can't tell the two apart" in line or "than no check, which" in line


def test_07_published_batch_128_names_its_minus_32():
    t, summary = table07("898ea06")
    line = late_check.where_line(t, summary, True, profiled=32)
    assert ("At batch 128, two streams ran faster than no check by the medians, but its runs can't "
            "tell the two apart.") in line  # round 34
    assert "at most what the check costs" not in source("07_stream_interleaving")


@pytest.mark.parametrize("run", RUNS07)
def test_07_left_over_time_is_set_against_the_runs(run):
    t, _ = table07(run)
    for b in sorted(t.loc[t["regime"] == "compiled", "batch_size"].unique()):
        part = t[(t["regime"] == "compiled") & (t["batch_size"] == b)]
        timed = 1e3 * part.set_index("method")["ms_per_step"]
        gaps = pd.DataFrame({"gap_before_us": {n: 1.0 for n in timed.index}})
        line = late_check.left_line(gaps, timed, ["interleaved", "event"], part)
        noise = all(stats.verdict(stats.row_speedup(part, n, "no_check")) == stats.NOISE
                    for n in ("interleaved", "event"))
        if line:
            assert ("less than their runs vary" in line) == noise
            assert ("does not show where that time goes" in line) == (not noise)
    assert "late_check.profile_line(gaps, timed_us, timed)" in source("07_stream_interleaving")


@pytest.mark.parametrize("run", RUNS06)
def test_06_gap_beside_the_cost_says_why_they_differ(run):
    line, steps, gaps = gap_line06(run)
    if "in this lesson's runs" in line:
        assert "That gap shows where the check's cost lies, not its size" in line


@pytest.mark.parametrize("run", RUNS06)
def test_06_eager_share_is_argued_from_the_ranges(run):
    cost, line = cost_line06(run)
    assert "By the table's medians the check adds" not in line
    if "matters less in the eager loop" in line:
        names = {r: (f"{r}, {eos_sync.CHECK}", f"{r}, {eos_sync.FREE}") for r in ("eager", "CUDA graph")}
        r = {k: stats.row_speedup(cost, f, c) for k, (c, f) in names.items()}
        assert (f"at most {round(100 * (r['eager'].high - 1))}% to the eager step, against at least "
                f"{round(100 * (r['CUDA graph'].low - 1))}% to the CUDA-graph step") in line
        assert r["eager"].high < r["CUDA graph"].low


@pytest.mark.parametrize("run", RUNS06)
def test_06_quoted_ratio_and_medians_in_one_plain_sentence(run):
    ok = pd.read_csv(DATA / f"06_eos_sync-{run}.csv")
    why = eos_sync.speedup_why(ok[ok["status"] == "ok"])
    assert "round by round" not in why and "taken apart" not in why and "because" not in why
    if why.startswith("The lesson quotes"):
        assert "single runs vary (" in why and "so the table's medians give another." in why


def test_06_figure_one_colour_one_meaning():
    ok = pd.read_csv(DATA / "06_eos_sync-898ea06.csv")
    fig, ax = plt.subplots()
    eos_sync.plot_early_stop(ax, ok[ok["status"] == "ok"], 20, 80)
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches}
    plt.close(fig)
    # red is the floor and blue the GPU's work in the budget panel beside it
    assert not colours & {plotting.PALETTE[0], plotting.PALETTE[1]}
    assert ax.get_xlabel() == ""
    assert "Compare loops only within one table: each times its own calls" in source("06_eos_sync")
