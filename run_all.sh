#!/usr/bin/env bash
# Reproduce the course: run every notebook headless and collect its tables and figures.
# Started by sh (dash, busybox), the bash lines below would fail on 'set -o pipefail': say so.
if [ -z "${BASH_VERSION:-}" ]; then
  echo "error: run_all.sh is a bash script: run it as ./run_all.sh or bash run_all.sh, not with sh." >&2
  exit 2
fi
set -euo pipefail
cd "$(dirname "$0")"

usage() {
  cat <<'USAGE'
Usage: ./run_all.sh [options]

Runs every notebook in notebooks/ in order with papermill, into runs/<preset>/, one status
line per notebook. On a CUDA GPU the default preset is 'full' and successful notebooks update
figures/; without one the 'smoke' preset runs (tiny model on the CPU) and figures/ is untouched.

Options (in any order):
  --lab [ARGS]     open the course in JupyterLab (repository root, kernel "fast-decoding" =
                   this project's interpreter); ARGS go to 'jupyter lab', e.g. --no-browser,
                   --port 8890, --ip 0.0.0.0 to serve a classroom
  --test [ARGS]    run the test suite (unit tests and every notebook in the smoke preset); the
                   other arguments go to pytest, e.g. --test -m "not notebook"
  --site [--out D] build the course website into site/ (or D), offline, in this environment
                   (installs the 'site' extra into .venv the first time); open site/index.html
  --smoke          run the smoke preset (tiny model, CPU is fine)
  --preset NAME    full | workshop | smoke
  --only NN[,NN]   run only these notebooks, e.g. --only 00,01,02
  --resume         skip notebooks that finished in the last run of this preset
  --list           list the notebooks and exit
  --verbose        echo every cell's output (by default it goes to runs/<preset>/NN_topic.log)
  --quiet          one line per notebook and the summary (the default)
  --help           this text

Environment:
  PYTHON           the interpreter (default: .venv/bin/python if present, else python3); it
                   must exist and have the dependencies
  TORCH_SPEC       the PyTorch requirement of the first install (default: torch)
  TORCH_CPU_INDEX  where a machine without an NVIDIA GPU gets the CPU build of PyTorch
                   (default: https://download.pytorch.org/whl/cpu; unreachable: pip's default
                   index, and the install says first which build, and how big, that gives)
  COURSE_EXTRAS    the project's extras to install (default: test)
When the dependencies are not importable, a .venv is created and the project installed there.
Something went wrong? See docs/troubleshooting.md.
USAGE
}

# The mode is the first --lab or --test, wherever it stands; with --test every other argument
# goes to pytest, with --lab to JupyterLab (less the runner's --quiet/--verbose), else to the runner.
MODE=run
ARGS=()
for arg in "$@"; do
  if [[ $MODE == run ]]; then
    case "$arg" in
      --lab) MODE=lab; continue ;;
      --test) MODE=test; continue ;;
      --site) MODE=site; continue ;;
      -h|--help) usage; exit 0 ;;
    esac
  fi
  ARGS+=("$arg")
done
if [[ $MODE == lab ]]; then
  KEEP=()
  for arg in "${ARGS[@]+"${ARGS[@]}"}"; do [[ $arg == --quiet || $arg == --verbose ]] || KEEP+=("$arg"); done
  ARGS=("${KEEP[@]+"${KEEP[@]}"}")
fi

fail() { echo "error: $*" >&2; exit 2; }

CHOSEN=${PYTHON:+1}
if [[ -n "${PYTHON:-}" ]]; then
  command -v "$PYTHON" >/dev/null 2>&1 ||
    fail "PYTHON=$PYTHON: no such interpreter. Give the path of a python3 (PYTHON=/usr/bin/python3), or unset PYTHON to use .venv."
  PY=$PYTHON
elif [[ -e .venv || -L .venv ]]; then
  # A .venv whose interpreter is gone (Python upgraded or removed, the folder copied from another
  # machine) or cannot run (another user's, noexec) cannot be repaired in place: a new one can.
  why=""
  if [[ ! -e .venv/bin/python ]]; then why="its interpreter .venv/bin/python is missing$([[ -L .venv/bin/python ]] && echo " (a link to $(readlink .venv/bin/python), which is gone)")"
  elif [[ ! -x .venv/bin/python ]]; then why="its interpreter .venv/bin/python is not executable by you"
  elif ! .venv/bin/python -c '' 2>/dev/null; then why="its interpreter .venv/bin/python does not start"
  elif [[ ! -w .venv ]]; then why="it is not writable by you (owner: $(stat -c %U .venv 2>/dev/null || echo unknown))"
  fi
  [[ -z $why ]] || fail ".venv is broken: $why. Remove it and re-run: rm -rf .venv && ./run_all.sh (the install makes a new one; or PYTHON=/path/to/python uses another interpreter)."
  PY=.venv/bin/python
else
  command -v python3 >/dev/null 2>&1 || fail "python3 not found: install Python 3.10 or newer."
  PY=python3
