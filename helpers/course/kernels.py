"""Notebook 11: reading a decode step kernel by kernel, and the GEMM backends at M = batch.

- ``replay_kernels`` profiles the graph replays of one run only (the prefill runs before the
  profiler starts, so no prompt kernel and no profiler set-up is counted), one launch per step.
- ``kernel_table`` labels each replayed kernel with the part of the step it belongs to, by its
  place in the step: the weight GEMMs come in a fixed order (per block: QKV, attention out, MLP
  up, MLP down; then the LM head), the kernels between a block's QKV GEMM and its attention-out
  GEMM are attention, copies are copies, and the rest is element-wise (norms, GELU, residuals,
  embedding, the greedy choice). Per part: kernels, microseconds, bytes and GB/s per step, and
  how far above its share of the floor it runs.
- ``gemm_backends`` times every weight GEMM shape of the step with cuBLAS, cuBLASLt and
  Inductor's Triton templates, each call replayed from a CUDA graph (no launch gaps), and
  reports the bandwidth each reaches on the weights it streams.
"""
from __future__ import annotations

import math
import time

import pandas as pd
import torch

from . import budget, floor, harness, profiling
from .. import triton_kernels as tk
from ..graphs import cache_bytes, capture_graph, decode_step, hf_decode_step, prefill

# Per-block weight GEMMs of a GPT-2 decode step, in the order the step runs them.
BLOCK_GEMMS = ("QKV", "attention out", "MLP up", "MLP down")
LM_HEAD = "LM head"
UNATTRIBUTED = "GEMM (unattributed)"  # GEMM kernels that do not match the step's plan
IDLE = "idle between kernels"  # the GPU's time in the step with no kernel running
PARTS_ORDER = (*BLOCK_GEMMS, LM_HEAD, UNATTRIBUTED, "attention", "element-wise", "copies", IDLE)


def gemm_kernel(name: str) -> bool:
    """Whether a GPU kernel is a matrix multiply: an Inductor Triton template
    (``triton_tem_*``), or a cuBLAS / CUTLASS kernel. Inductor's other Triton kernels
    (``triton_poi``, ``triton_per``, ``triton_red``) are element-wise or reductions even when
    their name mentions ``addmm`` (a bias added after an external GEMM)."""
    low = name.lower()
    if low.startswith("triton_"):
        return low.startswith("triton_tem")
    if "reduce" in low:  # split-K's reduce kernel (``gemm_helper``) and other reductions
        return False
    return profiling.kernel_kind(name) == "matmul"


def gemm_helper(name: str) -> bool:
    """A kernel cuBLAS launches after a split-K GEMM to add up its partial results
    (``splitKreduce``). The split-K GEMM itself (e.g. cuBLASLt's ``nvjet_..._splitK_...`` in
    bf16) is a GEMM."""
    low = name.lower()
    return not low.startswith("triton_") and "splitkreduce" in low


def gemm_shapes(model, batch_size) -> list:
    """The weight GEMMs of one decode step: name, M, K, N, calls per step, the weights (one per
    block) and whether the step multiplies by their transpose (the LM head is ``x @ wte.T``;
    GPT-2's other weights are stored as (in, out))."""
    cfg, blocks = model.config, model.transformer.h
    rows = []
    modules = {"QKV": lambda b: b.attn.c_attn, "attention out": lambda b: b.attn.c_proj,
               "MLP up": lambda b: b.mlp.c_fc, "MLP down": lambda b: b.mlp.c_proj}
    for name in BLOCK_GEMMS:
        weights = [modules[name](block).weight for block in blocks]
        k, n = weights[0].shape
        rows.append(dict(gemm=name, m=batch_size, k=k, n=n, per_step=cfg.n_layer,
                         weights=weights, transposed=False))
    n, k = model.lm_head.weight.shape
    rows.append(dict(gemm=LM_HEAD, m=batch_size, k=k, n=n, per_step=1,
                     weights=[model.lm_head.weight], transposed=True))
    return rows


def weight_bytes(shape, element) -> int:
    """Bytes of the weights one step reads for a ``gemm_shapes`` row (every call's weight)."""
    return shape["per_step"] * shape["k"] * shape["n"] * element


def gemm_bytes(m, k, n, element) -> int:
    """Bytes one GEMM must move at least: the weight, the input and the output."""
    return (k * n + m * k + m * n) * element


