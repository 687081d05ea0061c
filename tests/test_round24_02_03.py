"""What notebooks 02 and 03 print, on real GPU tables of both presets (the twenty-fourth review,
which read the full-preset copies of 3deacb3).

02: one gain (the rounds'), what it and its range are said in plain words; the table's medians
named once, beside the walls they give; the wall clock's cut is the rounds' gains, never "fell at
most 1.26x" beside "1.32x faster"; every length's GPU cut from the printed values (2.10x, not
"2.09x or more").
03: the fragmentation block is the stairs (the rises in the head line, "in 10 decode steps") and
the driver trips; the step-0 difference is one line beside the answer, without the word "gap".
"""
import json
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from helpers.course import expandable, growth, plotting, stats
from helpers.model import model_config

from test_round23_02_03 import _show, git_runs

matplotlib.use("Agg")
REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
NAMES = {"naive": "naive", "kv_cache": "KV cache"}
OLD, NEW = "default", "expandable_segments:True"
FROZEN = ("3deacb3", "3deacb3-workshop", "f4bf2b7", "f4bf2b7-workshop")


def tables(name):
    """Both presets of 3deacb3 and f4bf2b7 (frozen in tests/data), and the earlier full runs
    (ba37cc3, 8973374, 90c3788) where git has them."""
    found = {k: pd.read_csv(DATA / f"{name}-{k}.csv") for k in FROZEN}
    return found | git_runs(name)


def test_02_the_gain_is_said_once_in_plain_words_on_every_run():
    for name, t in tables("02_kv_cache").items():
        note = growth.gains_note(t, "kv_cache", "naive", True, NAMES)
        assert note == ("A gain is naive time ÷ KV cache time (the right panel). Each round times "
                        "both loops back to back; the gain is the average of the rounds' ratios, "
                        "and the range in brackets holds the gains these rounds are consistent "
                        "with (notebook 00)."), name
        text = "\n".join(growth.pace_lines(t, "kv_cache", "naive", NAMES))
        for gone in ("typical ratio", "fell at most", "or more", "wall = work"):
            assert gone not in note + text, (name, gone)
        assert text.count("the table's medians") == 1, name


def test_02_every_cut_and_gain_printed_is_the_tables():
    for name, t in tables("02_kv_cache").items():
        lines = growth.pace_lines(t, "kv_cache", "naive", NAMES)
        values = sorted(int(n) for n in t["seq_len"].unique())
        gpu = {m: [t[(t.method == m) & (t.seq_len == n)].iloc[0].gpu_busy_s for n in values]
               for m in ("naive", "kv_cache")}  # round 37: the cut from the unrounded table
        cuts = [f"{a / b:.2f}x" for a, b in zip(gpu["naive"], gpu["kv_cache"])]
        gains = [f"{stats.row_speedup(t, 'kv_cache', 'naive', seq_len=n).estimate:.2f}x"
                 for n in values]
        said = lines[-2]
        assert said.startswith(f"The cache cut the GPU's work per step {stats.listed(cuts)}, "
                               f"but a whole run only by the gains above (naive \u00f7 KV cache "
                               f"run time, round by round)."), name  # round 28: gains once
        assert gains[0] not in said, name
        assert lines[-1].startswith("Why the gain is not larger: "), name  # round 26
    lines = growth.pace_lines(tables("02_kv_cache")["3deacb3"], "kv_cache", "naive", NAMES)
    assert lines[-2].startswith("The cache cut the GPU's work per step 2.10x, 3.15x and 3.99x, but "
                                "a whole run only by the gains above (naive \u00f7 KV cache run time, "
                                "round by round).")  # round 28: the gains printed once, above


def timelines():
    found = {k: (pd.read_csv(DATA / f"03_expandable_segments_timeline-{k}.csv"),
                 pd.read_csv(DATA / f"03_expandable_segments-{k}.csv")) for k in FROZEN}
    for commit in ("ba37cc3", "8973374", "90c3788"):
        h = _show(commit, "figures/data/03_expandable_segments_timeline.csv")
        t = _show(commit, "figures/data/03_expandable_segments.csv")
        if h is not None and t is not None:
            found[commit] = (h, t)
    return found


def test_03_the_stairs_line_leads_with_the_stairs_and_their_rises():
    config = model_config("gpt2")
    for name, (history, t) in timelines().items():
        line = expandable.stairs_line(history, config, int(t["batch_size"].iloc[0]), 16, OLD)
        if "workshop" in name:
            assert line.startswith("With default, no big stair in this run:"), name
            continue
        assert line.split("\n") == [
            "With default, reserved memory jumped by 528 to 960 MiB, each 105% to 110% of the "
            "cache's size then, at 10 separate decode steps, one every 21 to 22 steps from decode "
            "step 198:",  # round 34: the size leads
            "  the first when each layer's keys (and values) reached 20.1 MiB, just past 20 MiB; a "
            "tensor grows 2 MiB in 21.3 steps (96 KiB a step)."], name


def test_03_the_memory_panel_keeps_its_legend_off_the_bars_and_its_axis_short():
    for name, (_, t) in timelines().items():
        fig, ax = plotting.subplots()
        expandable.plot_memory(ax, t, on_gpu=True)
        top = t["peak_reserved_bytes"].max() / 2**20
        assert ax.get_ylim()[1] <= 1.2 * top, name
        assert ax.get_legend().get_bbox_to_anchor().y0 < ax.get_window_extent().y0, name
        matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("lesson", ["02_kv_cache", "03_expandable_segments"])
def test_the_lessons_no_longer_say_what_the_review_found_unclear(lesson):
    nb = json.loads((REPO / f"notebooks/{lesson}.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    for gone in ("wall = work +", "almost all of the gain is", "cancels most of what slows both",
                 "(a small stair)", "smaller stairs", "lesson.gap_line(", "history=history)",
                 "only when GPU memory runs short"):
        assert gone not in text, gone


def test_02_the_note_names_no_brackets_where_too_few_rounds_print_none():
    t = tables("02_kv_cache")["3deacb3"].copy()
    t["trials_wall_ms"] = t["trials_wall_ms"].map(lambda s: " ".join(str(s).split()[:3]))
    note = growth.gains_note(t, "kv_cache", "naive", True, NAMES)
    assert note.endswith("the gain is the average of the rounds' ratios.") and "brackets" not in note
