# Sourced at the start of every command on the lent GPU host (Python 3.12, torch, transformers,
# no Jupyter stack, no network). Installs the wheels carried in .whl (../shared/offline-gpu-bundle.sh),
# writes a bytecode cache (the host sets PYTHONDONTWRITEBYTECODE: docs/troubleshooting.md) and
# hides the host's scikit-learn from transformers (COURSE_HOST_SKLEARN=1 keeps it).
if [[ ! -e /tmp/site/papermill ]]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 3
fi
export PYTHONPATH=/tmp/site:$PWD JUPYTER_PATH=/tmp/site/share/jupyter PATH=/tmp/site/bin:$PATH
if [[ -z ${COURSE_HOST_SKLEARN:-} ]]; then
  mkdir -p /tmp/hide && echo 'import sys; sys.modules.setdefault("sklearn", None)' > /tmp/hide/sitecustomize.py
  export PYTHONPATH=/tmp/hide:$PYTHONPATH
fi
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=/tmp/pycache PYTHON=python3 PYTHONUNBUFFERED=1
[[ -f .ci/gpu/commit ]] && export COURSE_COMMIT=$(cat .ci/gpu/commit)
if [[ ! -e /tmp/pycache.done ]]; then
  s=$SECONDS
  python3 -c "import helpers.bench, helpers.static, helpers.course.runner, matplotlib.pyplot, pandas, papermill, ipykernel.kernelapp, nbclient, transformers.models.gpt2.modeling_gpt2, torch._inductor.compile_fx" \
    && touch /tmp/pycache.done && echo "bytecode cache written in $((SECONDS - s)) s"
  python3 - <<'PY'
import time; t = time.perf_counter()
import torch, transformers.models.gpt2.modeling_gpt2  # noqa
print(f"import probe: torch + GPT-2 in {time.perf_counter() - t:.2f} s")
PY
fi