def graph_time_s(fn, iters=20, replays=10) -> float:
    """GPU seconds per call of ``fn()``: ``iters`` calls captured in one CUDA graph, replayed
    ``replays`` times between CUDA events (median), so no launch gap is counted."""
    graph = capture_graph(lambda: [fn() for _ in range(iters)])
    graph.replay()
    times = []
    for _ in range(replays):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) * 1e-3 / iters)
    del graph
    return sorted(times)[len(times) // 2]


TRITON_OPTIONS = {"max_autotune": True, "max_autotune_gemm_backends": "TRITON",
                  "triton.cudagraphs": False}


def _matmul(x, w, transposed):
    return x @ (w.t() if transposed else w)


ADDMM = "addmm (bias fused)"
ROTATE_BYTES = 128 * 2**20  # weights cycled per pass: well over the H100's 50 MB L2 cache


def gemm_backends(model, batch_size, backends=("cuBLAS", "cuBLASLt", "Triton (Inductor)", ADDMM),
                  progress=print) -> pd.DataFrame:
    """Every weight GEMM shape of the step timed with each backend on this GPU: microseconds
    per call, the bytes it must move and the bandwidth that makes. Each shape runs over the
    weights of every block in turn, as the step does, cycled through copies until a pass reads
    ``ROTATE_BYTES`` (weights that fit the GPU's L2 cache would stay there from call to call and
    flatter the bandwidth). ``ADDMM`` is the call the eager step makes, ``torch.addmm`` with the
    bias, which PyTorch may route to a different cuBLAS path (cuBLASLt, with the bias fused)
    than a plain product. A backend that cannot run a shape gets NaN and its error."""
    rows = []
    device = model.lm_head.weight.device
    preferred = torch.backends.cuda.preferred_blas_library()
    for shape in gemm_shapes(model, batch_size):
        weights = [w.detach() for w in shape["weights"]]
        per_pass = sum(w.numel() * w.element_size() for w in weights)
        weights += [w.clone() for _ in range(math.ceil(ROTATE_BYTES / per_pass) - 1) for w in weights]
        x = torch.randn(shape["m"], shape["k"], device=device, dtype=weights[0].dtype)
        bias = torch.zeros(shape["n"], device=device, dtype=weights[0].dtype)
        calls = max(1, 24 // len(weights))  # passes over all the weights per graph replay
        nbytes = gemm_bytes(shape["m"], shape["k"], shape["n"], weights[0].element_size())
        for backend in backends:
            error = ""
            try:
                if backend == "Triton (Inductor)":
                    fn = torch.compile(_matmul, dynamic=False, fullgraph=True, options=TRITON_OPTIONS)
                elif backend == ADDMM:  # with its bias, as the eager step calls it
                    fn = (lambda x, w, t: torch.addmm(bias, x, w.t() if t else w))
                else:
                    torch.backends.cuda.preferred_blas_library(
                        "cublaslt" if backend == "cuBLASLt" else "cublas")
                    fn = _matmul
                seconds = graph_time_s(lambda: [fn(x, w, shape["transposed"]) for w in weights],
                                       iters=calls) / len(weights)
            except Exception as exc:  # a backend without a kernel for this shape
                seconds, error = float("nan"), f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            finally:
                torch.backends.cuda.preferred_blas_library(preferred)
            rows.append({"gemm": shape["gemm"], "shape": f"{shape['m']}x{shape['k']} @ {shape['k']}x{shape['n']}",
                         "per_step": shape["per_step"], "backend": backend, "us": seconds * 1e6,
                         "MB": nbytes / 1e6, "GBps": nbytes / seconds / 1e9, "error": error})
            if progress:
                progress(f"  {shape['gemm']:<14} {backend:<18} "
                         + (f"{seconds * 1e6:7.1f} µs, {nbytes / seconds / 1e9:6.0f} GB/s"
                            if error == "" else error), flush=True)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ the replayed kernels

def replay_kernels(decoder, input_ids, new_tokens, device) -> pd.DataFrame:
    """The GPU kernels of the graph replays of one run of ``new_tokens`` tokens (one launch per
    step), profiled after an unprofiled prefill: columns launch, length (the cache positions the
    launch attends to: its bucket, or every slot for notebook 10's full-buffer steps; NaN for a
    step of one's own, such as notebook 11's Triton step, that reads the filled positions only),
    name, start_us, end_us."""
    if not decoder.graphed or decoder.k != 1:
        raise ValueError("replay_kernels needs a decoder with CUDA graphs and one step per launch")
    prompt_len = input_ids.shape[1]
    prefill(decoder.model, decoder.state, input_ids, decoder.eos)
    launches = new_tokens - 1
    frame = profiling.trace_events(profiling.profile_call(
        lambda: [decoder.launch(j, prompt_len) for j in range(launches)], device))
    gpu = frame[frame["kind"] == "gpu"].sort_values("start_us").reset_index(drop=True)
    if len(gpu) % launches:
        raise RuntimeError(f"{len(gpu)} kernels over {launches} launches: not the same number each")
    per = len(gpu) // launches
    gpu["launch"] = gpu.index // per
    whole = decoder.state.tokens.shape[1] if decoder.step in (decode_step, hf_decode_step) else None
    length_for = getattr(decoder, "length_for", lambda launch, prompt_len: whole)  # buckets or not
    gpu["length"] = [length_for(j, prompt_len) for j in gpu["launch"]]
    gpu["length"] = gpu["length"].astype(float)  # None (filled positions only) becomes NaN
    return gpu[["launch", "length", "name", "start_us", "end_us"]]


def replay_time_us(decoder, input_ids, new_tokens, repeats=3) -> float:
    """µs per launch of the same replays ``replay_kernels`` profiles, timed without the
    profiler: after a prefill, every launch of one run back to back, the median of ``repeats``
    runs (without graphs, the same steps run eagerly)."""
    prompt_len, launches = input_ids.shape[1], new_tokens - 1
    cuda = decoder.state.tokens.is_cuda
    times = []
    for _ in range(repeats):
        prefill(decoder.model, decoder.state, input_ids, decoder.eos)
        if cuda:
            torch.cuda.synchronize()
        begin = time.perf_counter()
        for j in range(launches):
            decoder.launch(j, prompt_len)
        if cuda:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - begin) / launches * 1e6)
    return sorted(times)[len(times) // 2]


def profiled_step_lines(step, floor_ms, bandwidth) -> str:
    """11's profiled rung 1 in short lines (round 34: one line of about 70 words): its kernels
    and µs per step (``step``: the ``kernel_table``'s "step (span)" row), its floor and the copy
    bandwidth every floor divides by, and, where its floor rounds otherwise than ``floor_ms``
    (Measure's floor), what that one adds."""
    lines = [f"rung 1's decode replays (no prompt), profiled: {step['kernels']:.0f} kernels, "
             f"{step['us']:.0f} µs per step",
             f"  floor {step['floor_us']:.0f} µs: the GEMMs' weights and the filled keys and values "
             f"at {bandwidth / 1e9:.0f} GB/s, the copy bandwidth every floor divides by"]
    if f"{step['floor_us']:.0f}" != f"{floor_ms * 1e3:.0f}":
        lines.append(f"  (Measure's {floor_ms:.3f} ms floor adds the biases, layer norms and "
                     "position table)")
    return "\n".join(lines)


def profiler_note(profiled_us, timed_us) -> str:
    """How much slower (or faster) profiled replays ran than the same replays timed without the
    profiler, both in µs per step."""
    ratio = profiled_us / timed_us
    return (f"the same replays take {timed_us:.0f} µs without the profiler, so profiled ones run "
            f"{abs(ratio - 1):.0%} {'slower' if ratio >= 1 else 'faster'}")


def gaps_ranked(table: pd.DataFrame) -> str:
    """A ``kernel_table``'s layer GEMMs together (or its unattributed GEMMs), attention and
    element-wise, ranked by µs above their floors, each with its µs, floor and kernels per step:
    "above their floors: the layer GEMMs together, 161 µs (276 µs against 115, 48 kernels), ...";
    the element-wise group also gives its µs per kernel ("27 kernels of 2.2 µs each"), and the
    GPU's idle time between kernels inside each replay is ranked with them, saying that the
    profiler may add to it (round 24 read rung 1's 267 µs as all real gaps while the profiled
    replays ran 140 µs slower): "idle between kernels 40 µs (the profiler may add to it)"; the
    parts left (the LM head, copies) last, together."""
    parts = table.set_index("part")
    groups = {"the layer GEMMs together": [p for p in BLOCK_GEMMS if p in parts.index],
              "GEMMs (unattributed)": [p for p in (UNATTRIBUTED,) if p in parts.index],
              "attention": [p for p in ("attention",) if p in parts.index],
              "element-wise": [p for p in ("element-wise",) if p in parts.index]}
    rows = [(name, parts.loc[members, ["us", "floor_us", "kernels"]].sum())
            for name, members in groups.items() if members]
    if IDLE in parts.index:  # no kernel runs: all of it is above the floor
        rows.append((IDLE, parts.loc[IDLE, ["us", "floor_us", "kernels"]]))
    rows.sort(key=lambda r: r[1]["us"] - r[1]["floor_us"], reverse=True)
    grouped = {m for members in groups.values() for m in members} | {IDLE, "step (span)"}
    rest = [p for p in parts.index if p not in grouped]  # round 28: LM head, copies left out unsaid
    said = "; ".join(f"{name} {r['us'] - r['floor_us']:.0f} µs" + (
                     " (the profiler may add to it)" if name == IDLE else
                     f" ({r['us']:.0f} against {r['floor_us']:.0f}, {r['kernels']:.0f} "
                     f"kernels{_each(name, r)})") for name, r in rows)
    if rest:
        above = (parts.loc[rest, "us"] - parts.loc[rest, "floor_us"]).sum()
        said += f"; the rest ({', '.join(rest)}) {above:.0f} µs together"
    return f"above their floors, per step: {said}"


def _each(name, row) -> str:
    """The element-wise kernels' average µs per kernel (their floor is 0: what a small kernel
    costs by itself), as ``gaps_ranked`` appends it; empty for the other groups."""
    if name != "element-wise" or not row["kernels"] > 0:
        return ""
    return f" of {row['us'] / row['kernels']:.1f} µs each"


def label_parts(names, n_layer, attention_gemms=0) -> list:
    """The part of the step each kernel of one step belongs to (see the module's docstring).
    ``attention_gemms``: how many GEMMs each block's attention launches itself between QKV and
    attention out (2 for the lean step's batched matmuls, 0 for the fused step). If the GEMMs
    found do not match that plan, every GEMM is labelled 'GEMM (unattributed)'."""
    plan = []
    for _ in range(n_layer):
        plan += ["QKV"] + ["attention"] * attention_gemms + list(BLOCK_GEMMS[1:])
    plan.append(LM_HEAD)
    found = sum(gemm_kernel(n) for n in names)
    matched = found == len(plan)
    labels, gemm, current = [], 0, None
    for name in names:
        if gemm_kernel(name):
            current = plan[gemm] if matched else UNATTRIBUTED
            gemm += 1
            labels.append(current)
        elif gemm_helper(name) and current is not None:
            labels.append(current)
        elif current in ("QKV", "attention"):  # after a block's QKV, before attention out:
            labels.append("attention")          # the cache write, the scores, softmax, values
        elif profiling.kernel_kind(name) == "copy":
            labels.append("copies")
        else:
            labels.append("element-wise")
    return labels


def step_kernels(kernels: pd.DataFrame, n_layer, attention_gemms=0) -> pd.DataFrame:
    """The kernels of one replayed step (the first launch), in order, with their part and µs
    (every launch replays the same kernels, so these parts label every launch)."""
    first = kernels[kernels["launch"] == kernels["launch"].min()]
    return pd.DataFrame({"part": label_parts(first["name"].tolist(), n_layer, attention_gemms),
                         "kernel": first["name"].str.slice(0, 120).tolist(),
                         "us": (first["end_us"] - first["start_us"]).round(2).tolist()})


def kernel_table(kernels: pd.DataFrame, model, batch_size, prompt_len, new_tokens, bandwidth,
                 attention_gemms=0, logits_written=True) -> pd.DataFrame:
    """Per part of a decode step (each weight GEMM shape, attention, element-wise, copies, the
    idle time between kernels), per step on average: kernels, µs, MB that part moves (a GEMM its weight and
    activations, attention the cache it reads), the GB/s it reached, its share of the floor in µs and the µs above it. The floor of attention
    is the keys and values of the filled positions; element-wise kernels, copies and idle time
    have none (their bytes are a few activations). A last row adds the step up. With
    ``logits_written=False`` (the Triton step's fused LM head, which keeps each tile's largest
    logit and never writes the logits) the LM head's bytes leave its output out."""
    cfg, element = model.config, model.lm_head.weight.element_size()
    steps = kernels["launch"].nunique()
    labels = step_kernels(kernels, cfg.n_layer, attention_gemms)["part"].tolist()
    kernels = kernels.assign(part=labels * steps, us=kernels["end_us"] - kernels["start_us"])
    spans = kernels.groupby("launch").agg(first=("start_us", "min"), last=("end_us", "max"))
    busy = sum(profiling.busy_idle(zip(g["start_us"], g["end_us"]))[1]
               for _, g in kernels.groupby("launch"))
    span = float((spans["last"] - spans["first"]).sum())
    shapes = {s["gemm"]: s for s in gemm_shapes(model, batch_size)}
    moved = {name: s["per_step"] * gemm_bytes(s["m"], s["k"], s["n"], element)
             for name, s in shapes.items()}  # bytes each GEMM shape moves per step
    if not logits_written:  # the fused LM head reads its weight and input, writes no logits
        head = shapes[LM_HEAD]
        moved[LM_HEAD] -= head["per_step"] * head["m"] * head["n"] * element
    weights = sum(weight_bytes(s, element) for s in shapes.values())
    filled = floor.kv_bytes_per_step(cfg, batch_size, prompt_len, new_tokens, element)
    lengths = kernels.groupby("launch")["length"].first()  # positions each launch attends to
    read_kv = (float(lengths.map(lambda n: cache_bytes(model, batch_size, int(n))).mean())
               if lengths.notna().all() else filled)  # NaN: the step reads the filled positions
    rows = []
    for part, group in kernels.groupby("part", sort=False):
        if part in shapes:
            nbytes, floor_bytes = moved[part], weight_bytes(shapes[part], element)
        elif part == "attention":
            nbytes, floor_bytes = read_kv, filled
        elif part == UNATTRIBUTED:  # every weight GEMM together
            nbytes, floor_bytes = sum(moved.values()), weights
            if attention_gemms:  # the lean step's attention matmuls are among them
                nbytes, floor_bytes = nbytes + read_kv, floor_bytes + filled
        else:
            nbytes, floor_bytes = float("nan"), 0.0
        us = float(group["us"].sum()) / steps
        rows.append({"part": part, "kernels": len(group) / steps, "us": us,
                     "MB": nbytes / 1e6, "GBps": nbytes / us / 1e3 if us else float("nan"),
                     "floor_us": floor_bytes / bandwidth * 1e6})
    idle = (span - busy) / steps
    rows.append({"part": IDLE, "kernels": 0.0, "us": idle, "MB": float("nan"),
                 "GBps": float("nan"), "floor_us": 0.0})
    table = pd.DataFrame(rows)
    table["above_floor_us"] = table["us"] - table["floor_us"]
    table["part"] = pd.Categorical(table["part"], [p for p in PARTS_ORDER if p in set(table["part"])]
                                   + sorted(set(table["part"]) - set(PARTS_ORDER)), ordered=True)
    table = table.sort_values("part").reset_index(drop=True)
    table["part"] = table["part"].astype(str)
    # The step's floor is always the weights plus the filled positions, even where the rows
    # cannot split it (GEMMs off the plan leave attention among the element-wise kernels).
    total = {"part": "step (span)", "kernels": table["kernels"].sum(), "us": span / steps,
             "MB": table["MB"].sum(), "floor_us": (weights + filled) / bandwidth * 1e6}
    total["GBps"] = total["MB"] / total["us"] * 1e3 if total["us"] else float("nan")
    total["above_floor_us"] = total["us"] - total["floor_us"]
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True)


