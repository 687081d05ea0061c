"""The ladder of notebook 08 (helpers.bench), the article's claims (helpers.course.claims) and the
profiler's busy/idle analysis (helpers.course.profiling), on known inputs and the tiny model on a CPU;
``python -m helpers.bench`` runs there too."""
import json
import math
import re
import subprocess
import sys


import pandas as pd
import pytest

from helpers import bench
from helpers.course import claims, profiling, results, stats, summary
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
    """Table rows: one per (length, seconds), each with 8 trials scattered +-2% around its
    median, in a pattern of its own (so two methods' trials are not identical)."""
    phase = sum(map(ord, method)) % 7

    def trial_text(t):
        return " ".join(f"{t * 1e3 * (1 + 0.02 * math.sin(1.7 * i + phase)):.4f}" for i in range(8))
    return [{"method": method, "batch_size": 32, "seq_len": n, "status": "ok", "median_s": t,
             "trials_wall_ms": trial_text(t),
             "fragmentation_pct": (frag or {}).get(n, float("nan")), **extra}
            for n, t in times.items()]


def compiled_sweep(seconds):
    """Notebook 07's table in the compiled regime at 100 tokens: ``seconds`` maps a batch size to
    the (sync, interleaved, no_check) times, in that row order."""
    return pd.DataFrame([row for batch, times in seconds.items()
                         for method, t in zip(("sync", "interleaved", "no_check"), times)
                         for row in rows(method, {100: t}, regime="compiled", batch_size=batch)])


def verdicts(ladder_rows, tables=None, **kwargs):
    frame = claims.check_claims(pd.DataFrame(ladder_rows), tables or {}, **kwargs)
    assert list(frame.columns) == ["claim", "verdict", "evidence", "source", "headline", "detail",
                                   "note", "context", "number", "parts", "sizes", "apart", "same_loop"]
    return dict(zip(frame["claim"], frame["verdict"])), frame.set_index("claim")["evidence"]


QUAD = "Runtime quadruples when the length doubles (naive loop)"
KV = "The KV cache's gain grows with length"
EXPANDABLE = "Expandable segments cut fragmentation"
STATIC = "Static cache: lower fragmentation; loses at 100 tokens, wins at 200, 400"
COMPILE = "Compile helps most with the static cache"
INTERLEAVE = "Interleaving gains most at the smallest batch"
FIVE = "Compile plus interleaving reaches about 5x the baseline"
T01, T02, T03, T04, T07 = (claims.TABLES[k] for k in ("01", "02", "03", "04", "07"))


def test_claims_from_notebooks_01_and_02_tables():
    table01 = pd.DataFrame(rows("naive", {100: 1.0, 200: 4.0}))
    table02 = pd.DataFrame(rows("naive", {100: 1.0, 200: 4.0}) + rows("kv_cache", {100: 0.5, 200: 3.0}))
    result, evidence = verdicts([], {T01: table01, T02: table02})
    assert result[QUAD] == claims.REPRODUCED  # x4.0 per doubling
    assert "x4.00 per doubling" in evidence[QUAD]
    assert result[KV] == claims.NOT_REPRODUCED  # gain 2.0x, then 1.33x: shrinks
    assert "(" in evidence[KV] and "smaller" in evidence[KV]  # stats.plain's range, a gain's words
    linear = pd.DataFrame(rows("naive", {100: 1.0, 200: 2.0, 400: 4.0}))
    growing = pd.DataFrame(rows("naive", {100: 1.0, 200: 4.0}) + rows("kv_cache", {100: 0.5, 200: 1.0}))
    result, _ = verdicts([], {T01: linear, T02: growing})
    assert result[QUAD] == claims.NOT_REPRODUCED  # x2 per doubling
    assert result[KV] == claims.REPRODUCED  # 2x, then 4x


def test_a_missing_table_names_the_notebook_to_run_and_judges_nothing():
    result, evidence = verdicts([], {}, why={T03: "not in this run's folder"})
    for claim in (QUAD, KV, EXPANDABLE, STATIC, INTERLEAVE):
        assert result[claim] == claims.NOT_RUN
    assert "run notebook 03 before 08" in evidence[EXPANDABLE]
    assert result[FIVE] == claims.NO_DATA and "08's ladder" in evidence[FIVE]


def test_workshop_sizes_leave_claims_to_the_full_run():
    # three runs per point, one length of notebook 04, one batch size in 07
    def three(frame):
        return frame.assign(trials_wall_ms=[" ".join(t.split()[:3]) for t in frame["trials_wall_ms"]])
    table02 = three(pd.DataFrame(rows("naive", {50: 1.0, 300: 6.0}) + rows("kv_cache", {50: 0.9, 300: 3.0})))
    table04 = pd.DataFrame(rows("dynamic", {48: 1.0}, frag={48: 20.0}) +
                           rows("static", {48: 1.2}, frag={48: 2.0}))
    table07 = pd.DataFrame(rows("sync", {50: 1.0}, regime="compiled", batch_size=16) +
                           rows("no_check", {50: 0.8}, regime="compiled", batch_size=16) +
                           rows("interleaved", {50: 0.8}, regime="compiled", batch_size=16))
    ladder = rows("naive loop", {50: 10.0}) + rows("stop check a step late", {50: 1.0})
    result, evidence = verdicts(ladder, {T02: table02, T04: table04, T07: table07},
                                preset="workshop")
    for claim in (KV, STATIC, COMPILE, INTERLEAVE):
        assert result[claim] == claims.FULL_RUN, (claim, evidence[claim])
    assert "only 3 runs" in evidence[KV] and "[48]" in evidence[STATIC]
    assert "this run's 07 timed its compiled loops at one batch size (16)" in evidence[INTERLEAVE]
    assert result[FIVE] == claims.EXCEEDED  # 10x with 8 runs: its sizes can show it
    # the tally names what the workshop judged and what it leaves to the full run
    lines = claims.tally(claims.check_claims(pd.DataFrame(ladder), {T02: table02, T04: table04,
                                                                    T07: table07},
                                             preset="workshop"))
    assert lines[0] == ("Judged from this run's own tables: 1 of 7 claims: 1 exceeded: faster than "
                        "claimed; 4 need the full preset's sizes; 2 wait for their notebook."), lines[0]
    assert lines[1].startswith("Left to the full run") and all(
        claim in lines[1] for claim in (KV, STATIC, COMPILE, INTERLEAVE))
    assert lines[2].startswith("Not in this run") and QUAD in lines[2]
    # the same sizes in a full run are not "left to the full run"
    assert verdicts(ladder, {T02: table02}, preset="full")[0][KV] == claims.TOO_FEW


