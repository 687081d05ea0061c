"""Round 32 of mends, lessons 02 and 03, checked on every frozen GPU table (full and workshop):
(1) 03's question names the answer's measure, `added by the run`, not `unused %`; (2) figure 1's
peak-allocated labels sit off the black "reserved before the prefill" line, and the small GPU
panel's names are as large as the wide panel's ticks; (3) 03's buys line without default's
largest jump; (4) 02's one line says whether the gain grew, as the ratio line reads it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from helpers.course import budget, expandable, growth, plotting

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
T02 = sorted(DATA.glob("02_kv_cache-*.csv"))
T03 = sorted(DATA.glob("03_expandable_segments-*.csv"))
OLD, NEW = "default", "expandable_segments:True"
RANGE = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")
LABELS = {"naive": "the naive loop", "kv_cache": "the KV cache"}


def cells(path):
    return ["".join(c["source"]) for c in json.loads((ROOT / path).read_text())["cells"]]


def history_of(path):
    return pd.read_csv(str(path).replace("03_expandable_segments-", "03_expandable_segments_timeline-"))


def test_03_question_names_the_answers_measure():
    intro = cells("notebooks/03_expandable_segments.ipynb")[0]
    assert "The answer is the memory the run\n**adds** to the reserve (`added by the run`)" in intro
    assert not re.search(r"\d", intro.split("How much memory")[1].split("**In this")[0])  # no run's number


@pytest.mark.parametrize("path", T03, ids=lambda p: p.stem)
def test_03_figure_labels_clear_of_the_start_line(path):
    t, h = pd.read_csv(path), history_of(path)
    point = int(t["seq_len"].max())
    fig, (ax, small) = plotting.subplots(ncols=2, layout="constrained", figsize=(11, 4.5),
                                         gridspec_kw={"width_ratios": [4, 1]})
    expandable.plot_memory(ax, t, True, h)
    expandable.plot_gpu_work(small, budget.per_step(t, [OLD, NEW], seq_len=point), title="GPU work")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    lines = [b for c in ax.collections for b in c.get_paths()]  # the black start lines
    assert lines
    white = [x for x in ax.texts if x.get_color() == "white"]
    assert len(white) == 2 * t[t.status == "ok"]["seq_len"].nunique()
    for label in white:
        box = label.get_window_extent(renderer)
        for path_ in lines:
            (x0, y), (x1, _) = ax.transData.transform(path_.vertices)
            if x0 <= (box.x0 + box.x1) / 2 <= x1:
                assert not box.y0 - 1 <= y <= box.y1 + 1, (path, label.get_text())
    sizes = {x.get_fontsize() for x in small.get_yticklabels()}
    assert sizes == {ax.get_yticklabels()[0].get_fontsize()}
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("path", T03, ids=lambda p: p.stem)
def test_03_buys_line_without_the_largest_jump(path):
    t, h = pd.read_csv(path), history_of(path)
    point = int(t["seq_len"].max())
    line = expandable.buys_line(expandable.memory(t, h).loc[point], {}, point - 1, OLD, NEW, point)
    assert "largest jump" not in line and "of that" not in line
    assert not RANGE.search(line)


def test_03_reviewed_buys_line():
    path = DATA / "03_expandable_segments-94d1a85.csv"
    t, h = pd.read_csv(path), history_of(path)
    line = expandable.buys_line(expandable.memory(t, h).loc[400], {}, 399, OLD, NEW, 400)
    assert ("1142 MiB against 8284 MiB (7142 MiB less), for a peak allocated of "
            "1487 MiB against 1488 MiB.") in line


@pytest.mark.parametrize("path", T02, ids=lambda p: p.stem)
def test_02_one_line_says_whether_the_gain_grew(path):
    t = pd.read_csv(path)
    said = growth.answer_line(t, "kv_cache", "naive", True, LABELS)
    ratio = growth.growth_ratio_line(t, "kv_cache", "naive", True)
    assert not RANGE.search(said)
    if not ratio:
        assert "the gain grew" not in said and "shrank" not in said
        return
    word = ratio.rsplit(": ", 1)[1]
    expect = {"it grew.": "the gain grew", "it fell.": "the gain shrank",
              "no clear change.": "the gain neither clearly grew nor shrank"}[word]
    assert said.endswith(expect), (said, ratio)


def test_02_reviewed_one_line():
    t = pd.read_csv(DATA / "02_kv_cache-94d1a85.csv")
    assert growth.answer_line(t, "kv_cache", "naive", True, LABELS) == (
        "the gain was 1.20x to 1.47x: the KV cache was faster than the naive loop at every length; "
        "from 30 to 120 tokens the gain grew")
    t = pd.read_csv(DATA / "02_kv_cache-7b69875-workshop.csv")
    assert growth.answer_line(t, "kv_cache", "naive", True, LABELS).endswith(
        "; from 20 to 120 tokens the gain neither clearly grew nor shrank")
