"""Notebook 11's kernel table and GEMM shapes, on known inputs (the profiler and the GEMM
backends themselves need a GPU: tests/test_gpu.py)."""
import math
import pandas as pd
import pytest
import torch

from helpers.course import floor, kernels
from helpers.model import build_model

LAYERS = 2


def step_names(attention_gemms=0, splitk=False):
    """The kernel names of one made-up decode step of a 2-block model."""
    names = ["triton_red_fused_add_embedding_native_layer_norm_0"]
    for _ in range(LAYERS):
        names += ["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n"]                      # QKV
        names += ["triton_poi_fused_index_put_1"]                                 # cache write
        names += ["gemm_batched_scores"] * attention_gemms
        names += ["triton_per_fused__softmax_2", "triton_red_fused_mul_sum_3"]
        names += ["triton_tem_fused_addmm_view_4"]                                # attention out
        names += ["triton_per_fused_add_addmm_native_layer_norm_5"]
        names += ["triton_tem_fused_addmm_gelu_6"]                                # MLP up
        names += ["triton_poi_fused_addmm_gelu_7"]                                # bias + GELU
        names += (["nvjet_sm90_tst_64x32_64x16_4x1_v_bz_splitK_bias_NNT"] if splitk  # MLP down
                  else ["void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64>"])
        names += ["void cublasLt::splitKreduce_kernel<32, 16>"] if splitk else []
        names += ["triton_per_fused_add_native_layer_norm_8"]
    names += ["gemv2T_kernel_val", "triton_red_fused_argmax_9", "Memcpy DtoD (Device -> Device)"]
    return names


def test_gemm_kernels_are_told_from_fused_elementwise_kernels():
    assert kernels.gemm_kernel("triton_tem_fused_addmm_0")
    assert not kernels.gemm_kernel("triton_poi_fused_addmm_gelu_1")  # a bias after a GEMM
    assert kernels.gemm_kernel("sm90_xmma_gemm_f32f32") and kernels.gemm_kernel("gemv2T_kernel")
    assert not kernels.gemm_kernel("void cublasLt::splitKreduce_kernel<32>")
    assert kernels.gemm_helper("void cublasLt::splitKreduce_kernel<32>")
    # cuBLASLt's split-K GEMM (bf16 MLP down on the H100) is a GEMM, its reduce kernel a helper
    assert kernels.gemm_kernel("nvjet_sm90_tst_64x32_64x16_4x1_v_bz_splitK_bias_NNT")
    assert not kernels.gemm_helper("nvjet_sm90_tst_64x32_64x16_4x1_v_bz_splitK_bias_NNT")
    assert not kernels.gemm_kernel("Memcpy DtoD (Device -> Device)")


@pytest.mark.parametrize("attention_gemms,splitk", [(0, False), (2, True)])
def test_parts_follow_the_order_of_the_step(attention_gemms, splitk):
    names = step_names(attention_gemms, splitk)
    labels = kernels.label_parts(names, LAYERS, attention_gemms)
    block = ["QKV", "attention", *(["attention"] * attention_gemms), "attention", "attention",
             "attention out", "element-wise", "MLP up", "element-wise", "MLP down",
             *(["MLP down"] if splitk else []), "element-wise"]
    assert labels == ["element-wise"] + block * LAYERS + ["LM head", "element-wise", "copies"]


def test_gemms_that_do_not_match_the_plan_are_not_attributed():
    names = step_names()
    labels = kernels.label_parts(names, LAYERS + 1)  # a plan with one block too many
    assert "QKV" not in labels and labels.count("GEMM (unattributed)") == 4 * LAYERS + 1


