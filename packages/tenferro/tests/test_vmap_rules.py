"""Batching rules, differentially: for every case of the rule-case tables, ``tf.vmap`` over
a random batch equals a Python loop of the unbatched function (values and dtypes), with
the batch axis leading, trailing, and with some operands unbatched; and the completeness
gate: every exported primitive has a batching rule or says why it loops."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest
import rule_cases_solvers
import rule_cases_spectral
from rule_cases import CASES as CORE_CASES
from rule_cases import Case
from sampling import first_value, sample_product
from tenferro_support import dtype_id
from test_primitive_rules import _exported_primitives

import tenferro as tf
from tenferro.core.primitive import TensorPrimitive
from tenferro.core.pytree import flatten

CASES = [*CORE_CASES, *rule_cases_spectral.CASES, *rule_cases_solvers.CASES]
BATCH = 3

LAYOUTS = ("leading", "trailing", "first_only", "last_only", "eager")
"""Where the batch axis is and which operands have one; ``eager``: leading, on eager
tensors (rules applied op by op, not through the cached batched program)."""


def _batched_case(case: Case, dt: np.dtype[Any], layout: str) -> tuple[Any, list[Any], list[Any]]:
    """The case's function, its batched arguments (examples from independent builds, so
    every example meets the case's constraints) and the ``in_axes``."""
    seed = zlib.crc32(f"vmap/{case.name}/{dt.name}/{layout}".encode())
    builds = [
        case.build(dt, case.shapes[-1], np.random.default_rng(seed + k)) for k in range(BATCH)
    ]
    f, first = builds[0]
    count = len(first)
    batched = set(range(count))
    if layout == "first_only":
        batched = {0}
    elif layout == "last_only":
        batched = {count - 1}
    args: list[Any] = []
    axes: list[Any] = []
    for i in range(count):
        if i not in batched:
            args.append(np.asarray(first[i]))
            axes.append(None)
            continue
        stacked = np.stack([np.asarray(b[1][i]) for b in builds])
        if layout == "trailing":
            stacked = np.moveaxis(stacked, 0, -1)
            axes.append(-1)
        else:
            axes.append(0)
        args.append(stacked)
    return f, args, axes


def _loop(f: Any, args: list[Any], axes: list[Any]) -> list[np.ndarray[Any, Any]]:
    outputs = []
    for k in range(BATCH):
        example = [
            tf.asarray(a) if d is None else tf.asarray(np.take(a, k, axis=d))
            for a, d in zip(args, axes, strict=True)
        ]
        outputs.append([np.asarray(o) for o in flatten(f(*example))[0]])
    return [np.stack([o[slot] for o in outputs]) for slot in range(len(outputs[0]))]


BATCHED_SIZE = {"truncate_then_pad"}
"""Cases whose second operand is a truncation size: batched, it gives each example its own
extent, which cannot be stacked: vmap raises (``test_batched_sizes_raise``); only their
layout with the size unbatched is compared."""


PARAMS = sample_product(
    (
        pytest.param(case, case.dtypes[k % len(case.dtypes)], layout, id=f"{case.name}-{layout}")
        for case in CASES
        for k, layout in enumerate(LAYOUTS)
        if case.static_output and (layout == "first_only" or case.name not in BATCHED_SIZE)
    ),
    per=first_value,
)


