"""One batch of GPU work for issue 25 (notebook 11's kernels): check every Triton kernel against
its PyTorch reference at several shapes, check the new rungs' tokens against the naive loop,
sweep the skinny GEMM's launch configurations, time the rungs, print the kernel table.
Run on a CUDA GPU: python docs/floor_check.py OUTDIR. Results in docs/floor-notes.md."""
import copy, json, math, os, sys, time, traceback

import torch

from helpers import graphs, triton_kernels as tk
from helpers.course import floor, kernels
from helpers.fast_step import fast_decode_step
from helpers.generation import generate_naive, uniform_stop_lengths
from helpers.model import build_model, exact_matmul, make_prompt, use_tf32

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "floor_check.txt"), "w")
results = {}


def say(*a):
    line = " ".join(str(x) for x in a)
    print(line, flush=True)
    LOG.write(line + "\n"); LOG.flush()


def section(fn):
    t0 = time.perf_counter()
    say(f"\n=== {fn.__name__}")
    try:
        fn()
    except Exception:
        say("FAILED", traceback.format_exc()[-3000:])
    say(f"--- {fn.__name__}: {time.perf_counter() - t0:.1f} s")


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def kernel_checks():
    torch.manual_seed(1)
    for dtype, prec in ((torch.float32, "highest"), (torch.float32, "high"), (torch.bfloat16, "high")):
        torch.set_float32_matmul_precision(prec)
        for m, k, n, flags in ((32, 768, 2304, ""), (32, 768, 768, "res norm"), (32, 768, 3072, "gelu"),
                               (32, 3072, 768, "res norm"), (1, 768, 2304, "norm"), (8, 768, 3072, "gelu"),
                               (17, 3072, 768, "res"), (32, 64, 192, "norm gelu"), (2, 256, 64, "res gelu norm")):
            x = torch.randn(m, k, device="cuda", dtype=dtype)
            w = torch.randn(k, n, device="cuda", dtype=dtype) / k**0.5
            b = torch.randn(n, device="cuda", dtype=dtype)
            ln = (torch.randn(n, device="cuda", dtype=dtype), torch.randn(n, device="cuda", dtype=dtype), 1e-5) if "norm" in flags else None
            res = torch.randn(m, n, device="cuda", dtype=dtype) if "res" in flags else None
            gelu = "gelu" in flags
            ref = tk.linear_ref(*(t.double() for t in (x, w, b)), norm=None if ln is None else (ln[0].double(), ln[1].double(), ln[2]),
                                gelu=gelu, residual=None if res is None else res.double())
            ref = torch.cat(ref, 1) if ln is not None else ref
            configs = [None, (64, 64, 2, 4, 4), (32, 64, 4, 4, 4), (128, 64, 1, 4, 3)]
            errs = []
            for c in configs:
                if c is not None and k % (c[2] * c[1]):
                    continue
                out = tk.linear(x, w, b, norm=ln, gelu=gelu, residual=res, config=c)
                out = torch.cat(out, 1) if ln is not None else out
                errs.append(rel(out, ref))
            say(f"linear {str(dtype)[6:]:8} {prec:7} M={m:2} K={k:4} N={n:4} {flags:9} rel err max {max(errs):.2e}"
                f" {'ok' if max(errs) < (3e-5 if prec == 'highest' and dtype == torch.float32 else 2e-2) else 'BAD'}")
        # LM head + argmax
        for m, k, n in ((32, 768, 50257), (3, 64, 512), (32, 768, 1000)):
            x = torch.randn(m, k, device="cuda", dtype=dtype)
            wt = torch.randn(n, k, device="cuda", dtype=dtype) / k**0.5
            best, index = tk.lm_head_argmax(x, wt)
            rb, ri = tk.lm_head_argmax_ref(x.double(), wt.double())
            top = best.max(1).values.double()
            choice = index.gather(1, best.argmax(1, keepdim=True))
            agree = float((choice == ri).float().mean())
            say(f"lm_head_argmax {str(dtype)[6:]:8} {prec:7} M={m} K={k} N={n}: max err {float((top - rb[:, 0]).abs().max()):.2e}, argmax agrees {agree:.0%}")
    torch.set_float32_matmul_precision("high")
    for dtype in (torch.float32, torch.bfloat16):
        for batch, heads, slots, pos in ((32, 12, 128, 16), (32, 12, 128, 115), (2, 2, 16, 1), (5, 3, 48, 47), (32, 12, 1024, 700)):
            d = 64 if heads == 12 else 32
            qkv = torch.randn(batch, 3 * heads * d, device="cuda", dtype=dtype)
            kv = torch.randn(2, batch, heads, slots, d, device="cuda", dtype=dtype)
            kv2 = kv.clone()
            p = torch.tensor(pos, device="cuda")
            out = tk.decode_attention(qkv, kv, p, heads)
            ref = tk.decode_attention_ref(qkv.double(), kv2.double(), p, heads)
            say(f"decode_attention {str(dtype)[6:]:8} B={batch} H={heads} S={slots} pos={pos}: rel err {rel(out, ref):.2e}, "
                f"cache equal {bool(torch.equal(kv.double(), kv2.double()) if dtype == torch.float32 else (kv.double() - kv2).abs().max() < 1e-2)}")
    # finish_step and embed
    from types import SimpleNamespace
    for batch, tiles in ((32, 393), (3, 4), (32, 786)):
        best = torch.randn(batch, tiles, device="cuda")
        best[0, 1] = best[0, 2] = best[0].max() + 1  # a tie: the first tile wins
        index = torch.randint(0, 50000, (batch, tiles), device="cuda")
        def state():
            return SimpleNamespace(tokens=torch.zeros(batch, 64, dtype=torch.long, device="cuda"),
                                   token=torch.zeros(batch, dtype=torch.long, device="cuda"),
                                   finished=torch.rand(batch, device="cuda") < 0.3,
                                   stop_lengths=torch.randint(1, 5, (batch,), device="cuda"),
                                   position=torch.tensor(20, device="cuda"), step=torch.tensor(2, device="cuda"))
        torch.manual_seed(2); a = state(); torch.manual_seed(2); b = state()
        tk.finish_step(best, index, a, 7); tk.finish_step_ref(best, index, b, 7)
        same = all(torch.equal(getattr(a, f), getattr(b, f)) for f in vars(a))
        say(f"finish_step B={batch} tiles={tiles}: state identical {same}")
    wte, wpe = torch.randn(1000, 768, device="cuda"), torch.randn(1024, 768, device="cuda")
    tok = torch.randint(0, 1000, (32,), device="cuda")
    nrm = (torch.randn(768, device="cuda"), torch.randn(768, device="cuda"), 1e-5)
    e1 = tk.embed(tok, torch.tensor(5, device='cuda'), wte, wpe, nrm)
    e2 = tk.embed_ref(tok, torch.tensor(5, device='cuda'), wte, wpe, nrm)
    say(f"embed: sum identical {torch.equal(e1[0], e2[0])}, layer norm rel err {rel(e1[1], e2[1]):.2e}")


