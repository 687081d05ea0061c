"""The ladder (notebook 08): every method of the course, by name, against the naive loop,
``generate()`` and the floor; ``python -m helpers.bench`` prints it on any CUDA GPU (or, as a test
of the code, runs the tiny model on a CPU).

- ``LADDER``: the methods as a plain table, name -> (notebook, builder, options, GPU only). A
  builder is a
  top-level function ``builder(lab, prompt, new_tokens, **options) -> call`` that prepares what
  the method keeps between calls (a static cache, a captured graph) and returns the call to time.
- ``Lab``: what the methods of one ladder share: the model, EOS, the compiled steps (compiled
  once per mode) and the static caches (one object per shape, so no compiled step re-records).
- ``course_methods`` picks the methods a run measures; ``run_ladder`` times them (a method that
  raises becomes a ``failed`` row, which ``run.save_table`` then turns into an error).
- ``add_ladder_columns`` and ``ladder_view``: per-step time, ratio to the floor, speedups.
The floor is helpers/course/floor.py, the article's claims helpers/course/claims.py.
"""
from __future__ import annotations

import argparse
import copy
import functools
import time
from dataclasses import dataclass
from typing import Callable

import torch
import transformers

from . import static, streams

from .course import floor, harness, results
from .course.kernels import largest_logit_difference, token_agreement
from .generation import decode_one_token, generate_kv_cache, generate_naive
from .fast_step import FastDecoder
from .graphs import BucketedGraphDecoder, GraphDecoder
from .model import build_model, make_prompt, use_tf32


@torch.no_grad()
def generate_hf(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
                cache_implementation=None):
    """``model.generate()`` held to our contract: greedy, finished rows padded with EOS, stop
    when all rows have finished. (``min_new_tokens`` would also fix the shape, but by banning
    EOS, which changes a row's tokens if EOS ever wins the argmax.)"""
    if stop_lengths is not None:
        raise ValueError("generate() has no forced-stop schedule; compare it without stop_lengths")
    return model.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=False,
                          max_new_tokens=max_new_tokens, eos_token_id=eos_token_id,
                          pad_token_id=eos_token_id, cache_implementation=cache_implementation)


def generate_hf_static(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None):
    """``generate()`` with a static cache: on a GPU it compiles the decode step (CUDA graphs)."""
    return generate_hf(model, input_ids, max_new_tokens, eos_token_id, stop_lengths,
                       cache_implementation="static")


def timed_first_call(fn):
    """(seconds, output) of one call, synchronized: the compile or capture cost of a method,
    reported apart from its steady-state timing."""
    start = time.perf_counter()
    out = fn()
    if isinstance(out, torch.Tensor):
        harness.sync(out.device)
    return time.perf_counter() - start, out


# ---------------------------------------------------------------- the methods, one builder each

class Lab:
    """What the methods of one ladder share: ``model``, ``eos``, compiled steps by mode (each
    compiled once) and static caches by shape (compiled steps get the same cache object for
    every call: a new cache object would make them record a new graph)."""

    def __init__(self, model, eos_token_id):
        self.model, self.eos = model, eos_token_id
        self.steps, self.caches = {}, {}

    def step(self, mode):
        """The compiled decode step of ``mode`` ("dynamic": dynamic shapes, for the dynamic
        cache; else a ``helpers.static.compiled_step`` mode)."""
        if mode not in self.steps:
            self.steps[mode] = (torch.compile(decode_one_token, dynamic=True) if mode == "dynamic"
                                else static.compiled_step(self.model, mode))
        return self.steps[mode]

    def cache(self, prompt, new_tokens, shared=True):
        """A static cache for this shape: the shared one, or a new one (``shared=False``)."""
        key = (tuple(prompt.shape), new_tokens)
        if shared and key in self.caches:
            return self.caches[key]
        cache = static.make_static_cache(self.model, prompt.shape[0], prompt.shape[1] + new_tokens,
                                         prompt.device, self.model.dtype)
        if shared:
            self.caches[key] = cache
        return cache


def naive(lab, prompt, n):
    return lambda: generate_naive(lab.model, prompt, n, lab.eos)


def kv_cache(lab, prompt, n):
    return lambda: generate_kv_cache(lab.model, prompt, n, lab.eos)


def static_cache(lab, prompt, n):
    cache = lab.cache(prompt, n, shared=False)
    return lambda: static.generate_static_cache(lab.model, prompt, n, lab.eos, cache=cache)


def kv_cache_compiled(lab, prompt, n):
    """Notebook 02's loop with ``decode_one_token`` compiled for dynamic shapes: what compiling
    buys without a static cache."""
    step = lab.step("dynamic")
    return lambda: streams.generate_sync(lab.model, prompt, n, lab.eos,
                                         step=functools.partial(step, lab.model))


