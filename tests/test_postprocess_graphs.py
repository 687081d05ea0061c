"""Notebooks 09 and 10 on a CPU: post-processing gives identical lists; the CUDA-graph decoder's
step, run eagerly, is token-identical to the naive loop. (The notebooks' copies of this code are
checked in tests/test_lessons.py; the CUDA graphs themselves in tests/test_gpu.py.)"""
import functools
import math

import pandas as pd
import pytest
import torch

from helpers import graphs, postprocess
from helpers.course.errors import ParameterError
from helpers.generation import assert_same_tokens, generate_naive, uniform_stop_lengths
from helpers.model import build_model, make_prompt
from helpers.course.presets import resolve_params


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


def test_call_budget_reads_one_call_three_ways():
    """09's three-way reading of one call: wall clock and GPU work per call (not per token), and a
    sentence only when the GPU's numbers exist."""
    rows = [{"method": m, "condition": c, "batch_size": 4, "seq_len": 32, "status": "ok",
             "median_s": s, "gpu_busy_s": g}
            for m, c, s, g in (("per row", "alone", 0.010, 0.002), ("on host", "alone", 0.002, 0.0005),
                               ("per row", "contended", 0.050, float("nan")))]
    call = postprocess.call_budget(pd.DataFrame(rows), 4, 32)
    assert call["method"].tolist() == ["per row", "on host"]
    assert call["wall_ms"].tolist() == pytest.approx([10.0, 2.0])
    assert call["gpu_ms"].tolist() == pytest.approx([2.0, 0.5])
    text = postprocess.call_sentence(call, 4.0)
    # 10 ms: 2 of GPU work, 1.5 of list building (the host copy's 2 ms less its 0.5 of copies),
    # 6.5 of launches and waits; the 20:10 review: the split is inferred, said so, and rounded;
    # the round-21 review: the host copy's own share said where its call is read
    # (the round-24 review: its inferred bound beside the cost per sync's, two "at least" figures;
    # the bound is now the cost per sync's alone)
    assert text == ("The per-row loop takes 10.00 ms per batch, the GPU working 2.00 ms of it; the "
                    "host copy takes 2.00 ms: 0.50 ms its copies and the rest, about 1.5 ms, the "
                    "host's: indexing the rows, building the lists and its side of the copies, "
                    "not timed apart. The per-row "
                    "loop's other 8.00 ms go to launching small kernels, waiting at its syncs (4 a "
                    "row) and building its lists, not timed apart here.")
    slow_build = call.assign(wall_ms=[10.0, 9.5])
    slow_text = postprocess.call_sentence(slow_build, 4.0)
    assert "the rest, about 9.0 ms," in slow_text and "at least" not in slow_text
    assert "5.0x" not in text  # the speedup is the verdict line's, not a second ratio
    assert postprocess.call_sentence(call.assign(gpu_ms=float("nan"))) == ""


def test_transfer_speedup_of_known_trials():
    trials = {"per row": "4 4 4 4 4 4", "on host": "1 1 1 1 1 1"}
    rows = [{"method": m, "condition": c, "batch_size": 4, "seq_len": 8, "status": "ok",
             "trials_wall_ms": t} for c in ("alone", "contended") for m, t in trials.items()]
    for condition in ("alone", "contended"):
        ratio = postprocess.transfer_speedup(pd.DataFrame(rows), condition, batch_size=4)
        assert ratio.estimate == pytest.approx(4.0) and ratio.n == 6


def _trials(t, spread, phase=0):
    """Six runs within +-``spread`` of ``t`` seconds, as the tables store them (ms)."""
    return " ".join(f"{t * 1e3 * (1 + spread * math.sin(1.7 * i + phase)):.5f}" for i in range(6))


def _contention_table(slow, spread=0.01, trials=False):
    """09's long table: at two points each method takes 10 ms alone and ``slow[method]`` times
    that contended, its runs within +-``spread`` of the median (with ``trials``, stored)."""
    return pd.DataFrame([{"method": m, "condition": c, "batch_size": b, "seq_len": 8,
                          "median_s": t, "min_s": t * (1 - spread), "max_s": t * (1 + spread),
                          **({"trials_wall_ms": _trials(t, spread, phase=len(c))} if trials else {})}
                         for m, factors in slow.items() for b, f in zip((16, 256), factors)
                         for c, t in (("alone", 0.010), ("contended", 0.010 * f))])


def test_contention_line_reads_the_load_in_ms_and_quotes_no_speedup():
    """The 09:46 review: slowdown ratios under a load the lesson calls load-dependent, and "barely
    compete" beside 1.6x-2.3x: each method's extra time per batch, in ms."""
    slow = {"per row": [3.0, 4.5], "on host": [1.1, 1.7]}
    line = postprocess.contention_line(_contention_table(slow))
    assert line == ("Under this side load the per-row loop is slower: 20 to 35 ms more per batch "
                    "than alone; the host copy is slower: 1.00 to 7.00 ms more per batch than alone.")
    assert "faster (" not in line and "x " not in line and "per sync" not in line
    faster = postprocess.contention_line(_contention_table({**slow, "on host": [0.9, 1.7]}))
    assert faster.endswith("the host copy takes 7.00 ms more per batch than alone at 1 of 2 points "
                           "and 1.00 ms less at 1 of 2 points (nothing timed here says why it got "
                           "faster).")  # round 29: each way as measured, no cause read
    one = _contention_table({**slow, "on host": [0.9, 1.7]})
    one = one[one["batch_size"] == 16]  # the notebook's one contended point
    assert postprocess.contention_line(one) == (
        "Under this side load the per-row loop is slower: 20 ms more per batch than alone; the host "
        "copy is faster: 1.00 ms less per batch than alone (nothing timed here says why it got "
        "faster).")


