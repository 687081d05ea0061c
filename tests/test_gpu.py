"""The CUDA paths, on a CUDA GPU: ``pytest -m gpu`` (about a minute on an H100; small sizes).

On a CPU the tests elsewhere run the same loops with the streams, events, pinned memory and
graphs falling away; only here do they run for real: every generator's tokens against the naive
loop (forced stops included), the two-stream and event loops, the CUDA-graph decoder, the
reduce-overhead compiled step, the ladder's methods, the profiler's gaps and the sync census;
and notebook 11's Triton kernels, each against its PyTorch reference at several shapes.
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
from helpers.fast_step import fast_decode_step
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
    compiles = {key: after[key] for key in ("graphs_compiled", "graph_breaks", "cudagraph_skips")}
    assert compiles == {"graphs_compiled": 0, "graph_breaks": 0, "cudagraph_skips": 0}, after


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
                         ids=["lean-1", "lean-3", "hf", "bucketed-8", "bucketed-8-3-inductor"])
def test_graph_decoder_replays_real_cuda_graphs(cuda, options):
    model, eos, prompt = cuda
    bucketed = "bucket" in options
    decoder = (graphs.BucketedGraphDecoder if bucketed else graphs.GraphDecoder)(
        model, BATCH, PROMPT + 30, eos, **options)
    captured = list(decoder.graphs.values()) if bucketed else [decoder.graph]
    assert decoder.graphed and captured and None not in captured, "on a GPU: CUDA graphs"
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
    """harness.gpu_busy_s takes the union of the raw device events' intervals; for one stream's
    kernels, which do not overlap, the profiler's own table (key_averages), built from the same
    run, must give the same total as their sum."""
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
    assert raw_s <= table_s * 1.001 and raw_s == pytest.approx(table_s, rel=0.02)
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
                                                     (dict(bucket=8, compile_options=INDUCTOR), 0),
                                                     (dict(step=fast_decode_step), 0)],
                         ids=["lean", "bucketed", "bucketed-inductor", "triton"])
def test_kernel_table_of_real_replays(cuda, options, attention_gemms, monkeypatch):
    """The replayed kernels split evenly into launches, every weight GEMM is found in the order
    the step runs them, and the parts add up to the step. The Triton step without PDL, as 11
    tables it: with PDL a kernel starts before the one ahead of it ends, so the parts overlap and
    add up to more than the step's span (39 against 61 us on an H100, 2026-11-26)."""
    from helpers import triton_kernels as tk

    monkeypatch.setattr(tk, "PDL", False)
    model, eos, prompt = cuda
    kind = graphs.BucketedGraphDecoder if "bucket" in options else graphs.GraphDecoder
    decoder = kind(model, BATCH, PROMPT + 20, eos, **options)
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
    assert list(table["gemm"].unique()) == list(kernels.BLOCK_GEMMS) + [kernels.LM_HEAD]


# ------------------------------------------------------------------ notebook 11's Triton kernels

def _rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


# Tolerances by (dtype, precision): IEEE float32 lands far under 1e-4; TF32 and bfloat16 operands
# near 1e-3 (METHOD.md's ranges, with room for the layer norm of a small-variance row).
TOLERANCE = {(torch.float32, "highest"): 1e-5, (torch.float32, "high"): 5e-3,
             (torch.bfloat16, "high"): 2e-2}


@pytest.mark.parametrize("dtype,precision", list(TOLERANCE), ids=["fp32", "tf32", "bf16"])
@pytest.mark.parametrize("m,k,n,flags", [(32, 768, 2304, ""), (32, 768, 768, "res norm"),
                                         (32, 768, 3072, "gelu"), (32, 3072, 768, "res norm"),
                                         (1, 768, 768, "norm"), (17, 256, 96, "res gelu norm"),
                                         (6, 64, 192, "")])
