"""The sentences notebooks 04, 06 and 07 print from their tables, read from the published H100
run's CSVs (figures/data/): each branch that asserts a direction must agree with the numbers."""
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from helpers.course import budget, eos_sync, late_check  # noqa: E402
from helpers.course import static_cache as lesson  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "figures" / "data"


def published(name):
    path = DATA / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"no published {path.name}")
    return pd.read_csv(path)


def test_04_eager_rows_say_the_host_sets_the_pace():
    table = published("04_static_cache")
    P = SimpleNamespace(seq_lens=[100, 200])
    line = lesson.eager_noise_line(table, P)
    assert line.startswith("Eager rows: one loop's runs spread by up to 118% of their median")
    # 100 tokens: 247 ms more GPU work, 17 ms less wall clock (hidden); 200 tokens: 435 ms more
    # GPU work, 169 ms more wall clock (39% of it showed)
    assert ("At 100 tokens the oversized cache did 247 ms more GPU work than the cache sized to "
            "the run and finished 17 ms sooner: the host's time hid all of it.") in line
    assert "took 169 ms longer: 39% of it showed in the wall clock." in line
    assert line.endswith("the wall clock follows the host more than the GPU's work.")
    # the wide eager interval at 200 tokens is read in words; the narrower one at 100 is not
    wide = lesson.eager_verdict(table, 200, judge=True)
    assert wide.endswith("A wide range: slower in this run, by anywhere from 7% to 68%; the host "
                         "paces the eager loops, and its speed moves between trials.")
    assert "wide range" not in lesson.eager_verdict(table, 100, judge=True)
    assert "400 was not run (the preset stops at 200" in lesson.article_line(table, P)
    eager, graph = lesson.by_regime(budget.per_step(table, lesson.METHODS, seq_len=200))
    assert list(graph["method"]) == [lesson.STATIC, lesson.OVERSIZED]
    assert len(eager) == 3


def test_06_eager_check_is_read_against_the_model():
    cost = published("06_eos_sync_regimes")
    steps = budget.per_step(cost, seq_len=100)
    line = eos_sync.eager_check_line(steps, cost)
    # this run's eager check measured +86 µs per step, not told apart from the noise: no share
    # of the CUDA graph's cost is given for a cost that cannot be told apart
    assert "the check measured +86 µs per step, inside the noise;" in line
    assert "% of its cost under the CUDA graph" not in line
    assert "can't tell apart on this machine (0.90–1.04; medians alone: 1.01x)" in line
    assert "As the simple model predicts for a step the host paces, no cost can be told apart" in line
    assert line.endswith("a cost under about 4% would not show.")


def test_06_a_check_that_measured_faster_is_called_noise_not_a_saving():
    cost = published("06_eos_sync_regimes")
    steps = budget.per_step(cost, seq_len=100).set_index("method")
    steps.loc[f"eager, {eos_sync.CHECK}", "wall_ms"] = steps.loc[f"eager, {eos_sync.FREE}", "wall_ms"] - 0.05
    line = eos_sync.eager_check_line(steps.reset_index(), cost)
    assert "ran 50 µs per step faster (a check adds work and cannot save time" in line
    assert "measured -" not in line and "% of its cost" not in line


def early_stop_table():
    """06's early-stop table, with the column that counts each loop's new tokens per row."""
    table = published("06_eos_sync").replace({"method": {"sync": eos_sync.CHECK,
                                                         "no_check": eos_sync.FREE}})
    table["tokens"] = [80 if m == eos_sync.CHECK else c for m, c in zip(table["method"], table["seq_len"])]
    return table


def test_06_early_stop_note_and_figure():
    table = early_stop_table()
    note = eos_sync.early_stop_note(table)
    assert "generates the same 80 tokens at every cap (the prefill's, then 79 decode steps" in note
    assert "moved by 5% (418.4 ms at cap 100, 441.0 ms at cap 200)" in note
    assert note.endswith("far larger than that drift.")
    assert "At cap" not in eos_sync.early_stop_note(table, judge=False)
    assert eos_sync.figure_line(table).startswith(
        "Figure, left: with the check the batch finishes in 0.42 s at cap 100, 0.44 s at cap 200; "
        "running to the cap takes 0.53 s at cap 100, 1.07 s at cap 200.")
    fig, ax = plt.subplots()
    eos_sync.plot_early_stop(ax, table, 20, 80)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [eos_sync.CHECK, eos_sync.FREE]
    assert not ax.get_lines() or all(len(line.get_xdata()) <= 2 for line in ax.get_lines())
    plt.close(fig)


