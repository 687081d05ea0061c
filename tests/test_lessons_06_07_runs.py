"""The sentences notebooks 06 and 07 print, read from the tables of four real H100 runs
(tests/data/NN_*-<commit>.csv: the published 12:29 run of ba37cc3 and the 09:46, 06:54 and
05:14 runs): each must say only what its own rounds tell. 06 states no cost where its rounds
can't tell the two loops apart, and says why; 07's closing line agrees with its claim line."""
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, eos_sync, late_check, profiling, stats

DATA = Path(__file__).resolve().parent / "data"
RUNS = ["ba37cc3", "8973374", "90c3788", "eb4fe0c"]


def table(name, run):
    return pd.read_csv(DATA / f"{name}-{run}.csv")


def early_stop(run):
    """06's early-stop table with the tokens per row each loop ran (80: the longest row)."""
    t = table("06_eos_sync", run)
    t["tokens"] = [80 if m == eos_sync.CHECK else c for m, c in zip(t["method"], t["seq_len"])]
    return t[t["status"] == "ok"]


def cost_parts(run):
    cost = table("06_eos_sync_regimes", run)
    steps = budget.per_step(cost, seq_len=100)
    return cost, steps, eos_sync.unresolved(cost)


@pytest.mark.parametrize("run", RUNS)
def test_06_cost_is_stated_only_where_the_rounds_tell(run):
    cost, steps, unclear = cost_parts(run)
    wall = steps.set_index("method")["wall_ms"]
    line = eos_sync.cost_line(steps, cost, unclear)
    assert line.startswith("What the check costs, read as how many times faster each loop runs "
                           "without it: with the eager step")
    for regime in ("eager", "CUDA graph"):
        check, free = wall[f"{regime}, {eos_sync.CHECK}"], wall[f"{regime}, {eos_sync.FREE}"]
        ratio = stats.row_speedup(cost, f"{regime}, {eos_sync.FREE}", f"{regime}, {eos_sync.CHECK}")
        if regime in unclear:
            assert stats.verdict(ratio) != stats.FASTER
            assert f"with the {regime} step it costs" not in line
            assert f"with the {regime} step, can't tell apart on this machine (" in line
            # the medians named, and their direction said: a faster check is the host's noise
            medians = f"({check:.2f} against {free:.2f} ms per step)"
            assert (f"With the {regime} step the loop with the check even ran the faster by the "
                    f"medians {medians}: a check cannot make a step faster, so that is the host's "
                    "noise" if check < free else
                    f"With the {regime} step the medians differ {medians}, but its rounds ran") in line
        else:
            assert stats.verdict(ratio) == stats.FASTER
            assert f"with the {regime} step it costs {1e3 * (check - free):.0f} µs per step" in line
    assert ("Notebook 07 times the same two CUDA-graph loops again." in line) == ("CUDA graph" in unclear)
    summary = eos_sync.cost_summary(steps, unclear)
    assert ("CUDA graph step, can't tell (notebook 07 times it again)" in summary) == \
        ("CUDA graph" in unclear)
    assert ("eager step, can't tell" in summary) == ("eager" in unclear)
    # the budget's reading: a number added only where the rounds tell
    view = profiling.check_cost(steps, unclear)
    reading = eos_sync.budget_line(view)
    assert ("the check adds" in reading) == ("CUDA graph" not in unclear)
    assert ("the rounds decide (below)" in reading) == ("CUDA graph" in unclear)


def test_06_published_run_reads_as_the_student_should():
    """The run the students read: both costs unresolved, the CUDA graph's by one slow round of
    the no-check loop (1.89 ms per step against about 1.27), and the eager medians the wrong way."""
    cost, steps, unclear = cost_parts("ba37cc3")
    assert unclear == ["CUDA graph", "eager"]
    line = eos_sync.cost_line(steps, cost, unclear)
    assert ("With the eager step the loop with the check even ran the faster by the medians (5.01 "
            "against 5.42 ms per step): a check cannot make a step faster, so that is the host's "
            "noise") in line
    assert ("With the CUDA graph step the medians differ (1.55 against 1.27 ms per step), but its "
            "rounds ran from 1.52 to 1.72 ms per step with the check and from 1.26 to 1.89 without "
            "it: this run cannot say what the check costs.") in line
    assert "weighs most" not in line and "pays more" not in line
    assert eos_sync.cost_summary(steps, unclear) == (
        "The check's cost per step on this run: eager step, can't tell; CUDA graph step, can't "
        "tell (notebook 07 times it again).")


