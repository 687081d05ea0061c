"""Notebooks 08-10 on a CPU: post-processing gives identical lists; the CUDA-graph decoder's step,
run eagerly, is token-identical to the naive loop; the bench's analyses give known answers on
known inputs; ``python -m helpers.bench`` runs on the tiny model."""
import ast
import inspect
import textwrap

import nbformat
import pandas as pd
import pytest
import torch

from helpers import postprocess, results
from helpers.presets import ParameterError, resolve_params

ROOT = results.repo_root()


def notebook_defs(stem):
    """Top-level functions and classes of a notebook's code cells, by name."""
    found = {}
    for cell in nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4).cells:
        if cell.cell_type == "code":
            for node in ast.parse(cell.source).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    found[node.name] = node
    return found


def same_source(notebook_node, obj):
    twin = ast.parse(textwrap.dedent(inspect.getsource(obj))).body[0]
    return ast.dump(notebook_node) == ast.dump(twin)


# ---------------------------------------------------------------- notebook 09: post-processing

@pytest.mark.parametrize("batch,prompt_len,completion_len", [(1, 1, 1), (3, 5, 7), (16, 8, 32)])
def test_both_postprocessing_methods_give_the_masked_tokens(batch, prompt_len, completion_len):
    tensors = postprocess.make_batch(batch, prompt_len, completion_len, 100, "cpu", seed=3)
    prompt_ids, prompt_mask, completion_ids, completion_mask = tensors
    expected = ([[int(t) for t, m in zip(ids, mask) if m] for ids, mask in zip(prompt_ids, prompt_mask)],
                [[int(t) for t, m in zip(ids, mask) if m]
                 for ids, mask in zip(completion_ids, completion_mask)])
    assert postprocess.postprocess_per_row(*tensors) == expected
    assert postprocess.postprocess_on_host(*tensors) == expected


def test_make_batch_pads_prompts_left_and_completions_right():
    prompt_ids, prompt_mask, completion_ids, completion_mask = postprocess.make_batch(
        64, 6, 9, 50, "cpu", seed=0)
    assert prompt_ids.shape == prompt_mask.shape == (64, 6)
    assert completion_ids.shape == completion_mask.shape == (64, 9)
    assert prompt_mask.dtype == completion_mask.dtype == torch.bool
    assert prompt_mask[:, -1].all() and completion_mask[:, 0].all()  # at least one real token
    assert (prompt_mask.int().diff(dim=1) >= 0).all()  # padding first, then tokens
    assert (completion_mask.int().diff(dim=1) <= 0).all()  # tokens first, then padding


def test_speedups_pivot_known_rows():
    frame = pd.DataFrame([
        {"method": "per row", "condition": "alone", "batch_size": 4, "seq_len": 8, "median_s": 0.3},
        {"method": "on host", "condition": "alone", "batch_size": 4, "seq_len": 8, "median_s": 0.1},
        {"method": "per row", "condition": "contended", "batch_size": 4, "seq_len": 8, "median_s": 1.0},
        {"method": "on host", "condition": "contended", "batch_size": 4, "seq_len": 8, "median_s": 0.2},
    ])
    wide = postprocess.speedups(frame).set_index("condition")
    assert wide.loc["alone", "speedup"] == pytest.approx(3.0)
    assert wide.loc["contended", "speedup"] == pytest.approx(5.0)


def test_notebook_09_teaches_the_helpers_code():
    defs = notebook_defs("09_host_sync_token_processing")
    for name in ["postprocess_per_row", "postprocess_on_host"]:
        assert same_source(defs[name], getattr(postprocess, name)), name


@pytest.mark.parametrize("kwargs,wrong", [
    (dict(completion_lens=[0]), "completion_lens"),
    (dict(contention_s=0), "contention_s"),
    (dict(contention_s="long"), "contention_s"),
    (dict(batch_sizes=[]), "batch_sizes"),
])
def test_notebook_09_rejects_bad_parameters(kwargs, wrong):
    with pytest.raises(ParameterError, match=wrong):
        resolve_params("09", "smoke", **kwargs)


# ---------------------------------------------------------------- notebook 10: CUDA-graph decoder

from helpers import bench, graphs  # noqa: E402
from helpers.generation import assert_same_tokens, generate_naive, uniform_stop_lengths  # noqa: E402
from helpers.model import build_model, make_prompt  # noqa: E402


@pytest.fixture(scope="module")
def tiny6():
    model = build_model("tiny", "cpu", seed=0)
    eos = model.config.eos_token_id
    return model, eos, make_prompt(6, 5, model.config.vocab_size, eos, "cpu", seed=2)


