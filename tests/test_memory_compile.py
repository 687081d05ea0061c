"""Notebooks 03-05 on the CPU: allocator settings, the static cache, the compiled step, and
their parameters. GPU-only paths (CUDA graphs, the allocator read-back) are checked for their
refusals here and run on the GPU by the notebooks."""
import functools
import os
import subprocess
import sys

import pytest
import torch
from transformers import DynamicCache

from helpers import allocator, static
from helpers.generation import (assert_same_tokens, decode_one_token, generate_kv_cache,
                                uniform_stop_lengths)
from helpers.course.errors import ParameterError
from helpers.model import make_prompt
from helpers.course.presets import resolve_params


# --- allocator settings (notebook 03) ---------------------------------------------------------

@pytest.mark.parametrize("conf, expected", [
    ("default", {}),
    ("", {}),
    ("expandable_segments:True", {"expandable_segments": True}),
    (" expandable_segments : False ", {"expandable_segments": False}),
    ("expandable_segments:True,max_split_size_mb:128",
     {"expandable_segments": True, "max_split_size_mb": 128}),
    ("garbage_collection_threshold:0.6,roundup_power2_divisions:4",
     {"garbage_collection_threshold": 0.6, "roundup_power2_divisions": 4}),
    ("backend:cudaMallocAsync", {"backend": "cudaMallocAsync"}),
])
def test_parse_alloc_conf_accepts(conf, expected):
    assert allocator.parse_alloc_conf(conf) == expected


@pytest.mark.parametrize("conf, message", [
    ("expandable_segments:yes", "expandable_segments must be True or False, got 'yes'"),
    ("expandable_segments:true", "must be True or False"),
    ("expandible_segments:True", "Did you mean 'expandable_segments'"),
    ("foo:1", "unknown key 'foo'"),
    ("expandable_segments", "is not 'key:value'"),
    ("expandable_segments:", "is not 'key:value'"),
    ("max_split_size_mb:20", "max_split_size_mb must be an integer > 20"),
    ("max_split_size_mb:lots", "max_split_size_mb must be an integer > 20"),
    ("garbage_collection_threshold:1.5", "strictly between 0 and 1"),
    ("roundup_power2_divisions:3", "a power of two"),
    ("backend:magic", "native or cudaMallocAsync"),
    ("expandable_segments:True,expandable_segments:False", "given twice"),
    ("backend:cudaMallocAsync,expandable_segments:True", "only with the native backend"),
    (42, "must be a string"),
])
def test_parse_alloc_conf_refuses_with_what_is_allowed(conf, message):
    with pytest.raises(ParameterError, match=None) as info:
        allocator.parse_alloc_conf(conf)
    assert message in str(info.value)
    if isinstance(conf, str) and "key" in message:
        assert "expandable_segments (True or False)" in str(info.value)


def test_labels_and_canonical_form():
    assert allocator.label("default") == "default"
    assert allocator.label(" expandable_segments : True ") == "expandable_segments:True"
    assert allocator.validate_alloc_confs("x", ["default", "expandable_segments:True"]) == [
        "default", "expandable_segments:True"]
    with pytest.raises(ParameterError, match="twice"):
        allocator.validate_alloc_confs("x", ["default", ""])
    with pytest.raises(ParameterError, match="non-empty list"):
        allocator.validate_alloc_confs("x", [])


def test_alloc_env_sets_both_names_or_none():
    base = {"PATH": "/bin", "PYTORCH_ALLOC_CONF": "stale", "PYTORCH_CUDA_ALLOC_CONF": "stale"}
    env = allocator.alloc_env("expandable_segments:True", base)
    assert env["PYTORCH_ALLOC_CONF"] == env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert env["PATH"] == "/bin" and base["PYTORCH_ALLOC_CONF"] == "stale"
    env = allocator.alloc_env("default", base)
    assert "PYTORCH_ALLOC_CONF" not in env and "PYTORCH_CUDA_ALLOC_CONF" not in env
    with pytest.raises(ParameterError):
        allocator.alloc_env("expandable_segments:maybe", base)