def test_kernel_table_adds_up_a_known_profile():
    model = build_model("tiny", "cpu")
    cfg = model.config
    names = step_names()
    rows, t = [], 0.0
    for launch in range(3):
        for name in names:
            duration = 10.0 if kernels.gemm_kernel(name) else 2.0
            rows.append({"launch": launch, "length": 16, "name": name, "start_us": t,
                         "end_us": t + duration})
            t += duration + 1.0  # one idle microsecond after every kernel
        t += 100.0  # the host's time between launches is not part of any step
    frame = pd.DataFrame(rows)
    bandwidth = 1e12
    table = kernels.kernel_table(frame, model, 2, 4, 8, bandwidth).set_index("part")
    n_gemm = 4 * cfg.n_layer + 1
    assert cfg.n_layer == LAYERS
    assert table.loc["QKV", "kernels"] == LAYERS and table.loc["QKV", "us"] == 10.0 * LAYERS
    assert table.loc["LM head", "us"] == 10.0
    assert table.loc["attention", "kernels"] == 3 * LAYERS and table.loc["attention", "us"] == 6.0 * LAYERS
    assert table.loc["copies", "us"] == 2.0
    step = table.loc["step (span)"]
    busy = 10.0 * n_gemm + 2.0 * (len(names) - n_gemm)
    assert step["us"] == pytest.approx(busy + len(names) - 1)
    assert table.loc["idle between kernels", "us"] == pytest.approx(len(names) - 1)
    # every part's floor: a GEMM's weights, attention's filled positions, nothing for the rest
    w = model.transformer.h[0].attn.c_attn.weight
    assert table.loc["QKV", "floor_us"] == pytest.approx(LAYERS * w.numel() * 4 / bandwidth * 1e6)
    filled = 2 * LAYERS * 2 * cfg.n_embd * 4 * (4 + 7 / 2)
    assert table.loc["attention", "floor_us"] == pytest.approx(filled / bandwidth * 1e6)
    assert table.loc["element-wise", "floor_us"] == 0.0
    assert step["floor_us"] == pytest.approx(table.drop("step (span)")["floor_us"].sum())
    assert step["above_floor_us"] == pytest.approx(step["us"] - step["floor_us"])
    # the fused LM head never writes its logits: its bytes leave them out (batch 2 x vocab x 4)
    fused = kernels.kernel_table(frame, model, 2, 4, 8, bandwidth, logits_written=False)
    head = fused.set_index("part").loc["LM head"]
    assert table.loc["LM head", "MB"] - head["MB"] == pytest.approx(2 * cfg.vocab_size * 4 / 1e6)
    assert head["floor_us"] == table.loc["LM head", "floor_us"]
    # notebook 11's ranking reads the same table: the four layer GEMMs of both blocks as one group
    ranked = kernels.gaps_ranked(fused)
    assert ranked.startswith("above their floors, per step: ") and ranked.count(" kernels") == 4 and "idle between kernels " in ranked
    assert ranked.count(" µs each)") == ("element-wise" in ranked)  # element-wise: µs per kernel
    assert "the layer GEMMs together " in ranked and f"{4 * LAYERS} kernels)" in ranked


def test_gemm_rows_show_each_gemm_kernel_with_its_shape_time_and_bandwidth():
    model = build_model("tiny", "cpu")
    cfg = model.config
    rows = [{"launch": 0, "length": 16, "name": name, "start_us": 20.0 * i,
             "end_us": 20.0 * i + (10.0 if kernels.gemm_kernel(name) else 2.0)}
            for i, name in enumerate(step_names())]
    table = kernels.kernel_table(pd.DataFrame(rows), model, 2, 4, 8, 1e12)
    gemms = kernels.gemm_rows(table, model, 2)
    assert list(gemms.index) == ["QKV", "attention out", "MLP up", "MLP down", "LM head"]
    assert list(gemms.columns) == ["kernel", "shape", "calls per step", "µs per step", kernels.GBPS]
    qkv = gemms.loc["QKV"]
    assert qkv["shape"] == f"2x{cfg.n_embd} @ {cfg.n_embd}x{3 * cfg.n_embd}"
    assert qkv["kernel"] == "tk.qkv_attention (its GEMM)" and qkv["calls per step"] == LAYERS
    assert qkv["µs per step"] == 10.0 * LAYERS
    part = table.set_index("part").loc["QKV"]
    assert qkv[kernels.GBPS] == round(part["MB"] / part["us"] * 1e3)


def test_bf16_line_reads_half_the_bytes_against_the_time():
    # the 14:54 H100 run: bf16 0.435 ms against float32 0.520 ms per step
    line = kernels.bf16_bytes_line(0.435, 0.520)
    assert line.startswith("Half the bytes made the step 1.20x faster, from 0.520 ms (float32) to "
                           "0.435 ms; ")
    assert line.endswith("so bytes are not what bounds this step.")
    assert "only part" in kernels.bf16_bytes_line(0.35, 0.520)
    assert "bytes bound much of it" in kernels.bf16_bytes_line(0.27, 0.520)


def test_gemm_shapes_and_weight_floor_of_the_tiny_model():
    model = build_model("tiny", "cpu")
    shapes = {s["gemm"]: s for s in kernels.gemm_shapes(model, 32)}
    e, v = model.config.n_embd, model.config.vocab_size
    assert [(s["k"], s["n"]) for s in shapes.values()] == [(e, 3 * e), (e, e), (e, 4 * e), (4 * e, e), (e, v)]
    assert shapes["LM head"]["transposed"] and len(shapes["QKV"]["weights"]) == model.config.n_layer
    x = torch.randn(32, e)
    for s in shapes.values():  # the layout the step multiplies by
        w = s["weights"][0]
        assert kernels._matmul(x[:, :s["k"]] if s["k"] == e else torch.randn(32, s["k"]), w,
                               s["transposed"]).shape == (32, s["n"])
    weights = sum(s["per_step"] * s["k"] * s["n"] for s in shapes.values()) * 4
    assert sum(kernels.weight_bytes(s, 4) for s in shapes.values()) == weights
    assert kernels.gemm_bytes(32, e, 3 * e, 4) == (e * 3 * e + 32 * e + 32 * 3 * e) * 4


