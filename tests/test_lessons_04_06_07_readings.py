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


def test_04_every_comparison_is_read_with_one_rule():
    table = published("04_static_cache")
    P = SimpleNamespace(seq_lens=[100, 200])
    assert lesson.eager_spread_line(table) == (
        "Eager rows: one loop's runs spread by up to 38% of their median between trials (the "
        "host's speed).")
    # 100 tokens: 252 ms more GPU work, 200 tokens: 444 ms more; at both lengths the oversized
    # and the sized eager cache can't be told apart, in the words every verdict uses: no cost,
    # no cause, the medians named where they differ
    # the medians' gap is read against the host's spread, never as work hidden or a gain
    assert lesson.oversized_line(table, 100, judge=True) == (
        "100 tokens, eager: the oversized cache against the one sized to the run: can't tell apart "
        "on this machine (0.75\u20131.07; medians alone: 1.04x), although it did 252 ms more GPU "
        "work. Its median lies 47 ms below the sized cache's, within the 451 ms by which either "
        "loop's runs spread between trials: the host's speed, not the extra work, sets that "
        "difference.")
    assert "although it did 444 ms more GPU work. Its median lies 25 ms below" in \
        lesson.oversized_line(table, 200, judge=True)
    # the CUDA-graph rows named where they appear, and why the sized one attends over more than 2x
    assert lesson.graph_rows_line(table).endswith(
        "at 100 tokens the one sized to the run holds 128 positions where the run needs 116, so "
        "it attends over 2.21x the useful pairs, not 2.00x.")
    # in a CUDA graph the oversized cache is slower: a cost, of the size of its extra GPU work
    assert lesson.oversized_line(table, 200, judge=True, graph=True) == (
        "200 tokens, CUDA graph: the oversized cache against the one sized to the run (rounded up "
        "to 224 positions): 2.03x slower (2.00\u20132.05): a cost of 443 ms a run (medians), of the "
        "size of its 445 ms more GPU work, the attention over masked positions.")
    # static against dynamic ties at both lengths: no host cost is offered a cause, and a range
    # that spans 1 is not read as a wide "slower"/"faster"
    assert lesson.eager_cause_line(table, P) == (
        "No host cost of the static cache is named: at no length was it slower than the dynamic "
        "one.")
    for n in P.seq_lens:
        assert "wide range" not in lesson.eager_verdict(table, n, judge=True)
    # an eager oversized cache made slower: a cost, set against its extra GPU work
    over = table.copy()
    fit = over[(over["method"] == lesson.STATIC) & (over["seq_len"] == 200)].index[0]
    row = over[(over["method"] == lesson.OVERSIZED) & (over["seq_len"] == 200)].index[0]
    trials = [float(t) for t in over.at[fit, "trials_wall_ms"].split()]
    for factors, said in (((1.05, 1.08, 1.06, 1.1, 1.07), "less than its 444 ms more GPU work: "
                           "the host's time hid the rest."),
                          ((1.2, 1.25, 1.22, 1.28, 1.24), "of the size of its 444 ms more GPU work"),
                          ((1.5, 1.6, 1.55, 1.7, 1.65), "more than its 444 ms more GPU work explains.")):
        slowed = [t * f for t, f in zip(trials, factors)]
        over.at[row, "trials_wall_ms"] = " ".join(f"{t:.4f}" for t in slowed)
        over.at[row, "median_s"] = sorted(slowed)[2] / 1e3
        line = lesson.oversized_line(over, 200, judge=True)
        assert "x slower (" in line and ": a cost of " in line and said in line
    # the slower branches, on the same table with the static loop's 200-token trials made slower
    slow = table.copy()
    dyn = slow[(slow["method"] == lesson.DYNAMIC) & (slow["seq_len"] == 200)].index[0]
    row = slow[(slow["method"] == lesson.STATIC) & (slow["seq_len"] == 200)].index[0]
    trials = [float(t) for t in slow.at[dyn, "trials_wall_ms"].split()]
    slow.at[row, "trials_wall_ms"] = " ".join(
        f"{t * f:.4f}" for t, f in zip(trials, (1.1, 1.6, 1.2, 1.9, 1.3)))
    assert lesson.eager_cause_line(slow, P).startswith(
        "The static cache was slower at 200 tokens. A possible cause, not measured here:")
    assert "A wide range: slower in this run" in lesson.eager_verdict(slow, 200, judge=True)
    assert "400 was not run (the preset stops at 200" in lesson.article_line(table, P)
    # one layer's keys at the run's end: 32 rows x 215 positions (the last token is never fed
    # back) x 768 x 4 bytes
    assert lesson.growth_copy_line(table, SimpleNamespace(config=SimpleNamespace(n_layer=12)),
                                   200).endswith("is at most 20.2 MiB.")
    # the memory above each cache: the prefill's logits (32 x 16 x 50257 x 4 bytes) common to all,
    # so that the dynamic cache's old copy stands out
    gpt2 = SimpleNamespace(config=SimpleNamespace(n_layer=12, vocab_size=50257))
    memory = lesson.memory_line(table, gpt2, SimpleNamespace(batch_size=32, prompt_len=16), 200)
    assert memory.startswith("Memory at 200 tokens, each run's peak above its own cache tensors: "
                             "dynamic 125 MiB, static 104 MiB, oversized 104 MiB.")
    assert "32 rows x 16 positions x 50257 tokens x 4 bytes = 98 MiB" in memory
    assert "peak sits 21 MiB higher than the static one's" in memory
    assert memory.endswith("is at most 20.2 MiB.")
    eager, graph = lesson.by_regime(budget.per_step(table, lesson.METHODS, seq_len=200))
    assert list(graph["method"]) == [lesson.STATIC, lesson.OVERSIZED]
    assert len(eager) == 3