@pytest.mark.parametrize("library_forward", [False, True], ids=["lean", "transformers"])
@pytest.mark.parametrize("steps_per_graph", [1, 3])
@pytest.mark.parametrize("max_new_tokens", [1, 2, 7, 20])
@pytest.mark.parametrize("stops", [None, [3, 7, 2, 4, 3, 3], [1] * 6, [30] * 6])
def test_graph_decoder_steps_match_the_naive_loop(tiny6, library_forward, steps_per_graph,
                                                  max_new_tokens, stops):
    model, eos, prompt = tiny6
    stops = None if stops is None else torch.tensor(stops)
    reference = generate_naive(model, prompt, max_new_tokens, eos, stops)
    decoder = graphs.GraphDecoder(model, 6, 5 + max_new_tokens, eos, steps_per_graph,
                                  library_forward=library_forward)
    assert decoder.graph is None  # no GPU: the same steps run eagerly
    assert_same_tokens(reference, decoder(prompt, max_new_tokens, stops), "GraphDecoder")
    # a second call on the same buffers (stale cache and tokens from the first) changes nothing
    assert_same_tokens(reference, decoder(prompt, max_new_tokens, stops), "GraphDecoder, again")


def test_graph_decoder_serves_shorter_runs_and_random_schedules(tiny6):
    model, eos, prompt = tiny6
    decoder = graphs.GraphDecoder(model, 6, 5 + 30, eos, steps_per_graph=4)
    for seed, n in enumerate([30, 11, 4, 30]):
        stops = uniform_stop_lengths(6, 1, n, seed=seed)
        assert_same_tokens(generate_naive(model, prompt, n, eos, stops),
                           decoder(prompt, n, stops), f"run {seed}")


def test_generate_cuda_graph_reuses_its_decoder_per_shape(tiny6):
    model, eos, prompt = tiny6
    graphs.clear_decoders()
    first = graphs.generate_cuda_graph(model, prompt, 6, eos, steps_per_graph=2)
    assert len(graphs._decoders) == 1
    assert_same_tokens(first, graphs.generate_cuda_graph(model, prompt, 6, eos, steps_per_graph=2))
    assert len(graphs._decoders) == 1
    graphs.generate_cuda_graph(model, prompt, 9, eos, steps_per_graph=2)
    assert len(graphs._decoders) == 2
    graphs.clear_decoders()
    assert not graphs._decoders


def test_graph_decoder_rejects_runs_that_do_not_fit(tiny6):
    model, eos, prompt = tiny6
    decoder = graphs.GraphDecoder(model, 6, 5 + 8, eos)
    with pytest.raises(ValueError, match="do not fit"):
        decoder(prompt, 40)
    with pytest.raises(ValueError, match="positions"):
        graphs.GraphDecoder(model, 6, model.config.n_positions, eos, steps_per_graph=2)


def test_static_state_rounds_the_cache_to_16_positions(tiny6):
    model, eos, _ = tiny6
    state = graphs.static_state(model, 3, 17, "cpu")
    cfg = model.config
    assert state.kv.shape == (cfg.n_layer, 2, 3, cfg.n_head, 32, cfg.n_embd // cfg.n_head)
    assert state.tokens.shape == (3, 32) and state.cache is None
    library = graphs.static_state(model, 3, 17, "cpu", library_cache=True)
    assert library.kv is None and library.cache.get_max_length() == 32


def test_matmul_weight_bytes_of_the_tiny_model(tiny6):
    model, _, _ = tiny6
    e, v, layers = 64, 512, 2
    assert graphs.matmul_weight_bytes(model) == 4 * (layers * (e * 3 * e + e * e + 2 * e * 4 * e) + v * e)


def test_cache_bytes_of_the_tiny_model(tiny6):
    model, _, _ = tiny6
    state = graphs.static_state(model, 3, 17, "cpu")
    assert graphs.cache_bytes(model, 3, 32) == state.kv.numel() * state.kv.element_size()


def test_notebook_10_teaches_the_helpers_code():
    defs = notebook_defs("10_beyond_the_article")
    for name in ["static_state", "prefill", "advance", "decode_step", "hf_decode_step",
                 "capture_graph", "GraphDecoder"]:
        assert same_source(defs[name], getattr(graphs, name)), name


@pytest.mark.parametrize("kwargs,wrong", [
    (dict(graph_steps=[0]), "graph_steps"),
    (dict(graph_steps="4"), "graph_steps"),
])
def test_notebook_10_rejects_bad_parameters(kwargs, wrong):
    with pytest.raises(ParameterError, match=wrong):
        resolve_params("10", "smoke", **kwargs)


# ---------------------------------------------------------------- the bench's analyses

def test_busy_idle_of_known_intervals():
    assert bench.busy_idle([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]) == (6, 4.0, 2.0)
    assert bench.busy_idle([]) == (0.0, 0.0, 0.0)
    assert bench.busy_idle([(0, 10), (2, 3)]) == (10, 10.0, 0.0)


@pytest.mark.parametrize("name,kind", [
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x128", "matmul"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>", "matmul"),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)", "attention"),
    ("Memcpy DtoD (Device -> Device)", "copy"),
    ("void at::native::vectorized_layer_norm_kernel<float, float>", "other"),
])
def test_kernel_kinds(name, kind):
    assert bench.kernel_kind(name) == kind