model = prompt = eos = None


def setup():
    global model, prompt, eos
    model = build_model("gpt2", "cuda")
    use_tf32(True)
    eos = model.config.eos_token_id
    prompt = make_prompt(32, 16, model.config.vocab_size, eos, "cuda")
    say(torch.cuda.get_device_name(), torch.__version__, "triton", tk.triton.__version__)


def token_checks():
    stops = uniform_stop_lengths(32, 10, 60, device="cuda")
    for s in (None, stops):
        with exact_matmul():
            ref = generate_naive(model, prompt, 64, eos, s)
            for k in (1, 10):
                d = graphs.GraphDecoder(model, 32, 16 + 64, eos, steps_per_graph=k, step=fast_decode_step)
                out = d(prompt, 64, s)
                say(f"fp32 exact, fast step {k}/launch, stops={s is not None}: identical {out.shape == ref.shape and bool(torch.equal(out, ref))} {tuple(out.shape)} {tuple(ref.shape)}")
                del d
    ref = generate_naive(model, prompt, 64, eos)
    d = graphs.GraphDecoder(model, 32, 16 + 64, eos, steps_per_graph=10, step=fast_decode_step)
    out = d(prompt, 64)
    say(f"fp32 TF32 fast step vs naive (TF32): agreement {kernels.token_agreement(ref, out, 16):.1%}")


