"""``run_all.sh`` before any notebook: the install a user gets, a bad environment, its options.

``run_all.sh`` runs from a copy of the repository in a temporary folder with a stand-in
``python3`` on PATH: it logs every call, fakes ``venv`` and ``pip`` (nothing is downloaded),
reports the dependencies missing until pip has "installed" the project, and hands everything
else (``-m helpers.course.runner``, the CPU index probe) to the real interpreter. A fake ``nvidia-smi``
makes the machine a GPU machine. CI (``.ci/run``) goes through the same install path for real.
"""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

FAKE_PYTHON = r"""#!/bin/bash
echo "$*" >> "$FAKE_LOG"
if [[ -n "${FAKE_CRASH:-}" && $1 == -c && $2 == "import helpers"* ]]; then
  echo "terminate called after throwing an instance of 'c10::Error'" >&2; exit 134
fi
case "$1 $2" in
  "-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0 ;;
  "-m pip")
    if [[ "$*" == *--dry-run* ]]; then  # the report a dry run would write: FAKE_REPORT's
      prev=""; for a in "$@"; do [[ $prev == --report && -n "${FAKE_REPORT:-}" ]] && cp "$FAKE_REPORT" "$a"; prev=$a; done
      exit 0
    fi
    [[ "$*" == *" -e "* ]] && touch "$FAKE_STATE/installed"; echo "pip: $*"; exit 0 ;;
  "-m pytest"|"-m ipykernel"|"-m jupyterlab"|"-m helpers.course.site") exit 0 ;;
  "-m helpers.course.runner") [[ $3 == --check-env ]] || exit 0 ;;
esac
if [[ $1 == -c && $2 == "import helpers"* ]]; then
  [[ -f "$FAKE_STATE/installed" ]] && exit 0
  echo "ModuleNotFoundError: No module named 'torch'" >&2; exit 1
fi
if [[ $1 == -c && $2 == *"print(sys.executable)"* ]]; then echo "$0"; exit 0; fi
exec REAL_PYTHON "$@"
"""


@pytest.fixture
def machine(tmp_path):
    """A fresh clone's worth of files, a fake python3, and a way to run ``run_all.sh``."""
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy2(REPO / "run_all.sh", clone / "run_all.sh")
    shutil.copytree(REPO / "helpers", clone / "helpers",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "notebooks", clone / "notebooks",
                    ignore=shutil.ignore_patterns("solutions", ".ipynb_checkpoints"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python3"
    fake.write_text(FAKE_PYTHON.replace("REAL_PYTHON", sys.executable))
    fake.chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    log = tmp_path / "calls.log"
    log.touch()

    def run(*args, gpu=False, uid=None, **env):
        if uid is not None:  # who runs it, as 'id -u' says
            fake_id = bin_dir / "id"
            fake_id.write_text(f"#!/bin/sh\necho {uid}\n")
            fake_id.chmod(0o755)
        if gpu:
            smi = bin_dir / "nvidia-smi"
            smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)'\n")
            smi.chmod(0o755)
        full_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path),
                    "FAKE_LOG": str(log), "FAKE_STATE": str(state),
                    "TORCH_CPU_INDEX": (tmp_path / "no-index").as_uri(), **env}
        proc = subprocess.run(["./run_all.sh", *args], cwd=clone, env=full_env,
                              capture_output=True, text=True, timeout=60)
        proc.calls = log.read_text().splitlines()
        return proc

    return {"run": run, "clone": clone, "tmp": tmp_path}


def pip_calls(proc):
    """The pip calls that install (the dry run that only asks what would be installed apart)."""
    return [c for c in proc.calls if c.startswith("-m pip") and "--dry-run" not in c]


def torch_report(tmp_path, cuda: bool, url: str):
    """A pip dry-run report for torch: the CUDA build (it requires NVIDIA's libraries) or not."""
    import json

    requires = ["nvidia-cuda-runtime-cu12==12.8.90; platform_system == 'Linux'"] if cuda else []
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"install": [{
        "metadata": {"name": "torch", "version": "2.13.0" if cuda else "2.13.0+cpu",
                     "requires_dist": requires + ["filelock"]},
        "download_info": {"url": url}}]}))
    return str(path)