def test_fragmentation_claims_from_notebooks_03_and_04():
    table03 = pd.DataFrame(rows("default", {100: 1.0}, frag={100: 30.0}) +
                           rows("expandable_segments:True", {100: 1.0}, frag={100: 5.0}))
    table04 = pd.DataFrame(rows("dynamic", {100: 1.0, 200: 3.0, 400: 9.0},
                                frag={100: 20.0, 200: 25.0, 400: 30.0}) +
                           rows("static", {100: 1.2, 200: 2.5, 400: 6.0},
                                frag={100: 2.0, 200: 2.0, 400: 2.0}))
    result, _ = verdicts([], {T03: table03, T04: table04})
    assert result[EXPANDABLE] == claims.REPRODUCED
    assert result[STATIC] == claims.REPRODUCED
    # a static cache that wins at 100 tokens breaks the claim
    wins = table04.copy()
    wins.loc[(wins["method"] == "static") & (wins["seq_len"] == 100), "trials_wall_ms"] = \
        rows("static", {100: 0.8})[0]["trials_wall_ms"]
    result, evidence = verdicts([], {T04: wins})
    assert result[STATIC] == claims.PARTLY  # the other parts still hold
    assert "contradicted: slower at 100 tokens" in evidence[STATIC]
    # a 1% difference inside +-2% noise at 400 tokens is no win
    tie = pd.DataFrame(rows("dynamic", {100: 1.0, 200: 3.0, 400: 9.0},
                            frag={100: 20.0, 200: 25.0, 400: 30.0}) +
                       rows("static", {100: 1.2, 200: 2.5, 400: 8.9},
                            frag={100: 2.0, 200: 2.0, 400: 2.0}))
    result, evidence = verdicts([], {T04: tie})
    assert result[STATIC] == claims.PARTLY
    assert "can't tell apart on this machine: faster at 400 tokens" in evidence[STATIC]
    assert "can't tell apart on this machine" in evidence[STATIC]
    # fragmentations less than FRAG_SAME_PTS apart are "about the same", not lower
    same = pd.DataFrame(rows("dynamic", {100: 1.0, 200: 3.0}, frag={100: 6.5, 200: 26.2}) +
                        rows("static", {100: 1.2, 200: 2.5}, frag={100: 6.3, 200: 4.5}))
    result, evidence = verdicts([], {T04: same})
    assert result[STATIC] == claims.PARTLY  # slower at 100 and faster at 200: borne out
    assert "contradicted: lower fragmentation at 100 tokens" in evidence[STATIC]
    assert ("100 tokens 6.3% against 6.5% (about the same), 200 tokens 4.5% against 26.2% "
            "(lower)") in evidence[STATIC]
    close03 = pd.DataFrame(rows("default", {100: 1.0}, frag={100: 6.5}) +
                           rows("expandable_segments:True", {100: 1.0}, frag={100: 6.0}))
    assert verdicts([], {T03: close03})[0][EXPANDABLE] == claims.NOT_REPRODUCED
    # without fragmentation (a CPU run) notebook 03 gives no verdict
    assert verdicts([], {T03: table03.assign(fragmentation_pct=float("nan"))})[0][EXPANDABLE] \
        == claims.NO_DATA


def test_compile_interleave_and_five_x_claims():
    ladder = (rows("naive loop", {100: 12.0}) + rows("KV cache", {100: 4.0}) +
              rows("static cache", {100: 5.0}) + rows("static cache, compiled", {100: 1.0}) +
              rows("KV cache, compiled", {100: 3.0}) + rows("stop check a step late", {100: 2.5}))
    sweep = compiled_sweep({1: (1.0, 0.5, 0.45), 32: (2.0, 1.8, 1.7)})
    result, _ = verdicts(ladder, {T07: sweep})
    assert result[COMPILE] == claims.REPRODUCED  # 5.0x with the static cache, 1.33x without
    assert result[INTERLEAVE] == claims.REPRODUCED  # 50% saved at batch 1, 10% at 32
    assert result[FIVE] == claims.REPRODUCED  # 12 / 2.5 = 4.8x
    # a regime where dropping the check is not clearly faster: the premise does not hold
    eager = sweep.assign(regime="eager", trials_wall_ms=[
        r["trials_wall_ms"] for r in rows("sync", {100: 1.0}) * 6])
    result, evidence = verdicts(ladder, {T07: eager})
    assert result[INTERLEAVE] == claims.PREMISE
    assert "host sets the pace" in evidence[INTERLEAVE]
    slow = [r for r in ladder if r["method"] != "stop check a step late"] + \
        rows("stop check a step late", {100: 5.0})
    assert verdicts(slow)[0][FIVE] == claims.NOT_REPRODUCED  # 2.4x
    fast = [r for r in ladder if r["method"] != "stop check a step late"] + \
        rows("stop check a step late", {100: 1.7})
    assert verdicts(fast)[0][FIVE] == claims.EXCEEDED  # 7.1x: more than "about 5x"
    # a smoke run: every claim "not judged", and no verdict word in the evidence
    result, evidence = verdicts(ladder, {T07: sweep}, judge=False)
    assert set(result.values()) == {claims.NOT_JUDGED}
    assert not any(w in " ".join(evidence) for w in ("faster", "slower", "can't tell"))


def _write(folder, name, record):
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "outputs").mkdir(exist_ok=True)
    pd.DataFrame(rows("naive", {100: 1.0, 200: 4.0})).to_csv(folder / "data" / f"{name}.csv")
    (folder / "outputs" / f"{name}.json").write_text(json.dumps(
        {"files": [{"kind": "table", "path": f"data/{name}.csv"}], **record}))