# The Triton step's GEMM kernels (notebook 11's ``fast_decode_step``), by part.
TRITON_GEMMS = {"QKV": "tk.qkv_attention (its GEMM)", "attention out": "tk.linear (+ residual, norm)",
                "MLP up": "tk.linear (+ GELU)", "MLP down": "tk.linear (+ residual, norm)",
                LM_HEAD: "tk.lm_head_argmax"}


GBPS = "GB/s (weight, input, output)"  # the bytes gemm_bytes counts, not split-K's partial sums


def gemm_rows(table: pd.DataFrame, model, batch_size, names=None) -> pd.DataFrame:
    """The weight GEMM rows of a ``kernel_table``, one per shape: the kernel (``names``, default
    ``TRITON_GEMMS``), its shape, calls per step, µs per step and the GB/s it reached on the bytes
    it must move (``GBPS``: the weight, its input and output, once each; not split-K's partial
    sums)."""
    names = TRITON_GEMMS if names is None else names
    parts = table.set_index("part")
    rows = [{"part": s["gemm"], "kernel": names.get(s["gemm"], ""),
             "shape": f"{s['m']}x{s['k']} @ {s['k']}x{s['n']}", "calls per step": s["per_step"],
             "µs per step": float(parts.loc[s["gemm"], "us"]),
             GBPS: float(parts.loc[s["gemm"], "GBps"])}
            for s in gemm_shapes(model, batch_size) if s["gemm"] in parts.index]
    return pd.DataFrame(rows).set_index("part").round({"µs per step": 1, GBPS: 0})


