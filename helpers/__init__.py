"""Shared code for the fast-decoding course.

Lessons live in notebooks/. Each notebook writes out in full the code it teaches and lists it in
a ``TAUGHT`` mapping (name -> the helpers module that holds the same code); tests keep the two
copies identical, so later notebooks import it from here.

The code a reader studies (taught in the notebook named):

- ``generation``  the greedy decode loops and ``decode_one_token``, the step all loops share (01, 02)
- ``allocator``   allocator settings: validated, applied in a fresh process, read back (03)
- ``static``      the static-cache loop and the compiled decode step (04, 05)
- ``streams``     the stop check every step, never, or one step late: two streams, an event (06, 07)
- ``postprocess`` per-row host syncs against one transfer in token post-processing (09)
- ``graphs``      a whole decode step captured in one CUDA graph; the fused, bucketed step (10)

Measurement and analysis the lessons call:

- ``model``       GPT-2 built offline with random weights, and the precision switches
- ``checks``      token-identity proofs (float32 near-ties confirmed in float64)
- ``harness``     methods as interleaved trials (wall, GPU-event, CPU-issue time), per-run memory, sweeps
- ``stats``       95% bootstrap intervals on speedups and the one verdict function (faster / slower /
                  within noise); no verdict from a smoke run
- ``profiling``   profiler step ranges, GPU idle gaps and busy time, timelines, the sync census
- ``floor``       the hardware floor of a decode step (copy bandwidth; parameter and KV bytes)
- ``kernels``     a step's replayed kernels by part against the floor; GEMM backends at M = batch (10)
- ``bench``       the ladder of every method against ``generate()``; ``python -m helpers.bench``
- ``claims``      the article's claims judged on a run's numbers (08)
- ``analysis``    fits and ratios the notebooks compute their verdicts from

Course machinery (no lesson teaches it):

- ``presets``     named presets (full, workshop, smoke) and parameter validation
- ``errors``      ``ParameterError``, raised by every check of a value
- ``results``     the run object (``run = results.start_notebook(...)``): CSV tables, figures, record
- ``plotting``    one figure style for every notebook
- ``env``         the environment report (GPU, CPU model, driver, versions, allocator settings)
- ``alloc_conf``  the allocator-setting parser, torch-free, so ``run_all.sh`` checks it before import
- ``site``        the course website, built offline from the published notebooks (``python -m helpers.site``)
- ``runner``      runs every notebook headless with papermill (``./run_all.sh``)
- ``report``      the README's results section, rendered from figures/ (``python -m helpers.report``)
- ``verdicts``    two runs' printed verdicts side by side (``python -m helpers.verdicts A B``)
"""
