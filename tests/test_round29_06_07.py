"""Round 29, lessons 06 and 07: the sentences the students found wrong, read on every frozen real
table (full and workshop presets)."""
import re

import pandas as pd
import pytest

from helpers.course import eos_sync, late_check, stats
from tests.test_round27_06_07 import DATA, RUNS07, source
from tests.test_round28_06_07 import answer_lines07, table07

RANGE = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")  # tests/test_lesson_shape.py's
TWO = "These speedups, the lesson's answer, compare the loops round by round"


@pytest.mark.parametrize("run", RUNS07)
def test_07_answer_says_which_reading_it_uses(run):
    """(1) Where the medians read otherwise than the rounds, the answer says the rounds are its
    reading and why the medians differ, names both medians' ratios, and prints no medians' note
    beside a range (round 29: "(1.29–1.35; the table's medians: 1.36x)")."""
    for part, line in answer_lines07(run):
        ms = part.set_index("method")["ms_per_step"]
        if TWO not in line:
            continue
        assert "the table's medians:" not in line and "recovers" not in line
        assert "not always from the same round" in line
        assert (f"two streams {ms['sync'] / ms['interleaved']:.2f}x, the event "
                f"{ms['sync'] / ms['event']:.2f}x") in line
        assert len(RANGE.findall(line)) == 2  # the two verdicts' ranges, no new one
        x = [float(v) for v in re.findall(r"(?:two streams|an event), ([\d.]+)x faster", line)]
        m = [round(ms["sync"] / ms[n], 2) for n in ("interleaved", "event")]
        assert ("ranking the two the other way" in line) == ((x[0] - x[1]) * (m[0] - m[1]) < 0)


def test_07_reviewed_answer():
    t, summary = table07("6e28961")
    row = summary[(summary["regime"] == "compiled") & (summary["batch_size"] == 32)].iloc[0]
    part = t[(t["regime"] == "compiled") & (t["batch_size"] == 32)]
    line = late_check.answer_line(row, part)
    assert ("two streams, 1.32x faster (1.29–1.35); one stream and an event, 1.33x faster "
            "(1.30–1.35). " + TWO) in line
    assert line.endswith("two streams 1.36x, the event 1.35x, ranking the two the other way; of "
                         "the check's 458 µs per step, both win back all of it.")


@pytest.mark.parametrize("run", RUNS07)
def test_07_smallest_share_is_said_per_loop_and_true(run):
    """(2) "win back least of it there" (round 35) names only the loops for
    which it holds, on the table's printed shares."""
    t, summary = table07(run)
    line = late_check.where_line(t, summary, True, profiled=32)
    assert "wins back the smallest share" not in line
    found = re.search(r"largest share of the step at batch (\d+) \([^)]*\), so a late read "
                      r"(?:can|could) gain most there(?:, (?:though|but) (the late loops|two streams|"
                      r"the event loop) wins? back least)?", line)
    if not line:
        return
    most, who = int(found.group(1)), found.group(2)
    rows = summary[(summary["regime"] == "compiled")
                   & summary["check_resolved"].astype(bool)].set_index("batch_size")
    named = {"interleaved": "two streams", "event": "the event loop"}
    smallest = [n for n in named if all(  # round 37: more than ABOUT_SAME_PCT points below
        min(r[f"{n}_recovered_pct"], 100) - min(rows.at[most, f"{n}_recovered_pct"], 100)
        > late_check.ABOUT_SAME_PCT for b, r in rows.iterrows() if b != most)]
    expected = (None if not smallest else "the late loops" if len(smallest) == 2
                else named[smallest[0]])
    assert who == expected, line


def test_07_reviewed_smallest_share_names_two_streams_only():
    """Round 37: 94% against 96% and all of it is no ranking: nothing said."""
    t, summary = table07("6e28961")
    assert "back least" not in late_check.where_line(t, summary, True, profiled=32)


@pytest.mark.parametrize("run", RUNS07)
def test_07_a_whole_share_reads_one_way(run):
    """(3) A share that rounds to 100% reads "all of it" in the table and in every line, never
    "100" beside another loop's "all of it"."""
    t, summary = table07(run)
    shown = late_check.view(summary)
    for col in ("two streams win back, %", "event wins back, %"):
        assert "100" not in set(shown[col]), shown
    for part, line in answer_lines07(run):
        assert "about 100%" not in line and "win back 100%" not in line
    assert "100%" not in late_check.where_line(t, summary, True, profiled=32).replace("to 100%", "")


def test_07_reviewed_copy_prints_at_most_five_ranges():
    """The lines that print ranges in 07, on the reviewed run's table (the rest of the copy,
    prose included, holds none)."""
    t, summary = table07("6e28961")
    row = summary[(summary["regime"] == "compiled") & (summary["batch_size"] == 32)].iloc[0]
    part = t[(t["regime"] == "compiled") & (t["batch_size"] == 32)]
    lines = [late_check.answer_line(row, part), late_check.stream_event_line(t),
             late_check.eager_line(summary, True, t), late_check.article_claim_line(t, summary),
             late_check.where_line(t, summary, True, profiled=32)]
    assert sum(len(RANGE.findall(x)) for x in lines) <= 5
    assert not RANGE.search(source("07_stream_interleaving"))


def test_07_measure_text_follows():
    text = source("07_stream_interleaving")
    assert '"all of it" where it rounds to 100% or more' in text
    assert "says which reading it uses" in text
    assert "median is no check's or below" not in text


def test_06_notebook_prints_it_under_the_figure():
    text = source("06_eos_sync")
    assert 'run.save_figure(fig, "06_eos_sync_timeline"' in text
    assert "timeline_line" not in text  # round 37: its gaps were the profiler line's again
    assert "timeline's grey bands" not in text  # they show without the check too


def test_06_eager_share_and_headline_follow_the_rules():
    """(5), checked, not changed: the headline's medians (2.21x beside 2.26x, inside its range
    and under 3% apart) get no note by stats.plain's rule, as in every lesson; "at most 2%" is
    the top of the cost table's eager range."""
    t = pd.read_csv(DATA / "06_eos_sync-6e28961.csv")
    ok = t[t["status"] == "ok"]
    assert eos_sync.stop_speedup(ok, 200) == "timed against running to the cap, 2.26x faster (2.03–2.47)"
    r = stats.row_speedup(ok, eos_sync.CHECK, eos_sync.FREE, seq_len=200)
    medians = stats.medians_ratio(*(stats.method_trials(ok, m, seq_len=200)
                                    for m in (eos_sync.CHECK, eos_sync.FREE)))
    assert not stats.medians_apart(medians, r.estimate) and r.low <= medians <= r.high
    cost = pd.read_csv(DATA / "06_eos_sync_regimes-6e28961.csv")
    eager = stats.row_speedup(cost, f"eager, {eos_sync.FREE}", f"eager, {eos_sync.CHECK}")
    assert round(100 * (eager.high - 1)) == 2
