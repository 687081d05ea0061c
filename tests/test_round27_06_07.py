"""Round 27, lessons 06 and 07: the sentences the students found wrong, on every frozen real
table (full and workshop presets)."""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import eos_sync, late_check, stats

DATA = Path(__file__).parent / "data"
NB = Path(__file__).parents[1] / "notebooks"
RUNS06 = sorted(p.name[len("06_eos_sync-"):-4] for p in DATA.glob("06_eos_sync-*.csv"))
RUNS07 = sorted(p.name[len("07_stream_interleaving-"):-4]
                for p in DATA.glob("07_stream_interleaving-*.csv"))


def source(stem):
    return "\n".join("".join(c["source"]) for c in json.loads((NB / f"{stem}.ipynb").read_text())["cells"])


def headline06(run):
    """06's early-stop table on one frozen run (its ok rows), its cap, headline and why-line."""
    t = pd.read_csv(DATA / f"06_eos_sync-{run}.csv")
    ok = t[t["status"] == "ok"]
    cap = max(ok["seq_len"])
    return ok, cap, eos_sync.stop_speedup(ok, cap), eos_sync.speedup_why(ok)


@pytest.mark.parametrize("run", RUNS06)
def test_06_headline_names_which_speedup_it_quotes_once_and_never_says_matches(run):
    ok, cap, head, why = headline06(run)
    assert "matches" not in why
    if "the table's medians:" in head and "give no range" not in head:
        r = stats.row_speedup(ok, eos_sync.CHECK, eos_sync.FREE, seq_len=cap)
        assert why.startswith("The lesson quotes the ratio of runs taken in pairs")
        assert f"{r.estimate:.2f}x" in head and f"{r.estimate:.2f}x" not in why  # round 28c: once
    else:
        assert "The lesson quotes" not in why
    if "apart: identical work" in why:  # the ratio printed is the medians' own
        at = ok[ok["method"] == eos_sync.CHECK].set_index("seq_len")["median_s"]
        caps = sorted(at.index)
        assert f"{max(at[caps[0]], at[caps[-1]]) / min(at[caps[0]], at[caps[-1]]):.2f}x apart" in why


def test_06_published_run_reads_as_the_student_asked():
    ok = pd.read_csv(DATA / "06_eos_sync-9bd8862.csv")
    why = eos_sync.speedup_why(ok[ok["status"] == "ok"])
    assert why.startswith("The lesson quotes the ratio of runs taken in pairs side by side")
    assert "so the table's medians give another." in why and "lies inside the printed range" in why
    assert "2.19x" not in why and "2.55x" not in why  # the headline prints both (round 28c)
    assert "425.7 ms at cap 100 and 484.8 ms at cap 200, 1.14x apart" in why


def test_06_source_drops_the_tangents():
    code = source("06_eos_sync")
    assert "eager_pace" not in code and "idle_line" not in code  # round 37: idle inside is back
    assert "Whether the wait itself is shorter there" not in code
    assert not hasattr(eos_sync, "eager_pace") and not hasattr(eos_sync, "idle_line")


@pytest.mark.parametrize("run", RUNS07)
def test_07_profile_and_summary_leftovers_round_the_same_way(run):
    t = pd.read_csv(DATA / f"07_stream_interleaving-{run}.csv")
    summary = late_check.summary(t)
    part = t[(t["regime"] == "compiled")]
    for b in sorted(part["batch_size"].unique()):
        timed = 1e3 * part[part["batch_size"] == b].drop_duplicates("method").set_index("method")["ms_per_step"]
        gaps = pd.DataFrame({"gap_before_us": {n: 1.0 for n in timed.index}})
        left = late_check.left_line(gaps, timed, ["interleaved", "event"])
        row = summary[(summary["regime"] == "compiled") & (summary["batch_size"] == b)].iloc[0]
        table_left = sorted(round(1e3 * (row[n] - row["no_check"])) for n in ("interleaved", "event"))
        if left:
            lo, hi = table_left
            assert (f" {lo}–{hi} µs" if lo != hi else f" {lo} µs") in left


@pytest.mark.parametrize("run", RUNS07)
def test_07_unprofiled_batch_leftover_says_it_is_not_measured(run):
    t = pd.read_csv(DATA / f"07_stream_interleaving-{run}.csv")
    line = late_check.where_line(t, late_check.summary(t), True, profiled=32)
    if "batch 1's time above no check" in line:
        assert "this lesson does not measure where batch 1's time above no check goes" in line
    assert "The claim holds where" not in late_check.article_claim_line(t, late_check.summary(t))


def test_07_published_run_lines():
    t = pd.read_csv(DATA / "07_stream_interleaving-9bd8862.csv")
    s = late_check.summary(t)
    where = late_check.where_line(t, s, True, profiled=32)
    assert "per step above no check" not in where  # round 34: the table gives it
    assert "this lesson does not measure where batch 1's time above no check goes" in where
    assert late_check.eager_line(s, True, t).startswith(
        "With the eager step at batch 32, the check costs 87 µs per step (5.29 against 5.21 ms), 2% "
        "of the step without it; the figure leaves the eager step out.")
    timed = 1e3 * t[(t["regime"] == "compiled") & (t["batch_size"] == 32)].drop_duplicates(
        "method").set_index("method")["ms_per_step"]
    gaps = pd.DataFrame({"gap_before_us": {n: 5.0 for n in timed.index}})
    assert "10–17 µs" in late_check.left_line(gaps, timed, ["interleaved", "event"])
    code = source("07_stream_interleaving")
    assert "numbered by the token they produce, as in lesson 06" in code
