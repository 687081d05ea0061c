"""The times a reader sees are rendered from status files, never typed: every notebook's
"On an H100" cell (``report --headers``) and the instructor guide's table (``report --guide``)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from helpers.course import published, report, results

LINE = ("**On an H100** (the published run): 61 s in the full preset, at most about 2.5 GiB of "
        "GPU memory allocated at once (the weights and every live tensor together); 12 s in the workshop "
        "preset. **Needs** a CUDA GPU to measure; without one the smoke preset runs on the CPU.")


def notebook(path, header="**On an H100**: old words"):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# Title"},
             {"cell_type": "markdown", "metadata": {"tags": [published.HEADER_TAG]}, "source": header}]
    results.atomic_write_text(path, json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                "nbformat_minor": 5}, indent=1) + "\n")


@pytest.fixture
def repo(tmp_path):
    run = {"id": "20261123T120000Z-abc1234", "gpu": "NVIDIA H100 80GB HBM3", "commit": "abc1234"}
    full = {published.RUN_KEY: run,
            "00_setup": {"status": "ok", "seconds": 12.4, "run": run["id"], "peak_allocated_gib": 1.0},
            "01_naive": {"status": "ok", "seconds": 61.2, "run": run["id"], "peak_allocated_gib": 2.5},
            "02_other": {"status": "failed", "seconds": 3.0, "run": run["id"]}}
    workshop = {published.RUN_KEY: {**run, "id": "w"}, "00_setup": {"status": "ok", "seconds": 5.0},
                "01_naive": {"status": "ok", "seconds": 12.0}, "02_other": {"status": "ok", "seconds": 70.0}}
    results.atomic_write_text(tmp_path / "figures" / published.RUN_STATUS, json.dumps(full))
    results.atomic_write_text(tmp_path / published.WORKSHOP_STATUS, json.dumps(workshop))
    for stem in ("00_setup", "01_naive", "02_other"):
        notebook(tmp_path / "notebooks" / f"{stem}.ipynb")
    notebook(tmp_path / "figures" / "notebooks" / "01_naive.ipynb")
    return tmp_path


def header(path):
    cells = json.loads(path.read_text())["cells"]
    return next(c["source"] for c in cells if published.HEADER_TAG in c["metadata"].get("tags", []))


def test_headers_are_one_line_from_the_status_files(repo):
    info = published.times(repo)
    paths = published.header_paths(repo)
    assert len(paths) == 4
    changed = published.rewrite_headers(paths, info)
    assert len(changed) == 4
    assert header(repo / "notebooks" / "01_naive.ipynb") == LINE
    assert header(repo / "figures" / "notebooks" / "01_naive.ipynb") == LINE
    assert "not timed in the published run" in header(repo / "notebooks" / "02_other.ipynb")
    assert published.rewrite_headers(paths, info) == []  # a second pass changes nothing
    assert "\n" not in header(repo / "notebooks" / "00_setup.ipynb")


def test_headers_without_a_published_run_come_from_the_earlier_times(tmp_path):
    earlier = {"gpu": "NVIDIA H100 80GB HBM3", "runs": {
        "full (one)": {"01_naive": {"status": "ok", "seconds": 80.0}},
        "full (two)": {"01_naive": {"status": "ok", "seconds": 90.0}},
        "workshop, cold compile caches": {"01_naive": {"status": "ok", "seconds": 15.0}}}}
    results.atomic_write_text(tmp_path / published.EARLIER_TIMES, json.dumps(earlier))
    notebook(tmp_path / "notebooks" / "01_naive.ipynb")
    info = published.times(tmp_path)
    published.rewrite_headers(published.header_paths(tmp_path), info)
    text = header(tmp_path / "notebooks" / "01_naive.ipynb")
    assert text.startswith("**On an H100** (the published runs): 90 s in the full preset; 15 s in the workshop")


def test_guide_block_totals_and_flags(repo):
    guide = repo / published.GUIDE
    guide.write_text(f"# Guide\n\nbefore\n{published.GUIDE_START}\nold\n{published.GUIDE_END}\nafter\n")
    assert published.update_guide(guide, repo)
    text = guide.read_text()
    assert text.startswith("# Guide\n\nbefore\n") and text.endswith(f"{published.GUIDE_END}\nafter\n")
    assert "| 01 naive | 61 | 2.5 | 12 |" in text
    assert "| 02 other | – | – | 70 (over 60 s) |" in text
    # 02 failed in the full run: the full total says it leaves 02 out
    assert "**74** (1.2 min; budget 1200; without 02: not timed)" in text and "**87**" in text
    assert "budget 300)" in text  # every workshop notebook timed: nothing left out
    assert not published.update_guide(guide, repo)
    guide.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        published.update_guide(guide, repo)


def test_publish_workshop_refuses_a_partial_or_cpu_run(repo):
    run_root = repo / "runs" / "workshop"
    status = json.loads((repo / published.WORKSHOP_STATUS).read_text())
    results.atomic_write_text(run_root / "status.json", json.dumps(status))
    assert published.publish_workshop(run_root, repo).exists()
    status["02_other"]["status"] = "failed"
    results.atomic_write_text(run_root / "status.json", json.dumps(status))
    with pytest.raises(ValueError, match="02_other"):
        published.publish_workshop(run_root, repo)
    copy = published.publish_workshop(run_root, repo, partial=True)  # named, not hidden
    assert json.loads(copy.read_text())["_unfinished"] == ["02_other"]
    status["02_other"]["status"] = "ok"
    status[published.RUN_KEY]["gpu"] = "cpu"
    results.atomic_write_text(run_root / "status.json", json.dumps(status))
    with pytest.raises(ValueError, match="CUDA"):
        published.publish_workshop(run_root, repo)


def test_the_committed_guide_shows_the_rendered_times(tmp_path):
    copy = tmp_path / "guide.md"
    copy.write_text((results.repo_root() / published.GUIDE).read_text())
    assert not published.update_guide(copy, results.repo_root()), \
        "run 'python -m helpers.course.report --guide'"


def test_report_command_line(repo, monkeypatch, capsys):
    monkeypatch.setattr(results, "repo_root", lambda: repo)
    (repo / published.GUIDE).write_text(f"{published.GUIDE_START}\n{published.GUIDE_END}\n")
    assert report.main(["--headers", "--guide"]) == 0
    out = capsys.readouterr().out
    assert "4 notebook(s) rewritten" in out and "guide updated" in out


def test_the_guide_quotes_each_lessons_answer_from_the_workshop_run(repo):
    """--publish-workshop keeps each executed notebook's last 'In one line' print; the guide
    renders them, naming a notebook that did not finish."""
    run_root = repo / "runs" / "workshop"
    status = json.loads((repo / published.WORKSHOP_STATUS).read_text())
    status["02_other"]["status"] = "interrupted"
    results.atomic_write_text(run_root / "status.json", json.dumps(status))
    cell = {"cell_type": "code", "metadata": {}, "source": "", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": ["In one line: old\n"]},
        {"output_type": "stream", "name": "stdout", "text": "x\nIn one line: 1.4x faster (1.3–1.5).\n"}]}
    results.atomic_write_text(run_root / "01_naive.ipynb", json.dumps({"cells": [cell]}))
    published.publish_workshop(run_root, repo, partial=True)
    block = published.lines_block(repo)
    assert "- **01**: 1.4x faster (1.3–1.5)." in block
    assert "- **02**: did not finish in that run" in block
    assert "- **00**: no answer line recorded" in block


def test_the_header_names_reserved_memory_where_it_differs_from_allocated():
    """Round 23: a student asked what the naive loop held, not only what it allocated at once."""
    info = {"gpu": "NVIDIA H100 80GB HBM3", "one_run": True, "notebooks": {
        "02_kv": {"full_s": 57.7, "peak_gib": 2.1, "reserved_gib": 54.9, "workshop_s": 54.4},
        "09_sync": {"full_s": 28.7, "peak_gib": 0.2, "reserved_gib": 0.2, "workshop_s": 15.3}}}
    assert published.header_line("02_kv", info).startswith(
        "**On an H100** (the published run): 58 s in the full preset, at most about 2.1 GiB "
        "of GPU memory allocated at once (the weights and every live tensor together; the allocator "
        "reserving 54.9 GiB); 54 s in the workshop")
    assert "reserved" not in published.header_line("09_sync", info)
    # round 25: only where the lesson reads the reserve (02's naive loop, 03's allocator)
    info["notebooks"]["10_graph"] = info["notebooks"]["02_kv"]
    assert "reserved" not in published.header_line("10_graph", info)
    # round 27: and 01's naive loop, whose Memory note reads the reserve
    info["notebooks"]["01_naive"] = {"full_s": 67.9, "peak_gib": 4.3, "reserved_gib": 78.0}
    assert "; the allocator reserving 78.0 GiB)" in published.header_line("01_naive", info)


def test_the_published_peaks_read_either_column(tmp_path):
    (tmp_path / "figures" / "data").mkdir(parents=True)
    pd.DataFrame({"peak_allocated_bytes": [2 * 2**30, 1 * 2**30],
                  "peak_reserved_bytes": [40 * 2**30, 2 * 2**30]}).to_csv(
        tmp_path / "figures" / "data" / "02_kv.csv", index=False)
    results.atomic_write_text(tmp_path / "figures" / "manifest.json", json.dumps(
        {"tables": {"data/02_kv.csv": {"notebook": "02_kv.ipynb"}}}))
    assert published._published_peaks(tmp_path) == {"peak_allocated_bytes": {"02_kv": 2.0},
                                                     "peak_reserved_bytes": {"02_kv": 40.0}}
