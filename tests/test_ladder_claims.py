"""The ladder of notebook 08 (helpers.bench), the article's claims (helpers.course.claims) and the
profiler's busy/idle analysis (helpers.course.profiling), on known inputs and the tiny model on a CPU;
``python -m helpers.bench`` runs there too."""
import subprocess
import sys

import math

import pandas as pd
import pytest

from helpers import bench
from helpers.course import claims, profiling, results
from helpers.course.errors import ParameterError
from helpers.model import build_model, make_prompt
from helpers.course.presets import resolve_params

ROOT = results.repo_root()


@pytest.fixture(scope="module")
def tiny6():
    model = build_model("tiny", "cpu", seed=0)
    eos = model.config.eos_token_id
    return model, eos, make_prompt(6, 5, model.config.vocab_size, eos, "cpu", seed=2)


def test_busy_idle_of_known_intervals():
    assert profiling.busy_idle([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]) == (6, 4.0, 2.0)
    assert profiling.busy_idle([]) == (0.0, 0.0, 0.0)
    assert profiling.busy_idle([(0, 10), (2, 3)]) == (10, 10.0, 0.0)


@pytest.mark.parametrize("name,kind", [
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x128", "matmul"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>", "matmul"),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)", "attention"),
    ("Memcpy DtoD (Device -> Device)", "copy"),
    ("void at::native::vectorized_layer_norm_kernel<float, float>", "other"),
])
def test_kernel_kinds(name, kind):
    assert profiling.kernel_kind(name) == kind


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
    """Ladder-like rows: one per (length, seconds), each with 8 trials scattered +-2% around
    its median, in a pattern of its own (so two methods' trials are not identical)."""
    phase = sum(map(ord, method)) % 7

    def trial_text(t):
        return " ".join(f"{t * 1e3 * (1 + 0.02 * math.sin(1.7 * i + phase)):.4f}" for i in range(8))
    return [{"method": method, "batch_size": 32, "seq_len": n, "status": "ok", "median_s": t,
             "trials_wall_ms": trial_text(t),
             "fragmentation_pct": (frag or {}).get(n, float("nan")), **extra}
            for n, t in times.items()]


def verdicts(ladder_rows, tables=None):
    frame = claims.check_claims(pd.DataFrame(ladder_rows), tables or {})
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
    assert result[QUAD] == claims.REPRODUCED  # x4.0 per doubling
    assert result[KV] == claims.NOT_REPRODUCED  # gain 2.0x, then 1.33x: shrinks
    assert result[EXPANDABLE] == claims.NO_DATA  # no table from notebook 03, none in this run
    assert result[FIVE] == claims.NO_DATA
    assert "x4.00 per doubling" in frame.set_index("claim").loc[QUAD, "evidence"]


def test_claims_fall_back_to_other_notebooks_tables():
    ladder = rows("naive", {100: 1.0})  # one length only: 01's and 02's tables decide
    table01 = pd.DataFrame(rows("naive", {100: 1.0, 200: 2.0, 400: 4.0}))
    table02 = pd.DataFrame(rows("naive", {100: 1.0, 200: 4.0}) + rows("kv_cache", {100: 0.5, 200: 1.0}))
    result, frame = verdicts(ladder, {"01_naive_generation": table01, "02_kv_cache": table02})
    assert result[QUAD] == claims.NOT_REPRODUCED  # x2 per doubling: linear
    assert result[KV] == claims.REPRODUCED  # 2x then 4x
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
    assert result[EXPANDABLE] == claims.REPRODUCED
    assert result[STATIC] == claims.REPRODUCED
    # this run's numbers come first: a static cache that wins at 100 tokens breaks the claim
    ladder = rows("kv cache", {100: 1.0}, frag={100: 20.0}) + rows("static cache", {100: 0.8},
                                                                   frag={100: 2.0})
    result, frame = verdicts(ladder, tables)
    assert result[STATIC] == claims.NOT_REPRODUCED
    assert "this run" in frame.set_index("claim").loc[STATIC, "source"]
    # a 1% difference inside +-2% noise at 400 tokens is no win: the claim is inconclusive
    tie = pd.DataFrame(rows("kv_cache (dynamic)", {100: 1.0, 200: 3.0, 400: 9.0},
                            frag={100: 20.0, 200: 25.0, 400: 30.0}) +
                       rows("static", {100: 1.2, 200: 2.5, 400: 8.9},
                            frag={100: 2.0, 200: 2.0, 400: 2.0}))
    result, frame = verdicts([], {"04_static_cache": tie})
    assert result[STATIC] == claims.INCONCLUSIVE
    assert "400 tokens static/dynamic speedup" in frame.set_index("claim").loc[STATIC, "evidence"]
    # without fragmentation (a CPU run) there is no verdict
    no_frag = {"04_static_cache": table04.assign(fragmentation_pct=float("nan"))}
    assert verdicts([], no_frag)[0][STATIC] == claims.NO_DATA


def test_compile_interleave_and_five_x_claims():
    ladder = (rows("naive", {100: 12.0}) + rows("kv cache", {100: 4.0}) +
              rows("static cache", {100: 5.0}) + rows("static compiled (default)", {100: 2.0}) +
              rows("static compiled (reduce-overhead)", {100: 1.0}) +
              rows("kv cache, compiled (dynamic shapes)", {100: 3.0}) +
              rows("interleaved (compiled)", {100: 2.5}))
    sweep = pd.DataFrame(rows("sync", {100: 1.0}, regime="compiled", batch_size=1) +
                         rows("interleaved", {100: 0.5}, regime="compiled", batch_size=1) +
                         rows("no_check", {100: 0.45}, regime="compiled", batch_size=1) +
                         rows("sync", {100: 2.0}, regime="compiled", batch_size=32) +
                         rows("interleaved", {100: 1.8}, regime="compiled", batch_size=32) +
                         rows("no_check", {100: 1.7}, regime="compiled", batch_size=32))
    result, _ = verdicts(ladder, {"07_stream_interleaving": sweep})
    assert result[COMPILE] == claims.REPRODUCED  # 5.0x with the static cache, 1.33x without
    assert result[INTERLEAVE] == claims.REPRODUCED  # 50% saved at batch 1, 10% at 32
    assert result[FIVE] == claims.REPRODUCED  # 12 / 2.5 = 4.8x
    # a CPU-bound regime where no check is not clearly faster than the per-step sync: the
    # article's premise (a GPU-bound step) does not hold, so there is no verdict from it
    eager = sweep.assign(regime="eager", trials_wall_ms=[
        r["trials_wall_ms"] for r in rows("sync", {100: 1.0}) * 6])
    result, frame = verdicts(ladder, {"07_stream_interleaving": eager})
    assert result[INTERLEAVE] == claims.PREMISE_NOT_MET
    assert "premise not met" in frame.set_index("claim").loc[INTERLEAVE, "evidence"]
    slow = [r for r in ladder if r["method"] != "interleaved (compiled)"] + \
        rows("interleaved (compiled)", {100: 5.0})
    assert verdicts(slow)[0][FIVE] == claims.NOT_REPRODUCED  # 2x


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
    done = subprocess.run([sys.executable, "-m", "helpers.bench", "--tokens", "3", "--repeats", "1"],
                          cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NOTE: no CUDA GPU" in done.stdout
    for column in ["median ms", "× naive", "÷ floor", "× generate()"]:
        assert column in done.stdout
    assert "6/6 methods" in done.stdout
