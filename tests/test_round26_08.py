"""Round 26's review of lesson 08, checked on the published run 5274887 (full and workshop) and
the earlier runs frozen in tests/data."""
import json
import re
from pathlib import Path

import pytest

from helpers.course import claims, stats

from tests.test_round25_08 import _printed

DATA = Path(__file__).resolve().parent / "data"
ROOT = DATA.parent.parent
RUNS = ["5274887", "5274887-workshop", "7aa1901", "7aa1901-workshop", "3deacb3", "f4bf2b7",
        "ba37cc3", "8973374", "90c3788", "eb4fe0c", "3deacb3-workshop", "f4bf2b7-workshop",
        "6bba703-workshop"]


def _judged(run):
    return _printed(run)[:3]  # round 25's reading of the same tables, without its printed lines


def _ms(frame, method, n, batch=None):
    rows = frame[(frame["method"] == method) & (frame["seq_len"] == n)]
    if batch is not None:
        rows = rows[rows["batch_size"] == batch]
    return round(rows["median_s"].median() / n * 1e3, 2)


@pytest.mark.parametrize("run", RUNS)
def test_claim_7_note_gives_the_range_over_notebook_01s_loop_and_its_verdict(run):
    """The worst remark: 'exceeded' over a naive loop 1.27x slower than notebook 01's, and the
    note said only 'smaller'. The note scales the printed range by the two printed times and
    names the verdict the claim's rule gives it."""
    ladder, tables, frame = _judged(run)
    note = [n for n in claims.notes(frame) if n.startswith("Claim 7")]
    n = 100 if 100 in set(ladder["seq_len"]) else int(sorted(ladder["seq_len"])[0])
    t01, batch = tables["01_naive_generation"], int(ladder["batch_size"].iloc[0])
    if t01 is None or not len(t01[(t01["method"] == "naive") & (t01["seq_len"] == n)
                                   & (t01["batch_size"] == batch)]):
        assert not note
        return
    here, there = _ms(ladder, claims.NAIVE, n), _ms(t01, "naive", n, batch)
    ratio = stats.row_speedup(ladder, claims.LATE, claims.NAIVE, seq_len=n)
    low, high = round(ratio.low, 2) * there / here, round(ratio.high, 2) * there / here
    then = claims._five_x(low, high).split(":")[0]
    now = frame.iloc[6]["verdict"].split(":")[0]
    # round 28c: the two times are printed once, in the shared-loops paragraph above the note
    assert note == [f"Claim 7 over notebook 01's naive loop: the range would be about "
                    f"{low:.2f}–{high:.2f}x, {then}"
                    + (", the same verdict." if then == now else f" rather than {now}.")]
    spread = " ".join(" ".join(claims.read_over(frame)).split())  # round 36: the notes' lead
    # round 29: the ladder's own time is its table's, no longer repeated in the paragraph
    assert f"the naive loop {there:.2f} ms per step in notebook 01" in spread or \
        f"the naive loop at batch {batch}, {n} tokens: {there:.2f} ms per step in notebook 01" \
        in spread


def test_claim_7_on_the_published_run_would_read_reproduced():
    _, _, frame = _judged("5274887")
    assert frame.iloc[6]["verdict"] == claims.EXCEEDED
    assert ("Claim 7 over notebook 01's naive loop: the "
            "range would be about 5.29–7.38x, reproduced rather than exceeded.") in claims.notes(frame)


@pytest.mark.parametrize("run", RUNS)
def test_claim_5_note_rescales_both_gains_to_notebook_04s_loops(run):
    ladder, tables, frame = _judged(run)
    note = [n for n in claims.notes(frame) if n.startswith("Claim 5")]
    if not note:
        return
    t04, n, batch = tables["04_static_cache"], 100, int(ladder["batch_size"].iloc[0])
    s_here, k_here = _ms(ladder, claims.STATIC, n), _ms(ladder, claims.KV, n)
    s_there, k_there = (_ms(t04, m, n, batch) for m in (claims.CACHE_STATIC, claims.CACHE_DYNAMIC))
    found = re.search(r"would be about (\d+\.\d\d)–(\d+\.\d\d)x, (.+?)(, the same verdict| rather "
                      r"than (.+))\.$", note[0])
    # round 28c: the four times are printed once, in the shared-loops paragraph above the note
    assert note[0].startswith("Claim 5 over notebook 04's eager loops: the static gain's lead")
    spread = " ".join(" ".join(claims.read_over(frame)).split())  # round 36: the notes' lead
    for loop, there, here in (("static-cache", s_there, s_here), ("KV-cache", k_there, k_here)):
        assert re.search(rf"the {loop} loop {there:.2f}( ms per step)?( and the [\w-]+ loop "
                         rf"\d+\.\d\d)? in notebook 04", spread) or \
            re.search(rf"the {loop} loop {there:.2f}( ms per step)?,", spread), \
            spread  # round 29: no ladder ms; "ms per step" said once
    dyn = [stats.method_trials(ladder, a, seq_len=n) for a in (claims.KV_COMPILED, claims.KV)]
    sta = [stats.method_trials(ladder, a, seq_len=n) for a in (claims.STATIC_COMPILED, claims.STATIC)]
    more = stats.speedup_growth(dyn, sta)
    scale = (s_there / s_here) / (k_there / k_here)
    assert found[1] == f"{round(more.low, 2) * scale:.2f}"
    assert found[2] == f"{round(more.high, 2) * scale:.2f}"
    assert (found[5] is None) == (found[3] == frame.iloc[4]["verdict"])


@pytest.mark.parametrize("run", RUNS)
def test_the_numbers_keep_the_times_only_and_no_lean(run):
    ladder, tables, frame = _judged(run)
    text = " ".join(claims.numbers(frame)).replace("\n", " ")
    assert "leans toward" not in text and "Each notebook ran at its own sizes" not in text
    assert "x apart" not in text and "off by as much as" not in text
    assert "differ at batch" not in " ".join(claims.notes(frame))  # said once, under the figure
    one = frame.iloc[0]["number"]
    if one.startswith("x"):
        assert "to the power" not in one  # round 36: the exponent in the saved detail only
        k = float(re.search(r"to the power (\d+\.\d\d)", frame.iloc[0]["detail"])[1])
        assert one.startswith(f"x{2 ** k:.2f} per doubling") or abs(2 ** k - float(one[1:5])) < .02
        assert one.count(one[1:one.index(" ")]) == 1  # round 28c: the factor said once


def test_the_notebook_says_the_idle_share_once():  # round 32: under the figure only
    nb = json.loads((ROOT / "notebooks" / "08_results_summary.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    text = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "what_is_left" not in code  # round 32: it repeated the figure's line (11%, the pace)
    assert "at 20%\n  of the step or less" not in text  # round 27: the bullet pointing at it went