def test_token_agreement_and_logit_difference():
    a = torch.tensor([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]])
    b = torch.tensor([[1, 2, 3, 9, 5], [1, 2, 3, 9, 5]])
    assert kernels.token_agreement(a, b, 2) == pytest.approx(2 / 3)
    assert kernels.token_agreement(a, a[:, :4], 2) == 1.0
    assert kernels.first_difference(a, b, 2) == 2.0  # new tokens 3, 4, 5 against 3, 9, 5
    assert math.isnan(kernels.first_difference(a, a, 2))
    model = build_model("tiny", "cpu")
    ids = torch.randint(0, model.config.vocab_size, (2, 5))
    assert kernels.largest_logit_difference(model, model, ids) == 0.0
    other = build_model("tiny", "cpu", seed=1)
    assert kernels.largest_logit_difference(model, other, ids) > 0.0


def test_unattributed_gemms_keep_the_weights_floor():
    """When the GEMMs found do not match the plan, their row still carries every weight's floor."""
    model = build_model("tiny", "cpu")
    names = step_names()
    names.insert(3, "sm90_xmma_gemm_extra")  # one GEMM kernel more than the plan
    frame = pd.DataFrame([{"launch": 0, "length": 16, "name": n, "start_us": 3.0 * i,
                           "end_us": 3.0 * i + 2.0} for i, n in enumerate(names)])
    table = kernels.kernel_table(frame, model, 2, 4, 8, 1e12).set_index("part")
    weights = sum(s["per_step"] * s["k"] * s["n"] for s in kernels.gemm_shapes(model, 2)) * 4
    assert table.loc[kernels.UNATTRIBUTED, "floor_us"] == pytest.approx(weights / 1e12 * 1e6)
    assert table.loc[kernels.UNATTRIBUTED, "kernels"] == 4 * LAYERS + 2
    # the step's floor is still the weights plus the filled positions (attention has no row)
    filled = floor.kv_bytes_per_step(model.config, 2, 4, 8, 4)
    assert "attention" not in table.index
    assert table.loc["step (span)", "floor_us"] == pytest.approx((weights + filled) / 1e12 * 1e6)
    listed = kernels.step_kernels(frame, LAYERS)
    assert listed["kernel"].tolist() == names and listed["part"].iloc[3] == kernels.UNATTRIBUTED


# ------------------------------------------------------------------ notebook 11 on a CPU

def test_triton_step_references_decode_the_naive_tokens():
    """On a CPU every kernel of notebook 11's step is its PyTorch reference: the step, the graph
    decoder and FastDecoder give the naive loop's tokens, forced stops included."""
    from helpers import graphs
    from helpers.fast_step import FastDecoder, fast_decode_step
    from helpers.generation import generate_naive, uniform_stop_lengths
    from helpers.model import exact_matmul, make_prompt

    model = build_model("tiny")
    eos = model.config.eos_token_id
    prompt = make_prompt(5, 4, model.config.vocab_size, eos, seed=3)
    with exact_matmul():
        for stops in (None, uniform_stop_lengths(5, 1, 9, seed=1)):
            reference = generate_naive(model, prompt, 10, eos, stops)
            for k in (1, 4):
                plain = graphs.GraphDecoder(model, 5, 14, eos, k, step=fast_decode_step)
                assert torch.equal(plain(prompt, 10, stops), reference)
                assert torch.equal(FastDecoder(model, 5, 14, eos, k)(prompt, 10, stops), reference)


