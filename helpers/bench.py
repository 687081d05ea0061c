"""The ladder: every method of the course against the naive loop, ``generate()`` and the floor.

- ``copy_bandwidth`` and ``floor_per_step``: a decode step must read every parameter once, so
  parameter bytes over the device-to-device copy bandwidth is the fastest a step can be.
- ``generate_hf``: transformers' own ``model.generate()`` (greedy, EOS-padded: our contract) as
  the peer, with the dynamic cache or ``cache_implementation="static"`` (which compiles itself).
- ``gpu_busy_idle``: the profiler's view of a run, GPU busy against idle per step.
- ``check_claims``: the article's claims against a run's numbers, reproduced or not.
- ``python -m helpers.bench``: the ladder table on any CUDA GPU (or, as a test, the tiny model
  on a CPU).
"""
from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from . import harness
from .model import parameter_bytes


def copy_bandwidth(device, nbytes=None, repeats=10) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting the read and the write."""
    if nbytes is None:
        nbytes = 2**28 if torch.device(device).type == "cuda" else 2**24
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    row, _ = harness.measure(lambda: dst.copy_(src), device=device, repeats=repeats, warmup=2)
    del src, dst
    harness.release_memory(device)
    return 2 * nbytes / row["median_s"]


def floor_per_step(model, bandwidth) -> float:
    """Seconds one decode step needs at least: every parameter byte read once at ``bandwidth``."""
    return parameter_bytes(model) / bandwidth


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


PEER_COLUMNS = {"speedup_vs_generate": "generate()",
                "speedup_vs_generate_static": "generate() static"}


def add_ladder_columns(frame, floor_step_s, reference="naive", peers=None):
    """Per-step time, ratio to the floor (``floor_step_s`` per step), speedup against
    ``reference`` and against each peer (column -> method, default ``PEER_COLUMNS``), every row
    compared with rows of the same batch size and length. A missing reference or peer: NaN."""
    frame = frame.copy()
    frame["per_step_s"] = frame["median_s"] / frame["seq_len"]
    frame["floor_ratio"] = frame["per_step_s"] / floor_step_s
    keys = list(zip(frame["batch_size"], frame["seq_len"]))
    for column, name in {"speedup_vs_naive": reference, **(peers or PEER_COLUMNS)}.items():
        base = frame[frame["method"] == name].set_index(["batch_size", "seq_len"])["median_s"]
        frame[column] = [base.get(key, float("nan")) / t for key, t in zip(keys, frame["median_s"])]
    return frame


KERNEL_KINDS = (("attention", ("attention", "fmha", "flash", "attn")),
                ("matmul", ("gemm", "gemv", "cutlass", "sm90", "sm80", "cublas", "matmul", "mm_")),
                ("copy", ("memcpy", "memset", "copy")))


def kernel_kind(name: str) -> str:
    """'matmul', 'attention', 'copy' or 'other' (elementwise, reductions, norms) by kernel name."""
    low = name.lower()
    for kind, marks in KERNEL_KINDS:
        if any(mark in low for mark in marks):
            return kind
    return "other"


def busy_idle(intervals):
    """(span, busy, idle) in the time unit of ``intervals`` [(start, end), ...]: busy is the
    union of the intervals, idle the rest of the span from the first start to the last end."""
    intervals = sorted(intervals)
    if not intervals:
        return 0.0, 0.0, 0.0
    busy, cur_start, cur_end = 0.0, *intervals[0]
    for start, end in intervals[1:]:
        if start > cur_end:
            busy += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    busy += cur_end - cur_start
    span = max(end for _, end in intervals) - intervals[0][0]
    return span, busy, span - busy


def gpu_busy_idle(fn, steps, device):
    """Profile one call of ``fn()`` (which runs ``steps`` decode steps) and return per-step
    seconds: span (first kernel start to last kernel end), GPU busy, GPU idle, the busy time by
    kernel kind, and the number of kernels per step."""
    from torch.profiler import ProfilerActivity, profile

    harness.sync(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        harness.sync(device)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text()).get("traceEvents", [])
    kernels = [e for e in events if e.get("ph") == "X" and
               e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    span, busy, idle = busy_idle([(e["ts"], e["ts"] + e["dur"]) for e in kernels])
    by_kind: dict = {}
    for e in kernels:
        kind = kernel_kind(e.get("name", ""))
        by_kind[kind] = by_kind.get(kind, 0.0) + e["dur"]
    us = 1e-6 / steps
    return {"steps": steps, "kernels_per_step": len(kernels) / steps, "span_s": span * us,
            "busy_s": busy * us, "idle_s": idle * us,
            **{f"{kind}_s": by_kind.get(kind, 0.0) * us for kind, _ in KERNEL_KINDS},
            "other_s": by_kind.get("other", 0.0) * us}


# ---------------------------------------------------------------- the ladder of methods

@dataclass
class Method:
    """A generator of the course (or a peer) for the ladder: the notebook that teaches it, and
    ``build(prompt, new_tokens) -> call``, which prepares what the method keeps between calls
    (a static cache, a captured graph) and returns the call to time."""
    notebook: str
    build: Callable


def compiled_dynamic_step(model):
    """The dynamic-cache decode step (notebook 02's forward) under ``torch.compile`` with dynamic
    shapes: what compiling buys without a static cache."""
    def forward(token_ids, cache):
        return model(token_ids, past_key_values=cache, use_cache=True).logits[:, -1, :]
    return torch.compile(forward, dynamic=True)


def course_methods(model, eos_token_id, *, compile_modes=("default", "reduce-overhead"),
                   graph_steps=(4,), compile_dynamic=False,
                   peers=("generate()", "generate() static")) -> dict:
    """Every generator of notebooks 01-07 and 10, and the ``generate()`` peers named, by name.
    Compiled steps are built once and shared across lengths; methods that need a GPU (compiled
    steps, CUDA graphs) are left out on a CPU, where they would only measure compilation."""
    from . import static, streams
    from .generation import generate_kv_cache, generate_naive
    from .graphs import GraphDecoder

    eos = eos_token_id
    cuda = next(model.parameters()).device.type == "cuda"
    steps, caches = {}, {}

    def step(mode):
        if mode not in steps:
            steps[mode] = (compiled_dynamic_step(model) if mode == "dynamic"
                           else static.compiled_step(model, mode))
        return steps[mode]

    def cache_for(prompt, n, shared=True):
        """A static cache for this shape; compiled steps get the same object for every call (a
        new cache object would make a compiled step record a new graph)."""
        key = (tuple(prompt.shape), n)
        if not shared or key not in caches:
            cache = static.make_static_cache(model, prompt.shape[0], prompt.shape[1] + n,
                                             prompt.device, model.dtype)
            if not shared:
                return cache
            caches[key] = cache
        return caches[key]

    def static_loop(mode):
        def build(prompt, n):
            cache = cache_for(prompt, n)
            return lambda: static.generate_static_compiled(model, prompt, n, eos, step=step(mode),
                                                           cache=cache)
        return build

    def interleaved_compiled(prompt, n):
        cache = cache_for(prompt, n)
        return lambda: streams.generate_interleaved(model, prompt, n, eos,
                                                    step=step("reduce-overhead"), cache=cache)

    def graph(**options):
        def build(prompt, n):
            decoder = GraphDecoder(model, prompt.shape[0], prompt.shape[1] + n, eos, **options)
            return lambda: decoder(prompt, n)
        return build

    def static_eager(prompt, n):
        cache = cache_for(prompt, n, shared=False)
        return lambda: static.generate_static_cache(model, prompt, n, eos, cache=cache)

    methods = {
        "naive": Method("01", lambda p, n: lambda: generate_naive(model, p, n, eos)),
        "kv cache": Method("02", lambda p, n: lambda: generate_kv_cache(model, p, n, eos)),
        "static cache": Method("04", static_eager),
    }
    if cuda:
        if compile_dynamic:
            methods["kv cache, compiled (dynamic shapes)"] = Method(
                "05", lambda p, n: lambda: streams.generate_sync(model, p, n, eos, step=step("dynamic")))
        for mode in compile_modes:
            methods[f"static compiled ({mode})"] = Method("05", static_loop(mode))
    methods["interleaved (eager)"] = Method(
        "07", lambda p, n: lambda: streams.generate_interleaved(model, p, n, eos))
    if cuda:
        methods["interleaved (compiled)"] = Method("07", interleaved_compiled)
        methods["CUDA graph, transformers forward"] = Method("10", graph(library_forward=True))
        for k in graph_steps:
            methods[f"CUDA graph, lean step ({k}/launch)"] = Method("10", graph(steps_per_graph=k))
    peer_calls = {"generate()": generate_hf, "generate() static": generate_hf_static}
    for name in peers:
        methods[name] = Method("peer", lambda p, n, call=peer_calls[name]: lambda: call(model, p, n, eos))
    return methods


def run_ladder(methods: dict, prompt, lengths, *, device, repeats, warmup=1) -> list:
    """Time every method at every length: building it and its first call (compilation, graph
    capture) are timed on their own as ``first_call_s``, and ``setup_s`` (that minus one steady
    run); then ``harness.bench_row``. A method that raises is recorded as ``status='failed'`` with its
    error, and the ladder goes on."""
    rows = []
    for n in lengths:
        for name, method in methods.items():
            extra = dict(notebook=method.notebook)
            try:
                start = time.perf_counter()
                call = method.build(prompt, n)
                harness.sync(device)
                build_s = time.perf_counter() - start
                first_s, _ = timed_first_call(call)
                row, out = harness.bench_row(name, call, device=device, batch_size=prompt.shape[0],
                                             seq_len=n, repeats=repeats, warmup=warmup, **extra)
                row["first_call_s"] = build_s + first_s
                row["setup_s"] = build_s + max(first_s - row["median_s"], 0.0) \
                    if row["status"] == harness.OK else float("nan")
            except Exception as error:  # noqa: BLE001 - one broken method must not end the ladder
                nan = float("nan")
                row = {"method": name, "batch_size": prompt.shape[0], "seq_len": n, **extra,
                       "status": "failed", "repeats": 0, "median_s": nan, "min_s": nan,
                       "max_s": nan, "tokens_per_s": nan, "peak_allocated_bytes": nan,
                       "peak_reserved_bytes": nan, "fragmentation_pct": nan,
                       "device_name": harness.device_label(device), "first_call_s": nan,
                       "setup_s": nan, "error": f"{type(error).__name__}: {error}"[:300]}
                print(f"FAILED {name} at {n} tokens: {row['error']}", flush=True)
                harness.release_memory(device)
            rows.append(row)
            if row["status"] == harness.OK:
                print(f"{name:<36} {n:>4} tokens: {row['median_s'] * 1e3:9.1f} ms"
                      f"  (first call {row['first_call_s']:.1f} s)", flush=True)
    return rows


LADDER_COLUMNS = {"method": "method", "seq_len": "tokens", "median_s": "median ms",
                  "per_step_s": "ms/step", "speedup_vs_naive": "× naive",
                  "floor_ratio": "÷ floor", "speedup_vs_generate": "× generate()",
                  "speedup_vs_generate_static": "× generate() static", "setup_s": "setup s"}


def ladder_view(frame):
    """The ladder for display: sorted by length, then fastest first, in ms and ratios."""
    out = frame.sort_values(["seq_len", "median_s"])[[c for c in LADDER_COLUMNS if c in frame]]
    out = out.assign(**{c: out[c] * 1e3 for c in ("median_s", "per_step_s") if c in out})
    return out.rename(columns=LADDER_COLUMNS).round(2).reset_index(drop=True)


# ---------------------------------------------------------------- the article's claims

REPRODUCED, NOT_REPRODUCED, NO_DATA = "reproduced", "not reproduced", "no data"
QUADRUPLE_RANGE = (3.5, 4.5)  # "runtime quadruples": the factor per doubling of the length
ABOUT_5X_MIN = 4.0  # "reaches about 5x": at least this speedup over the naive loop
TIE_FRACTION = 0.02  # medians closer than this (relative) are a tie, neither a win nor a loss


def _ok(frame):
    """The rows that ran (all rows of a table without a status); None without a table."""
    if frame is None or "method" not in frame:
        return None
    return frame[frame["status"] == harness.OK] if "status" in frame else frame


def _medians(frame, method, column="median_s"):
    """``column`` by length for one method's ok rows (empty if the table or method is absent)."""
    import pandas as pd

    frame = _ok(frame)
    if frame is None or column not in frame:
        return pd.Series(dtype=float)
    part = frame[frame["method"] == method]
    return part.groupby("seq_len")[column].median().dropna()


def _ms(series):
    return ", ".join(f"{int(n)}: {v * 1e3:.0f} ms" for n, v in series.items())


def _claim_quadratic(ladder, tables):
    times, source = _medians(ladder, "naive"), "this run"
    if len(times) < 2:
        times, source = _medians(tables.get("01_naive_generation"), "naive"), "01_naive_generation"
    if len(times) < 2:
        return NO_DATA, "needs the naive loop at two lengths or more", source
    from .analysis import growth_exponent

    k = growth_exponent(times.index, times.values)
    low, high = QUADRUPLE_RANGE
    verdict = REPRODUCED if low <= 2**k <= high else NOT_REPRODUCED
    return verdict, (f"naive loop {_ms(times)}: time ~ N^{k:.2f}, x{2**k:.2f} per doubling "
                     f"(quadrupling: {low:g} to {high:g})"), source


def _claim_kv_gain(ladder, tables):
    naive, kv, source = _medians(ladder, "naive"), _medians(ladder, "kv cache"), "this run"
    if len(naive.index.intersection(kv.index)) < 2:
        table = tables.get("02_kv_cache")
        naive, kv, source = _medians(table, "naive"), _medians(table, "kv_cache"), "02_kv_cache"
    common = naive.index.intersection(kv.index)
    if len(common) < 2:
        return NO_DATA, "needs the naive and KV-cache loops at two lengths or more", source
    gains = naive[common] / kv[common]
    verdict = REPRODUCED if all(b > a for a, b in zip(gains.values, gains.values[1:])) else NOT_REPRODUCED
    return verdict, "KV cache speedup over naive: " + ", ".join(
        f"{int(n)} tokens {g:.1f}x" for n, g in gains.items()), source


def _fragmentation_pairs(frame, base, other):
    a = _medians(frame, base, "fragmentation_pct")
    b = _medians(frame, other, "fragmentation_pct")
    common = a.index.intersection(b.index)
    return a[common], b[common]


def _claim_expandable(ladder, tables):
    candidates = [(ladder, "kv cache", "kv cache, expandable_segments:True", "this run"),
                  (tables.get("03_expandable_segments"), "default", "expandable_segments:True",
                   "03_expandable_segments")]
    for frame, base, other, source in candidates:
        default, expandable = _fragmentation_pairs(frame, base, other)
        if len(default):
            verdict = REPRODUCED if (expandable < default).all() else NOT_REPRODUCED
            return verdict, "fragmentation, default against expandable segments: " + ", ".join(
                f"{int(n)} tokens {d:.1f}% vs {e:.1f}%"
                for n, d, e in zip(default.index, default, expandable)), source
    return NO_DATA, "needs peak fragmentation (a CUDA run) with and without expandable segments", \
        "03_expandable_segments"


def _claim_static(ladder, tables):
    """Static cache: lower fragmentation at every length; slower at 100 tokens; faster at 200
    and 400 (this run's lengths first, notebook 04's table for the others)."""
    table04 = tables.get("04_static_cache")
    sources = [(ladder, "kv cache", "static cache", "this run"),
               (table04, "kv_cache (dynamic)", "static", "04_static_cache")]
    times, frags, used = {}, {}, []
    for frame, dyn, stat, source in sources:
        d, s = _medians(frame, dyn), _medians(frame, stat)
        fd, fs = _fragmentation_pairs(frame, dyn, stat)
        for n in d.index.intersection(s.index):
            if int(n) in (100, 200, 400) and int(n) not in times:
                times[int(n)] = (d[n], s[n])
                used.append(source)
                if n in fd.index:
                    frags[int(n)] = (fd[n], fs[n])
    if 100 not in times or not {200, 400} & set(times) or not frags:
        return NO_DATA, ("needs the dynamic and static caches at 100 tokens and at 200 or 400, "
                         "with fragmentation (a CUDA run)"), "this run, 04_static_cache"
    expected = {100: "loses", 200: "wins", 400: "wins"}
    parts, ok = [], True
    for n in sorted(times):
        d, s = times[n]
        result = ("ties" if abs(s - d) <= TIE_FRACTION * d else
                  "wins" if s < d else "loses")
        ok &= result == expected[n]
        parts.append(f"{n} tokens {result} ({s * 1e3:.0f} vs {d * 1e3:.0f} ms)")
    lower = all(fs < fd for fd, fs in frags.values())
    ok &= lower
    parts.append("fragmentation " + ", ".join(f"{n}: {fs:.1f}% vs {fd:.1f}%"
                                              for n, (fd, fs) in sorted(frags.items())))
    missing = sorted({100, 200, 400} - set(times))
    if missing:
        parts.append(f"no data at {missing}")
    return (REPRODUCED if ok else NOT_REPRODUCED), "static against dynamic: " + "; ".join(parts), \
        ", ".join(dict.fromkeys(used))


def _claim_compile_static(ladder, tables):
    ok = _ok(ladder)
    compiled = [] if ok is None else [m for m in ok["method"].unique()
                                       if m.startswith("static compiled")]
    static_eager, kv = _medians(ladder, "static cache"), _medians(ladder, "kv cache")
    kv_compiled = _medians(ladder, "kv cache, compiled (dynamic shapes)")
    if not compiled or not len(kv_compiled):
        return NO_DATA, "needs compiled loops with the static and with the dynamic cache", "this run"
    best = ok[ok["method"].isin(compiled)].groupby("seq_len")["median_s"].min()
    common = best.index.intersection(static_eager.index).intersection(kv_compiled.index)
    common = common.intersection(kv.index)
    if not len(common):
        return NO_DATA, "no length with both compiled loops and their eager baselines", "this run"
    with_static = static_eager[common] / best[common]
    with_dynamic = kv[common] / kv_compiled[common]
    verdict = REPRODUCED if (with_static > with_dynamic).all() else NOT_REPRODUCED
    return verdict, "compile's speedup, static cache against dynamic cache: " + ", ".join(
        f"{int(n)} tokens {s:.2f}x vs {d:.2f}x" for n, s, d in
        zip(common, with_static, with_dynamic)), "this run"


def _claim_interleave_small_batch(ladder, tables):
    table = _ok(tables.get("07_stream_interleaving"))
    if table is None or "batch_size" not in table:
        return NO_DATA, "needs notebook 07's batch sweep", "07_stream_interleaving"
    regimes = table["regime"].unique() if "regime" in table else [None]
    parts, ok, any_data = [], True, False
    for regime in regimes:
        part = table if regime is None else table[table["regime"] == regime]
        times = part.pivot_table(index="batch_size", columns="method", values="median_s")
        if not {"sync", "interleaved"} <= set(times.columns) or len(times) < 2:
            continue
        any_data = True
        saved = 100 * (1 - times["interleaved"] / times["sync"])
        ok &= saved.idxmax() == saved.index.min()
        parts.append(f"{regime or 'all'}: saved " + ", ".join(
            f"batch {int(b)} {v:.0f}%" for b, v in saved.items()))
    if not any_data:
        return NO_DATA, "needs the sync and interleaved loops at two batch sizes or more", \
            "07_stream_interleaving"
    return (REPRODUCED if ok else NOT_REPRODUCED), "; ".join(parts), "07_stream_interleaving"


def _claim_five_x(ladder, tables):
    naive, fast = _medians(ladder, "naive"), _medians(ladder, "interleaved (compiled)")
    common = naive.index.intersection(fast.index)
    if not len(common):
        return NO_DATA, "needs the naive loop and the compiled interleaved loop", "this run"
    gains = naive[common] / fast[common]
    at = 100 if 100 in gains.index else gains.index.min()
    verdict = REPRODUCED if gains[at] >= ABOUT_5X_MIN else NOT_REPRODUCED
    return verdict, (f"compiled + interleaved over naive: " + ", ".join(
        f"{int(n)} tokens {g:.1f}x" for n, g in gains.items()) +
        f" (judged at {int(at)} tokens, about 5x = at least {ABOUT_5X_MIN:g}x)"), "this run"


CLAIMS = {
    "Runtime quadruples when the length doubles (naive loop)": _claim_quadratic,
    "The KV cache's gain grows with length": _claim_kv_gain,
    "Expandable segments cut fragmentation": _claim_expandable,
    "The static cache lowers fragmentation, loses at 100 tokens, wins at 200 and 400": _claim_static,
    "Compile helps most with the static cache": _claim_compile_static,
    "Interleaving gains most at the smallest batch": _claim_interleave_small_batch,
    "Compile plus interleaving reaches about 5x the baseline": _claim_five_x,
}


def check_claims(ladder, tables=None):
    """Each claim of the article judged on data: ``ladder`` is this run's table (methods of
    ``course_methods`` by length), ``tables`` maps other notebooks' table names (e.g.
    ``"03_expandable_segments"``) to their frames, or None where absent. Returns a frame with
    claim, verdict (reproduced / not reproduced / no data), evidence and source."""
    import pandas as pd

    tables = tables or {}
    rows = []
    for claim, judge in CLAIMS.items():
        verdict, evidence, source = judge(ladder, tables)
        rows.append({"claim": claim, "verdict": verdict, "evidence": evidence, "source": source})
    return pd.DataFrame(rows)


def load_tables(names):
    """Other notebooks' tables by name (this run's folder first, then figures/data); None for
    a table that exists in neither."""
    from . import results

    found = {}
    for name in names:
        try:
            found[name] = results.load_table(name)
        except FileNotFoundError:
            found[name] = None
    return found


def main(argv=None) -> int:
    """``python -m helpers.bench``: the ladder at batch 32 and 100 tokens on a CUDA GPU (GPT-2
    124M), or the tiny model on a CPU as a test of the code."""
    import argparse

    import transformers

    from . import results
    from .model import build_model, make_prompt

    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(prog="python -m helpers.bench", description=main.__doc__)
    parser.add_argument("--batch", type=int, default=32 if cuda else 2)
    parser.add_argument("--tokens", type=int, default=100 if cuda else 8)
    parser.add_argument("--repeats", type=int, default=3 if cuda else 2)
    args = parser.parse_args(argv)
    device, name = ("cuda", "gpt2") if cuda else ("cpu", "tiny")
    if not cuda:
        print("NOTE: no CUDA GPU: the tiny model on the CPU, without the compiled and CUDA-graph "
              "methods. This tests the code path; its timings say nothing about GPUs.")
    model = build_model(name, device)
    eos = model.config.eos_token_id
    prompt = make_prompt(args.batch, 16 if cuda else 4, model.config.vocab_size, eos, device)
    floor = floor_per_step(model, copy_bandwidth(device))
    print(f"{harness.device_label(device)} · torch {torch.__version__} · transformers "
          f"{transformers.__version__} · {name} · batch {args.batch} · {args.tokens} tokens · "
          f"floor {floor * 1e3:.3f} ms/step", flush=True)
    start = time.perf_counter()
    rows = run_ladder(course_methods(model, eos), prompt, [args.tokens], device=device,
                      repeats=args.repeats, warmup=0)
    frame = add_ladder_columns(results.table_frame(rows), floor)
    print()
    print(ladder_view(frame).to_string(index=False))
    failed = frame[frame["status"] != harness.OK]
    for _, row in failed.iterrows():
        print(f"FAILED {row['method']}: {row.get('error', '')}")
    print(f"\n{len(frame) - len(failed)}/{len(frame)} methods in {time.perf_counter() - start:.0f} s")
    return 1 if len(failed) else 0


if __name__ == "__main__":
    raise SystemExit(main())
