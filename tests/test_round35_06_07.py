"""Round 35, lessons 06 and 07: the review's remarks, read on every frozen real table (full and
workshop presets). 07: "Where it pays" leads with where the late read's speedup over the per-step
sync is largest (the share of the step only as the reason it might); a second-stream difference
under PRACTICAL_PCT reads "about the same", never "costs time" or "faster". 06: the slow cap is
said against the other cap's medians, as checked; the closing line names the medians' own ratio."""
import re

import pandas as pd
import pytest

from helpers.course import eos_sync, late_check, stats
from tests.test_round27_06_07 import DATA, RUNS07
from tests.test_round28_06_07 import RUNS06, table07
from tests.test_round33_06_07 import cost06


@pytest.mark.parametrize("run", RUNS07)
def test_07_where_it_pays_leads_with_the_largest_speedup(run):
    t, summary = table07(run)
    line = late_check.where_line(t, summary, True, profiled=32)
    if not line:
        return
    m = re.match(r"Where it pays: two streams gain most over the per-step sync at batch (\d+)"
                 r"(); (.+?)\. The check takes", line)  # round 37: no speedups here
    assert m, line
    top = int(m.group(1))
    part = t[t["regime"] == "compiled"]
    resolved = summary[(summary["regime"] == "compiled") & summary["check_resolved"].astype(bool)]
    gains = {int(b): stats.row_speedup(part, "interleaved", "sync", batch_size=int(b)).estimate
             for b in resolved["batch_size"]}
    assert top == max(gains, key=gains.get)
    for b in gains:
        if b != top:  # the others in words, no range
            assert f"batch {b}'s" in m.group(3)
    assert not re.search(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]", line)
    share = {int(r["batch_size"]): r["check_cost_us"] / r["no_check"] for _, r in resolved.iterrows()}
    most = max(share, key=share.get)
    verb = "can" if most == top else "could"
    assert f"at batch {most} (" in line and f"so a late read {verb} gain most there" in line


def test_07_reviewed_where_it_pays():
    t, summary = table07("43fefa3")
    assert late_check.where_line(t, summary, True, profiled=32) == (
        "Where it pays: two streams gain most over the per-step sync at batch 32; "
        "batch 1's can't be told apart from it and batch 128's is "
        "smaller. The check takes the largest share of the step at batch 1 (520 µs, 59% of the "
        "0.89 ms step without it), so a late read could gain most there, but the late loops win "
        "back least of it there. Profiled at batch 32 only, this lesson does not measure where "
        "batch 1's time above no check goes (set `batch_size = 1` to profile it).")


@pytest.mark.parametrize("run", RUNS07)
def test_07_no_cost_or_faster_under_a_practical_size(run):
    t, _ = table07(run)
    rows = t[(t["regime"] == "compiled") & (t["status"] == "ok")]
    line = late_check.stream_event_line(t)
    for b in sorted(rows["batch_size"].unique()):
        ratio = stats.row_speedup(rows[rows["batch_size"] == b], "event", "interleaved")
        if stats.verdict(ratio) == stats.NOISE or late_check._apart_pct(ratio) >= late_check.PRACTICAL_PCT:
            continue
        assert not re.search(rf"at batch(?:es)? [\d, and]*\b{b}\b[\d, and]* it costs time", line), line
        if "about the same as two streams at every batch" in line:  # round 33's rule
            continue
        if rows["batch_size"].nunique() > 1:  # several batches, words only
            assert f"at batch {b}, about the same" in line, line
        else:
            assert "about the same, " in line and " faster (" not in line, line


def test_07_reviewed_second_stream():
    t, _ = table07("43fefa3")
    assert late_check.stream_event_line(t) == (
        "The second stream buys nothing measurable. With the CUDA graph step, one stream and an "
        "event against two streams: at batch 1, can't tell apart; at batch 32, can't tell apart; "
        "at batch 128, about the same.")


@pytest.mark.parametrize("run", RUNS06)
def test_06_slow_cap_said_against_the_medians(run):
    t = pd.read_csv(DATA / f"06_eos_sync-{run}.csv")
    why = eos_sync.speedup_why(t[t["status"] == "ok"])
    assert "took longer per token than at cap" not in why
    if run == "2f157b6":
        assert ("At cap 100 every run of both loops took longer per token than that loop's median "
                "run at cap 200 (10.3 and 10.4 ms per token by the medians, against 5.8 and 6.4)"
                in why)


@pytest.mark.parametrize("run", RUNS06)
def test_06_summary_names_the_medians_ratio(run):
    cost, steps, unclear = cost06(run)
    line = eos_sync.summary_line(steps, unclear, True, 80, 200, cost)
    m = re.search(r"\(the table's medians: ([\d.]+) -> ([\d.]+) ms, (\d\.\d+)x\)", line)
    if not m:
        return
    wall = steps.set_index("method")["wall_ms"]
    ratio = wall["CUDA graph, check every step"] / wall["CUDA graph, no check"]
    assert m.group(3) == f"{ratio:.2f}"
    if run == "2f157b6":
        assert line.endswith("1.30x as long (the table's medians: 1.22 -> 1.57 ms, 1.29x).")
