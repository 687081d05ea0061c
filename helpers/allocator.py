"""The CUDA caching allocator's settings (notebook 03): check a setting, run the KV-cache loop
under it in a fresh process, and prove inside that process which setting took effect.

PyTorch reads ``PYTORCH_ALLOC_CONF`` (older releases: ``PYTORCH_CUDA_ALLOC_CONF``) once, when
CUDA starts; setting it later in a running kernel does nothing. So every setting runs in its own
child process (``python -m helpers.allocator``) whose environment carries it from the start.
The child reads the allocator back (the settings string torch parsed, the backend, and whether
the segments it actually made are expandable) and the parent refuses a run whose effective
setting differs from the requested one: a PyTorch that ignores the variable cannot pass silently.

Public API:

- ``parse_alloc_conf(conf)`` -> dict: checks a setting string such as
  ``"expandable_segments:True,max_split_size_mb:128"`` before any GPU work; a bad key or value
  fails with the allowed ones. ``"default"`` (or ``""``) means no setting.
- ``use_allocator(conf)``: the setting itself, the first line of a fresh process (taught in 03).
- ``kv_cache_memory(...)``: the growing-cache loop, reading the allocator every step (taught).
- ``alloc_env(conf)`` -> the environment for a child with exactly that setting.
- ``run_in_subprocess(conf, spec)`` -> rows, the effective allocator, and the memory timeline;
  ``run_one_after_another(confs, spec)`` does it for several settings, each next process
  loading while the previous one measures.
- ``allocator_in_effect(device)``: what this process's allocator really does (used in the child).
- ``replay_trace(...)``: allocated and reserved bytes after every event of a memory history.
"""
from __future__ import annotations

import bisect
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

from .course import budget
from .course.alloc_conf import ALLOC_ENV_VARS, DEFAULT, OPTIONS, parse_alloc_conf  # noqa: F401 (re-exported)
from .course.errors import ParameterError
from .generation import generate_kv_cache
from .course.harness import bench_row, release_memory
from .model import build_model, make_prompt, use_tf32

CHILD_TIMEOUT_S = 900
_STARTED = time.perf_counter()


def canonical(conf) -> str:
    """The setting string written back from its parsed form ('' for the default)."""
    settings = parse_alloc_conf(conf)
    return ",".join(f"{k}:{v}" for k, v in settings.items())


def label(conf) -> str:
    """A short name for tables and plots: 'default' or the canonical setting string."""
    return canonical(conf) or DEFAULT


