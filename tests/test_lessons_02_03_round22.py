"""What notebooks 02 and 03 print, on real GPU tables of both presets (the twenty-second review,
which read the workshop copies of 6bba703).

02: one gain printed as three numbers (1.14x, the table's medians 1.10x, the figure's bars 1.17x):
a line above the gains says which number they are and gives the table's medians; the pace line's
"wall clock fell" divides the per-step walls it prints; the host's time per step is a number.
03: the workshop run made no stair and its saving was what was left of a gap present at step 0:
the printed lines say so from the timeline, in both presets.
"""
from pathlib import Path

import pandas as pd

from helpers.course import budget, expandable, growth
from helpers.model import model_config

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parent.parent
NAMES = {"naive": "naive", "kv_cache": "KV cache"}
RUNS_02 = ("6bba703-workshop", "1c698c0", "90c3788", "c635f9e", "eb4fe0c", "65eabbe")
OLD, NEW = "default", "expandable_segments:True"


def table02(name):
    return pd.read_csv(DATA / f"02_kv_cache-{name}.csv")


def test_the_gains_note_names_the_rounds_and_gives_the_tables_medians():
    t = table02("6bba703-workshop")
    assert growth.gains_note(t, "kv_cache", "naive", True, NAMES) == (
        "The gain is the rounds' (the right panel): each round times both loops back to back, and "
        "the gain is their typical ratio. The per-step times below use each loop's median run on "
        "its own instead, and give 1.10x and 1.17x at 20 and 120 tokens.")  # round 23's wording
    assert growth.gains_note(t, "kv_cache", "naive", False, NAMES) == ""  # a smoke run


def test_the_gains_note_reads_every_runs_medians_from_its_table():
    for name in RUNS_02:
        t = table02(name)
        note = growth.gains_note(t, "kv_cache", "naive", True, NAMES)
        values = sorted(t["seq_len"].unique())
        medians = []
        for n in values:
            rows = t[t["seq_len"] == n].set_index("method")["median_s"]
            medians.append(f"{rows['naive'] / rows['kv_cache']:.2f}x")
        assert (", ".join(medians[:-1]) + " and " + medians[-1]) in note, (name, note)
        # the last is the left panel's bars: the per-step walls the pace line prints
        step = budget.per_step(t, ["naive", "kv_cache"], seq_len=values[-1]).set_index("method")
        assert f"{step.loc['naive', 'wall_ms'] / step.loc['kv_cache', 'wall_ms']:.2f}x" == medians[-1]
    same = table02("6bba703-workshop")  # made up: every round the medians' ratio
    for n in (20, 120):
        for m in ("naive", "kv_cache"):
            row = (same["method"] == m) & (same["seq_len"] == n)
            ms = 1e3 * same.loc[row, "median_s"].iloc[0]
            same.loc[row, "trials_wall_ms"] = " ".join([f"{ms:.4f}"] * 8)
    assert growth.gains_note(same, "kv_cache", "naive", True, NAMES).endswith(
        "each loop's median run gives about the same.")  # round 23's wording


def test_the_pace_line_divides_the_walls_it_prints_and_gives_the_hosts_time():
    lines = growth.pace_lines(table02("6bba703-workshop"), "kv_cache", "naive", NAMES)
    assert lines[1] == ("The wall clock per step (the median run ÷ its tokens): naive 13.12 and "
                        "15.59 ms, the GPU idle 81% and 59% of it; KV cache 11.95 and 13.30 ms, "
                        "idle 89% and 88%.")
    assert "but the wall clock per step fell at most 1.17x:" in lines[2]  # 15.59 ÷ 13.30
    assert lines[3] == ("At 120 tokens the host took at least 11.68 ms of each 13.30 ms KV cache "
                        "step, the time the GPU sat idle waiting for it, against 1.62 ms of GPU work.")
    for name in RUNS_02:
        lines = growth.pace_lines(table02(name), "kv_cache", "naive", NAMES)
        assert lines[2].endswith("the host sets the pace at every length.")
        assert lines[3].startswith("At 120 tokens the host took at least "), name
        walls = [float(x) for x in lines[1].split("KV cache ")[1].split(" ms")[0]
                 .replace(" and", ",").split(", ")]
        naive = [float(x) for x in lines[1].split("naive ")[1].split(" ms")[0]
                 .replace(" and", ",").split(", ")]
        fell = float(lines[2].split("fell at most ")[1].split("x")[0])
        assert abs(fell - max(a / b for a, b in zip(naive, walls))) < 0.006, (name, fell)


