"""Notebooks 06 and 07 on a CPU: the stop-check loops are token-identical to notebook 02's loop,
stop on schedule, take at most one extra step, and the profiling analysis finds known gaps.
(tests/test_notebooks.py keeps the notebooks' copies of these functions identical to helpers.)"""
import json
import math

import matplotlib
import pandas as pd
import pytest
import torch

matplotlib.use("Agg")

from helpers import static, streams  # noqa: E402
from helpers.course import profiling  # noqa: E402
from helpers.generation import (assert_same_tokens, generate_kv_cache,  # noqa: E402
                                generated_lengths, uniform_stop_lengths)
from helpers.model import build_model, make_prompt  # noqa: E402
from helpers.course.presets import ParameterError, resolve_params  # noqa: E402

PROMPT_LEN = 4
LATE = [streams.generate_interleaved, streams.generate_event_check]
CHECKING = [streams.generate_sync] + LATE


@pytest.fixture(scope="module")
def tiny_batch6():
    """The tiny model with six prompts (more rows than conftest's ``tiny``, for stop schedules)."""
    model = build_model("tiny", "cpu", seed=0)
    eos = model.config.eos_token_id
    prompt = make_prompt(6, PROMPT_LEN, model.config.vocab_size, eos, seed=1)
    return model, eos, prompt


SCHEDULES = [None, [3, 7, 2, 4, 3, 3], [1] * 6, [5] * 6, [30] * 6]


def schedule(values):
    return None if values is None else torch.tensor(values)


@pytest.mark.parametrize("stops", SCHEDULES)
@pytest.mark.parametrize("max_new_tokens", [1, 2, 12])
def test_checking_loops_match_kv_cache(tiny_batch6, stops, max_new_tokens):
    model, eos, prompt = tiny_batch6
    reference = generate_kv_cache(model, prompt, max_new_tokens, eos, schedule(stops))
    for generate in CHECKING:
        assert_same_tokens(reference, generate(model, prompt, max_new_tokens, eos, schedule(stops)),
                           generate.__name__)


@pytest.mark.parametrize("stops", SCHEDULES)
def test_no_check_runs_to_the_cap_and_trims_to_the_sync_output(tiny_batch6, stops):
    model, eos, prompt = tiny_batch6
    out = streams.generate_no_check(model, prompt, 12, eos, schedule(stops))
    assert out.shape == (prompt.shape[0], PROMPT_LEN + 12)
    reference = streams.generate_sync(model, prompt, 12, eos, schedule(stops))
    assert_same_tokens(reference, streams.trim_finished(out, PROMPT_LEN, eos), "trimmed")


@pytest.mark.parametrize("generate", CHECKING, ids=lambda f: f.__name__)
def test_forced_stops_end_rows_on_schedule(tiny_batch6, generate):
    model, eos, prompt = tiny_batch6
    stops = uniform_stop_lengths(prompt.shape[0], 2, 9, seed=3)
    out = generate(model, prompt, 12, eos, stops)
    lengths = generated_lengths(out, PROMPT_LEN, eos)
    assert (lengths <= stops).all()  # a random tiny model may choose EOS earlier on its own
    assert out.shape[1] == PROMPT_LEN + int(lengths.max())
    for row, length in enumerate(lengths.tolist()):
        assert out[row, PROMPT_LEN + length - 1] == eos
        assert out[row, PROMPT_LEN + length:].eq(eos).all()


@pytest.mark.parametrize("stops,cap", [([3, 5, 2, 4, 3, 3], 12), ([12] * 6, 12), ([1] * 6, 4),
                                       (None, 7)])
def test_one_step_late_loops_take_at_most_one_extra_step(tiny_batch6, stops, cap):
    model, eos, prompt = tiny_batch6
    calls = {}
    for generate in CHECKING:
        counter = profiling.StepRanges()
        generate(model, prompt, cap, eos, schedule(stops), step=counter.wrap(streams.eager_step(model)))
        counter.close()
        calls[generate.__name__] = counter.steps
    stops_early = stops is not None and max(stops) < cap
    for generate in LATE:
        assert calls[generate.__name__] == calls["generate_sync"] + stops_early


