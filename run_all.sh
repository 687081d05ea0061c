#!/usr/bin/env bash
# Reproduce the course: run every notebook headless and collect its tables and figures.
set -euo pipefail
cd "$(dirname "$0")"

usage() {
  cat <<'USAGE'
Usage: ./run_all.sh [options]

Runs every notebook in notebooks/ in order with papermill, into runs/<preset>/, one status
line per notebook. On a CUDA GPU the default preset is 'full' and successful notebooks update
figures/; without one the 'smoke' preset runs (tiny model on the CPU) and figures/ is untouched.

Options:
  --lab [ARGS]     open the course in JupyterLab (repository root, kernel "fast-decoding" =
                   this project's interpreter); ARGS go to 'jupyter lab', e.g. --no-browser,
                   --port 8890, --ip 0.0.0.0 to serve a classroom
  --test           run the test suite (unit tests and every notebook in the smoke preset)
  --smoke          run the smoke preset (tiny model, CPU is fine)
  --preset NAME    full | workshop | smoke
  --only NN[,NN]   run only these notebooks, e.g. --only 00,01,02
  --resume         skip notebooks that finished in the last run of this preset
  --list           list the notebooks and exit
  --quiet          do not echo the notebooks' output
  --help           this text

Environment: PYTHON picks the interpreter (default: .venv/bin/python if present, else python3).
When the dependencies are not importable, a .venv is created and the project installed there.
Something went wrong? See docs/troubleshooting.md.
USAGE
}

case "${1:-}" in -h|--help) usage; exit 0 ;; esac

PY=${PYTHON:-}
if [[ -z "$PY" ]]; then
  if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python3; fi
fi
MODULES="helpers, torch, transformers, papermill, nbformat, matplotlib, pandas, nvtx, tqdm"
[[ "${1:-}" == "--lab" ]] && MODULES="$MODULES, jupyterlab, ipykernel, ipywidgets"
if ! "$PY" -c "import $MODULES" 2>/dev/null; then
  echo "Dependencies not importable with $PY: creating .venv and installing the project (once)."
  [[ -x .venv/bin/python ]] || python3 -m venv .venv
  PY=.venv/bin/python
  "$PY" -m pip install --quiet --upgrade pip
  "$PY" -m pip install --quiet -e ".[test]"
fi

if [[ "${1:-}" == "--lab" ]]; then
  shift
  # A named kernel for this interpreter: inside a venv it lives in the venv, otherwise in the
  # user's Jupyter data folder (JUPYTER_DATA_DIR). Re-installed each time, so it always points here.
  if "$PY" -c "import sys; sys.exit(sys.prefix == sys.base_prefix)"; then WHERE=--sys-prefix; else WHERE=--user; fi
  "$PY" -m ipykernel install "$WHERE" --name fast-decoding \
    --display-name "Python (fast-decoding)" >/dev/null
  echo "JupyterLab in $PWD with kernel 'fast-decoding' ($("$PY" -c 'import sys; print(sys.executable)'))."
  exec "$PY" -m jupyterlab --ServerApp.root_dir="$PWD" \
    --MultiKernelManager.default_kernel_name=fast-decoding "$@"
fi

if [[ "${1:-}" == "--test" ]]; then
  shift
  exec "$PY" -m pytest "$@"
fi
exec "$PY" -m helpers.runner "$@"
