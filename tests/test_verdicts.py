"""helpers.course.verdicts: the printed verdicts of two runs, read from executed notebooks and paired."""
import io

import nbformat
import pytest

from helpers.course import stats, verdicts


def test_verdict_lines_are_read_with_their_words():
    ratio = stats.Ratio(1.42, 1.2, 1.6, 10)
    v = verdicts.parse_line("  100 tokens: " + stats.sentence(ratio, "kv_cache", "naive"))
    assert v.words == ("faster",) and "#" in v.key and "1.42" not in v.key
    assert verdicts.parse_line("x: 0.98x (95% CI 0.9-1.1, n=5): within noise.").words == ("within noise",)
    growth = verdicts.parse_line("... is 1.5x (95% CI 0.9-2.0, n=3) the speedup at 100: "
                                 "within noise: this run cannot tell.")
    assert growth.words == ("within noise: this run cannot tell",)
    term = verdicts.parse_line("  N=100: 61% of the fitted time is N² work: the linear term "
                               "(fixed per-step cost: Python) dominates.")
    assert term.words == ("the linear term",)
    other = verdicts.parse_line("  N=100: 49% of the fitted time is N² work: the N² term "
                                "(work on the whole sequence) dominates.")
    assert other.key == term.key  # the same line, another verdict
    neither = verdicts.parse_line("  N=100: 47% of the fitted time is N² work: neither term "
                                  "clearly dominates (the interval contains 50%).")
    assert neither.key == term.key and neither.words == ("neither term clearly dominates",)
    claim = verdicts.parse_line("[inconclusive: within noise] Interleaving gains most: eager: "
                                "within noise at batch [1, 128]; compiled: 1.2x: faster")
    assert claim.words == ("inconclusive: within noise", "faster", "at batch [1, 128]")
    count = verdicts.parse_line("one transfer is faster (95% interval above 1) at 9/9 points, "
                                "slower at 0, within noise at 0.")
    assert count.words[0].endswith("at 9/9") and len(count.words) == 3
    assert verdicts.parse_line("distance to the floor: 5.24x (target <= 2x): MISSED").words == ("MISSED",)
    family = verdicts.parse_line("x: 0.98x (98.75% CI 0.9-1.1, n=5): within noise.")
    assert family.key == verdicts.parse_line("x: 0.98x (95% CI 0.9-1.1, n=5): within noise.").key


def test_lines_without_a_verdict_are_left_out():
    assert verdicts.parse_line("(the naive loop is 63x slower than a step at the floor)") is None
    assert verdicts.parse_line("Time per step: 8.30 ms at N=100") is None
    assert verdicts.parse_line("") is None


def _words(*lines):
    return [verdicts.parse_line(line) for line in lines]


def test_compare_tells_same_differs_reversed_and_unpaired():
    first = _words("100 tokens: a over b: 1.2x (95% CI 1.1-1.3, n=5): faster.",
                   "200 tokens: a over b: 1.1x (95% CI 1.0-1.2, n=5): faster.",
                   "400 tokens: a over b: 0.8x (95% CI 0.7-0.9, n=5): slower.",
                   "only here: MET")
    second = _words("100 tokens: a over b: 1.3x (95% CI 1.2-1.4, n=9): faster.",
                    "200 tokens: a over b: 1.0x (95% CI 0.9-1.1, n=9): within noise.",
                    "400 tokens: a over b: 1.2x (95% CI 1.1-1.3, n=9): faster.",
                    "new line: the gain grows.")
    status = [r["status"] for r in verdicts.compare(first, second)]
    assert status == ["same", "differs", "reversed", "only in one run", "only in one run"]
    # repeated lines pair in order
    twice = _words("a over b: 1x: faster.", "a over b: 1x: slower.")
    assert [r["status"] for r in verdicts.compare(twice, twice)] == ["same", "same"]


