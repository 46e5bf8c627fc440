"""The rule-case tables through both backends: every primitive and linalg family, in
every inexact dtype it supports and every shape of its cases (rank 0 and size 0
included), gives on the XLA backend the numpy backend's values, gradients, JVPs,
Hessian-vector products and ``vmap`` results (``xla_support``'s tolerances).

One jitted program per (case, dtype) holds every shape and mode, so each pair costs
one XLA compilation (compiling dominates this file's time). Double precision runs
every shape and mode; single precision, whose lowering rules are the same, runs the
value and gradient of the case's largest shape. Cases whose program cannot lower
say so with a ``LoweringError`` naming the operation, checked here too.
"""

from __future__ import annotations

import warnings
import zlib
from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")
import rule_cases_solvers
import rule_cases_spectral
from rule_cases import CASES as CORE_CASES
from rule_cases import Case
from tenferro_support import dtype_id, output_weights, real_loss, sample
from xla_support import SINGLE, assert_same

import tenferro as tf

pytestmark = pytest.mark.slow  # one XLA compilation per (case, dtype): minutes in all

CASES = [*CORE_CASES, *rule_cases_spectral.CASES, *rule_cases_solvers.CASES]

REFUSED = {
    "dynamic_truncate": "dynamic_truncate",
    "truncate_then_pad": "dynamic_truncate",
    "linalg_truncated_svd": "dynamic_truncate",
}
"""Cases with a data-dependent extent, and the operation the refusal names."""

COMPLEX_REFUSED = {"erf", "erfc"}
"""Cases XLA cannot compute in complex dtypes (JAX's error function is real only)."""

WIDER = {"linalg_eig": 1e3}
"""Cases compared within a wider tolerance, and the factor: a non-Hermitian
eigendecomposition's derivative divides by eigenvalue gaps and ``V^-1``, so the two
LAPACK paths' rounding is amplified by the eigenvector condition number."""

ORDER_FREE = {"linalg_eig"}
"""Cases whose outputs come in an order LAPACK leaves to the implementation (a
non-Hermitian eigendecomposition's eigenvalues): compared sorted (lexicographically,
eigenvector columns with their values), which is locally constant, so derivatives
compare too."""


def _sorted_eig(f: Any) -> Any:
    def g(*args: Any) -> Any:
        w, columns = f(*args)
        order = tf.lax.argsort(w, w.ndim - 1)
        spread = tf.broadcast_to(order[..., None, :], columns.shape)
        return (
            tf.lax.apply_permutation(w, order, w.ndim - 1),
            tf.lax.apply_permutation(columns, spread, columns.ndim - 1),
        )

    return g


def _seed(case: Case, dt: np.dtype[Any]) -> int:
    return zlib.crc32(f"xla/{case.name}/{dt.name}".encode())


def _modes(
    case: Case, dt: np.dtype[Any], rng: np.random.Generator, full: bool, derivatives: bool
) -> tuple[Any, list[Any]]:
    """The function computing, for the shapes of ``case`` (every one when ``full``, else
    the last), its value and, with ``derivatives``, its gradient and (when ``full``)
    ``vmap`` over two examples, JVP and HVP; and its flat arguments."""
    parts = []
    flat: list[Any] = []
    for shape in case.shapes if full else case.shapes[-1:]:
        f, raw = case.build(dt, shape, rng)
        if case.name in ORDER_FREE:
            f = _sorted_eig(f)
        args = [np.asarray(a) for a in raw]
        _, second = case.build(dt, shape, rng)
        stacked = [np.stack([a, np.asarray(b)]) for a, b in zip(args, second, strict=True)]
        free = [i for i, a in enumerate(args) if a.dtype.kind in "fc"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            weights = output_weights(f, [tf.asarray(a) for a in args], rng)
        directions = [sample(args[i].shape, args[i].dtype, rng) for i in free]
        parts.append((f, len(args), free, weights, len(directions)))
        flat += [*args, *stacked, *directions]

    def modes(*values: Any) -> list[Any]:
        results: list[Any] = []
        position = 0
        for f, count, free, weights, n_directions in parts:
            args = list(values[position : position + count])
            stacked = values[position + count : position + 2 * count]
            directions = tuple(values[position + 2 * count : position + 2 * count + n_directions])
            position += 2 * count + n_directions
            results.append(f(*args))
            if not derivatives:
                continue
            if full:
                results.append(tf.vmap(f)(*stacked))

            def restricted(*xs: Any, f: Any = f, args: list[Any] = args, free: Any = free) -> Any:
                full = list(args)
                for i, x in zip(free, xs, strict=True):
                    full[i] = x
                return f(*full)

            primals = tuple(args[i] for i in free)
            loss = real_loss(restricted, weights)
            results.append(tf.grad(loss, argnums=tuple(range(len(primals))))(*primals))
            if full:
                results.append(tf.jvp(restricted, primals, directions)[1])
                results.append(tf.hvp(loss, primals, directions))
        return results

    return modes, flat


PARAMS = [
    pytest.param(case, dt, id=f"{case.name}-{dtype_id(dt)}") for case in CASES for dt in case.dtypes
]


@pytest.mark.parametrize(("case", "dt"), PARAMS)
def test_rule_cases_agree_on_both_backends(case, dt):
    rng = np.random.default_rng(_seed(case, dt))
    refused = REFUSED.get(case.name) or (
        case.name if case.name in COMPLEX_REFUSED and dt.kind == "c" else None
    )
    full = dt not in SINGLE
    modes, flat = _modes(case, dt, rng, full, case.static_output and refused is None)
    if refused is not None:
        with pytest.raises(tf.LoweringError, match=refused):
            tf.jit(modes, backend="xla")(*flat)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tf.DegenerateDerivativeWarning)
        expected = tf.jit(modes)(*flat)
        got = tf.jit(modes, backend="xla")(*flat)
    assert_same(got, expected, WIDER.get(case.name, 1.0), case.name)