# ------------------------------------------------------------------ the bf16 rung

def bf16_bytes_line(bf16_ms, float32_ms) -> str:
    """The bf16 rung's time per step against the float32 rung's: half the bytes, and how much
    faster the step got for them (a step bound by its bytes would be about twice as fast). The
    ratio divides the printed times (round 35: 0.331 / 0.451 printed as 74%, which they give as
    73%); round 37: a ratio, not a share, since the line above prints the tokens' agreement as
    a percentage too (two unrelated 74%s), and no second "timed in different rounds"."""
    ratio = round(bf16_ms, 3) / round(float32_ms, 3)
    how = ("so bytes are not what bounds this step" if ratio > 0.75 else
           "so bytes bound only part of it" if ratio > 0.6 else "as this one nearly is: bytes "
           "bound much of it")
    moved = f"{1 / ratio:.2f}x faster" if ratio <= 1 else f"{ratio:.2f}x slower"
    return (f"Half the bytes made the step {moved}, from {float32_ms:.3f} ms (float32) to "
            f"{bf16_ms:.3f} ms; a step bound by its bytes would be about twice as fast, {how}.")


def bf16_rung(build, model, model16, input_ids, new_tokens, params, name="bf16") -> dict:
    """11's bf16 rung, timed in its own rounds (``params``: the lesson's ``P``; a quarter of its
    time budget): ``build(m)`` makes the last float32 rung's decoder for the model ``m``. The
    row ``bf16_line`` reads: the timing, ``per_step_ms``, the floor at two bytes a value, the
    share of generated tokens that agree with the float32 rung's, where differing rows first
    differ, and the largest next-token logit difference on the prompt."""
    fast16, fast32 = build(model16), build(model)
    rows, outputs = harness.compare_row({name: lambda: fast16(input_ids, new_tokens)},
                                        device=params.device, batch_size=params.batch_size,
                                        seq_len=new_tokens, repeats=params.repeats,
                                        warmup=params.warmup, budget_s=params.budget_s / 4)
    floor16 = budget.floor_ms(model16, params.device, params.batch_size, params.prompt_len,
                              new_tokens, dtype_bytes=2)
    out32, out16 = fast32(input_ids, new_tokens), next(iter(outputs.values()))
    prompt_len = input_ids.shape[1]
    return dict(rows[0], per_step_ms=rows[0]["median_s"] / new_tokens * 1e3, floor_ms=floor16,
                agreement=token_agreement(out32, out16, prompt_len),
                first_difference=first_difference(out32, out16, prompt_len),
                max_logit_diff=largest_logit_difference(model, model16, input_ids))


