"""Shared code for the fast-decoding course.

Lessons live in notebooks/; every piece of code that a later notebook reuses lives here:

- ``model``       GPT-2 built offline with random weights, and the precision switches
- ``presets``     named presets (full, workshop, smoke) and parameter validation
- ``generation``  the greedy decode loops of notebooks 01 and 02, and their shared contract
- ``checks``      token-identity proofs (float32 near-ties confirmed in float64)
- ``allocator``   allocator settings: validated, applied in a fresh process, read back (03)
- ``static``      the static-cache loop and the compiled decode step (04, 05)
- ``profiling``   profiler step ranges, GPU idle gaps, timelines, the sync census (06, 07)
- ``streams``     loops that read the stop flag one step late: two streams, or an event (07)
- ``postprocess`` per-row host syncs against one transfer in token post-processing (09)
- ``graphs``      a whole decode step captured in one CUDA graph (10)
- ``bench``       the ladder of every method, the floor, generate() peers; ``python -m helpers.bench``
- ``analysis``    fits and ratios the notebooks compute their verdicts from
- ``harness``     warm-up, synchronized timing, memory statistics, OOM-safe sweeps
- ``results``     CSV tables, the run folder and the figure manifest
- ``plotting``    one figure style for every notebook
- ``env``         the environment report (GPU, driver, versions, allocator settings)
- ``runner``      runs every notebook headless with papermill (``./run_all.sh``)
- ``report``      the README's results section, rendered from figures/ (``python -m helpers.report``)
"""