@pytest.mark.parametrize(("case", "dt", "layout"), PARAMS)
def test_vmap_equals_a_loop_of_the_function(case, dt, layout):
    f, args, axes = _batched_case(case, dt, layout)
    expected = _loop(f, args, axes)
    kind = tf.EagerTensor if layout == "eager" else tf.asarray
    got = flatten(tf.vmap(f, in_axes=tuple(axes))(*[kind(a) for a in args]))[0]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        g = np.asarray(g)
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        assert g.shape == e.shape, (g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("traced", [False, True])
def test_batched_sizes_raise(traced):
    f, args, axes = _batched_case(
        next(c for c in CASES if c.name == "truncate_then_pad"), np.dtype("float64"), "leading"
    )
    batched = tf.vmap(f, in_axes=tuple(axes))
    with pytest.raises(tf.TenferroError):
        (tf.jit(batched) if traced else batched)(*args)


JIT_PARAMS = [
    pytest.param(case, case.dtypes[-1], id=f"{case.name}-{dtype_id(case.dtypes[-1])}")
    for case in CASES
    if case.static_output
]


@pytest.mark.parametrize(("case", "dt"), JIT_PARAMS)
def test_jit_of_vmap_equals_the_loop(case, dt):
    """The same through a trace (the rules applied to traced values, then compiled)."""
    layout = "first_only" if case.name in BATCHED_SIZE else "trailing"
    f, args, axes = _batched_case(case, dt, layout)
    expected = _loop(f, args, axes)
    got = flatten(tf.jit(tf.vmap(f, in_axes=tuple(axes)))(*args))[0]
    for g, e in zip(got, expected, strict=True):
        g = np.asarray(g)
        assert g.dtype == e.dtype
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_every_primitive_has_a_batching_rule_or_says_why_it_loops():
    missing = sorted(
        name
        for name, cls in _exported_primitives().items()
        # add_any (tidu's cotangent accumulation) is added directly by the transform.
        if cls.batch is TensorPrimitive.batch and not cls.batch_loop and name != "add_any"
    )
    assert missing == [], f"primitives without a batching rule or a batch_loop reason: {missing}"


VJP_PARAMS = [
    pytest.param(case, case.dtypes[-1], id=f"{case.name}-{dtype_id(case.dtypes[-1])}")
    for case in CASES
    if case.static_output and case.dtypes[-1].kind in "fc"
]


@pytest.mark.parametrize(("case", "dt"), VJP_PARAMS)
def test_vjp_of_vmap_equals_the_loop_of_vjps(case, dt):
    """Reverse mode through the batched computation (the rules' outputs differentiated)
    equals each example's VJP, for the inexact operands batched at a trailing axis."""
    layout = "first_only" if case.name in BATCHED_SIZE else "trailing"
    f, args, axes = _batched_case(case, dt, layout)
    active = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind in "fc"]
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))

    def batched(*xs: Any) -> Any:
        full = list(args)
        for i, x in zip(active, xs, strict=True):
            full[i] = x
        return tuple(flatten(tf.vmap(f, in_axes=tuple(axes))(*full))[0])

    out, pullback = tf.vjp(batched, *[args[i] for i in active])
    cts = tuple(
        np.asarray(rng.standard_normal(np.shape(o)), dtype=np.asarray(o).dtype) for o in out
    )
    if any(np.asarray(o).dtype.kind not in "fc" for o in out):
        pytest.skip("an output has no cotangent (integer or bool)")
    got = pullback(cts)
    for k in range(BATCH):
        example = [
            np.asarray(a) if d is None else np.take(a, k, axis=d)
            for a, d in zip(args, axes, strict=True)
        ]

        def single(*xs: Any, example: list[Any] = example) -> Any:
            full = list(example)
            for i, x in zip(active, xs, strict=True):
                full[i] = x
            return tuple(flatten(f(*[tf.asarray(v) for v in full]))[0])

        _, pull_one = tf.vjp(single, *[example[i] for i in active])
        expected = pull_one(tuple(np.take(c, k, axis=0) for c in cts))
        for position, (g, e) in enumerate(zip(got, expected, strict=True)):
            axis = axes[active[position]]
            g_k = np.asarray(g) if axis is None else np.take(np.asarray(g), k, axis=axis)
            if axis is None:
                continue  # an unbatched operand's cotangent sums over the batch
            np.testing.assert_allclose(g_k, np.asarray(e), rtol=1e-6, atol=1e-8)
