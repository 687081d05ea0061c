"""Round 24's review of lesson 08, checked on real GPU tables (frozen in tests/data): the published
run of 3deacb3, the runs of f4bf2b7, ba37cc3 (12:29), 8973374 (09:46) and 90c3788 (06:54), and the
workshop tables of 3deacb3, f4bf2b7 and 6bba703."""
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import claims, stats, summary

DATA = Path(__file__).resolve().parent / "data"
FULL = {"3deacb3": "3deacb3", "f4bf2b7": "f4bf2b7", "ba37cc3": "ba37cc3", "8973374": "8973374",
        "90c3788": "90c3788"}
ONE = {"90c3788": "90c3788-published"}  # notebook 01's table of that run
WORKSHOP = ["3deacb3-workshop", "f4bf2b7-workshop", "6bba703-workshop"]


def _read(name, run):
    path = DATA / f"{name}-{run}.csv"
    return pd.read_csv(path) if path.exists() else None


def _full(run):
    ladder = _read("08_results_summary", run)
    tables = {name: _read(name, ONE.get(run, run) if name.startswith("01") else run)
              for name in claims.TABLES.values()}
    return ladder, tables


def _note(frame, number):
    found = [n for n in claims.notes(frame) if n.startswith(f"Claim {number}")]
    return found[0] if found else ""


@pytest.mark.parametrize("run", list(FULL))
def test_claim_5_note_gives_the_rounds_gains_and_its_baseline_in_notebook_04(run):
    """The worst remark: "each gain is over its own cache's eager loop (10.64 and 7.00 ms per
    step)" gave 5.91x/1.74x beside the printed 5.53x/1.67x. The note now prints no gain divided
    from ms: both gains over the KV cache's loop are the rounds' (the dynamic one the number
    line's own), and the static gain's eager baseline is set beside notebook 04's."""
    ladder, tables = _full(run)
    frame = claims.check_claims(ladder, tables)
    note, number = _note(frame, 5), frame.set_index("claim").loc[
        "Compile helps most with the static cache", "number"]
    n = 100
    static, dyn = (stats.row_speedup(ladder, m, claims.KV, seq_len=n).estimate
                   for m in (claims.STATIC_COMPILED, claims.KV_COMPILED))
    assert (f"compiling with CUDA graphs (static) gains {static:.2f}x and compiling "
            f"alone (dynamic) {dyn:.2f}x.") in note, note
    assert f"compile alone (dynamic) {dyn:.2f}x" in number  # the same reading as the line above
    assert "=" not in note and "/" not in note  # no division of medians
    here = ladder[ladder["method"] == claims.STATIC]["per_step_s"].iloc[0] * 1e3
    t04 = tables["04_static_cache"]
    there = t04[(t04["method"] == "static") & (t04["batch_size"] == 32)
                & (t04["seq_len"] == n)]["median_s"].iloc[0] / n * 1e3
    way = "smaller" if round(here, 2) > round(there, 2) else "larger"
    assert (f"took {here:.2f} ms per step in this ladder and {there:.2f} in notebook 04 (batch 32, "
            f"100 tokens), so over notebook 04's loop the gain would come out {way}.") in note
    assert note.startswith("Claim 5: over the one eager loop both gains can share")  # round 25


def test_claim_5_note_on_the_published_run():
    ladder, tables = _full("3deacb3")
    assert _note(claims.check_claims(ladder, tables), 5) == (
        "Claim 5: over the one eager loop both gains can share, the KV cache's, compiling with "
        "CUDA graphs (static) gains 4.05x and compiling alone (dynamic) 1.67x. The static gain's "
        "baseline, the static-cache loop, took 10.64 ms per step in this ladder and 7.47 in "
        "notebook 04 (batch 32, 100 tokens), so over notebook 04's loop the gain would come out "
        "smaller.")


@pytest.mark.parametrize("run,way", [("3deacb3", "smaller"), ("f4bf2b7", "smaller"),
                                     ("ba37cc3", "larger"), ("8973374", "larger"),
                                     ("90c3788", "smaller")])
def test_claim_7_note_sets_its_naive_baseline_beside_notebook_01s(run, way):
    """Review error 3: claim 7 leans on the ladder's eager naive loop; the note gives notebook
    01's own time at the same sizes and which way it would move the gain, on every real run."""
    ladder, tables = _full(run)
    note = _note(claims.check_claims(ladder, tables), 7)
    here = ladder[ladder["method"] == claims.NAIVE]["per_step_s"].iloc[0] * 1e3
    t01 = tables["01_naive_generation"]
    there = t01[(t01["method"] == "naive") & (t01["batch_size"] == 32)
                & (t01["seq_len"] == 100)]["median_s"].iloc[0] / 100 * 1e3
    assert note == (f"Claim 7: its baseline, the naive loop, took {here:.2f} ms per step in this "
                    f"ladder and {there:.2f} in notebook 01 (batch 32, 100 tokens), so over "
                    f"notebook 01's loop the gain would come out {way}."), note