def _executed(path, *lines):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(...)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="\n".join(lines) + "\n"),
                    nbformat.v4.new_output("stream", name="stderr", text="x: faster.\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("faster."), cell]
    nbformat.write(nb, path)


def test_report_and_command_line(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    _executed(a / "02_kv_cache.ipynb", "100 tokens: k over n: 1.4x (95% CI 1.2-1.6, n=5): faster.")
    _executed(b / "02_kv_cache.ipynb", "100 tokens: k over n: 1.5x (95% CI 1.3-1.7, n=5): faster.")
    _executed(a / "04_static_cache.ipynb", "100 tokens: s over k: 0.8x (95% CI 0.7-0.9, n=5): slower.")
    _executed(b / "04_static_cache.ipynb", "100 tokens: s over k: 1.2x (95% CI 1.1-1.3, n=5): faster.")
    out = io.StringIO()
    assert verdicts.report(a, b, out) == 1
    text = out.getvalue()
    assert "02_kv_cache.ipynb: 1 of 1 verdicts the same" in text and "reversed" in text
    assert "1 reversed, 1 same" in text
    assert verdicts.main([str(a / "02_kv_cache.ipynb"), str(b / "02_kv_cache.ipynb")]) == 0
    assert verdicts.main([str(a), str(b)]) == 1
    assert verdicts.main([str(a), str(tmp_path / "missing")]) == 2
    assert "no such notebook or folder" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no executed notebooks"):
        verdicts.report(a, empty, io.StringIO())


def test_the_lessons_plain_form_is_read_and_paired():
    faster = verdicts.parse_line("  100 tokens: KV cache over naive: 1.42x faster (1.34–1.65)")
    slower = verdicts.parse_line("  100 tokens: KV cache over naive: 1.10x slower (1.02–1.19)")
    cant = verdicts.parse_line("  100 tokens: KV cache over naive: can't tell apart on this "
                               "machine (0.96–1.10)")
    assert faster.words == ("faster",) and slower.words == ("slower",)
    assert cant.words == ("can't tell apart on this machine",)
    assert faster.key == slower.key == cant.key == "# tokens: KV cache over naive: _ (#–#)"
    assert ("faster", "slower") in verdicts.OPPOSITE
    assert verdicts.parse_line("eager static is 63x slower than the graph") is None
    assert verdicts.parse_line("0.93x (only 3 runs: too few to judge)").words == ("too few to judge",)
    assert verdicts.parse_line("claim 4: exceeded: faster than claimed").words == ("exceeded",)


def test_a_tally_of_verdicts_in_another_order_is_not_a_reversal():
    first = verdicts.parse_line("Judged from this run's own tables: 7 of 7 claims: 2 not reproduced, "
                                "2 can't tell apart on this machine, 2 reproduced, 1 exceeded")
    second = verdicts.parse_line("Judged from this run's own tables: 7 of 7 claims: 3 reproduced, "
                                 "2 not reproduced, 1 can't tell apart on this machine, 1 exceeded")
    assert [r["status"] for r in verdicts.compare([first], [second])] == ["differs"]
    # a line whose verdicts swap places is still a reversal
    a = verdicts.parse_line("static: faster; dynamic: slower")
    b = verdicts.parse_line("static: slower; dynamic: faster")
    assert [r["status"] for r in verdicts.compare([a], [b])] == ["reversed"]


def test_lines_with_the_medians_ratio_and_three_decimals_pair_with_plain_ones():
    plain = verdicts.parse_line("  200 tokens: KV cache against naive: 1.75x faster (1.70–1.80)")
    noted = verdicts.parse_line("  200 tokens: KV cache against naive: 1.75x faster "
                                "(1.70–1.80; the table's medians: 1.69x)")
    other_way = verdicts.parse_line("  200 tokens: KV cache against naive: 1.007x slower "
                                    "(1.002–1.012; the table's medians: 1.001x faster)")
    cant = verdicts.parse_line("  200 tokens: KV cache against naive: can't tell apart on this "
                               "machine (0.83–1.05; the table's medians: 0.92x)")
    assert noted.words == ("faster",) and other_way.words == ("slower",)
    assert cant.words == ("can't tell apart on this machine",)
    assert plain.key == noted.key == other_way.key == cant.key
    assert "the table's medians" in noted.line  # the line itself is kept whole
    status = [r["status"] for r in verdicts.compare([plain, noted], [noted, other_way])]
    assert status == ["same", "reversed"]
    # the real format, from stats
    ratio = stats.Ratio(1.034, 1.003, 1.068, 10)
    line = verdicts.parse_line("x: " + stats.plain(ratio, medians=0.95))
    assert line.words == ("faster",) and line.key == verdicts.parse_line("x: 1.2x faster (1.1–1.3)").key
    # the claims' note after point speedups
    claim = verdicts.parse_line("KV cache over naive: 1.19x at 50 tokens, 1.75x at 200 tokens "
                                "(the table's medians: 1.18x and 1.69x); the gain: 1.46x faster (1.38–1.56)")
    bare = verdicts.parse_line("KV cache over naive: 1.19x at 50 tokens, 1.75x at 200 tokens; "
                               "the gain: 1.46x faster (1.38–1.56)")
    assert claim.key == bare.key and claim.words == ("faster",)