def test_ladder_columns_of_known_rows():
    frame = pd.DataFrame([
        {"method": "naive", "batch_size": 2, "seq_len": 10, "median_s": 1.0},
        {"method": "generate() static", "batch_size": 2, "seq_len": 10, "median_s": 0.5},
        {"method": "fast", "batch_size": 2, "seq_len": 10, "median_s": 0.1},
        {"method": "fast", "batch_size": 2, "seq_len": 20, "median_s": 0.4},
    ])
    out = bench.add_ladder_columns(frame, floor_step_s=0.002).set_index(["method", "seq_len"])
    assert out.loc[("fast", 10), "per_step_s"] == pytest.approx(0.01)
    assert out.loc[("fast", 10), "floor_ratio"] == pytest.approx(5.0)
    assert out.loc[("fast", 10), "speedup_vs_naive"] == pytest.approx(10.0)
    assert out.loc[("fast", 10), "speedup_vs_generate_static"] == pytest.approx(5.0)
    assert pd.isna(out.loc[("fast", 10), "speedup_vs_generate"])  # no generate() row
    assert pd.isna(out.loc[("fast", 20), "speedup_vs_naive"])  # no naive row at that length


# ---------------------------------------------------------------- notebook 08: the claims check

def rows(method, times, frag=None, **extra):
    """Ladder-like rows: one per (length, seconds)."""
    return [{"method": method, "batch_size": 32, "seq_len": n, "status": "ok", "median_s": t,
             "fragmentation_pct": (frag or {}).get(n, float("nan")), **extra}
            for n, t in times.items()]


def verdicts(ladder_rows, tables=None):
    frame = bench.check_claims(pd.DataFrame(ladder_rows), tables or {})
    assert list(frame.columns) == ["claim", "verdict", "evidence", "source"]
    return dict(zip(frame["claim"], frame["verdict"])), frame


QUAD = "Runtime quadruples when the length doubles (naive loop)"
KV = "The KV cache's gain grows with length"
EXPANDABLE = "Expandable segments cut fragmentation"
STATIC = "The static cache lowers fragmentation, loses at 100 tokens, wins at 200 and 400"
COMPILE = "Compile helps most with the static cache"
INTERLEAVE = "Interleaving gains most at the smallest batch"
FIVE = "Compile plus interleaving reaches about 5x the baseline"


def test_claims_reproduced_not_reproduced_and_missing():
    ladder = (rows("naive", {100: 1.0, 200: 4.0}) + rows("kv cache", {100: 0.5, 200: 3.0}))
    result, frame = verdicts(ladder)
    assert result[QUAD] == bench.REPRODUCED  # x4.0 per doubling
    assert result[KV] == bench.NOT_REPRODUCED  # gain 2.0x, then 1.33x: shrinks
    assert result[EXPANDABLE] == bench.NO_DATA  # no table from notebook 03, none in this run
    assert result[FIVE] == bench.NO_DATA
    assert "x4.00 per doubling" in frame.set_index("claim").loc[QUAD, "evidence"]


def test_claims_fall_back_to_other_notebooks_tables():
    ladder = rows("naive", {100: 1.0})  # one length only: 01's and 02's tables decide
    table01 = pd.DataFrame(rows("naive", {100: 1.0, 200: 2.0, 400: 4.0}))
    table02 = pd.DataFrame(rows("naive", {100: 1.0, 200: 4.0}) + rows("kv_cache", {100: 0.5, 200: 1.0}))
    result, frame = verdicts(ladder, {"01_naive_generation": table01, "02_kv_cache": table02})
    assert result[QUAD] == bench.NOT_REPRODUCED  # x2 per doubling: linear
    assert result[KV] == bench.REPRODUCED  # 2x then 4x
    sources = frame.set_index("claim")["source"]
    assert sources[QUAD] == "01_naive_generation" and sources[KV] == "02_kv_cache"


