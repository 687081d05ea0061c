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
    line = lesson.eager_noise_line(table, SimpleNamespace(seq_lens=[100, 200]))
    assert line.startswith("Eager rows: one loop's runs spread by up to ")
    # 100 tokens: 255 ms more GPU work, 4 ms more wall clock (hidden); 200 tokens: 446 ms more
    # GPU work, 890 ms more wall clock (the host's drift, more than the work explains)
    assert "at 100 tokens the oversized cache did 255 ms more GPU work and took 4 ms longer;" in line
    assert "took 890 ms longer, more than that work can explain." in line
    assert line.endswith("the wall clock follows the host, not the GPU's work.")
    eager, graph = lesson.by_regime(budget.per_step(table, lesson.METHODS, seq_len=200))
    assert list(graph["method"]) == [lesson.STATIC, lesson.OVERSIZED]
    assert len(eager) == 3


def test_06_eager_check_is_read_against_the_model():
    cost = published("06_eos_sync_regimes")
    steps = budget.per_step(cost, seq_len=100)
    line = eos_sync.eager_check_line(steps, cost)
    # this run's eager loop with the check measured 154 µs per step faster: noise, not a saving
    assert "the loop with the check ran 154 µs per step faster (a check adds work" in line
    assert "can't tell apart on this machine (0.68–1.14; medians alone: 0.98x)" in line
    assert "As the simple model predicts for a step the host paces, no cost can be told apart" in line


def test_06_a_check_that_measured_faster_is_called_noise_not_a_saving():
    cost = published("06_eos_sync_regimes")
    steps = budget.per_step(cost, seq_len=100).set_index("method")
    steps.loc[f"eager, {eos_sync.CHECK}", "wall_ms"] = steps.loc[f"eager, {eos_sync.FREE}", "wall_ms"] - 0.05
    line = eos_sync.eager_check_line(steps.reset_index(), cost)
    assert "ran 50 µs per step faster (a check adds work and cannot save time" in line
    assert "measured -" not in line and "% of its cost" not in line


def test_06_early_stop_note_and_figure():
    table = published("06_eos_sync").replace({"method": {"sync": eos_sync.CHECK,
                                                         "no_check": eos_sync.FREE}})
    table["steps"] = [80 if m == eos_sync.CHECK else c for m, c in zip(table["method"], table["seq_len"])]
    note = eos_sync.early_stop_note(table)
    assert "moved by 5% (552.1 ms at cap 100, 526.8 ms at cap 200)" in note
    assert note.endswith("far larger than that drift.")
    assert "At cap" not in eos_sync.early_stop_note(table, judge=False)
    fig, ax = plt.subplots()
    eos_sync.plot_early_stop(ax, table, 20, 80)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [eos_sync.CHECK, eos_sync.FREE]
    assert not ax.get_lines() or all(len(line.get_xdata()) <= 2 for line in ax.get_lines())
    plt.close(fig)


def test_07_eager_and_pair_lines():
    table = published("07_stream_interleaving")
    summary = late_check.summary(table)
    at = summary[summary["batch_size"] == 32].set_index("regime")
    part = table[(table["regime"] == "eager") & (table["batch_size"] == 32)]
    line = late_check.eager_line(at.loc["eager"], part)
    assert line.startswith("Eager step, batch 32: 9.095 ms per step with the per-step sync, "
                           "8.302 ms with no check at all (the check: +793 µs, +9% of the step)")
    assert line.endswith("With no cost told apart, a late read has nothing to win back here.")
    graph = table[(table["regime"] == "compiled") & (table["batch_size"] == 32)]
    pair = late_check.pair_line(graph, at.loc["compiled"])
    assert "their medians differ by 28 µs per step (1.6% of the per-step sync's step)" in pair
    assert pair.endswith("within 3% of each other, the same job done.")