def test_a_kv_step_the_gpu_paces_gets_no_host_line():
    t = table02("6bba703-workshop")
    kv = t["method"] == "kv_cache"
    t.loc[kv, "gpu_busy_s"] = t.loc[kv, "median_s"] * 0.9
    assert not any(line.startswith("At 120 tokens the host took")
                   for line in growth.pace_lines(t, "kv_cache", "naive", NAMES))


def timelines():
    return {"workshop": (pd.read_csv(DATA / "03_expandable_segments_timeline-6bba703-workshop.csv"), 16),
            "full": (pd.read_csv(REPO / "figures/data/03_expandable_segments_timeline.csv"), 32)}


def test_the_start_line_says_how_much_of_the_saving_predates_the_cache():
    (workshop, _), (full, _) = timelines()["workshop"], timelines()["full"]
    assert expandable.start_line(workshop, OLD, NEW).split("\n") == [
        "Before the prefill (step 0), with 508 MiB allocated, default held 680 MiB reserved and "
        "expandable_segments:True 524 MiB: 156 MiB apart before any cache existed.",
        "During this recorded run default's reserve grew 48 MiB and expandable_segments:True's "
        "164 MiB: the difference at the peak is what was left of the step-0 gap."]  # round 23
    assert expandable.start_line(full, OLD, NEW).split("\n") == [
        "Before the prefill (step 0), with 509 and 508 MiB allocated, default held 678 MiB reserved "
        "and expandable_segments:True 522 MiB: 156 MiB apart before any cache existed.",
        "During this recorded run default's reserve grew 8958 MiB and expandable_segments:True's "
        "1304 MiB: the step-0 gap is 2% of the difference at the peak, the rest came during the "
        "run."]  # round 23: the recorded run's own peaks (1826 MiB) are not printed
    assert expandable.start_line(workshop[workshop["setting"] == OLD], OLD, NEW) == ""


def test_the_stairs_line_says_whether_a_stair_occurred_in_either_preset():
    config = model_config("gpt2")
    lines = {k: expandable.stairs_line(t, config, batch, 16, OLD) for k, (t, batch) in timelines().items()}
    assert lines["workshop"] == (
        "With default, no stair in this run: each layer's keys (and values) reached 3.0 MiB at "
        "most, under the 20 MiB where the big stairs start; its reserve rose at most 20 MiB in a "
        "decode step (decode step 44), less than the 24 cache tensors together.")
    assert lines["full"].startswith("With default, reserved memory jumped by more than all 24 "
                                    "cache tensors together at 10 decode steps:")


def test_the_driver_line_counts_the_decode_steps_whose_reserve_rose():
    """The workshop run printed "default 15 times for a new segment (0.32 per decode step)" while
    its reserve rose in one decode step."""
    runs = {OLD: {"timeline": {"actions": {"alloc": 13970, "segment_alloc": 15}}},
            NEW: {"timeline": {"actions": {"alloc": 13970, "segment_map": 19}}}}
    workshop = timelines()["workshop"][0]
    line = expandable.driver_line(runs, 47, workshop)
    assert "per decode step" not in line
    assert line.endswith("Reserved memory rose in 1 of the 47 decode steps with default, in 6 with "
                         "expandable_segments:True.")
    full = timelines()["full"][0]
    assert (expandable.rises(full, OLD), expandable.rises(full, NEW)) == (41, 52)


def test_the_buys_line_gives_both_peaks_allocated_where_they_print_apart():
    t = pd.read_csv(DATA / "03_expandable_segments-6bba703-workshop.csv")
    line = expandable.buys_line(expandable.memory(t).loc[48], {}, 47, OLD, NEW, 48)
    assert line == ("What expandable_segments:True bought on this loop at 48 tokens: a peak reserve "
                    "of 688 MiB against 728 MiB (40 MiB less, 95% of default's) for a peak "
                    "allocated of 634 MiB against 635 MiB.")