def test_06_the_loop_timed_twice_and_the_three_costs():
    table, cost = early_stop_table(), published("06_eos_sync_regimes")
    note = eos_sync.same_loop_note(table, cost, 100)
    # 527.8 ms over 100 tokens in the early-stop table, 6.024 ms per step in the budget's rounds
    assert "ran 5.28 ms per step in the early-stop table and 6.02 ms here, 14% apart" in note
    assert "(outside the 5.09 to 5.99 ms its runs spanned there)" in note
    gaps = published("06_eos_sync_gaps").groupby("method")[["gap_before_us", "cpu_wait_us"]].median()
    line = eos_sync.three_costs_line(289.0, gaps)
    assert line.startswith("CUDA-graph step, one check seen three ways: unprofiled it costs 289 µs")
    assert "the CPU waits 900 µs at it, but the GPU is busy during that wait" in line
    assert "only the gap after it is lost: 380 µs (1 µs without the check; the profiler" in line
    assert "profiler" not in eos_sync.three_costs_line(400.0, gaps).split("lost:")[1]


def test_07_eager_and_pair_lines():
    table = published("07_stream_interleaving")
    summary = late_check.summary(table)
    at = summary[summary["batch_size"] == 32].set_index("regime")
    part = table[(table["regime"] == "eager") & (table["batch_size"] == 32)]
    line = late_check.eager_line(at.loc["eager"], part)
    assert line.startswith("Eager step, batch 32: 5.000 ms per step with the per-step sync, "
                           "5.040 ms with no check at all (the check: -40 µs, -1% of the step)")
    assert line.endswith("With no cost told apart, a late read has nothing to win back here.")
    graph = table[(table["regime"] == "compiled") & (table["batch_size"] == 32)]
    pair = late_check.pair_line(graph, at.loc["compiled"])
    assert pair.startswith("Two streams against the event: 1.02x slower (1.01–1.04)")
    assert "their medians differ by 40 µs per step (2.2% of the per-step sync's step)" in pair
    # the summary's words follow the same verdict: the event ran faster, not "the same job"
    assert late_check.pair_words(graph) == "one stream and an event ran 1.02x faster than two streams"
    answer = late_check.answer_line(at.loc["compiled"], graph)
    assert "Two streams: 1.332 ms, 1.33x faster (1.27–1.39) against the per-step sync" in answer
    assert "recovers 103% of the check's cost (over 100%: within the noise, all of it)" in answer


def test_07_smallest_batch_is_judged_from_the_rounds():
    table = published("07_stream_interleaving")
    line = late_check.smallest_batch_line(table, late_check.summary(table))
    # 1.37x at batch 1 against 1.35x at batch 32: not told apart; batch 128's 1.17x is smaller
    assert "1.37x at batch 1, 1.35x at batch 32, 1.17x at batch 128." in line
    assert line.endswith("batch 1 and batch 32 can't be told apart; batch 128 gains less than batch 1.")
    assert late_check.smallest_batch_line(table, late_check.summary(table), judge=False) == ""


def test_07_cost_note_reads_the_table_against_its_own_cost(monkeypatch, tmp_path):
    table, regimes_06 = published("07_stream_interleaving"), published("06_eos_sync_regimes")
    summary = late_check.summary(table)
    (tmp_path / "data").mkdir()
    regimes_06.to_csv(tmp_path / "data" / "06_eos_sync_regimes.csv", index=False)
    monkeypatch.setattr(late_check.results, "run_dir", lambda: tmp_path)
    monkeypatch.setattr(late_check.claims, "why_not_this_run", lambda name, record: None)
    note = late_check.cost_note(summary, {}, 32)
    assert note.startswith("The check's cost, 497 µs per step at batch 32, is host time")
    assert ("notebook 06 measured it at 289 µs, its per-step sync running 1.576 ms per step "
            "(+14% here) and its no-check loop 1.286 ms (+2% here)") in note
    assert "Over 100%, event at batch 32 (103%)" in note
    monkeypatch.setattr(late_check.claims, "why_not_this_run", lambda name, record: "absent")
    assert "notebook 06" not in late_check.cost_note(summary, {}, 32)