def validate_alloc_confs(name, value) -> list:
    """A preset's list of allocator settings: non-empty, each valid, no two the same."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise ParameterError(f"{name} must be a non-empty list of allocator settings such as "
                     f"['default', 'expandable_segments:True'], got {value!r}")
    labels = [label(conf) for conf in value]
    if len(set(labels)) != len(labels):
        raise ParameterError(f"{name} lists the same allocator setting twice: {labels}")
    return labels


def use_allocator(conf: str) -> None:
    """Choose this process's caching-allocator setting. PyTorch reads it once, when CUDA
    starts, so it must come before the first CUDA call: in practice, in a fresh process."""
    if torch.cuda.is_initialized():
        raise RuntimeError("CUDA has started: setting the environment variable now "
                           "would be silently ignored")
    os.environ["PYTORCH_ALLOC_CONF"] = conf  # before PyTorch 2.9: PYTORCH_CUDA_ALLOC_CONF


def kv_cache_memory(model, prompt, new_tokens, eos_token_id, device) -> list[dict]:
    """Notebook 02's KV-cache loop, reading the allocator before every forward pass (step 0
    is the prefill): allocated is what tensors use, reserved what the allocator holds."""
    steps = []

    def read(module, args):  # a forward pre-hook: runs before each step's forward pass
        steps.append({"time_us": time.time_ns() // 1000,
                      "allocated": torch.cuda.memory_allocated(device),
                      "reserved": torch.cuda.memory_reserved(device)})

    handle = model.register_forward_pre_hook(read)
    try:
        generate_kv_cache(model, prompt, new_tokens, eos_token_id)
    finally:
        handle.remove()
    return steps


def alloc_env(conf, base=None) -> dict:
    """A copy of ``base`` (default: this process's environment) whose allocator variables
    carry exactly ``conf``: both names are set (PyTorch 2.9+ reads PYTORCH_ALLOC_CONF, older
    releases PYTORCH_CUDA_ALLOC_CONF), or both removed for the default."""
    env = dict(os.environ if base is None else base)
    for var in ALLOC_ENV_VARS:
        env.pop(var, None)
    text = canonical(conf)
    if text:
        for var in ALLOC_ENV_VARS:
            env[var] = text
    return env


def allocator_in_effect(device="cuda") -> dict:
    """What this process's allocator does, read back from torch: the settings string it parsed
    (where this torch exposes it), its backend, and whether the segments it holds are
    expandable, from ``torch.cuda.memory_snapshot()`` (needs at least one CUDA allocation)."""
    getter = getattr(torch._C, "_accelerator_getAllocatorSettings", None)
    settings = getter() if getter is not None else None
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    segments = [s for s in torch.cuda.memory_snapshot() if s.get("device", index) == index]
    known = [s["is_expandable"] for s in segments if "is_expandable" in s]
    return {"settings_string": settings,
            "backend": torch.cuda.get_allocator_backend(),
            "segments": len(segments),
            "expandable_segments_seen": sum(bool(f) for f in known),
            "expandable_in_effect": (any(known) if known else None),
            "env": {var: os.environ.get(var, "") for var in ALLOC_ENV_VARS},
            "torch": torch.__version__}


def verify_in_effect(conf, effective: dict) -> None:
    """Raise unless the child's allocator did what ``conf`` asked (expandable segments and
    backend); a torch that ignored the variable, or cannot tell, fails here."""
    wanted = parse_alloc_conf(conf)
    expandable = wanted.get("expandable_segments", False)
    seen = effective.get("expandable_in_effect")
    if seen is None:
        raise RuntimeError(f"cannot confirm the allocator setting {label(conf)!r}: torch "
                           f"{effective.get('torch')} reported no segments or no 'is_expandable' "
                           "field in torch.cuda.memory_snapshot()")
    if seen != expandable:
        raise RuntimeError(
            f"asked for {label(conf)!r} (expandable_segments={expandable}) but the child's "
            f"segments are {'expandable' if seen else 'not expandable'}: torch "
            f"{effective.get('torch')} ignored {effective.get('env')}")
    backend = wanted.get("backend", "native")
    if effective.get("backend") != backend:
        raise RuntimeError(f"asked for backend {backend!r} but the child's allocator backend is "
                           f"{effective.get('backend')!r}")


REPLAY = {"alloc": ("allocated", 1), "free_completed": ("allocated", -1),
          "segment_alloc": ("reserved", 1), "segment_map": ("reserved", 1),
          "segment_free": ("reserved", -1), "segment_unmap": ("reserved", -1)}


def replay_trace(trace, allocated0, reserved0, step_times_us=None) -> list[dict]:
    """Allocated and reserved bytes after every event of a memory-history trace (a list of
    entries of ``torch.cuda.memory._snapshot()['device_traces'][i]``), starting from the
    counters read when recording began. With ``step_times_us`` (the start of each forward pass,
    microseconds since the epoch) each event also gets the step it happened in (-1: before the
    first); events without ``time_us`` get None."""
    allocated, reserved, events = allocated0, reserved0, []
    for entry in trace:
        kind = REPLAY.get(entry.get("action"))
        if kind is None:
            continue
        if kind[0] == "allocated":
            allocated += kind[1] * entry["size"]
        else:
            reserved += kind[1] * entry["size"]
        step = None
        if step_times_us is not None and entry.get("time_us") is not None:
            step = bisect.bisect_right(step_times_us, entry["time_us"]) - 1
        events.append({"action": entry["action"], "allocated": allocated, "reserved": reserved,
                       "step": step})
    return events


def per_step_peaks(events, n_steps) -> list[dict]:
    """The highest allocated and reserved bytes within each step, from ``replay_trace`` events
    that carry a step; steps without events are left out."""
    peaks = {}
    for event in events:
        step = event["step"]
        if step is None or not 0 <= step < n_steps:
            continue
        best = peaks.setdefault(step, {"step": step, "allocated_peak": 0, "reserved_peak": 0})
        best["allocated_peak"] = max(best["allocated_peak"], event["allocated"])
        best["reserved_peak"] = max(best["reserved_peak"], event["reserved"])
    return [peaks[s] for s in sorted(peaks)]


def memory_timeline(model, prompt, new_tokens, eos_token_id, device) -> dict:
    """Run the KV-cache loop once with the allocator's memory history recording. Returns the
    allocated/reserved counters at the start of every forward pass (step 0 is the prefill) and
    the per-step peaks replayed from the recorded trace."""
    release_memory(device)
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                           max_entries=5_000_000, device=device)
    try:
        allocated0 = torch.cuda.memory_allocated(device)
        reserved0 = torch.cuda.memory_reserved(device)
        marks = kv_cache_memory(model, prompt, new_tokens, eos_token_id, device)
        torch.cuda.synchronize(device)
        snapshot = torch.cuda.memory._snapshot()
        allocated_end = torch.cuda.memory_allocated(device)
        reserved_end = torch.cuda.memory_reserved(device)
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    index = torch.device(device).index or 0
    trace = snapshot["device_traces"][index]
    step_times = [m["time_us"] for m in marks]
    events = replay_trace(trace, allocated0, reserved0, step_times)
    timed = [e for e in events if e["step"] is not None]
    aligned = len(timed) == len(events) and bool(events) and sum(e["step"] >= 0 for e in timed) > 0.9 * len(timed)
    actions = {}
    for entry in trace:
        actions[entry.get("action")] = actions.get(entry.get("action"), 0) + 1
    return {
        "steps": [{"step": i, "allocated": m["allocated"], "reserved": m["reserved"]}
                  for i, m in enumerate(marks)],
        "peaks": per_step_peaks(events, len(marks)) if aligned else [],
        "aligned_by_time": aligned,
        "trace_events": len(trace), "actions": actions,
        "replay_end": {"allocated": events[-1]["allocated"] if events else allocated0,
                       "reserved": events[-1]["reserved"] if events else reserved0},
        "counters_end": {"allocated": allocated_end, "reserved": reserved_end},
    }


def _child(spec: dict) -> dict:
    """Inside the child: measure the KV-cache loop at every length, read the allocator back,
    and record the memory history of one run."""
    if spec["label"] != DEFAULT:  # the setting, before anything starts CUDA (the parent also
        use_allocator(spec["label"])  # put it in this process's environment, both names)
    device = spec["device"]
    model = build_model(spec["model"], device, seed=spec["seed"])
    use_tf32(True)  # as notebook 03's own process runs its timings
    eos = model.config.eos_token_id
    prompt = make_prompt(spec["batch_size"], spec["prompt_len"], model.config.vocab_size, eos,
                         device, seed=spec["seed"])
    if spec.get("gated"):  # started early (start_child): measure only when the parent says go
        print("loaded: waiting for the parent's go", flush=True)
        if sys.stdin.readline().strip() != "go":
            raise SystemExit("the parent closed the gate without a go")
    generate_kv_cache(model, prompt, max(spec["seq_lens"]), eos)  # warm the process up once
    print(f"ready {time.perf_counter() - _STARTED:.1f} s after start "
          "(imports, CUDA start-up, model, one warm-up run)", flush=True)
    cuda = torch.device(device).type == "cuda"
    rows = []
    for seq_len in spec["seq_lens"]:
        row, tokens = bench_row(spec["label"], lambda: generate_kv_cache(model, prompt, seq_len, eos),
                                device=device, batch_size=spec["batch_size"], seq_len=seq_len,
                                repeats=spec["repeats"], warmup=spec["warmup"],
                                busy=bool(spec.get("busy")), allocator=spec["label"])
        if tokens is not None:
            row["tokens_checksum"] = int(tokens.long().sum())
        # the floor of one decode step (ms): weights and filled keys and values, read once
        row["floor_ms"] = (budget.floor_ms(model, device, spec["batch_size"], spec["prompt_len"],
                                           seq_len) if cuda and spec.get("busy") else float("nan"))
        rows.append(row)
        memory = "no GPU memory on a CPU run"
        if cuda:
            memory = (f"peak reserved {row['peak_reserved_bytes'] / 2**20:.0f} MiB, "
                      f"{row['fragmentation_pct']:.1f}% of it unused")
        print(f"{seq_len} tokens: {memory}", flush=True)
    if torch.device(device).type == "cuda":
        effective = allocator_in_effect(device)
    else:  # no caching allocator to read back: the parent skips the check
        effective = {"expandable_in_effect": None, "backend": None, "torch": torch.__version__,
                     "env": {var: os.environ.get(var, "") for var in ALLOC_ENV_VARS}}
    timeline = None
    if spec.get("history_len"):
        start = time.perf_counter()
        timeline = memory_timeline(model, prompt, spec["history_len"], eos, device)
        print(f"memory history of {spec['history_len']} tokens, "
              f"{timeline['trace_events']} events, recorded and replayed in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
    return {"rows": rows, "effective": effective, "timeline": timeline}


class Child:
    """One child process measuring under one allocator setting (``start_child``): ``go()`` lets
    a gated child start measuring, ``result()`` waits for it and returns what it measured."""

    def __init__(self, conf, spec: dict, echo: bool, gated: bool):
        self.label = label(conf)  # raises on a bad setting, before any process starts
        self.device = str(spec["device"])
        self.conf, self.gated, self.lines = conf, gated, []
        root = Path(__file__).resolve().parent.parent
        env = alloc_env(conf)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
        self._tmp = tempfile.TemporaryDirectory(prefix="alloc_")
        spec_path = Path(self._tmp.name) / "spec.json"
        self.out_path = Path(self._tmp.name) / "out.json"
        spec_path.write_text(json.dumps({**spec, "label": self.label, "gated": gated}))
        command = [sys.executable, "-m", "helpers.allocator", str(spec_path), str(self.out_path)]
        self.process = subprocess.Popen(command, env=env, cwd=root, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        stdin=subprocess.PIPE if gated else subprocess.DEVNULL)

        def pump():
            for line in self.process.stdout:
                self.lines.append(line.rstrip("\n"))
                if echo:
                    print(f"  [{self.label}] {line}", end="", flush=True)

        self.reader = threading.Thread(target=pump, daemon=True)
        self.reader.start()

    def go(self) -> None:
        if self.gated:
            try:
                self.process.stdin.write("go\n")
                self.process.stdin.close()
            except (BrokenPipeError, ValueError):
                pass  # the child died while loading: result() reports how

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._tmp.cleanup()

    def result(self, timeout=CHILD_TIMEOUT_S) -> dict:
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise RuntimeError(f"the {self.label!r} child ran past {timeout} s") from None
        finally:
            self.reader.join(timeout=10)
        try:
            if self.process.returncode != 0 or not self.out_path.exists():
                tail = "\n".join(self.lines[-15:])
                raise RuntimeError(f"the {self.label!r} child failed (exit "
                                   f"{self.process.returncode}):\n{tail}")
            result = json.loads(self.out_path.read_text())
        finally:
            self._tmp.cleanup()
        if self.device.startswith("cuda"):
            verify_in_effect(self.conf, result["effective"])
        for row in result["rows"]:
            row["expandable_in_effect"] = result["effective"]["expandable_in_effect"]
        return result


def start_child(conf, spec: dict, echo=True, gated=False) -> Child:
    """Start ``_child(spec)`` in a fresh Python process whose environment carries exactly the
    allocator setting ``conf`` (checked first). A ``gated`` child imports, starts CUDA and builds
    its model, then waits for ``go()`` before it measures: the next setting's process can load
    while the previous one measures, and no two measure at once."""
    return Child(conf, spec, echo, gated)


def run_in_subprocess(conf, spec: dict, timeout=CHILD_TIMEOUT_S, echo=True) -> dict:
    """Run ``_child(spec)`` in a fresh Python process whose environment carries exactly the
    allocator setting ``conf`` (checked first), echo its output, check that the setting took
    effect, and return what it measured. ``spec`` holds model, device, batch_size, seq_lens,
    prompt_len, repeats, warmup, seed and history_len (0: no memory history)."""
    return start_child(conf, spec, echo=echo).result(timeout)


def run_one_after_another(confs, spec: dict, timeout=CHILD_TIMEOUT_S, echo=True) -> dict:
    """``run_in_subprocess`` for every setting in ``confs``, measured one after another, each
    next process loading (imports, CUDA start-up, model) while the previous one measures."""
    children, results = {}, {}
    try:
        for conf in confs:
            children[conf] = start_child(conf, spec, echo=echo, gated=True)
            if len(children) == 1:
                children[conf].go()
        for i, conf in enumerate(confs):
            results[conf] = children[conf].result(timeout)
            if i + 1 < len(confs):
                children[confs[i + 1]].go()
    finally:
        for child in children.values():
            child.stop()
    return results


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m helpers.allocator SPEC.json OUT.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[0]).read_text())
    result = _child(spec)
    Path(argv[1]).write_text(json.dumps(result, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
