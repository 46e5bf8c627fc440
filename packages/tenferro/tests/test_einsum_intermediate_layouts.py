"""An einsum program lays each intermediate out for the contraction reading it.

``tenferro.einsum.layouts`` follows every value's strides along a lowered program and
plans each ``dot_general`` for the fewest elements copied by it and its reader. Values
must not change beyond rounding, the strides it predicts must be the strides met (else
its kernels fall back to per-layout planning, slower), and on a tensor train the
copies must fall to what the operands' own layout forces.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from einsum_support import data
from fuzz_support import fuzz_settings
from hypothesis import given

import tenferro as tf
from tenferro.einsum import api, layouts
from tenferro.ops import dot_plans
from tenferro.ops.contraction import DotGeneral

DTYPES = ["float64", "complex128", "float32"]
EXTENTS = [1, 2, 3, 5, 6, 8]


@st.composite
def networks(draw: Any) -> Any:
    """A random connected network: each new operand shares labels with earlier ones,
    random axis orders, some labels left open; extents past the broadcast thresholds."""
    count = draw(st.integers(2, 6))
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    terms: list[list[str]] = []
    for _ in range(count):
        shared = []
        if terms:
            pool = sorted({c for t in terms for c in t})
            shared = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
        fresh = [next(letters) for _ in range(draw(st.integers(0 if shared else 1, 2)))]
        terms.append(draw(st.permutations(shared + fresh)))
    labels = sorted({c for t in terms for c in t})
    extents = {c: draw(st.sampled_from(EXTENTS)) for c in labels}
    output = draw(st.lists(st.sampled_from(labels), max_size=3, unique=True))
    subscripts = ",".join("".join(t) for t in terms) + "->" + "".join(output)
    shapes = [tuple(extents[c] for c in t) for t in terms]
    return subscripts, shapes


def _close(got: Any, want: Any, dtype: str) -> None:
    tol = 1e-4 if dtype == "float32" else 1e-11
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@fuzz_settings(60)
@given(networks(), st.sampled_from(DTYPES), st.sampled_from(["auto", "greedy", "optimal"]))
def test_random_networks_equal_numpy_and_meet_the_layouts_they_were_planned_for(
    network: Any, dtype: str, optimize: str
) -> None:
    subscripts, shapes = network
    rng = np.random.default_rng(0)
    operands = [data(s, dtype, rng) for s in shapes]
    want = np.einsum(subscripts, *operands, optimize=False)
    misses: list[Any] = []
    original = layouts._Checked.__call__

    def spy(self: Any, lhs: Any, rhs: Any) -> Any:
        if lhs.strides != self.lhs_strides or rhs.strides != self.rhs_strides:
            misses.append((self.plan, lhs.strides, rhs.strides))
        return original(self, lhs, rhs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layouts._Checked, "__call__", spy)
        for _ in range(2):  # planned, then cached
            got = np.asarray(tf.einsum(subscripts, *operands, optimize=optimize))
            _close(got, want, dtype)
        tensors = [tf.asarray(x) for x in operands]
        _close(np.asarray(tf.einsum(subscripts, *tensors, optimize=optimize)), want, dtype)
    assert not misses, (subscripts, misses)
    # operands of other layouts: the kernels fall back to per-layout plans, same values
    odd = [np.asfortranarray(x) for x in operands]
    _close(np.asarray(tf.einsum(subscripts, *odd, optimize=optimize)), want, dtype)


def _mps_inner_product(sites: int, physical: int, bond: int) -> tuple[str, list[Any], Any]:
    """``<a|b>`` of two tensor trains (site tensors ``[s, left, right]``) and the path
    that sweeps from the right end: each step multiplies the environment into a site
    along its last axis, then contracts the result with the other state's site over
    the physical and the left bond."""
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    a_bonds = [next(letters) for _ in range(sites + 1)]
    b_bonds = [next(letters) for _ in range(sites + 1)]
    phys = [next(letters) for _ in range(sites)]
    terms, shapes = [], []
    for k in range(sites):
        left = 1 if k == 0 else bond
        right = 1 if k == sites - 1 else bond
        for bonds in (a_bonds, b_bonds):
            terms.append(phys[k] + bonds[k] + bonds[k + 1])
            shapes.append((physical, left, right))
    rng = np.random.default_rng(3)
    operands = [rng.standard_normal(s) / bond for s in shapes]
    # linear path (opt_einsum's form): the last two sites first, then one site at a time
    path = [(2 * sites - 2, 2 * sites - 1)]
    for k in range(sites - 2, -1, -1):
        remaining = 2 * k + 2  # sites 0..k (two operands each) plus the environment
        path.append((2 * k + 1, remaining))  # b's site with the environment (last)
        path.append((2 * k, remaining - 1))  # then a's site with that
    subscripts = ",".join(terms) + "->"
    return subscripts, operands, path


def test_a_tensor_train_copies_no_more_than_its_operands_force() -> None:
    """Swept from the right, each site's environment product is written so that the
    contraction with the other state's site views it as a matrix: that contraction
    copies only the site tensor (its contracted axes sit on both sides of its free
    one), where a C-ordered intermediate would be copied too."""
    sites, physical, bond = 6, 7, 9
    subscripts, operands, path = _mps_inner_product(sites, physical, bond)
    want = np.einsum(subscripts, *operands, optimize=True)
    tf.clear_caches()
    got = tf.einsum(subscripts, *operands, optimize=path)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
    (program,) = api._programs.values()
    kernels = program._kernels
    assert kernels is not None
    values = list(operands)
    copied = 0
    for (kernel, args, _), (op, _, _) in zip(kernels, program.instructions, strict=True):
        arrays = [values[a] for a in args]
        if type(op) is DotGeneral and op.lhs_contracting:
            lhs, rhs = arrays
            if isinstance(kernel, layouts._Checked):
                assert (lhs.strides, rhs.strides) == (kernel.lhs_strides, kernel.rhs_strides)
                copied += kernel.plan.copies
            else:
                problem = dot_plans.Problem(
                    op._numbers(), lhs.shape, lhs.strides, rhs.shape, rhs.strides, 8, True
                )
                copied += dot_plans.copies(problem)
        values.append(kernel(*arrays))
    site = physical * bond * bond
    assert copied <= (sites - 2) * site + 2 * physical * bond
    np.testing.assert_allclose(values[program.result], want, rtol=1e-10)