@pytest.fixture
def cpu_index(tmp_path):
    """A reachable package index on 127.0.0.1 that has a torch/ page."""
    (tmp_path / "index" / "torch").mkdir(parents=True)
    (tmp_path / "index" / "torch" / "index.html").write_text("<html></html>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                directory=str(tmp_path / "index"))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_cpu_machine_says_what_it_installs_then_uses_the_cpu_index(machine, cpu_index):
    index = cpu_index
    proc = machine["run"]("--smoke", TORCH_CPU_INDEX=index)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    plan = out.index("No NVIDIA GPU found")
    assert "CPU build of" in out and "MB to download" in out and "GB" in out
    assert plan < out.index("[2/3] PyTorch")  # said before anything is downloaded
    calls = pip_calls(proc)
    assert f"-m pip install --index-url {index} torch" in calls
    assert calls[-1] == "-m pip install -e .[test]"
    assert not any("--quiet" in c or " -q" in c for c in calls), calls  # progress stays visible
    assert proc.calls[-1] == "-m helpers.course.runner --smoke"  # then runs the course


def test_unreachable_cpu_index_falls_back_to_the_plain_requirement(machine):
    report = torch_report(machine["tmp"], cuda=False,
                          url="file:///opt/wheels/torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl")
    proc = machine["run"]("--test", TORCH_SPEC="torch==2.13.0", COURSE_EXTRAS="test,site",
                          FAKE_REPORT=report)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "is not reachable" in out
    # The build pip's default index gives was asked for (a dry run) and said before pip starts.
    assert "CPU build already on this machine" in out and "1.6 GB" in out
    assert out.index("already on this machine") < out.index("[1/3] pip")
    assert any("--dry-run" in c and "torch==2.13.0" in c for c in proc.calls)
    assert pip_calls(proc)[1:] == ["-m pip install torch==2.13.0", "-m pip install -e .[test,site]"]
    assert proc.calls[-1] == "-m pytest"


@pytest.mark.parametrize("report", ["cuda", None])
def test_only_the_cuda_build_is_said_with_its_size_and_the_way_out_before_pip(machine, report):
    """No GPU, no CPU index: where pip's default index has only the CUDA build (or pip cannot
    tell), the install says so, with its size and TORCH_CPU_INDEX / TORCH_SPEC, before pip."""
    env = {"FAKE_REPORT": torch_report(machine["tmp"], cuda=True, url="https://files.example/torch-2.13.0-cp311-manylinux_2_28_x86_64.whl")} if report else {}
    proc = machine["run"]("--smoke", **env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    warning = out.index("WARNING:")
    assert warning < out.index("[1/3] pip")
    said = out[warning:out.index("[1/3] pip")]
    assert "CUDA build" in said and "2.7 GB" in said and "6 GB" in said
    assert "TORCH_CPU_INDEX" in said and "TORCH_SPEC" in said
    assert "350 MB" not in out  # the CPU build's size is not promised
    assert "-m pip install torch" in pip_calls(proc)


def test_gpu_machine_gets_the_default_build_and_its_size(machine):
    proc = machine["run"]("--smoke", gpu=True)
    assert proc.returncode == 0, proc.stderr
    assert "CUDA libraries" in proc.stdout and "3 GB" in proc.stdout
    assert "-m pip install torch" in pip_calls(proc)
    assert not any("--index-url" in c for c in pip_calls(proc))


def test_a_crashing_interpreter_is_reported_not_reinstalled(machine):
    proc = machine["run"]("--smoke", FAKE_CRASH="1")
    assert proc.returncode == 2
    assert "crashed (exit status 134" in proc.stderr and "c10::Error" in proc.stderr
    assert "Nothing was installed" in proc.stderr
    assert not pip_calls(proc) and not (machine["clone"] / ".venv").exists()


def test_a_python_that_does_not_exist_is_an_error(machine):
    proc = machine["run"]("--smoke", PYTHON="/nonexistent/python")
    assert proc.returncode == 2
    assert "PYTHON=/nonexistent/python: no such interpreter" in proc.stderr
    assert not proc.calls and not (machine["clone"] / ".venv").exists()


def test_a_chosen_python_without_dependencies_is_an_error_not_a_venv(machine):
    proc = machine["run"]("--smoke", PYTHON=str(machine["tmp"] / "bin" / "python3"))
    assert proc.returncode == 2 and "cannot import the course's dependencies" in proc.stderr
    assert not pip_calls(proc) and not (machine["clone"] / ".venv").exists()


@pytest.mark.parametrize("var", ["PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"])
def test_bad_allocator_setting_fails_before_torch_and_installs_nothing(machine, var):
    proc = machine["run"]("--smoke", **{var: "garbage"})
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: environment variable {var}: allocator setting 'garbage'")
    assert proc.calls == ["-m helpers.course.runner --check-env --smoke"]  # no torch, no pip
    for mode in ("--test", "--lab"):
        assert machine["run"](mode, **{var: "garbage"}).returncode == 2


def test_the_environment_check_never_imports_torch():
    code = ("import os, sys\nos.environ['PYTORCH_ALLOC_CONF'] = 'expandable_segments:maybe'\n"
            "from helpers.course import runner\ncode = runner.main(['--check-env'])\n"
            "print(code, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.stdout.split() == ["2", "False"], out.stderr
    assert "must be True or False" in out.stderr


def test_course_run_dir_cannot_point_into_figures(machine):
    for mode in ("--smoke", "--lab", "--test"):
        proc = machine["run"](mode, COURSE_RUN_DIR=str(machine["clone"] / "figures" / "x"))
        assert proc.returncode == 2 and "COURSE_RUN_DIR" in proc.stderr, (mode, proc.stderr)
        assert "only a full run on a CUDA GPU updates" in proc.stderr


@pytest.mark.parametrize("args, expected", [
    (["--quiet", "--lab", "--no-browser"], "-m jupyterlab"),
    (["--lab", "--port", "8890", "--verbose"], "-m jupyterlab"),
    (["--test", "-m", "not notebook", "-x"], "-m pytest -m not notebook -x"),
    (["-x", "--test", "--help"], "-m pytest -x --help"),
    (["--only", "01", "--resume", "--smoke", "--quiet"], "-m helpers.course.runner --only 01 --resume --smoke --quiet"),
])
def test_options_in_any_order(machine, args, expected):
    (machine["tmp"] / "state" / "installed").touch()
    proc = machine["run"](*args)
    assert proc.returncode == 0, proc.stderr
    last = proc.calls[-1]
    assert last.startswith(expected), proc.calls
    if "jupyterlab" in expected:
        assert "--quiet" not in last and "--verbose" not in last
        assert ("--no-browser" in last) or ("--port 8890" in last)
        assert any(c.startswith("-m ipykernel install") for c in proc.calls)


def test_help_anywhere_before_the_mode(machine):
    proc = machine["run"]("--smoke", "--help")
    assert proc.returncode == 0 and "Usage: ./run_all.sh" in proc.stdout and not proc.calls


def test_list_answers_in_under_a_second():
    env = {**os.environ, "PYTHON": sys.executable}
    start = time.perf_counter()
    proc = subprocess.run(["./run_all.sh", "--list"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=30)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("00  00_setup.ipynb")
    assert elapsed < 1.0, f"--list took {elapsed:.2f} s"


def test_ci_installs_through_the_users_path():
    ci = (REPO / ".ci" / "run").read_text()
    assert "pip install" not in ci  # no install of its own: run_all.sh installs
    assert "TORCH_SPEC=" in ci and "./run_all.sh --test" in ci
    assert "COURSE_EXTRAS=test,site" in ci and "COURSE_REQUIRE_BROWSER=1" in ci
    assert "apt-get install -y --no-install-recommends chromium" in ci


def test_readme_documents_the_cpu_index_and_install_sizes():
    readme = (REPO / "README.md").read_text()
    script = (REPO / "run_all.sh").read_text()
    assert CPU_INDEX in readme and CPU_INDEX in script and "TORCH_SPEC" in readme
    section = readme[readme.index("## Two commands"):readme.index("## The notebooks")]
    assert "CPU" in section and "GPU" in section and "GB" in section and "min" in section


def test_sh_is_told_to_use_bash(machine):
    proc = subprocess.run(["sh", "run_all.sh", "--smoke"], cwd=machine["clone"], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2
    assert "bash script" in proc.stderr and "pipefail" not in proc.stderr


def test_a_usage_error_answers_at_once_with_the_real_options():
    env = {**os.environ, "PYTHON": sys.executable}
    start = time.perf_counter()
    proc = subprocess.run(["./run_all.sh", "--onyl", "02"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=30)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 2
    assert "unrecognized arguments: --onyl 02" in proc.stderr
    usage = proc.stderr.splitlines()[0]
    assert usage.startswith("usage: ./run_all.sh") and "--check-env" not in proc.stderr
    for option in ("--lab", "--test", "--site", "--only", "--smoke", "--preset"):
        assert option in usage, usage
    assert elapsed < 1.0, f"the usage error took {elapsed:.2f} s"


@pytest.mark.parametrize("broken", ["gone", "not executable"])
def test_a_broken_venv_says_remove_it_and_installs_nothing(machine, broken):
    venv_bin = machine["clone"] / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    if broken == "gone":
        (venv_bin / "python").symlink_to("/usr/bin/python3.0-removed")
    else:
        (venv_bin / "python").write_text("#!/bin/sh\n")
        (venv_bin / "python").chmod(0o644)
    proc = machine["run"]("--smoke", uid=1000)
    assert proc.returncode == 2
    assert ".venv is broken" in proc.stderr and "rm -rf .venv" in proc.stderr
    assert "python3-venv" not in proc.stderr and not pip_calls(proc)


@pytest.mark.parametrize("uid", [0, 1000])
def test_lab_as_root_passes_allow_root_and_says_so(machine, uid):
    (machine["tmp"] / "state" / "installed").touch()
    proc = machine["run"]("--lab", "--no-browser", uid=uid)
    assert proc.returncode == 0, proc.stderr
    lab = [c for c in proc.calls if c.startswith("-m jupyterlab")]
    assert lab and (("--allow-root" in lab[-1]) == (uid == 0)), lab
    assert ("passing --allow-root" in proc.stdout) == (uid == 0)


def test_site_builds_in_the_projects_environment(machine):
    (machine["tmp"] / "state" / "installed").touch()
    proc = machine["run"]("--site", "--out", "elsewhere")
    assert proc.returncode == 0, proc.stderr
    assert proc.calls[-1] == "-m helpers.course.site --out elsewhere"
    assert any(c.startswith("-c import") and "nbconvert" in c for c in proc.calls)