def test_presets_validate_allocator_confs_before_gpu_work():
    params = resolve_params("03", "smoke")
    assert params.allocator_confs == ["default", "expandable_segments:True"]
    with pytest.raises(ParameterError, match="unknown key"):
        resolve_params("03", "smoke", allocator_confs=["default", "expandible_segments:True"])
    with pytest.raises(ParameterError, match="must be True or False"):
        resolve_params("03", "smoke", allocator_confs=["expandable_segments:1"])


def test_child_process_reads_the_setting_from_its_environment():
    """The variable reaches a fresh process before torch starts (what the GPU run relies on)."""
    code = "import os, torch; print(os.environ.get('PYTORCH_ALLOC_CONF'))"
    out = subprocess.run([sys.executable, "-c", code], env=allocator.alloc_env("expandable_segments:True"),
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "expandable_segments:True"


def test_run_in_subprocess_on_cpu(tiny):
    spec = dict(model="tiny", device="cpu", batch_size=2, seq_lens=[3, 5], prompt_len=4,
                repeats=1, warmup=0, seed=0, history_len=0)
    result = allocator.run_in_subprocess("expandable_segments:True", spec, echo=False)
    assert [r["seq_len"] for r in result["rows"]] == [3, 5]
    assert {r["method"] for r in result["rows"]} == {"expandable_segments:True"}
    assert result["effective"]["env"]["PYTORCH_ALLOC_CONF"] == "expandable_segments:True"
    model, _, eos = tiny
    prompt = make_prompt(2, 4, model.config.vocab_size, eos, "cpu", seed=0)
    assert result["rows"][1]["tokens_checksum"] == int(generate_kv_cache(model, prompt, 5, eos).sum())


def test_settings_run_one_after_another_on_cpu():
    """Gated children (each next one loading while the previous one measures) measure every
    setting, in the order asked, with the same tokens."""
    spec = dict(model="tiny", device="cpu", batch_size=2, seq_lens=[3], prompt_len=4,
                repeats=1, warmup=0, seed=0, history_len=0)
    confs = ["default", "expandable_segments:True"]
    results = allocator.run_one_after_another(confs, spec, echo=False)
    assert list(results) == confs
    assert [results[c]["rows"][0]["method"] for c in confs] == confs
    assert results[confs[0]]["rows"][0]["tokens_checksum"] == results[confs[1]]["rows"][0]["tokens_checksum"]


def test_a_gated_child_that_dies_while_loading_is_reported():
    with pytest.raises(RuntimeError, match="child failed"):
        allocator.run_one_after_another(["default"], {"model": "no-such-model", "device": "cpu",
                                                      "batch_size": 1, "prompt_len": 1, "seed": 0},
                                        echo=False)


def test_run_in_subprocess_refuses_bad_setting_before_starting():
    with pytest.raises(ParameterError, match="unknown key"):
        allocator.run_in_subprocess("expandible_segments:True", {"device": "cpu"})


def test_run_in_subprocess_reports_a_failing_child():
    spec = dict(model="no-such-model", device="cpu", batch_size=1, seq_lens=[2], prompt_len=2,
                repeats=1, warmup=0, seed=0, history_len=0)
    with pytest.raises(RuntimeError, match="child failed"):
        allocator.run_in_subprocess("default", spec, echo=False)


@pytest.mark.parametrize("conf, effective, message", [
    ("expandable_segments:True", {"expandable_in_effect": False, "backend": "native"}, "ignored"),
    ("default", {"expandable_in_effect": True, "backend": "native"}, "are expandable"),
    ("expandable_segments:True", {"expandable_in_effect": None, "backend": "native"}, "cannot confirm"),
    ("backend:cudaMallocAsync", {"expandable_in_effect": False, "backend": "native"}, "backend"),
])
def test_verify_in_effect_refuses_a_setting_that_did_not_take(conf, effective, message):
    with pytest.raises(RuntimeError, match=message):
        allocator.verify_in_effect(conf, {"torch": "x", "env": {}, **effective})


def test_verify_in_effect_accepts_a_matching_setting():
    allocator.verify_in_effect("expandable_segments:True",
                               {"expandable_in_effect": True, "backend": "native"})
    allocator.verify_in_effect("default", {"expandable_in_effect": False, "backend": "native"})


def test_replay_trace_and_step_peaks():
    trace = [
        {"action": "segment_alloc", "size": 100, "time_us": 5},
        {"action": "alloc", "size": 40, "time_us": 6},
        {"action": "alloc", "size": 30, "time_us": 12},
        {"action": "free_requested", "size": 40, "time_us": 13},
        {"action": "free_completed", "size": 40, "time_us": 13},
        {"action": "segment_map", "size": 50, "time_us": 21},
        {"action": "segment_unmap", "size": 50, "time_us": 22},
        {"action": "segment_free", "size": 100},
    ]
    events = allocator.replay_trace(trace, allocated0=10, reserved0=20, step_times_us=[4, 10, 20])
    assert [(e["allocated"], e["reserved"]) for e in events] == [
        (10, 120), (50, 120), (80, 120), (40, 120), (40, 170), (40, 120), (40, 20)]
    assert [e["step"] for e in events] == [0, 0, 1, 1, 2, 2, None]
    peaks = allocator.per_step_peaks(events, 3)
    assert peaks == [{"step": 0, "allocated_peak": 50, "reserved_peak": 120},
                     {"step": 1, "allocated_peak": 80, "reserved_peak": 120},
                     {"step": 2, "allocated_peak": 40, "reserved_peak": 170}]


# --- the static cache (notebook 04) ------------------------------------------------------------

@pytest.mark.parametrize("new_tokens", [1, 2, 9])
def test_static_cache_matches_kv_cache(tiny, new_tokens):
    model, prompt, eos = tiny
    assert_same_tokens(generate_kv_cache(model, prompt, new_tokens, eos),
                       static.generate_static_cache(model, prompt, new_tokens, eos), "static")


def test_static_cache_reused_longer_and_with_stops(tiny):
    model, prompt, eos = tiny
    cache = static.make_static_cache(model, prompt.shape[0], 64, "cpu")
    keys = cache.layers[0].keys
    stops = uniform_stop_lengths(prompt.shape[0], 1, 7, seed=3)
    for stop_lengths in (None, stops, None):
        assert_same_tokens(generate_kv_cache(model, prompt, 8, eos, stop_lengths),
                           static.generate_static_cache(model, prompt, 8, eos, stop_lengths, cache=cache))
    assert cache.layers[0].keys is keys and keys.shape[2] == 64
    out = static.generate_static_cache(model, prompt, 8, eos, stops, cache=cache)
    assert out.shape[1] == prompt.shape[1] + int(stops.max())  # stops when every row finished


def test_static_cache_too_small_is_refused(tiny):
    model, prompt, eos = tiny
    cache = static.make_static_cache(model, prompt.shape[0], prompt.shape[1] + 3, "cpu")
    with pytest.raises(ValueError, match="needs prompt \\+ new tokens = 9"):
        static.generate_static_cache(model, prompt, 5, eos, cache=cache)
    with pytest.raises(ValueError, match="holds 7 positions"):
        static.generate_static_compiled(model, prompt, 5, eos, step=lambda t, c: None, cache=cache)


def test_attention_work_counts():
    work = static.attention_work(prompt_len=2, new_tokens=3, max_cache_len=6)
    # prefill: causal 1+2 = 3 useful, dynamic 4, static 2*6; decode: keys 3 and 4
    assert work["useful_pairs"] == 3 + 3 + 4
    assert work["dynamic_pairs"] == 4 + 3 + 4
    assert work["static_pairs"] == (2 + 2) * 6
    assert work["static_over_useful"] == pytest.approx(24 / 10)
    with pytest.raises(ValueError, match="cannot hold"):
        static.attention_work(prompt_len=4, new_tokens=10, max_cache_len=8)


def test_04_preset_has_no_oversized_cache():
    assert not hasattr(resolve_params("04", "smoke"), "oversize_cache_len")


# --- the compiled step (notebook 05) -----------------------------------------------------------

def test_compile_modes_validated():
    assert resolve_params("05", "smoke").compile_modes == ["default", "reduce-overhead"]
    with pytest.raises(ParameterError, match="compile_modes must be a non-empty list"):
        resolve_params("05", "smoke", compile_modes=["max-autotune"])
    with pytest.raises(ParameterError, match="distinct"):
        resolve_params("05", "smoke", compile_modes=["default", "default"])
    with pytest.raises(ValueError, match="compile mode must be one of"):
        static.compiled_step(torch.nn.Identity(), "max-autotune")


def test_generate_static_compiled_needs_a_step(tiny):
    model, prompt, eos = tiny
    with pytest.raises(ValueError, match="pass step=compiled_step"):
        static.generate_static_compiled(model, prompt, 3, eos)


def test_generate_static_compiled_with_an_eager_step(tiny):
    """The loop itself, with the uncompiled step, is the static-cache loop."""
    model, prompt, eos = tiny
    eager_step = functools.partial(decode_one_token, model)
    stops = uniform_stop_lengths(prompt.shape[0], 1, 6, seed=5)
    for stop_lengths in (None, stops):
        assert_same_tokens(generate_kv_cache(model, prompt, 6, eos, stop_lengths),
                           static.generate_static_compiled(model, prompt, 6, eos, stop_lengths,
                                                           step=eager_step))


@pytest.mark.skipif(os.environ.get("COURSE_SKIP_COMPILE") == "1", reason="COURSE_SKIP_COMPILE=1")
def test_compiled_step_default_mode_same_tokens_no_recompiles(tiny):
    """torch.compile (default mode, inductor on the CPU): identical tokens, one graph per cache
    length, nothing compiled on later calls, no graph breaks."""
    model, prompt, eos = tiny
    step = static.compiled_step(model, "default")
    cache = static.make_static_cache(model, prompt.shape[0], prompt.shape[1] + 6, "cpu")
    before = static.compile_counters()
    out = static.generate_static_compiled(model, prompt, 6, eos, step=step, cache=cache)
    first = static.counters_delta(before, static.compile_counters())
    assert first["graphs_compiled"] == 1 and first["graph_breaks"] == 0
    # Inductor looked its one graph up in its cache on disk: found (warm) or not (cold)
    assert first["fx_cache_hits"] + first["fx_cache_misses"] == 1, first
    assert_same_tokens(generate_kv_cache(model, prompt, 6, eos), out, "compiled")
    middle = static.compile_counters()
    stops = uniform_stop_lengths(prompt.shape[0], 1, 6, seed=2)
    assert_same_tokens(generate_kv_cache(model, prompt, 6, eos, stops),
                       static.generate_static_compiled(model, prompt, 6, eos, stops, step=step,
                                                       cache=cache))
    other = static.make_static_cache(model, prompt.shape[0], prompt.shape[1] + 6, "cpu")
    static.generate_static_compiled(model, prompt, 6, eos, step=step, cache=other)
    assert static.counters_delta(middle, static.compile_counters())["graphs_compiled"] == 0


def test_sdpa_calls_record_keys_and_mask(tiny):
    model, prompt, _ = tiny
    original = torch.nn.functional.scaled_dot_product_attention
    with torch.no_grad():
        with static.sdpa_calls() as dynamic_calls:
            cache = DynamicCache(config=model.config)
            model(prompt, past_key_values=cache, use_cache=True)
            model(prompt[:, :1], past_key_values=cache, use_cache=True)
        with static.sdpa_calls() as static_calls:
            cache = static.make_static_cache(model, prompt.shape[0], 16, "cpu")
            model(prompt, past_key_values=cache, use_cache=True)
            model(prompt[:, :1], past_key_values=cache, use_cache=True)
    assert torch.nn.functional.scaled_dot_product_attention is original
    layers = model.config.n_layer
    assert len(dynamic_calls) == len(static_calls) == 2 * layers
    assert dynamic_calls[-1] == {"queries": 1, "keys": prompt.shape[1] + 1, "mask": False}
    assert static_calls[-1] == {"queries": 1, "keys": 16, "mask": True}


def test_own_code_gives_each_mode_its_own_code_object():
    """Dynamo caches graphs per code object: one copy per mode, the same copy for the same mode,
    and the copy computes what the original does."""
    default = static.own_code(decode_one_token, "default")
    graphs = static.own_code(decode_one_token, "reduce-overhead")
    assert default is static.own_code(decode_one_token, "default")
    assert default.__code__ is not graphs.__code__
    assert default.__code__ is not decode_one_token.__code__
    assert default.__name__ == "decode_one_token_default"


@pytest.mark.skipif(os.environ.get("COURSE_SKIP_COMPILE") == "1", reason="COURSE_SKIP_COMPILE=1")
def test_two_modes_do_not_recompile_each_other():
    """Two backends on one function: with a code copy each, each copy holds one compiled entry
    (a first compile, not a recompile); on the shared code object, one holds both."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list as entries

    def f(x):
        return x.sin() + 1

    x = torch.randn(4)
    a = torch.compile(static.own_code(f, "eager"), backend="eager", fullgraph=True)
    b = torch.compile(static.own_code(f, "aot_eager"), backend="aot_eager", fullgraph=True)
    before = static.compile_counters()
    for fn in (a, b, a, b):
        fn(x)
    assert static.counters_delta(before, static.compile_counters())["graphs_compiled"] == 2
    assert [len(entries(fn.__code__)) for fn in (static.own_code(f, "eager"),
                                                 static.own_code(f, "aot_eager"))] == [1, 1]
    shared_a = torch.compile(f, backend="eager", fullgraph=True)
    shared_b = torch.compile(f, backend="aot_eager", fullgraph=True)
    shared_a(x), shared_b(x)
    assert len(entries(f.__code__)) == 2


# --- the lessons' analysis modules (helpers/course) ---------------------------------------------

def test_static_cache_lesson_tables(tiny):
    from helpers.course import static_cache as lesson

    model, prompt, _ = tiny
    cache = static.make_static_cache(model, prompt.shape[0], 12, "cpu")
    assert lesson.cache_bytes(cache) == 12 * lesson.bytes_per_position(model, prompt.shape[0])
    inputs = lesson.attention_inputs(model, prompt, "cpu")
    assert list(inputs["mask"]) == [False, True]
    assert list(inputs["keys moved"]) == [True, False]


def test_expandable_lesson_tables():
    import pandas as pd

    from helpers.course import expandable as lesson

    table = pd.DataFrame([{"method": m, "seq_len": 8, "status": "ok",
                           "peak_allocated_bytes": 2**20, "peak_reserved_bytes": r * 2**20,
                           "fragmentation_pct": 100 * (r - 1) / r} for m, r in
                          (("default", 4), ("expandable_segments:True", 2))])
    memory = lesson.memory(table)
    assert memory.loc[(8, "default"), "peak reserved MiB"] == 4
    runs = {"default": {"timeline": {"actions": {"alloc": 90, "segment_alloc": 6},
                                     "peaks": [], "steps": [{"step": 0, "allocated": 1,
                                                             "reserved": 2}]}},
            "expandable_segments:True": {"timeline": {"actions": {"alloc": 90, "segment_map": 3},
                                                      "peaks": [], "steps": []}}}
    calls = lesson.driver_calls(runs, steps=3)
    assert calls.loc["default", "driver calls per decode step"] == 2
    assert calls.loc["expandable_segments:True", "segment_map"] == 3
    assert "segment_free" not in calls.columns  # no setting freed a segment: column left out
    assert lesson.timeline(runs)[0]["reserved"] == 2
    # no rate per decode step (the twenty-second review: most of a short run's trips come in the
    # prefill), and with the history, the decode steps in which reserved memory rose
    assert lesson.driver_line(runs, steps=3).endswith(
        "prefill included, for the same tensor allocations: default 6 times for a new segment; "
        "expandable_segments:True 3 times to map pages onto its segment.")
    # the gap share is named as what it divides: two peaks, not always of the same moment
    assert lesson.unused_line(memory.loc[8], "default", "expandable_segments:True") == (
        "Unused % (1 − peak allocated ÷ peak reserved; two peaks, not always of the same moment): "
        "50.0% with expandable_segments:True, less than default's 75.0%.")
    # what the setting bought: reserve and driver trips, from memory() and the recorded history
    assert lesson.buys_line(memory.loc[8], runs, 3, "default", "expandable_segments:True", 8) == (
        "What expandable_segments:True bought on this loop at 8 tokens: a peak reserve of 2 MiB "
        "against 4 MiB (2 MiB less, 50% less) for the same 1 MiB peak allocated, and 3 trips "
        "to the CUDA driver against 6 in the recorded run.")
    assert "trips" not in lesson.buys_line(memory.loc[8], {}, 3, "default", "expandable_segments:True", 8)


def test_expandable_lesson_lines_come_from_the_data():
    """03's 13:58 run printed "tokens identical" unconditionally, read the gap as an answer before
    asking the question, and called the early default gap "close" without a number."""
    from helpers.course import expandable as lesson

    same = {c: {"rows": [{"seq_len": n, "tokens_checksum": 7 * n} for n in (100, 400)]}
            for c in ("default", "expandable_segments:True")}
    assert lesson.same_tokens_line(same) == (
        "Same tokens under every setting: the 2 processes' token checksums agree at 100, 400 tokens.")
    same["default"]["rows"][1]["tokens_checksum"] = 1
    with pytest.raises(AssertionError, match="changed the tokens"):
        lesson.same_tokens_line(same)


def test_compiled_lesson_compilation_table():
    import pandas as pd

    from helpers.course import compiled as lesson

    table = pd.DataFrame([
        {"method": lesson.EAGER, "seq_len": 8, "status": "ok", "mode": "eager", "median_s": 1.0,
         "first_call_s": float("nan"), "compile_s": 0.0, "graphs_compiled": 0},
        {"method": lesson.name("default"), "seq_len": 8, "status": "ok", "mode": "default",
         "median_s": 0.5, "first_call_s": 10.5, "compile_s": 10.0, "graphs_compiled": 2}])
    compile_table = lesson.compilation(table)
    assert len(compile_table) == 1
    assert compile_table.loc[0, "runs to repay"] == pytest.approx(20.0)
    assert lesson.compilation(table).loc[0, "compile s"] == pytest.approx(10.0)
    table.loc[1, "median_s"] = 0.7  # 9.8 s compiling the timed graph / 0.3 s saved: the 33rd run
    assert lesson.compilation(table).loc[0, "runs to repay"] == 33
    # the timed graph's compile and its repay in words; the check graph (compile_s holds both
    # graphs) in one parenthesis
    table.loc[1, "compile_s"] = 15.0
    # a table without Inductor's cache counters (an older run): nothing said about the cache
    assert lesson.repay_line(lesson.compilation(table), table) == (
        "Compiling the timed graph, and the runs that repay it against the eager static-cache "
        "loop (a run saves the eager loop's median run \u00d7 (1 \u2212 1 \u00f7 the speedup the "
        "verdicts above quote)):\n  default: 9.8 s; repaid after 33 runs of 8 tokens\n"
        "The float32 check graphs, compiled just before and left out of these counts: 5.2 s "
        "(default).\n"
        "Default's timed graph was this process's first graph, so its time above likely "
        "includes the compiler's one-off start-up.\n"
        "Another cache length compiles again: these counts hold only while "
        "every run has the same length.")
    # with them: a hit is a warm compile, a miss a cold one
    for hits, misses, state in ((1, 0, "hit"), (0, 1, "miss"), (1, 1, "partly"),
                                (0, 0, "not used")):
        table["cache_hits"], table["cache_misses"] = [0, hits], [0, misses]
        assert lesson.compilation(table).loc[0, "Inductor cache"] == state
        assert (f"default: 9.8 s, {lesson.CACHE_WORDS[state]}; repaid after 33 runs"
                in lesson.repay_line(lesson.compilation(table), table))
    assert lesson.CACHE_WORDS["hit"] == "found in Inductor's cache on disk (warm)"
    table["compiled_while_timed"] = 0
    assert lesson.graphs_line(lesson.compilation(table), table, True) == (
        "Graphs compiled: default 2 (one per matmul precision at each length: float32 check, "
        "TF32 timed); while timing: 0. CUDA graph skips (steps left to plain compiled code): 0.")
    table["cudagraph_skips"] = [0, 1]
    assert lesson.graphs_line(lesson.compilation(table), table, True).endswith(
        "CUDA graph skips (steps left to plain compiled code): 1.")


def test_kv_cache_memory_reads_the_allocator_before_every_forward(tiny, monkeypatch):
    """Lesson 03's loop: one reading per forward pass (prefill + a step per fed-back token)."""
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 1)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 2)
    model, prompt, eos = tiny
    forwards = []
    handle = model.register_forward_pre_hook(lambda module, args: forwards.append(1))
    try:
        steps = allocator.kv_cache_memory(model, prompt, 5, eos, "cpu")
    finally:
        handle.remove()
    assert len(steps) == len(forwards) >= 2
    assert all(s["allocated"] == 1 and s["reserved"] == 2 for s in steps)
    assert [s["time_us"] for s in steps] == sorted(s["time_us"] for s in steps)


