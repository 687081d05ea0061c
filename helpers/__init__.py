"""Shared code for the fast-decoding course.

Lessons live in notebooks/. Each notebook writes out in full the code it teaches and lists it in
a ``TAUGHT`` mapping (name -> the helpers module that holds the same code); tests keep the two
copies identical, so later notebooks import it from here.

The code a reader studies (taught in the notebook named):

- ``generation``  the greedy decode loops and ``decode_one_token``, the step all loops share (01, 02)
- ``allocator``   allocator settings: validated, applied in a fresh process, read back (03)
- ``static``      the static-cache loop and the compiled decode step (04, 05)
- ``streams``     the stop check every step, never, or one step late: two streams, an event (06, 07)
- ``postprocess`` per-row host syncs against one copy of the tensors to the host in token post-processing (09)
- ``graphs``      a whole decode step captured in one CUDA graph; attention over buckets of cache length (10)

The one measuring tool a reader runs by hand:

- ``bench``       the ladder of every method against ``generate()``; ``python -m helpers.bench``

Shared by every lesson:

- ``model``       GPT-2 built offline with random weights, and the precision switches
- ``checks``      token-identity proofs (float32 near-ties confirmed in float64)

Everything that measures, judges, plots and publishes (runner, presets, harness, statistics,
profiling, results, report, site) is course machinery in ``helpers/course/``.
"""

import warnings as _warnings

# transformers imports tqdm.auto; inside a Jupyter kernel without ipywidgets, tqdm warns that it
# cannot draw notebook progress bars. The course draws none, so the warning says nothing to a
# learner: silenced here, before any lesson imports transformers.
IMPORT_NOISE = "IProgress not found"  # the runner hands the kernels the same filter
_warnings.filterwarnings("ignore", message=IMPORT_NOISE)

# transformers 5.24 renamed GPT-2's ``past_key_values`` argument to ``cache`` and warns on the old
# name (removed in 5.40); 5.17, the GPU host's version, has only the old name. The lessons pass
# ``past_key_values=``, which both accept, so the rename's warning is silenced here.
RENAMED_CACHE_ARG = r"`past_key_values` is deprecated"
_warnings.filterwarnings("ignore", message=RENAMED_CACHE_ARG, category=FutureWarning)


def _not_the_rename(record) -> bool:
    return "`past_key_values`/`cache_params` are deprecated" not in record.getMessage()


# ...and its log line (transformers' logger, once per process), dropped the same way.
import logging as _logging  # noqa: E402

_logging.getLogger("transformers.utils.generic").addFilter(_not_the_rename)
