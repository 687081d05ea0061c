"""The interval and the verdict on synthetic trials, and the harness's interleaved trials."""
import math

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.course import harness, stats


def trials(center, spread, n, seed):
    return list(center * (1 + spread * np.random.default_rng(seed).standard_normal(n)))


def test_clear_win_is_faster():
    fast, slow = trials(1.0, 0.02, 12, 1), trials(1.5, 0.02, 12, 2)
    ratio = stats.speedup(fast, slow)
    assert 1.4 < ratio.low <= ratio.estimate <= ratio.high < 1.6
    assert stats.verdict(ratio) == stats.FASTER


def test_clear_loss_is_slower():
    ratio = stats.speedup(trials(2.0, 0.03, 10, 3), trials(1.0, 0.03, 10, 4))
    assert ratio.high < 1 and stats.verdict(ratio) == stats.SLOWER


def test_overlap_is_within_noise():
    ratio = stats.speedup(trials(1.0, 0.2, 10, 5), trials(1.03, 0.2, 10, 6))
    assert ratio.low < 1 < ratio.high and stats.verdict(ratio) == stats.NOISE


def test_pairing_removes_shared_drift():
    # Both methods drift together round by round (the host slowing down): paired, a steady 5%
    # gain is clear; unpaired, the drift swamps it.
    drift = np.linspace(1.0, 2.0, 12)
    fast, slow = list(drift * 1.00), list(drift * 1.05)
    assert stats.verdict(stats.speedup(fast, slow, paired=True)) == stats.FASTER
    assert stats.verdict(stats.speedup(fast, slow, paired=False)) == stats.NOISE


def test_paired_ratio_survives_a_host_that_switches_speed():
    # The host runs fast or twice as slow, stretch by stretch, and both trials of a round share
    # the stretch (as on a lent H100 host). The per-round ratio keeps a steady 8% gain clear;
    # the ratio of the two medians lands wherever the medians' stretches fall.
    rng = np.random.default_rng(21)
    mode = np.where(rng.random(16) < 0.5, 1.0, 2.0)
    fast = mode * (1 + 0.01 * rng.standard_normal(16))
    slow = 1.08 * mode * (1 + 0.01 * rng.standard_normal(16))
    ratio = stats.speedup(list(fast), list(slow))
    assert ratio.estimate == pytest.approx(1.08, abs=0.01)
    assert 1.0 < ratio.low < 1.08 < ratio.high < 1.16 and ratio.verdict() == stats.FASTER


def test_paired_estimate_is_the_geometric_mean_of_round_ratios():
    ratio = stats.speedup([1.0, 2.0, 4.0], [2.0, 2.0, 4.0 * 4])
    assert ratio.estimate == pytest.approx((2.0 * 1.0 * 4.0) ** (1 / 3))
    unpaired = stats.speedup([1.0, 2.0, 4.0], [2.0, 2.0, 16.0], paired=False)
    assert unpaired.estimate == pytest.approx(2.0 / 2.0)  # ratio of medians


def test_family_level_widens_each_interval():
    assert stats.family_level(1) == pytest.approx(0.95)
    assert stats.family_level(4) == pytest.approx(0.9875)
    with pytest.raises(ValueError, match="count"):
        stats.family_level(0)
    fast, slow = trials(1.0, 0.1, 10, 31), trials(1.1, 0.1, 10, 32)
    single = stats.speedup(fast, slow)
    family = stats.speedup(fast, slow, level=stats.family_level(4))
    assert family.low <= single.low and single.high <= family.high
    assert "98.75% CI" in str(family) and "95% CI" in str(single)


def test_too_few_trials_give_no_verdict():
    ratio = stats.speedup([1.0, 1.0], [3.0, 3.0])
    assert ratio.estimate == pytest.approx(3.0) and math.isinf(ratio.low)
    assert stats.verdict(ratio) == stats.NOISE
    assert "too few trials" in str(ratio)
    assert math.isnan(stats.speedup([], [1.0]).estimate)


