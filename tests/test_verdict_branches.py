"""The verdict branches of every notebook (``if judge:``), which run only on a GPU in a real
run, executed on the CPU: the smoke preset with ``stats.JUDGE_SMOKE_ENV`` set, so they print
verdicts from numbers that mean nothing. What it checks is that they run: a name error or a
missing column there would otherwise first show in a GPU run, whose time is scarce. (It found
that 09's summary line read a table counted on a GPU only.)"""
import json
import os

import pytest

from helpers.course import runner, stats

NOTEBOOKS = runner.notebooks()


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    run_root = tmp_path_factory.mktemp("judged")
    before = os.environ.get(stats.JUDGE_SMOKE_ENV)
    os.environ[stats.JUDGE_SMOKE_ENV] = "1"  # the kernels inherit it
    try:
        status = runner.run(NOTEBOOKS, "smoke", run_root, echo=False, promote_figures=False)
    finally:
        if before is None:
            os.environ.pop(stats.JUDGE_SMOKE_ENV, None)
        else:
            os.environ[stats.JUDGE_SMOKE_ENV] = before
    return run_root, status


def test_the_switch_is_for_tests_only():
    from helpers.course.presets import resolve_params

    assert not stats.can_judge(resolve_params("02", "smoke"))


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_verdict_branches_run(judged_run, path):
    run_root, status = judged_run
    entry = status[path.stem]
    assert entry["status"] == "ok", f"{path.name}: {entry.get('error')} (see {entry.get('executed')})"
    executed = json.loads((run_root / path.name).read_text())
    noise = [("".join(o.get("text", "")) or o.get("evalue", ""))[:200]
             for c in executed["cells"] for o in c.get("outputs", [])
             if o.get("name") == "stderr" or o.get("output_type") == "error"]
    assert not noise, f"{path.name}: stderr or errors on the verdict path: {noise[:2]}"
