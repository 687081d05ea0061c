"""The published set in figures/ is one run (issue 24): one run id, commit, GPU and CPU in the
manifest, named by every figure, table and notebook entry, by every published notebook's
metadata and by the published status file. The check is tried on synthetic runs (it must be
able to fail), on the runner's own promotion, and on the committed figures/."""
from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
import torch

from helpers.course import published, results, runner
from test_reliability import _gpu_execute, make_notebook

RUN_A = {"id": "20261123T120000Z-abc1234", "commit": "abc1234def", "gpu": "NVIDIA H100 80GB HBM3",
         "cpu": "Intel(R) Xeon(R) Processor", "start": "2026-11-23T12:00:00+00:00",
         "end": "2026-11-23T12:19:00+00:00"}
RUN_B = {**RUN_A, "id": "20261123T090000Z-0ff1ce0", "commit": "0ff1ce0aaa", "gpu": "NVIDIA H200"}


def write_published(figures, runs_of):
    """A published set: notebook stem -> the run it came from."""
    manifest = {"figures": {}, "tables": {}}
    status = {}
    for stem, run in runs_of.items():
        entry = {"notebook": f"{stem}.ipynb", "gpu": run["gpu"], "run": run["id"], "commit": run["commit"]}
        manifest["figures"][f"{stem}.png"] = entry
        manifest["tables"][f"data/{stem}.csv"] = entry
        published.record_run(manifest, run, f"{stem}.ipynb")
        nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        results.atomic_write_text(figures / "notebooks" / f"{stem}.ipynb", json.dumps(nb))
        published.stamp_notebook(figures / "notebooks" / f"{stem}.ipynb", run, "full")
        status[stem] = {"status": "ok", "seconds": 10.0, "run": run["id"]}
    status[published.RUN_KEY] = next(iter(runs_of.values()))
    results.atomic_write_text(figures / "manifest.json", json.dumps(manifest))
    results.atomic_write_text(figures / published.RUN_STATUS, json.dumps(status))
    return manifest


def test_one_run_passes(tmp_path):
    write_published(tmp_path, {"00_a": RUN_A, "01_b": RUN_A})
    assert published.one_run_problems(tmp_path) == []


def test_two_runs_fail(tmp_path):
    write_published(tmp_path, {"00_a": RUN_A, "01_b": RUN_B})
    problems = published.one_run_problems(tmp_path)
    assert any("names 2 runs" in p for p in problems)


def test_a_notebook_from_another_run_fails(tmp_path):
    write_published(tmp_path, {"00_a": RUN_A, "01_b": RUN_A})
    published.stamp_notebook(tmp_path / "notebooks" / "01_b.ipynb", RUN_B, "full")
    assert any("notebooks/01_b.ipynb" in p for p in published.one_run_problems(tmp_path))


def test_an_entry_without_a_run_or_a_missing_status_fails(tmp_path):
    manifest = write_published(tmp_path, {"00_a": RUN_A})
    del manifest["tables"]["data/00_a.csv"]["run"]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert any("data/00_a.csv" in p for p in published.one_run_problems(tmp_path))
    (tmp_path / published.RUN_STATUS).unlink()
    assert any("missing" in p for p in published.one_run_problems(tmp_path))


def test_a_manifest_of_the_old_format_fails(tmp_path):
    entry = {"notebook": "00_a.ipynb", "gpu": "H100"}
    (tmp_path / "manifest.json").write_text(json.dumps({"figures": {"00_a.png": entry}, "tables": {}}))
    assert published.one_run_problems(tmp_path)


