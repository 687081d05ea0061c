"""Course machinery: what runs, times, judges, plots and publishes the lessons. No lesson teaches it.

- ``presets``     named presets (full, workshop, smoke) and parameter validation
- ``errors``      ``ParameterError``, raised by every check of a value
- ``harness``     methods as interleaved trials (wall, GPU-event, CPU-issue time), per-run memory, sweeps
- ``stats``       intervals on speedups and the one verdict function (faster / slower / can't tell);
                  no verdict from a smoke run; the method is written out in docs/method.md
- ``analysis``    fits and ratios the notebooks compute their verdicts from
- ``growth``      01 and 02: a loop timed at several lengths, the gain's growth (a fit for the exercises)
- ``intro``       00: the rounds of an A/B comparison, as a table
- ``profiling``   profiler step ranges, GPU idle gaps and busy time, timelines, the sync census
- ``floor``       the hardware floor of a decode step (copy bandwidth; parameter and KV bytes)
- ``kernels``     a step's replayed kernels by part against the floor; GEMM backends at M = batch
- ``claims``      the article's claims judged on a run's numbers (08)
- ``results``     the run object (``run = results.start_notebook(...)``): CSV tables, figures, record
- ``plotting``    one figure style for every notebook
- ``env``         the environment report (GPU, CPU model, driver, versions, allocator settings)
- ``alloc_conf``  the allocator-setting parser, torch-free, so ``run_all.sh`` checks it before import
- ``runner``      runs every notebook headless with papermill (``./run_all.sh``)
- ``site``        the course website, built offline from the published notebooks
- ``report``      the README's results section, rendered from figures/ (``--headers``, ``--guide``)
- ``published``   the published run's identity, the one-run check, times rendered from status files
- ``slides``      the slide deck: each lesson's key figure and message (``site --slides``)
- ``verdicts``    two runs' printed verdicts side by side (``python -m helpers.course.verdicts A B``)
"""
