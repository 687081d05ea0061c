"""The time budget of a decode step and the one way a lesson states a speedup."""
import math

import pandas as pd
import pytest

from helpers.course import budget, harness, stats


def table(naive_wall, naive_busy, kv_wall, kv_busy, tokens=100):
    rows = []
    for method, wall, busy in (("naive", naive_wall, naive_busy), ("kv", kv_wall, kv_busy)):
        rows.append({"method": method, "seq_len": tokens, "median_s": wall, "gpu_busy_s": busy,
                     "status": harness.OK})
    return pd.DataFrame(rows)


def test_per_step_divides_by_the_tokens_and_keeps_the_order():
    b = budget.per_step(table(0.8, 0.5, 0.5, 0.1), ["kv", "naive"], floor=0.2,
                        labels={"kv": "KV cache"}, seq_len=100)
    assert list(b["method"]) == ["KV cache", "naive"]
    kv = b.iloc[0]
    assert kv["wall_ms"] == pytest.approx(5.0) and kv["gpu_ms"] == pytest.approx(1.0)
    assert kv["idle_ms"] == pytest.approx(4.0) and kv["floor_ms"] == 0.2


def test_sentence_reads_the_host_bound_step():
    b = budget.per_step(table(0.8, 0.5, 0.5, 0.1), floor=0.25, seq_len=100)
    text = budget.sentence(b, "kv", "naive")
    assert "fell 5.0x" in text and "host sets the pace" in text
    # the wall clock in ms, no ratio: the verdict line states the speedup
    assert "went from 8.00 to 5.00 ms" in text and "1.6x" not in text
    assert text.startswith("Per decode step, from naive to kv:")  # the direction, in words
    commas = budget.sentence(b.replace({"naive": "eager, no check"}), "kv", "eager, no check")
    assert commas.startswith("Per decode step, from “eager, no check” to kv:")
    assert "takes 20x that" in text  # 5 ms against a 0.25 ms floor (3 significant digits)


def test_sentence_reads_a_gpu_bound_step_and_is_empty_without_gpu_numbers():
    b = budget.per_step(table(0.8, 0.5, 0.1, 0.095), seq_len=100)
    assert "GPU sets the pace" in budget.sentence(b, "kv", "naive")
    assert budget.sentence(budget.per_step(table(0.8, math.nan, 0.5, math.nan), seq_len=100),
                           "kv", "naive") == ""


def test_pace_has_a_middle_ground_and_overlapping_kernels_are_said_plainly():
    # 01's naive step at 300 tokens: the GPU idled 23% of it, busy 77%: not host-bound
    assert budget.pace(60) == "the host sets the pace"
    assert budget.pace(10) == "the GPU sets the pace"
    assert budget.pace(23) == "host and GPU share the pace, so both less host work and faster kernels pay"
    # a profiled run a little slower than the timed ones: busy time above the wall clock
    b = budget.per_step(table(0.8, 0.5, 0.052, 0.053), seq_len=100)
    text = budget.sentence(b, "kv", "naive")
    assert "running for the whole step" in text and "GPU sets the pace" in text and "idle" not in text
    # the idle time is never put down to the host alone: in a graph it is gaps between kernels
    b = budget.per_step(table(0.8, 0.5, 0.14, 0.116), seq_len=100)
    assert "gaps between kernels" in budget.sentence(b, "kv", "naive")
    # an idle time under 0.1 ms in µs (not "0.00 ms of each 0.53 ms")
    b = budget.per_step(table(0.8, 0.5, 0.053, 0.0525), seq_len=100)
    assert "to 5 µs per step (1% of 0.53 ms" in budget.sentence(b, "kv", "naive")


def test_plot_draws_one_row_per_method(tmp_path):
    from helpers.course import plotting

    fig, ax = plotting.subplots()
    budget.plot(ax, budget.per_step(table(0.8, 0.5, 0.5, 0.1), floor=0.2, seq_len=100))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["kv", "naive"]
    assert any("floor" in t.get_text() for t in ax.get_legend().get_texts())


def test_plot_never_draws_gpu_work_longer_than_its_step():
    """A profiled run a hair slower than the timed ones gives GPU work above the wall clock: the
    bar stops at the step, and its label says the GPU was busy throughout."""
    from helpers.course import plotting

    fig, ax = plotting.subplots()
    b = budget.per_step(table(0.8, 0.5, 0.050, 0.051), seq_len=100)  # kv: 0.50 ms, GPU 0.51
    budget.plot(ax, b)
    labels = [t.get_text() for t in ax.texts]
    assert "0.50 ms\n(GPU busy throughout)" in labels and not any("GPU 0.51" in t for t in labels)
    assert "(GPU 5.00)" in " ".join(labels)  # naive: 8.00 ms, GPU 5.00
    widths = sorted(round(p.get_width(), 3) for p in ax.patches)
    assert 0.51 not in widths and widths.count(0.5) == 2  # kv's wall bar and its GPU bar


