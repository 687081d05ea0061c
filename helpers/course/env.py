"""The environment report: which GPU, driver, versions and allocator settings a result came from."""
from __future__ import annotations

import datetime
import hashlib
import os
import platform
import re
import subprocess
from pathlib import Path

import torch
import transformers

ALLOC_ENV_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def proc_driver_version(text: str) -> str | None:
    """The driver version in ``/proc/driver/nvidia/version``'s text ("NVRM version: NVIDIA UNIX
    x86_64 Kernel Module  580.159.04  ...", or "... Open Kernel Module for x86_64  580.159.04"),
    or None."""
    found = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", text)
    return found.group(1) if found else None


def driver_version() -> str:
    """The NVIDIA driver version from nvidia-smi or NVML; 'n/a' without an NVIDIA GPU."""
    if not torch.cuda.is_available():
        return "n/a"
    try:  # Linux: the kernel module says it at once (nvidia-smi can take a second to start)
        if found := proc_driver_version(Path("/proc/driver/nvidia/version").read_text()):
            return found
    except OSError:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True)
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else version
    except Exception:  # noqa: BLE001 - NVML is optional
        return "unknown"


def cpu_model() -> str:
    """The CPU's model name (eager decoding is CPU-bound on a fast GPU, so its timings depend on
    it): /proc/cpuinfo on Linux, sysctl on macOS, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                             text=True, timeout=5, check=True)
        if out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or platform.machine()


def host_id() -> str:
    """A short stable name for this machine: a hash (so nothing identifying is published) of its
    host name and, with a CUDA GPU, that GPU's UUID. Two lent machines of the same GPU model
    differ here, where the GPU and CPU names agree; the UUID is what tells them apart where the
    host name does not (a container's host name may repeat: a fresh H200 lent on 2026-11-28 gave the
    published run's host-name hash, and that name alone cannot say whether it was the same machine)."""
    name = platform.node()
    if torch.cuda.is_available() and torch.cuda.device_count():  # a real device, not a test's stand-in
        name += f"/{getattr(torch.cuda.get_device_properties(0), 'uuid', '')}"
    return hashlib.sha256(name.encode()).hexdigest()[:8]


def environment() -> dict:
    """Everything a figure's manifest entry names: GPU, driver, CUDA, versions and the date."""
    cuda = torch.cuda.is_available()
    info = {
        "gpu": torch.cuda.get_device_name(0) if cuda else "cpu",
        "gpu_memory_gib": round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1) if cuda else None,
        "driver": driver_version(),
        "cuda": torch.version.cuda or "n/a",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "host": host_id(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    for var in ALLOC_ENV_VARS:
        info[var] = os.environ.get(var, "")
    return info


def print_report(info: dict, params=None) -> dict:
    """Print the run's machine and parameters at the top of a notebook, in a few lines (the
    full record is in the run folder's outputs/<notebook>.json)."""
    def get(key):
        value = info.get(key)
        return None if value in ("", None, "-", "n/a") else value

    gpu = get("gpu") or "cpu"
    memory = f" ({info['gpu_memory_gib']} GiB)" if get("gpu_memory_gib") else ""
    cuda = f", CUDA {get('cuda')}, driver {get('driver')}" if get("cuda") else ""
    print(f"{gpu}{memory}{cuda} · CPU {get('cpu') or '?'} ({info.get('cpu_count', '?')} cores)")
    print(f"torch {get('torch')} · transformers {get('transformers')} · Python {get('python')} · "
          f"{get('date')}")
    alloc = get("PYTORCH_CUDA_ALLOC_CONF") or get("PYTORCH_ALLOC_CONF")
    if alloc:
        print(f"allocator settings: {alloc}")
    if params is not None:
        values = dict(params)
        head = [f"preset {values.pop('preset', '?')!s}", f"model {values.pop('model', '?')!s}",
                f"on {values.pop('device', '?')!s}"]
        values.pop("notebook", None)
        # budget_s read as "the time budget is zero" (the fifteenth review): say what it is
        rest = [f"{key} {value}" + (_budget_note(value) if key == "budget_s" else "")
                for key, value in values.items()]
        line, lines = ", ".join(head), []
        for item in rest:
            if len(line) + len(item) > 96:
                lines.append(line + ",")
                line = "  " + item
            else:
                line += ", " + item
        for text in lines + [line]:
            print(text)
    return info


def _budget_note(value) -> str:
    """What the harness's ``budget_s`` parameter means, beside its value in the parameter line."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return ""
    return " (no extra rounds)" if seconds <= 0 else f" (extra timing rounds for up to {value} s)"