def test_speedups_carry_the_load_and_one_line_reads_alone_only():
    trials = {("alone", "per row"): "4 4 4 4 8 8", ("alone", "on host"): "1 1 1 2 2 2",
              ("contended", "per row"): "9 9 9 9 9 9", ("contended", "on host"): "2 2 2 2 2 2"}
    table = pd.DataFrame([{"method": m, "condition": c, "batch_size": 4, "seq_len": 8,
                           "status": "ok", "trials_wall_ms": t, "load_s": 0.05 * (c != "alone"),
                           "median_s": float(pd.Series(t.split(), dtype=float).median()) / 1e3}
                          for (c, m), t in trials.items()])
    wide = postprocess.speedups(table).set_index("condition")
    assert wide.loc["contended", "load_s"] == pytest.approx(0.05) and wide.loc["alone", "load_s"] == 0
    syncs = pd.DataFrame([{"method": m, "batch_size": 4, "seq_len": 8, "syncs": s,
                           "syncs_per_row": s / 4} for m, s in (("per row", 16), ("on host", 4))])
    line = postprocess.one_line(table, 4, 8, syncs)
    assert line == ("In one line: at batch 4 and completions of 8, copying the tensors to the host "
                    "first (4 syncs in all instead of 4 a row) gives identical lists, timed alone: "
                    "3.56x faster (2.83–4.00).")  # one number: the headline says which (round 24)
    with_cost = postprocess.one_line(table, 4, 8, syncs, postprocess.speedups(table))
    assert with_cost.endswith("(2.83–4.00); it saved about 208 µs per sync removed at "
                              "this size.")  # one point: no range (round 28)
    # (4 - 1.5 ms, the medians) / (16 - 4 syncs): the saving per sync removed, as sync_cost_line (round 27)
    assert "side load" not in line and "ratio of the medians" not in line


def test_sync_cost_line_divides_the_time_saved_by_the_syncs_saved():
    """The 06:54 review: the cost of one sync, (per-row ms - host-copy ms) / (syncs saved), at
    the headline point, with its range over the points timed alone."""
    def rows(cond, b, per_row, on_host):
        return [{"method": m, "condition": cond, "batch_size": b, "seq_len": 8, "median_s": t}
                for m, t in (("per row", per_row), ("on host", on_host))]
    table = pd.DataFrame(rows("alone", 16, 0.0030, 0.0010) + rows("alone", 64, 0.0110, 0.0010)
                         + rows("contended", 64, 0.2, 0.01))
    syncs = pd.DataFrame([{"method": m, "batch_size": b, "seq_len": 8, "syncs": s}
                          for b in (16, 64) for m, s in (("per row", 4 * b), ("on host", 4))])
    wide = postprocess.speedups(table)
    cost = postprocess.sync_cost(wide, syncs) * 1e6
    assert cost[(64, 8)] == pytest.approx(1e4 / 252) and cost[(16, 8)] == pytest.approx(2e3 / 60)
    line = postprocess.sync_cost_line(wide, syncs, 64, 8)
    assert line == ("Saved per sync removed at batch 64, completions of 8: about 40 µs = (11.00 "
                    "- 1.00 ms) / (256 - 4 syncs), the loop's small kernels and indexing included; "
                    "a saving at this size, not a fixed cost of a sync: 33 to 40 µs over the 2 "
                    "points timed alone.")
    slower = postprocess.speedups(pd.DataFrame(rows("alone", 64, 0.0010, 0.0012)))
    assert "no time over the host copy" in postprocess.sync_cost_line(slower, syncs, 64, 8)
    assert postprocess.sync_cost_line(wide, syncs.iloc[:0], 64, 8) == ""
    assert postprocess.sync_cost_line(wide, syncs, 128, 8) == ""


def test_contention_line_states_a_majority_of_faster_points_plainly():
    slow = {"per row": [3.0, 4.5], "on host": [0.9, 0.8]}
    line = postprocess.contention_line(_contention_table(slow, trials=True))
    assert "the host copy is faster: 1.00 to 2.00 ms less per batch than alone (nothing" in line
    assert "variation" not in line


def test_sync_view_keeps_code_and_count_and_says_two_per_row():
    found = pd.DataFrame({"file": ["1.py", "1.py"], "line": [13, 14], "code": ["a", "b"],
                          "count": [32, 32], "via": ["x", "y"]})
    view, note = postprocess.sync_view(found, 16)
    assert list(view.columns) == ["code", "count"]
    assert note == "2 per row from each line: the boolean index's `nonzero` and `tolist()`"
    assert postprocess.sync_view(found.assign(count=[4, 4]).iloc[:1], 16)[1] == ""
    assert postprocess.sync_view(found.assign(count=[48, 16]), 16)[1] == "per row from each line: 3, 1"