@pytest.mark.parametrize("generate", CHECKING + [streams.generate_no_check],
                         ids=lambda f: f.__name__)
def test_loops_take_a_step_and_a_static_cache(tiny_batch6, generate):
    """The interface of the compiled regime, eagerly: a decode step callable on a StaticCache
    that is reset and reused between calls."""
    model, eos, prompt = tiny_batch6
    stops = torch.tensor([3, 5, 2, 4, 3, 3])
    cache = static.make_static_cache(model, prompt.shape[0], PROMPT_LEN + 8, "cpu")
    reference = static.generate_static_cache(model, prompt, 8, eos, stops)
    for _ in range(2):  # the second call proves the reset
        out = generate(model, prompt, 8, eos, stops, step=streams.eager_step(model), cache=cache)
        assert_same_tokens(reference, streams.trim_finished(out, PROMPT_LEN, eos), generate.__name__)


# --- the idle-gap analysis on synthetic events -------------------------------------------------

def test_gpu_idle_gaps_known_gaps():
    events = [(0, 10, 0), (12, 20, 0),   # step 0: 0-20, busy 18, idle inside 2
              (25, 30, 1), (30, 40, 1),  # step 1: gap 5, busy 15
              (40, 50, 2),               # step 2: gap 0 (back to back)
              (70, 75, 3), (72, 80, 3)]  # step 3: gap 20, overlapping events, busy 10
    gaps = profiling.gpu_idle_gaps(events).set_index("step")
    assert math.isnan(gaps.loc[0, "gap_before_us"])
    assert gaps["gap_before_us"].tolist()[1:] == [5.0, 0.0, 20.0]
    assert gaps["busy_us"].tolist() == [18.0, 15.0, 10.0, 10.0]
    assert gaps["idle_inside_us"].tolist() == [2.0, 0.0, 0.0, 0.0]
    assert gaps["events"].tolist() == [2, 2, 1, 2]


def test_gpu_idle_gaps_overlap_missing_steps_and_order():
    # step 1 starts before step 0 ends (two streams): no gap; step 3 follows a missing step 2
    events = [(50, 60, 3), (10, 25, 1), (0, 20, 0)]
    gaps = profiling.gpu_idle_gaps(events).set_index("step")
    assert gaps.loc[1, "gap_before_us"] == 0.0
    assert math.isnan(gaps.loc[3, "gap_before_us"])
    assert profiling.gpu_idle_gaps([]).empty
    with pytest.raises(ValueError):
        profiling.gpu_idle_gaps([(5, 1, 0)])


def synthetic_trace():
    """A Chrome trace as torch.profiler writes it: two step ranges, launches with correlation ids,
    a sync call, kernels on two streams, a copy, and a kernel whose launch is outside any step."""
    def x(cat, name, ts, dur, **args):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": args.pop("tid", 1),
                "args": args}
    return {"traceEvents": [
        x("user_annotation", "step 0", 100, 50),
        x("user_annotation", "step 1", 150, 60),
        x("user_annotation", "other range", 100, 200),
        x("cuda_runtime", "cudaLaunchKernel", 90, 2, correlation=1),   # before any step
        x("cuda_runtime", "cudaLaunchKernel", 105, 2, correlation=2),
        x("cuda_driver", "cuLaunchKernel", 110, 2, correlation=3),
        x("cuda_runtime", "cudaMemcpyAsync", 115, 2, correlation=4),
        x("cuda_runtime", "cudaStreamSynchronize", 120, 28),
        x("cuda_runtime", "cudaGraphLaunch", 152, 3, correlation=5),
        x("kernel", "prefill", 95, 5, correlation=1, tid=7),
        x("kernel", "a", 107, 10, correlation=2, tid=7),
        x("kernel", "b", 117, 10, correlation=3, tid=7),
        x("gpu_memcpy", "Memcpy DtoH", 127, 3, correlation=4, tid=7),
        x("kernel", "graph 1", 160, 10, correlation=5, tid=8),
        x("kernel", "graph 2", 170, 10, correlation=5, tid=8),
        {"ph": "M", "name": "process_name", "args": {"name": "x"}},
    ]}


