"""What notebooks 02 and 03 print, on real GPU tables of both presets (the twenty-third review,
which read the full-preset copies of f4bf2b7).

02: one gain is the answer (the rounds'), the medians named once in one plain sentence; derived
numbers divide the printed, rounded values (2.84 / 1.35 = 2.10, not "2.09x"; 8.36 - 1.60 = 6.76,
not "6.75"). 03: one peak per setting (the table's; the recorded run's own peaks are not printed),
and which unused share is the lesson's fragmentation.
"""
import math
import subprocess
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import expandable, growth

REPO = Path(__file__).resolve().parent.parent
WS = Path(__file__).resolve().parent / "data"  # the f4bf2b7 workshop tables, frozen
NAMES = {"naive": "naive", "kv_cache": "KV cache"}
OLD, NEW = "default", "expandable_segments:True"


def _show(commit, path):
    try:
        return pd.read_csv(StringIO(subprocess.run(
            ["git", "-C", str(REPO), "show", f"{commit}:{path}"], capture_output=True, text=True,
            check=True).stdout))
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None


def tables(name):
    """The published run's table, the workshop preset's of the same commit (where present) and
    the earlier full runs' (ba37cc3, 8973374, 90c3788) where git has them."""
    found = {"f4bf2b7": pd.read_csv(REPO / f"tests/data/{name}-f4bf2b7.csv")}
    if (WS / f"{name}-f4bf2b7-workshop.csv").exists():
        found["f4bf2b7-workshop"] = pd.read_csv(WS / f"{name}-f4bf2b7-workshop.csv")
    return found | git_runs(name)


def git_runs(name):
    """The earlier full runs' tables (ba37cc3, 8973374, 90c3788), where git has them."""
    found = {}
    for commit in ("ba37cc3", "8973374", "90c3788"):
        t = _show(commit, f"figures/data/{name}.csv")
        if t is not None:
            found[commit] = t
    return found


def _numbers(text):
    return [float(x) for x in text.replace(" and", ",").split(", ")]


def test_the_gain_note_names_one_answer_and_the_medians_once():
    # round 24: the note says what a gain and its range are; the medians are named once, in the
    # wall-clock line, and give no second list of gains
    for name, t in tables("02_kv_cache").items():
        note = growth.gains_note(t, "kv_cache", "naive", True, NAMES)
        assert note.startswith("A gain is naive time ÷ KV cache time") and "medians" not in note, name
        lines = growth.pace_lines(t, "kv_cache", "naive", NAMES)
        assert sum(line.count("the table's medians") for line in lines) == 1, name


def test_derived_numbers_divide_the_printed_values_on_every_run():
    lines = growth.pace_lines(tables("02_kv_cache")["f4bf2b7"], "kv_cache", "naive", NAMES)
    assert "cut the GPU's work per step 2.10x, 3.16x and 4.01x" in lines[-2]  # round 37: unrounded
    assert lines[-1].startswith("Why the gain is not larger: most of the KV cache's step was time outside the GPU's work")  # round 26, 28c
    assert "1.60 ms" in lines[0] and "1.60 ms" not in lines[-1]  # round 28c: its GPU work once
    for name, t in tables("02_kv_cache").items():
        lines = growth.pace_lines(t, "kv_cache", "naive", NAMES)
        printed = lines[-2].split("per step ")[1].split(", but")[0].split(", and")[0]
        values = sorted(int(n) for n in t["seq_len"].unique())  # round 37: the unrounded table's
        gpu = {m: [t[(t.method == m) & (t.seq_len == n)].iloc[0].gpu_busy_s for n in values]
               for m in ("naive", "kv_cache")}
        cuts = [f"{a / b:.2f}x" for a, b in zip(gpu["naive"], gpu["kv_cache"])]
        assert printed == (", ".join(cuts[:-1]) + " and " + cuts[-1]), name
        if lines[-1].startswith("At "):  # the host's time: the printed wall less the printed work
            host = float(lines[-1].split("at least ")[1].split(" ms")[0])
            wall = float(lines[-1].split("of each ")[1].split(" ms")[0])
            gpu = float(lines[-1].split("against ")[1].split(" ms")[0])
            assert math.isclose(host, wall - gpu, abs_tol=1e-9), name


def _timeline(key):
    if key == "f4bf2b7":
        return pd.read_csv(REPO / "tests/data/03_expandable_segments_timeline-f4bf2b7.csv")
    if key == "f4bf2b7-workshop":
        return pd.read_csv(WS / "03_expandable_segments_timeline-f4bf2b7-workshop.csv")
    return _show(key, "figures/data/03_expandable_segments_timeline.csv")


@pytest.mark.parametrize("lesson", ["02_kv_cache", "03_expandable_segments"])
def test_the_lessons_no_longer_say_what_the_review_found_wrong(lesson):
    import json
    nb = json.loads((REPO / f"notebooks/{lesson}.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    for gone in ("averaged as notebook 00 does", "which proves the setting took effect",
                 "its dashed\nline can sit above the other's", "# tests: same as helpers",
                 "more\nruns only repeat its peaks"):
        assert gone not in text