fi
ERR=$(mktemp)
trap 'rm -f "$ERR"' EXIT

# An interpreter killed by a signal (exit above 128) crashed: say so, with its last words.
check_crash() {  # exit status, what it was doing
  if (( $1 > 128 )); then
    echo "error: $PY crashed (exit status $1, signal $(kill -l $(($1 - 128)) 2>/dev/null || echo $(($1 - 128)))) while $2:" >&2
    tail -n 5 "$ERR" | sed 's/^/  /' >&2
    echo "Nothing was installed. The crash is in the interpreter or a native library, not a missing package; docs/troubleshooting.md says what to check." >&2
    exit 2
  fi
}

# The environment first, in pure Python (no torch): a CUDA build of PyTorch can abort inside
# 'import torch' on an allocator setting it cannot parse, which must not look like missing packages.
# The runner's own arguments are checked here too (same pure-Python pass), so a usage error
# answers at once, with the real options, instead of after 'import torch'.
CHECK=()
[[ $MODE == run ]] && CHECK=("${ARGS[@]+"${ARGS[@]}"}")
rc=0; "$PY" -m helpers.course.runner --check-env "${CHECK[@]+"${CHECK[@]}"}" 2>"$ERR" || rc=$?
check_crash "$rc" "checking the environment"
if (( rc != 0 )); then cat "$ERR" >&2; exit 2; fi

has_nvidia_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }

# Which build of PyTorch pip's default index would give for the requirement, without
# downloading it (a dry run reads the wheel's metadata): "cuda|cpu file|remote WHEEL" or "unknown".
torch_build() {
  local report out
  report=$(mktemp)
  out=unknown
  if "$PY" -m pip install --dry-run --quiet --no-deps --report "$report" --retries 0 --timeout 15 \
      "$1" >/dev/null 2>&1; then
    out=$("$PY" -c '
import json, re, sys
from urllib.parse import unquote
try:
    install = json.load(open(sys.argv[1])).get("install", [])
    meta, info = install[0]["metadata"], install[0]["download_info"]
    cuda = bool(re.search(r"\+cu\d", meta["version"])) or any(d.lower().startswith("nvidia-")
                                           for d in meta.get("requires_dist") or [])
    url = info["url"]
    where = "file" if url.startswith("file:") else "remote"
    print("cuda" if cuda else "cpu", where, unquote(url.rsplit("/", 1)[-1]))
except Exception:
    print("unknown")' "$report" 2>/dev/null || echo unknown)
  fi
  rm -f "$report"
  echo "$out"
}

install_project() {
  local spec=${TORCH_SPEC:-torch} index=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
  local extras=${COURSE_EXTRAS:-test} gpu=0 from=default build
  [[ $MODE == site && ,$extras, != *,site,* ]] && extras="$extras,site"
  has_nvidia_gpu && gpu=1
  echo "Dependencies not importable with $PY ($(tail -n 1 "$ERR"))."
  if [[ ! -x .venv/bin/python ]]; then
    python3 -m venv .venv || fail "could not create .venv with 'python3 -m venv' (Debian/Ubuntu: apt install python3-venv)."
  fi
  PY=.venv/bin/python
  # Where PyTorch will come from is decided before anything is downloaded, so that the size
  # said below is the size that follows.
  if (( ! gpu )) && "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=10)' "$index" 2>/dev/null; then
    from=cpu-index
  fi
  if (( gpu )); then
    echo "Installing into .venv: the project and PyTorch ('$spec') with its CUDA libraries:"
    echo "about 3 GB to download and a .venv of about 6 GB (an estimate), 5-15 min on a fast link."
  elif [[ $from == cpu-index ]]; then
    echo "No NVIDIA GPU found (nvidia-smi): installing into .venv the project and the CPU build of"
    echo "PyTorch ('$spec' from $index): about 350 MB to download and a .venv of about 1.6 GB,"
    echo "2-5 min. (The default PyTorch on Linux is the CUDA build: 3 GB more, useless without a GPU.)"
  else
    echo "No NVIDIA GPU found (nvidia-smi), and $index (PyTorch's CPU builds) is not reachable:"
    echo "'$spec' comes from pip's default index instead."
    build=$(torch_build "$spec")
    case "$build" in
      cpu\ file\ *)
        echo "There it is a CPU build already on this machine (${build#cpu file }): nothing to"
        echo "download for PyTorch, about 100 MB for the rest, and a .venv of about 1.6 GB." ;;
      cpu\ *)
        echo "There it is a CPU build (${build#cpu remote }): about 350 MB to download, a .venv of about 1.6 GB." ;;
      *)
        if [[ $build == cuda* ]]; then
          echo "WARNING: there it is the CUDA build (${build#cuda * }): about 2.7 GB to download"
        else
          echo "WARNING: pip could not tell beforehand which build that is; on Linux a plain 'torch' from"
          echo "PyPI is the CUDA build: about 2.7 GB to download"
        fi
        echo "and a .venv of about 6 GB, of no use on a machine without a GPU. To choose otherwise, stop now"
        echo "(Ctrl-C) and set TORCH_CPU_INDEX to a CPU index you can reach, or TORCH_SPEC to a CPU wheel or"
        echo "requirement (TORCH_SPEC=/path/to/torch-...+cpu-....whl); docs/troubleshooting.md says more."
        if [[ -t 0 && -t 1 ]]; then echo "Starting in 15 s..."; sleep 15; fi ;;
    esac
  fi
  echo "[1/3] pip"
  "$PY" -m pip install --upgrade pip
  echo "[2/3] PyTorch ('$spec')"
  if [[ $from == cpu-index ]]; then
    "$PY" -m pip install --index-url "$index" "$spec"
  else
    "$PY" -m pip install "$spec"
  fi
  echo "[3/3] the project and its dependencies ('.[$extras]')"
  "$PY" -m pip install -e ".[$extras]"
}

