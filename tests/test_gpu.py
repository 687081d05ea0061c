"""The CUDA paths, on a CUDA GPU: ``pytest -m gpu`` (about a minute on an H100; small sizes).

On a CPU the tests elsewhere run the same loops with the streams, events, pinned memory and
graphs falling away; only here do they run for real: every generator's tokens against the naive
loop (forced stops included), the two-stream and event loops, the CUDA-graph decoder, the
reduce-overhead compiled step, the ladder's methods, the profiler's gaps and the sync census.
Without a GPU every test here is skipped and says why.
"""
import functools

import pytest
import torch

from helpers import bench, graphs, static, streams
from helpers.course import harness, kernels, profiling
from helpers.checks import check_same_tokens
from helpers.generation import (decode_one_token, generate_kv_cache, generate_naive,
                                uniform_stop_lengths)
from helpers.model import build_model, exact_matmul, make_prompt

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(),
                                 reason="needs a CUDA GPU: run `pytest -m gpu` on the GPU host")]

BATCH, PROMPT, NEW = 6, 5, 12
SCHEDULES = [None, [3, 7, 2, 4, 3, 3], [1] * 6, [30] * 6]


@pytest.fixture(scope="module")
def cuda():
    """GPT-2's architecture at the tiny size, on the GPU, in full float32 (no TF32), and room in
    dynamo's cache for every compiled step this module builds (they share decode_one_token)."""
    torch._dynamo.config.recompile_limit = 64
    model = build_model("tiny", "cuda", seed=0)
    eos = model.config.eos_token_id
    prompt = make_prompt(BATCH, PROMPT, model.config.vocab_size, eos, "cuda", seed=2)
    with exact_matmul():
        yield model, eos, prompt


@pytest.fixture(scope="module")
def compiled(cuda):
    """One compiled step per mode, shared by the tests (compilation is the slow part)."""
    model, _, _ = cuda
    return {mode: static.compiled_step(model, mode) for mode in static.COMPILE_MODES}


def stops_of(values):
    return None if values is None else torch.tensor(values, device="cuda")


def same_as_naive(cuda, generate, what, n=NEW):
    """``generate(n, stops)`` against the naive loop for every schedule (float32 near-ties
    confirmed in float64, as the notebooks check)."""
    model, eos, prompt = cuda
    for values in SCHEDULES:
        stops = stops_of(values)
        check_same_tokens(model, generate_naive(model, prompt, n, eos, stops), generate(n, stops),
                          f"{what}, stops {values}", verbose=False)


def test_eager_loops_match_the_naive_loop(cuda):
    model, eos, prompt = cuda
    loops = {"kv cache": generate_kv_cache, "static cache": static.generate_static_cache,
             "sync": streams.generate_sync, "interleaved (two streams)": streams.generate_interleaved,
             "event check": streams.generate_event_check}
    for name, loop in loops.items():
        same_as_naive(cuda, lambda n, s, loop=loop: loop(model, prompt, n, eos, s), name)
    same_as_naive(cuda, lambda n, s: streams.trim_finished(
        streams.generate_no_check(model, prompt, n, eos, s), PROMPT, eos), "no check, trimmed")


@pytest.mark.parametrize("mode", static.COMPILE_MODES)
def test_compiled_step_matches_and_compiles_once(cuda, compiled, mode):
    model, eos, prompt = cuda
    step = compiled[mode]
    cache = static.make_static_cache(model, BATCH, PROMPT + NEW, "cuda")
    static.generate_static_compiled(model, prompt, NEW, eos, step=step, cache=cache)  # warm-up
    before = static.compile_counters()
    same_as_naive(cuda, lambda n, s: static.generate_static_compiled(
        model, prompt, n, eos, s, step=step, cache=cache), f"static compiled ({mode})")
    after = static.counters_delta(before, static.compile_counters())
    assert after == {"graphs_compiled": 0, "graph_breaks": 0, "cudagraph_skips": 0}, after


def test_stream_and_event_loops_with_the_cuda_graph_step(cuda, compiled):
    """Notebook 07's compiled regime: the reduce-overhead step on one static cache, read late."""
    model, eos, prompt = cuda
    step = compiled["reduce-overhead"]
    cache = static.make_static_cache(model, BATCH, PROMPT + NEW, "cuda")
    for loop in (streams.generate_sync, streams.generate_interleaved, streams.generate_event_check):
        same_as_naive(cuda, lambda n, s, loop=loop: loop(model, prompt, n, eos, s, step=step,
                                                         cache=cache), f"{loop.__name__}, compiled")


INDUCTOR = bench.INDUCTOR  # the ladder's Inductor options (no autotuning: faster to build)


@pytest.mark.parametrize("options", [dict(steps_per_graph=1), dict(steps_per_graph=3),
                                     dict(library_forward=True), dict(bucket=8),
                                     dict(bucket=8, steps_per_graph=3, compile_options=INDUCTOR)],
                         ids=["lean-1", "lean-3", "hf", "fused-8", "fused-8-3-inductor"])
def test_graph_decoder_replays_real_cuda_graphs(cuda, options):
    model, eos, prompt = cuda
    decoder = graphs.GraphDecoder(model, BATCH, PROMPT + 30, eos, **options)
    assert decoder.graphs, "on a GPU the steps are captured in a CUDA graph"
    same_as_naive(cuda, lambda n, s: decoder(prompt, n, s), f"GraphDecoder {options}")
    for seed, n in enumerate([30, 11, 4]):  # one decoder, shorter runs and new schedules
        stops = uniform_stop_lengths(BATCH, 1, n, seed=seed, device="cuda")
        check_same_tokens(model, generate_naive(model, prompt, n, eos, stops),
                          decoder(prompt, n, stops), f"GraphDecoder {options}, run {seed}",
                          verbose=False)