def per_step(call, n, reps=7):
    call(); torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize(); t = time.perf_counter(); call(); torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) / n)
    return sorted(ts)[len(ts) // 2]


# ---------------------------------------------------------------- second run: tuning in a graph

def graph_sweep():
    """Each GEMM shape over the 12 blocks' real weights, captured in a CUDA graph (as the step
    replays it: no launch gaps, cold weights), per launch configuration."""
    rows = []
    for dtype in (torch.float32,):  # the bf16 configs of the first sweep stay
        m = model if dtype == torch.float32 else copy.deepcopy(model).to(dtype)
        x32 = {768: torch.randn(32, 768, device="cuda", dtype=dtype), 3072: torch.randn(32, 3072, device="cuda", dtype=dtype)}
        for name, get, kw in (("QKV", lambda b: (b.attn.c_attn, None), ""), ("attention out", lambda b: (b.attn.c_proj, b.ln_2), "res"),
                              ("MLP up", lambda b: (b.mlp.c_fc, None), "gelu"), ("MLP down", lambda b: (b.mlp.c_proj, b.ln_2), "res")):
            mods = [get(b) for b in m.transformer.h]
            k, n = mods[0][0].weight.shape
            x = x32[k]
            res = torch.randn(32, n, device="cuda", dtype=dtype)
            cands = [(bn, bk, sp, 4, 4) for bn in (16, 32) for bk in (64, 128) for sp in (1, 2, 4)] + [(32, 128, 8, 4, 4), (16, 256, 1, 4, 3), (32, 256, 1, 4, 3), (64, 128, 1, 4, 4)]
            cands = [c for c in cands if k % (c[1] * c[2]) == 0 and math.ceil(n / c[0]) * c[2] <= 1024]
            times = {}
            for c in cands:
                try:
                    fn = lambda: [tk.linear(x, lin.weight, lin.bias, norm=None if ln is None else (ln.weight, ln.bias, ln.eps),
                                            gelu="gelu" in kw, residual=res if "res" in kw else None, config=c) for lin, ln in mods]
                    times[c] = kernels.graph_time_s(fn, iters=2) / len(mods) * 1e6
                except Exception as e:
                    times[c] = float("nan")
            best = min((t, c) for c, t in times.items() if t == t)
            nbytes = (k * n + 32 * k + 32 * n) * x.element_size()
            fn = lambda: [torch.addmm(lin.bias, x, lin.weight) for lin, ln in mods]
            cub = kernels.graph_time_s(fn, iters=2) / len(mods) * 1e6
            say(f"{str(dtype)[6:]:8} {name:14} in-graph best {best[1]} {best[0]:.2f} us ({nbytes / best[0] / 1e3:.0f} GB/s); cuBLAS addmm in graph {cub:.2f} us; "
                f"top3 {sorted((round(t, 2), c) for c, t in times.items() if t == t)[:3]}")
            tk.CONFIGS[(n, k, dtype)] = best[1]
            rows.append({"dtype": str(dtype), "gemm": name, "best": best[1], "us": best[0], "cublas_us": cub, "all": {str(c): t for c, t in times.items()}})
        x = torch.randn(32, 768, device="cuda", dtype=dtype)
        wt = m.lm_head.weight
        lm = {}
        for c in [(128, 64, 1, 4, 4), (256, 128, 1, 8, 3), (128, 128, 1, 4, 4), (64, 128, 1, 4, 4)]:
            try:
                lm[c] = kernels.graph_time_s(lambda: tk.lm_head_argmax(x, wt, config=c), iters=4) * 1e6
            except Exception:
                lm[c] = float("nan")
        best = min((t, c) for c, t in lm.items() if t == t)
        tk.CONFIGS[("lm_head", dtype)] = best[1]
        say(f"{str(dtype)[6:]:8} LM head+argmax in-graph best {best[1]} {best[0]:.2f} us ({wt.numel() * wt.element_size() / best[0] / 1e3:.0f} GB/s)")
        rows.append({"dtype": str(dtype), "gemm": "LM head", "best": best[1], "us": best[0], "all": {str(c): t for c, t in lm.items()}})
    json.dump(rows, open(os.path.join(OUT, "graph_sweep.json"), "w"), indent=1)
    say("CONFIGS =", tk.CONFIGS)


def variants():
    n = 100
    bw = floor.copy_bandwidth("cuda")
    fl = floor.decode_floor(model, bw, 32, 16, n)
    say(f"copy bandwidth {bw / 1e9:.0f} GB/s; floor {fl * 1e3:.3f} ms/step")
    stops = uniform_stop_lengths(32, 10, 60, device="cuda")
    with exact_matmul():
        ref = generate_naive(model, prompt, 64, eos, stops)
        ref_free = generate_naive(model, prompt, 64, eos)
    def timed(label):
        with exact_matmul():
            d = graphs.GraphDecoder(model, 32, 16 + 64, eos, steps_per_graph=10, step=fast_decode_step)
            same = bool(torch.equal(d(prompt, 64, stops), ref)) and bool(torch.equal(d(prompt, 64), ref_free))
        d = graphs.GraphDecoder(model, 32, 16 + n, eos, steps_per_graph=10, step=fast_decode_step)
        t = per_step(lambda: d(prompt, n), n)
        say(f"{label}: {t * 1e3:.3f} ms/step ({t / fl:.2f}x floor); exact tokens identical (with and without forced stops) {same}")
        return t if same else float("inf")
    pdl = os.path.exists(os.path.join(OUT, "pdl", "pdl_ok"))
    best = min((timed(f"PDL {p}"), p) for p in ((False, True) if pdl else (False,)) if not tk.__setattr__("PDL", p))
    tk.PDL = best[1]
    best = min((timed(f"attention block {bl} warps {w}"), bl, w) for bl, w in ((64, 4), (32, 2), (128, 8)) if not (tk.__setattr__("ATTENTION_BLOCK", bl) or tk.__setattr__("ATTENTION_WARPS", w)))
    tk.ATTENTION_BLOCK, tk.ATTENTION_WARPS = best[1], best[2]
    best = min((timed(f"reduce warps {w}"), w) for w in (2, 4, 8) if not tk.__setattr__("REDUCE_WARPS", w))
    tk.REDUCE_WARPS = best[1]
    say(f"chosen PDL={tk.PDL} ATTENTION_BLOCK={tk.ATTENTION_BLOCK} ATTENTION_WARPS={tk.ATTENTION_WARPS} REDUCE_WARPS={tk.REDUCE_WARPS}")
    for k in (1, 10):
        d = graphs.GraphDecoder(model, 32, 16 + n, eos, steps_per_graph=k, step=fast_decode_step)
        t = per_step(lambda: d(prompt, n), n, reps=9)
        say(f"Triton step {k}/launch: {t * 1e3:.3f} ms/step ({t / fl:.2f}x floor)")
    t_pre = per_step(lambda: graphs.prefill(model, d.state, prompt, eos), 1, reps=9)
    say(f"prefill (eager, transformers forward): {t_pre * 1e3:.2f} ms = {t_pre / n * 1e3:.3f} ms per step of a {n}-token run")
    from helpers.fast_step import FastDecoder
    for k in (10,):
        with exact_matmul():
            fd = FastDecoder(model, 32, 16 + 64, eos, k)
            same = bool(torch.equal(fd(prompt, 64, stops), ref)) and bool(torch.equal(fd(prompt, 64), ref_free))
        fd = FastDecoder(model, 32, 16 + n, eos, k)
        t = per_step(lambda: fd(prompt, n), n, reps=9)
        say(f"FastDecoder (prefill graph too) {k}/launch: {t * 1e3:.3f} ms/step ({t / fl:.2f}x floor); exact tokens identical {same}")
    t_pre = per_step(lambda: fd.prefill(prompt), 1, reps=9)
    say(f"prefill from a graph: {t_pre * 1e3:.2f} ms")
    d = graphs.GraphDecoder(model, 32, 16 + n, eos, step=fast_decode_step)
    kt = kernels.replay_kernels(d, prompt, n, "cuda")
    table = kernels.kernel_table(kt, model, 32, 16, n, bw)
    say(table.round(2).to_string())
    table.to_csv(os.path.join(OUT, "kernel_table.csv"), index=False)
    kernels.step_kernels(kt, model.config.n_layer).to_csv(os.path.join(OUT, "step_kernels.csv"), index=False)
    m16 = copy.deepcopy(model).to(torch.bfloat16)
    d16 = graphs.GraphDecoder(m16, 32, 16 + n, eos, steps_per_graph=10, step=fast_decode_step)
    t16 = per_step(lambda: d16(prompt, n), n)
    say(f"bf16 Triton step 10/launch: {t16 * 1e3:.3f} ms/step")
    kt = kernels.replay_kernels(graphs.GraphDecoder(m16, 32, 16 + n, eos, step=fast_decode_step), prompt, n, "cuda")
    say(kernels.kernel_table(kt, m16, 32, 16, n, bw).round(2).to_string())


def pdl_probe():
    """Programmatic Dependent Launch through Triton inside the captured step (run in its own
    process: a failure must not poison the main run's CUDA context)."""
    from helpers.fast_step import FastDecoder
    stops = uniform_stop_lengths(32, 10, 60, device="cuda")
    with exact_matmul():
        ref = generate_naive(model, prompt, 64, eos, stops)
    n, times = 100, {}
    for p in (False, True):
        tk.PDL = p
        with exact_matmul():
            same = bool(torch.equal(FastDecoder(model, 32, 16 + 64, eos, 10)(prompt, 64, stops), ref))
        d = FastDecoder(model, 32, 16 + n, eos, 10)
        times[p] = per_step(lambda: d(prompt, n), n, reps=9)
        say(f"PDL={p}: {times[p] * 1e3:.3f} ms/step; exact tokens identical {same}")
        if p and same:
            open(os.path.join(OUT, "pdl_ok"), "w").write("ok")


def bench():
    from helpers import bench as b
    b.main([])



def step_before_qkv_split(model, state, eos_token_id):
    """helpers.fast_step.fast_decode_step as it was before v5 (docs/floor-notes.md): the QKV GEMM
    finished whole by its own kernel, then attention. The split (v5) is fast_decode_step now."""
    from helpers.fast_step import norm
    gpt, n_head = model.transformer, model.config.n_head
    norms = [block.ln_1 for block in gpt.h[1:]] + [gpt.ln_f]
    h, x = tk.embed(state.token, state.position, gpt.wte.weight, gpt.wpe.weight, norm(gpt.h[0].ln_1))
    for i, block in enumerate(gpt.h):
        attn, mlp = block.attn, block.mlp
        qkv = tk.linear(x, attn.c_attn.weight, attn.c_attn.bias)
        a = tk.decode_attention(qkv, state.kv[i], state.position, n_head)
        h, x = tk.linear(a, attn.c_proj.weight, attn.c_proj.bias, residual=h, norm=norm(block.ln_2))
        u = tk.linear(x, mlp.c_fc.weight, mlp.c_fc.bias, gelu=True)
        h, x = tk.linear(u, mlp.c_proj.weight, mlp.c_proj.bias, residual=h, norm=norm(norms[i]))
    best, index = tk.lm_head_argmax(x, model.lm_head.weight)
    tk.finish_step(best, index, state, eos_token_id)


step_qkv_split = fast_decode_step  # v5, kept


def fast_decoder_with(step):
    """helpers.fast_step.FastDecoder (the prefill from a graph too) running ``step``."""
    from helpers.fast_step import FastDecoder

    class Decoder(FastDecoder):
        def __init__(self, model, batch_size, max_len, eos_token_id, steps_per_graph=10):
            graphs.GraphDecoder.__init__(self, model, batch_size, max_len, eos_token_id,
                                         steps_per_graph, step=step)
            self.prefills = {}
    return Decoder


def floor_and_references(n, length=64):
    """The floor per step at ``n`` tokens and the naive loop's exact tokens at ``length``, with
    and without forced stops: what every timed section checks a step against."""
    bw = floor.copy_bandwidth("cuda")
    fl = floor.decode_floor(model, bw, 32, 16, n)
    stops = uniform_stop_lengths(32, 10, 60, device="cuda")
    with exact_matmul():
        ref = generate_naive(model, prompt, length, eos, stops)
        ref_free = generate_naive(model, prompt, length, eos)
    return bw, fl, stops, ref, ref_free


def qkv_split():
    """The QKV GEMM cut along K, its partial sums added by the attention kernel (no extra
    launch): kernel check against the references, tokens, and the step's time per config."""
    torch.manual_seed(2)
    for dtype, prec in ((torch.float32, "highest"), (torch.float32, "high"), (torch.bfloat16, "high")):
        torch.set_float32_matmul_precision(prec)
        for m, pos in ((32, 0), (32, 5), (1, 77), (32, 115)):
            x = torch.randn(m, 768, device="cuda", dtype=dtype)
            w = (torch.randn(768, 2304, device="cuda", dtype=dtype) / 768**0.5)
            b = torch.randn(2304, device="cuda", dtype=dtype)
            kv0 = torch.randn(2, m, 12, 128, 64, device="cuda", dtype=dtype)
            p = torch.tensor(pos, device="cuda")
            for c in (tk.QKV_SPLIT[dtype], (32, 256, 3, 4, 3), (32, 64, 4, 4, 4)):
                kv1, kv2 = kv0.clone(), kv0.double().clone()
                got = tk.qkv_attention(x, w, b, kv1, p, 12, config=c)
                ref = tk.decode_attention_ref(tk.linear_ref(x.double(), w.double(), b.double()), kv2, p, 12)
                say(f"qkv_attention {str(dtype)[6:]} {prec} m={m} pos={pos} {c}: out rel err {rel(got, ref):.2e}, cache rel err {rel(kv1, kv2):.2e}")
    use_tf32(True)
    n = 100
    bw, fl, stops, ref, ref_free = floor_and_references(n)
    with exact_matmul():
        for k in (1, 10):
            d = graphs.GraphDecoder(model, 32, 16 + 64, eos, steps_per_graph=k, step=step_qkv_split)
            say(f"qkv split step {k}/launch exact tokens identical: stops {bool(torch.equal(d(prompt, 64, stops), ref))}, free {bool(torch.equal(d(prompt, 64), ref_free))}")
    configs = [(32, 128, 2, 4, 4), (32, 256, 3, 4, 3), (32, 128, 3, 4, 4), (32, 64, 4, 4, 4), (64, 128, 4, 4, 4), (16, 128, 2, 4, 4), (32, 64, 6, 4, 4), (64, 128, 2, 4, 4)]
    decs = {"baseline": graphs.GraphDecoder(model, 32, 16 + n, eos, steps_per_graph=10, step=step_before_qkv_split)}
    chosen = dict(tk.QKV_SPLIT)
    for c in configs:
        tk.QKV_SPLIT = {**chosen, torch.float32: c}
        decs[c] = graphs.GraphDecoder(model, 32, 16 + n, eos, steps_per_graph=10, step=step_qkv_split)
        decs[c](prompt, n)  # captured with this config
    times = {k: [] for k in decs}
    for r in range(3):
        for k, d in decs.items():
            times[k].append(per_step(lambda: d(prompt, n), n, reps=7))
    for k, ts in times.items():
        say(f"{k}: {sorted(ts)[1] * 1e3:.4f} ms/step (rounds {[round(t * 1e3, 4) for t in ts]}), {sorted(ts)[1] / fl:.2f}x floor")
    best = min((sorted(ts)[1], k) for k, ts in times.items())
    say(f"best {best}")
    if best[1] != "baseline":
        tk.QKV_SPLIT = {**chosen, torch.float32: best[1]}
        d = graphs.GraphDecoder(model, 32, 16 + n, eos, step=step_qkv_split)
        kt = kernels.replay_kernels(d, prompt, n, "cuda")
        say(kernels.kernel_table(kt, model, 32, 16, n, bw).round(2).to_string())
    m16 = copy.deepcopy(model).to(torch.bfloat16)
    for name, st in (("baseline", step_before_qkv_split), ("qkv split", step_qkv_split)):
        d16 = graphs.GraphDecoder(m16, 32, 16 + n, eos, steps_per_graph=10, step=st)
        say(f"bf16 {name}: {per_step(lambda: d16(prompt, n), n, reps=9) * 1e3:.4f} ms/step")


def qkv_split_timed():
    """qkv_split's step against the current one, both as FastDecoder (prefill from a graph too),
    interleaved rounds, fp32/TF32 and bf16."""
    SplitDecoder, Before = fast_decoder_with(step_qkv_split), fast_decoder_with(step_before_qkv_split)
    chosen = dict(tk.QKV_SPLIT)
    n = 100
    bw, fl, stops, ref, ref_free = floor_and_references(n)
    with exact_matmul():
        d = SplitDecoder(model, 32, 16 + 64, eos, 10)
        say(f"SplitDecoder uses the split step: {d.step is step_qkv_split}; exact tokens identical with stops: {bool(torch.equal(d(prompt, 64, stops), ref))}")
    for m, label in ((model, "fp32"), (copy.deepcopy(model).to(torch.bfloat16), "bf16")):
        decs = {"baseline": Before(m, 32, 16 + n, eos, 10)}
        for c in [(16, 128, 2, 4, 4), (32, 128, 2, 4, 4), (32, 64, 4, 4, 4), (16, 64, 4, 4, 4), (16, 128, 3, 4, 4), (16, 256, 3, 4, 3), (16, 128, 6, 4, 4)]:
            tk.QKV_SPLIT = {**chosen, m.lm_head.weight.dtype: c}
            decs[c] = SplitDecoder(m, 32, 16 + n, eos, 10)
            decs[c](prompt, n)
        times = {k: [] for k in decs}
        for r in range(5):
            for k, d in decs.items():
                times[k].append(per_step(lambda: d(prompt, n), n, reps=9))
        for k, ts in times.items():
            med = sorted(ts)[2]
            say(f"{label} {k}: {med * 1e3:.4f} ms/step (rounds {[round(t * 1e3, 4) for t in ts]}), {med / fl:.2f}x fp32 floor")


def step_sweep():
    """Launch settings of the whole step (FastDecoder, 10 steps per replay, the QKV split
    summed by attention) in interleaved rounds: attention's positions per iteration and warps,
    the row kernel's warps, the QKV split's warps and stages."""
    from helpers.fast_step import FastDecoder
    n = 100
    bw = floor.copy_bandwidth("cuda")
    fl = floor.decode_floor(model, bw, 32, 16, n)
    base = dict(ATTENTION_BLOCK=tk.ATTENTION_BLOCK, ATTENTION_WARPS=tk.ATTENTION_WARPS,
                REDUCE_WARPS=tk.REDUCE_WARPS, QKV_SPLIT=dict(tk.QKV_SPLIT))
    variants = {"current": {}}
    for bl, w in ((32, 2), (32, 4), (64, 2), (128, 4), (64, 8), (16, 2)):
        variants[f"attention {bl}/{w}"] = dict(ATTENTION_BLOCK=bl, ATTENTION_WARPS=w)
    for w in (4, 16):
        variants[f"reduce warps {w}"] = dict(REDUCE_WARPS=w)
    for mdl, label in ((model, "fp32"), (copy.deepcopy(model).to(torch.bfloat16), "bf16")):
        dt = mdl.lm_head.weight.dtype
        vs = dict(variants)
        c = base["QKV_SPLIT"][dt]
        vs["qkv 8 warps"] = dict(QKV_SPLIT={**base["QKV_SPLIT"], dt: (c[0], c[1], c[2], 8, c[4])})
        vs["qkv 3 stages"] = dict(QKV_SPLIT={**base["QKV_SPLIT"], dt: (c[0], c[1], c[2], c[3], 3)})
        vs["qkv 2 warps"] = dict(QKV_SPLIT={**base["QKV_SPLIT"], dt: (c[0], c[1], c[2], 2, c[4])})
        decs = {}
        for name, v in vs.items():
            for key, val in {**base, **v}.items():
                setattr(tk, key, val)
            try:
                decs[name] = FastDecoder(mdl, 32, 16 + n, eos, 10)
                decs[name](prompt, n)
            except Exception as e:  # noqa: BLE001
                decs.pop(name, None)
                say(f"{label} {name} failed: {type(e).__name__}")
        for key, val in base.items():
            setattr(tk, key, val)
        times = {k: [] for k in decs}
        for r in range(5):
            for k, dec in decs.items():
                times[k].append(per_step(lambda: dec(prompt, n), n, reps=9))
        for k, ts in sorted(times.items(), key=lambda kv: sorted(kv[1])[2]):
            med = sorted(ts)[2]
            say(f"{label} {k}: {med * 1e3:.4f} ms/step (rounds {[round(t * 1e3, 4) for t in ts]}), {med / fl:.2f}x fp32 floor")
    stops = uniform_stop_lengths(32, 10, 60, device="cuda")
    with exact_matmul():
        ref = generate_naive(model, prompt, 64, eos, stops)
        say(f"current settings, exact tokens identical with stops: {bool(torch.equal(FastDecoder(model, 32, 16 + 64, eos, 10)(prompt, 64, stops), ref))}")



# ------------------------------------------- 2026-11-26 night: weights stored along K (N, K)

def _k_major(model):
    """A copy of ``model`` whose Conv1D weights are (K, N) views of (N, K) storage: each output
    column's K weights contiguous, as the LM head's tied embedding already is."""
    m = copy.deepcopy(model)
    for block in m.transformer.h:
        for lin in (block.attn.c_attn, block.attn.c_proj, block.mlp.c_fc, block.mlp.c_proj):
            lin.weight.data = lin.weight.data.t().contiguous().t()
    return m


def layout_sweep():
    """Each layer GEMM over the 12 blocks' weights in a CUDA graph: today's (K, N) storage with
    its tuned config against (N, K) storage over a sweep of configs; errors against the
    float64 reference; then the whole step (FastDecoder, 10 per replay) on both layouts."""
    from helpers.fast_step import FastDecoder
    global model_k
    model_k = _k_major(model)
    best_k = {}
    for dtype in (torch.float32, torch.bfloat16):
        mk = model_k if dtype == torch.float32 else copy.deepcopy(model_k).to(dtype)
        mn = model if dtype == torch.float32 else copy.deepcopy(model).to(dtype)
        if dtype == torch.bfloat16:  # .to() keeps the strides of each weight
            for block in mk.transformer.h:
                for lin in (block.attn.c_attn, block.attn.c_proj, block.mlp.c_fc, block.mlp.c_proj):
                    assert lin.weight.stride(0) == 1, lin.weight.stride()
        x32 = {768: torch.randn(32, 768, device="cuda", dtype=dtype), 3072: torch.randn(32, 3072, device="cuda", dtype=dtype)}
        for name, get, kw in (("QKV", lambda b: (b.attn.c_attn, None), ""), ("attention out", lambda b: (b.attn.c_proj, b.ln_2), "res"),
                              ("MLP up", lambda b: (b.mlp.c_fc, None), "gelu"), ("MLP down", lambda b: (b.mlp.c_proj, b.ln_2), "res")):
            k, n = get(mn.transformer.h[0])[0].weight.shape
            x = x32[k]
            res = torch.randn(32, n, device="cuda", dtype=dtype)
            def timed(m, c):
                mods = [get(b) for b in m.transformer.h]
                fn = lambda: [tk.linear(x, lin.weight, lin.bias, norm=None if ln is None else (ln.weight, ln.bias, ln.eps),
                                        gelu="gelu" in kw, residual=res if "res" in kw else None, config=c) for lin, ln in mods]
                return kernels.graph_time_s(fn, iters=2) / len(mods) * 1e6
            today = tk.config_for(n, k, dtype)
            t_today = timed(mn, today)
            cands = [(bn, bk, sp, 4, 4) for bn in (16, 32, 64) for bk in (128, 256) for sp in (1, 2, 4, 8)]
            cands = [c for c in cands if k % (c[1] * c[2]) == 0 and math.ceil(n / c[0]) * c[2] <= 1536]
            times = {}
            for c in cands:
                try:
                    times[c] = timed(mk, c)
                except Exception:
                    times[c] = float("nan")
            best = min((t, c) for c, t in times.items() if t == t)
            best_k[(n, k, dtype)] = best[1]
            nbytes = (k * n + 32 * k + 32 * n) * x.element_size()
            lin, ln = get(mk.transformer.h[0])
            got = tk.linear(x, lin.weight, lin.bias, norm=None if ln is None else (ln.weight, ln.bias, ln.eps),
                            gelu="gelu" in kw, residual=res if "res" in kw else None, config=best[1])
            ref = tk.linear_ref(x.double(), lin.weight.double(), lin.bias.double(), gelu="gelu" in kw,
                                residual=res.double() if "res" in kw else None)
            got = got[0] if isinstance(got, tuple) else got
            say(f"{str(dtype)[6:]:8} {name:14} (K,N) today {today} {t_today:.2f} us ({nbytes / t_today / 1e3:.0f} GB/s) | "
                f"(N,K) best {best[1]} {best[0]:.2f} us ({nbytes / best[0] / 1e3:.0f} GB/s), rel err {rel(got, ref):.1e}; "
                f"top3 {sorted((round(t, 2), c) for c, t in times.items() if t == t)[:3]}")
    say("BEST_K =", best_k)
    # the whole step, both layouts, fp32 and bf16, interleaved rounds
    n = 100
    saved = dict(tk.CONFIGS)
    for label, mn, mk in (("fp32", model, model_k), ("bf16", copy.deepcopy(model).to(torch.bfloat16), copy.deepcopy(model_k).to(torch.bfloat16))):
        dt = mn.lm_head.weight.dtype
        decs = {"(K,N) today": FastDecoder(mn, 32, 16 + n, eos, 10)}
        decs["(K,N) today"](prompt, n)
        tk.CONFIGS.update({key: c for key, c in best_k.items() if key[2] == dt})
        decs["(N,K) swept"] = FastDecoder(mk, 32, 16 + n, eos, 10)
        decs["(N,K) swept"](prompt, n)
        q = tk.QKV_SPLIT[dt]
        tk.QKV_SPLIT[dt] = best_k[(2304, 768, dt)]
        decs["(N,K) swept, QKV split swept"] = FastDecoder(mk, 32, 16 + n, eos, 10)
        decs["(N,K) swept, QKV split swept"](prompt, n)
        tk.QKV_SPLIT[dt] = q
        tk.CONFIGS.clear(); tk.CONFIGS.update(saved)
        times = {k: [] for k in decs}
        for r in range(5):
            for k2, dec in decs.items():
                if k2.startswith("(N,K)"):
                    tk.CONFIGS.update({key: c for key, c in best_k.items() if key[2] == dt})
                times[k2].append(per_step(lambda: dec(prompt, n), n, reps=9))
                tk.CONFIGS.clear(); tk.CONFIGS.update(saved)
        for k2, ts in times.items():
            say(f"{label} whole step {k2}: {sorted(ts)[2] * 1e3:.4f} ms/step (rounds {[round(t * 1e3, 4) for t in ts]})")
    tk.CONFIGS.update({key: c for key, c in best_k.items() if key[2] == torch.float32})
    stops = uniform_stop_lengths(32, 10, 60, device="cuda")
    with exact_matmul():
        ref = generate_naive(model, prompt, 64, eos, stops)
        for spl in (1, 10):
            out = FastDecoder(model_k, 32, 16 + 64, eos, spl)(prompt, 64, stops)
            say(f"(N,K) fp32 exact, {spl}/launch, stops: identical to naive {out.shape == ref.shape and bool(torch.equal(out, ref))}")
    tk.CONFIGS.clear(); tk.CONFIGS.update(saved)



# ------------------------------ 2026-11-27: L2 prefetch of what no earlier kernel writes

def prefetch_sweep():
    """Each kernel asks for its weights (layer GEMMs) or the filled keys and values (attention)
    to be brought into L2 before ``gdc_wait``, so those reads overlap the kernel before.
    Kernels against their references, the PTX checked for the instruction, then the whole step
    (FastDecoder, 10 per replay) off / GEMMs / attention / both in 5 interleaved rounds, fp32
    and bf16, and the tokens identical to the naive loop under IEEE float32 with forced stops.
    Ran at ff358b6, when PREFETCH_GEMM asked for the whole slice and FORM 2 passed integer
    addresses; main keeps FORM 1 and the first block only (prefetch_sweep2)."""
    import glob
    from helpers.fast_step import FastDecoder
    torch.manual_seed(3)
    form = 0
    for f in (1, 2):
        tk.PREFETCH_GEMM = tk.PREFETCH_ATTENTION = f
        try:
            for dtype in (torch.float32, torch.bfloat16):
                x = torch.randn(32, 768, device="cuda", dtype=dtype)
                w = torch.randn(768, 2304, device="cuda", dtype=dtype) / 28
                b = torch.randn(2304, device="cuda", dtype=dtype)
                got = tk.linear(x, w, b)
                ref = tk.linear_ref(x.double(), w.double(), b.double())
                kv = torch.randn(2, 32, 12, 80, 64, device="cuda", dtype=dtype)
                kv2 = kv.clone()
                pos = torch.tensor(57, device="cuda")
                qkv = torch.randn(32, 2304, device="cuda", dtype=dtype)
                a = tk.decode_attention(qkv, kv, pos, 12)
                a_ref = tk.decode_attention_ref(qkv.double(), kv2.double(), pos, 12)
                torch.cuda.synchronize()
                say(f"form {f} {str(dtype)[6:]}: linear rel err {rel(got, ref):.1e}, attention rel err {rel(a, a_ref):.1e}, cache rel err {rel(kv, kv2.double()):.1e}")
            form = f
            break
        except Exception as e:  # noqa: BLE001
            say(f"form {f} failed: {type(e).__name__}: {str(e)[-600:]}")
    tk.PREFETCH_GEMM = tk.PREFETCH_ATTENTION = 0
    if not form:
        return
    cache = os.environ.get("TRITON_CACHE_DIR", os.path.expanduser("~/.triton/cache"))
    ptx = [p for p in glob.glob(os.path.join(cache, "**", "*.ptx"), recursive=True)
           if "prefetch.global.L2" in open(p).read()]
    say(f"form {form}: {len(ptx)} PTX files in the Triton cache hold prefetch.global.L2")
    n = 100
    bw = floor.copy_bandwidth("cuda")
    fl = floor.decode_floor(model, bw, 32, 16, n)
    vs = {"off": (0, 0), "GEMMs": (form, 0), "attention": (0, form), "both": (form, form)}
    for mdl, label in ((model, "fp32"), (copy.deepcopy(model).to(torch.bfloat16), "bf16")):
        decs = {}
        for name, (g, at) in vs.items():
            tk.PREFETCH_GEMM, tk.PREFETCH_ATTENTION = g, at
            decs[name] = FastDecoder(mdl, 32, 16 + n, eos, 10)
            decs[name](prompt, n)
        times = {k: [] for k in decs}
        for r in range(5):
            for name, dec in decs.items():
                tk.PREFETCH_GEMM, tk.PREFETCH_ATTENTION = vs[name]
                times[name].append(per_step(lambda: dec(prompt, n), n, reps=9))
        for name, ts in times.items():
            med = sorted(ts)[2]
            say(f"{label} {name}: {med * 1e3:.4f} ms/step (rounds {[round(t * 1e3, 4) for t in ts]}), {med / fl:.2f}x fp32 floor")
        del decs
    tk.PREFETCH_GEMM = tk.PREFETCH_ATTENTION = form
    stops = uniform_stop_lengths(32, 10, 60, device="cuda")
    with exact_matmul():
        for s in (stops, None):
            ref = generate_naive(model, prompt, 64, eos, s)
            for spl in (1, 10):
                out = FastDecoder(model, 32, 16 + 64, eos, spl)(prompt, 64, s)
                say(f"both prefetches, fp32 exact, {spl}/launch, stops={s is not None}: identical to naive {out.shape == ref.shape and bool(torch.equal(out, ref))}")
    tk.PREFETCH_GEMM = tk.PREFETCH_ATTENTION = 0


def prefetch_sweep2():
    """After prefetch_sweep (attention's prefetch gained, the GEMMs' whole-slice prefetch lost):
    attention's prefetch with the GEMMs prefetching only their first 1 or 2 blocks of K, and
    with every kernel letting the next start before its own wait; 5 interleaved rounds.
    Ran at a2a02f4; EARLY_DEPENDENTS (slower) and PREFETCH_CHUNKS (1 kept) are gone since."""
    from helpers.fast_step import FastDecoder
    n = 100
    bw = floor.copy_bandwidth("cuda")
    fl = floor.decode_floor(model, bw, 32, 16, n)
    keys = ("PREFETCH_ATTENTION", "PREFETCH_GEMM", "PREFETCH_CHUNKS", "EARLY_DEPENDENTS")
    vs = {"off": (0, 0, 0, False), "A": (1, 0, 0, False), "A+G1": (1, 1, 1, False),
          "A+G2": (1, 1, 2, False), "A+early": (1, 0, 0, True), "A+G1+early": (1, 1, 1, True)}
    def use(v):
        for key, val in zip(keys, v):
            setattr(tk, key, val)
    for mdl, label in ((model, "fp32"), (copy.deepcopy(model).to(torch.bfloat16), "bf16")):
        decs = {}
        for name, v in vs.items():
            use(v)
            decs[name] = FastDecoder(mdl, 32, 16 + n, eos, 10)
            decs[name](prompt, n)
        times = {k: [] for k in decs}
        for r in range(5):
            for name, dec in decs.items():
                use(vs[name])
                times[name].append(per_step(lambda: dec(prompt, n), n, reps=9))
        for name, ts in times.items():
            med = sorted(ts)[2]
            say(f"{label} {name}: {med * 1e3:.4f} ms/step (rounds {[round(t * 1e3, 4) for t in ts]}), {med / fl:.2f}x fp32 floor")
        del decs
    stops = uniform_stop_lengths(32, 10, 60, device="cuda")
    with exact_matmul():
        ref = generate_naive(model, prompt, 64, eos, stops)
        for name in ("A", "A+G1+early"):
            use(vs[name])
            for spl in (1, 10):
                out = FastDecoder(model, 32, 16 + 64, eos, spl)(prompt, 64, stops)
                say(f"{name}, fp32 exact, {spl}/launch, stops: identical to naive {out.shape == ref.shape and bool(torch.equal(out, ref))}")
    use(vs["off"])


def prefetch_sweep3():
    """With the v7 prefetch on: how many blocks of K each layer GEMM asks for early (the whole
    share for one shape at a time, or for all but MLP down), then bf16 launch settings of the
    layer GEMMs re-swept with the prefetch on; the whole step in 5 interleaved rounds each.
    Ran at a6c4417, with tk.PREFETCH_BLOCKS (blocks per shape); nothing beat v7's first block,
    so that knob is gone since and setting it here has no effect."""
    from helpers.fast_step import FastDecoder
    n = 100
    bw = floor.copy_bandwidth("cuda")
    fl = floor.decode_floor(model, bw, 32, 16, n)
    QKV, OUT, UP, DOWN = (2304, 768), (768, 768), (3072, 768), (768, 3072)
    base_cfg, base_qkv = dict(tk.CONFIGS), dict(tk.QKV_SPLIT)
    def timed(mdl, label, variants):
        decs = {}
        for name, (blocks, cfg, qkv) in variants.items():
            tk.PREFETCH_BLOCKS = blocks; tk.CONFIGS = {**base_cfg, **cfg}; tk.QKV_SPLIT = {**base_qkv, **qkv}
            try:
                decs[name] = FastDecoder(mdl, 32, 16 + n, eos, 10)
                decs[name](prompt, n)
            except Exception as e:  # noqa: BLE001
                say(f"{label} {name} failed: {type(e).__name__}: {str(e)[-300:]}")
                decs.pop(name, None)
        times = {k: [] for k in decs}
        for r in range(5):
            for name, dec in decs.items():
                blocks, cfg, qkv = variants[name]
                tk.PREFETCH_BLOCKS = blocks; tk.CONFIGS = {**base_cfg, **cfg}; tk.QKV_SPLIT = {**base_qkv, **qkv}
                times[name].append(per_step(lambda: dec(prompt, n), n, reps=9))
        for name, ts in sorted(times.items(), key=lambda kv: sorted(kv[1])[2]):
            med = sorted(ts)[2]
            say(f"{label} {name}: {med * 1e3:.4f} ms/step (rounds {[round(t * 1e3, 4) for t in ts]}), {med / fl:.2f}x fp32 floor")
        tk.PREFETCH_BLOCKS = {}; tk.CONFIGS = dict(base_cfg); tk.QKV_SPLIT = dict(base_qkv)
    blocks = {"first block (v7)": {}, "QKV all": {QKV: 0}, "attention out all": {OUT: 0},
              "MLP up all": {UP: 0}, "MLP down all": {DOWN: 0},
              "all but MLP down": {QKV: 0, OUT: 0, UP: 0}, "two blocks": {QKV: 2, OUT: 2, UP: 2, DOWN: 2}}
    bf = torch.bfloat16
    bf16_cfg = {"bf16 MLP up 64 cols": {(3072, 768, bf): (64, 128, 1, 4, 4)},
                "bf16 MLP up 16 cols": {(3072, 768, bf): (16, 128, 1, 4, 4)},
                "bf16 MLP up BK 256": {(3072, 768, bf): (32, 256, 1, 4, 3)},
                "bf16 out/down split 2": {(768, 768, bf): (32, 64, 2, 4, 4), (768, 3072, bf): (32, 128, 2, 4, 4)},
                "bf16 out/down 16 cols": {(768, 768, bf): (16, 64, 4, 4, 4), (768, 3072, bf): (16, 128, 4, 4, 4)},
                "bf16 down split 8": {(768, 3072, bf): (32, 128, 8, 4, 4)}}
    for mdl, label in ((model, "fp32"), (copy.deepcopy(model).to(bf), "bf16")):
        vs = {name: (b, {}, {}) for name, b in blocks.items()}
        if label == "bf16":
            vs.update({name: ({}, c, {}) for name, c in bf16_cfg.items()})
            vs["bf16 QKV split 32 cols"] = ({}, {}, {bf: (32, 128, 2, 4, 4)})
            vs["bf16 QKV split 3"] = ({}, {}, {bf: (16, 128, 3, 4, 4)})
        timed(mdl, label, vs)
    stops = uniform_stop_lengths(32, 10, 60, device="cuda")
    with exact_matmul():
        ref = generate_naive(model, prompt, 64, eos, stops)
        for name in ("all but MLP down", "two blocks"):
            tk.PREFETCH_BLOCKS = blocks[name]
            out = FastDecoder(model, 32, 16 + 64, eos, 10)(prompt, 64, stops)
            say(f"{name}, fp32 exact, 10/launch, stops: identical to naive {out.shape == ref.shape and bool(torch.equal(out, ref))}")
    tk.PREFETCH_BLOCKS = {}



if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for fn in (kernel_checks, setup, token_checks, graph_sweep, variants, bench) if len(sys.argv) < 3 else [globals()[a] for a in sys.argv[2:]]:
        if fn is setup:
            setup()
        else:
            section(fn)
