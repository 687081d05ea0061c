"""Round 28: 02's "why is the gain not larger?" read from the table (the KV step's time outside
the GPU's work, median and fastest run, beside the naive loop's), no "host sets the pace", one
ratio in the text, the summary's answer by length; 03's table and figure 1 show what each run
added to the reserve it started from. Every frozen GPU table, full and workshop."""
import glob
import json
from pathlib import Path

import matplotlib
import pandas as pd

from helpers.course import expandable, growth, stats

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
NAMES = {"naive": "naive", "kv_cache": "KV cache"}
T02 = sorted(glob.glob(str(DATA / "02_kv_cache-*.csv")))
T03 = sorted(p for p in glob.glob(str(DATA / "03_expandable_segments-*.csv")))


def test_why_line_says_what_the_table_shows_on_every_02_table():
    assert T02
    for path in T02:
        t = pd.read_csv(path)
        lines = growth.pace_lines(t, "kv_cache", "naive", NAMES)
        text = "\n".join(lines)
        assert "sets the pace" not in text and "slow round" not in text, path
        why = lines[-1]
        values = sorted(t["seq_len"].unique())
        a, b = values[0], values[-1]
        out = {}
        for m in ("kv_cache", "naive"):
            r = {n: t[(t.method == m) & (t.seq_len == n)].iloc[0] for n in (a, b)}
            g = {n: round(1e3 * r[n].gpu_busy_s / n, 2) for n in (a, b)}
            out[m] = [(round(1e3 * r[n].median_s / n, 2) - g[n], round(1e3 * r[n].min_s / n, 2) - g[n])
                      for n in (a, b)]
        (ma, fa), (mb, fb) = out["kv_cache"]
        assert f"{ma:.2f} \u2192 {mb:.2f} ms (in its fastest run {fa:.2f} \u2192 {fb:.2f} ms)" in why
        grew = mb > ma * 1.05 and fb > fa * 1.05
        more = (mb - ma > out["naive"][1][0] - out["naive"][0][0]
                and fb - fa > out["naive"][1][1] - out["naive"][0][1])
        assert ("grew with the length, in its fastest run too" in why) == (grew and more), path
        assert ("shows no cost that grows" in why) == (not (grew and more)), path
    why = growth.pace_lines(pd.read_csv(DATA / "02_kv_cache-898ea06.csv"), "kv_cache", "naive", NAMES)[-1]
    assert "4.26 \u2192 7.06 ms (in its fastest run 3.92 \u2192 5.67 ms)" in why
    assert "this lesson does not measure where it goes" in why  # round 30, 33


def test_gains_printed_once_in_the_pace_lines_and_no_bars_note():
    t = pd.read_csv(DATA / "02_kv_cache-898ea06.csv")
    assert "1.20x" not in "\n".join(growth.pace_lines(t, "kv_cache", "naive", NAMES))
    nb = (ROOT / "notebooks" / "02_kv_cache.ipynb").read_text()
    assert "bars_note(" not in nb and "growth.closing_line(" in nb  # round 34: it calls answer_line


def test_answer_line_names_the_lengths_where_the_cache_was_faster():
    labels = {"naive": "the naive loop", "kv_cache": "the KV cache"}
    for path in T02:
        t = pd.read_csv(path)
        said = growth.answer_line(t, "kv_cache", "naive", True, labels)
        for n in sorted(t["seq_len"].unique()):
            word = stats.verdict(stats.row_speedup(t, "kv_cache", "naive", seq_len=n))
            if word == stats.NOISE:
                assert "can't tell apart on this machine" in said, path
            else:
                assert f"the KV cache was {word} than the naive loop" in said, path
    t = pd.read_csv(DATA / "02_kv_cache-898ea06.csv")
    assert growth.answer_line(t, "kv_cache", "naive", True, labels) == (
        "the gain was 1.14x to 1.23x: the KV cache was faster than the naive loop at 120 tokens; "
        "at 30 and 75 tokens can't tell apart on this machine; from 30 to 120 tokens the gain "
        "neither clearly grew nor shrank")  # round 32: the growth verdict in words
    assert growth.answer_line(t, "kv_cache", "naive", False, labels) == ""


def test_03_table_and_figure_show_what_each_run_added():
    assert T03
    for path in T03:
        t = pd.read_csv(path)
        history = pd.read_csv(path.replace("segments-", "segments_timeline-"))
        mem = expandable.memory(t, history)
        start = expandable.start_reserved(history)
        for (n, conf), row in mem.iterrows():
            assert abs(row["added by the run MiB"]
                       - (row["peak reserved MiB"] - start[conf])) < 0.11, path
        assert "added by the run MiB" not in expandable.memory(t).columns
        fig, ax = matplotlib.pyplot.subplots()
        expandable.plot_memory(ax, t, True, history)
        assert "reserved before the prefill" in [x.get_text() for x in ax.get_legend().get_texts()]
        matplotlib.pyplot.close(fig)
    mem = expandable.memory(pd.read_csv(DATA / "03_expandable_segments-898ea06.csv"),
                            pd.read_csv(DATA / "03_expandable_segments_timeline-898ea06.csv"))
    assert list(mem.loc[100, "added by the run MiB"]) == [394.0, 422.0]


def test_notebooks_pass_the_history_to_the_table_and_figure():
    cells = json.loads((ROOT / "notebooks" / "03_expandable_segments.ipynb").read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells)
    assert "history = lesson.timeline(runs) if on_gpu else None" in code  # recorded once
    assert "lesson.memory(table, history)" in code
    assert "lesson.plot_memory(ax_memory, table, on_gpu, history)" in code
