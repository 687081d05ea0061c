"""Shared code for the fast-decoding course.

Lessons live in notebooks/; every piece of code that a later notebook reuses lives here:

- ``model``       GPT-2 built offline with random weights, and the precision switches
- ``presets``     named presets (full, workshop, smoke) and parameter validation
- ``generation``  the greedy decode loops taught in notebooks 01 and 02 (later lessons add modules)
- ``harness``     warm-up, synchronized timing, memory statistics, OOM-safe sweeps
- ``results``     CSV tables, the run folder and the figure manifest
- ``plotting``    one figure style for every notebook
- ``env``         the environment report (GPU, driver, versions, allocator settings)
- ``runner``      runs every notebook headless with papermill (``./run_all.sh``)
"""
