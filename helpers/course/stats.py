"""Ratios with 95% intervals, and the one verdict function every printed conclusion uses.

A speedup read off two medians can flip between runs on a CPU-bound loop; an interval from the
trials says whether the data can tell. For trials paired by round (``harness.compare``
interleaves them) ``speedup`` is the geometric mean of the per-round ratios, bootstrapped over
rounds: the host's speed changes from second to second, and a ratio within one round cancels
what both trials of the round share (the ratio of two medians does not: each median can jump
between a fast and a slow stretch of the host). Unpaired trials give the ratio of medians, each
side resampled on its own. ``verdict`` answers faster, slower or within noise: "within noise"
whenever the interval contains 1, or there are too few trials to form one. A lesson's table
shows medians, so ``say`` adds their ratio to the line where it differs from the estimate
("3.28x faster (2.82-3.83; the table's medians: 2.88x)"): a reader who divides the medians sees why.

One sentence that lists several comparisons (e.g. "clear at batch sizes [8, 32]") is wrong if
any entry is; ``family_level`` gives each interval the level that keeps the whole list at 95%.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from . import analysis, harness

LEVEL = 0.95
RESAMPLES = 4000
MIN_TRIALS = 5  # fewer paired trials give no interval: too few runs to judge (a bootstrap of
                # three pairs has ten distinct resamples and cannot carry a verdict)
FASTER, SLOWER, NOISE = "faster", "slower", "within noise"


@dataclass(frozen=True)
class Ratio:
    """A ratio (e.g. a speedup) with its interval; ``n`` trials per side (rounds when paired)."""
    estimate: float
    low: float
    high: float
    n: int
    level: float = LEVEL

    def verdict(self) -> str:
        return verdict(self)

    def __str__(self) -> str:
        if math.isnan(self.estimate):
            return "n/a"
        if math.isinf(self.low) or math.isinf(self.high):
            return f"{self.estimate:.2f}x (n={self.n}: too few trials for an interval)"
        return (f"{self.estimate:.2f}x ({100 * self.level:.4g}% CI {self.low:.2f}-{self.high:.2f}, "
                f"n={self.n})")


def verdict(ratio: Ratio) -> str:
    """'faster' when the whole interval lies above 1, 'slower' when below, else 'within noise'."""
    if math.isnan(ratio.estimate) or ratio.n < MIN_TRIALS:
        return NOISE
    if ratio.low > 1:
        return FASTER
    if ratio.high < 1:
        return SLOWER
    return NOISE


def family_level(count: int, level: float = LEVEL) -> float:
    """The level of each of ``count`` intervals that together hold at ``level`` (Bonferroni):
    a list of several verdicts is then wrong with probability at most 1 - ``level``."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    return 1 - (1 - level) / count


def _median_ratio(num, den, axis=-1):
    return np.median(num, axis=axis) / np.median(den, axis=axis)


def _paired_ratio(num, den, axis=-1):
    """Geometric mean over rounds of num/den (rounds along ``axis``)."""
    return np.exp(np.mean(np.log(num / den), axis=axis))


def _resample(rng, n, resamples):
    return rng.integers(0, n, size=(resamples, n))


def speedup(candidate, baseline, *, paired=True, level=LEVEL, resamples=RESAMPLES,
            seed=0) -> Ratio:
    """How many times faster ``candidate`` is than ``baseline``, from their trial times, with a
    percentile-bootstrap interval at ``level``. ``paired``: trial i of both came from the same
    round (needs equal lengths): the geometric mean of baseline_i / candidate_i, rounds
    resampled. Unpaired: median(baseline) / median(candidate), each side resampled."""
    cand, base = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    if cand.size == 0 or base.size == 0:
        return Ratio(float("nan"), float("nan"), float("nan"), 0, level)
    if paired and cand.size != base.size:
        raise ValueError(f"paired trials need equal counts, got {cand.size} and {base.size}")
    estimate = float(_paired_ratio(base, cand) if paired else _median_ratio(base, cand))
    n = min(cand.size, base.size)
    if n < MIN_TRIALS:
        return Ratio(estimate, -math.inf, math.inf, n, level)
    rng = np.random.default_rng(seed)
    if paired:
        idx = _resample(rng, n, resamples)
        draws = _paired_ratio(base[idx], cand[idx])
    else:
        draws = _median_ratio(base[_resample(rng, base.size, resamples)],
                              cand[_resample(rng, cand.size, resamples)])
    return _interval(estimate, draws, level, n)


