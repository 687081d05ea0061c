"""Round 32, lessons 06 and 07: the review's remaining remarks, read on every frozen real table
(full and workshop presets)."""
import pandas as pd
import pytest

from helpers.course import budget, eos_sync, late_check, profiling, stats
from tests.test_round26_06_07 import source
from tests.test_round27_06_07 import DATA, RUNS07
from tests.test_round28_06_07 import RUNS06, gap_line06


@pytest.mark.parametrize("run", RUNS06)
def test_06_profiler_line_says_one_point(run):
    """(1) The gap after the wait; round 37: then, at most, why it differs from the timed cost."""
    line, steps, gaps = gap_line06(run)
    assert line.count(". ") <= 1 and "slowed" not in line and "queues ahead" not in line
    assert (f"idles {gaps.at[eos_sync.CHECK, 'gap_before_us']:.0f} µs before each step with the "
            "check, after the CPU's wait") in line
    assert "not its size" not in line
    if run == "94d1a85":
        assert line.endswith("(1949 µs against 1565 µs timed), and after the check the GPU waits "
                             "for the host.")


@pytest.mark.parametrize("run", RUNS06)
def test_06_eager_row_in_one_sentence(run):
    """(2) The eager row's idle share and pace; "adds little" only where its medians add under
    half the CUDA-graph step's share."""
    cost = pd.read_csv(DATA / f"06_eos_sync_regimes-{run}.csv")
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].max()))
    view = profiling.check_cost(steps, eos_sync.unresolved(cost))
    line = eos_sync.eager_row_line(view, steps)
    share = 100 * view.at["eager, no check", "GPU idle ms"] / view.at["eager, no check", "wall ms"]
    assert (line != "") == (round(share) >= budget.HOST_PACE_PCT)
    assert f"idles {share:.0f}% of the step even without the check" in line
    w = steps.set_index("method")["wall_ms"]
    adds = {r: w[f"{r}, check every step"] / w[f"{r}, no check"] - 1 for r in ("eager", "CUDA graph")}
    told = "eager" not in eos_sync.unresolved(cost)  # round 33: else the rounds can't show it
    assert ("adds little" in line) == (told and adds["eager"] < adds["CUDA graph"] / 2)
    assert "its rounds cannot show what the check adds" not in line  # round 36: said once, below
    assert "(" not in line  # no range added
    if run == "94d1a85":
        assert line == ("With the eager step the GPU idles 71% of the step even without the check: "
                        "the host sets that step's pace.")
    assert "eos_sync.eager_row_line(view, step_budget)" in source("06_eos_sync")


def test_07_plain_words():
    """(3) No "middle rounds", no "rounds resolve"."""
    text = source("07_stream_interleaving")
    assert "middle rounds" not in text and "rounds resolve" not in text
    assert "The line below says where it paid most on this run." in " ".join(text.split())  # round 35


@pytest.mark.parametrize("run", RUNS07)
def test_07_second_stream_costs_time_where_the_event_ran_faster(run):
    """(4) At several batches, the batches where one stream and an event ran faster, in words."""
    t = pd.read_csv(DATA / f"07_stream_interleaving-{run}.csv")
    rows = t[(t["regime"] == "compiled") & (t["status"] == "ok")]
    line = late_check.stream_event_line(t)
    ratios = {b: stats.row_speedup(rows[rows["batch_size"] == b], "event", "interleaved")
              for b in sorted(rows["batch_size"].unique())}
    words = {b: "same" if late_check._apart_pct(r) < late_check.PRACTICAL_PCT else stats.verdict(r)
             for b, r in ratios.items()}  # round 35: under PRACTICAL_PCT, "about the same"
    faster = [b for b, w in words.items() if w == stats.FASTER]
    costs = len(words) > 1 and faster and stats.SLOWER not in words.values()
    if "come out about the same as two streams at every batch" in line:  # round 33
        return
    assert ("it costs time: one stream and an event ran faster there" in line) == bool(costs)
    assert line.count("(") == (1 if len(words) == 1 else 0)  # no new range
    if run == "94d1a85":
        assert line.startswith("The second stream buys nothing, and at batch 1 it costs time: one "
                               "stream and an event ran faster there. ")