def bf16_line(row, float32_ms) -> str:
    """What 11 prints of ``bf16_rung``'s row: its time per step against its own floor (a
    division of the printed values), the tokens' agreement with float32, and
    ``bf16_bytes_line`` against the float32 rung's ``float32_ms``."""
    ms, low = row["per_step_ms"], row["floor_ms"]
    text = (f"bf16 rung (timed in its own rounds, not interleaved with the float32 rungs): "
            f"{ms:.3f} ms per step, {round(ms, 3) / round(low, 3):.1f}x its own floor of "
            f"{low:.3f} ms; {row['agreement']:.0%} of generated tokens agree with float32")
    if row["agreement"] < 1:
        text += (f" (the rows that differ first differ, at the median, at new token "
                 f"{row['first_difference']:.0f})")
    text += f"; largest next-token logit difference on the prompt {row['max_logit_diff']:.3f}"
    return text + "\n" + bf16_bytes_line(ms, float32_ms)


def token_agreement(reference, other, prompt_len) -> float:
    """Share of the generated positions (those both runs produced) whose token is the same."""
    n = min(reference.shape[1], other.shape[1])
    a, b = reference[:, prompt_len:n], other[:, prompt_len:n]
    return float((a == b).float().mean()) if a.numel() else float("nan")


def first_difference(reference, other, prompt_len) -> float:
    """The median new-token index (1 = the first new token) at which a row of ``other`` first
    differs from ``reference``, over the rows that differ at all (NaN where none does): after
    one flipped token a row continues from a different text, so later tokens differ too."""
    n = min(reference.shape[1], other.shape[1])
    differ = reference[:, prompt_len:n] != other[:, prompt_len:n]
    rows = differ.any(dim=1)
    if not bool(rows.any()):
        return float("nan")
    return float(differ[rows].float().argmax(dim=1).add(1).float().median())