def speedup_growth(short, long, *, level=LEVEL, resamples=RESAMPLES, seed=0) -> Ratio:
    """How many times larger a speedup is at one point than at another: ``short`` and ``long``
    are (candidate_trials, baseline_trials) pairs, each paired by round (the speedup at each
    point as in ``speedup``); the two points are resampled independently. Above 1 (whole
    interval): the gain grows."""
    parts = []
    for cand, base in (short, long):
        cand, base = np.asarray(cand, dtype=float), np.asarray(base, dtype=float)
        if cand.size != base.size:
            raise ValueError("each point's trials must be paired (equal counts)")
        parts.append((cand, base))
    n = min(p[0].size for p in parts)
    if n == 0:
        return Ratio(float("nan"), float("nan"), float("nan"), 0)
    estimate = float(_paired_ratio(parts[1][1], parts[1][0]) / _paired_ratio(parts[0][1], parts[0][0]))
    if n < MIN_TRIALS:
        return Ratio(estimate, -math.inf, math.inf, n)
    rng = np.random.default_rng(seed)
    draws = []
    for cand, base in parts:
        idx = _resample(rng, cand.size, resamples)
        draws.append(_paired_ratio(base[idx], cand[idx]))
    return _interval(estimate, draws[1] / draws[0], level, n)


def _interval(estimate, draws, level, n) -> Ratio:
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Ratio(estimate, float(low), float(high), n, level)


def row_speedup(table, candidate: str, baseline: str, metric: str = "wall", paired=None,
                level: float = LEVEL, **where) -> Ratio:
    """``speedup`` between two methods' rows of a results table (one row each after filtering
    by ``where``, e.g. ``seq_len=100``), from their stored trials. Paired when both rows hold
    the same number of trials (they were interleaved by ``harness.compare``) unless ``paired``
    says otherwise (trials from separate processes are not paired)."""
    return _trials_speedup(*_row_trials(table, candidate, baseline, metric, where), paired, level)


def _row_trials(table, candidate, baseline, metric, where) -> tuple:
    """(candidate's trials, baseline's trials) of two methods' rows."""
    return tuple(method_trials(table, method, metric, **where) for method in (candidate, baseline))


def _trials_speedup(cand, base, paired=None, level=LEVEL) -> Ratio:
    """``speedup`` of two rows' trials: paired when they hold as many (interleaved rounds)
    unless ``paired`` says otherwise."""
    return speedup(cand, base, paired=len(cand) == len(base) if paired is None else paired,
                   level=level)


def method_trials(table, method: str, metric: str = "wall", **where) -> list:
    """The stored trials (seconds) of one method's row that ran, after filtering by ``where``;
    empty unless exactly one such row exists."""
    rows = table[table["method"] == method]
    for key, value in where.items():
        rows = rows[rows[key] == value]
    if "status" in rows:
        rows = rows[rows["status"] == harness.OK]
    if len(rows) != 1:
        return []
    return harness.trials(rows.iloc[0], metric)


def listed(items, unit: str = "") -> str:
    """Items joined as prose, then ``unit``: "100, 200 and 400", "5.04 and 8.65 ms"."""
    names = [str(item) for item in items]
    return (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]) + unit