def test_triton_kernel_references_agree_with_the_model():
    """The references the GPU kernels are checked against compute what GPT-2's modules do."""
    import torch.nn.functional as F
    from types import SimpleNamespace
    from helpers import triton_kernels as tk
    from helpers.fast_step import norm
    from helpers.graphs import advance

    torch.manual_seed(0)
    model = build_model("tiny")
    block, h = model.transformer.h[0], torch.randn(3, 64)
    y, normed = tk.linear_ref(h, block.mlp.c_fc.weight, block.mlp.c_fc.bias, gelu=True,
                              norm=(torch.ones(256), torch.zeros(256), 1e-5))
    assert torch.allclose(y, F.gelu(block.mlp.c_fc(h), approximate="tanh"))
    assert torch.allclose(normed, F.layer_norm(y, (256,)), atol=1e-6)
    logits = model.lm_head(h)
    best, index = tk.lm_head_argmax_ref(h, model.lm_head.weight)
    assert torch.equal(index[:, 0], logits.argmax(-1))
    embedded, x = tk.embed_ref(torch.tensor([1, 2, 3]), torch.tensor(4), model.transformer.wte.weight,
                               model.transformer.wpe.weight, norm(block.ln_1))
    assert torch.allclose(x, block.ln_1(embedded))

    def state():
        return SimpleNamespace(tokens=torch.zeros(3, 8, dtype=torch.long), token=torch.zeros(3, dtype=torch.long),
                               finished=torch.tensor([False, True, False]),
                               stop_lengths=torch.tensor([9, 9, 2]), position=torch.tensor(3),
                               step=torch.tensor(1))
    a, b = state(), state()
    tk.finish_step_ref(best, index, a, 511)
    advance(b, logits, 511)
    for field in ("tokens", "token", "finished", "position", "step"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field


def test_qkv_attention_on_a_cpu_is_the_two_references():
    """Without Triton, ``qkv_attention`` is the QKV GEMM's reference followed by attention's:
    the same output and the same cache write."""
    from helpers import triton_kernels as tk
    torch.manual_seed(3)
    x, w, b = torch.randn(4, 64), torch.randn(64, 192) / 8, torch.randn(192)
    kv1 = torch.randn(2, 4, 2, 16, 32)
    kv2 = kv1.clone()
    where = torch.tensor(5)
    got = tk.qkv_attention(x, w, b, kv1, where, 2)
    want = tk.decode_attention_ref(tk.linear_ref(x, w, b), kv2, where, 2)
    assert torch.equal(got, want) and torch.equal(kv1, kv2)
    assert not torch.equal(kv1[:, :, :, 5], torch.zeros_like(kv1[:, :, :, 5]))
    with pytest.raises(ValueError, match="multiple of split x block_k"):
        tk.qkv_attention(x, w, b, kv1, where, 2, config=(32, 64, 4, 4, 4))  # K = 64: pieces of 16


def test_attention_of_a_step_that_reads_the_filled_positions_counts_their_bytes():
    """A launch with no length (NaN: notebook 11's Triton step, which reads positions 0..position
    only) counts attention's bytes as its floor does: the filled positions, not the buffer."""
    model = build_model("tiny", "cpu")
    names = step_names()
    frame = pd.DataFrame([{"launch": 0, "length": float("nan"), "name": n, "start_us": 3.0 * i,
                           "end_us": 3.0 * i + 2.0} for i, n in enumerate(names)])
    table = kernels.kernel_table(frame, model, 2, 4, 8, 1e12).set_index("part")
    filled = floor.kv_bytes_per_step(model.config, 2, 4, 8, 4)
    assert table.loc["attention", "MB"] == pytest.approx(filled / 1e6)


def test_replay_time_us_times_one_runs_launches_without_the_profiler():
    from helpers.graphs import GraphDecoder
    from helpers.model import make_prompt
    model = build_model("tiny", "cpu", seed=0)
    eos = model.config.eos_token_id
    prompt = make_prompt(2, 5, model.config.vocab_size, eos, "cpu", seed=2)
    decoder = GraphDecoder(model, 2, 5 + 6, eos)  # on a CPU the same steps run eagerly
    us = kernels.replay_time_us(decoder, prompt, 6, repeats=2)
    assert math.isfinite(us) and us > 0


def test_prefetch_arguments(monkeypatch):
    """The L2 prefetch is asked only with PDL; one 128-byte line holds 32 float32 or 64 bf16
    values, so a row of 64 float32 takes two lines and narrower rows one (partly)."""
    from helpers import triton_kernels as tk
    monkeypatch.setattr(tk, "PDL", True)
    assert tk._prefetch(True, torch.float32, 32) == {"PREFETCH": True, "LINE": 32, "LINES": 1}
    assert tk._prefetch(True, torch.float32, 64) == {"PREFETCH": True, "LINE": 32, "LINES": 2}
    assert tk._prefetch(True, torch.bfloat16, 16) == {"PREFETCH": True, "LINE": 16, "LINES": 1}
    assert tk._prefetch(True, torch.bfloat16, 64)["LINE"] == 64
    assert tk._prefetch(False, torch.float32, 32)["PREFETCH"] is False
    monkeypatch.setattr(tk, "PDL", False)
    assert tk._prefetch(True, torch.float32, 32)["PREFETCH"] is False