def test_trace_events_assigns_gpu_events_to_steps():
    frame = profiling.trace_events(synthetic_trace())
    assert frame[frame["kind"] == "step"]["step"].tolist() == [0.0, 1.0]
    sync = frame[frame["kind"] == "sync"]
    assert sync["name"].tolist() == ["cudaStreamSynchronize"] and sync["step"].tolist() == [0.0]
    gpu = frame[frame["kind"] == "gpu"].set_index("name")
    assert math.isnan(gpu.loc["prefill", "step"])
    assert gpu.loc[["a", "b", "Memcpy DtoH"], "step"].tolist() == [0.0, 0.0, 0.0]
    assert gpu.loc[["graph 1", "graph 2"], "step"].tolist() == [1.0, 1.0]
    assert set(gpu["lane"]) == {"GPU stream 7", "GPU stream 8"}
    assert profiling.gpu_event_tuples(frame) == [(107.0, 117.0, 0), (117.0, 127.0, 0),
                                                 (127.0, 130.0, 0), (160.0, 170.0, 1),
                                                 (170.0, 180.0, 1)]
    gaps = profiling.step_gaps(synthetic_trace()).set_index("step")
    assert gaps.loc[1, "gap_before_us"] == 30.0  # 130 -> 160
    assert gaps.loc[0, "busy_us"] == 23.0
    assert gaps["cpu_us"].tolist() == [50.0, 60.0]  # the step ranges
    assert gaps["cpu_wait_us"].tolist() == [28.0, 0.0]  # the stream sync in step 0


def test_plot_timeline_draws_lanes():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    profiling.plot_timeline(ax, profiling.trace_events(synthetic_trace()), first_step=0, steps=2,
                            title="synthetic")
    labels = [t.get_text() for t in ax.get_yticklabels()]
    # the lanes named as the code names them: the stream of the first GPU event is the default
    # stream, the next the first side stream (generate_interleaved's streams[0])
    assert labels == ["CPU: step ranges", "CPU: waiting for the GPU", "GPU: default stream",
                      "GPU: streams[0]"]
    assert profiling.stream_names(profiling.trace_events(synthetic_trace())) == {
        "GPU stream 7": profiling.DEFAULT_STREAM, "GPU stream 8": "GPU: streams[0]"}
    # the GPU's idle gap between step 0 (ends at 130 µs) and step 1 (starts at 160) is marked
    assert "GPU idle 30 µs" in [t.get_text() for t in ax.texts]
    plt.close(fig)


