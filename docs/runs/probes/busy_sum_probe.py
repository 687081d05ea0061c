"""How long the profiler's table of events (key_averages) takes against harness.device_event_ns,
on notebook 04's longest eager loop (GPT-2, batch 32, 400 tokens). Run on the GPU host from the
repository root: `PYTHONPATH=. python docs/runs/probes/busy_sum_probe.py`. H100, 2026-11-23: one profiled run
4.07 s (1.94 s unprofiled), 252,795 raw events, the same 1009.4 ms of kernel time from both;
the raw sum took 0.58 s, key_averages 13.52 s."""
import time
import torch
from torch.profiler import ProfilerActivity, profile
from helpers.course import harness
from helpers.generation import generate_kv_cache
from helpers.model import build_model, make_prompt, use_tf32

model = build_model("gpt2", "cuda", seed=0)
use_tf32(True)
eos = model.config.eos_token_id
prompt = make_prompt(32, 16, model.config.vocab_size, eos, "cuda", seed=0)
run = lambda: generate_kv_cache(model, prompt, 400, eos)
run(); torch.cuda.synchronize()
t0 = time.perf_counter(); run(); torch.cuda.synchronize(); plain = time.perf_counter() - t0
t0 = time.perf_counter()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    run(); torch.cuda.synchronize()
profiled = time.perf_counter() - t0
t0 = time.perf_counter(); raw = harness.device_event_ns(prof.profiler.kineto_results.events()) * 1e-9; t_raw = time.perf_counter() - t0
n = len(prof.profiler.kineto_results.events())
t0 = time.perf_counter()
table = 1e-6 * sum(e.self_device_time_total for e in prof.key_averages()
                   if e.device_type == torch.autograd.DeviceType.CUDA)
t_table = time.perf_counter() - t0
print(f"400 tokens, batch 32, dynamic cache: run {plain:.2f} s, profiled run {profiled:.2f} s, "
      f"{n} raw events; raw sum {raw*1e3:.1f} ms in {t_raw:.2f} s; key_averages {table*1e3:.1f} ms in {t_table:.2f} s")
