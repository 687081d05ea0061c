"""Pinned against unpinned, in one process, alternating: the compiled (CUDA-graph) sync and
interleaved loops at batch 1 and 32, and the eager KV loop at batch 32. 100 tokens."""
import os, time, statistics, torch, numpy as np
from helpers import static
from helpers.course import harness
from helpers.model import build_model, make_prompt, use_tf32
from helpers.streams import eager_step, generate_sync, generate_interleaved, generate_no_check
use_tf32(True)
torch._dynamo.config.recompile_limit = 64
m = build_model("gpt2", "cuda"); eos = m.config.eos_token_id; N = 100
step = static.compiled_step(m, "reduce-overhead")
cases = {}
for b in (1, 32):
    cache = static.make_static_cache(m, b, 16 + N, "cuda", m.dtype)
    ids = make_prompt(b, 16, m.config.vocab_size, eos, "cuda")
    for name, g in (("sync", generate_sync), ("interleaved", generate_interleaved), ("no_check", generate_no_check)):
        cases[f"compiled b{b} {name}"] = (lambda g=g, ids=ids, cache=cache: g(m, ids, N, eos, step=step, cache=cache))
ids32 = make_prompt(32, 16, m.config.vocab_size, eos, "cuda")
es = eager_step(m)
cases["eager b32 sync"] = lambda: generate_sync(m, ids32, N, eos, step=es, cache=None)
cases["eager b32 no_check"] = lambda: generate_no_check(m, ids32, N, eos, step=es, cache=None)
with torch.no_grad():
    for f in cases.values(): f(); f()
    torch.cuda.synchronize()
    res = {(k, p): [] for k in cases for p in ("pinned", "free")}
    t0 = time.time()
    for r in range(14):
        for p in (("pinned", "free") if r % 2 else ("free", "pinned")):
            cpu = harness.fastest_cpu() if p == "pinned" else None
            with harness.pinned(cpu):
                for k, f in cases.items():
                    rec, _ = harness.trial(f, device="cuda")
                    res[(k, p)].append(rec["wall_s"] * 1e3)
    print(f"timed in {time.time() - t0:.0f} s")
for k in cases:
    for p in ("free", "pinned"):
        x = res[(k, p)]
        print(f"{k:24s} {p:6s} med {statistics.median(x):7.1f} ms  p90/p10 {np.percentile(x, 90) / np.percentile(x, 10):.2f}  max/med {max(x) / statistics.median(x):.2f} | {' '.join('%.0f' % v for v in x)}")
for b in (1, 32):
    for p in ("free", "pinned"):
        s, i = np.array(res[(f"compiled b{b} sync", p)]), np.array(res[(f"compiled b{b} interleaved", p)])
        r = np.log(s / i); print(f"compiled b{b} sync/interleaved {p}: geo {np.exp(r.mean()):.3f}  sd(log) {r.std():.3f}")
for p in ("free", "pinned"):
    s, i = np.array(res[("eager b32 sync", p)]), np.array(res[("eager b32 no_check", p)])
    r = np.log(s / i); print(f"eager b32 sync/no_check {p}: geo {np.exp(r.mean()):.3f}  sd(log) {r.std():.3f}")

# Printed on a lent H100 host (2026-11-22; NVIDIA H100 80GB HBM3, driver 580.159.04, Intel Xeon,
# 16 cores under KVM; torch 2.11.0+cu130, transformers 5.17.0), run from the repository root:
# timed in 73 s
# compiled b1 sync         free   med   123.4 ms  p90/p10 1.29  max/med 1.36 | 150 168 125 119 121 146 149 118 115 120 149 112 121 147
# compiled b1 sync         pinned med   125.1 ms  p90/p10 1.47  max/med 1.56 | 163 196 144 120 117 147 122 128 162 169 117 123 113 110
# compiled b1 interleaved  free   med    85.3 ms  p90/p10 1.34  max/med 1.63 | 111 139 86 84 84 110 108 85 91 84 83 82 82 110
# compiled b1 interleaved  pinned med    87.9 ms  p90/p10 1.69  max/med 1.85 | 120 163 88 88 84 109 99 87 137 143 85 84 83 82
# compiled b1 no_check     free   med    81.1 ms  p90/p10 1.13  max/med 1.32 | 92 107 81 83 81 87 86 81 81 81 81 80 80 85
# compiled b1 no_check     pinned med    83.2 ms  p90/p10 1.35  max/med 1.35 | 89 112 83 82 82 89 83 83 110 107 81 81 83 81
# compiled b32 sync        free   med   178.3 ms  p90/p10 1.22  max/med 1.26 | 198 225 183 170 165 198 190 170 173 174 189 160 156 191
# compiled b32 sync        pinned med   181.6 ms  p90/p10 1.33  max/med 1.25 | 190 226 184 168 167 196 192 179 217 212 168 160 166 161
# compiled b32 interleaved free   med   131.1 ms  p90/p10 1.06  max/med 1.11 | 135 145 135 129 129 135 131 131 130 131 133 128 127 135
# compiled b32 interleaved pinned med   131.3 ms  p90/p10 1.13  max/med 1.16 | 133 139 131 131 130 134 135 132 152 147 129 128 128 128
# compiled b32 no_check    free   med   128.3 ms  p90/p10 1.06  max/med 1.08 | 133 139 133 132 126 129 131 127 127 127 128 126 125 132
# compiled b32 no_check    pinned med   128.6 ms  p90/p10 1.05  max/med 1.07 | 127 133 132 127 127 132 131 130 138 132 126 126 126 126
# eager b32 sync           free   med   802.3 ms  p90/p10 1.84  max/med 1.56 | 1208 1254 870 994 711 988 1056 734 691 721 725 613 619 1112
# eager b32 sync           pinned med   936.8 ms  p90/p10 2.02  max/med 1.52 | 831 1304 1144 1111 684 1007 1037 867 1419 1197 628 636 597 636
# eager b32 no_check       free   med   815.6 ms  p90/p10 1.75  max/med 1.51 | 1229 1197 1105 864 665 1056 991 669 768 725 671 707 580 1071
# eager b32 no_check       pinned med   848.3 ms  p90/p10 1.83  max/med 1.66 | 888 1210 1106 830 675 949 866 692 1407 725 631 594 715 949
# compiled b1 sync/interleaved free: geo 1.396  sd(log) 0.086
# compiled b1 sync/interleaved pinned: geo 1.344  sd(log) 0.088
# compiled b32 sync/interleaved free: geo 1.365  sd(log) 0.066
# compiled b32 sync/interleaved pinned: geo 1.372  sd(log) 0.071
# eager b32 sync/no_check free: geo 1.001  sd(log) 0.101
# eager b32 sync/no_check pinned: geo 1.059  sd(log) 0.205
