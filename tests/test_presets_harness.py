"""Parameter validation, the harness's statistics and the results files, on known inputs."""
import json
import math

import pytest
import torch

from helpers.course import analysis, harness, results
from helpers.course.presets import ParameterError, resolve_params


def test_presets_resolve_and_overrides():
    p = resolve_params("01", "smoke")
    assert p.preset == "smoke" and p.model == "tiny" and p.device == "cpu"
    q = resolve_params("01", "smoke", batch_size=5, seq_lens=[3, 6])
    assert q.batch_size == 5 and q.seq_lens == [3, 6] and q.repeats == p.repeats
    full = resolve_params.__globals__["preset_values"]("01", "full")
    assert full["batch_size"] == 32 and full["seq_lens"] == [100, 200, 300]


def test_auto_preset_is_smoke_without_a_gpu(capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert resolve_params("01", "auto").preset == "smoke"
    assert "no CUDA GPU" in capsys.readouterr().out


@pytest.mark.parametrize("kwargs, message", [
    (dict(preset="fast"), r"unknown preset 'fast'; choose one of \['full', 'workshop', 'smoke'\]"),
    (dict(batch_size=0), r"batch_size must be >= 1, got 0"),
    (dict(batch_size=2.5), r"batch_size must be an integer >= 1, got 2.5 \(float\)"),
    (dict(batch_size="8"), r"batch_size must be an integer"),
    (dict(batch_size=True), r"batch_size must be an integer"),
    (dict(repeats=-1), r"repeats must be >= 1"),
    (dict(seq_lens=[]), r"seq_lens must be a non-empty list"),
    (dict(seq_lens=[10, 0]), r"seq_lens\[1\] must be >= 1"),
    (dict(seq_lens=[300]), r"seq_lens contains 300: with a prompt of 4 tokens that makes 304 "
                           r"positions, beyond the 256 that model 'tiny' has. Use lengths <= 252"),
    (dict(device="gpu"), r"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu'"),
    (dict(colour="red"), r"notebook 01 has no parameter 'colour'; its parameters are"),
])
def test_bad_parameters_fail_with_a_clear_message(kwargs, message):
    preset = kwargs.pop("preset", "smoke")
    with pytest.raises(ParameterError, match=message):
        resolve_params("01", preset, **kwargs)


def test_full_gpt2_lengths_are_checked_against_1024_positions():
    with pytest.raises(ParameterError, match="beyond the 1024 that model 'gpt2' has"):
        resolve_params("01", "smoke", model="gpt2", seq_lens=[1010], prompt_len=16)


def test_cuda_requested_without_a_gpu_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ParameterError, match="no CUDA GPU.*preset='smoke'"):
        resolve_params("01", "smoke", device="cuda")


def test_summarize_on_known_times():
    assert harness.summarize([3.0, 1.0, 2.0, 10.0]) == {
        "repeats": 4, "median_s": 2.5, "min_s": 1.0, "max_s": 10.0}
    with pytest.raises(ValueError):
        harness.summarize([])


def test_fragmentation_on_known_inputs():
    assert harness.fragmentation_pct(1000, 750) == 25.0
    assert harness.fragmentation_pct(1000, 1000) == 0.0
    assert math.isnan(harness.fragmentation_pct(0, 0))


def test_bench_row_has_the_shared_schema_and_counts_tokens():
    calls = []
    row, out = harness.bench_row("m", lambda: calls.append(1) or 42, device="cpu", batch_size=4,
                                 seq_len=10, repeats=3, warmup=2)
    assert out == 42 and len(calls) == 5
    assert set(results.REQUIRED_COLUMNS) <= set(row)
    assert row["status"] == "ok" and row["repeats"] == 3
    assert row["tokens_per_s"] == pytest.approx(40 / row["median_s"])


def test_growth_exponent_recovers_known_powers():
    n = [100, 200, 400]
    assert analysis.growth_exponent(n, [x ** 2 * 1e-6 for x in n]) == pytest.approx(2.0)
    assert analysis.growth_exponent(n, [3 * x for x in n]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        analysis.growth_exponent([100, 100], [1, 2])


def test_save_table_writes_csv_and_record(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RUN_DIR", str(tmp_path))
    run = results.start_notebook("99_demo", resolve_params("01", "smoke"), quiet=True)
    row, _ = harness.bench_row("m", lambda: None, device="cpu", batch_size=1, seq_len=1, repeats=1)
    frame = run.save_table([row], "99_demo")
    assert list(frame.columns[:len(results.REQUIRED_COLUMNS)]) == results.REQUIRED_COLUMNS
    assert (tmp_path / "data" / "99_demo.csv").exists()
    record = json.loads((tmp_path / "outputs" / "99_demo.json").read_text())
    assert record["files"] == [{"kind": "table", "path": "data/99_demo.csv", "rows": 1}]
    assert record["env"]["torch"] == torch.__version__
    with pytest.raises(ValueError, match="lacks the shared columns"):
        run.save_table([{"method": "x"}], "99_bad")
    assert not list(tmp_path.glob("data/.*.tmp")), "no temporary files are left behind"


def test_a_failed_row_is_saved_then_fails_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RUN_DIR", str(tmp_path))
    run = results.start_notebook("99_demo", resolve_params("01", "smoke"), quiet=True)
    rows = [{"method": "fine", "status": "ok"}, {"method": "oom", "status": "oom"},
            {"method": "broken", "status": results.FAILED, "error": "RuntimeError: no kernel"}]
    with pytest.raises(results.MeasurementFailed, match="1 failed row.*broken: RuntimeError: no kernel"):
        run.save_table(rows, "99_demo", require_schema=False)
    assert len(results.load_table("99_demo")) == 3, "the evidence is written before the error"
    record = json.loads((tmp_path / "outputs" / "99_demo.json").read_text())
    assert record["failed"] == ["99_demo: broken: RuntimeError: no kernel"]
    run.save_table(rows[:2], "99_demo_ok", require_schema=False)  # out of memory is a result


def test_runs_are_separate_objects_and_skips_are_recorded(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COURSE_RUN_DIR", str(tmp_path))
    cpu = results.start_notebook("98_cpu", {"preset": "smoke", "device": "cpu"}, quiet=True)
    gpu = results.start_notebook("97_gpu", {"preset": "full", "device": "cuda"}, quiet=True)
    assert cpu.skip_unless_cuda("the profiler") is True
    assert "SKIPPED on cpu: the profiler (needs a CUDA GPU)" in capsys.readouterr().out
    assert gpu.skip_unless_cuda("the profiler") is False
    records = {n: json.loads((tmp_path / "outputs" / f"{n}.json").read_text()) for n in ("98_cpu", "97_gpu")}
    assert records["98_cpu"]["skipped"] == [{"what": "the profiler", "device": "cpu"}]
    assert records["97_gpu"]["skipped"] == []


@pytest.mark.parametrize("text, expected", [
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct 30 2025\n", "580.159.04"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n",
     "570.86.15"),
    ("GCC version:  gcc version 12.3.0\n", None),
])
def test_driver_version_is_read_from_the_kernel_module_text(text, expected):
    from helpers.course.env import proc_driver_version

    assert proc_driver_version(text) == expected