def _length_table(per_row, on_host, spread=0.02, batches=(256,)):
    """09's long table alone at ``batches``, completions of 128 and 2048 (seconds per method,
    the same at every batch)."""
    return pd.DataFrame([{"method": m, "condition": "alone", "batch_size": b, "seq_len": n,
                          "status": "ok", "median_s": t, "trials_wall_ms": _trials(t, spread, n)}
                         for m, times in (("per row", per_row), ("on host", on_host))
                         for b in batches for n, t in zip((128, 2048), times)])


def test_plots_of_notebook_09_draw_from_the_long_table():
    import matplotlib
    matplotlib.use("Agg")
    table = pd.concat([_length_table([0.07, 0.08], [0.01, 0.03], batches=(16, 256)),
                       _length_table([0.2, 0.3], [0.01, 0.03], batches=(16, 256)).assign(
                           condition="contended")])
    fig = postprocess.plot(table, [16, 256], [128, 2048])
    # alone only (the 05:14 review: contended speedups squashed the result; the 09:46 review:
    # load-dependent times plotted, and length 128 hidden): 2 methods x 2 lengths on the left,
    # 2 lengths and 1 at 1.0 on the right
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 4
    # two lengths, the line at 1 and, where the table holds trials, the headline's diamond
    assert sum(line.get_marker() not in ("D", "_") for line in fig.axes[1].lines) == 3
    assert all("contended" not in line.get_label() for ax in fig.axes for line in ax.lines)
    assert {line.get_label() for line in fig.axes[0].lines} == {
        f"{m}, length {n}" for m in ("per row", "on host") for n in (128, 2048)}
    call = pd.DataFrame({"method": ["per row", "on host"], "wall_ms": [43.17, 11.44],
                         "gpu_ms": [5.2, 1.33], "idle_ms": [37.97, 10.11],
                         "floor_ms": [float("nan")] * 2})
    from helpers.course import budget, plotting
    fig, ax = plotting.subplots()
    budget.plot(ax, call)
    postprocess.fit_axis(ax, call)
    assert ax.get_xlim()[1] == pytest.approx(43.17 * 1.2) and ax.get_xlabel() == "ms per call (one batch)"


def test_length_line_states_every_batchs_speedups_and_both_growths():
    """The 20:10 review: why the speedup is larger at the shorter length, under the figure, and why
    the headline quotes its point (the review20 table: 39.89 -> 45.41 and 5.28 -> 12.56 ms); the
    round-24 review: numbers, not a judgement, at every batch size."""
    table = pd.DataFrame([{"method": m, "condition": "alone", "batch_size": b, "seq_len": n,
                           "status": "ok", "median_s": t, "gpu_busy_s": float("nan")}
                          for m, times in (("per row", [0.00185, 0.00291, 0.03989, 0.04541]),
                                           ("on host", [0.00037, 0.00080, 0.00528, 0.01256]))
                          for (b, n), t in zip([(16, 128), (16, 2048), (256, 128), (256, 2048)],
                                               times)])
    wide = postprocess.speedups(table)
    line = postprocess.length_line(wide, 256, table=table)
    assert line == ("From completions of 128 to 2048, the speedup (per row / on host, as the right "
                    "panel draws it) is lower with the longer completions at both batch sizes: "
                    "from 5.00x to 3.64x at batch 16 and from 7.55x to 3.62x at 256.\nAt batch 256 "
                    "the per-row loop's time goes from 39.89 to 45.41 ms (1.14x) and the host "
                    "copy's from 5.28 to 12.56 ms (2.38x).\nThe headline quotes the longest "
                    "completions at the largest batch, the largest job timed.")
    rising = table.assign(median_s=[0.00185, 0.00291, 0.03989, 0.04800,
                                    0.00037, 0.00080, 0.00528, 0.00550])
    said = postprocess.length_line(postprocess.speedups(rising), 256, table=rising)
    assert "is lower with the longer completions at 1 of the 2 batch sizes, higher at 1: from " \
           "5.00x to 3.64x at batch 16 and from 7.55x to 8.73x at 256." in said
    assert postprocess.length_line(wide[wide["seq_len"] == 128], 256, table=table) == ""


