"""What notebooks 02 and 03 print, on real GPU tables of both presets (the twenty-second review,
which read the workshop copies of 6bba703).

02: one gain printed as three numbers (1.14x, the table's medians 1.10x, the figure's bars 1.17x):
a line above the gains says which number they are and gives the table's medians; the pace line's
"wall clock fell" divides the per-step walls it prints; the host's time per step is a number.
03: the workshop run made no stair and its saving was what was left of a gap present at step 0:
the printed lines say so from the timeline, in both presets.
"""
import re
from pathlib import Path

import pandas as pd

from helpers.course import expandable, growth, stats
from helpers.model import model_config

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parent.parent
NAMES = {"naive": "naive", "kv_cache": "KV cache"}
RUNS_02 = ("6bba703-workshop", "1c698c0", "90c3788", "c635f9e", "eb4fe0c", "65eabbe")
OLD, NEW = "default", "expandable_segments:True"


def table02(name):
    return pd.read_csv(DATA / f"02_kv_cache-{name}.csv")


def test_the_gains_note_says_what_a_gain_and_its_range_are():
    t = table02("6bba703-workshop")
    assert growth.gains_note(t, "kv_cache", "naive", True, NAMES) == (
        "A gain is naive time ÷ KV cache time (the right panel). Each round times both loops back "
        "to back; the gain is the average of the rounds' ratios, and the range in brackets holds "
        "the gains these rounds are consistent with (notebook 00).")  # round 24's wording
    assert growth.gains_note(t, "kv_cache", "naive", False, NAMES) == ""  # a smoke run


def test_the_medians_are_named_once_beside_the_walls_they_give():
    for name in RUNS_02:
        lines = growth.pace_lines(table02(name), "kv_cache", "naive", NAMES)
        text = "\n".join(lines)
        assert text.count("the table's medians") == 1 and "the table's medians" in lines[1], name
        assert "fell at most" not in text, name  # round 24: one gain, the rounds'


def test_the_pace_line_divides_the_walls_it_prints_and_gives_the_hosts_time():
    lines = growth.pace_lines(table02("6bba703-workshop"), "kv_cache", "naive", NAMES)
    assert lines[1].startswith("The wall clock per step (the table's medians ÷ the tokens): naive "
                               "13.12 and 15.59 ms, the GPU idle 81% and 59% of it; KV cache 11.95 "
                               "and 13.30 ms, idle 89% and 88%.")
    assert lines[-1].startswith(  # round 26: the "why" in one line of numbers (round 28's words)
        "Why the gain is not larger: most of the KV cache's step was time outside the GPU's work, "
        "from 20 to 120 tokens 10.62 → 11.68 ms")  # round 28c: its GPU work once, in lines[0]
    for name in RUNS_02:
        t = table02(name)
        lines = growth.pace_lines(t, "kv_cache", "naive", NAMES)
        assert "sets the pace" not in lines[-2]  # round 28: the host is not measured
        assert lines[-1].startswith("Why the gain is not larger: most of the KV cache's step was time "
                                    "outside the GPU's work, from "), name  # round 28c
        # the wall clock's cut is the rounds' gain at every length (round 24)
        gains = [f"{stats.row_speedup(t, 'kv_cache', 'naive', seq_len=n).estimate:.2f}x"
                 for n in sorted(t["seq_len"].unique())]
        assert lines[-2].endswith("the gains above (naive ÷ KV cache run time, round by round)."), name
        assert gains[0] not in lines[-2], name  # round 28: the gains printed once, above


def test_a_kv_step_the_gpu_paces_gets_no_host_line():
    t = table02("6bba703-workshop")
    kv = t["method"] == "kv_cache"
    t.loc[kv, "gpu_busy_s"] = t.loc[kv, "median_s"] * 0.9
    assert not any(line.startswith("At 120 tokens the host took")
                   for line in growth.pace_lines(t, "kv_cache", "naive", NAMES))


def timelines():
    return {"workshop": (pd.read_csv(DATA / "03_expandable_segments_timeline-6bba703-workshop.csv"), 16),
            "full": (pd.read_csv(REPO / "figures/data/03_expandable_segments_timeline.csv"), 32)}


def test_the_stairs_line_says_whether_a_stair_occurred_in_either_preset():
    config = model_config("gpt2")
    lines = {k: expandable.stairs_line(t, config, batch, 16, OLD) for k, (t, batch) in timelines().items()}
    assert lines["workshop"] == (
        "With default, no big stair in this run: each layer's keys (and values) reached 3.0 MiB at "
        "most, under the 20 MiB where the big stairs start; its reserve rose at most 20 MiB in a "
        "decode step (decode step 44).")
    assert re.match(r"With default, reserved memory jumped by \d+ to \d+ MiB, each \d+% to \d+% of "
                    "the cache's size then, at 10 separate decode steps, one every 21 to 22 steps "
                    "from decode step 198:\n", lines["full"])  # round 34: the size leads


def test_the_driver_line_counts_trips_not_rates():
    """The workshop run printed "default 15 times for a new segment (0.32 per decode step)" while
    its reserve rose in one decode step; round 24 drops the count of steps whose reserve rose."""
    runs = {OLD: {"timeline": {"actions": {"alloc": 13970, "segment_alloc": 15}}},
            NEW: {"timeline": {"actions": {"alloc": 13970, "segment_map": 19}}}}
    line = expandable.driver_line(runs, 47)
    assert line == ("Trips to the CUDA driver in that run, prefill included, for the same tensor "
                    "allocations: default 15 times for a new segment; expandable_segments:True 19 "
                    "times to map pages onto its segment.")


def test_the_buys_line_gives_both_peaks_allocated_where_they_print_apart():
    t = pd.read_csv(DATA / "03_expandable_segments-6bba703-workshop.csv")
    line = expandable.buys_line(expandable.memory(t).loc[48], {}, 47, OLD, NEW, 48)
    assert line == ("What expandable_segments:True bought on this loop at 48 tokens: a peak reserve "
                    "of 688 MiB against 728 MiB (40 MiB less, 5% less) for a peak "
                    "allocated of 634 MiB against 635 MiB.")