def test_only_this_runs_tables_count(tmp_path, monkeypatch):
    monkeypatch.setenv(results.RUN_DIR_ENV, str(tmp_path))
    env = {"gpu": "H100", "cpu": "Xeon", "torch": "2.11", "transformers": "5.17",
           "date": "2026-11-23T10:00:00+00:00"}
    mine = {"preset": "full", "env": env}
    _write(tmp_path, T01, {"preset": "full", "env": {**env, "date": "2026-11-23T09:50:00+00:00"}})
    _write(tmp_path, T02, {"preset": "workshop", "env": env})
    _write(tmp_path, T03, {"preset": "full", "env": {**env, "gpu": "H200"}})
    _write(tmp_path, T04, {"preset": "full", "env": {**env, "date": "2026-11-20T10:00:00+00:00"}})
    tables, why, sources = claims.this_run_tables(mine)
    assert tables[T01] is not None and list(sources["in this run"]) == [True] + [False] * 4
    assert "workshop preset" in why[T02] and "gpu" in why[T03] and "too long before" in why[T04]
    assert why[T07] == "not in this run's folder"  # figures/ holds one: it is never read
    assert "notebook(s) 02, 03, 04, 07." in claims.run_first(sources)
    assert "--only 01,02,03,04,07,08" in claims.run_first(sources)  # one call, one run id
    result, evidence = verdicts([], tables, why=why)
    assert result[QUAD] == claims.REPRODUCED and result[KV] == claims.NOT_RUN
    assert "workshop preset" in evidence[KV]
    # a run id, where both records carry one, decides alone
    _write(tmp_path, T02, {"preset": "workshop", "env": env, "run_id": "a"})
    assert claims.why_not_this_run(T02, {**mine, "run_id": "a"}) is None
    assert claims.why_not_this_run(T02, {**mine, "run_id": "b"}) == "written by another run"
    # in the runner's run, a table without the run's id (written outside it) does not count
    assert claims.why_not_this_run(T01, {**mine, "run_id": "a"}) == "written by another run"
    # the same run id from another machine (a --resume on a second lent GPU) does not count
    _write(tmp_path, T02, {"preset": "full", "env": {**env, "host": "h2"}, "run_id": "a"})
    assert claims.why_not_this_run(T02, {**mine, "env": {**env, "host": "h1"}, "run_id": "a"}) == \
        "written on another machine (this run was resumed there)"
    assert claims.why_not_this_run(T02, {**mine, "env": {**env, "host": "h2"}, "run_id": "a"}) is None
    assert claims.why_not_this_run(T02, {**mine, "run_id": "a"}) is None  # a record without a host


def test_ladder_methods_in_lesson_order_on_a_cpu(tiny6):
    model, eos, prompt = tiny6
    methods = summary.ladder_methods(model, eos, compile_dynamic=True)
    assert list(methods) == ["naive loop", "KV cache", "static cache", "stop check a step late",
                             "generate()", "generate() static"]
    assert [m.notebook for m in methods.values()] == ["01", "02", "04", "07", "peer", "peer"]
    shown = summary.lessons(methods)
    assert list(shown["lesson"]) == ["01", "02", "04", "07", "peer", "peer"]
    assert all(len(w) <= 50 for w in summary.WHAT.values())  # pandas cuts a cell at 50


def test_measure_times_every_method_in_one_call_and_records_a_failure(tiny6):
    model, eos, prompt = tiny6
    methods = dict(list(summary.ladder_methods(model, eos, peers=["generate()"]).items())[:2])

    def broken(p, n):
        raise RuntimeError("no such kernel")

    methods["broken"] = bench.Method("99", broken)
    methods["generate()"] = summary.ladder_methods(model, eos, peers=["generate()"])["generate()"]
    table = summary.add_columns(results.table_frame(
        summary.measure(methods, prompt, [3], device="cpu", repeats=2)), {3: float("nan")})
    by = table.set_index("method")
    assert by.loc["broken", "status"] == "failed" and "no such kernel" in by.loc["broken", "error"]
    assert by.loc["naive loop", "speedup_vs_naive"] == pytest.approx(1.0)
    assert by.loc["KV cache", "repeats"] == 2 and by.loc["KV cache", "first_call_s"] > 0
    assert pd.notna(by.loc["KV cache", "speedup_vs_generate"])
    view = summary.view(table[table["status"] == "ok"])
    assert list(view["method"]) == ["naive loop", "KV cache", "generate()"]  # lesson order
    assert "÷ floor" not in view  # no floor on a CPU
    line = summary.one_line(table[table["status"] == "ok"], 3, judge=False)
    assert line.startswith("In one line:") and "not a measurement" in line
    # a rung of a lesson ahead: the fastest taught so far is named beside it
    ahead = table[table["status"] == "ok"].copy()
    ahead.loc[ahead["method"] == "KV cache", "notebook"] = "11"
    ahead.loc[ahead["method"] == "KV cache", "median_s"] = ahead["median_s"].min() / 2
    assert summary.fastest(ahead, 3)["method"] == "KV cache"
    assert summary.fastest(ahead, 3, taught=True)["method"] == "naive loop"
    line = summary.one_line(ahead, 3, judge=False)
    assert "lessons 01-07 reach" in line and "ms (naive loop)" in line and "ahead," in line \
        and "in lesson 11" in line
    assert line.startswith("In one line: per decode step (medians), lessons 01-07 reach ") \
        and "x the" not in line  # round 37: the naive loop's ms is the figure's line's
    assert "estimate" not in line and "\u2013" not in line  # the medians, no interval
    assert any("taught so far" in r for r in summary.reading(ahead, 3, judge=False))
    # too few rounds (2): the table's × columns are ratios of the medians shown, named so
    shown = view.set_index("method")
    medians = by.loc["naive loop", "median_s"] / by.loc["KV cache", "median_s"]
    assert by.loc["KV cache", "speedup_vs_naive"] == pytest.approx(medians)
    assert shown.loc["KV cache", "× naive (medians)"] == round(medians, 2)
    assert shown.loc["naive loop", "× generate() (medians)"] == round(
        by.loc["generate()", "median_s"] / by.loc["naive loop", "median_s"], 2)


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
    # notebook 11's Triton step runs on a CPU too (its kernels' PyTorch references)
    assert names == ["naive", "kv cache", "static cache", "interleaved (eager)", bench.TRITON_GRAPH,
                     "generate()", "generate() static"]


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
    assert "7/7 methods" in done.stdout  # notebook 11's Triton step runs on a CPU too


