"""Round 34, lessons 06 and 07 (proportion), read on every frozen real table (full and workshop
presets): 07's table leaves the eager row out and fits one block; "Where it pays" no longer
restates the table; 06's timeline line is two sentences; 06 points at no ranges it does not print."""
import glob
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import eos_sync, late_check
from tests.test_round26_06_07 import source
from tests.test_round27_06_07 import DATA, RUNS07
from tests.test_round28_06_07 import table07

GAPS06 = sorted(Path(p).name[len("06_eos_sync_gaps-"):-4]
                for p in glob.glob(str(DATA / "06_eos_sync_gaps-*.csv")))


@pytest.mark.parametrize("run", RUNS07)
def test_07_table_leaves_the_eager_row_to_its_line(run):
    """(1) No eager row and no "not timed" cell; one block at the notebook's 80 characters; the
    eager result is printed apart wherever the table had it."""
    t, summary = table07(run)
    shown = late_check.view(summary, compact=True)
    assert "not timed" not in shown.to_string()
    with pd.option_context("display.width", 80, "display.max_columns", 20):
        text = repr(shown)
    assert "\\" not in text and max(map(len, text.splitlines())) <= 80, text
    assert len(shown) == (summary["regime"] == "compiled").sum()
    if (summary["regime"] == "eager").any():
        assert late_check.eager_line(summary, True, t)
    assert "late_check.view(summary, compact=True)" in source("07_stream_interleaving")


def test_07_eager_only_table_keeps_its_row():
    """A smoke run times the eager step only: its table still shows it."""
    t, _ = table07("4448ee4")
    shown = late_check.view(late_check.summary(t[t["regime"] == "eager"]), compact=True)
    assert len(shown) == 1 and "sync" in shown.columns  # round 36: one-level headers


@pytest.mark.parametrize("run", RUNS07)
def test_07_where_it_pays_does_not_restate_the_table(run):
    """(2) One batch's cost and share (the largest), then the caveats; no batch-by-batch list."""
    t, summary = table07(run)
    line = late_check.where_line(t, summary, True, profiled=32)
    if not line:
        return
    assert "per step above no check" not in line and line.count(" µs, ") == 1
    assert len(line.split()) <= 130  # round 35: the speedups by batch come first


def test_07_reviewed_where_it_pays():
    t, summary = table07("4448ee4")
    assert late_check.where_line(t, summary, True, profiled=32) == (
        "Where it pays: two streams gain most over the per-step sync at batch 1 (1.42x faster); "
        "batch 32's (1.26x faster) and batch 128's (1.23x faster) are smaller. The check "
        "takes the largest share of the step at batch 1 (371 µs, 48% of the 0.78 ms step without "
        "it), so a late read can gain most there, though two streams win back least of it there. "
        "At batch 128, two streams ran "
        "faster than no check by the medians, but its runs can't tell the two apart.")


@pytest.mark.parametrize("run", GAPS06)
def test_06_timeline_line_in_two_sentences(run):
    """(3) The gaps, then (where it applies) who sets the pace under the profiler."""
    line = eos_sync.timeline_line(pd.read_csv(DATA / f"06_eos_sync_gaps-{run}.csv"), 1, 3)
    first, _, rest = line.partition(". ")
    assert first.startswith("In the steps drawn, the GPU idles") and first.rstrip(".").endswith("without it")
    assert not rest or rest.startswith("Under the profiler the host's step without the check")


def test_06_reviewed_timeline_line():
    line = eos_sync.timeline_line(pd.read_csv(DATA / "06_eos_sync_gaps-4448ee4.csv"), 1, 3)
    assert line == (
        "In the steps drawn, the GPU idles 702 to 816 µs before a step with the check and 125 to "
        "131 µs without it. Under the profiler the host's step without the check (1359 µs) "
        "outlasts the GPU's work (1029 µs), so the host sets the pace in both panels, and the "
        "figure shows where the check's wait lies, not its size.")


def test_06_no_pointer_to_ranges_below():
    """(4) The cost table prints no ranges: the prose no longer points at them."""
    assert "(the ranges" not in source("06_eos_sync")