def test_paired_needs_equal_counts():
    with pytest.raises(ValueError, match="equal counts"):
        stats.speedup([1.0] * 4, [1.0] * 5, paired=True)


def test_speedup_growth():
    short = (trials(1.0, 0.02, 10, 7), trials(1.4, 0.02, 10, 8))   # 1.4x
    long = (trials(1.0, 0.02, 10, 9), trials(2.8, 0.02, 10, 10))    # 2.8x
    grows = stats.speedup_growth(short, long)
    assert 1.8 < grows.low and grows.high < 2.2 and grows.verdict() == stats.FASTER
    flat = stats.speedup_growth(short, (trials(1.0, 0.2, 10, 11), trials(1.4, 0.2, 10, 12)))
    assert flat.verdict() == stats.NOISE


def test_row_speedup_reads_stored_trials():
    def row(method, values):
        return {"method": method, "seq_len": 100, "status": "ok",
                "trials_wall_ms": " ".join(f"{v * 1e3:.4f}" for v in values)}
    table = pd.DataFrame([row("naive", trials(1.5, 0.01, 8, 13)), row("kv", trials(1.0, 0.01, 8, 14))])
    ratio = stats.row_speedup(table, "kv", "naive", seq_len=100)
    assert ratio.n == 8 and ratio.verdict() == stats.FASTER
    assert stats.row_speedup(table, "kv", "missing", seq_len=100).n == 0


def test_sentence_without_judgement_has_no_verdict_words():
    ratio = stats.speedup(trials(1.0, 0.02, 10, 1), trials(2.0, 0.02, 10, 2))
    text = stats.sentence(ratio, "kv", "naive", judge=False)
    assert "faster" not in text and "slower" not in text and "not judged" in text
    assert stats.sentence(ratio, "kv", "naive").endswith("faster.")


def test_compare_interleaves_rotated_rounds_and_keeps_trials():
    calls = []
    methods = {name: (lambda n=name: calls.append(n) or n) for name in "ABC"}
    rows, outputs = harness.compare(methods, device="cpu", repeats=3, warmup=1, seq_len=7)
    assert calls == list("ABC") + list("ABC") + list("BCA") + list("CAB")
    assert outputs == {"A": "A", "B": "B", "C": "C"}
    for row in rows:
        assert row["status"] == "ok" and row["repeats"] == 3 and row["seq_len"] == 7
        assert len(harness.trials(row)) == 3 and len(harness.trials(row, "cpu")) == 3
        assert math.isnan(row["gpu_median_s"]) and row["bound"] == ""


needs_affinity = pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity"),
                                    reason="thread affinity is Linux-only")


@needs_affinity
def test_compare_pins_its_timed_rounds_to_one_allowed_core_and_restores():
    import os
    before = os.sched_getaffinity(0)
    seen = []
    methods = {"a": lambda: seen.append(os.sched_getaffinity(0)), "b": lambda: None}
    rows, _ = harness.compare(methods, device="cpu", repeats=2, warmup=1, pin_cpu=True)
    assert os.sched_getaffinity(0) == before
    assert seen[0] == before  # the warm-up round runs unpinned
    cpu = rows[0]["pinned_cpu"]
    if len(before) > 1:
        assert cpu in before and all(s == {cpu} for s in seen[1:])
    else:
        assert cpu == -1
    unpinned, _ = harness.compare(methods, device="cpu", repeats=1, warmup=0)  # off by default
    assert unpinned[0]["pinned_cpu"] == -1 and seen[-1] == before


@needs_affinity
def test_pinned_restores_the_cpus_after_an_error():
    import os
    before = os.sched_getaffinity(0)
    with pytest.raises(RuntimeError):
        with harness.pinned(min(before)):
            assert os.sched_getaffinity(0) == {min(before)}
            raise RuntimeError("boom")
    assert os.sched_getaffinity(0) == before
    with harness.pinned(None):
        assert os.sched_getaffinity(0) == before