def test_late_check_summary_and_its_words():
    from helpers.course import late_check

    rows = [{"regime": "compiled", "batch_size": 8, "method": m, "status": "ok", "ms_per_step": t}
            for m, t in (("sync", 2.0), ("interleaved", 1.1), ("event", 1.05), ("no_check", 1.0))]
    rows += [{"regime": "eager", "batch_size": 8, "method": m, "status": "ok", "ms_per_step": t}
             for m, t in (("sync", 8.0), ("interleaved", 8.2), ("event", 8.1), ("no_check", 8.3))]
    summary = late_check.summary(pd.DataFrame(rows)).set_index("regime")
    graph, eager = summary.loc["compiled"], summary.loc["eager"]
    assert graph["check_cost_us"] == pytest.approx(1000.0)
    assert graph["interleaved_recovered_pct"] == pytest.approx(90.0)
    assert late_check.recovered_line(graph, "event") == "recovers about 95% of the check's cost"
    assert math.isnan(eager["interleaved_recovered_pct"])
    assert late_check.recovered_line(eager, "interleaved").startswith("has nothing to win back")
    assert "not judged" in late_check.recovered_line(graph, "event", judge=False)
    # the article's "gains most at the smallest batch": the speedups, and no verdict without rounds
    more = rows + [{**r, "batch_size": 32, "ms_per_step": r["ms_per_step"] * 2} for r in rows[:4]]
    assert late_check.article_claim_line(pd.DataFrame(more), late_check.summary(pd.DataFrame(more))) == (
        "The article claims interleaving gains most at the smallest batch. Two streams' speedup "
        "over the per-step sync (CUDA graph step): 1.82x at batch 8 and 1.82x at batch 32. Batch "
        "8's speedup against batch 32's: too few rounds to judge. Whether batch 8 gains most: "
        "can't tell on this machine.")
    assert late_check.article_claim_line(pd.DataFrame(rows), summary.reset_index()) == (
        "The article claims interleaving gains most at the smallest batch: this preset times the "
        "CUDA graph step at one batch size (8), so the claim is not checked here.")
    assert late_check.article_claim_line(pd.DataFrame(more), late_check.summary(pd.DataFrame(more)),
                                         judge=False) == ""
    # the eager step timed with and without the check only: its late loops are "not timed"
    only = pd.DataFrame([r for r in rows if r["regime"] == "compiled"
                         or r["method"] in late_check.EAGER_LOOPS])
    shown = late_check.view(late_check.summary(only)).set_index("step")
    assert shown.loc["eager", "event, ms/step"] == "not timed"
    assert shown.loc["eager", "event wins back, %"] == "not timed"  # not "\u2014": never timed
    assert shown.loc["CUDA graph", "event wins back, %"] == "95"
    assert late_check.view(late_check.summary(pd.DataFrame(rows))).set_index("step").loc[
        "eager", "event wins back, %"] == "\u2014"  # timed, but no cost to share out
    gaps = pd.DataFrame({"cpu_wait_us": [500.0, 80.0, 200.0], "gap_before_us": [700.0, 6.0, 5.0],
                         "cpu_us": [2000.0, 2500.0, 1200.0]}, index=["sync", "interleaved", "event"])
    timed = pd.Series({"sync": 1650.0, "interleaved": 1290.0, "event": 1320.0})
    assert late_check.profile_line(gaps, timed) == (  # round 37: µs only, no "1% of it"
        "Profiled, the GPU's idle before a step (the median over the profiled steps): 700 µs with "
        "the per-step sync, 6 µs with two streams and 5 µs with the event loop.")
    # the published 06:54 run's profile: both late loops leave a gap, their host steps longer
    # than the GPU's work: the timeline's reason, then the timed steps
    pub = pd.DataFrame({"gap_before_us": [620.0, 463.0, 337.0], "busy_us": [1117.0, 1113.0, 1112.0],
                        "cpu_us": [2032.0, 1766.0, 1677.0], "cpu_wait_us": [669.0, 11.0, 10.0]},
                       index=["sync", "interleaved", "event"])
    timed = pd.Series({"sync": 1990.0, "interleaved": 1425.0, "event": 1411.0, "no_check": 1400.0})
    assert late_check.profile_line(pub, timed) == (
        "Profiled, the GPU's idle before a step (the median over the profiled steps): 620 µs with "
        "the per-step sync, 463 µs with two streams and 337 µs with the event loop. The timeline "
        "shows why: under the profiler the two-stream loop's host step takes 1766 µs and the event "
        "loop's 1677 µs, longer than the GPU's work per step (1113 µs), so the GPU waits for the "
        "host. Timed, without the profiler, two streams ran 1425 µs per step and the event loop "
        "1411 against no check's 1400 µs: the timed table's win-back is the measure.")
    # host within the GPU's work, or no host times: no reason given
    quick = pub.assign(cpu_us=[1200.0, 1100.0, 1100.0])
    assert "timeline shows why" not in late_check.profile_line(quick, timed)
    assert "timeline shows why" not in late_check.profile_line(pub[["gap_before_us"]])
    # this morning's run: gaps closed, the per-step sync 6% over its timed step: the short clause
    calm = pub.assign(gap_before_us=[428.0, 7.0, 6.0], cpu_us=[1730.0, 1350.0, 1340.0])
    assert late_check.profile_line(calm, pd.Series({"sync": 1629.0, "interleaved": 1301.0,
                                                    "event": 1295.0})).endswith(
        "6 µs with the event loop. Profiled steps run longer than timed ones (the profiler's own "
        "host work: the per-step sync's 1730 µs against 1629 timed), so the timed table's win-back "
        "is the measure.")


