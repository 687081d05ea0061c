"""The hardware floor of a decode step (notebooks 08 and 10).

A decode step must read every parameter once, so parameter bytes over the device's memory
bandwidth (measured as a device-to-device copy) is the fastest a step can be.
"""
from __future__ import annotations

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
