"""Does compiling in a process slow that process's eager loops? (2026-11-23)

In the published run the same eager loop took 20-33% longer in 05 and 08 (which compile with
torch.compile) than in 01, 02, 04 and 10 (which do not). This probe times the eager KV-cache and
static-cache loops (batch 32, 100 tokens, TF32) in one process: before any compile, after
compiling the static-cache step with mode="reduce-overhead" (05's compile), and after shutting
down Inductor's compile-worker processes. Usage on a GPU: python docs/runs/probes/compile_then_eager.py
"""
import os
import statistics
import time

import torch

from helpers.generation import generate_kv_cache
from helpers.model import build_model, make_prompt, use_tf32
from helpers.static import compiled_step, generate_static_cache, generate_static_compiled

model = build_model("gpt2", "cuda")
use_tf32(True)
eos = model.config.eos_token_id
prompt = make_prompt(32, 16, model.config.vocab_size, eos, "cuda")
loops = {"kv cache": lambda: generate_kv_cache(model, prompt, 100, eos),
         "static cache": lambda: generate_static_cache(model, prompt, 100, eos)}


def children() -> int:
    pid, count = str(os.getpid()), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    count += f.read().split()[3] == pid
            except OSError:
                pass
    return count


def timed(label: str, rounds: int = 7) -> None:
    times = {name: [] for name in loops}
    for _ in range(rounds):  # interleaved rounds
        for name, loop in loops.items():
            torch.cuda.synchronize()
            start = time.perf_counter()
            loop()
            torch.cuda.synchronize()
            times[name].append(1e3 * (time.perf_counter() - start))
    cells = ", ".join(f"{name} {statistics.median(t):.1f} ms (min {min(t):.1f}, max {max(t):.1f})"
                      for name, t in times.items())
    print(f"{label:44s} {cells}; threads {len(os.listdir('/proc/self/task'))}, "
          f"child processes {children()}", flush=True)


for loop in loops.values():
    loop()
timed("before any compile")
step = compiled_step(model, "reduce-overhead")
start = time.perf_counter()
generate_static_compiled(model, prompt, 100, eos, step=step)
generate_static_compiled(model, prompt, 100, eos, step=step)
print(f"compiled (reduce-overhead) in {time.perf_counter() - start:.1f} s", flush=True)
timed("after compiling")
from torch._inductor.async_compile import shutdown_compile_workers  # noqa: E402
shutdown_compile_workers()
timed("after shutting down the compile workers")
torch._dynamo.reset()
timed("after torch._dynamo.reset()")