def test_compare_budget_adds_rounds_up_to_the_cap():
    rows, _ = harness.compare({"a": lambda: None}, device="cpu", repeats=2, budget_s=60,
                              max_repeats=6, warmup=0)
    assert rows[0]["repeats"] == 6


def test_compare_oom_method_leaves_and_others_go_on():
    import torch

    def oom():
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")
    rows, _ = harness.compare({"ok": lambda: 1, "big": oom}, device="cpu", repeats=3, warmup=0)
    by = {r["method"]: r for r in rows}
    assert by["ok"]["repeats"] == 3 and by["big"]["status"] == "oom"
    assert "out of memory" in by["big"]["error"] and math.isnan(by["big"]["median_s"])


def test_compare_other_errors_propagate():
    with pytest.raises(ZeroDivisionError):
        harness.compare({"bad": lambda: 1 / 0}, device="cpu", repeats=1)


def test_bound_from_busy_share():
    assert harness.bound(0.9, 1.0) == "GPU-bound"
    assert harness.bound(0.3, 1.0) == "CPU-bound"
    assert harness.bound(0.5, 1.0) == "CPU-bound"  # idle 50%: the host sets the pace
    assert harness.bound(0.63, 1.0) == "shared"  # 01's 200 tokens in run cabd252: 37% idle
    assert harness.bound(0.8, 1.0) == "GPU-bound"
    assert harness.bound(0.796, 1.0) == "GPU-bound"  # idle 20.4% prints as 20%: the GPU's pace


def test_bound_labels_agree_with_the_lessons_pace_words():
    """The table's label and budget.pace's words come from one rule, at every idle share."""
    from helpers.course import budget
    words = {"CPU-bound": "the host sets the pace", "GPU-bound": "the GPU sets the pace",
             "shared": "host and GPU share the pace"}
    for idle in [x / 10 for x in range(0, 1000, 7)]:
        label = harness.bound(1 - idle / 100, 1.0)
        assert budget.pace(idle, why=False) == words[label], idle
    assert harness.bound(float("nan"), 1.0) == ""


def test_device_busy_time_keeps_gpu_work_only_and_counts_overlap_once():
    """GPU kernels and copies count; CPU-side events (the launch calls) and ranges drawn on the
    GPU's timeline do not; kernels that overlap (two streams, or PDL's early start) count once,
    so the GPU's work can never exceed the wall clock (11's PDL rungs showed 0.91 ms of "work"
    in a 0.53 ms step while it was a sum)."""
    class Event:
        def __init__(self, start, ns, device, annotation=False):
            self.start, self.ns, self.device, self.annotation = start, ns, device, annotation

        def start_ns(self):
            return self.start

        def end_ns(self):
            return self.start + self.ns

        def duration_ns(self):
            return self.ns

        def device_type(self):
            return self.device

        def is_user_annotation(self):
            return self.annotation

    cuda, cpu = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU
    events = [Event(0, 1000, cuda), Event(2000, 250, cuda), Event(0, 5000, cpu),
              Event(0, 9000, cuda, annotation=True), Event(0, 7, cpu, annotation=True)]
    assert harness.device_event_ns(events) == 1250
    assert harness.device_event_ns([]) == 0
    overlapping = [Event(0, 1000, cuda), Event(600, 1000, cuda), Event(700, 100, cuda),
                   Event(3000, 10, cuda)]
    assert harness.device_event_ns(overlapping) == 1610  # 0-1600 once, then 10
    assert harness.busy_ns([(5, 5), (10, 20), (15, 18), (20, 30)]) == 20
    assert math.isnan(harness.gpu_busy_s(lambda: None, "cpu"))
    # The raw results that gpu_busy_s reads exist in this torch; a CPU-only run has no GPU work.
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.ones(8, 8) @ torch.ones(8, 8)
    raw = prof.profiler.kineto_results.events()
    assert len(raw) > 0 and harness.device_event_ns(raw) == 0