def test_the_ladder_table_shows_the_rounds_or_else_its_medians():
    """Round 35: the table showed the medians' 1.26x beside "1.08x by the rounds, the answer to
    quote": its × columns are the rounds' estimates where the rounds give one, else (no stored
    rounds) the ratio of its own ms column, and the header names which."""
    published = pd.read_csv(ROOT / "figures" / "data" / "08_results_summary.csv")
    floor_ms = float((published["per_step_s"] / published["floor_ratio"]).iloc[0] * 1e3)
    raw = published.drop(columns=[c for c in published if c.startswith("speedup_vs_")])
    view = summary.view(summary.add_columns(raw, {100: floor_ms})).set_index("method")
    for method in view.index:
        for column, other in (("× naive (rounds)", "naive loop"),
                              ("× generate() static (rounds)", "generate() static")):
            assert view.loc[method, column] == round(stats.row_speedup(
                raw, method, other, seq_len=100).estimate, 2)
    medians = raw.drop(columns="trials_wall_ms")
    view = summary.view(summary.add_columns(medians, {100: floor_ms})).set_index("method")
    ms = view["ms per step"]
    for method in view.index:
        for column, other in (("× naive (medians)", "naive loop"),
                              ("× generate() static (medians)", "generate() static")):
            assert view.loc[method, column] == pytest.approx(  # ms and ratio rounded to 0.01
                ms[other] / ms[method], rel=0.012, abs=0.006)
    # a rung slower than naive by its medians is below 1, not "1.00"
    naive = float(raw.loc[raw["method"] == "naive loop", "median_s"].iloc[0])
    slow = medians.assign(median_s=[1.12 * naive if m == "static cache" else v
                                    for m, v in zip(raw["method"], raw["median_s"])])
    slow_view = summary.view(summary.add_columns(slow, {100: floor_ms})).set_index("method")
    assert slow_view.loc["static cache", "× naive (medians)"] < 1 < slow_view.loc["KV cache", "× naive (medians)"]


def test_claim_static_names_the_lengths_timed_and_each_fragmentation_pair():
    table04 = pd.DataFrame(rows("dynamic", {100: 1.0, 200: 3.0}, frag={100: 20.0, 200: 25.0}) +
                           rows("static", {100: 1.2, 200: 2.5}, frag={100: 2.0, 200: 3.0}))
    result, evidence = verdicts([], {T04: table04})
    assert result[STATIC] == claims.REPRODUCED
    text = evidence[STATIC]
    assert ", 400 tokens not timed; peak fragmentation" in text  # on the claim's own line
    assert "100 tokens 1.20x slower (" in text and "200 tokens 1.20x faster (" in text
    assert "100 tokens 2.0% against 20.0% (lower), 200 tokens 3.0% against 25.0% (lower)" in text
    assert "borne out" not in text  # every part holds: no note on the parts
    # every length the article names was timed: nothing said about lengths left out
    full = pd.DataFrame(rows("dynamic", {100: 1.0, 200: 3.0, 400: 9.0}) +
                        rows("static", {100: 1.2, 200: 2.5, 400: 6.0}))
    assert "timed" not in verdicts([], {T04: full})[1][STATIC]
    # parts that disagree: "partly reproduced", each part named on the claim's own line
    mixed = pd.DataFrame(rows("dynamic", {100: 1.0, 200: 2.5}, frag={100: 20.0, 200: 25.0}) +
                         rows("static", {100: 1.2, 200: 3.0}, frag={100: 2.0, 200: 3.0}))
    frame = claims.check_claims(pd.DataFrame([]), {T04: mixed})
    assert dict(zip(frame["claim"], frame["verdict"]))[STATIC] == claims.PARTLY
    shown = claims.rows(frame)
    assert shown.loc["4", "verdict"] == claims.PARTLY
    assert list(shown.loc[["4a", "4b", "4c", "4d", "4e"], "claim"]) == [
        "slower at 100 tokens", "faster at 200 tokens", "lower fragmentation at 100 tokens",
        "lower fragmentation at 200 tokens", "faster at 400 tokens"]
    assert list(shown.loc[["4a", "4b", "4c", "4d", "4e"], "verdict"]) == [
        "borne out", "contradicted", "borne out", "borne out", ""]
    assert shown.loc["4a", "this run's number"].startswith("0.83x, i.e. 1.20x slower (")
    assert shown.loc["4c", "this run's number"] == "static 2.0% vs dynamic 20.0%"
    assert shown.loc["4e", "this run's number"] == "not timed"
    assert "1 partly reproduced" in claims.tally(frame)[0]
    # no part borne out: the weakest part's verdict, as before
    none = pd.DataFrame(rows("dynamic", {100: 1.2, 200: 2.5}, frag={100: 2.0, 200: 3.0}) +
                        rows("static", {100: 1.0, 200: 3.0}, frag={100: 20.0, 200: 25.0}))
    assert verdicts([], {T04: none})[0][STATIC] == claims.NOT_REPRODUCED
    # a smoke run names no parts (no verdict words)
    assert "borne out" not in verdicts([], {T04: mixed}, judge=False)[1][STATIC]


def test_claims_print_one_short_row_each():
    table01 = pd.DataFrame(rows("naive", {100: 1.0, 200: 2.0, 400: 4.0}))  # x2 per doubling
    table03 = pd.DataFrame(rows("default", {100: 1.0}, frag={100: 30.0}) +
                           rows("expandable_segments:True", {100: 1.0}, frag={100: 5.0}))
    frame = claims.check_claims(pd.DataFrame([]), {T01: table01, T03: table03},
                                why={T02: "not in this run's folder"})
    out = claims.rows(frame)
    assert list(out.index) == [str(i) for i in range(1, len(claims.CLAIMS) + 1)]
    assert list(out.columns) == ["claim", "from", "this run's number", "verdict"]
    assert out.loc["1", "from"] == "notebook 01" and out.loc["7", "from"] == "08's ladder"
    assert list(claims.table(frame).columns) == ["claim", "verdict"]  # shown; numbers under it
    assert out.loc["1"].tolist() == [QUAD, "notebook 01", "x2.00 per doubling, fitted over 100, 200 and 400 tokens "
                                     "(claim: x3.5 to x4.5)",  # round 28c: x2.00 said once
                                     claims.NOT_REPRODUCED]
    assert frame["detail"].iloc[0].startswith("naive loop's medians 100: 1000 ms")  # kept, saved
    assert out.loc["2", "this run's number"].startswith("needs notebook 02's table")
    assert out.loc["2", "verdict"] == claims.NOT_RUN
    assert out.loc["3", "this run's number"] == \
        "peak fragmentation, expandable vs default: 5.0% vs 30.0% at 100 tokens"
    assert all(len(c.split()) <= 12 for c in claims.CLAIMS)  # each claim short