def test_06_eager_check_is_read_against_the_model():
    cost, table = published("06_eos_sync_regimes"), early_stop_table()
    steps = budget.per_step(cost, seq_len=100)
    drift = eos_sync.loop_drift(table, cost, 100)
    line = eos_sync.eager_check_line(steps, cost, drift=drift)
    # this run's eager check measured +602 µs per step (1.13x, told apart), more than the CUDA
    # graph's +287 µs: the model did not predict it, and it is read against the host's drift
    assert "the check measured +602 µs per step, 210% of its cost under the CUDA graph;" in line
    assert "without it: 1.13x faster (1.03–1.25)." in line
    assert "The simple model did not predict this: it expects the larger cost under the CUDA graph." in line
    assert line.endswith("At 12% of the step, the eager cost is of the size of the host's drift "
                         "between runs (one loop timed twice moved by up to 21%: the same-loop "
                         "note above).")
    assert "not hidden" not in line
    assert "drift" not in eos_sync.eager_check_line(steps, cost)  # no drift given: no claim
    model = eos_sync.model_line(steps, cost)
    assert model.startswith("The simple model's prediction did not hold in this run: the check "
                            "cost +287 µs per step under the CUDA graph and +602 µs with the eager step.")
    assert eos_sync.model_line(steps, cost, judge=False) == ""
    # a run where the graph's cost is the larger reads as the model's prediction held
    swapped = steps.set_index("method")
    swapped.loc[f"eager, {eos_sync.CHECK}", "wall_ms"] = swapped.loc[f"eager, {eos_sync.FREE}", "wall_ms"] + 0.05
    assert eos_sync.model_line(swapped.reset_index(), cost).startswith(
        "The simple model's prediction held in this run")


