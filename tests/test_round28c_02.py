"""Round 28c of lesson 02 (proportion), read on every frozen table: the KV cache's GPU work per
step is printed once (the first pace line), not again in the "why" line nor the "In one line";
the "why" line still says whether most of the step lay outside the GPU's work, and keeps the
times outside it that it compares."""
import glob
import inspect
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, growth

ROOT = Path(__file__).resolve().parents[1]
T02 = sorted(glob.glob(str(ROOT / "tests" / "data" / "02_kv_cache-*.csv")))
NAMES = {"naive": "naive", "kv_cache": "KV cache"}


@pytest.mark.parametrize("path", T02, ids=lambda p: Path(p).stem)
def test_gpu_work_printed_once_and_most_said_from_the_table(path):
    t = pd.read_csv(path)
    lines = growth.pace_lines(t, "kv_cache", "naive", NAMES)
    values = sorted(int(n) for n in t["seq_len"].unique())
    gpu, idle = [], []
    for n in values:
        s = budget.per_step(t, ["naive", "kv_cache"], seq_len=n).set_index("method").loc["kv_cache"]
        g = round(float(s["gpu_ms"]), 2)
        gpu.append(g)
        idle.append(round(float(s["wall_ms"]), 2) - g)
        assert f"{g:.2f}" in lines[0], (path, n)  # printed in the first line
    why = lines[-1]
    assert "GPU worked" not in why and f"{gpu[-1]:.2f} ms" not in why.split(" tokens ")[0], why
    most = all(g < i for g, i in zip(gpu, idle))
    assert why.startswith("Why the gain is not larger: "
                          f"{'most' if most else 'part'} of the KV cache's step was time outside "
                          "the GPU's work, from "), why
    assert f"{idle[0]:.2f} \u2192 {idle[-1]:.2f} ms" in why


def test_one_length_gives_its_time_outside_the_gpu():
    t = pd.read_csv(T02[0])
    n = int(t["seq_len"].max())
    line = growth.pace_lines(t[t["seq_len"] == n], "kv_cache", "naive", NAMES)[-1]
    assert line.startswith(f"Why the gain is not larger: at {n} tokens most of the KV cache's step "
                           "was time outside the GPU's work, "), line
    assert line.endswith(" ms.")


def test_in_one_line_gives_the_step_and_the_floor_not_the_gpu_again():
    code = inspect.getsource(growth.closing_line)  # round 34: the notebook's f-strings moved here
    assert "the GPU works {kv_step['gpu_ms']" not in code
    assert "x the floor ({kv_step['floor_ms']" in code and "kv_runs['max_s']" in code
