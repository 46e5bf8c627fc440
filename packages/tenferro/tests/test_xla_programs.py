"""The differential program generator through both backends: random programs over the
op surface (``test_fuzz_programs.programs``: elementwise functions, broadcasting with
weak scalars, reductions, gathers, transposes, matrix products) give on the XLA
backend the numpy backend's values, gradients, JVPs, Hessian-vector products and
``vmap`` results, in every float and complex dtype (``xla_support``'s tolerances;
the numpy backend is itself checked against numpy and finite differences there).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")

from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_programs import DTYPES, Program, TieError, programs
from xla_support import assert_same

import tenferro as tf


def _modes(program: Program, rng: np.random.Generator) -> tuple[Any, list[Any]]:
    leaves = list(program.leaves)
    out = np.asarray(program.numpy(*leaves))
    weights = rng.standard_normal(out.shape)
    if out.dtype.kind == "c":
        weights = weights + 1j * rng.standard_normal(out.shape)
    weights = weights.astype(out.dtype)
    tangents = [
        (
            rng.standard_normal(x.shape)
            + (1j * rng.standard_normal(x.shape) if x.dtype.kind == "c" else 0)
        ).astype(x.dtype)
        for x in leaves
    ]
    batch = [np.stack([x, x[::-1] * 0.5 if x.ndim else x * 0.5]) for x in leaves]
    n = len(leaves)

    def modes(*values: Any) -> Any:
        xs, ts, bs, w = values[:n], values[n : 2 * n], values[2 * n : 3 * n], values[-1]

        def loss(*xs: Any) -> Any:
            return tf.sum(tf.real(tf.conj(w) * program(*xs)))

        return (
            program(*xs),
            tf.grad(loss, argnums=tuple(range(n)))(*xs),
            tf.jvp(program, tuple(xs), tuple(ts)),
            tf.hvp(loss, tuple(xs), tuple(ts)),
            tf.vmap(program)(*bs),
        )

    return modes, [*leaves, *tangents, *batch, weights]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@fuzz_settings(6)
@given(data=st.data())
def test_random_programs_agree_on_both_backends(dtype, data):
    program = data.draw(programs(dtype))
    try:
        program.numpy(*program.leaves)
    except TieError:
        return  # clip exactly at a bound: no derivative to compare
    modes, args = _modes(program, np.random.default_rng(len(program.steps)))
    with np.errstate(all="ignore"):
        expected = tf.jit(modes)(*args)
        got = tf.jit(modes, backend="xla")(*args)
    assert_same(got, expected, what=repr(program))