def test_late_check_answer_line():
    from helpers.course import late_check

    def rows(regime, batch, times):
        return [{"regime": regime, "batch_size": batch, "method": m, "status": "ok",
                 "ms_per_step": float(t[0]) / 100, "trials_wall_ms": " ".join(f"{v:.3f}" for v in t)}
                for m, t in times.items()]
    base = [500.0, 510.0, 490.0, 505.0, 495.0, 500.0]
    graph = pd.DataFrame(rows("compiled", 8, {
        "sync": [2 * b for b in base], "interleaved": [1.1 * b for b in base],
        "event": [1.05 * b for b in base], "no_check": base}))
    row = late_check.summary(graph).set_index("regime").loc["compiled"]
    # the event loop not told apart from the per-step sync: two streams lead, the event is "can't tell"
    noisy = graph.copy()
    noisy.loc[noisy["method"] == "event", "trials_wall_ms"] = " ".join(
        f"{2 * b * f:.3f}" for b, f in zip(base, (0.5, 1.4, 0.6, 1.3, 0.55, 1.35)))
    answer = late_check.answer_line(row, noisy)
    assert answer.index("sync: two streams, ") < answer.index("; one stream and an event, can't tell")
    assert answer.count("recovers") == 1
    # over 100%: "all of it", never a share above what the check costs
    over = row.copy()
    over["interleaved_recovered_pct"] = 101.0
    assert late_check.recovered_line(over, "interleaved", cost=True) == (
        "recovers all of the check's cost (5000 µs per step)")


def _late_table(times, busy):
    """A table of the CUDA-graph loops: ``times[batch][method]`` ms per step, ``busy[batch]`` the
    no-check loop's GPU work per step (ms), 100 tokens."""
    return pd.DataFrame([{"regime": "compiled", "batch_size": b, "method": m, "status": "ok",
                          "seq_len": 100, "ms_per_step": t, "median_s": t / 10,
                          "gpu_busy_s": busy[b] / 10 if m == "no_check" else t / 20}
                         for b, row in times.items() for m, t in row.items()])


def test_06_gap_line():
    from helpers.course import eos_sync

    gaps = pd.DataFrame({"gap_before_us": [838.4, 196.6], "cpu_us": [2179.2, 1479.8]},
                        index=[eos_sync.CHECK, eos_sync.FREE])
    assert eos_sync.gap_line(gaps) == (
        "Profiled, the GPU idles 838 µs before each step with the check, after the CPU's wait, and "
        "197 µs without it.")
    # round 37: why the gap the check adds differs from its timed cost: the host's profiled step
    budget = pd.DataFrame({"method": ["CUDA graph, check every step", "CUDA graph, no check"],
                           "wall_ms": [1.679, 1.280]})
    line = eos_sync.gap_line(gaps, budget)
    assert line.endswith(
        "The gap the check adds (642 µs) is wider than the check's timed cost (399 µs) because the "
        "host's step with the check ran longer under the profiler (2179 µs against 1679 µs timed), "
        "and after the check the GPU waits for the host.")
    # the rounds did not resolve the cost: no signed number beside the gap
    assert eos_sync.gap_line(gaps, budget, ["CUDA graph"]).endswith(
        "Timed without the profiler, the rounds can't tell the check's cost apart (above).")


def test_step_ranges_and_profile_steps_on_cpu(tiny_batch6):
    model, eos, prompt = tiny_batch6
    ranges = profiling.StepRanges()
    assert ranges.wrap(lambda a, b=1: a + b)(2, b=3) == 5 and ranges.steps == 1
    ranges.close()
    trace = profiling.profile_steps(
        lambda step: streams.generate_sync(model, prompt, 5, eos, step=step),
        streams.eager_step(model), "cpu")
    frame = profiling.trace_events(trace)
    assert frame[frame["kind"] == "step"]["name"].tolist() == [f"step {i}" for i in range(4)]
    json.dumps(trace)  # a plain, serialisable dict