def test_loaded_sync_line_and_table_view():
    """The 20:10 review: one sync's cost under the load (the review20 run: (194.42 - 12.83) /
    1020 = 178 µs against 32 alone), computed like the one alone; the table in ms."""
    def rows(cond, per_row, on_host, load=0.0):
        return [{"method": m, "condition": cond, "batch_size": 256, "seq_len": 2048,
                 "median_s": t, "load_s": load} for m, t in (("per row", per_row), ("on host", on_host))]
    table = pd.DataFrame(rows("alone", 0.04541, 0.01256) + rows("contended", 0.19442, 0.01283, 0.4))
    syncs = pd.DataFrame([{"method": "per row", "batch_size": 256, "seq_len": 2048, "syncs": 1024},
                          {"method": "on host", "batch_size": 256, "seq_len": 2048, "syncs": 4}])
    wide = postprocess.speedups(table)
    line = postprocess.loaded_sync_line(wide, syncs, 256, 2048)
    assert line.startswith("Under this side load the same sum gives about 178 µs per sync "
                           "removed, against 32 µs alone: ")
    assert line.endswith("wait behind the load's matmuls at every sync (not measured here).")
    calm = postprocess.speedups(pd.DataFrame(rows("alone", 0.04541, 0.01256)
                                             + rows("contended", 0.046, 0.0126, 0.4)))
    assert postprocess.loaded_sync_line(calm, syncs, 256, 2048).endswith("barely wait for the load.")
    alone = postprocess.speedups(pd.DataFrame(rows("alone", 0.04541, 0.01256)))
    assert postprocess.loaded_sync_line(alone, syncs, 256, 2048) == ""
    view = postprocess.table_view(wide)
    assert list(view.columns) == ["condition", "batch_size", "seq_len", "on host ms", "per row ms",
                                  "speedup", "load ms"]
    # the round-21 review: no "NaN" speedup under load, no "0.0" load alone: a dash
    assert view["per row ms"].tolist() == [45.41, 194.42] and view["load ms"].tolist() == ["—", "400"]
    assert view["speedup"].tolist() == ["3.62", "—"]


def test_compare_host_clock_interleaves_and_fills_the_shared_columns():
    from helpers.course.results import REQUIRED_COLUMNS
    order = []
    calls = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    rows = postprocess.compare_host_clock(calls, device="cpu", batch_size=2, seq_len=3, repeats=3,
                                          warmup=1, condition="alone")
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert all(c in rows[0] for c in REQUIRED_COLUMNS) and rows[0]["repeats"] == 3
    assert rows[0]["condition"] == "alone" and rows[0]["load_s"] == 0.0


def test_figure_footer_names_a_sweeps_batch_sizes(monkeypatch, tmp_path):
    from helpers.course import results

    run = results.start_notebook("09_test", resolve_params("09", "smoke"), quiet=True)
    assert "batch 2, 8" in run.footer()
    assert run.footer(batch=8).endswith("batch 8")  # a figure of one point of the sweep
    run = results.start_notebook("06_test", resolve_params("06", "smoke"), quiet=True)
    assert run.footer().endswith("batch 2")


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

@pytest.fixture(scope="module")
def tiny6():
    model = build_model("tiny", "cpu", seed=0)
    eos = model.config.eos_token_id
    return model, eos, make_prompt(6, 5, model.config.vocab_size, eos, "cpu", seed=2)


@functools.lru_cache(maxsize=None)
def naive_reference(model, prompt_key, max_new_tokens, eos, stops):
    """The naive loop's tokens, computed once per case (the slow part of these tests)."""
    prompt = torch.tensor(prompt_key)
    return generate_naive(model, prompt, max_new_tokens, eos,
                          None if stops is None else torch.tensor(stops))


