"""What notebooks 02 and 03 print, on real GPU tables (the twenty-first review).

02: a length whose step is out of line with its neighbours' while its GPU work is not is named
from the data and left out of the growth answer; the GPU-work cut is a lower bound as printed.
03: whether memory ran short, from the tables; the small GPU-work panel's title and labels.
"""
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

matplotlib.use("Agg")

from helpers.course import budget, expandable, growth, plotting  # noqa: E402

DATA = Path(__file__).parent / "data"
NAMES = {"naive": "naive", "kv_cache": "KV cache"}


def table(name):
    return pd.read_csv(DATA / f"02_kv_cache-{name}.csv")


def test_the_published_runs_75_token_kv_step_is_named_and_left_out():
    """The 12:29 run (1c698c0): the KV step took 9.00 ms at 75 tokens against 5.76 and 6.78 ms,
    its GPU work 1.46 ms between 1.35 and 1.61 ms; the answer had read "the gain fell from 1.29x
    at 30 tokens to 1.07x at 75 tokens"."""
    t = table("1c698c0")
    assert growth.out_of_line(t, ["naive", "kv_cache"]) == {75: ["kv_cache"]}
    assert growth.out_of_line_line(t, "kv_cache", "naive", True, NAMES) == (
        "At 75 tokens the KV cache loop's step was out of line: 9.00 ms, slower than every round at "
        "30 and 120 tokens (at most 8.33 ms), while its GPU work, 1.46 ms, lay between theirs (1.35 "
        "and 1.61 ms). The GPU's idle time, not its work, moved this point, so the answer below "
        "leaves 75 tokens out.")
    line = growth.growth_line(t, "kv_cache", "naive", True)
    assert line == ("Does the gain grow with the length (75 tokens left out)? No clear change: "
                    "1.29x at 30 and 1.39x at 120 tokens.")
    # a smoke run names nothing and leaves nothing out
    assert growth.out_of_line_line(t, "kv_cache", "naive", False, NAMES) == ""
    assert growth.left_out(t, "kv_cache", "naive", False) == []


def test_both_loops_out_of_line_at_one_length_read_as_one_clause():
    """The 09:46 and 01:49 runs: both loops slower at 75 tokens than every round at 30 and 120."""
    for name, said in (("90c3788", "naive 13.54 and KV cache 12.98 ms"),
                       ("c635f9e", "naive 14.85 and KV cache 12.82 ms")):
        t = table(name)
        assert growth.out_of_line(t, ["naive", "kv_cache"]) == {75: ["naive", "kv_cache"]}
        note = growth.out_of_line_line(t, "kv_cache", "naive", True, NAMES)
        assert note.startswith(f"At 75 tokens both loops' steps were out of line: {said}, each "
                               "slower than every round of its loop at 30 and 120 tokens (at most ")
        assert growth.growth_line(t, "kv_cache", "naive", True).startswith(
            "Does the gain grow with the length (75 tokens left out)? No clear change: ")


def test_a_step_in_line_with_its_neighbours_rounds_is_kept():
    """The 05:14 and 06:54 runs: the 75-token steps lie inside the neighbours' rounds; the answer
    keeps every length."""
    for name in ("eb4fe0c", "65eabbe"):
        t = table(name)
        assert growth.out_of_line(t, ["naive", "kv_cache"]) == {}
        assert growth.out_of_line_line(t, "kv_cache", "naive", True, NAMES) == ""
        assert growth.growth_line(t, "kv_cache", "naive", True).startswith(
            "Does the gain grow with the length? No clear change: ")


def test_a_step_whose_gpu_work_moved_too_is_not_out_of_line():
    """Made up from the published table: where the 75-token GPU work is out of line as well, the
    step's time is the GPU's, and nothing is left out."""
    t = table("1c698c0")
    kv75 = (t["method"] == "kv_cache") & (t["seq_len"] == 75)
    t.loc[kv75, "gpu_busy_s"] = t.loc[kv75, "median_s"] * 0.9
    assert growth.out_of_line(t, ["naive", "kv_cache"]) == {}
    assert growth.out_of_line(t.drop(columns="gpu_busy_s"), ["naive", "kv_cache"]) == {}