def test_linear_quadratic_fit_recovers_known_terms():
    from helpers.course import analysis

    n = np.array([100, 200, 400])
    a, b = analysis.linear_quadratic_fit(n, 0.005 * n + 2e-5 * n**2)
    assert a == pytest.approx(0.005) and b == pytest.approx(2e-5)
    assert analysis.quadratic_share(a, b, 100) == pytest.approx(0.2 / 0.7)
    assert analysis.quadratic_share(a, b, 400) > 0.5
    # A negative term is dropped, not reported.
    a, b = analysis.linear_quadratic_fit(n, 0.01 * n - 1e-6 * n**2)
    assert b == 0.0 and a > 0
    with pytest.raises(ValueError, match="two distinct lengths"):
        analysis.linear_quadratic_fit([100, 100], [1.0, 1.1])


def _share_trials(a, b, lengths, spread, seed):
    return [trials(a * n + b * n**2, spread, 8, seed + i) for i, n in enumerate(lengths)]


def test_quadratic_share_interval_and_dominant_term():
    lengths = [100, 200, 400]
    # time = 5 ms*N + 20 µs*N²: the N² share is 29% at 100, 44% at 200, 62% at 400.
    tight = _share_trials(0.005, 2e-5, lengths, 0.005, 10)
    low, mid, high = (stats.quadratic_share(lengths, tight, n) for n in lengths)
    assert low.estimate == pytest.approx(0.2 / 0.7, abs=0.02)
    assert low.low <= low.estimate <= low.high and low.n == 8
    assert stats.dominant_term(low).startswith("the linear term")
    assert stats.dominant_term(high).startswith("the N² term")
    # Noisy trials: the interval around a share near one half contains it.
    noisy = _share_trials(0.005, 2.5e-5, lengths, 0.2, 20)
    near = stats.quadratic_share(lengths, noisy, 200)
    assert near.low < 0.5 < near.high
    assert stats.dominant_term(near).startswith("neither term clearly dominates")
    assert mid.low < mid.estimate < mid.high


def test_quadratic_share_without_enough_trials():
    few = stats.quadratic_share([100, 200], [[1.0, 1.1], [3.0, 3.2]], 100)
    assert math.isinf(few.low) and "too few trials" in stats.dominant_term(few)
    assert math.isnan(stats.quadratic_share([100, 200], [[], [1.0]], 100).estimate)
    with pytest.raises(ValueError, match="one list of trials per length"):
        stats.quadratic_share([100, 200], [[1.0, 1.0, 1.0]], 100)


def test_paired_quadratic_share_keeps_rounds_whole():
    # time = a*N + b*N**2 at three lengths; in a slow round the host's per-step cost (a) doubles
    # and the GPU's N² work (b) does not: the share then depends on the host's speed.
    rng = np.random.default_rng(3)
    lengths, a, b = [100, 200, 400], 5e-3, 2e-5
    slow = rng.random(12) < 0.25
    per_step = np.where(slow, 2 * a, a)
    rounds = np.array([[per_step[r] * n + b * n * n for n in lengths] for r in range(12)])
    rounds *= 1 + 0.01 * rng.standard_normal(rounds.shape)
    fast_truth = b * 100 / (a + b * 100)
    slow_truth = b * 100 / (2 * a + b * 100)
    paired = stats.quadratic_share(lengths, list(rounds.T), 100, paired=True)
    assert paired.n == 12 and paired.low <= paired.estimate <= paired.high
    assert paired.estimate == pytest.approx(fast_truth, abs=0.03)  # most rounds were fast
    assert paired.low > slow_truth - 0.02  # a slow round's share is not the typical one
    # Scaling every time alike (a slower clock) leaves the share and its interval unchanged.
    scaled = stats.quadratic_share(lengths, list(3 * rounds.T), 100, paired=True)
    assert (scaled.estimate, scaled.low, scaled.high) == pytest.approx(
        (paired.estimate, paired.low, paired.high))
    with pytest.raises(ValueError, match="same count"):
        stats.quadratic_share(lengths, [[1.0] * 4, [2.0] * 4, [3.0] * 5], 400, paired=True)


