"""Run HIPS autograd's own numpy tests on tenferro, through ``autograd_adapter``.

Usage (from the repository root; AUTOGRAD is a checkout of github.com/HIPS/autograd)::

    PYTHONPATH=packages/computegraph/src:packages/tidu/src:packages/tenferro/src \\
        python3 tests/peers/run_autograd_tests.py AUTOGRAD [pytest options]

The tests run from a copy of ``AUTOGRAD/tests`` with ``tests/peers/autograd_adapter``
first on the path, so ``import autograd`` is the adapter. The report gives, per file,
passed / run, and the failures by cause: a function tenferro does not have
(``UnsupportedError``/``AttributeError``: outside what tenferro implements) and the rest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

FILES = [
    "test_numpy.py",
    "test_systematic.py",
    "test_scalar_ops.py",
    "test_binary_ops.py",
    "test_linalg.py",
    "test_complex.py",
    "test_truediv.py",
]
"""autograd's tests of numpy functions (the others test autograd's own machinery:
boxes, vspaces, wrappers, graphs, primitives and their logic, fft)."""

HERE = Path(__file__).resolve().parent


def main() -> int:
    source = Path(sys.argv[1]) / "tests"
    with tempfile.TemporaryDirectory() as work:
        tests = Path(work) / "tests"
        shutil.copytree(source, tests)
        report = Path(work) / "report.xml"
        env = dict(os.environ)
        given = [str(Path(p).resolve()) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join([str(HERE / "autograd_adapter"), str(tests), *given])
        command = [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--junitxml={report}", "--tb=no",
            *sys.argv[2:], *[str(tests / f) for f in FILES],
        ]  # fmt: skip
        subprocess.run(command, cwd=tests, env=env, check=False)
        cases = ElementTree.parse(report).getroot().iter("testcase")
        per_file: dict[str, Counter[str]] = {}
        causes: Counter[str] = Counter()
        unimplemented: list[str] = []
        for case in cases:
            name = case.get("classname", "").rsplit(".", 1)[-1] + ".py"
            failure = case.find("failure")
            if failure is None:
                failure = case.find("error")
            skipped = case.find("skipped") is not None
            outcome = "skipped" if skipped else "failed" if failure is not None else "passed"
            per_file.setdefault(name, Counter())[outcome] += 1
            if failure is not None:
                message = failure.get("message", "")
                kind = message.split(":")[0].rsplit(".", 1)[-1].strip()
                causes[kind] += 1
                if kind in ("UnsupportedError", "AttributeError"):
                    unimplemented.append(case.get("name", ""))
    total = Counter[str]()
    for name in FILES:
        counts = per_file.get(name, Counter())
        total.update(counts)
        run = counts["passed"] + counts["failed"]
        print(f"{name:22} {counts['passed']:4d} / {run:4d} passed")
    run = max(total["passed"] + total["failed"], 1)
    implemented = max(run - len(unimplemented), 1)
    print(f"{'all':22} {total['passed']:4d} / {run:4d} passed ({100 * total['passed'] / run:.1f}%)")
    print(
        f"on what tenferro implements: {total['passed']} / {implemented} "
        f"({100 * total['passed'] / implemented:.1f}%); not implemented: "
        f"{len(unimplemented)} ({', '.join(sorted(unimplemented))})"
    )
    print("failures by exception:", dict(causes.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
