"""Round 27 of mends, lessons 02 and 03: every line this round changed, read on every frozen
real table (full and workshop presets)."""
import inspect
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, expandable, growth, stats

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
NAMES = {"naive": "naive", "kv_cache": "KV cache"}
OLD, NEW = "default", "expandable_segments:True"
RUNS_02 = sorted(p.stem.split("02_kv_cache-")[1] for p in DATA.glob("02_kv_cache-*.csv"))
RUNS_03 = sorted(p.stem.split("03_expandable_segments-")[1]
                 for p in DATA.glob("03_expandable_segments-*.csv"))


def t02(name):
    return pd.read_csv(DATA / f"02_kv_cache-{name}.csv")


def text(nb):
    return "\n".join("".join(c["source"]) for c in json.loads((REPO / nb).read_text())["cells"])


def test_02_the_published_run_reads_as_the_review_asked():
    t = t02("9bd8862")
    assert growth.length_line(t, "kv_cache", "naive", True, 120, NAMES) == (
        " 120 tokens: KV cache against naive: 1.17x, can't tell apart on this "
        "machine (0.98–1.36)")
    assert growth.growth_line(t, "kv_cache", "naive", True) == (
        "Does the gain grow with the length? No clear change: 1.20x at 30, 1.30x at 75 and 1.17x "
        "at 120 tokens.")
    why = growth.pace_lines(t, "kv_cache", "naive", NAMES)[-1]
    assert "from 30 to 120 tokens 4.90 → 6.97 ms (in its fastest run 3.69 → 5.40 ms)" in why


@pytest.mark.parametrize("name", RUNS_02)
def test_02_lines_state_the_tables_numbers_on_every_run(name):
    t = t02(name)
    values = sorted(int(n) for n in t["seq_len"].unique())
    for n in values:
        line = growth.length_line(t, "kv_cache", "naive", True, n, NAMES)
        r = stats.row_speedup(t, "kv_cache", "naive", seq_len=n)
        assert ("can't tell apart" in line) == (stats.verdict(r) == stats.NOISE), line
    assert "can't tell" not in growth.growth_line(t, "kv_cache", "naive", True)
    steps = {n: budget.per_step(t, ["naive", "kv_cache"], seq_len=n).set_index("method")
             for n in values}
    r2 = lambda n, c: round(float(steps[n].loc["kv_cache", c]), 2)  # noqa: E731
    why = growth.pace_lines(t, "kv_cache", "naive", NAMES)[-1]
    idle = [r2(n, "wall_ms") - r2(n, "gpu_ms") for n in (values[0], values[-1])]
    assert f"{idle[0]:.2f} → {idle[1]:.2f} ms" in why  # round 28: the time outside the GPU's work
    assert "slow round" not in why


def test_02_notebook_prints_the_reconciliation_once_with_the_gains():
    nb = text("notebooks/02_kv_cache.ipynb")
    assert nb.count("growth.bars_note(") == 0  # round 28: one ratio in the text
    assert "a line under the figure says so" not in nb
    assert "which the last line above compares" not in nb
    assert "growth.closing_line(" in nb and "narrow their ranges" in nb  # round 34
    assert "kv_runs['min_s']" in inspect.getsource(growth.closing_line)


@pytest.mark.parametrize("name", [n for n in RUNS_03 if not n.startswith("timeline")])
def test_03_cache_line_compares_what_each_run_added_on_every_run(name):
    t = pd.read_csv(DATA / f"03_expandable_segments-{name}.csv")
    history = pd.read_csv(DATA / f"03_expandable_segments_timeline-{name}.csv")
    line = expandable.cache_line(t, history, OLD, NEW)
    first = {c: history[history["setting"] == c].sort_values("step").iloc[0]["reserved"] / 2**20
             for c in (OLD, NEW)}
    mem = expandable.memory(t)
    for n in mem.index.get_level_values(0).unique():
        a, b = (float(mem.loc[(n, c), "peak reserved MiB"]) - first[c] for c in (OLD, NEW))
        assert f"at {int(n)} tokens {OLD} {a:.0f} MiB, {NEW} {b:.0f} MiB" in line, (name, line)
        said = re.search(rf"at {int(n)} tokens [^;]*", line)[0]
        assert ("no saving on the cache itself" in said) == (round(b) >= round(a)), said
    if name in ("3deacb3", "5274887", "6e28961", "7aa1901", "898ea06", "9bd8862", "f4bf2b7"):
        # the runs before the prompt's logits were freed (ac59e80): each peak held them, 98 MiB
        assert "at 100 tokens default 394 MiB, expandable_segments:True 422 MiB (28 MiB more): " \
               "no saving on the cache itself at this length" in line
        assert "at 400 tokens default 8958 MiB, expandable_segments:True 1302 MiB (7656 MiB less)." in line
    if name == "94d1a85":  # the first run that freed them
        assert "at 100 tokens default 278 MiB, expandable_segments:True 302 MiB (24 MiB more): " \
               "no saving on the cache itself at this length" in line
        assert "at 400 tokens default 8284 MiB, expandable_segments:True 1142 MiB (7142 MiB less)." in line
    assert expandable.cache_line(t, history[history["setting"] == OLD], OLD, NEW) == ""


def test_03_notebook_calls_the_cache_line_and_says_which_kind_of_unused_memory():
    nb = text("notebooks/03_expandable_segments.ipynb")
    assert "lesson.cache_line(table, history, old, new" in nb  # round 29: skip=point
    assert "other_lengths_line" not in nb and "start_line" not in nb
    assert "outgrown segments that hold no tensor" in nb