def static_compiled(lab, prompt, n, mode):
    step, cache = lab.step(mode), lab.cache(prompt, n)
    return lambda: static.generate_static_compiled(lab.model, prompt, n, lab.eos, step=step,
                                                   cache=cache)


def interleaved(lab, prompt, n, mode=None):
    """Notebook 07's two-stream loop, eager (``mode=None``) or with a compiled step."""
    if mode is None:
        return lambda: streams.generate_interleaved(lab.model, prompt, n, lab.eos)
    step, cache = lab.step(mode), lab.cache(prompt, n)
    return lambda: streams.generate_interleaved(lab.model, prompt, n, lab.eos, step=step,
                                                cache=cache)


def cuda_graph(lab, prompt, n, **options):
    kind = BucketedGraphDecoder if "bucket" in options else GraphDecoder
    decoder = kind(lab.model, prompt.shape[0], prompt.shape[1] + n, lab.eos, **options)
    return lambda: decoder(prompt, n)


def fast_graph(lab, prompt, n, **options):
    decoder = FastDecoder(lab.model, prompt.shape[0], prompt.shape[1] + n, lab.eos, **options)
    return lambda: decoder(prompt, n)


def hf_generate(lab, prompt, n, cache_implementation=None):
    return lambda: generate_hf(lab.model, prompt, n, lab.eos,
                               cache_implementation=cache_implementation)


# The Inductor options of the fused rung: no CUDA graphs of Inductor's own (GraphDecoder captures
# the whole step), and no GEMM autotuning (the GEMM table of the earlier notebook 10: the
# fastest backend per shape would save only a few percent of the step on the H100).
INDUCTOR = {"options": {"triton.cudagraphs": False, "max_autotune": False}}
FUSED_GRAPH = "CUDA graph, fused step (Inductor, bucketed)"
STEPS_PER_LAUNCH = 10  # notebook 11's decode steps per graph replay
TRITON_GRAPH = f"CUDA graph, Triton step ({STEPS_PER_LAUNCH}/launch)"

# name -> (notebook, builder, options, GPU only): GPU-only methods are left out on a CPU, where
# they would only measure compilation.
LADDER = {
    "naive": ("01", naive, {}, False),
    "kv cache": ("02", kv_cache, {}, False),
    "static cache": ("04", static_cache, {}, False),
    "kv cache, compiled (dynamic shapes)": ("05", kv_cache_compiled, {}, True),
    "static compiled (default)": ("05", static_compiled, {"mode": "default"}, True),
    "static compiled (reduce-overhead)": ("05", static_compiled, {"mode": "reduce-overhead"}, True),
    "interleaved (eager)": ("07", interleaved, {}, False),
    "interleaved (compiled)": ("07", interleaved, {"mode": "reduce-overhead"}, True),
    "CUDA graph, transformers forward": ("10", cuda_graph, {"library_forward": True}, True),
    # notebook 10's lean step, k decode steps per graph launch (course_methods' graph_steps)
    **{f"CUDA graph, lean step ({k}/launch)": ("10", cuda_graph, {"steps_per_graph": k}, True)
       for k in range(1, 9)},
    # notebook 10's fastest float32 rung: the fused step with bucketed attention, compiled by
    # Inductor (no CUDA graphs of its own), captured whole
    FUSED_GRAPH: ("10", cuda_graph, {"bucket": 32, "compile_options": INDUCTOR}, True),
    # notebook 11's step: Triton kernels (fused layer norms, epilogues, decode attention, the LM
    # head with the argmax), STEPS_PER_LAUNCH steps per graph replay; on a CPU their references
    TRITON_GRAPH: ("11", fast_graph, {"steps_per_graph": STEPS_PER_LAUNCH}, False),
    "generate()": ("peer", hf_generate, {}, False),
    "generate() static": ("peer", hf_generate, {"cache_implementation": "static"}, False),
}


@dataclass
class Method:
    """A method of the ladder: the notebook that teaches it, and ``build(prompt, new_tokens) ->
    call``."""
    notebook: str
    build: Callable


def course_methods(model, eos_token_id, *, compile_modes=("default", "reduce-overhead"),
                   graph_steps=(4,), compile_dynamic=False,
                   peers=("generate()", "generate() static")) -> dict:
    """The ladder's methods for one run, by name, in ``LADDER``'s order: those of notebooks
    01-07, 10 and 11 chosen by the arguments (the GPU-only ones on a GPU only), then the peers."""
    chosen = {"naive", "kv cache", "static cache", "interleaved (eager)",
              "interleaved (compiled)", "CUDA graph, transformers forward", FUSED_GRAPH,
              TRITON_GRAPH}
    chosen |= {"kv cache, compiled (dynamic shapes)"} if compile_dynamic else set()
    chosen |= {f"static compiled ({mode})" for mode in compile_modes}
    chosen |= {f"CUDA graph, lean step ({k}/launch)" for k in graph_steps}
    unknown = chosen - set(LADDER)
    if unknown:
        raise ValueError(f"no such ladder method(s) {sorted(unknown)}; the ladder has {list(LADDER)}")
    cuda = next(model.parameters()).device.type == "cuda"
    lab = Lab(model, eos_token_id)
    methods = {name: Method(notebook, functools.partial(builder, lab, **options))
               for name, (notebook, builder, options, gpu_only) in LADDER.items()
               if name in chosen and notebook != "peer" and (cuda or not gpu_only)}
    for name in peers:
        notebook, builder, options, _ = LADDER[name]
        methods[name] = Method(notebook, functools.partial(builder, lab, **options))
    return methods