def test_triton_linear_matches_its_reference(dtype, precision, m, k, n, flags):
    """The skinny GEMM with every epilogue, at GPT-2's shapes and odd ones, with the tuned launch
    and split-K ones, against the float64 reference; fresh random inputs, output poisoned."""
    from helpers import triton_kernels as tk
    torch.manual_seed(m * n + k)
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        w = (torch.randn(k, n, device="cuda") / k**0.5).to(dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        res = torch.randn(m, n, device="cuda", dtype=dtype) if "res" in flags else None
        norm = ((torch.randn(n, device="cuda", dtype=dtype), torch.randn(n, device="cuda", dtype=dtype),
                 1e-5) if "norm" in flags else None)
        double = lambda t: None if t is None else t.double()
        ref = tk.linear_ref(x.double(), w.double(), b.double(), "gelu" in flags, double(res),
                            None if norm is None else (norm[0].double(), norm[1].double(), 1e-5))
        for config in (None, (32, 64, 2, 4, 4), (16, 64, 1, 4, 4), (64, 64, 4, 4, 3)):
            if config is not None and k % (config[1] * config[2]):
                continue
            out = tk.linear(x, w, b, "gelu" in flags, res, norm, config=config)
            pairs = zip(out, ref) if norm is not None else [(out, ref)]
            for got, want in pairs:
                assert torch.isfinite(got).all()
                assert _rel(got, want) < TOLERANCE[(dtype, precision)], (config, _rel(got, want))
    finally:
        torch.set_float32_matmul_precision(before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("m,k,n", [(32, 768, 50257), (6, 64, 512), (3, 128, 1000)])
def test_lm_head_argmax_matches_the_logits_argmax(cuda, dtype, m, k, n):
    """Under exact float32 (the module's fixture) the fused head picks the logits' argmax."""
    from helpers import triton_kernels as tk
    torch.manual_seed(n)
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    w_t = (torch.randn(n, k, device="cuda") / k**0.5).to(dtype)
    best, index = tk.lm_head_argmax(x, w_t)
    logits = x.double() @ w_t.double().t()
    choice = index.gather(1, best.argmax(1, keepdim=True))[:, 0]
    top = logits.max(1).values
    assert (logits.gather(1, choice[:, None])[:, 0] - top).abs().max() < (1e-4 if dtype == torch.float32 else 5e-2)
    if dtype == torch.float32:
        assert torch.equal(choice, logits.argmax(1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("batch,heads,head_dim,slots,position",
                         [(32, 12, 64, 128, 16), (32, 12, 64, 128, 115), (2, 2, 32, 16, 1),
                          (5, 3, 32, 48, 47), (4, 12, 64, 1024, 700)])
def test_decode_attention_matches_its_reference(dtype, batch, heads, head_dim, slots, position):
    """Attention over the filled positions and the cache write at ``position``."""
    from helpers import triton_kernels as tk
    torch.manual_seed(position)
    qkv = torch.randn(batch, 3 * heads * head_dim, device="cuda", dtype=dtype)
    kv = torch.randn(2, batch, heads, slots, head_dim, device="cuda", dtype=dtype)
    kv_ref = kv.double()
    where = torch.tensor(position, device="cuda")
    out = tk.decode_attention(qkv, kv, where, heads)
    ref = tk.decode_attention_ref(qkv.double(), kv_ref, where, heads)
    assert _rel(out, ref) < (1e-6 if dtype == torch.float32 else 1e-2)
    assert torch.equal(kv.double(), kv_ref.to(dtype).double())  # the new key and value written


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("batch,heads,head_dim,slots,position,config",
                         [(32, 12, 64, 128, 0, None), (32, 12, 64, 128, 115, None),
                          (1, 12, 64, 128, 77, (32, 256, 3, 4, 3)), (5, 3, 32, 48, 47, None),
                          (32, 12, 64, 128, 16, (16, 128, 2, 4, 4)), (4, 12, 64, 32, 20, (32, 64, 4, 4, 4))])
def test_qkv_attention_matches_its_references(dtype, batch, heads, head_dim, slots, position, config):
    """The QKV GEMM cut along K with attention adding up its partial sums and the bias: the
    same output and cache write as the two references, IEEE float32 (and bf16 within its noise)."""
    from helpers import triton_kernels as tk
    torch.manual_seed(position + batch)
    width = heads * head_dim
    x = torch.randn(batch, width, device="cuda", dtype=dtype)
    w = (torch.randn(width, 3 * width, device="cuda") / width**0.5).to(dtype)
    b = torch.randn(3 * width, device="cuda", dtype=dtype)
    kv = torch.randn(2, batch, heads, slots, head_dim, device="cuda", dtype=dtype)
    kv_ref = kv.double()
    where = torch.tensor(position, device="cuda")
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        out = tk.qkv_attention(x, w, b, kv, where, heads, config=config)
    finally:
        torch.set_float32_matmul_precision(before)
    ref = tk.decode_attention_ref(tk.linear_ref(x.double(), w.double(), b.double()), kv_ref, where, heads)
    assert _rel(out, ref) < (1e-5 if dtype == torch.float32 else 2e-2)
    assert _rel(kv, kv_ref) < (1e-6 if dtype == torch.float32 else 1e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_prefetch_changes_no_bit(dtype, monkeypatch):
    """The L2 prefetch before ``gdc_wait`` (with PDL) only moves reads earlier: the layer GEMMs
    (split and not, with the row kernel), the QKV split with attention and attention alone give
    the same bits with it on and off, at GPT-2's shapes and a small one."""
    from helpers import triton_kernels as tk
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("PDL (and so the prefetch) needs Hopper or newer")
    torch.manual_seed(5)
    results = {}
    for on in (True, False):
        monkeypatch.setattr(tk, "PREFETCH_GEMM", on)
        monkeypatch.setattr(tk, "PREFETCH_ATTENTION", on)
        torch.manual_seed(5)
        outs = []
        for k, n, kw in ((768, 2304, {}), (768, 768, "norm"), (768, 3072, "gelu"), (3072, 768, "norm"), (64, 96, {})):
            x = torch.randn(32, k, device="cuda", dtype=dtype)
            w = (torch.randn(k, n, device="cuda") / k**0.5).to(dtype)
            b = torch.randn(n, device="cuda", dtype=dtype)
            norm = (torch.ones(n, device="cuda", dtype=dtype), torch.zeros(n, device="cuda", dtype=dtype), 1e-5)
            y = tk.linear(x, w, b, gelu=kw == "gelu", residual=x[:, :n] if kw == "norm" and k == n else None,
                          norm=norm if kw == "norm" else None)
            outs += list(y) if isinstance(y, tuple) else [y]
        for position in (0, 57, 115):
            kv = torch.randn(2, 32, 12, 128, 64, device="cuda", dtype=dtype)
            x = torch.randn(32, 768, device="cuda", dtype=dtype)
            w = (torch.randn(768, 2304, device="cuda") / 28).to(dtype)
            b = torch.randn(2304, device="cuda", dtype=dtype)
            where = torch.tensor(position, device="cuda")
            outs += [tk.qkv_attention(x, w, b, kv, where, 12), kv.clone()]
            outs += [tk.decode_attention(torch.randn(32, 2304, device="cuda", dtype=dtype), kv, where, 12), kv]
        results[on] = outs
    assert len(results[True]) == len(results[False])
    for a, b in zip(results[True], results[False]):
        assert torch.equal(a, b)


@pytest.mark.parametrize("batch,tiles", [(32, 393), (3, 4), (6, 786)])
def test_finish_step_and_embed_match_their_references(batch, tiles):
    """The greedy choice over tiles (the first tile on a tie), forced stops, finished rows and
    the counters; the embedding and its layer norm."""
    from types import SimpleNamespace
    from helpers import triton_kernels as tk

    def state(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        return SimpleNamespace(
            tokens=torch.zeros(batch, 64, dtype=torch.long, device="cuda"),
            token=torch.zeros(batch, dtype=torch.long, device="cuda"),
            finished=torch.rand(batch, device="cuda", generator=g) < 0.3,
            stop_lengths=torch.randint(1, 5, (batch,), device="cuda", generator=g),
            position=torch.tensor(20, device="cuda"), step=torch.tensor(2, device="cuda"))
    best = torch.randn(batch, tiles, device="cuda")
    best[0, 1] = best[0, 2] = best[0].max() + 1
    index = torch.randint(0, 50000, (batch, tiles), device="cuda")
    a, b = state(1), state(1)
    tk.finish_step(best, index, a, 7)
    tk.finish_step_ref(best, index, b, 7)
    for field in vars(a):
        assert torch.equal(getattr(a, field), getattr(b, field)), field
    wte, wpe = torch.randn(1000, 768, device="cuda"), torch.randn(1024, 768, device="cuda")
    norm = (torch.randn(768, device="cuda"), torch.randn(768, device="cuda"), 1e-5)
    token, where = torch.randint(0, 1000, (batch,), device="cuda"), torch.tensor(5, device="cuda")
    (h, x), (h_ref, x_ref) = tk.embed(token, where, wte, wpe, norm), tk.embed_ref(token, where, wte, wpe, norm)
    assert torch.equal(h, h_ref) and _rel(x, x_ref) < 1e-6


@pytest.mark.parametrize("steps_per_graph", [1, 3, 10])
def test_triton_step_decoders_give_the_naive_tokens(cuda, steps_per_graph):
    """Notebook 11's rungs in real CUDA graphs (the prefill's graph too), forced stops included,
    under exact float32 (the Triton products fall back to IEEE float32 there)."""
    from helpers.fast_step import FastDecoder, fast_decode_step
    model, eos, prompt = cuda
    plain = graphs.GraphDecoder(model, BATCH, PROMPT + 30, eos, steps_per_graph, step=fast_decode_step)
    fast = FastDecoder(model, BATCH, PROMPT + 30, eos, steps_per_graph)
    assert plain.graph is not None and fast.graph is not None
    same_as_naive(cuda, lambda n, s: plain(prompt, n, s), f"Triton step, {steps_per_graph}/launch")
    same_as_naive(cuda, lambda n, s: fast(prompt, n, s), f"FastDecoder, {steps_per_graph}/launch")
    assert fast.prefills, "the prefill was captured"
