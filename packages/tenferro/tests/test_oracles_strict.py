"""Strict replay of the oracle database: derivatives against each case's own finite
differences, with tolerances derived from the dtype.

``test_oracles`` compares with PyTorch's answers under the database's tolerances, which
are loose (an all-zero derivative passes most float32/complex64 cases and some float64
ones). Here every replayed case is compared with its ``fd_ref`` instead:

* the JVP along each probe direction, elementwise;
* the VJP of each probe cotangent through the adjoint identity
  ``Re <c, J t> = sum_i Re <J_i^H c, t_i>`` with ``J t`` the finite-difference JVP;
* the HVP (forward over reverse) where the case has a finite-difference one.

The tolerance is ``tol(dtype) * (1 + max |reference|)`` with ``tol`` 1e-6 (first
order) and 2e-5 (second order) in double precision and 2e-3 in single precision, so a
zero (or halved, or conjugated) derivative fails wherever the reference is not tiny;
the replay counts that this holds for nearly every comparison with a non-zero reference.
The database's single-precision finite differences are themselves rounded, and near a
kink or a jump they are wrong: a probe is compared only where its finite differences
agree with a double-precision recomputation of the same difference quotient (the case's
op evaluated at the case's inputs in float64/complex128), and the probes set aside are
counted and bounded. ``test_mutated_rules_are_caught`` breaks rules on purpose (a
coefficient halved, a conjugate dropped in a transpose, a JVP zeroed) and checks that
the strict replay flags each one.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import oracle_database
import pytest
from fuzz_support import EXPLORING
from oracle_table import OPS
from test_oracles import ROOT, _array, skip_reason

import tenferro as tf
from tenferro import lax
from tenferro.ops import analytic, elementwise

pytestmark = pytest.mark.slow

Array = np.ndarray[Any, Any]

FIRST = {"float64": 1e-6, "complex128": 1e-6, "float32": 2e-3, "complex64": 2e-3}
SECOND = {"float64": 2e-5, "complex128": 2e-5, "float32": 2e-3, "complex64": 2e-3}
WIDE = {"float32": np.float64, "complex64": np.complex128}


@dataclass
class Outcome:
    """What the strict replay found for one case."""

    failures: list[str] = field(default_factory=list)
    compared: int = 0  # quantities compared
    nonzero: int = 0  # of those, with a reference that is not exactly zero
    discriminating: int = 0  # of those, how many a zero derivative would fail
    unreliable: int = 0  # probes whose finite differences were not trusted


def _scale(reference: Array) -> float:
    return 1.0 + float(np.max(np.abs(reference), initial=0.0))


def _compare(
    outcome: Outcome,
    what: str,
    actual: Any,
    reference: Array,
    tol: float,
    scale: float | None = None,
) -> None:
    actual = np.asarray(actual)
    if reference.dtype.kind != "c" and actual.dtype.kind == "c":
        actual = actual.real
    bound = tol * (_scale(reference) if scale is None else scale)
    outcome.compared += 1
    outcome.nonzero += bool(np.any(reference != 0))
    outcome.discriminating += float(np.max(np.abs(reference), initial=0.0)) > bound
    if actual.shape != reference.shape:
        outcome.failures.append(f"{what}: shape {actual.shape} != {reference.shape}")
        return
    error = float(np.max(np.abs(actual - reference), initial=0.0))
    if not error <= bound:
        outcome.failures.append(f"{what}: error {error:.3g} > {bound:.3g}")


def _inner(a: Any, b: Any) -> float:
    """``Re <a, b>`` (conjugate-linear in ``a``)."""
    return float(np.real(np.sum(np.conj(np.asarray(a)) * np.asarray(b))))


def _op_function(case: dict[str, Any], inputs: dict[str, Any], active: list[str]) -> Any:
    op = OPS[case["op"]]
    args = case.get("op_args") or []
    kwargs = case.get("op_kwargs") or {}
    names = sorted(case["inputs"])

    def f(*xs: Any) -> Any:
        full = dict(inputs)
        full.update(zip(active, xs, strict=True))
        return op([full[n] for n in names], args, kwargs)

    return f


def _wide_jvp(case: dict[str, Any], probe: dict[str, Any], active: list[str], step: float) -> Array:
    """The case's difference quotient along the probe direction, recomputed in double
    precision with ``step`` (the case's op evaluated at the case's inputs)."""
    wide = WIDE.get(case["dtype"], np.dtype(case["dtype"]).type)
    inputs = {}
    for name, spec in case["inputs"].items():
        value = _array(spec)
        inputs[name] = value.astype(wide) if value.dtype.kind in "fc" else value
    directions = [_array(probe["direction"][n]).astype(wide) for n in active]
    f = _op_function(case, {n: tf.Tensor(v) for n, v in inputs.items()}, active)

    def at(sign: float) -> Array:
        points = [
            tf.Tensor(inputs[n] + sign * step * d) for n, d in zip(active, directions, strict=True)
        ]
        return np.asarray(f(*points))

    with np.errstate(all="ignore"):
        return (at(1.0) - at(-1.0)) / (2 * step)


def _trusted(case: dict[str, Any], probe: dict[str, Any], active: list[str]) -> bool:
    """Whether the case's finite differences measure the derivative: they agree with a
    double-precision quotient at a step a hundred times smaller (no kink, jump or
    singularity within the case's step, and not lost to single-precision rounding)."""
    fd_jvp = _array(probe["fd_ref"]["jvp"]["value"])
    fine = _wide_jvp(case, probe, active, probe["fd_ref"]["step"] / 100)
    if fine.shape != fd_jvp.shape or not np.all(np.isfinite(fine)):
        return False
    return bool(np.max(np.abs(fine - fd_jvp), initial=0.0) <= FIRST[case["dtype"]] * _scale(fine))


def strict_outcome(case: dict[str, Any]) -> Outcome:
    """Replay one case (its skip reason, if any, is checked by the caller)."""
    outcome = Outcome()
    dtype = case["dtype"]
    names = sorted(case["inputs"])
    inputs = {name: tf.Tensor(_array(case["inputs"][name])) for name in names}
    for probe in case["probes"]:
        fd = probe.get("fd_ref")
        if fd is None:
            continue
        active = [n for n in names if n in probe["direction"]]
        where = f"{case['case_id']}/{probe['probe_id']}"
        f = _op_function(case, inputs, active)
        primals = tuple(inputs[n] for n in active)
        directions = tuple(_array(probe["direction"][n]) for n in active)
        cotangent = _array(probe["cotangent"]["value"])
        fd_jvp = _array(fd["jvp"]["value"])
        if not _trusted(case, probe, active):
            outcome.unreliable += 1
            continue

        _, tangent = tf.jvp(f, primals, directions)
        _compare(outcome, f"{where} jvp", tangent, fd_jvp, FIRST[dtype])

        _, pullback = tf.vjp(f, *primals)
        pulled = pullback(cotangent)
        adjoint = sum(_inner(v, t) for v, t in zip(pulled, directions, strict=True))
        expected = _inner(cotangent, fd_jvp)
        # Both sides are sums: their rounding (and the finite differences' error) scales
        # with the sizes of the terms, not of the total.
        weight = float(np.sum(np.abs(cotangent))) or 1.0
        terms = sum(
            float(np.sum(np.abs(np.asarray(v)) * np.abs(t)))
            for v, t in zip(pulled, directions, strict=True)
        )
        _compare(
            outcome,
            f"{where} vjp (adjoint)",
            np.asarray(adjoint / weight),
            np.asarray(expected / weight),
            FIRST[dtype],
            scale=_scale(fd_jvp) + terms / weight,
        )

        if "hvp" in fd and probe["pytorch_ref"].get("hvp") is not None:

            def pulled_at(*xs: Any, cotangent: Any = cotangent, f: Any = f) -> Any:
                return tf.vjp(f, *xs)[1](cotangent)

            _, hvp = tf.jvp(pulled_at, primals, directions)
            for name, value in zip(active, hvp, strict=True):
                reference = _array(fd["hvp"][name])
                _compare(outcome, f"{where} hvp[{name}]", value, reference, SECOND[dtype])
    return outcome


@functools.cache
def replayed() -> tuple[dict[str, Any], ...]:
    """The single-output identity cases (multi-output ones replay in test_oracles),
    parsed when a test first needs them, not at collection."""
    return tuple(
        c
        for c in oracle_database.cases()
        if skip_reason(c) is None and "value" in c["probes"][0]["cotangent"]
    )


needs_database = pytest.mark.skipif(
    ROOT is None, reason="the oracle database (../shared/oracles) is not present"
)


def _in_this_run(case: dict[str, Any]) -> bool:
    """CI replays a fixed half of the cases (chosen by case id, the same on every run);
    ``HYPOTHESIS_PROFILE=explore`` replays all of them."""
    return EXPLORING or zlib.crc32(case["case_id"].encode()) % 2 == 0


@needs_database
@pytest.mark.parametrize("dtype", sorted(FIRST))
def test_strict_replay(dtype: str) -> None:
    """Every replayed case of ``dtype`` against its finite differences (one test per dtype
    so that the report lists every failing case at once)."""
    total = Outcome()
    probes = 0
    for case in replayed():
        if case["dtype"] != dtype or not _in_this_run(case):
            continue
        outcome = strict_outcome(case)
        total.failures += outcome.failures
        total.unreliable += outcome.unreliable
        total.compared += outcome.compared
        total.nonzero += outcome.nonzero
        total.discriminating += outcome.discriminating
        probes += len(case["probes"])
    failures = total.failures
    assert failures == [], f"{len(failures)} strict failures:\n" + "\n".join(failures[:50])
    # The trusted finite differences are most of them.
    assert total.unreliable <= 0.05 * probes, (total.unreliable, probes)
    # A zero derivative fails nearly every comparison with a non-zero reference (the
    # loose database tolerances let it pass 99.5% of the single-precision cases).
    assert total.compared > 300, total.compared
    assert total.discriminating >= 0.9 * total.nonzero, (total.discriminating, total.nonzero)


# ---------------------------------------------------------------------- mutation check


@contextmanager
def _broken(cls: type, method: str, replacement: Callable[..., Any]) -> Iterator[None]:
    original = cls.__dict__.get(method)
    tf.clear_caches()
    setattr(cls, method, replacement)
    try:
        yield
    finally:
        if original is None:
            delattr(cls, method)  # inherited again
        else:
            setattr(cls, method, original)
        tf.clear_caches()


def _half_cos(self: Any, x: Any, y: Any) -> Any:
    return lax.mul(lax.cos(x), lax.full_like(x, 0.5))


def _mul_transpose_without_conj(self: Any, cts: Any, xs: Any, active: Any) -> Any:
    (ct,) = cts
    x, y = xs
    return [lax.mul(ct, y) if active[0] else None, lax.mul(x, ct) if active[1] else None]


def _exp_zero_jvp(self: Any, xs: Any, ys: Any, ts: Any) -> Any:
    return [None]  # a symbolic zero: the rule "forgets" the derivative


MUTATIONS = [
    pytest.param(analytic.Sin, "coefficient", _half_cos, "sin", id="sin-coefficient-halved"),
    pytest.param(
        elementwise.Mul, "transpose", _mul_transpose_without_conj, "mul", id="mul-transpose-no-conj"
    ),
    pytest.param(analytic.Exp, "jvp", _exp_zero_jvp, "exp", id="exp-jvp-zero"),
]


@needs_database
@pytest.mark.parametrize(("cls", "method", "replacement", "op"), MUTATIONS)
def test_mutated_rules_are_caught(cls: type, method: str, replacement: Any, op: str) -> None:
    cases = [c for c in replayed() if c["op"] == op]
    if op == "mul":  # a dropped conjugate shows only on complex values
        cases = [c for c in cases if c["dtype"].startswith("complex")]
    assert cases
    assert all(strict_outcome(c).failures == [] for c in cases)
    with _broken(cls, method, replacement):
        flagged = {c["dtype"] for c in cases if strict_outcome(c).failures}
    assert flagged == {c["dtype"] for c in cases}, flagged