def test_the_claims_table_reads_02_and_04_at_this_runs_lengths():
    # 02 at 30, 75 and 120 tokens; 04 at the article's 100, 200 and 400, no oversized arm
    table02 = pd.DataFrame(rows("naive", {30: 1.0, 75: 2.6, 120: 4.4}) +
                           rows("kv_cache", {30: 0.8, 75: 1.6, 120: 2.2}))
    table04 = pd.DataFrame(rows("dynamic", {100: 1.0, 200: 3.0, 400: 9.0},
                                frag={100: 20.0, 200: 25.0, 400: 30.0}) +
                           rows("static", {100: 1.2, 200: 2.5, 400: 9.0},
                                frag={100: 2.0, 200: 2.0, 400: 2.0}))
    frame = claims.check_claims(pd.DataFrame([]), {T02: table02, T04: table04})
    out = claims.rows(frame)
    assert out.loc["2", "verdict"] == claims.REPRODUCED  # 1.25x at 30 tokens, 2.0x at 120
    assert out.loc["2", "this run's number"].startswith("batch 32: 1.25x at 30 tokens, 2.00x at 120; the gain at 120 vs at 30: 1.60x larger (")
    assert out.loc["4", "this run's number"] == "" and out.loc["4a", "from"] == "notebook 04"
    assert out.loc["4", "verdict"] == claims.PARTLY
    parts = out.loc[[i for i in out.index if i.startswith("4") and i != "4"]]
    assert list(parts["claim"]) == ["slower at 100 tokens", "faster at 200 tokens",
                                    "faster at 400 tokens", "lower fragmentation at 100 tokens",
                                    "lower fragmentation at 200 tokens",
                                    "lower fragmentation at 400 tokens"]
    assert parts.loc["4c", "this run's number"].startswith("1.00x, can't tell apart on this machine (")
    assert parts.loc["4c", "verdict"] == claims.CANT_TELL  # one label throughout
    assert "not timed" not in " ".join(parts["this run's number"])
    assert all(len(c) <= 60 for c in out.loc[["4", *parts.index], "this run's number"])
    assert len(out.loc["2", "this run's number"]) <= 100  # the batch, two gains and their ratio's range


def test_a_cant_tell_interval_never_prints_a_bound_as_1_00():
    from helpers.course import stats
    assert claims.plain(stats.Ratio(0.98, 0.962, 1.003, 8)) == \
        "can't tell apart on this machine (0.962\u20131.003)"
    assert claims.plain(stats.Ratio(0.98, 0.90, 1.10, 8)) == \
        "can't tell apart on this machine (0.90\u20131.10)"
    assert claims.plain(stats.Ratio(1.2, 1.0004, 1.5, 8)).startswith("1.2000x faster (1.0004")
    assert claims.plain(stats.Ratio(0.98, 0.962, 1.003, 8), judge=False).endswith("not a measurement)")


def test_claim_interleave_prints_the_intervals_its_verdict_rests_on():
    sweep = compiled_sweep({1: (1.0, 0.8, 0.7), 32: (2.0, 1.6, 1.5)})
    result, evidence = verdicts([], {T07: sweep})
    assert result[INTERLEAVE] == claims.CANT_TELL  # the same 1.25x gain at both batch sizes
    assert "the gain of two streams at batch 1 against batch 32's: 1.00x, can't tell apart on this machine (" \
        in evidence[INTERLEAVE]
    assert "1.25x at batch 1, 1.25x at batch 32 (estimates from the rounds)" in evidence[INTERLEAVE]
    assert "08's ladder" not in evidence[INTERLEAVE]  # no ladder: nothing to set beside it
    # batch 1's gain clearly below batch 32's: a gain against a gain is "smaller", never "slower"
    result, evidence = verdicts([], {T07: compiled_sweep({1: (1.0, 0.95, 0.9), 32: (2.0, 1.4, 1.3)})})
    assert result[INTERLEAVE] == claims.NOT_REPRODUCED
    assert "against batch 32's: 1.3" in evidence[INTERLEAVE] and "x smaller (" in evidence[INTERLEAVE]
    assert "slower" not in evidence[INTERLEAVE].split("streams over")[0]
    # 08's ladder at batch 32: the same two loops, from its own rounds, named beside 07's
    ladder = rows(claims.STATIC_COMPILED, {100: 1.5}) + rows(claims.LATE, {100: 1.25})
    evidence = verdicts(ladder, {T07: sweep})[1][INTERLEAVE]
    assert ("08's ladder times the same two loops (static cache, compiled -> stop check a step "
            "late) at batch 32 in its own rounds: 1.20x (estimate from the rounds)") in evidence
    # the ladder's medians far from its rounds' estimate are named beside it
    trials = {claims.STATIC_COMPILED: [1.5, 1.5, 1.5, 1.9, 1.9], claims.LATE: [1.0, 1.0, 1.3, 1.3, 1.3]}
    noisy = [dict(r, trials_wall_ms=" ".join(f"{t * 100:.1f}" for t in trials[r["method"]]),
                  median_s=0.1 * sorted(trials[r["method"]])[2])
             if r["method"] in trials else r for r in ladder]
    evidence = verdicts(noisy, {T07: sweep})[1][INTERLEAVE]
    assert "(estimate from the rounds; the ladder's medians give 1.15x)" in evidence