def test_fragmentation_claims_from_notebooks_03_and_04():
    table03 = pd.DataFrame(rows("default", {100: 1.0}, frag={100: 30.0}) +
                           rows("expandable_segments:True", {100: 1.0}, frag={100: 5.0}))
    table04 = pd.DataFrame(rows("kv_cache (dynamic)", {100: 1.0, 200: 3.0, 400: 9.0},
                                frag={100: 20.0, 200: 25.0, 400: 30.0}) +
                           rows("static", {100: 1.2, 200: 2.5, 400: 6.0},
                                frag={100: 2.0, 200: 2.0, 400: 2.0}))
    tables = {"03_expandable_segments": table03, "04_static_cache": table04}
    result, _ = verdicts([], tables)
    assert result[EXPANDABLE] == bench.REPRODUCED
    assert result[STATIC] == bench.REPRODUCED
    # this run's numbers come first: a static cache that wins at 100 tokens breaks the claim
    ladder = rows("kv cache", {100: 1.0}, frag={100: 20.0}) + rows("static cache", {100: 0.8},
                                                                   frag={100: 2.0})
    result, frame = verdicts(ladder, tables)
    assert result[STATIC] == bench.NOT_REPRODUCED
    assert "this run" in frame.set_index("claim").loc[STATIC, "source"]
    # medians within 2% of each other tie: a tie at 400 tokens is not a win
    tie = {"04_static_cache": table04.assign(median_s=[1.0, 3.0, 9.0, 1.2, 2.5, 8.9])}
    result, frame = verdicts([], tie)
    assert result[STATIC] == bench.NOT_REPRODUCED
    assert "400 tokens ties" in frame.set_index("claim").loc[STATIC, "evidence"]
    # without fragmentation (a CPU run) there is no verdict
    no_frag = {"04_static_cache": table04.assign(fragmentation_pct=float("nan"))}
    assert verdicts([], no_frag)[0][STATIC] == bench.NO_DATA


def test_compile_interleave_and_five_x_claims():
    ladder = (rows("naive", {100: 10.0}) + rows("kv cache", {100: 4.0}) +
              rows("static cache", {100: 5.0}) + rows("static compiled (default)", {100: 2.0}) +
              rows("static compiled (reduce-overhead)", {100: 1.0}) +
              rows("kv cache, compiled (dynamic shapes)", {100: 3.0}) +
              rows("interleaved (compiled)", {100: 2.5}))
    sweep = pd.DataFrame(rows("sync", {100: 1.0}, regime="eager", batch_size=1) +
                         rows("interleaved", {100: 0.5}, regime="eager", batch_size=1) +
                         rows("sync", {100: 2.0}, regime="eager", batch_size=32) +
                         rows("interleaved", {100: 1.8}, regime="eager", batch_size=32))
    for row in sweep.to_dict("records"):
        assert row["batch_size"] in (1, 32)
    result, _ = verdicts(ladder, {"07_stream_interleaving": sweep})
    assert result[COMPILE] == bench.REPRODUCED  # 5.0x with the static cache, 1.33x without
    assert result[INTERLEAVE] == bench.REPRODUCED  # 50% saved at batch 1, 10% at 32
    assert result[FIVE] == bench.REPRODUCED  # 10 / 2.5 = 4x
    slow = [r for r in ladder if r["method"] != "interleaved (compiled)"] + \
        rows("interleaved (compiled)", {100: 5.0})
    assert verdicts(slow)[0][FIVE] == bench.NOT_REPRODUCED  # 2x


def test_run_ladder_records_a_failing_method_and_goes_on(tiny6):
    model, eos, prompt = tiny6

    def broken(p, n):
        raise RuntimeError("no such kernel")

    methods = {"naive": bench.course_methods(model, eos, peers=())["naive"],
               "broken": bench.Method("99", broken)}
    out = pd.DataFrame(bench.run_ladder(methods, prompt, [3], device="cpu", repeats=1, warmup=0))
    assert list(out["status"]) == ["ok", "failed"]
    assert "no such kernel" in out.set_index("method").loc["broken", "error"]


def test_course_methods_on_a_cpu_leave_out_the_gpu_methods(tiny6):
    model, eos, _ = tiny6
    names = list(bench.course_methods(model, eos, compile_dynamic=True))
    assert names == ["naive", "kv cache", "static cache", "interleaved (eager)", "generate()",
                     "generate() static"]


def test_course_methods_take_the_peers_named(tiny6):
    model, eos, _ = tiny6
    assert list(bench.course_methods(model, eos, peers=["generate()"]))[-1] == "generate()"
    assert "generate()" not in bench.course_methods(model, eos, peers=())


@pytest.mark.parametrize("kwargs,wrong", [
    (dict(peers=["generate(static)"]), "peers"),
    (dict(compile_dynamic="yes"), "compile_dynamic"),
    (dict(check_peers=1), "check_peers"),
])
def test_notebook_08_rejects_bad_parameters(kwargs, wrong):
    with pytest.raises(ParameterError, match=wrong):
        resolve_params("08", "smoke", **kwargs)


def test_bench_command_on_a_cpu():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "helpers.bench", "--tokens", "4"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NOTE: no CUDA GPU" in done.stdout
    for column in ["median ms", "× naive", "÷ floor", "× generate()"]:
        assert column in done.stdout
    assert "6/6 methods" in done.stdout
