# Garbage-collector experiment, NVIDIA H100 80GB HBM3 (machine B), 2026-11-22 ~20:05 UTC
# Script (run with the GPU bundle on PYTHONPATH), then its printed output.

"""Does Python's garbage collector explain the spikes of eager trials? Interleaved rounds,
GC on and off, per-trial GC time from gc.callbacks."""
import gc, time, statistics, torch
from helpers.model import build_model, make_prompt, use_tf32
from helpers.generation import generate_kv_cache
from helpers.static import generate_static_cache, make_static_cache
use_tf32(True)
m = build_model("gpt2", "cuda"); eos = m.config.eos_token_id
ids = make_prompt(32, 16, m.config.vocab_size, eos, "cuda")
N = 200
cache = make_static_cache(m, 32, 16 + N, "cuda")
gct = {"t": 0.0, "n": [0, 0, 0], "s": None}
def cb(phase, info):
    if phase == "start": gct["s"] = time.perf_counter()
    else: gct["t"] += time.perf_counter() - gct["s"]; gct["n"][info["generation"]] += 1
gc.callbacks.append(cb)
meths = {"kv": lambda: generate_kv_cache(m, ids, N, eos), "static": lambda: generate_static_cache(m, ids, N, eos, cache=cache)}
res = {(k, g): [] for k in meths for g in ("on", "off")}
with torch.no_grad():
    for k in meths: meths[k](); torch.cuda.synchronize()
    for r in range(12):
        for k in meths:
            for g in (("on", "off") if r % 2 else ("off", "on")):
                gc.collect(); torch.cuda.synchronize(); torch.cuda.empty_cache()
                if g == "off": gc.disable()
                gct["t"] = 0.0; gct["n"] = [0, 0, 0]
                t = time.perf_counter(); meths[k](); torch.cuda.synchronize(); w = time.perf_counter() - t
                gc.enable()
                res[(k, g)].append((w, gct["t"], tuple(gct["n"])))
for key, v in res.items():
    w = [x[0] * 1e3 for x in v]
    print(key, "median %.0f ms  min %.0f max %.0f  spread(max/min) %.2f  gc ms/trial median %.1f max %.1f  collections %s" % (
        statistics.median(w), min(w), max(w), max(w) / min(w), statistics.median(x[1] * 1e3 for x in v), max(x[1] * 1e3 for x in v), v[0][2]))
    print("   ", " ".join("%.0f" % x for x in w))

# Output:
# ('kv', 'on') median 1429 ms  min 1173 max 2109  spread(max/min) 1.80  gc ms/trial median 0.2 max 0.2  collections (4, 0, 0)
#     1832 1813 1199 1297 1173 1403 1815 1267 1828 1408 2109 1450
# ('kv', 'off') median 1396 ms  min 1163 max 2206  spread(max/min) 1.90  gc ms/trial median 0.0 max 0.0  collections (0, 0, 0)
#     1163 1901 1364 1200 1164 1428 2206 1185 1956 1965 1457 1251
# ('static', 'on') median 1845 ms  min 1407 max 2218  spread(max/min) 1.58  gc ms/trial median 0.2 max 0.2  collections (4, 0, 0)
#     1979 2218 1700 1920 1407 1892 1798 1576 1670 1551 2093 2063
# ('static', 'off') median 1823 ms  min 1464 max 2085  spread(max/min) 1.42  gc ms/trial median 0.0 max 0.0  collections (0, 0, 0)
#     2069 2084 1750 1464 1501 1958 1775 1547 2085 1871 1751 1934