def plain(ratio: Ratio, judge: bool = True, medians: float | None = None, every: bool = False) -> str:
    """The one way a lesson states a speedup: "1.42x faster (1.34-1.65)", "1.20x slower
    (1.10-1.31)", "can't tell apart on this machine (0.96-1.10)", or the ratio with "too few
    runs to judge" (fewer than ``MIN_TRIALS`` paired trials). A smoke run (``judge`` False)
    gets the ratio and no verdict.

    An interval bound that would print as 1.00 gets three decimals (four if needed), so that
    "faster (1.003-1.068)" is visibly above 1 and "can't tell apart (0.962-1.003)" visibly
    spans it. ``medians``: the ratio of the
    two medians a table shows (baseline over candidate); where it differs from the estimate by
    more than ``MEDIANS_APART`` or falls outside the printed interval, the line says so:
    "3.28x faster (2.82-3.83; the table's medians: 2.88x)" (for "slower" inverted as the estimate is).
    ``every``: beside a clear verdict, the medians are named wherever they print otherwise than
    the estimate, however close (lesson 07's answer: "1.23x faster" beside the table's 1.26x)."""
    if math.isnan(ratio.estimate):
        return "no data"
    if not judge:
        return f"{ratio.estimate:.2f}x (smoke run: not a measurement)"
    if ratio.n < MIN_TRIALS or math.isinf(ratio.low) or math.isinf(ratio.high):
        note = _medians_note(NOISE, ratio.estimate, -math.inf, math.inf, medians, 2)
        return f"{ratio.estimate:.2f}x (only {ratio.n} runs: too few to judge{note})"
    word, estimate, *_, digits = _printed(ratio, medians)
    if word == NOISE:
        return f"can't tell apart on this machine {bracket(ratio, medians, every)}"
    return f"{estimate:.{digits}f}x {word} {bracket(ratio, medians, every)}"


def bracket(ratio: Ratio, medians: float | None = None, every: bool = False) -> str:
    """The bracket ``plain`` prints after a judged verdict with enough runs: "(1.34-1.65)", with
    the medians' note where ``plain`` adds it, for a line that words the verdict its own way."""
    word, estimate, low, high, medians, digits = _printed(ratio, medians)
    note = _medians_note(word, estimate, low, high, medians, digits, every)
    return f"({low:.{digits}f}\u2013{high:.{digits}f}{note})"


def _printed(ratio: Ratio, medians: float | None = None) -> tuple:
    """What ``plain`` prints for a judged ratio: (word, estimate, low, high, medians, digits),
    for "slower" the estimate, bounds and medians inverted ("1.20x slower (1.10-1.31)")."""
    word = verdict(ratio)
    estimate, low, high = ratio.estimate, ratio.low, ratio.high
    if word == SLOWER:
        estimate, low, high = 1 / estimate, 1 / high, 1 / low
        medians = None if medians is None else 1 / medians
    return word, estimate, low, high, medians, _digits(low, high, 3 if word == NOISE and high - low < 0.02 else 2)


def short(ratio: Ratio) -> str:
    """A verdict in a few words, for a summary that leaves the range to the verdict line:
    "1.17x slower", "1.16x faster" (the estimate, three decimals where two would print 1.00) or
    "can't tell apart"."""
    word = verdict(ratio)
    if word == NOISE:
        return "can't tell apart"
    x = ratio.estimate if word == FASTER else 1 / ratio.estimate
    return f"{x:.{3 if f'{x:.2f}' == '1.00' else 2}f}x {word}"


MEDIANS_APART = 0.03  # the medians' ratio is named when it is this far from the estimate


def _digits(low: float, high: float, start: int = 2) -> int:
    """``start`` decimals, or up to four while a bound would print as 1.00 or both bounds as the
    same number ("1.01-1.01" for 1.006-1.014)."""
    digits = start
    while digits < 4 and (any(f"{b:.{digits}f}" == f"{1:.{digits}f}" for b in (low, high))
                          or (low != high and f"{low:.{digits}f}" == f"{high:.{digits}f}")):
        digits += 1
    return digits