@pytest.fixture
def gpu_course(tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    monkeypatch.setattr(results, "figures_dir", lambda: figures)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(published, "_gpu_name", lambda: "NVIDIA H100 80GB HBM3")
    paths = [make_notebook(tmp_path / "notebooks" / f"0{i}_topic.ipynb", "x = 1") for i in range(2)]
    return {"figures": figures, "paths": paths, "run_root": tmp_path / "run"}


def test_a_full_run_publishes_one_run_and_resume_keeps_its_id(gpu_course, monkeypatch):
    fake = _gpu_execute("ok")

    def execute(path, run_root, preset, echo=False, parameters=None):  # with its executed copy
        entry = fake(path, run_root, preset, echo, parameters)
        results.atomic_write_text(run_root / path.name, path.read_text())
        return entry

    monkeypatch.setattr(runner, "execute", execute)
    figures, run_root = gpu_course["figures"], gpu_course["run_root"]
    # The run stops after the first notebook; --resume runs the second within the same run.
    runner.run(gpu_course["paths"][:1], "full", run_root, echo=False)
    first = json.loads((run_root / "status.json").read_text())[published.RUN_KEY]
    runner.run(gpu_course["paths"], "full", run_root, resume=True, echo=False)
    status = json.loads((run_root / "status.json").read_text())
    assert status[published.RUN_KEY]["id"] == first["id"] and status[published.RUN_KEY]["end"]
    assert {status[p.stem]["run"] for p in gpu_course["paths"]} == {first["id"]}
    assert published.one_run_problems(figures) == []
    manifest = json.loads((figures / "manifest.json").read_text())
    (run,) = manifest["runs"].values()
    assert run["id"] == first["id"] and run["gpu"] == "NVIDIA H100 80GB HBM3" and run["end"]
    assert json.loads((figures / published.RUN_STATUS).read_text())[published.RUN_KEY]["id"] == run["id"]
    # A new run (no --resume) that publishes one notebook makes the set two runs: the test fails.
    later = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    monkeypatch.setattr(published, "_now", lambda now=None: (now or later).isoformat())
    real_identity = published.run_identity
    monkeypatch.setattr(published, "run_identity",
                        lambda status, resume=False: real_identity(status, resume, now=later))
    runner.run(gpu_course["paths"][1:], "full", run_root, echo=False)
    assert json.loads((run_root / "status.json").read_text())[published.RUN_KEY]["id"] != first["id"]
    assert any("names 2 runs" in p for p in published.one_run_problems(figures))


def test_run_identity_is_new_unless_resumed():
    now = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.timezone.utc)
    fresh = published.run_identity({}, resume=False, now=now)
    assert fresh["id"].startswith("20261123T120000Z-") and fresh["start"].startswith("2026-11-23T12:00")
    assert {"commit", "gpu", "cpu"} <= set(fresh)
    assert published.run_identity({published.RUN_KEY: RUN_A}, resume=True)["id"] == RUN_A["id"]
    assert published.run_identity({published.RUN_KEY: RUN_A}, resume=False, now=now)["id"] != RUN_A["id"]


def test_a_resume_at_another_commit_is_recorded(monkeypatch):
    """A run resumed after the sources moved keeps its id and names the commit it resumed at."""
    now = datetime.datetime(2026, 11, 26, 17, 50, tzinfo=datetime.timezone.utc)
    monkeypatch.setenv("COURSE_COMMIT", RUN_A["commit"])
    same = published.run_identity({published.RUN_KEY: RUN_A}, resume=True, now=now)
    assert same["id"] == RUN_A["id"] and "resumed_at_commits" not in same
    monkeypatch.setenv("COURSE_COMMIT", "f" * 40)
    moved = published.run_identity({published.RUN_KEY: RUN_A}, resume=True, now=now)
    assert moved["id"] == RUN_A["id"] and moved["commit"] == RUN_A["commit"]
    assert moved["resumed_at_commits"] == {"2026-11-26T17:50:00+00:00": "f" * 40}


def test_the_committed_figures_are_one_run():
    problems = published.one_run_problems(results.figures_dir())
    assert not problems, "figures/ is not one run:\n" + "\n".join(problems[:20])


def test_course_commit_names_the_commit_of_a_copied_tree(monkeypatch, tmp_path):
    """A tree copied to a GPU host can carry a stale .git (the 14:00 run of 2026-11-23 recorded
    the session's first commit, '-dirty', for a tree at a later commit): $COURSE_COMMIT, set by
    whoever copied the tree, wins; without it, git's answer; without git, 'unknown'."""
    from helpers.course import published
    monkeypatch.setenv("COURSE_COMMIT", "abc1234")
    assert published.git_commit() == "abc1234"
    monkeypatch.delenv("COURSE_COMMIT")
    assert published.git_commit(tmp_path) == "unknown"  # not a git repository