def test_every_ladder_method_gives_the_naive_tokens(cuda):
    """Each method of notebook 08 as the ladder builds it (compiled, dynamic-shape and graph
    methods included), and the generate() peers, without forced stops."""
    model, eos, prompt = cuda
    methods = bench.course_methods(model, eos, compile_modes=("reduce-overhead",),
                                   graph_steps=(2,), compile_dynamic=True)
    assert {"static compiled (reduce-overhead)", "interleaved (compiled)",
            "kv cache, compiled (dynamic shapes)", "CUDA graph, lean step (2/launch)"} <= set(methods)
    reference = generate_naive(model, prompt, NEW, eos)
    for name, method in methods.items():
        call = method.build(prompt, NEW)
        call()  # compile or capture
        check_same_tokens(model, reference, call(), name, verbose=False)


def test_profiler_sees_the_gap_that_the_sync_leaves(cuda):
    model, eos, prompt = cuda
    step = streams.eager_step(model)
    trace = profiling.profile_steps(lambda s: streams.generate_sync(model, prompt, 8, eos, step=s),
                                    step, "cuda")
    gaps = profiling.step_gaps(trace)
    assert len(gaps) >= 5 and (gaps["busy_us"] > 0).all()
    assert gaps["gap_before_us"].dropna().ge(0).all()
    busy = profiling.gpu_busy_idle(lambda: streams.generate_sync(model, prompt, 8, eos), 7, "cuda")
    assert busy["kernels_per_step"] > 1 and busy["busy_s"] > 0
    assert busy["busy_s"] + busy["idle_s"] == pytest.approx(busy["span_s"])


def test_gpu_busy_time_is_the_profiler_tables_sum(cuda):
    """harness.gpu_busy_s sums the raw device events; the profiler's own table (key_averages),
    built from the same run, must give the same total."""
    from torch.profiler import ProfilerActivity, profile
    model, eos, prompt = cuda
    run = lambda: generate_kv_cache(model, prompt, NEW, eos)  # noqa: E731
    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    raw_s = harness.device_event_ns(prof.profiler.kineto_results.events()) * 1e-9
    table_s = 1e-6 * sum(e.self_device_time_total for e in prof.key_averages()
                         if e.device_type == torch.autograd.DeviceType.CUDA)
    assert raw_s > 0
    assert raw_s == pytest.approx(table_s, rel=0.01)
    busy = harness.gpu_busy_s(run, "cuda")
    assert 0.5 * raw_s < busy < 2 * raw_s  # a second run of the same loop: the same order


def test_sync_census_finds_the_per_step_check_and_not_the_late_read(cuda):
    model, eos, prompt = cuda
    sync = profiling.find_syncs(streams.generate_sync, model, prompt, 8, eos)
    per_step = sync[sync["function"] == "generate_sync"]
    assert not per_step.empty, sync
    assert per_step["count"].sum() >= 7  # the `if finished.all()` of every step
    assert "finished.all()" in " ".join(per_step["code"])
    late = profiling.find_syncs(streams.generate_interleaved, model, prompt, 8, eos)
    assert late[late["function"] == "generate_interleaved"]["count"].sum() < per_step["count"].sum()


def test_one_decode_step_is_shared(cuda):
    """The eager step of the stream loops is decode_one_token itself."""
    model, _, _ = cuda
    step = streams.eager_step(model)
    assert isinstance(step, functools.partial) and step.func is decode_one_token


@pytest.mark.parametrize("options,attention_gemms", [(dict(), 2), (dict(bucket=8), 0),
                                                     (dict(bucket=8, compile_options=INDUCTOR), 0)],
                         ids=["lean", "fused", "fused-inductor"])
def test_kernel_table_of_real_replays(cuda, options, attention_gemms):
    """The replayed kernels split evenly into launches, every weight GEMM is found in the order
    the step runs them, and the parts add up to the step."""
    model, eos, prompt = cuda
    decoder = graphs.GraphDecoder(model, BATCH, PROMPT + 20, eos, **options)
    frame = kernels.replay_kernels(decoder, prompt, 20, "cuda")
    assert frame["launch"].nunique() == 19
    table = kernels.kernel_table(frame, model, BATCH, PROMPT, 20, 2e12, attention_gemms)
    parts = set(table["part"])
    if "compile_options" not in options:  # at the tiny size Inductor may turn a GEMM into
        # element-wise kernels of its own, so only the eager kernels' plan is certain
        assert kernels.UNATTRIBUTED not in parts and {"QKV", "MLP down", "LM head", "attention"} <= parts
    step = table.set_index("part").loc["step (span)"]
    assert step["us"] == pytest.approx(table[table["part"] != "step (span)"]["us"].sum(), rel=1e-6)


def test_gemm_backends_time_every_shape(cuda):
    model, _, _ = cuda
    table = kernels.gemm_backends(model, BATCH, progress=None)
    assert len(table) == 5 * 4 and table[table["backend"] == "cuBLAS"]["us"].gt(0).all()
    best = kernels.best_backends(table)
    assert list(best.index) == list(kernels.BLOCK_GEMMS) + [kernels.LM_HEAD]