def test_row_growth_pairs_trials_by_length_and_needs_both_methods():
    import pandas as pd

    def row(method, n, trials):
        return {"method": method, "seq_len": n, "status": "ok",
                "trials_wall_ms": " ".join(f"{t:.4f}" for t in trials)}

    base = [10.0, 10.2, 9.8, 10.1, 9.9, 10.0]
    table = pd.DataFrame([row("naive", 100, base), row("kv", 100, [t / 1.2 for t in base]),
                          row("naive", 400, base), row("kv", 400, [t / 2.4 for t in base])])
    growth = stats.row_growth(table, "kv", "naive", 100, 400)
    assert growth.estimate == pytest.approx(2.0) and stats.verdict(growth) == stats.FASTER
    assert stats.row_growth(table, "kv", "missing", 100, 400).n == 0


def _table(**methods):
    """A results table of paired trials (seconds) by method, at one length."""
    return pd.DataFrame([{"method": m, "seq_len": 100, "status": "ok",
                          "trials_wall_ms": " ".join(f"{v * 1e3:.4f}" for v in values)}
                         for m, values in methods.items()])


def test_say_names_the_medians_ratio_where_it_differs_from_the_estimate():
    # The host switches between a fast and a slow stretch; both trials of a round share it.
    # Per round the new loop is 3x to 6x faster, but the medians fall in different stretches.
    old = [3.0, 3.0, 6.0, 6.0, 6.0, 6.0, 3.0]
    new = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 1.0]
    table = _table(new=new, old=old)
    estimate = stats.speedup(new, old).estimate
    assert stats.medians_ratio(new, old) == pytest.approx(6.0 / 1.0) and estimate < 6 / 1.03
    text = stats.say(table, "new", "old")
    assert text.startswith(f"{estimate:.2f}x faster (") and text.endswith("; the table's medians: 6.00x)")
    slower = stats.say(table, "old", "new")  # inverted as the estimate is
    assert slower.startswith(f"{estimate:.2f}x slower (") and slower.endswith("; the table's medians: 6.00x)")
    # the medians agree with the estimate (within 3%, inside the interval): nothing added
    steady = _table(new=trials(1.0, 0.01, 8, 40), old=trials(1.5, 0.01, 8, 41))
    assert "medians" not in stats.say(steady, "new", "old")
    # can't tell apart: no direction printed, so the medians' ratio says its own in words
    # (round 9: "(0.73–1.11; the table's medians: 0.81x)" read as a speedup)
    noise = stats.speedup(trials(1.0, 0.2, 10, 5), trials(1.03, 0.2, 10, 6))
    assert stats.plain(noise, medians=0.9).endswith(f"{noise.high:.2f}; the table's medians: 0.90x, i.e. 1.11x slower)")
    assert stats.plain(noise, medians=1.2).endswith(f"{noise.high:.2f}; the table's medians: 1.20x faster)")
    assert "medians" not in stats.plain(noise, medians=noise.estimate)
    # just over 3% apart is named, just under is not (when inside the interval)
    wide = stats.Ratio(2.0, 1.5, 2.5, 10)
    assert "the table's medians: 2.07x" in stats.plain(wide, medians=2.07)
    assert "medians" not in stats.plain(wide, medians=2.05)
    # every=True (lesson 07's answer, which replaced late_check._named_medians): a clear verdict
    # names the medians wherever they print otherwise, however close; never "can't tell apart"
    assert stats.plain(wide, medians=2.05, every=True) == "2.00x faster (1.50–2.50; the table's medians: 2.05x)"
    assert "medians" not in stats.plain(wide, medians=2.004, every=True)
    assert stats.plain(stats.Ratio(0.5, 0.4, 0.6, 10), medians=1 / 2.1, every=True).endswith(
        "; the table's medians: 2.10x)")  # "2.00x slower", the medians inverted as it is
    assert "medians" not in stats.plain(noise, medians=noise.estimate * 1.01, every=True)
    # no note on a smoke run; with too few runs to judge, only where the medians are apart
    assert "medians" not in stats.plain(wide, judge=False, medians=4.0)
    few = stats.Ratio(2.0, -math.inf, math.inf, 3)
    assert stats.plain(few, medians=4.0) == "2.00x (only 3 runs: too few to judge; the table's medians: 4.00x faster)"
    assert "medians" not in stats.plain(few, medians=2.02)