def test_the_published_copies_links_resolve_from_their_folder():
    """The lessons link docs as ../docs/... from notebooks/; a published copy sits one folder
    deeper, so its links are rewritten when it is published (published.relink)."""
    import re
    folder = Path(__file__).resolve().parent.parent / "figures" / "notebooks"
    broken = []
    for path in sorted(folder.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            text = re.sub(r"```.*?```|`[^`]*`", "", "".join(cell["source"]), flags=re.S)  # code
            for url in re.findall(r"\]\(([^)#\s]+)", text):
                if not re.match(r"^[a-z]+:", url) and not (folder / url).exists():
                    broken.append(f"{path.name}: {url}")
    assert not broken, broken


def test_relink_rewrites_only_the_docs_links():
    from helpers.course import published
    nb = {"cells": [{"cell_type": "markdown", "source": ["see ![x](../docs/img/a.png)\n", "and [y](02.ipynb)"]},
                    {"cell_type": "code", "source": ["# ](../docs/ stays\n"]}]}
    out = published.relink(nb)
    assert out["cells"][0]["source"] == ["see ![x](../../docs/img/a.png)\n", "and [y](02.ipynb)"]
    assert out["cells"][1]["source"] == ["# ](../docs/ stays\n"]


def test_a_resume_on_another_machine_is_recorded_and_refused(monkeypatch):
    """A --resume on another lent machine keeps the run id (the GPU and CPU names agree) but
    names the machine; such a run is not one run's timings: one_run_problems refuses it."""
    now = datetime.datetime(2026, 11, 28, 12, 25, tzinfo=datetime.timezone.utc)
    monkeypatch.setattr(published, "host_id", lambda: "aaaa1111")
    started = published.run_identity({}, resume=False, now=now)
    assert started["host"] == "aaaa1111"
    here = published.run_identity({published.RUN_KEY: started}, resume=True, now=now)
    assert "resumed_on_hosts" not in here and published.mixed_hosts(here) == []
    monkeypatch.setattr(published, "host_id", lambda: "bbbb2222")
    there = published.run_identity({published.RUN_KEY: started}, resume=True, now=now)
    assert there["id"] == started["id"]
    assert there["resumed_on_hosts"] == {"2026-11-28T12:25:00+00:00": "bbbb2222"}
    (problem,) = published.mixed_hosts(there)
    assert "on another machine (host bbbb2222, started on aaaa1111)" in problem
    manifest = {}
    published.record_run(manifest, there, "07_stream_interleaving.ipynb")
    assert manifest["runs"][there["id"]]["resumed_on_hosts"] == there["resumed_on_hosts"]
    # a run recorded before hosts were named (no host) reads as one machine
    assert published.mixed_hosts(RUN_A) == []
    assert "resumed_on_hosts" not in published.run_identity({published.RUN_KEY: RUN_A}, resume=True)


def test_the_host_id_tells_two_gpus_apart_behind_one_host_name(monkeypatch):
    """Two lent machines can share a container's host name; their GPUs' UUIDs differ, and so
    must their host ids. Without a GPU the id is the host name's hash alone, and stable."""
    import types

    from helpers.course import env
    monkeypatch.setattr(env.platform, "node", lambda: "same-container-name")
    monkeypatch.setattr(env.torch.cuda, "is_available", lambda: False)
    cpu = env.host_id()
    assert cpu == env.host_id() and len(cpu) == 8
    monkeypatch.setattr(env.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(env.torch.cuda, "device_count", lambda: 1)
    ids = []
    for uuid in ("GPU-1111", "GPU-2222"):
        monkeypatch.setattr(env.torch.cuda, "get_device_properties",
                            lambda i, u=uuid: types.SimpleNamespace(uuid=u))
        ids.append(env.host_id())
    assert ids[0] != ids[1] and cpu not in ids


def test_a_resume_on_another_machine_says_so_when_it_starts(gpu_course, monkeypatch, capsys):
    """The runner says at once that a --resume landed on another machine (the run cannot be
    published as one), not only when publish.py refuses it after the device time is spent."""
    monkeypatch.setattr(runner, "execute", _gpu_execute("ok"))
    monkeypatch.setattr(published, "host_id", lambda: "aaaa1111")
    runner.run(gpu_course["paths"][:1], "full", gpu_course["run_root"], echo=False)
    assert "another machine" not in capsys.readouterr().out
    runner.run(gpu_course["paths"], "full", gpu_course["run_root"], resume=True, echo=False)
    assert "another machine" not in capsys.readouterr().out  # the same machine: nothing said
    monkeypatch.setattr(published, "host_id", lambda: "bbbb2222")
    runner.run(gpu_course["paths"], "full", gpu_course["run_root"], resume=True, echo=False)
    out = capsys.readouterr().out
    assert "on another machine (host bbbb2222, started on aaaa1111)" in out
    assert "start a new run (without --resume)" in out
