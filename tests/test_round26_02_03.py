"""What notebooks 02 and 03 print, on real GPU tables of both presets (the twenty-sixth review,
which read the full-preset copies of 5274887).

02: "why is the gain not larger?" is answered in one printed line of numbers (the KV step's wall
clock against its GPU work, and its idle time beside the naive loop's), not "which the cache does
not cut"; the medians' ratio is reconciled only where it differs from the gain.
03: figure 2's right panel is read (expandable's largest mid-run gap, and the run's end) and set
beside the peaks' unused %.
"""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, expandable, growth, stats

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
NAMES = {"naive": "naive", "kv_cache": "KV cache"}
NEW = "expandable_segments:True"
RUNS = ("5274887", "5274887-workshop", "7aa1901", "7aa1901-workshop", "3deacb3",
        "3deacb3-workshop", "f4bf2b7", "f4bf2b7-workshop", "6bba703-workshop")
RUNS_02 = RUNS + ("1c698c0", "65eabbe", "90c3788", "c635f9e", "eb4fe0c")


def t02(name):
    return pd.read_csv(DATA / f"02_kv_cache-{name}.csv")


def cells(nb):
    return ["".join(c["source"]) for c in json.loads((REPO / nb).read_text())["cells"]]


def test_02_prose_says_what_is_shown():
    text = "\n".join(cells("notebooks/02_kv_cache.ipynb"))
    for gone in ("which the cache does not cut", "cuts the GPU's work, not the host's",
                 "neither the host's time alone", "no forward pass follows the",
                 "can differ from it", "tens of KiB"):
        assert gone not in text, gone
    assert "both loops\n  run N forward passes" in text
    assert "bars_note(" not in text  # round 28: one ratio in the text


@pytest.mark.parametrize("name", RUNS)
def test_03_the_gap_line_reads_figure_2(name):
    history = pd.read_csv(DATA / f"03_expandable_segments_timeline-{name}.csv")
    t = pd.read_csv(DATA / f"03_expandable_segments-{name}.csv")
    mem = expandable.memory(t).loc[int(t["seq_len"].max())]
    line = expandable.unused_timeline_line(history, NEW)
    part = history[history["setting"] == NEW]
    gap = (part["reserved"] - part["allocated"]) / 2**20
    assert f"largest at the start of decode step {int(part.loc[gap.idxmax(), 'step'])}: " \
           f"{gap.max():.0f} MiB" in line, line
    if "workshop" not in name:
        assert line == (
            "Step by step (figure 2, right), expandable_segments:True's unused memory was largest "
            "at the start of decode step 292: 523 MiB of the 1826 MiB reserved (29%); from decode "
            "step 292 on its reserve stayed at 1826 MiB while allocated grew 241 MiB inside it, and "
            "at the start of the last step (399) 282 MiB was unused (15%).")  # round 34: no repeat
    assert f"{float(mem.loc[NEW, 'unused %']):.1f}%" not in line


def test_03_cache_tensors_come_before_the_stairs_and_the_takeaway_names_the_first_cuda_call():
    text = "\n".join(cells("notebooks/03_expandable_segments.ipynb"))
    assert text.index("The cache is 24 tensors") < text.index("lesson.stairs_line(")
    assert "before a fresh process starts" not in text
    assert "before the process's first CUDA\n  call" in text
    assert "lesson.unused_timeline_line(history, new" in text
