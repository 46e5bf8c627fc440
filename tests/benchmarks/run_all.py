"""Run every benchmark of the stack (``make bench``). Benchmarks report; they never assert."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent

if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    for script in sorted(HERE.glob("bench_*.py")):
        if script.name == "bench_common.py":
            continue
        runpy.run_path(str(script), run_name="__main__")