PEER_COLUMNS = {"speedup_vs_generate": "generate()",
                "speedup_vs_generate_static": "generate() static"}


def add_ladder_columns(frame, floor_step_s, reference="naive", peers=None):
    """Per-step time, ratio to the floor (``floor_step_s`` per step, or a dict length -> floor),
    speedup against
    ``reference`` and against each peer (column -> method, default ``PEER_COLUMNS``), every row
    compared with rows of the same batch size and length. A missing reference or peer: NaN."""
    frame = frame.copy()
    frame["per_step_s"] = frame["median_s"] / frame["seq_len"]
    floors = (frame["seq_len"].map(floor_step_s) if isinstance(floor_step_s, dict)
              else floor_step_s)  # one floor, or one per length
    frame["floor_ratio"] = frame["per_step_s"] / floors
    keys = list(zip(frame["batch_size"], frame["seq_len"]))
    for column, name in {"speedup_vs_naive": reference, **(peers or PEER_COLUMNS)}.items():
        base = frame[frame["method"] == name].set_index(["batch_size", "seq_len"])["median_s"]
        frame[column] = [base.get(key, float("nan")) / t for key, t in zip(keys, frame["median_s"])]
    return frame


def run_ladder(methods: dict, prompt, lengths, *, device, repeats, warmup=1, budget_s=None) -> list:
    """Time every method at every length. Per length, each method is built and called once on
    its own (compilation, graph capture: ``first_call_s``, and ``setup_s``, that minus one
    steady run); then all of them run as interleaved trials (``harness.compare_row``), so their
    ratios come with intervals. A method that raises while being built is recorded as
    ``status='failed'`` with its error, and the ladder goes on (notebook 08 then fails)."""
    rows = []
    for n in lengths:
        calls, first, failed = {}, {}, []
        for name, method in methods.items():
            try:
                start = time.perf_counter()
                call = method.build(prompt, n)
                harness.sync(device)
                build_s = time.perf_counter() - start
                first_s, _ = timed_first_call(call)
                calls[name], first[name] = call, (build_s, first_s)
            except Exception as error:  # noqa: BLE001 - one broken method must not end the ladder
                failed.append(_failed_row(name, methods[name].notebook, prompt, n, device, error))
                harness.release_memory(device)
        timed, _ = harness.compare_row(calls, device=device, batch_size=prompt.shape[0], seq_len=n,
                                       repeats=repeats, warmup=warmup, budget_s=budget_s)
        width = max(len(name) for name in methods)
        for row in timed:
            build_s, first_s = first[row["method"]]
            row["notebook"] = methods[row["method"]].notebook
            row["first_call_s"] = build_s + first_s
            row["setup_s"] = (build_s + max(first_s - row["median_s"], 0.0)
                              if row["status"] == harness.OK else float("nan"))
            print(f"{row['method']:<{width}} {n:>4} tokens: {row['median_s'] * 1e3:9.1f} ms"
                  f"  (first call {row['first_call_s']:.1f} s)", flush=True)
        rows += timed + failed
        calls = None
        harness.release_memory(device)
    return rows


def _failed_row(name, notebook, prompt, n, device, error) -> dict:
    nan = float("nan")
    row = {"method": name, "batch_size": prompt.shape[0], "seq_len": n, "notebook": notebook,
           "status": results.FAILED, "repeats": 0, "median_s": nan, "min_s": nan,
           "max_s": nan, "tokens_per_s": nan, "peak_allocated_bytes": nan,
           "peak_reserved_bytes": nan, "fragmentation_pct": nan,
           "device_name": harness.device_label(device), "first_call_s": nan,
           "setup_s": nan, "error": f"{type(error).__name__}: {error}"[:300]}
    print(f"FAILED {name} at {n} tokens: {row['error']}", flush=True)
    return row


LADDER_COLUMNS = {"method": "method", "seq_len": "tokens", "median_s": "median ms",
                  "per_step_s": "ms/step", "speedup_vs_naive": "× naive",
                  "floor_ratio": "÷ floor", "speedup_vs_generate": "× generate()",
                  "speedup_vs_generate_static": "× generate() static", "setup_s": "setup s"}