def test_a_bound_that_rounds_to_one_gets_three_decimals():
    assert stats.plain(stats.Ratio(1.034, 1.003, 1.068, 10)) == "1.034x faster (1.003\u20131.068)"
    assert stats.plain(stats.Ratio(1.34, 1.10, 1.68, 10)) == "1.34x faster (1.10\u20131.68)"
    # slower: the inverted bound 1/0.998 = 1.002
    assert stats.plain(stats.Ratio(1 / 1.007, 1 / 1.012, 0.998, 10)) == \
        "1.007x slower (1.002\u20131.012)"
    # four decimals where three still print 1.000
    assert stats.plain(stats.Ratio(1.002, 1.0004, 1.004, 10)).startswith("1.0020x faster (1.0004")
    # can't tell apart: two decimals, three where the interval is narrower than 0.02 (so it
    # never prints as "1.00-1.00" or "0.99-1.00")
    assert stats.plain(stats.Ratio(1.0, 0.998, 1.003, 10)) == \
        "can't tell apart on this machine (0.998\u20131.003)"
    assert stats.plain(stats.Ratio(1.0, 0.95, 1.04, 10)) == \
        "can't tell apart on this machine (0.95\u20131.04)"


def test_medians_pointing_the_other_way_name_their_direction():
    # clearly 1.007x slower per round, while the medians are 1.327 against 1.328 ms
    text = stats.plain(stats.Ratio(1 / 1.007, 1 / 1.012, 1 / 1.002, 10), medians=1.328 / 1.327)
    assert text == "1.007x slower (1.002\u20131.012; the table's medians: 1.001x faster)"
    text = stats.plain(stats.Ratio(1.02, 1.01, 1.03, 10), medians=0.99)
    assert text == "1.02x faster (1.01\u20131.03; the table's medians: 1.01x slower)"


def test_short_names_the_verdict_with_its_estimate_only():
    """A summary's few words: the estimate in the verdict's direction, three decimals where two
    would print 1.00, and no range."""
    assert stats.short(stats.Ratio(1.42, 1.34, 1.65, 8)) == "1.42x faster"
    assert stats.short(stats.Ratio(1 / 1.2, 1 / 1.31, 1 / 1.1, 8)) == "1.20x slower"
    assert stats.short(stats.Ratio(1.004, 1.001, 1.008, 8)) == "1.004x faster"
    assert stats.short(stats.Ratio(1.02, 0.96, 1.10, 8)) == "can't tell apart"


def test_an_interval_never_prints_both_ends_as_one_number():
    """10 printed "1.01x slower (1.01–1.01)" for an interval of 1.006–1.014: the bounds take a
    third decimal where two would print them the same."""
    ratio = stats.Ratio(1 / 1.0101, 1 / 1.014, 1 / 1.006, 8)
    assert stats.plain(ratio) == "1.010x slower (1.006–1.014)"
    assert stats.plain(stats.Ratio(1.30, 1.25, 1.36, 8)) == "1.30x faster (1.25–1.36)"


def test_listed_joins_items_as_prose():
    assert stats.listed([100]) == "100"
    assert stats.listed([100, 200], " tokens") == "100 and 200 tokens"
    assert stats.listed(["1.18x", "1.14x", "0.99x"]) == "1.18x, 1.14x and 0.99x"