def _budget(**idle_pct):
    """A budget of 10 ms steps with the given idle shares (%), labelled as summary.labels does."""
    return pd.DataFrame([{"method": name, "wall_ms": 10.0, "gpu_ms": 10.0 - pct / 10,
                          "idle_ms": pct / 10, "floor_ms": 0.2} for name, pct in idle_pct.items()])


def test_claim_five_x_names_its_baseline_and_the_kv_cache_ratio():
    ladder = (rows("naive loop", {100: 12.0}) + rows("KV cache", {100: 4.0}) +
              rows("stop check a step late", {100: 2.5}))
    text = verdicts(ladder)[1][FIVE]
    assert "over the article's baseline, the naive loop (no cache, notebook 01): 4.8" in text
    assert "; for context, over the KV-cache loop (02), not the article's baseline: 1.6" in text
    row = claims.rows(claims.check_claims(pd.DataFrame(ladder), {})).loc["7"]
    # one verdict, over its baseline; the KV-cache ratio is saved, not printed
    assert row["this run's number"].startswith("over the naive loop: 4.8")
    assert row["verdict"] == claims.REPRODUCED and "KV-cache" not in row.to_string()
    assert row["this run's number"].endswith("; reproduced: the range's lower end is between 4x and 6x")


def test_claim_five_x_reproduced_above_six_while_its_range_starts_in_four_to_six(monkeypatch):
    """The 23:18 run: "6.20x faster (5.58–6.88)" reproduced, by the rule its cell states (the
    range starts between 4x and 6x); a range starting above 6x is "exceeded", one ending below
    4x "not reproduced", one straddling 4x "can't tell"."""
    ladder = pd.DataFrame(rows("naive loop", {100: 6.2}) + rows("stop check a step late",
                                                                  {100: 1.0}))
    from helpers.course import stats
    for (low, high), want in (((5.58, 6.88), claims.REPRODUCED), ((6.1, 6.9), claims.EXCEEDED),
                              ((3.0, 3.9), claims.NOT_REPRODUCED), ((3.8, 4.6), claims.CANT_TELL)):
        ratio = stats.Ratio((low + high) / 2, low, high, 8)
        monkeypatch.setattr(stats, "row_speedup", lambda *a, r=ratio, **k: r)
        verdict, *text = claims.claim_five_x(claims.Context(ladder, {}))
        assert verdict == want, (low, high)
        assert text[-1].endswith({  # round 25: the line gives the rule that decided
            claims.REPRODUCED: "; reproduced: the range's lower end is between 4x and 6x, its "
                               "upper end above 6x: on the edge of exceeded",  # round 27
            claims.EXCEEDED: "; exceeded: the whole range lies above 6x",
            claims.NOT_REPRODUCED: "; not reproduced: the whole range lies below 4x",
            claims.CANT_TELL: "; can't tell: the range runs across 4x"}[want]), text[-1]


def test_the_claims_table_shows_every_number_cell_whole():
    """The 23:18 run cut "(0.997–1.3..." under the default width: WIDE cuts no cell. The 05:14
    review found claim 7's 8.47x beside the table's 8.81x with no note: the cells keep their
    "the table's medians" notes, as every printed line does."""
    frame = pd.DataFrame([{"claim": "c", "verdict": claims.CANT_TELL, "note": "", "number":
                           "gain: 1.14x, can't tell apart on this machine (0.997–1.306; the "
                           "table's medians: 1.091x faster)", "parts": json.dumps([[
                               "p", "1.19x, can't tell apart on this machine (0.999–1.405; "
                               "the table's medians: 1.301x faster)", "can't tell"]])}])
    shown = claims.rows(frame)
    assert shown.loc["1", "this run's number"] == ""  # a claim of parts: its parts' numbers
    assert shown.loc["1a", "this run's number"].endswith("; the table's medians: 1.301x faster)")
    printed = "\n".join(claims.numbers(frame))  # the numbers, printed under the table, wrapped
    assert "..." not in printed and "1.301x faster)" in printed.replace("\n   ", " ")
    alone = claims.rows(frame.assign(parts=""))
    assert alone.loc["1", "this run's number"].endswith("(0.997–1.306; the table's medians: 1.091x faster)")
    assert claims.notes(frame) == []


def test_a_gain_against_a_gain_says_larger_or_smaller_in_its_medians_note_too():
    from helpers.course import stats
    ratio = stats.Ratio(0.99, 0.79, 1.23, 8)
    said = claims._larger(stats.plain(ratio, medians=0.93), ratio)
    assert "faster" not in said and "slower" not in said and "i.e. 1.08x smaller)" in said


def test_claim_kv_gain_says_larger_or_smaller_in_its_evidence_as_in_its_number():
    """Pre-flight on the 05:14 tables: the evidence read "the table's medians: 0.93x, i.e. 1.07x
    slower" for a gain against a gain while the table's number read "smaller"."""
    shrinking = pd.DataFrame(rows("naive", {30: 1.0, 120: 4.0}) + rows("kv_cache", {30: 0.5, 120: 3.0}))
    growing = pd.DataFrame(rows("naive", {30: 1.0, 120: 4.0}) + rows("kv_cache", {30: 0.5, 120: 1.0}))
    for table02, word in ((shrinking, "smaller"), (growing, "larger")):
        frame = claims.check_claims(pd.DataFrame([]), {T02: table02}).set_index("claim")
        evidence, number = frame.loc[KV, "evidence"], frame.loc[KV, "number"]
        assert word in evidence and word in number
        gain = evidence.split("the gain at")[1]
        assert "faster" not in gain and "slower" not in gain


def test_one_rule_combines_a_claims_parts():
    """The 05:14 review: claim 6 (can't tell, borne out) read "can't tell" while claim 4 (borne
    out, not borne out) read "partly": one rule now, as 08 states it."""
    R, N, C = claims.REPRODUCED, claims.NOT_REPRODUCED, claims.CANT_TELL
    assert claims._overall([R, R]) == R
    assert claims._overall([C, R]) == claims._overall([R, N]) == claims._overall([R, C, N]) \
        == claims.PARTLY
    assert claims._overall([C, N]) == N and claims._overall([C, C]) == C