def ladder_view(frame):
    """The ladder for display: sorted by length, then fastest first, in ms and ratios; a column
    with no value in any row (a peer that did not run, the floor on a CPU) is left out."""
    out = frame.sort_values(["seq_len", "median_s"])[[c for c in LADDER_COLUMNS if c in frame]]
    out = out.dropna(axis=1, how="all")
    out = out.assign(**{c: out[c] * 1e3 for c in ("median_s", "per_step_s") if c in out})
    return out.rename(columns=LADDER_COLUMNS).round(2).reset_index(drop=True)


def main(argv=None) -> int:
    """``python -m helpers.bench``: the ladder at batch 32 and 100 tokens on a CUDA GPU (GPT-2
    124M), or the tiny model on a CPU as a test of the code."""
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(prog="python -m helpers.bench", description=main.__doc__)
    parser.add_argument("--batch", type=int, default=32 if cuda else 2)
    parser.add_argument("--tokens", type=int, default=100 if cuda else 8)
    parser.add_argument("--repeats", type=int, default=3 if cuda else 2)
    args = parser.parse_args(argv)
    results.quiet_known_noise()  # Inductor's notes on how it split a reduction, as in the lessons
    device, name = ("cuda", "gpt2") if cuda else ("cpu", "tiny")
    if not cuda:
        print("NOTE: no CUDA GPU: the tiny model on the CPU, without the compiled and CUDA-graph "
              "methods. This tests the code path; its timings say nothing about GPUs.")
    model = build_model(name, device)
    use_tf32(True)  # as the notebooks time it
    # Every compiled step shares decode_one_token's code object, so one dynamo cache: room for
    # a graph per mode and shape (past the limit, the fullgraph steps fail to compile and the
    # dynamic-shape step would run uncompiled).
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
    eos = model.config.eos_token_id
    prompt = make_prompt(args.batch, 16 if cuda else 4, model.config.vocab_size, eos, device)
    floor_step = floor.decode_floor(model, floor.copy_bandwidth(device), args.batch,
                                    prompt.shape[1], args.tokens)  # as notebook 08 counts it
    print(f"{harness.device_label(device)} · torch {torch.__version__} · transformers "
          f"{transformers.__version__} · {name} · batch {args.batch} · {args.tokens} tokens · "
          f"floor {floor_step * 1e3:.3f} ms/step", flush=True)
    start = time.perf_counter()
    rows = run_ladder(course_methods(model, eos), prompt, [args.tokens], device=device,
                      repeats=args.repeats, warmup=0)
    frame = add_ladder_columns(results.table_frame(rows), floor_step)
    print()
    print(ladder_view(frame).to_string(index=False))
    failed = frame[frame["status"] != harness.OK]
    for _, row in failed.iterrows():
        print(f"FAILED {row['method']}: {row.get('error', '')}")
    if cuda:
        print(bf16_line(model, prompt, args.tokens, args.repeats + 2))
    print(f"\n{len(frame) - len(failed)}/{len(frame)} methods in {time.perf_counter() - start:.0f} s")
    return 1 if len(failed) else 0


def bf16_line(model, prompt, n, repeats):
    """Notebook 11's step in bfloat16, apart from the float32 ladder: ms per step (median of
    ``repeats`` runs), against its own floor (bf16 weights), the share of tokens that agree with
    the float32 step and the largest logit difference."""
    model16 = copy.deepcopy(model).to(torch.bfloat16)
    eos, batch = model.config.eos_token_id, prompt.shape[0]
    fp32 = FastDecoder(model, batch, prompt.shape[1] + n, eos, STEPS_PER_LAUNCH)
    bf16 = FastDecoder(model16, batch, prompt.shape[1] + n, eos, STEPS_PER_LAUNCH)
    agreement = token_agreement(fp32(prompt, n), bf16(prompt, n), prompt.shape[1])
    seconds = []
    for _ in range(repeats):
        harness.sync(prompt.device)
        start = time.perf_counter()
        bf16(prompt, n)
        harness.sync(prompt.device)
        seconds.append((time.perf_counter() - start) / n)
    step = sorted(seconds)[len(seconds) // 2]
    floor16 = floor.floor_per_step(model16, floor.copy_bandwidth(prompt.device), floor.kv_bytes_per_step(
        model.config, batch, prompt.shape[1], n, dtype_bytes=2))
    return (f"\nbf16, apart ({TRITON_GRAPH}): {step * 1e3:.3f} ms/step, {step / floor16:.2f}x its "
            f"floor ({floor16 * 1e3:.3f} ms); {agreement:.1%} of tokens agree with float32; largest "
            f"logit difference {largest_logit_difference(model, model16, prompt):.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