def test_the_gpu_work_cut_is_printed_at_every_length():
    """The published run printed "2.1x or more" for a cut of 2.80 / 1.35 = 2.07x; round 24 prints
    every length's cut from the printed, rounded values (2.83 / 1.35 = 2.10, not "2.09x or more")."""
    for name in ("1c698c0", "90c3788", "c635f9e", "eb4fe0c", "65eabbe"):
        t = table(name)
        lines = growth.pace_lines(t, "kv_cache", "naive", NAMES)
        cuts = []
        for n in (30, 75, 120):
            step = budget.per_step(t, ["naive", "kv_cache"], seq_len=n).set_index("method")["gpu_ms"]
            cuts.append(f"{step['naive'] / step['kv_cache']:.2f}x")  # round 37: unrounded
        assert f"per step {cuts[0]}, {cuts[1]} and {cuts[2]}, " in lines[-2], name
    assert "or more" not in "\n".join(growth.pace_lines(table("1c698c0"), "kv_cache", "naive", NAMES))


def test_the_gain_panel_draws_an_out_of_line_length_hollow_and_off_the_line():
    fig, ax = plotting.subplots()
    growth.plot_gains(ax, table("1c698c0"), "kv_cache", "naive", True, labels=NAMES)
    assert list(ax.lines[0].get_xdata()) == [30, 120]
    hollow = [ln for ln in ax.lines if ln.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [75]
    assert "out of line: left out of the answer" in [t.get_text() for t in ax.get_legend().get_texts()]
    fig, ax = plotting.subplots()
    growth.plot_gains(ax, table("eb4fe0c"), "kv_cache", "naive", True, labels=NAMES)
    assert list(ax.lines[0].get_xdata()) == [30, 75, 120]
    assert not [ln for ln in ax.lines if ln.get_markerfacecolor() == "white"]


def test_retries_line_says_whether_memory_ran_short_from_the_table():
    """03's 'a smaller card runs the same loop' was said, not measured; the tables record the
    allocator's retries, none in any published run."""
    published = Path(__file__).resolve().parent.parent / "figures/data/03_expandable_segments.csv"
    t = pd.read_csv(published)
    assert expandable.retries_line(t) == (
        "No run under either setting ran short of GPU memory: the allocator never had to "
        "free its cached segments and try again.")
    t.loc[(t["method"] == "default") & (t["seq_len"] == 400), "alloc_retries"] = 3
    assert expandable.retries_line(t) == (
        "GPU memory ran short, and the allocator freed its cached segments and tried again: "
        "default 3 times at 400 tokens.")
    assert expandable.retries_line(t.drop(columns="alloc_retries")) == ""


def test_the_small_gpu_work_panel_sits_level_and_labels_clear_of_the_bars():
    """The published figure: the panel's title floated above the wide panel's (budget.plot raises
    it over a legend), its values touched the bars and a grid line crossed them."""
    steps = pd.DataFrame({"method": ["default", "expandable_segments:True"],
                          "wall_ms": [6.0, 6.0], "gpu_ms": [2.49, 2.53], "idle_ms": [3.5, 3.5],
                          "floor_ms": [np.nan, np.nan]})
    fig, (wide, small) = plotting.subplots(ncols=2, layout="constrained",
                                           gridspec_kw={"width_ratios": [4, 1]})
    wide.set(title="wide")
    expandable.plot_gpu_work(small, steps, title="GPU work, 400 tokens")
    assert small.get_title() == "GPU work, 400 tokens" and small.get_title(loc="left") == ""
    assert small.get_legend() is None and small.get_axisbelow() is True
    assert [t.get_text() for t in small.get_yticklabels()] == ["expandable_segments:True", "default"]  # whole (round 24)
    # one colour a setting, as the memory panel draws them (the twenty-second review)
    from matplotlib.colors import to_rgb
    assert [b.get_facecolor()[:3] for b in small.patches] == [to_rgb(plotting.PALETTE[i]) for i in (1, 0)]
    labels = [t for t in small.texts]
    assert sorted(t.get_text() for t in labels) == ["2.49 ms", "2.53 ms"]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert abs(small.title.get_window_extent(renderer).y0 - wide.title.get_window_extent(renderer).y0) < 2
    bars = small.patches
    for text, bar in zip(sorted(labels, key=lambda t: t.get_text()),
                         sorted(bars, key=lambda b: b.get_width())):
        assert text.get_window_extent(renderer).x0 - bar.get_window_extent(renderer).x1 >= 3


def test_plain_words_only_in_the_printed_growth_lines():
    """No ratio of gains left bare: each interval of 02's lines carries a word for the reader."""
    for name in ("1c698c0", "90c3788", "c635f9e", "eb4fe0c", "65eabbe"):
        line = growth.growth_line(table(name), "kv_cache", "naive", True)
        for part in line.split("(")[1:]:
            if "–" in part.split(")")[0]:
                before = line.split("(" + part.split(")")[0])[0]
                assert before.rstrip().endswith(("apart", "larger", "smaller")), (name, line)
