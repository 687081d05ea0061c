"""Do two runs conclude the same? The printed verdicts of executed notebooks, side by side.

Every conclusion a notebook prints comes from ``stats`` (the lessons' plain "1.42x faster
(1.34-1.65)", "slower", "can't tell apart on this machine"; earlier runs' faster / slower /
within noise, the gain grows, which term dominates, whether a cost is felt) or from its targets and claims (MET / NOT MET / MISSED,
reproduced / not reproduced / inconclusive). This module reads those lines from the outputs of
executed notebooks, pairs the lines of two runs by their text with the numbers taken out, and
says which verdicts agree: your run against the published H100 run, or two runs of your own.

    python -m helpers.course.verdicts runs/full figures/notebooks      # folders of executed notebooks
    python -m helpers.course.verdicts my_04.ipynb figures/notebooks/04_static_cache.ipynb

A verdict that is clear in one run and "within noise" in the other is a difference, but not a
contradiction; ``compare`` tells the two apart (``reversed``: faster against slower, or
reproduced against not reproduced).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# The words a verdict is made of. Outcomes of targets and claims count anywhere in a line;
# "faster", "slower", "within noise" and the gain's words only where a sentence or clause ends
# after them ("...: faster." but not "63x slower than"); counts keep their numbers ("faster at
# 9/9"). Longest first, so that "within noise: this run cannot tell" is not "within noise".
_COUNT = r"(?:faster|slower|within noise)(?: \(95% interval above 1\))? at \d+(?:/\d+)?"
_ANYWHERE = ("within noise: this run cannot tell", "inconclusive: premise not met",
             "inconclusive: within noise", "can't tell apart on this machine", "too few to judge",
             "partly reproduced", "not reproduced", "reproduced", "exceeded", "NOT MET", "MISSED",
             "MET", "not felt", "felt")
_TERMS = ("neither term clearly dominates", "the N² term", "the linear term")
_AT_END = ("the gain grows", "the gain shrinks", "within noise", "faster", "slower")
_WORD = re.compile(
    "(?P<count>" + _COUNT + ")"
    + "|(?P<any>" + "|".join(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])" for w in _ANYWHERE) + ")"
    + "|(?P<term>" + "|".join(re.escape(w) for w in _TERMS) + r")(?: \([^)]*\))?(?: dominates)?"
    + "|(?P<end>" + "|".join(r"(?<![\w-])" + re.escape(w) for w in _AT_END)
    + r")(?=[.;:,\])]|$| \(\d)")  # the lessons' plain form: "1.42x faster (1.34-1.65)"
# A list of batch sizes (or lengths) a verdict names: "at batch sizes [8, 32]", "at none".
_LIST = re.compile(r"\b(at(?: batch(?: sizes?)?)?) (\[[^\]]*\]|none)")
_NUMBER = re.compile(r"\(\d+(?:\.\d+)?% CI[^)]*\)|\(trials [^)]*\)|[-+]?\d[\d,]*(?:\.\d+)?")
# The ratio of the medians that ``stats.plain`` adds inside the parentheses where it differs from
# the estimate ("1.75x faster (1.70-1.80; the table's medians: 1.69x)"), or the claims after point
# speedups ("1.19x at 50 tokens (the table's medians: 1.18x)"): no verdict, and present in one run but
# not another, so it is taken out before the line is read.
# (runs before 2026-11-27 14:00 wrote "medians alone" where they now write "the table's medians")
_MEDIANS = re.compile(r"; (?:medians alone|the table's medians): [^;)]*"
                      r"| \((?:medians alone|the table's medians): [^)]*\)")
# Opposite clear verdicts: one run says one, the other run the other.
OPPOSITE = {("faster", "slower"), ("reproduced", "not reproduced"),  # "partly reproduced":
            # between the two, a move like one between a clear result and can't tell apart
            ("exceeded", "not reproduced"), ("MET", "NOT MET"),
            ("MET", "MISSED"), ("the gain grows", "the gain shrinks"),
            ("the N² term", "the linear term"), ("felt", "not felt")}


@dataclass(frozen=True)
class Verdict:
    """One printed line that carries a verdict: its text with the numbers and verdict words
    taken out (``key``), the verdict words and lists in order (``words``), and the line."""
    key: str
    words: tuple
    line: str


def parse_line(line: str) -> Verdict | None:
    """The verdict a printed line carries, or None when it carries none."""
    text = _MEDIANS.sub("", line)
    words = [next(g for g in m.groups() if g) for m in _WORD.finditer(text)]
    lists = [f"{m.group(1)} {m.group(2)}" for m in _LIST.finditer(text)]
    if not words and not lists:
        return None
    key = _LIST.sub(r"\1 [..]", text)
    key = _WORD.sub("_", key)
    key = _NUMBER.sub("#", key)
    key = key.replace("#x _", "_")  # "1.42x faster (...)" pairs with "can't tell apart (...)"
    return Verdict(" ".join(key.split()), tuple(words + lists), line.strip())


def printed_lines(path) -> list:
    """The lines a notebook printed (stdout streams of its code cells), in order."""
    cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])
    lines = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stdout":
                text = output.get("text", "")
                lines += ("".join(text) if isinstance(text, list) else text).splitlines()
    return lines


def notebook_verdicts(path) -> list:
    """Every verdict an executed notebook printed, in order."""
    return [v for v in map(parse_line, printed_lines(path)) if v is not None]


def _tally(verdict: Verdict) -> bool:
    """A line that counts verdicts ("7 claims: 2 reproduced, 1 exceeded"): every verdict word
    follows a count."""
    return len(verdict.words) > 1 and all(
        re.search(r"\b\d+ " + re.escape(w) + r"\b", verdict.line) for w in verdict.words)


def compare(first: list, second: list) -> list:
    """Pair two runs' verdicts by key (the n-th line with a key in one run against the n-th in
    the other) and judge each pair: 'same', 'differs' (clear in one, not in the other),
    'reversed' (opposite clear verdicts), or 'only in one run'. Returns dicts in the first
    run's order, then the second run's unpaired lines."""
    def indexed(verdicts):
        seen, out = {}, {}
        for v in verdicts:
            n = seen[v.key] = seen.get(v.key, 0) + 1
            out[(v.key, n)] = v
        return out

    a, b = indexed(first), indexed(second)
    rows = []
    for key in list(a) + [k for k in b if k not in a]:
        va, vb = a.get(key), b.get(key)
        if va is None or vb is None:
            status = "only in one run"
        elif va.words == vb.words:
            status = "same"
        elif _tally(va) and _tally(vb):  # counts of verdicts ("2 reproduced, 1 exceeded"): the
            status = "differs"            # claims' own lines carry the verdicts, in any order here
        elif any((x, y) in OPPOSITE or (y, x) in OPPOSITE for x, y in zip(va.words, vb.words)):
            status = "reversed"
        else:
            status = "differs"
        rows.append({"key": key[0], "first": va.words if va else None,
                     "second": vb.words if vb else None, "status": status,
                     "line": (va or vb).line})
    return rows


def _notebooks(path: Path) -> dict:
    if path.is_file():
        return {path.stem.split("_")[0]: path}
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such notebook or folder")
    found = {p.stem.split("_")[0]: p for p in sorted(path.glob("[0-9][0-9]_*.ipynb"))}
    if not found:
        raise FileNotFoundError(f"{path}: no executed notebooks (NN_name.ipynb) in this folder")
    return found


def report(first: Path, second: Path, out=sys.stdout) -> int:
    """Print every verdict of two runs side by side, notebook by notebook; return how many
    verdicts reversed (0: the runs never contradict each other)."""
    a, b = _notebooks(first), _notebooks(second)
    if first.is_file() and second.is_file():
        b = {next(iter(a)): next(iter(b.values()))}
    counts = {}
    for number in sorted(set(a) & set(b)):
        rows = compare(notebook_verdicts(a[number]), notebook_verdicts(b[number]))
        same = sum(r["status"] == "same" for r in rows)
        print(f"== {a[number].name}: {same} of {len(rows)} verdicts the same", file=out)
        for r in rows:
            if r["status"] != "same":
                first_words = "; ".join(r["first"]) if r["first"] else "-"
                second_words = "; ".join(r["second"]) if r["second"] else "-"
                print(f"   {r['status']:>15}: {r['line'][:110]}\n"
                      f"{'':>20}{first_words}  |  {second_words}", file=out)
            counts[r["status"]] = counts.get(r["status"], 0) + 1
    missing = sorted(set(a) ^ set(b))
    if missing:
        print(f"notebooks in one run only: {', '.join(missing)}", file=out)
    print("in all: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), file=out)
    return counts.get("reversed", 0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.course.verdicts",
        description="Compare the printed verdicts of two runs (executed notebooks, or folders "
                    "of them such as runs/full and figures/notebooks).")
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    args = parser.parse_args(argv)
    try:
        reversed_total = report(args.first, args.second)
    except (FileNotFoundError, json.JSONDecodeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 1 if reversed_total else 0


if __name__ == "__main__":
    sys.exit(main())
