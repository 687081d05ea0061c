"""Round 25's mends of 06 and 07, read on run 7aa1901's tables (full and workshop presets) and the
earlier real runs: 06 draws only the CUDA-graph step on its budget figure (the eager step in a line
with its rounds' range), says when the token ratio lies inside early stopping's range, and names
the longest row; 07 says what a profiled late gap is a share of, states what the timed table still
leaves, where the late read pays least, and labels its figures' batch sizes."""
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from helpers.course import budget, eos_sync, late_check, stats

DATA = Path(__file__).resolve().parent / "data"
RUNS = ["7aa1901", "7aa1901-workshop", "3deacb3", "3deacb3-workshop", "f4bf2b7",
        "f4bf2b7-workshop", "6bba703-workshop", "ba37cc3", "8973374", "90c3788", "eb4fe0c"]


def load(name, run):
    path = DATA / f"{name}-{run}.csv"
    if not path.exists():
        pytest.skip(f"{path.name} not here")
    return pd.read_csv(path)


def early_stop(run):
    t = load("06_eos_sync", run)
    if "tokens" not in t:
        t["tokens"] = [80 if m == eos_sync.CHECK else c for m, c in zip(t["method"], t["seq_len"])]
    return t[t["status"] == "ok"]


@pytest.mark.parametrize("run", RUNS)
def test_06_token_ratio_inside_the_range_is_said_only_with_a_printed_range(run):
    ok = early_stop(run)
    cap = max(ok["seq_len"])
    said = eos_sync.stop_speedup(ok, cap)
    why = eos_sync.speedup_why(ok)
    r = stats.row_speedup(ok, eos_sync.CHECK, eos_sync.FREE, seq_len=cap)
    runs = min(len(stats.method_trials(ok, m, seq_len=cap)) for m in (eos_sync.CHECK, eos_sync.FREE))
    inside = r.low <= 2.5 <= r.high and runs >= stats.MIN_TRIALS
    assert ("lies inside the printed range" in why) == inside
    if inside:
        assert "give no range" not in said and "–" in said
    assert "longest row" in eos_sync.stop_bound(ok, cap)
    assert "tokens per row" not in why


def test_06_published_run_reads_the_token_ratio_and_leaves_the_eager_step_out():
    ok = early_stop("7aa1901")
    assert eos_sync.stop_bound(ok, 200) == (
        "with early stopping the batch stopped with its longest row, after 80 of the cap's 200 "
        "tokens (a token ratio of 2.50)")
    assert eos_sync.stop_speedup(ok, 200) == "timed against running to the cap, 2.64x faster (2.04–3.23)"
    assert eos_sync.speedup_why(ok).startswith(
        "The token ratio (2.50) lies inside the printed range: the time saved is what the steps "
        "saved predict, to within this run's noise. The loop with the check ran the same 80 tokens (its "
        "longest row) at caps 100 and 200")
    cost = load("06_eos_sync_regimes", "7aa1901")
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].iloc[0]))
    line = eos_sync.cost_line(steps, cost, eos_sync.unresolved(cost))
    eager = line.split("\n")[0]
    assert "(5.42 to 8.54 ms per step with the check, 5.47 to 8.08 without it)" in eager
    assert eager.endswith(" The figure leaves the eager step out.")
    assert "figure" not in line.split("\n")[1]


@pytest.mark.parametrize("run", RUNS)
def test_06_budget_figure_draws_the_cuda_graph_rows_only(run):
    cost = load("06_eos_sync_regimes", run)
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].iloc[0]))
    drawn = list(eos_sync.graph_rows(steps)["method"])
    assert drawn == [f"CUDA graph, {eos_sync.CHECK}", f"CUDA graph, {eos_sync.FREE}"]
    line = eos_sync.cost_line(steps, cost, eos_sync.unresolved(cost))
    assert line.split("\n")[0].startswith("With the eager step")
    assert line.count("The figure leaves the eager step out.") == 1
    eager_only = steps[steps["method"].str.startswith("eager")]  # a CPU run: all its rows
    assert list(eos_sync.graph_rows(eager_only)["method"]) == list(eager_only["method"])


@pytest.mark.parametrize("run", RUNS)
def test_07_profile_line_names_the_share_and_the_timed_left_over(run):
    t = load("07_stream_interleaving", run)
    gaps = pd.DataFrame({"gap_before_us": {"sync": 960.0, "interleaved": 4.0, "event": 4.0}})
    for b in sorted(t[t["regime"] == "compiled"]["batch_size"].unique()):
        part = t[(t["regime"] == "compiled") & (t["batch_size"] == b)]
        timed = 1e3 * part.set_index("method")["ms_per_step"]
        line = late_check.profile_line(gaps, timed)
        assert "960 µs with the per-step sync, 4 µs with two streams" in line  # round 37: µs only
        assert "% of it" not in line and line.count("960 µs") == 1
        left = [1e3 * (round(timed[n] / 1e3, 3) - round(timed["no_check"] / 1e3, 3))
                for n in ("interleaved", "event")]
        assert ("still run" in line) == (min(left) > 4.0)
        if min(left) > 4.0:
            assert f"{min(left):.0f}" in line and "does not show where that time goes" in line


def test_07_published_run_says_where_the_late_read_pays_least():
    t = load("07_stream_interleaving", "7aa1901")
    line = late_check.where_line(t, late_check.summary(t))
    assert "per step above no check" not in line  # round 34: the table gives it
    assert line.endswith("The late loops win back least at batch 1: they leave 46–53% of the "
                         "check's cost there.")  # round 35
    part = t[(t["regime"] == "compiled") & (t["batch_size"] == 32)]
    timed = 1e3 * part.set_index("method")["ms_per_step"]
    gaps = pd.DataFrame({"gap_before_us": {"sync": 960.0, "interleaved": 4.0, "event": 4.0}})
    assert late_check.profile_line(gaps, timed).endswith(
        " Timed, the late loops still run 35–58 µs per step above no check here; the profile does "
        "not show where that time goes.")


@pytest.mark.parametrize("run", RUNS)
def test_07_where_line_names_the_least_paying_batch_once(run):
    t = load("07_stream_interleaving", run)
    s = late_check.summary(t)
    line = late_check.where_line(t, s)
    if not line:
        return
    assert line.count("pays least") <= 1
    assert "wins back the smallest share" not in line  # round 29: said per loop


def test_07_footers_name_the_batch_each_figure_shows():
    full = SimpleNamespace(batch_size=32, batch_sizes=[1, 32, 128])
    assert late_check.figure_batches(full) == "32 (left), 1, 32, 128 (right)"
    assert late_check.figure_batches(SimpleNamespace(batch_size=16, batch_sizes=[16])) == "16"
    src = (Path(__file__).resolve().parent.parent / "notebooks" / "07_stream_interleaving.ipynb").read_text()
    assert "batch=late_check.figure_batches(P)" in src and "batch=P.batch_size" in src