def test_compiling_alone_names_the_gpu_work_where_it_fell():
    budget = pd.DataFrame({"method": ["KV cache (02)", "KV cache, compiled (05)"],
                           "wall_ms": [6.97, 3.57], "gpu_ms": [1.56, 1.13],
                           "idle_ms": [5.41, 2.44], "floor_ms": [0.22, 0.22]}).set_index("method")
    names = {claims.KV: "KV cache (02)", claims.KV_COMPILED: "KV cache, compiled (05)"}
    assert summary._no_graphs(budget, names).endswith(  # round 28c: the wall clocks are the table's
        "per step: the GPU's idle time 5.41 -> 2.44 ms, its work 1.56 -> 1.13 ms. ")
    assert "6.97" not in summary._no_graphs(budget, names)
    # the 10:50 review: "CUDA graphs remove most of the host's work compiling leaves" was never
    # shown; where the graphs' rung is in the ladder, its idle time stands beside compiling alone's
    graphs = pd.concat([budget, pd.DataFrame({"wall_ms": [1.85], "gpu_ms": [1.12]},
                                             index=["static cache, compiled (05)"])])
    names[claims.STATIC_COMPILED] = "static cache, compiled (05)"
    assert summary._no_graphs(graphs, names).endswith(
        "its work 1.56 -> 1.13 ms. With CUDA graphs as well (static cache, compiled, 05), the idle "
        "time is 0.73 ms, less still. ")
    more = budget.assign(gpu_ms=[1.56, 1.60])
    assert "its work 1.56 -> 1.60 ms" in summary._no_graphs(more, names)


def test_compile_gap_prints_a_short_line_per_rung():
    """The 06:54 review: one printed paragraph of ~150 words; now one line each (KV cache,
    static cache, compiling alone)."""
    budget = pd.DataFrame({"method": ["naive loop (01)", "KV cache (02)", "static cache (04)",
                                      "KV cache, compiled (05)"],
                           "wall_ms": [8.67, 6.62, 8.15, 4.24], "gpu_ms": [5.67, 1.55, 1.58, 1.13],
                           "floor_ms": [0.22] * 4})
    names = {claims.NAIVE: "naive loop (01)", claims.KV: "KV cache (02)",
             claims.STATIC: "static cache (04)", claims.KV_COMPILED: "KV cache, compiled (05)"}
    lines = summary.compile_gap(budget, names).split("\n")
    assert [line[:18] for line in lines] == ["The static cache (", "Compiling alone, w"]
    assert "1.55 -> 1.13 ms" in lines[1]
    fast = budget.assign(wall_ms=[8.67, 6.62, 6.0, 4.24])  # static no slower: one line
    assert len(summary.compile_gap(fast, names).split("\n")) == 1
    assert summary.compile_gap(budget.assign(gpu_ms=float("nan")), names) == ""


def test_a_cant_tell_part_states_its_estimate_on_the_ranges_scale():
    """The 06:54 review: 4b read "1.07x slower, can't tell apart on this machine (0.85–1.05)",
    an estimate flipped to "slower" beside a range left on the speedup scale."""
    from helpers.course import stats
    for ratio, start in ((stats.Ratio(0.935, 0.85, 1.05, 8), "0.94x, i.e. 1.06x slower, can't"),
                         (stats.Ratio(1.06, 0.94, 1.17, 8), "1.06x faster, can't"),
                         (stats.Ratio(0.998, 0.9, 1.1, 8), "1.00x, can't")):
        said = claims._estimated(stats.plain(ratio), ratio)
        assert said.startswith(start), said
        point = float(said.split("x")[0])
        low, high = (float(b) for b in said.split("(")[1].rstrip(")").split("\u2013"))
        assert low <= point <= high
    clear = stats.Ratio(0.85, 0.80, 0.90, 8)  # a clear verdict keeps plain's own line
    assert claims._estimated(stats.plain(clear), clear) == stats.plain(clear)
    smaller = claims._larger(stats.plain(stats.Ratio(0.9, 0.8, 1.1, 8)), stats.Ratio(0.9, 0.8, 1.1, 8))
    assert smaller.startswith("0.90x, i.e. 1.11x smaller, can't tell apart")


def test_a_cached_eager_rung_no_faster_than_the_one_before_names_its_host_time():
    budget = pd.DataFrame({"method": ["naive loop (01)", "KV cache (02)", "static cache (04)"],
                           "wall_ms": [8.67, 6.49, 8.73], "gpu_ms": [5.68, 1.56, 1.58],
                           "floor_ms": [0.22] * 3}).set_index("method")
    names = {claims.NAIVE: "naive loop (01)", claims.KV: "KV cache (02)",
             claims.STATIC: "static cache (04)"}
    assert summary._eager_cache(budget, names) == (  # round 28c: 8.73 and 6.49 are the table's
        "The static cache (04) is 1.35x slower than the KV cache (02) by the medians, with GPU "
        "work of 1.58 against 1.56 ms per step, so most of the 2.24 ms it adds "
        "is the host's (this notebook's one call; notebook 04 times the pair over its own "
        "rounds). ")
    # the 10:50 review: 0.19 of 0.98 ms more GPU work read "the extra time is the host's"
    workshop = budget.assign(wall_ms=[6.37, 6.06, 7.04], gpu_ms=[2.15, 1.19, 1.38])
    assert ", so most of the 0.98 ms it adds is the host's (" in summary._eager_cache(workshop, names)
    less = budget.assign(gpu_ms=[5.68, 1.56, 1.50])  # the GPU's work did not grow: all the host's
    assert ", so the 2.24 ms it adds is the host's (" in summary._eager_cache(less, names)
    gpu = budget.assign(gpu_ms=[5.68, 1.56, 4.0])  # the GPU's work grew as much: no host reading
    assert "host's" not in summary._eager_cache(gpu, names)
    assert summary._eager_cache(budget.assign(wall_ms=[8.67, 6.49, 6.0]), names) == ""
    same = summary._eager_cache(budget.assign(wall_ms=[8.67, 6.49, 6.49]), names)
    assert same.startswith("The static cache (04) takes as long as the KV cache (02) by the medians")
    assert "no faster" not in summary._eager_cache(budget, names) + same


