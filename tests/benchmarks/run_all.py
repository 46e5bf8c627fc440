"""Run every benchmark of the stack (``make bench``) and write ``docs/benchmarks.md``.

Benchmarks report; they never assert. ``BENCH_QUICK=1`` runs a fifth of the repeats.
Each ``bench_*.py`` saves its rows to ``bench-results/<name>.json``; the report
(:mod:`report`) renders the rows of this run.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent

# One thread each, set before any benchmark imports numpy (a variable set later is ignored).
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    import report

    start = time.perf_counter()
    loads = [os.getloadavg() if hasattr(os, "getloadavg") else None]
    names = []
    for script in sorted(HERE.glob("bench_*.py")):
        if script.name == "bench_common.py":
            continue
        runpy.run_path(str(script), run_name="__main__")
        names.append(script.stem.removeprefix("bench_"))
    loads.append(os.getloadavg() if hasattr(os, "getloadavg") else None)
    print(f"\nwrote {report.write(names, loads, time.perf_counter() - start)}")
