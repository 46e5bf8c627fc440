"""opt_einsum's own test suite, run against tenferro's einsum (when opt_einsum and pytest
are installed): ``contract``, ``contract_path``, ``contract_expression`` and opt_einsum's
named path functions are replaced by tenferro's (see :mod:`opt_einsum_shim`); calls for
other backends, object arrays or opt_einsum's sharing caches stay opt_einsum's. Reports
the pass rate, how many calls tenferro answered, and each failure. Reports, never asserts."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_common import Report, header

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def run(report: Report) -> None:
    if importlib.util.find_spec("opt_einsum") is None or importlib.util.find_spec("pytest") is None:
        report.add(workload="opt_einsum suite", skipped="opt_einsum or pytest not installed")
        return
    import opt_einsum

    tests = Path(opt_einsum.__file__).parent / "tests"
    if not tests.is_dir():
        report.add(workload="opt_einsum suite", skipped="opt_einsum installed without its tests")
        return
    paths = [str(HERE)] + [
        str(ROOT / "packages" / p / "src") for p in ("computegraph", "tidu", "tenferro")
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]))
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "opt_einsum_shim",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-p",
        "no:benchmark",
        "-W",
        "ignore::DeprecationWarning",
        "--rootdir",
        str(tests),
        str(tests),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=str(tests))
    seconds = time.perf_counter() - start
    text = done.stdout + done.stderr
    counts = dict.fromkeys(("passed", "failed", "skipped", "error"), 0)
    for number, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?)", text):
        counts[kind.rstrip("s") if kind.startswith("error") else kind] = int(number)
    substituted = re.search(r"tenferro substitutions: (.*)", text)
    ran = counts["passed"] + counts["failed"] + counts["error"]
    report.add(
        workload="opt_einsum suite",
        opt_einsum=opt_einsum.__version__,
        passed=counts["passed"],
        failed=counts["failed"] + counts["error"],
        skipped=counts["skipped"],
        pass_rate=counts["passed"] / max(ran, 1),
        tenferro_calls=substituted.group(1) if substituted else "?",
        seconds=seconds,
    )
    for failure in re.findall(r"^FAILED (\S+)", text, flags=re.MULTILINE):
        report.add(workload="opt_einsum suite failure", test=failure.split("/")[-1])


if __name__ == "__main__":
    header("opt_einsum's test suite against tf.einsum / tf.einsum_path")
    report = Report("opt_einsum_suite")
    run(report)
    print(f"   saved {report.save()}")