def test_06_an_eager_cost_not_told_apart_leaves_the_model_not_contradicted():
    cost = published("06_eos_sync_regimes").set_index("method")
    free = [float(t) for t in cost.at[f"eager, {eos_sync.FREE}", "trials_wall_ms"].split()]
    slowed = [t * f for t, f in zip(free, (1.03, 0.98, 1.02, 1.0, 0.99, 1.01))]
    cost.at[f"eager, {eos_sync.CHECK}", "trials_wall_ms"] = " ".join(f"{t:.4f}" for t in slowed)
    cost.at[f"eager, {eos_sync.CHECK}", "median_s"] = sorted(slowed)[len(slowed) // 2] / 1e3
    cost = cost.reset_index()
    steps = budget.per_step(cost, seq_len=100)
    pct, us = eos_sync.unseen_us(steps, cost)
    assert pct > 0 and us > 0
    model = eos_sync.model_line(steps, cost)
    # never "held" on a cost not told apart: the run allows the prediction, it does not show it
    assert model.startswith("The simple model's prediction was not contradicted in this run")
    assert f"could not have seen a cost under about {us:.0f} µs" in model
    line = eos_sync.eager_check_line(steps, cost)
    assert line.endswith(f"a cost under about {pct:.0f}% of the step (about {us:.0f} µs) would not "
                         "show in this run.")


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
    # one base for every percentage: the smaller time ("x% slower")
    assert "slowest median is 9% slower than its fastest (414.4 ms at cap 100, 380.4 ms at cap 200)" in note
    # one form for the gain: the rounds' x-faster verdict, not "% longer"
    assert ("At cap 200, stopping early against running to the cap: 2.85x faster "
            "(2.42–3.39; medians alone: 2.95x), far larger than that drift.") in note
    # a smaller cap whose runs spread widely is named: only the largest cap is read
    assert note.endswith("At cap 100 the checking loop's runs spread from 389 to 539 ms (the "
                         "slowest 39% slower), so early stopping is read at cap 200 only.")
    calm = table.assign(max_s=table["min_s"] * 1.1)
    assert "spread from" not in eos_sync.early_stop_note(calm)
    assert "longer" not in note
    assert "At cap" not in eos_sync.early_stop_note(table, judge=False)
    assert eos_sync.figure_line(table).startswith(
        "Figure, left: with the check the batch finishes in 0.41 s at cap 100, 0.38 s at cap 200; "
        "running to the cap takes 0.57 s at cap 100, 1.12 s at cap 200.")
    fig, ax = plt.subplots()
    eos_sync.plot_early_stop(ax, table, 20, 80)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [eos_sync.CHECK, eos_sync.FREE]
    assert not ax.get_lines() or all(len(line.get_xdata()) <= 2 for line in ax.get_lines())
    plt.close(fig)


def test_06_the_loop_timed_twice_and_the_three_costs():
    table, cost = early_stop_table(), published("06_eos_sync_regimes")
    note = eos_sync.same_loop_note(table, cost, 100)
    # 568.7 ms over 100 tokens in the early-stop table, 5.173 ms per step in the budget's rounds
    assert "ran 5.69 ms per step in the early-stop table and 5.17 ms here, 10% slower there" in note
    assert "(inside the 4.80 to 6.45 ms its runs spanned there)" in note
    # the checking loop too: 414.4 and 380.4 ms over its 80 tokens, 5.775 ms per step here
    assert ("the checking loop ran 5.18 ms at cap 100 and 4.76 ms at cap 200 per step in the "
            "early-stop table (its 80 tokens), 5.77 ms here (100 tokens), the slowest 21% slower than "
            "the fastest") in note
    assert round(eos_sync.loop_drift(table, cost, 100), 2) == 0.21
    gaps = published("06_eos_sync_gaps").groupby("method")[["gap_before_us", "cpu_wait_us"]].median()
    line = eos_sync.three_costs_line(287.0, gaps)
    assert line.startswith("CUDA-graph step, one check seen three ways: unprofiled it costs 287 µs")
    assert "the CPU waits 901 µs at it, but the GPU is busy during that wait" in line
    assert "only the gap after it is lost: 371 µs (1 µs without the check; the profiler" in line
    assert "profiler" not in eos_sync.three_costs_line(400.0, gaps).split("lost:")[1]


def test_07_eager_and_pair_lines():
    table = published("07_stream_interleaving")
    summary = late_check.summary(table)
    at = summary[summary["batch_size"] == 32].set_index("regime")
    part = table[(table["regime"] == "eager") & (table["batch_size"] == 32)]
    line = late_check.eager_line(at.loc["eager"], part)
    assert line.startswith("Eager step, batch 32: 5.989 ms per step with the per-step sync, "
                           "6.409 ms with no check at all (the loop with the check ran 420 µs per step faster: "
                           "a check cannot save time, so this is the host's noise)")
    # the bound a late read could win back, computed from the interval (0.86–1.18)
    assert line.endswith("No cost was told apart from the host's noise here, which does not make "
                         "it zero: the interval allows at most about 18% of the step (about 1153 "
                         "µs), the most a late read could win back here.")
    graph = table[(table["regime"] == "compiled") & (table["batch_size"] == 32)]
    pair = late_check.pair_line(graph, at.loc["compiled"])
    assert pair.startswith("Two streams against the event: 1.093x slower (1.003–1.223; medians alone: 1.007x)")
    assert "their medians differ by 9 µs per step (0.6% of the per-step sync's step)" in pair
    # the rounds say 1.09x, the medians 0.7%: the summary's words name both
    # at the precision of the pair line's interval (1.093x)
    assert late_check.pair_words(graph) == ("one stream and an event ran 1.093x faster than two "
                                            "streams by the rounds, about the same by the medians")
    answer = late_check.answer_line(at.loc["compiled"], graph)
    assert "Two streams: 1.297 ms, 1.24x faster (1.08–1.38) against the per-step sync" in answer
    assert "it recovers 94% of the check's cost." in answer


def test_07_smallest_batch_is_judged_from_the_rounds():
    table = published("07_stream_interleaving")
    line = late_check.smallest_batch_line(table, late_check.summary(table))
    # the rounds' estimates (as answer_line says 1.24x at batch 32), not the medians' ratios
    assert ("two streams over the per-step sync 1.18x at batch 1, 1.24x at batch 32, 1.12x at "
            "batch 128 (estimates from the rounds; the table's medians give 1.11x, 1.26x, 1.13x).") in line
    assert ("From the rounds, batch 1 against 32: can't tell apart (0.79–1.17); against 128: "
            "can't tell apart.") in line
    # at batch 1 two streams win back far less than the event: said
    assert line.endswith("By the medians, at batch 1, two streams win back only 30% of the "
                         "check's cost, the event wins back 91%.")
    assert late_check.smallest_batch_line(table, late_check.summary(table), judge=False) == ""
    # the article's claim for the summary, without intervals
    assert late_check.claim_words(table, late_check.summary(table)) == (
        "The article's claim, the gain largest at the smallest batch, is not shown in this run: "
        "two streams over the per-step sync 1.18x at batch 1, 1.24x at batch 32, 1.12x at batch "
        "128 (estimates from the rounds); batch 1's gain is not told apart from the gain at "
        "batches 32 and 128.")
    assert late_check.claim_words(table, late_check.summary(table), judge=False) == ""


def test_07_cost_note_reads_the_table_against_its_own_cost(monkeypatch, tmp_path):
    table, regimes_06 = published("07_stream_interleaving"), published("06_eos_sync_regimes")
    summary = late_check.summary(table)
    (tmp_path / "data").mkdir()
    regimes_06.to_csv(tmp_path / "data" / "06_eos_sync_regimes.csv", index=False)
    monkeypatch.setattr(late_check.results, "run_dir", lambda: tmp_path)
    asked = []
    monkeypatch.setattr(late_check.claims, "why_not_this_run",
                        lambda name, record: asked.append(name))
    note = late_check.cost_note(summary, {}, 32)
    assert asked == ["06_eos_sync"]  # 06's record is named after the notebook, not the table
    # 06's µs next to 07's, where the note says the cost moves with the host
    assert note.startswith("The check's cost, 355 µs per step at batch 32 here and 287 µs in "
                           "notebook 06 (same batch), is mostly host time")
    assert ("notebook 06's per-step sync ran 1.545 ms per step (+5% here) and its no-check loop "
            "1.258 ms (+1% here)") in note
    assert "Over 100%" not in note
    # two notebooks whose costs agree within a few % say so, not that the cost moved
    monkeypatch.setattr(late_check, "notebook_06_loops", lambda record, batch: (1.630, 1.283))
    agree = late_check.cost_note(summary, {}, 32)
    assert "(same batch): the two notebooks agree within 3%." in agree and "moves with" not in agree
    monkeypatch.undo()
    monkeypatch.setattr(late_check.claims, "why_not_this_run", lambda name, record: "absent")
    assert "notebook 06" not in late_check.cost_note(summary, {}, 32)