def test_generate_note_prints_the_rounds_interval():
    def table(spread):
        def step(ms, phase):
            return " ".join(f"{ms * 100 * (1 + spread * math.sin(1.3 * i + phase)):.4f}"
                            for i in range(6))
        return pd.DataFrame([{"method": m, "seq_len": 100, "status": "ok", "per_step_s": ms / 1e3,
                              "median_s": ms / 10, "trials_wall_ms": step(ms, phase)}
                             for m, ms, phase in ((claims.KV, 7.14, 0), ("generate()", 6.16, 2))])
    assert summary._generate_note(table(0.01), 100).startswith(
        "generate() (6.16 ms per step) beats the course's own KV-cache loop (7.14 ms, lesson 02): "
        "1.1")
    note = summary._generate_note(table(0.3), 100)
    assert note.startswith("generate() and the course's KV-cache loop (lesson 02): 6.16 against "
                           "7.14 ms per step by the medians; by the rounds, can't tell apart on "
                           "this machine (")  # round 35: its range; round 29: nothing attributed
    assert "rounds can't tell" not in note


def test_claim_2s_cell_names_what_its_interval_is_the_range_of():
    # 08's 09:46 run printed "1.21x at 30 tokens, 1.20x at 120: can't tell apart on this machine
    # (0.89–1.10)": an interval holding neither gain. It is the ratio of the two gains: say so.
    table02 = pd.DataFrame(rows("naive", {30: 1.0, 120: 4.4}) +
                           rows("kv_cache", {30: 0.8, 120: 3.52}))
    out = claims.rows(claims.check_claims(pd.DataFrame([]), {T02: table02}))
    cell = out.loc["2", "this run's number"]
    assert out.loc["2", "verdict"] == claims.CANT_TELL, cell
    assert re.search(r"at 120; the gain at 120 vs at 30: \d\.\d\dx, can't tell apart on this "
                     r"machine \(", cell), cell  # round 32: the ratio the range bounds, first


DATA = ROOT / "tests" / "data"


def _run_tables(run):
    """08's ladder and the claims' tables of a real run: "6bba703-workshop" (the round-22
    students' copies), "published" (figures/data), or a commit's 08 ladder alone."""
    if run == "published":
        read = lambda name: pd.read_csv(ROOT / "figures" / "data" / f"{name}.csv")  # noqa: E731
    elif run.endswith("workshop"):
        read = lambda name: pd.read_csv(DATA / f"{name}-{run}.csv")  # noqa: E731
    else:
        return pd.read_csv(DATA / f"08_results_summary-{run}.csv"), {}
    return read("08_results_summary"), {name: read(name) for name in claims.TABLES.values()}


@pytest.mark.parametrize("run,estimate,medians", [
    ("6bba703-workshop", "6.25x faster (5.82–6.84)", "6.16"), ("1c698c0", "6.37x faster", "6.28"),
    ("f4bf2b7", "9.97x faster (8.82–11.11)", "9.71"),
    ("8973374", "7.15x faster (6.55–8.25)", "6.73"), ("90c3788", "8.47x faster", "8.81"),
    ("eb4fe0c", "6.55x faster", "6.48")])
def test_claim_7_says_why_its_number_differs_from_the_tables(run, estimate, medians):
    """Round 22: claim 7 read 6.25x beside the table's 6.16x with nothing to say why. Round 23:
    the lesson says once (its Measure text) that a printed speed-up is from the rounds and the
    table's × columns divide medians, so claim 7's line names its own number only."""
    ladder, _ = _run_tables(run)
    verdict, *_, number = claims.claim_five_x(claims.Context(ladder, {}))
    late = summary.view(ladder).set_index("method").loc[claims.LATE, "× naive (rounds)"]
    assert f"{late:.2f}x" == estimate.split()[0]  # round 35: the table shows the rounds' number
    assert number.startswith(f"over the naive loop: {estimate}"), number
    assert re.sub(r", its upper end above 6x: on the edge of exceeded$", "", number).endswith({
        claims.REPRODUCED: "; reproduced: the range's lower end is between 4x and 6x",  # round 25
        claims.EXCEEDED: "; exceeded: the whole range lies above 6x"}[verdict]), number
    assert "medians" not in number and "from the rounds" not in number  # said once, in Measure


def test_claim_5_names_the_setting_that_leaves_it_out():
    """Round 22: the workshop's claim 5 read "needs the full preset's sizes" while a setting,
    compile_dynamic (False there), leaves its rung out."""
    ladder, tables = _run_tables("6bba703-workshop")
    for setting in (False, None):  # from the parameter, or read off the ladder's rungs
        frame = claims.check_claims(ladder, tables, preset="workshop", compile_dynamic=setting)
        row = frame.set_index("claim").loc[COMPILE]
        assert row["verdict"] == claims.SETTING == "needs compile_dynamic = True"
        assert row["number"].endswith("compile_dynamic is False in this run (True in the full "
                                      "preset)"), row["number"]
    assert claims.tally(frame)[0] == (
        "Judged from this run's own tables: 4 of 7 claims: 2 reproduced, 1 not reproduced, 1 can't "
        "tell apart on this machine; 2 need the full preset's sizes; 1 needs compile_dynamic = "
        "True.")
    ladder, tables = _run_tables("published")
    frame = claims.check_claims(ladder, tables, compile_dynamic=True)
    assert frame.set_index("claim").loc[COMPILE, "verdict"] == claims.REPRODUCED


@pytest.mark.parametrize("run", ["6bba703-workshop", "published"])
def test_the_claims_print_narrow_and_whole_on_real_tables(run):
    """Round 22: the claims table was about 250 characters wide. The table holds the claim and
    its verdict; each number is printed under it, wrapped, never cut."""
    ladder, tables = _run_tables(run)
    frame = claims.check_claims(ladder, tables, preset="workshop" if "workshop" in run else "full")
    with pd.option_context(*summary.WIDE):
        shown = repr(claims.table(frame))
    assert max(map(len, shown.split("\n"))) <= 110 and "..." not in shown
    printed = claims.numbers(frame)
    assert all(len(line) <= 100 for text in printed for line in text.split("\n"))
    joined = " ".join(t.replace("\n   ", " ") for t in printed)
    for label, row in claims.rows(frame).iterrows():
        number = row["this run's number"]
        if number:
            assert f"{label:<3}({row['from']}) {number}" in joined, label