def _medians_note(word: str, estimate: float, low: float, high: float, medians, digits: int,
                  every: bool = False) -> str:
    """"; the table's medians: 2.88x" where the ratio of the medians is more than ``MEDIANS_APART``
    from the estimate or prints outside the interval. All in the printed direction ("slower":
    inverted); a medians' ratio that points the other way from a clear verdict names its own, and
    beside "can't tell apart" (no direction printed) it always does, on the range's scale:
    "the table's medians: 0.81x, i.e. 1.23x slower"."""
    if medians is None or not 0 < medians < math.inf:
        return ""
    shown = every and word != NOISE and f"{medians:.2f}x" != f"{estimate:.{digits}f}x"
    if not shown and not medians_apart(medians, estimate) and \
            round(low, digits) <= round(medians, digits) <= round(high, digits):
        return ""
    if word != NOISE and medians < 1:
        return f"; the table's medians: {1 / medians:.{digits}f}x {SLOWER if word == FASTER else FASTER}"
    if word == NOISE:  # on the range's own scale (a speedup), and its direction in words:
        # round 9 read "(0.73-1.11; the table's medians: 0.81x)" as a speedup, round 10 misread
        # "(0.70-1.05; the table's medians: 1.26x slower)" as a scale the range did not share
        return (f"; the table's medians: {medians:.{digits}f}x {FASTER}" if medians >= 1 else
                f"; the table's medians: {medians:.{digits}f}x, i.e. {1 / medians:.{digits}f}x {SLOWER}")
    return f"; the table's medians: {medians:.{digits}f}x"


def medians_apart(medians: float, estimate: float) -> bool:
    """Whether a ratio of medians is more than ``MEDIANS_APART`` from the estimate (either way)."""
    return max(medians / estimate, estimate / medians) > 1 + MEDIANS_APART


def medians_ratio(candidate, baseline) -> float:
    """median(baseline) / median(candidate): the speedup read off the medians a table shows
    (NaN without trials on either side)."""
    if not len(candidate) or not len(baseline):
        return float("nan")
    return float(np.median(np.asarray(baseline, dtype=float))
                 / np.median(np.asarray(candidate, dtype=float)))


def say(table, candidate: str, baseline: str, judge: bool = True, metric: str = "wall",
        **where) -> str:
    """``plain`` for two methods' rows of a results table, e.g. ``say(table, "kv_cache",
    "naive", seq_len=100)`` -> "1.42x faster (1.34-1.65)", with the ratio of the rows' medians
    (the same trials) where it differs from the estimate: "(2.82-3.83; the table's medians: 2.88x)"."""
    cand, base = _row_trials(table, candidate, baseline, metric, where)
    return plain(_trials_speedup(cand, base), judge, medians_ratio(cand, base))


def medians_outside(table, candidate: str, baseline: str, judge: bool = True,
                    metric: str = "wall", **where):
    """Where the ratio of two rows' medians prints outside the interval ``say`` prints for them:
    (medians, low, high, digits) in the printed direction ("slower": inverted). None where it
    lies inside, in a smoke run, and with too few rounds for an interval."""
    cand, base = _row_trials(table, candidate, baseline, metric, where)
    ratio, medians = _trials_speedup(cand, base), medians_ratio(cand, base)
    if not judge or ratio.n < MIN_TRIALS or not all(
            math.isfinite(x) and x > 0 for x in (ratio.low, ratio.high, medians)):
        return None
    _, _, low, high, medians, digits = _printed(ratio, medians)
    if round(low, digits) <= round(medians, digits) <= round(high, digits):
        return None
    return medians, low, high, digits


# Tests only: judge a smoke run anyway, so that the verdict branches of every notebook (which
# otherwise run only on a GPU) run on the CPU too, on numbers that mean nothing.
JUDGE_SMOKE_ENV = "COURSE_JUDGE_SMOKE"


def can_judge(params) -> bool:
    """Timing verdicts only from real measurements: a CUDA run of the full or workshop preset.
    A smoke run (tiny model, often on a CPU) only exercises the code."""
    if os.environ.get(JUDGE_SMOKE_ENV) == "1":
        return True
    return params.preset != "smoke" and str(params.device).startswith("cuda")


NOT_JUDGED = "not judged: this run's timings only exercise the code (see the published GPU run)"