@pytest.mark.parametrize("library_forward", [False, True], ids=["lean", "transformers"])
@pytest.mark.parametrize("steps_per_graph", [1, 3])
@pytest.mark.parametrize("max_new_tokens", [1, 2, 13])
@pytest.mark.parametrize("stops", [None, (3, 7, 2, 4, 3, 3), (1,) * 6, (30,) * 6])
def test_graph_decoder_steps_match_the_naive_loop(tiny6, library_forward, steps_per_graph,
                                                  max_new_tokens, stops):
    model, eos, prompt = tiny6
    reference = naive_reference(model, tuple(map(tuple, prompt.tolist())), max_new_tokens, eos, stops)
    stops = None if stops is None else torch.tensor(stops)
    decoder = graphs.GraphDecoder(model, 6, 5 + max_new_tokens, eos, steps_per_graph,
                                  library_forward=library_forward)
    assert decoder.graph is None and not decoder.graphed  # no GPU: the same steps run eagerly
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
    assert len(state.kv) == cfg.n_layer and len({t.data_ptr() for t in state.kv}) == cfg.n_layer
    assert all(t.shape == (2, 3, cfg.n_head, 32, cfg.n_embd // cfg.n_head) for t in state.kv)
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
    assert graphs.cache_bytes(model, 3, 32) == sum(t.numel() * t.element_size() for t in state.kv)


@pytest.mark.parametrize("notebook,kwargs,wrong", [
    ("10", dict(graph_steps=[0]), "graph_steps"),
    ("10", dict(graph_steps="4"), "graph_steps"),
    ("10", dict(graph_steps=[4]), "graph_steps"),  # 1 must be among them
    ("11", dict(steps_per_launch=0), "steps_per_launch"),
    ("11", dict(bf16="yes"), "bf16"),
    ("11", dict(bucket=-4), "bucket"),
])
def test_notebooks_10_and_11_reject_bad_parameters(notebook, kwargs, wrong):
    with pytest.raises(ParameterError, match=wrong):
        resolve_params(notebook, "smoke", **kwargs)


# ---------------------------------------------------------------- notebook 10: the bucketed step

@pytest.mark.parametrize("bucket", [1, 4, 16, 64])
@pytest.mark.parametrize("steps_per_graph", [1, 3])
@pytest.mark.parametrize("stops", [None, (3, 7, 2, 4, 3, 3), (1,) * 6])
def test_bucketed_step_matches_the_naive_loop(tiny6, bucket, steps_per_graph, stops):
    model, eos, prompt = tiny6
    stops = None if stops is None else torch.tensor(stops)
    decoder = graphs.BucketedGraphDecoder(model, 6, 5 + 13, eos, steps_per_graph, bucket=bucket)
    assert decoder.graphs == {} and not decoder.graphed  # no GPU: the same steps run eagerly
    for n in (13, 2, 1):  # one decoder, shorter runs too
        assert_same_tokens(generate_naive(model, prompt, n, eos, stops), decoder(prompt, n, stops),
                           f"bucketed step, bucket {bucket}, {steps_per_graph}/launch, {n} tokens")


def test_bucketed_step_reads_only_its_bucket(tiny6):
    """Garbage past the bucket must not change a step: it attends to ``length`` positions only."""
    model, eos, prompt = tiny6
    state = graphs.static_state(model, 6, 40, "cpu")
    graphs.prefill(model, state, prompt, eos)
    clean = graphs.static_state(model, 6, 40, "cpu")
    graphs.prefill(model, clean, prompt, eos)
    for layer in state.kv:
        layer[:, :, :, 16:] = float("nan")  # beyond a 16-position bucket
    graphs.bucketed_decode_step(model, state, eos, 16)
    graphs.bucketed_decode_step(model, clean, eos, 48)
    assert torch.equal(state.token, clean.token) and int(state.position) == 6


def test_bucket_lengths_cover_every_launch(tiny6):
    model, eos, _ = tiny6
    decoder = graphs.BucketedGraphDecoder(model, 6, 5 + 30, eos, steps_per_graph=3, bucket=8)
    slots = decoder.state.tokens.shape[1]
    assert decoder.lengths == [8, 16, 24, 32, 40, 48][:len(decoder.lengths)] and decoder.lengths[-1] == slots
    for launch in range(10):
        length = decoder.length_for(launch, 5)
        assert length >= 5 + (launch + 1) * 3 and length in decoder.lengths
        assert length == decoder.lengths[0] or length - 8 < 5 + (launch + 1) * 3
    assert not hasattr(graphs.GraphDecoder(model, 6, 5 + 30, eos), "lengths")  # one graph


@pytest.mark.parametrize("options,wrong", [(dict(bucket=0), "bucket"),
                                           (dict(bucket=8, library_forward=True), "library_forward")])
def test_graph_decoder_rejects_bad_buckets(tiny6, options, wrong):
    model, eos, _ = tiny6
    with pytest.raises(ValueError, match=wrong):
        graphs.BucketedGraphDecoder(model, 6, 5 + 8, eos, **options)


def test_peer_idle_line_names_the_host_only_where_the_gpu_idles_most_of_the_step():
    import pandas as pd
    from helpers.course import floor
    # 10's 18:42 run: generate() static 2.35 ms per step, its GPU 1.18
    b = pd.DataFrame({"method": ["generate() static", "graph"], "wall_ms": [2.35, 1.34],
                      "gpu_ms": [1.18, 1.16]})
    assert floor.peer_idle_line(b, "generate() static") == (
        "generate() static: the GPU is idle 1.17 ms of each 2.35 ms (50%): the wall clock is "
        "2.0x the GPU's work, so the host sets the pace.")
    assert floor.peer_idle_line(b.assign(gpu_ms=[1.60, 1.16]), "generate() static") == (
        "generate() static: the GPU is idle 0.75 ms of each 2.35 ms (32%): host and GPU share "
        "the pace.")
    assert floor.peer_idle_line(b, "graph") == (
        "graph: the GPU is idle 0.18 ms of each 1.34 ms (13%): the GPU sets the pace.")
    assert floor.peer_idle_line(b.assign(gpu_ms=float("nan")), "graph") == ""
    assert floor.peer_idle_line(b, "absent") == ""


def test_prompt_line_labels_the_eager_prompt_timed_alone_and_what_its_graph_saved():
    import math
    import pandas as pd
    from helpers.course import budget, floor
    # its own line after the budget sentence (10's review read it folded in three times). No
    # split of the step's idle into prompt and decode loop (11's 09:46 run: "87 µs ..., the
    # decode loop the other 93 µs", yet the graph saved 0.14 ms)
    b = pd.DataFrame({"method": ["t", "old", "p4", "p5"], "wall_ms": [0.744, 1.0, 0.628, 0.488],
                      "gpu_ms": [0.52, 0.8, 0.45, 0.48], "floor_ms": [0.22] * 4})
    b["idle_ms"] = b["wall_ms"] - b["gpu_ms"]
    said = floor.prompt_line(b, (9.2, 2.0), 100)  # 10's 10:50 run: 92 µs, 72 µs idle
    assert said == ("The prompt's forward, run eagerly once per run: 9.2 ms timed alone (its GPU "
                    "work 2.0 ms, the rest host time), spread over 100 tokens = 92 µs per step, "
                    "72 µs of it GPU idle.")
    assert "decode loop the other" not in said
    assert floor.prompt_line(b, (18.3, 2.5), 100) == (
        "The prompt's forward, run eagerly once per run: 18.3 ms timed alone (its GPU work 2.5 ms, "
        "the rest host time), spread over 100 tokens = 0.18 ms per step, 0.16 ms of it GPU idle.")
    # the graph's saving (0.63 - 0.49 = 0.14 ms, as the figure prints), against its whole time
    assert floor.prompt_line(b, (8.7 + 4.0, 4.0), 100, graphed=("p4", "p5")).endswith(
        ", 87 µs of it GPU idle. Replaying it from a graph took 0.14 ms off each step, more than "
        "its whole time alone.")
    assert floor.prompt_line(b, (18.3, 2.5), 100, graphed=("p4", "p5")).endswith(
        "Replaying it from a graph took 0.14 ms off each step.")
    # no saving (or a rung absent): no clause
    base = floor.prompt_line(b, (18.3, 2.5), 100)
    assert floor.prompt_line(b, (18.3, 2.5), 100, graphed=("p5", "p4")) == base
    assert floor.prompt_line(b, (18.3, 2.5), 100, graphed=("p4", "absent")) == base
    # no GPU work of the prompt: its whole time per step only; no time: nothing
    assert floor.prompt_line(b, (9.0, math.nan), 100).endswith("= 90 µs per step.")
    assert floor.prompt_line(b, (math.nan, 1.0), 100) == ""
    assert f"(30% of 0.74 ms: {budget.IDLE_WHY})" in budget.sentence(b, "t", "old")


def test_gpu_gap_line_says_what_no_graph_removes():
    import pandas as pd
    from helpers.course import floor
    # 10's 10:50 run: the graph step's GPU work 1.16 ms, floor 0.219 ms: 1.16 / 0.219 = 5.30x
    b = pd.DataFrame({"method": ["g", "cpu"], "gpu_ms": [1.1571, float("nan")],
                      "floor_ms": [0.2188, 0.2188]})
    line = floor.gpu_gap_line(b, "g")
    assert line.startswith("its GPU work per step, the eager prompt's share included, is 1.16 ms, "
                           "5.30x the floor: that gap is the kernels themselves (")
    assert "which no graph removes" in line and "notebook 11" not in line  # round 29
    assert floor.gpu_gap_line(b.assign(gpu_ms=[0.2, 0.2]), "g") == \
        "its GPU work per step, the eager prompt's share included, is 0.20 ms, 0.91x the floor."
    assert floor.gpu_gap_line(b, "cpu") == floor.gpu_gap_line(b, "absent") == ""
    assert floor.gpu_gap_line(b.assign(floor_ms=float("nan")), "g") == ""


def test_extra_steps_note_reads_k_per_launch_per_decode_step():
    import math
    from helpers.course import floor, stats
    # 10's 10:50 run: 4 per launch 1.004x slower per run (1.002-1.006), 100 steps not 99
    run = stats.Ratio(1 / 1.004, 1 / 1.006, 1 / 1.002, 12)
    assert floor.extra_steps_note(run, 100, 4) == (
        "; per decode step (a run at 4 per launch does 100 steps, not 99): 1.006x faster (1.004\u20131.008)")
    # 10's 05:14 run: can't tell apart per run, nor per step (0.987-1.006 x 100/99)
    said = floor.extra_steps_note(stats.Ratio(0.998, 0.987, 1.006, 12), 100, 4)
    assert said.startswith("; per decode step (a run at 4 per launch does 100 steps, not 99): can't tell apart")
    assert "1.040x slower" in floor.extra_steps_note(stats.Ratio(0.95, 0.94, 0.96, 12), 100, 4) or \
        "1.04x slower" in floor.extra_steps_note(stats.Ratio(0.95, 0.94, 0.96, 12), 100, 4)
    assert floor.extra_steps_note(run, 100, 3) == ""  # 99 = 33 x 3: no extra step
    assert floor.extra_steps_note(run, 100, 1) == ""
    assert floor.extra_steps_note(stats.Ratio(math.nan, math.nan, math.nan, 0), 100, 4) == ""


def test_gaps_ranked_groups_the_layer_gemms_beside_attention_and_element_wise():
    import pandas as pd
    from helpers.course import kernels
    # 11's 20:16 run, Triton rung: the four layer GEMMs 276.2 against 114.9, attention 111.7
    # against 52.2, element-wise 60.3 against 0, idle 39.8 ranked too; the LM head last
    table = pd.DataFrame({"part": ["QKV", "attention out", "MLP up", "MLP down", "LM head", "attention",
                                   "element-wise", "idle between kernels", "step (span)"],
                          "kernels": [12, 12, 12, 12, 1, 12, 75, 0, 136],
                          "us": [65.7, 42.4, 86.3, 81.8, 56.3, 111.7, 60.3, 39.8, 545.6],
                          "floor_us": [28.7, 9.6, 38.3, 38.3, 52.2, 52.2, 0.0, 0.0, 219.1]})
    assert kernels.gaps_ranked(table) == (
        "above their floors, per step: the layer GEMMs together 161 µs (276 against 115, 48 "
        "kernels); element-wise 60 µs (60 against 0, 75 kernels of 0.8 µs each); attention 60 µs "
        "(112 against 52, 12 kernels); idle between kernels 40 µs (the profiler may add to it); "
        "the rest (LM head) 4 µs together")  # round 28: no part left out unsaid
    # GEMMs off the plan: one unattributed group in their place
    odd = table.assign(part=["GEMM (unattributed)"] * 5 + list(table["part"][5:]))
    assert kernels.gaps_ranked(odd).startswith("above their floors, per step: GEMMs (unattributed) ")
    none = table.assign(kernels=[12, 12, 12, 12, 1, 12, 0, 0, 136])  # no element-wise kernel
    assert "element-wise 60 µs (60 against 0, 0 kernels);" in kernels.gaps_ranked(none)


def test_profiler_note_reads_either_way():
    from helpers.course import kernels
    assert kernels.profiler_note(1598, 1340) == ("the same replays take 1340 µs without the "
                                                 "profiler, so profiled ones run 19% slower")
    assert kernels.profiler_note(1000, 1020).endswith("run 2% faster")


def test_lesson_10s_intro_names_08s_steps_per_launch():
    from helpers.course import summary
    rung = [m for lesson, _, m, _ in summary.RUNGS if lesson == "10"]
    assert any("(4/launch)" in (m or "") for m in rung)  # 10's intro: "at 4 steps per launch"


def test_contended_points_that_cannot_be_told_from_alone_are_left_out_of_the_range():
    slow = {"per row": [3.0, 4.5], "on host": [1.05, 1.7]}
    line = postprocess.contention_line(_contention_table(slow, spread=0.2, trials=True))
    assert line == ("Under this side load the per-row loop is slower: 20 to 35 ms more per batch "
                    "than alone; the host copy is slower: 7.00 ms more per batch than alone at 1 of 2 points "
                    "(at the other it can't be told apart from alone).")
    both = _contention_table({**slow, "on host": [1.02, 1.03]}, spread=0.2, trials=True)
    assert line.split("; ")[0] in postprocess.contention_line(both)
    assert postprocess.contention_line(both).endswith(
        "the host copy took 10.20 ms against 10.00 ms alone at batch 16, completions of 8 (0.20 ms "
        "longer, 1.02x) and 10.30 ms against 10.00 ms alone at batch 256, completions of 8 (0.30 "
        "ms longer, 1.03x): can't tell apart on this machine.")  # the times beside it, always
    assert "can't be told" not in postprocess.contention_line(_contention_table(slow, trials=True))


def test_call_sentence_says_the_rest_leaves_out_the_gpus_work():
    """The 20 preflight on d2687ea's table: 45.41 ms, 5.19 of GPU work, about 11 of list building
    printed 'the rest of its call, about 29 ms', where 45.41 - 11 = 34: the rest also leaves out
    the GPU's work, and the sentence says so, so wall - GPU - building = rest as printed."""
    call = pd.DataFrame({"method": ["per row", "on host"], "wall_ms": [45.41, 12.56],
                         "gpu_ms": [5.19, 1.53]})
    text = postprocess.call_sentence(call, 4.0)
    assert "the rest, about 11 ms, the host's: indexing the rows" in text
    assert "The per-row loop's other 40.22 ms go to" in text


def test_notebook_09s_lines_compute_from_the_printed_values():
    """The 06:54 preflight: 0.88 -> 14.02 ms printed 15.8x (15.9x by hand), 14.02 - 1.49 ms printed
    12.52 ms of list building (12.53 by hand): each ratio and difference from the printed numbers."""
    call = pd.DataFrame({"method": ["per row", "on host"], "wall_ms": [50.034, 14.024],
                         "gpu_ms": [5.177, 1.494]})
    text = postprocess.call_sentence(call, 4.0)
    assert "The per-row loop's other 44.85 ms go to" in text
    assert "the host copy takes 14.02 ms: 1.49 ms its copies and the rest, about 13 ms," in text


def _run_09(commit):
    """A GPU run's table of 09 (frozen from figures/data/ at ``commit``) and its sync counts (the
    same in every run)."""
    from pathlib import Path
    data = Path(__file__).parent / "data"
    return (pd.read_csv(data / f"09_host_sync_token_processing-{commit}.csv"),
            pd.read_csv(data / "09_host_sync_token_processing_syncs-ba37cc3.csv"))


RUNS_09 = ["ba37cc3", "8973374", "90c3788", "eb4fe0c"]  # the 12:29, 09:46, 06:54, 05:14 runs


@pytest.mark.parametrize("commit", RUNS_09)
def test_notebook_09s_length_and_sync_cost_lines_on_real_runs(commit):
    """The round-21 review of the 12:29 run: under the plot, 'the host copy's from 11.74 to 11.18
    ms (0.95x), which grows with the tokens it builds into lists'; the round-24 review: points
    judged 'out of line' and left out. Now every batch's speedups and every point's cost, as
    numbers, read on every run's table."""
    table, syncs = _run_09(commit)
    wide = postprocess.speedups(table)
    line = postprocess.length_line(wide, 256, table=table)
    ratio = wide[wide["condition"] == "alone"].pivot(index="batch_size", columns="seq_len",
                                                      values="speedup").round(2)
    for b in ratio.index:
        assert f"from {ratio.loc[b, 128]:.2f}x to {ratio.loc[b, 2048]:.2f}x at " in line
    lower = int((ratio[2048] < ratio[128]).sum())
    assert ("at all 3 batch sizes" in line) == (lower == 3)
    assert "out of line" not in line and "says nothing" not in line
    cost = postprocess.sync_cost_line(wide, syncs, 256, 2048)
    per_point = postprocess.sync_cost(wide, syncs) * 1e6
    assert cost.endswith(f": {per_point.min():.0f} to {per_point.max():.0f} µs over the "
                         f"{len(per_point)} points timed alone.")
    view = postprocess.table_view(wide)
    assert not view.isna().any().any() and 0 not in view["load ms"].tolist()
    said = postprocess.call_sentence(postprocess.call_budget(table, 256, 2048), 4.0)
    assert "the host's: indexing the rows, building the lists and its side of the copies" in said


def test_notebook_09s_12_29_run_reads_as_printed():
    """The 12:29 run's lines in full, as a reader sees them: the speedup rose at 256 there, and
    the line says so without a verdict."""
    table, syncs = _run_09("ba37cc3")
    wide = postprocess.speedups(table)
    line = postprocess.length_line(wide, 256, table=table)
    assert line.startswith(
        "From completions of 128 to 2048, the speedup (per row / on host, as the right panel draws "
        "it) is lower with the longer completions at 2 of the 3 batch sizes, higher at 1: from "
        "5.01x to 3.73x at batch 16, from 10.33x to 3.93x at 64 and from 3.49x to 3.68x at 256.\n"
        "At batch 256 the per-row loop's time goes from 41.01 to 41.20 ms (1.00x) and the host "
        "copy's from 11.74 to 11.18 ms (0.95x)")
    assert postprocess.sync_cost_line(wide, syncs, 256, 2048).endswith(
        ": 25 to 48 µs over the 6 points timed alone.")


def _workshop_09():
    """The workshop run of 6bba703 (13:41, 3 runs a point, one completion length) that the
    round-22 students read: its table and sync counts."""
    from pathlib import Path
    data = Path(__file__).parent / "data"
    return (pd.read_csv(data / "09_host_sync_token_processing-6bba703-workshop.csv"),
            pd.read_csv(data / "09_host_sync_token_processing_syncs-6bba703-workshop.csv"))


def test_notebook_09s_workshop_copy_reads_its_few_runs_without_a_verdict():
    """The round-22 review: "the per-row loop's time can't be told apart from its time alone"
    beside 136.34 against 27.97 ms, then 255 against 46 µs a sync explained as a real effect, the
    promised "how much longer, in ms" missing; "the same at every completion length" of one
    length; 6.54x and 6.42x far apart, unnamed."""
    table, syncs = _workshop_09()
    wide = postprocess.speedups(table)
    line = postprocess.contention_line(table)
    assert line == (
        "Under this side load the per-row loop took 136.34 ms against 27.97 ms alone (108.37 ms "
        "longer, 4.87x); the host copy took 6.88 ms against 4.36 ms alone (2.52 ms longer, "
        "1.58x). Only 3 runs each: too few to judge.")
    assert "can't be told" not in line and "can't tell" not in line
    loaded = postprocess.loaded_sync_line(wide, syncs, 128, 512, table)
    assert loaded == ("Under this side load the same sum gives about 255 µs per sync removed, "
                      "against 46 µs alone, in 3 runs: too few to judge, so no reason is read "
                      "from them.")
    assert "wait their turn" not in loaded
    assert postprocess.sync_count_line(syncs) == (
        "Syncs per batch: per row 64 to 512 (4 a row, growing with the batch); the host copy 4, "
        "whatever the batch; this preset counts one completion length.")
    head = postprocess.headline_line(table, True, 128, 512)
    assert head == (
        "Alone, batch 128, completions of 512, the host copy against per-row syncs: 6.54x (only 3 "
        "runs: too few to judge).")  # round 29: stats.say, the medians 2% apart not named
    assert postprocess.table_view(wide).loc[1, "speedup"] == "6.42"  # the number named above
    assert postprocess.headline_line(table, False, 128, 512).endswith("not a measurement).")


@pytest.mark.parametrize("commit", RUNS_09)
def test_notebook_09s_full_runs_judge_the_load_and_name_both_speedups(commit):
    """The same lines on four full runs (5 runs a point): a verdict on the load where the runs
    allow one, "the same at every completion length" of two lengths, and the headline's estimate
    named beside the table's medians only where the two print differently."""
    table, syncs = _run_09(commit)
    wide = postprocess.speedups(table)
    line = postprocess.contention_line(table)
    assert "too few" not in line and line.startswith("Under this side load the per-row loop is slower: ")
    assert postprocess.sync_count_line(syncs).endswith("the same at every completion length.")
    loaded = postprocess.loaded_sync_line(wide, syncs, 256, 2048, table)
    assert loaded.endswith("wait behind the load's matmuls at every sync (not measured here).")
    head = postprocess.headline_line(table, True, 256, 2048)
    medians = wide[(wide["condition"] == "alone") & (wide["batch_size"] == 256)
                   & (wide["seq_len"] == 2048)]["speedup"].iloc[0]
    estimate = postprocess.transfer_speedup(table, "alone", batch_size=256, seq_len=2048).estimate
    named = f"; the table's medians: {medians:.2f}x)." in head  # round 29: stats.say's way
    assert named == (max(medians / estimate, estimate / medians) > 1.03)