@pytest.mark.parametrize("run", RUNS)
def test_06_speedup_against_the_token_ratio(run):
    ok = early_stop(run)
    ratio = stats.row_speedup(ok, eos_sync.CHECK, eos_sync.FREE, seq_len=200)
    why = eos_sync.speedup_why(ok)
    at = ok.set_index(["method", "seq_len"])["median_s"]
    per_token = {m: 1e3 * at[m, 200] / n for m, n in ((eos_sync.CHECK, 80), (eos_sync.FREE, 200))}
    if why.startswith("It falls short"):
        assert ratio.high < 2.5
        assert (f"a token cost more in the loop with the check ({per_token[eos_sync.CHECK]:.2f} "
                f"against {per_token[eos_sync.FREE]:.2f} ms") in why
        same = {c: 1e3 * at[eos_sync.CHECK, c] for c in (100, 200)}
        assert ("speed drifts" in why) == stats.medians_apart(same[100], same[200])
    elif why:
        assert ratio.low > 2.5 and why.startswith("The speedup exceeds the token ratio")
    else:
        assert ratio.low <= 2.5 <= ratio.high or per_token[eos_sync.CHECK] <= per_token[eos_sync.FREE]


@pytest.mark.parametrize("run", RUNS)
def test_06_profiled_gap_beside_the_timed_budget(run):
    cost, steps, unclear = cost_parts(run)
    gaps = table("06_eos_sync_gaps", run).groupby("method")[
        ["gap_before_us", "cpu_wait_us", "cpu_us"]].median().round(1)
    line = eos_sync.gap_line(gaps, steps, unclear)
    timed = 1e3 * steps.set_index("method").at[f"CUDA graph, {eos_sync.CHECK}", "wall_ms"]
    profiled = gaps.at[eos_sync.CHECK, "cpu_us"]
    assert ("the profiler slows the host" in line) == (profiled > profiling.PROFILER_SLOWED * timed)
    assert ("the number to quote" in line) == ("CUDA graph" not in unclear)


def claim_word(line):
    return line.rsplit(": ", 1)[1].rstrip(".")


@pytest.mark.parametrize("run", RUNS)
def test_07_closing_line_agrees_with_the_claim_line(run):
    t = table("07_stream_interleaving", run)
    summary = late_check.summary(t)
    claim = claim_word(late_check.article_claim_line(t, summary))
    pays = late_check.pays_line(t, summary)
    assert pays.startswith({"supported": "The late read pays most at batch 1, where",
                            "not supported": "The late read does not pay most at batch 1",
                            "can't tell on this machine": "This run can't tell whether the late "
                                                          "read pays most at batch 1"}[claim])
    rows = summary[summary["regime"] == "compiled"].set_index("batch_size")
    share = {b: r["check_cost_us"] / (10 * r["no_check"]) for b, r in rows.iterrows()}
    won = rows["interleaved_recovered_pct"]
    assert f"{share[1]:.0f}% of the {rows.at[1, 'no_check']:.2f} ms step without it" in pays
    if "even though two streams win back less of it there" in pays:
        assert all(round(won[1]) < round(won[b]) for b in (32, 128))
    if "the largest share of a step" in pays:
        assert claim == "supported" and all(round(share[1]) > round(share[b]) for b in (32, 128))
    assert "win back least" not in pays


def test_07_published_run_answers_when_it_pays_once():
    t = table("07_stream_interleaving", "ba37cc3")
    summary = late_check.summary(t)
    assert late_check.article_claim_line(t, summary).endswith("every larger batch's: supported.")
    assert late_check.pays_line(t, summary) == (
        "The late read pays most at batch 1, where two streams' speedup is largest (the claim line "
        "above): there the check costs the largest share of a step (38% of the 0.80 ms step "
        "without it, against 23% at batch 32 and 22% at batch 128), even though two streams win "
        "back less of it there (91%, against 94% and 94%).")
    at = summary[summary["batch_size"] == 32].set_index("regime").loc["compiled"]
    graph = t[(t["regime"] == "compiled") & (t["batch_size"] == 32)]
    answer = late_check.answer_line(at, graph)
    assert "rounds' estimates" not in answer and "288 µs per step" in answer