def test_05_idle_line_gives_each_mode_s_share_of_the_eager_idle():
    """Lesson 05: the GPU idle each compiled step removes, in ms and as a share of the eager
    step's idle; a step that got longer gets no share; a CPU run says so."""
    import pandas as pd

    from helpers.course import compiled as lesson

    methods = [lesson.EAGER, lesson.name("default"), lesson.name("reduce-overhead")]
    steps = pd.DataFrame({"method": methods, "wall_ms": [7.66, 3.56, 1.63],
                          "gpu_ms": [1.58, 1.11, 1.13]})
    steps["idle_ms"] = steps["wall_ms"] - steps["gpu_ms"]
    # the share named as the eager step's idle removed: the budget sentence's share (of a loop's
    # own step) is another number, and round 21 read 64% and 65% as one
    assert lesson.idle_line(steps, methods) == (
        "Against eager, the GPU's idle time per step fell: default by 60%, reduce-overhead by "
        "92%; most of each gain is time the GPU waited on the host, not faster kernels."
    )  # round 36: the ms saved left to the budget sentences
    slower = steps.assign(wall_ms=[7.66, 9.0, 1.63])
    line = lesson.idle_line(slower, methods)
    assert "default not at all" in line
    assert "most of each gain" not in line
    assert lesson.idle_line(steps.assign(idle_ms=float("nan")), methods) == (
        "GPU idle per step: no GPU time on a CPU run.")


def test_buys_line_leaves_the_gpu_work_to_the_speed_line_and_neither_says_not_timed():
    """The round-18 preflight on the 06:54 tables: buys_line ended "no change in the GPU's work,
    which no allocator setting makes" and speed_line, printed right after it, "an allocator
    setting changes no kernel"; and speed_line called the host's cost "not timed here" while
    the table holds each process's wall clock (one run each, not comparable)."""
    import pandas as pd

    from helpers.course import expandable as lesson

    mem = pd.DataFrame({"peak reserved MiB": [4.0, 2.0], "peak allocated MiB": [1.0, 1.0],
                        "unused %": [75.0, 50.0]}, index=["default", "expandable_segments:True"])
    said = lesson.buys_line(mem, {}, 3, "default", "expandable_segments:True", 8)
    assert said.endswith("for the same 1 MiB peak allocated.") and "GPU" not in said
    steps = pd.DataFrame({"method": ["default", "expandable_segments:True"],
                          "gpu_ms": [2.50, 2.52], "wall_ms": [7.8, 14.3]})
    speed = lesson.speed_line(steps, "default", "expandable_segments:True")
    assert "changes no kernel" in speed and "not timed" not in speed
    assert speed.endswith("no later lesson times the two settings.")  # round 35
