"""Round 34, lessons 06 and 07 (proportion), read on every frozen real table (full and workshop
presets): 07's table leaves the eager row out and fits one block; "Where it pays" no longer
restates the table; 06's timeline line is two sentences (round 37: gone); 06 points at no
ranges it does not print."""
import pandas as pd
import pytest

from helpers.course import late_check
from tests.test_round26_06_07 import source
from tests.test_round27_06_07 import DATA, RUNS07
from tests.test_round28_06_07 import table07

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
        "Where it pays: two streams gain most over the per-step sync at batch 1; "
        "batch 32's and batch 128's are smaller. The check "
        "takes the largest share of the step at batch 1 (371 µs, 48% of the 0.78 ms step without "
        "it), so a late read can gain most there. "  # round 37: 92% against 94% ranks nothing
        "At batch 128, two streams ran "
        "faster than no check by the medians, but its runs can't tell the two apart.")


def test_06_no_pointer_to_ranges_below():
    """(4) The cost table prints no ranges: the prose no longer points at them."""
    assert "(the ranges" not in source("06_eos_sync")