def test_plot_reads_a_rows_gpu_note_instead_of_its_gpu_time():
    """A row whose GPU bar is not pure work (PDL: kernels wait inside the GPU's time) carries a
    ``gpu_note``; the label gives that note, never "busy throughout"."""
    from helpers.course import plotting

    fig, ax = plotting.subplots()
    b = budget.per_step(table(0.8, 0.5, 0.050, 0.051), seq_len=100)
    b["gpu_note"] = [None, "GPU bar includes waiting"]
    budget.plot(ax, b)
    labels = [t.get_text() for t in ax.texts]
    assert "0.50 ms\n(GPU bar includes waiting)" in labels
    assert not any("busy throughout" in t for t in labels) and "(GPU 5.00)" in " ".join(labels)


def test_idle_in_the_sentence_is_the_difference_of_the_printed_values():
    b = budget.per_step(table(0.8, 0.5, 1.5412, 1.3766), seq_len=100)  # 15.41 - 13.77
    assert "to 1.64 ms per step (11% of 15.41 ms" in budget.sentence(b, "kv", "naive")


@pytest.mark.parametrize("trials,expected", [
    (([1.0] * 6, [2.0, 2.1, 1.9, 2.0, 2.05, 1.95]), "faster"),
    (([2.0, 2.1, 1.9, 2.0, 2.05, 1.95], [1.0] * 6), "slower"),
    (([1.0, 1.1, 0.9, 1.0, 1.05, 0.95], [1.0, 0.95, 1.1, 1.0, 1.0, 1.02]), "can't tell apart"),
    (([1.0] * 3, [2.0] * 3), "too few to judge"),
])
def test_plain_has_one_format(trials, expected):
    text = stats.plain(stats.speedup(*trials))
    assert expected in text
    for word in ("CI", "paired", "bootstrap", "noise"):
        assert word not in text


def test_plain_gives_no_verdict_on_a_smoke_run():
    text = stats.plain(stats.speedup([1.0] * 6, [2.0] * 6), judge=False)
    assert "faster" not in text and "smoke" in text


def test_plot_without_wall_clock_draws_gpu_work_and_floor_only():
    from helpers.course import plotting

    fig, ax = plotting.subplots()
    budget.plot(ax, budget.per_step(table(0.8, 0.5, 0.5, 0.1), floor=0.2, seq_len=100), wall=False)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any("wall" in label for label in labels) and any("GPU" in l for l in labels)
    texts = [t.get_text() for t in ax.texts]
    # the bars' values, kv first from the bottom; a floor this close to the axis is named too
    assert [t for t in texts if not t.startswith("\u25c0")] == ["1.00 ms", "5.00 ms"]
    assert "\u25c0 floor 0.2 ms" in texts


def test_a_runs_floor_bandwidth_is_measured_once_and_shared(tmp_path, monkeypatch):
    """Every notebook of one run divides by the same copy bandwidth (each measured its own
    before, and the floors moved by a few percent between lessons)."""
    from helpers.course import floor

    calls = []
    measure = lambda: calls.append(1) or 3.0e12 + len(calls)  # noqa: E731
    monkeypatch.delenv("COURSE_RUN_ID", raising=False)
    assert floor.run_shared("bw", "H100", measure) == 3.0e12 + 1  # outside a run: every time
    monkeypatch.setenv("COURSE_RUN_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_RUN_ID", "run-a")
    first = floor.run_shared("bw", "H100", measure)
    assert floor.run_shared("bw", "H100", measure) == first and len(calls) == 2
    assert floor.run_shared("bw", "H200", measure) != first  # another GPU: measured again
    monkeypatch.setenv("COURSE_RUN_ID", "run-b")
    assert floor.run_shared("bw", "H200", measure) == 3.0e12 + 4 and len(calls) == 4  # another run
    (tmp_path / "bw.json").write_text("not json")
    assert floor.run_shared("bw", "H200", measure) == 3.0e12 + 5  # broken file: measured again


def test_pace_reads_the_share_as_printed():
    """A share of 20.3% printed as "20%" read "host and GPU share the pace" (the fifteenth review)."""
    assert budget.pace(20.3) == "the GPU sets the pace"
    assert budget.pace(49.6) == "the host sets the pace"
    assert "share the pace" in budget.pace(20.6)
    assert budget.pace(float("nan")).startswith("host and GPU")