def sentence(ratio: Ratio, candidate: str, baseline: str, judge: bool = True) -> str:
    """One line a notebook prints: 'speedup of <candidate> over <baseline>: 1.42x (95% CI ...):
    faster.' Without ``judge`` (a smoke run), the numbers and no verdict."""
    word = verdict(ratio) if judge else NOT_JUDGED
    return f"speedup of {candidate} over {baseline}: {ratio}: {word}."


def row_growth(table, candidate: str, baseline: str, short, long, by: str = "seq_len",
               metric: str = "wall") -> Ratio:
    """``speedup_growth`` between two methods' rows of a results table: how many times larger
    the candidate's speedup over the baseline is at ``by=long`` than at ``by=short``. NaN (n=0)
    when either point lacks trials of both methods or they are not paired (unequal counts)."""
    pairs = [tuple(method_trials(table, m, metric, **{by: value}) for m in (candidate, baseline))
             for value in (short, long)]
    if not all(cand and base and len(cand) == len(base) for cand, base in pairs):
        return Ratio(float("nan"), float("nan"), float("nan"), 0)
    return speedup_growth(*pairs)


def quadratic_share(lengths, trials, at, *, paired=False, level=LEVEL, resamples=RESAMPLES,
                    seed=0) -> Ratio:
    """The share (0..1) of the time at length ``at`` that the N**2 term of ``time = a*N + b*N**2``
    accounts for, fitted through the median trial time of each length, with a bootstrap
    interval. ``trials``: one list of trial times per length. Unpaired (the lengths ran as
    separate points), each length's trials are resampled on their own. ``paired`` (trial i of
    every length came from round i of interleaved trials): rounds are resampled whole, so the
    three times of one round stay together.

    Rounds are not divided by their own speed: a slow stretch of the host does not scale a
    round's times alike. It lengthens the per-step cost (a, the host's work) and leaves the
    GPU's N² work (b) as it is; measured on an H100 host, slow rounds of the naive loop took
    +0.45 s at 100 tokens and +0.1-0.2 s at 400 (8.1 s). The share itself depends on the host's
    speed, and the interval keeps that spread."""
    lengths = [float(n) for n in lengths]
    samples = [np.asarray(t, dtype=float) for t in trials]
    if len(samples) != len(lengths):
        raise ValueError(f"one list of trials per length: {len(lengths)} lengths, {len(samples)} lists")
    if any(s.size == 0 for s in samples):
        return Ratio(float("nan"), float("nan"), float("nan"), 0)
    if paired:
        if len({s.size for s in samples}) != 1:
            raise ValueError("paired trials need the same count at every length")
        rounds = np.stack(samples, axis=1)  # (rounds, lengths)
    estimate = analysis.quadratic_share(*analysis.linear_quadratic_fit(
        lengths, [np.median(s) for s in samples]), at)
    n = min(s.size for s in samples)
    if n < MIN_TRIALS:
        return Ratio(estimate, -math.inf, math.inf, n)
    rng = np.random.default_rng(seed)
    if paired:
        medians = np.median(rounds[_resample(rng, n, resamples)], axis=1)
    else:
        medians = np.stack([np.median(s[_resample(rng, s.size, resamples)], axis=1)
                            for s in samples], axis=1)
    draws = np.array([analysis.quadratic_share(*analysis.linear_quadratic_fit(lengths, row), at)
                      for row in medians])
    return _interval(estimate, draws, level, n)


def dominant_term(share: Ratio) -> str:
    """Which term of ``a*N + b*N**2`` dominates, judged by the interval of its N**2 share: the
    N**2 term when the whole interval lies above one half, the linear term when below, and
    neither clearly when it contains one half (or there is no interval)."""
    if math.isnan(share.estimate) or share.n < MIN_TRIALS or math.isinf(share.low):
        return "neither term clearly dominates (too few trials for an interval)"
    if share.low > 0.5:
        return "the N² term (work on the whole sequence) dominates"
    if share.high < 0.5:
        return "the linear term (fixed per-step cost: Python, launches, the EOS sync) dominates"
    return "neither term clearly dominates (the interval contains 50%)"
