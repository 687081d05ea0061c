"""The analysis behind notebooks 00-02 (helpers/course/growth.py and intro.py), on the CPU."""
import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from helpers.course import growth, intro, plotting  # noqa: E402
from helpers.generation import generate_kv_cache  # noqa: E402


def rows(method, times_by_n, rounds=6, spread=0.03, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for n, base in times_by_n.items():
        trials = base * (1 + spread * rng.standard_normal(rounds))
        out.append(dict(method=method, batch_size=32, seq_len=n, status="ok",
                        median_s=float(np.median(trials)), min_s=trials.min(), max_s=trials.max(),
                        trials_wall_ms=" ".join(f"{t * 1e3:.4f}" for t in trials),
                        peak_allocated_bytes=1e9))
    return out


def test_fit_recovers_the_linear_and_quadratic_parts():
    a, b = 6e-3, 40e-6
    table = pd.DataFrame(rows("naive", {n: a * n + b * n * n for n in (100, 200, 300)}, spread=0))
    fit = growth.fit(table)
    assert fit["a_ms"] == pytest.approx(6.0, rel=1e-3) and fit["b_us"] == pytest.approx(40.0, rel=1e-3)
    assert 1 < fit["exponent"] < 2


def test_quadratic_shares_judged_only_with_enough_rounds():
    times = {n: 6e-3 * n + 40e-6 * n * n for n in (100, 200, 300)}
    shares = growth.quadratic_shares(pd.DataFrame(rows("naive", times)), judge=True)
    assert list(shares["new tokens"]) == [100, 200, 300]
    assert shares["N² share %"].is_monotonic_increasing
    assert all("\u2013" in s for s in shares["interval %"])
    assert set(growth.quadratic_shares(pd.DataFrame(rows("naive", times)), False)["interval %"]) == {"not judged"}
    few = growth.quadratic_shares(pd.DataFrame(rows("naive", times, rounds=3)), True)
    assert all("too few to judge" in s for s in few["interval %"])


def test_gain_growth_in_the_course_words():
    table = pd.DataFrame(rows("naive", {50: 0.40, 200: 2.6}) + rows("kv_cache", {50: 0.30, 200: 1.5}, seed=1))
    assert growth.gain_growth(table, "kv_cache", "naive", True).startswith("the gain grows")
    assert "smoke run" in growth.gain_growth(table, "kv_cache", "naive", False)
    few = pd.DataFrame(rows("naive", {50: 0.4, 200: 2.6}, rounds=3) + rows("kv_cache", {50: 0.3, 200: 1.5}, rounds=3))
    assert "too few to judge" in growth.gain_growth(few, "kv_cache", "naive", True)


def test_time_and_compare_at_lengths_on_the_cpu(tiny):
    model, prompt, eos = tiny
    loop = lambda n: generate_kv_cache(model, prompt, n, eos)  # noqa: E731
    timed = growth.time_lengths(loop, [2, 4], device="cpu", batch_size=3, repeats=2, warmup=0)
    assert [r["seq_len"] for r in timed] == [2, 4] and {r["method"] for r in timed} == {"naive"}
    compared = growth.compare_at_lengths({"a": loop, "b": loop}, [2, 3], device="cpu",
                                         batch_size=3, repeats=2, warmup=0)
    assert [(r["method"], r["seq_len"]) for r in compared] == [("a", 2), ("b", 2), ("a", 3), ("b", 3)]


def test_rounds_alternate_the_order_and_give_the_ratio():
    table = pd.DataFrame(rows("loop A", {8: 0.1}) + rows("loop B", {8: 0.1}, seed=3))
    by_round = intro.rounds(table, "loop A", "loop B")
    assert list(by_round["order"][:3]) == ["A B", "B A", "A B"]
    assert by_round["A / B"].iloc[0] == pytest.approx(by_round["A ms"].iloc[0] / by_round["B ms"].iloc[0], rel=1e-2)


def test_memory_panel_says_so_on_a_cpu_run():
    fig, ax = plotting.subplots()
    growth.plot_memory(ax, pd.DataFrame(rows("naive", {8: 0.1})), "cpu", {"naive": "naive"})
    assert "no GPU memory on a CPU run" in [t.get_text() for t in ax.texts] and not ax.axison


def test_floor_reading_says_the_keys_and_values_are_an_average(monkeypatch):
    """00's published floor split 84 MB of keys and values without saying it was the run's
    average (the last step reads 130 MB): the reading says both."""
    from helpers.course import budget
    from helpers.model import build_model
    monkeypatch.setattr(budget, "bandwidth", lambda device: 2.97e12)
    model = build_model("gpt2", "cpu", seed=0)
    text = intro.floor_reading(model, "cuda", 32, 16, 40, 0.196)
    assert text.startswith("0.196 ms on average over the run's 40 steps = 582 MB / 2.97 TB/s")
    assert "498 MB of weights and 84 MB of keys and values" in text
    assert "(35.5 positions on average; 55 at the last step, 130 MB)" in text
    assert intro.floor_reading(model, "cpu", 32, 16, 40, float("nan")) == "no floor on a CPU run"


def test_resolution_gives_the_intervals_bounds_of_this_run():
    """00's run printed "about ±20%" for the interval 0.93-1.34: the bounds are not symmetric."""
    from helpers.course import stats
    text = intro.resolution(stats.Ratio(1.03, 0.93, 1.34, 8), True)
    assert "in this run, at 8 rounds, a difference between -7% and +34% would not show" in text
    assert intro.resolution(stats.Ratio(1.03, 0.89, 1.19, 8), False) == ""
    assert intro.resolution(stats.Ratio(1.03, float("-inf"), float("inf"), 3), True) == ""
    # the 12:48 run of 2026-11-26 told its identical loops apart (1.18x slower, 1.06-1.32) and
    # printed "a difference between -24% and -6% would not show": a clear verdict gets no bounds
    text = intro.resolution(stats.Ratio(1 / 1.18, 1 / 1.32, 1 / 1.06, 8), True)
    assert text.startswith("identical loops told apart: a false alarm") and "would not show" not in text


def test_swing_gives_the_range_of_the_round_ratios():
    """00 said a round's ratio swings "by several percent" in a run where it swung -16%..+88%."""
    by_round = pd.DataFrame({"A / B": [1.884, 0.974, 0.842, 1.466]})
    assert intro.swing(by_round) == "one round's A / B ran from 0.84 to 1.88 (-16% to +88%) over 4 rounds"


def test_notebook_00_states_the_pace_thresholds_budget_uses():
    import json
    from helpers.course import budget
    nb = json.load(open("notebooks/00_setup.ipynb"))
    text = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert f"at least {budget.HOST_PACE_PCT}% of the step" in text
    assert f"at most {budget.GPU_PACE_PCT}%" in text


def test_fit_lines_say_where_a_over_b_lies_against_the_lengths():
    """01 said short lengths grow almost linearly while a/b (84) was below every length."""
    def line(a, b):
        table = pd.DataFrame(rows("naive", {n: a * n + b * n * n for n in (100, 200, 300)}, spread=0))
        return growth.fit_lines(table)[1]
    low = line(3.69e-3, 44e-6)
    assert "N = a/b ≈ 84 tokens, below every length measured here" in low
    assert "adds 2b = 88.0 µs to every later step" in low and "per token of length" not in low
    assert "above every length measured here" in line(40e-3, 44e-6)
    assert "below it the part that does not grow" in line(8.8e-3, 44e-6)


def test_fit_lines_state_the_measured_doubling_not_the_fitted_one():
    """01's published run printed 2^exponent (2.46x) as if measured; the table's 100 -> 200
    medians gave 2.26x."""
    table = pd.DataFrame(rows("naive", {100: 1.3832, 200: 3.1212, 300: 5.8516}))
    table["median_s"] = [1.3832, 3.1212, 5.8516]
    lines = growth.fit_lines(table)
    assert "(100 -> 200 tokens) multiplied the runtime by 2.26x" in lines[0]
    assert "a + b·N" in lines[1] and "a/b" in lines[1] and len(lines) == 2
    odd = pd.DataFrame(rows("naive", {100: 1.0, 300: 4.0})).assign(median_s=[1.0, 4.0])
    odd = growth.measured_growth(odd)
    assert (odd["short"], odd["long"], odd["factor"], odd["ratio"]) == (100, 300, 3.0, 4.0)


def test_quadruples_says_from_which_length_a_doubling_reaches_the_claim():
    a, b = 4e-3, 40e-6  # a/b = 100 tokens: a doubling reaches 3.5x from N = 3a/b = 300
    table = pd.DataFrame(rows("naive", {n: a * n + b * n * n for n in (100, 200, 300)}, spread=0))
    text = growth.quadruples(table)
    assert "does not hold" in text and "(100 -> 200 tokens: 3.00x)" in text
    assert "reaches 3.5x from N ≈ 300 tokens" in text
    big = pd.DataFrame(rows("naive", {n: 1e-4 * n + b * n * n for n in (100, 200)}, spread=0))
    assert " holds at these lengths" in growth.quadruples(big)


def test_outside_bars_names_the_lengths_the_fitted_line_misses():
    """01's text warned of a short length's bar while the line missed the 200-token one."""
    table = pd.DataFrame(rows("naive", {100: 0.870, 200: 2.281, 300: 4.689}, spread=0))
    table["min_s"], table["max_s"] = [0.774, 2.272, 4.638], [1.191, 2.316, 5.017]
    assert "outside the min–max bar at 200 tokens" in growth.outside_bars(table)
    table["min_s"], table["max_s"] = [0.5, 1.0, 4.0], [1.5, 3.0, 6.0]
    assert "within every" in growth.outside_bars(table)


def test_segment_story_finds_where_a_tensor_needs_its_own_segment():
    from helpers.course import expandable
    from helpers.model import model_config
    text = expandable.segment_story(model_config("gpt2"), 32, 16, 399)
    assert "107 positions (decode step 91)" in text and "every 21 steps" in text
    assert "beyond this run" in expandable.segment_story(model_config("gpt2"), 8, 16, 399)


def busy_rows(method, per_step, busy_per_step, device="H100"):
    """Rows whose wall clock and GPU work per token are given in ms, by length."""
    out = rows(method, {n: ms * n / 1e3 for n, ms in per_step.items()}, spread=0)
    for row in out:
        row.update(gpu_busy_s=busy_per_step[row["seq_len"]] * row["seq_len"] / 1e3,
                   device_name=device)
    return out


def test_per_step_growth_claims_the_gpu_only_where_every_length_agrees():
    """02's published run said the GPU's work accounted for the wall clock's change from 50 to
    200 tokens, while at 100 tokens the wall clock rose 0.59 ms more than the GPU's work."""
    noisy = pd.DataFrame(busy_rows("kv_cache", {50: 5.99, 100: 6.75, 200: 6.48},
                                   {50: 1.39, 100: 1.56, 200: 1.88}))
    line = growth.per_step_growth(noisy, "kv_cache", "KV cache")
    assert "GPU work 1.39 -> 1.56 -> 1.88 ms, wall clock 5.99 -> 6.75 -> 6.48 ms" in line
    assert "up to 0.59 ms apart from the GPU's work" in line and "accounts for" not in line
    waited = pd.DataFrame(busy_rows("kv_cache", {50: 5.37, 200: 7.33}, {50: 1.39, 200: 1.87}))
    assert "the other 1.48 ms is time the GPU waited" in growth.per_step_growth(waited, "kv_cache", "KV")
    gpu_only = pd.DataFrame(busy_rows("kv_cache", {50: 2.0, 100: 2.5, 200: 3.0},
                                      {50: 1.9, 100: 2.4, 200: 2.9}))
    assert "accounts for" in growth.per_step_growth(gpu_only, "kv_cache", "KV cache")
    cpu = pd.DataFrame(rows("kv_cache", {50: 0.25, 200: 1.0}, spread=0))
    assert growth.per_step_growth(cpu, "kv_cache", "KV cache").endswith("wall clock 5.00 -> 5.00 ms.")


def test_host_crossing_finds_where_the_naive_gpu_work_passes_the_host():
    table = pd.DataFrame(busy_rows("naive", {50: 7.0, 100: 8.4, 200: 12.5}, {50: 3.0, 100: 5.65, 200: 11.2})
                         + busy_rows("kv_cache", {50: 5.99, 100: 6.75, 200: 6.48}, {50: 1.39, 100: 1.56, 200: 1.88}))
    line = growth.host_crossing(table)
    assert "200 tokens 11.20 against 6.48 ms" in line and "from 200 tokens on" in line
    assert "the KV cache's step (mostly host time)" in line and "host's time" not in line
    # 02's run: the KV cache's step at 100 tokens was an outlier (12.13 ms), so the difference
    # did not grow with every length: the numbers, no crossing claimed
    odd = pd.DataFrame(busy_rows("naive", {50: 7.0, 100: 8.4, 200: 12.5}, {50: 3.57, 100: 5.66, 200: 9.69})
                       + busy_rows("kv_cache", {50: 5.76, 100: 12.13, 200: 7.06}, {50: 1.39, 100: 1.54, 200: 1.86}))
    line = growth.host_crossing(odd)
    assert "from 200 tokens on" not in line and "above it at 200 tokens, below it at 50, 100 tokens (" in line
    cpu = pd.DataFrame(rows("naive", {50: 0.3}) + rows("kv_cache", {50: 0.2}))
    assert growth.host_crossing(cpu) == ""


def test_expandable_memory_panel_draws_bars_for_every_setting():
    """03's panel joined two lengths with lines, and one setting's allocated line hid under the
    other's: bars, every one visible."""
    from helpers.course import expandable
    table = pd.DataFrame([dict(method=m, seq_len=n, status="ok", peak_reserved_bytes=r * 2**20,
                               peak_allocated_bytes=a * 2**20)
                          for m, n, r, a in (("default", 100, 1072, 883), ("default", 400, 9636, 1586),
                                             ("expandable_segments:True", 100, 944, 882),
                                             ("expandable_segments:True", 400, 1826, 1585))])
    fig, ax = plotting.subplots()
    expandable.plot_memory(ax, table, on_gpu=True)
    assert len(ax.patches) == 8 and not ax.lines
    assert sorted(round(p.get_height()) for p in ax.patches)[-1] == 9636
    assert [t.get_text() for t in ax.get_xticklabels()] == ["100 tokens", "400 tokens"]
