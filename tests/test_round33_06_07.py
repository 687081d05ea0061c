"""Round 33, lessons 06 and 07: the review's remarks, read on every frozen real table (full and
workshop presets)."""
import math
import re

import pandas as pd
import pytest

from helpers.course import budget, eos_sync, late_check, profiling, stats
from tests.test_round26_06_07 import source
from tests.test_round27_06_07 import DATA, RUNS07
from tests.test_round28_06_07 import RUNS06


def cost06(run):
    cost = pd.read_csv(DATA / f"06_eos_sync_regimes-{run}.csv")
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].max()))
    return cost, steps, eos_sync.unresolved(cost)


@pytest.mark.parametrize("run", RUNS06)
def test_06_summary_quotes_the_rounds_estimate(run):
    """(1) The closing line's factor is the one the figure's line quotes; the ms are medians."""
    cost, steps, unclear = cost06(run)
    line = eos_sync.summary_line(steps, unclear, True, 80, 200, cost)
    m = re.search(r"made each step (\d+\.\d+)x as long\.$", line)  # round 36: the ms said once
    assert (m is not None) == ("CUDA graph" not in unclear)
    if m:
        said = stats.say(cost, "CUDA graph, no check", "CUDA graph, check every step", True)
        assert said.startswith(f"{m.group(1)}x faster (")
    if run == "4448ee4":
        assert line.endswith("made each step 1.41x as long.")


@pytest.mark.parametrize("run", RUNS06)
def test_06_eager_row_says_what_the_rounds_show(run):
    """(2) "adds little" only where the eager rounds tell the loops apart."""
    cost, steps, unclear = cost06(run)
    line = eos_sync.eager_row_line(profiling.check_cost(steps, unclear), steps)
    if "eager" in unclear and line:
        assert "adds little" not in line
        assert line.endswith("the host sets that step's pace.")  # round 36: "can't tell" below
    if run == "4448ee4":
        assert line == ("With the eager step the GPU idles 75% of the step even without the "
                        "check: the host sets that step's pace.")


@pytest.mark.parametrize("run", RUNS06)
def test_06_slow_cap_named_only_where_every_run_was_slower(run):
    """(3) "the whole cap-N comparison ran slower" only where every run of both loops at that cap
    took longer per token than that loop's median at the other cap."""
    t = pd.read_csv(DATA / f"06_eos_sync-{run}.csv")
    ok = t[t["status"] == "ok"]
    why = eos_sync.speedup_why(ok)
    m = re.search(r"At cap (\d+) every run of both loops took longer per token than that loop's "
                  r"median run at cap (\d+)", why)  # round 35: against the median, as checked
    if not m:
        return
    slow, fast = int(m.group(1)), int(m.group(2))
    for method in (eos_sync.CHECK, eos_sync.FREE):
        rows = ok[ok["method"] == method].set_index("seq_len")
        per = lambda c: 1e3 / int(rows.at[c, "tokens"])  # noqa: E731
        assert min(stats.method_trials(ok, method, seq_len=slow)) * per(slow) > \
            rows.at[fast, "median_s"] * per(fast)
    assert "single runs vary" not in why.split("At cap")[1]
    if run == "4448ee4":
        assert why.endswith("At cap 100 every run of both loops took longer per token than that "
                            "loop's median run at cap 200 (9.8 and 9.7 ms per token by the medians, against 6.0 and 6.1): "
                            "the whole cap-100 comparison ran slower, so the same 80 tokens with "
                            "the check took 784.2 ms at cap 100 and 481.8 ms at cap 200.")


@pytest.mark.parametrize("run", RUNS07)
def test_07_about_the_same_only_within_a_few_percent(run):
    """(4) "about the same (within N%)" where every batch's reading is within ABOUT_SAME_PCT and
    one is told apart; N is the largest, rounded up."""
    t = pd.read_csv(DATA / f"07_stream_interleaving-{run}.csv")
    rows = t[(t["regime"] == "compiled") & (t["status"] == "ok")]
    line = late_check.stream_event_line(t)
    ratios = [stats.row_speedup(rows[rows["batch_size"] == b], "event", "interleaved")
              for b in sorted(rows["batch_size"].unique())]
    apart = [100 * (max(r.estimate, 1 / r.estimate) - 1) for r in ratios]
    same = (len(ratios) > 1 and any(stats.verdict(r) != stats.NOISE for r in ratios)
            and max(apart) <= late_check.ABOUT_SAME_PCT)
    assert ("come out about the same" in line) == same
    if same:
        assert line.endswith(f"at every batch (within {math.ceil(round(max(apart), 1))}%).")
        assert "(" not in line.replace(f"(within {math.ceil(round(max(apart), 1))}%)", "")
    if run == "4448ee4":
        assert line == ("With the CUDA graph step, one stream and an event come out about the "
                        "same as two streams at every batch (within 4%).")
    if run == "898ea06":  # 1.11x faster at batch 1: the per-batch words stay; round 35: batch
        # 128's 1.02x slower is under PRACTICAL_PCT, so "about the same", not "depends"
        assert "at batch 1 it costs time" in line and line.endswith("at batch 128, about the same.")


def test_07_panels_and_lesson06_in_plain_words():
    """(5) The panels draw a few profiled steps, the line the median; (6) the 06 line, shorter."""
    text = source("07_stream_interleaving")
    assert "around them" not in text.replace("\n", " ")
    assert "The line gives each loop's median gap and host step over the profiled steps." \
        in re.sub(r"\s+", " ", text)  # round 36: the profiler paragraph trimmed; 37: host step
    t = pd.read_csv(DATA / "07_stream_interleaving-4448ee4.csv")
    line = late_check.against_06(t, pd.read_csv(DATA / "06_eos_sync_regimes-4448ee4.csv"), 32)
    assert line.endswith("Each lesson times its own rounds; the host's speed moves between them "
                         "(lesson 00).")
    assert "timed the check at 611 µs per step" in line and "time it at 363 µs" in line