@pytest.mark.parametrize("run", WORKSHOP)
def test_workshop_ladders_print_no_baseline_note_without_a_matching_table(run):
    ladder = _read("08_results_summary", run)
    frame = claims.check_claims(ladder, {}, preset="workshop")
    assert _note(frame, 7) == "" and _note(frame, 5) == ""


@pytest.mark.parametrize("run", list(FULL) + WORKSHOP)
def test_the_readings_line_names_the_widest_pair_with_both_numbers(run):
    """Fix 1: "the two readings can differ a little" beside 8.33x and 7.75x for one pair. One
    printed line says which reading the words use and how far apart the two lie here; the
    medians' number is the table's own column, read off ``view``."""
    ladder = _read("08_results_summary", run)
    n = int(ladder["seq_len"].iloc[0])
    line = summary.readings(ladder, n, True)
    assert line.startswith("Every speed-up printed in words below is the rounds' reading; here it")
    assert summary.readings(ladder, n, False) == ""  # a smoke run: no numbers read
    found = re.search(r"by up to (\d+)%: (.+) over (?:the )?(.+) is (\d+\.\d\d)x by the medians, "
                      r"(\d+\.\d\d)x by the rounds\.$", line)
    if found is None:
        assert line.endswith("lies within 3% of the × columns (medians divided) for every pair.")
        return
    pct, name, base, medians, rounds = found.groups()
    column = "× naive (medians)" if base == claims.NAIVE else f"× {base} (medians)"
    shown = summary.view(ladder).set_index("method")
    assert f"{shown.loc[name, column]:.2f}" == medians
    estimate = stats.row_speedup(ladder, name, base, seq_len=n).estimate
    assert f"{estimate:.2f}" == rounds
    a, b = float(medians), float(rounds)  # the gap between the two printed numbers
    assert int(pct) == round(100 * (max(a / b, b / a) - 1))


def test_the_readings_line_on_the_published_run():
    ladder = _read("08_results_summary", "3deacb3")
    assert summary.readings(ladder, 100, True) == (
        "Every speed-up printed in words below is the rounds' reading; here it differs from the × "
        "columns (medians divided) by up to 18%: KV cache, compiled over the naive loop is 2.73x "
        "by the medians, 2.32x by the rounds.")


@pytest.mark.parametrize("run", list(FULL) + WORKSHOP)
def test_a_slower_generate_names_its_gpu_work_and_the_hosts_share(run):
    """Fix 3: generate() 9.69 ms per step against the KV cache's 7.00 was left unexplained. Where
    it is slower, the line gives both GPU works; the extra is called the host's only where the GPU's
    work grew by less than half of it (on every real run it grew by 0.06 ms or less)."""
    ladder = _read("08_results_summary", run)
    n = int(ladder["seq_len"].iloc[0])
    rows = ladder.set_index("method")
    ms = (rows["per_step_s"] * 1e3).round(2)
    note = summary._generate_note(ladder, n)
    if ms["generate()"] <= ms[claims.KV]:
        assert not note.startswith("generate() takes")
        return
    gpu = (rows["gpu_busy_s"] / n * 1e3).round(2)
    assert note.startswith(f"generate() takes {ms['generate()']:.2f} ms per step against "
                           f"{ms[claims.KV]:.2f} for the course's KV-cache loop (lesson 02), with "
                           f"GPU work of {gpu['generate()']:.2f} against {gpu[claims.KV]:.2f} ms"), note
    extra = ms["generate()"] - ms[claims.KV]
    assert f"so most of the {extra:.2f} ms it adds is the host's" in note
    assert "(this lesson does not take it apart)" in note
    assert note in summary.reading(ladder, n, True)


def test_generate_note_leaves_the_host_out_where_the_gpu_work_grew():
    ladder = _read("08_results_summary", "3deacb3")
    grew = ladder.copy()
    grew.loc[grew["method"] == "generate()", "gpu_busy_s"] = 0.3  # 3.00 ms per step
    note = summary._generate_note(grew, 100)
    assert note.endswith("with GPU work of 3.00 against 1.54 ms."), note


def test_the_peers_say_what_they_run():
    """Fix 3: the static peer's compiled step belongs in the ladder's "what it changes" column."""
    assert summary.WHAT["generate() static"] == "transformers' loop: static cache, step compiled"
    assert summary.WHAT["generate()"] == "transformers' loop: dynamic cache, eager"
    assert all(len(v) <= 50 for v in summary.WHAT.values())


@pytest.mark.parametrize("run", list(FULL))
def test_no_line_explains_claim_1_from_the_ladder(run):
    """Fix 4: "Why claim 1 reads 'not reproduced' (this ladder, one length)" guessed a cause from
    one length for notebook 01's verdict; no such line on any real run."""
    from helpers.course import budget
    ladder, tables = _full(run)
    frame = claims.check_claims(ladder, tables)
    names = {m: m for m in ladder["method"]}
    b = budget.per_step(ladder, list(names), floor=0.22, labels=names, seq_len=100)
    text = summary.host_paced(b, names, frame)
    assert "claim 1" not in text
    assert all(line.startswith("Claim 2 is judged in notebook 02") for line in text.split("\n") if line)