@torch.no_grad()
def largest_logit_difference(model, other, input_ids) -> float:
    """The largest absolute difference between two models' next-token logits for the same
    prompt (the other model's logits in float32)."""
    a = model(input_ids).logits[:, -1, :].float()
    b = other(input_ids).logits[:, -1, :].float()
    return float((a - b).abs().max())


def programs_line(n_embd: int, sms=None) -> str:
    """How many programs the N = ``n_embd`` GEMMs run (``tk.config_for``, float32), beside the
    GPU's SM count (round 28: "only 24 programs" meant nothing without the 132 SMs beside it;
    round 32: printed where the lesson says it, so ``sms`` is None without a CUDA GPU)."""
    block_n, _, split, *_ = tk.config_for(n_embd, n_embd, torch.float32)
    programs = -(-n_embd // block_n)
    gpu = (f"this GPU has {sms} SMs (streaming multiprocessors, each running programs)" if sms
           else "no CUDA GPU here, so no SMs to count")
    split_k = f", {programs * split} with split-K in {split}" if split > 1 else ""
    return (f"{gpu}; a GEMM with N = {n_embd} at {block_n} columns per program runs "
            f"{programs} programs{split_k}")


def gemm_rows_note(names=None) -> str:
    """What the GEMM table leaves out (round 32: its GB/s read as each GEMM's whole cost): the
    row kernel after each ``tk.linear`` given a ``norm`` (it adds split-K's pieces, the bias and
    the residual, and takes the layer norm) is counted under element-wise, and QKV's pieces are
    added up inside attention."""
    names = TRITON_GEMMS if names is None else names
    rowed = [part for part, kernel in names.items() if "norm" in kernel]
    return (f"The GEMM kernels alone: the row kernels after {' and '.join(rowed)} (adding split-K's "
            "pieces, the bias and the residual, then the layer norm) count under element-wise, "
            "not in these rows, and attention adds up QKV's pieces.")


NEAR_COPY = 0.8  # a GEMM at this share of the copy bandwidth or more comes near it
FRACTION = 0.6  # the layer GEMMs all below this share reach only a fraction of it


def gemm_bandwidth_line(table: pd.DataFrame, bandwidth) -> str:
    """The GEMM table read against the copy bandwidth (round 33: 11's Summary said "why the
    kernels stay above it, this lesson does not measure" beside a table with the layer GEMMs at
    0.76-1.47 TB/s of 4.15 and the LM head at 3.7): the slowest and fastest layer GEMM and the
    LM head, in GB/s and as shares of ``bandwidth`` (bytes/s), and which come near it. Empty
    without the GEMM rows or a bandwidth (a CPU run)."""
    parts = table.set_index("part")
    layers = [p for p in BLOCK_GEMMS if p in parts.index]
    copy = bandwidth / 1e9
    if not layers or LM_HEAD not in parts.index or not (math.isfinite(copy) and copy > 0):
        return ""
    low, high = (round(f(parts.loc[layers, "GBps"])) for f in (min, max))
    head = round(float(parts.loc[LM_HEAD, "GBps"]))
    small, large = high / copy < FRACTION, head / copy >= NEAR_COPY
    said = ("the small GEMMs reach a fraction of the bandwidth, the large one nearly all of it"
            if small and large else
            "the large one comes near the bandwidth" if large else
            "neither the small GEMMs nor the large one comes near the bandwidth" if small else "")
    return (f"The GEMM table against the copy bandwidth of {copy:.0f} GB/s: the layer GEMMs (one "
            f"small kernel per layer and shape) reach {low} to {high} GB/s, {low / copy:.0%} to "
            f"{high / copy:.0%} of it; the LM head (one large kernel) {head} GB/s, "
            f"{head / copy:.0%}" + (f": {said}." if said else "."))