def test_recovered_pct():
    assert profiling.recovered_pct(10.0, 1.0, 0.0) == 90.0
    assert profiling.recovered_pct(2.0, 2.0, 1.0) == 0.0
    assert math.isnan(profiling.recovered_pct(1.0, 1.0, 1.0))
    assert math.isnan(profiling.recovered_pct(1.0, 1.0, 1.5))


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU behaviour")
def test_find_syncs_on_cpu_is_empty():
    census = profiling.find_syncs(lambda: torch.ones(3).sum().item())
    assert census.empty
    assert list(census.columns) == ["file", "line", "function", "code", "count", "via"]


def test_find_syncs_counts_each_sync_by_the_line_that_made_it(monkeypatch):
    """The census's bookkeeping, with torch's sync warnings simulated (tests/test_gpu.py has the
    real ones): two lines, one syncing three times, are counted apart, busiest first."""
    import warnings

    mode = {"now": 0}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: mode["now"])
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", lambda m: mode.update(now=m))

    def loop():
        for _ in range(3):
            warnings.warn("called a synchronizing CUDA operation")  # the busy line
        warnings.warn("called a synchronizing CUDA operation")  # the quiet line
        warnings.warn("an unrelated warning")  # not a sync: not counted

    census = profiling.find_syncs(loop)
    assert census["count"].tolist() == [3, 1]
    assert census["function"].tolist() == ["loop", "loop"]
    assert [c.split("#")[1].strip() for c in census["code"]] == ["the busy line", "the quiet line"]
    assert mode["now"] == 0, "the debug mode is restored"


def test_blame_picks_the_innermost_frame_outside_torch():
    import traceback
    import warnings

    frame = traceback.FrameSummary
    stack = [frame("/nb/cell.py", 3, "<module>"), frame(profiling.__file__, 10, "find_syncs"),
             frame("/t/torch/utils/_contextlib.py", 5, "decorate_context"),
             frame("/nb/loop.py", 22, "generate_sync"), frame("/t/torch/_tensor.py", 9, "__bool__"),
             frame(warnings.__file__, 1, "_showwarnmsg")]
    culprit, innermost = profiling.blame(stack, torch_dir="/t/torch")
    assert (culprit.filename, culprit.lineno, culprit.name) == ("/nb/loop.py", 22, "generate_sync")
    assert innermost.name == "__bool__"
    culprit, innermost = profiling.blame(stack[:3], torch_dir="/t/torch")
    assert culprit.name == "<module>" and innermost.name == "decorate_context"
    assert profiling.blame([], torch_dir="/t/torch") == (None, None)


# --- presets -------------------------------------------------------------------------------------

def test_presets_06_07_resolve_and_validate():
    for notebook in ("06", "07"):
        params = resolve_params(notebook, "smoke")
        assert params.stop_low <= params.stop_high and params.profile_steps >= 2
    assert resolve_params("07", "smoke", regimes=["compiled"]).regimes == ["compiled"]
    for bad in (["jit"], [], ["eager", "eager"]):
        with pytest.raises(ParameterError):
            resolve_params("07", "smoke", regimes=bad)
    with pytest.raises(ParameterError):
        resolve_params("06", "smoke", profile_steps=1)


def test_check_cost_reads_the_budget_per_regime():
    import pandas as pd

    from helpers.course import profiling

    steps = pd.DataFrame({"method": ["eager, check every step", "eager, no check",
                                     "CUDA graph, check every step", "CUDA graph, no check"],
                          "wall_ms": [7.0, 6.9, 2.5, 2.0], "gpu_ms": [1.0, 1.0, 1.9, 1.9],
                          "idle_ms": [6.0, 5.9, 0.6, 0.1], "floor_ms": [0.5] * 4})
    view = profiling.check_cost(steps)
    assert list(view.columns) == ["wall ms", "GPU busy ms", "GPU idle ms", "the check adds ms"]
    assert view.loc["CUDA graph, check every step", "the check adds ms"] == 0.5
    assert view.loc["eager, no check", "the check adds ms"] == "\u2014"