MODULES="helpers, torch, transformers, papermill, nbformat, matplotlib, pandas, nvtx, tqdm"
[[ $MODE == lab ]] && MODULES="$MODULES, jupyterlab, ipykernel, ipywidgets"
BASE_MODULES=$MODULES
[[ $MODE == site ]] && MODULES="$MODULES, nbconvert"
# The website's extra alone missing (the course itself installed): a small install, said as such.
if [[ $MODE == site ]] && "$PY" -c "import $BASE_MODULES" 2>/dev/null && ! "$PY" -c "import nbconvert" 2>/dev/null; then
  [[ -z $CHOSEN && $PY == .venv/bin/python ]] ||
    fail "$PY cannot import nbconvert, which the website needs: $PY -m pip install -e '.[site]'"
  echo "The website needs the project's 'site' extra (nbconvert, playwright: about 60 MB): installing it into .venv."
  "$PY" -m pip install -e ".[site]"
fi
NEEDS_DEPS=1
if [[ $MODE == run ]]; then  # listing needs only the standard library: instant
  for arg in "${ARGS[@]+"${ARGS[@]}"}"; do [[ $arg == --list ]] && NEEDS_DEPS=0; done
fi
if (( NEEDS_DEPS )); then
  rc=0; "$PY" -c "import $MODULES" 2>"$ERR" || rc=$?
  check_crash "$rc" "importing the dependencies"
  if (( rc != 0 )); then
    if [[ -n $CHOSEN ]]; then
      fail "PYTHON=$PYTHON cannot import the course's dependencies ($(tail -n 1 "$ERR")). Install them into it ($PYTHON -m pip install -e '.[test]'), or unset PYTHON and run_all.sh installs them into .venv."
    fi
    install_project
    rc=0; "$PY" -c "import $MODULES" 2>"$ERR" || rc=$?
    check_crash "$rc" "importing the dependencies it just installed"
    if (( rc != 0 )); then
      cat "$ERR" >&2
      fail "the install finished but $PY still cannot import the dependencies (above)."
    fi
    echo "Installed: $("$PY" -c 'import torch, transformers; print("torch", torch.__version__, "| transformers", transformers.__version__)'), .venv $(du -sh .venv 2>/dev/null | cut -f1)."
  fi
fi

rm -f "$ERR"  # exec below skips the EXIT trap
if [[ $MODE == site ]]; then
  exec "$PY" -m helpers.course.site "${ARGS[@]+"${ARGS[@]}"}"
fi
if [[ $MODE == lab ]]; then
  # Containers and cloud GPU machines run as root, which JupyterLab refuses without --allow-root.
  if [[ $(id -u) == 0 && " ${ARGS[*]+"${ARGS[*]}"} " != *" --allow-root "* && " ${ARGS[*]+"${ARGS[*]}"} " != *allow_root* ]]; then
    echo "Running as root (as in most containers): passing --allow-root to JupyterLab."
    ARGS+=(--allow-root)
  fi
  # A named kernel for this interpreter: inside a venv it lives in the venv, otherwise in the
  # user's Jupyter data folder (JUPYTER_DATA_DIR). Re-installed each time, so it always points here.
  if "$PY" -c "import sys; sys.exit(sys.prefix == sys.base_prefix)"; then WHERE=--sys-prefix; else WHERE=--user; fi
  "$PY" -m ipykernel install "$WHERE" --name fast-decoding \
    --display-name "Python (fast-decoding)" >/dev/null
  echo "JupyterLab in $PWD with kernel 'fast-decoding' ($("$PY" -c 'import sys; print(sys.executable)'))."
  exec "$PY" -m jupyterlab --ServerApp.root_dir="$PWD" \
    --MultiKernelManager.default_kernel_name=fast-decoding "${ARGS[@]+"${ARGS[@]}"}"
fi
if [[ $MODE == test ]]; then
  exec "$PY" -m pytest "${ARGS[@]+"${ARGS[@]}"}"
fi
exec "$PY" -m helpers.course.runner "${ARGS[@]+"${ARGS[@]}"}"
