"""Every differentiable primitive, in every inexact dtype it supports, checked three ways.

For each case ``tf.testing.check_grads(order=2)`` checks the JVP against finite
differences, the VJP against the JVP by the adjoint identity, and then all four
second-order paths (forward/reverse over forward/reverse) the same way. A
separate test checks that forward-over-reverse and reverse-over-reverse
Hessian-vector products agree. Shapes include rank 0 and size 0 where the op
allows them. The oracle database and the golden numbers are replayed elsewhere.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest
import rule_cases_iterative
import rule_cases_solvers
import rule_cases_spectral
from rule_cases import CASES as CORE_CASES
from rule_cases import EXEMPT as CORE_EXEMPT
from rule_cases import SETTINGS, Case
from sampling import first_value, sample_product
from tenferro_support import dtype_id, output_weights, real_loss, sample

import tenferro as tf
from tenferro.core.families import families
from tenferro.core.primitive import TensorPrimitive

CASES = [
    *CORE_CASES,
    *rule_cases_spectral.CASES,
    *rule_cases_solvers.CASES,
    *rule_cases_iterative.CASES,
]
EXEMPT = {**CORE_EXEMPT, **rule_cases_iterative.EXEMPT}


def _inexact_count(case: Case, dt: np.dtype[Any]) -> int:
    """How many inexact operands the case has, when more than one (else 0)."""
    _, args = case.build(dt, case.shapes[-1], np.random.default_rng(0))
    count = sum(np.asarray(a).dtype.kind in "fc" for a in args)
    return count if count > 1 else 0


PARAMS_STATIC = sample_product(
    (
        pytest.param(case, dt, shape, id=f"{case.name}-{dtype_id(dt)}-{shape}")
        for case in CASES
        if case.static_output
        for dt in case.dtypes
        for shape in case.shapes
    ),
    per=first_value,
)

PARAMS = sample_product(
    (
        pytest.param(case, dt, shape, id=f"{case.name}-{dtype_id(dt)}-{shape}")
        for case in CASES
        for dt in case.dtypes
        for shape in case.shapes
    ),
    per=first_value,
)
"""Every rule case in every dtype and shape (the quick tier: a sample of each rule's)."""


def _seed(case: Case, dt: np.dtype[Any], shape: tuple[int, ...]) -> int:
    return zlib.crc32(f"{case.name}/{dt.name}/{shape}".encode())


@pytest.mark.parametrize(("case", "dt", "shape"), PARAMS)
def test_rules_against_finite_differences_and_adjoint_to_second_order(case, dt, shape):
    rng = np.random.default_rng(_seed(case, dt, shape))
    f, args = case.build(dt, shape, rng)
    tf.testing.check_grads(f, args, order=2, modes=("fwd", "rev"), **SETTINGS[dt.name])


@pytest.mark.parametrize(("case", "dt", "shape"), PARAMS_STATIC)
def test_forward_over_reverse_equals_reverse_over_reverse(case, dt, shape):
    rng = np.random.default_rng(_seed(case, dt, shape) + 7)
    f, raw = case.build(dt, shape, rng)
    args = [tf.asarray(a) for a in raw]  # lax functions take tensors only
    free = [i for i, a in enumerate(args) if a.dtype.kind in "fc"]

    def restricted(*xs: Any) -> Any:
        full = list(args)
        for i, x in zip(free, xs, strict=True):
            full[i] = x
        return f(*full)

    primals = tuple(args[i] for i in free)
    loss = real_loss(restricted, output_weights(restricted, list(primals), rng))
    directions = tuple(sample(p.shape, p.dtype, rng) for p in primals)
    forward_over_reverse = tf.hvp(loss, primals, directions)
    if len(primals) == 1:
        forward_over_reverse = (forward_over_reverse,)

    def directional(*xs: Any) -> Any:
        gradients = tf.grad(loss, argnums=tuple(range(len(xs))))(*xs)
        total = tf.zeros((), np.float64)
        for g, v in zip(gradients, directions, strict=True):
            total = total + tf.real(tf.vdot(tf.asarray(v), g))
        return total

    reverse_over_reverse = tf.grad(directional, argnums=tuple(range(len(primals))))(*primals)
    tol = 1e-3 if dt in (np.dtype("float32"), np.dtype("complex64")) else 1e-9
    for a, b in zip(forward_over_reverse, reverse_over_reverse, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


PARAMS_MULTI = sample_product(
    (
        pytest.param(case, dt, position, id=f"{case.name}-{dtype_id(dt)}-arg{position}")
        for case in CASES
        for dt in case.dtypes
        for position in range(3)
        if position < _inexact_count(case, dt)
    ),
    per=first_value,
)


@pytest.mark.parametrize(("case", "dt", "position"), PARAMS_MULTI)
def test_rules_with_one_active_operand(case, dt, position):
    """Multi-operand rules with all but one operand fixed (the others' tangents are None)."""
    rng = np.random.default_rng(_seed(case, dt, (position,)))
    shape = case.shapes[-1]
    f, raw = case.build(dt, shape, rng)
    args = [tf.asarray(a) for a in raw]
    inexact = [i for i, a in enumerate(args) if a.dtype.kind in "fc"]
    active = inexact[position]

    def only(x: Any) -> Any:
        full = list(args)
        full[active] = x
        return f(*full)

    tf.testing.check_grads(only, [raw[active]], order=2, **SETTINGS[dt.name])


# ---------------------------------------------------------------------- completeness gate


def _exported_primitives() -> dict[str, type[TensorPrimitive]]:
    """Every primitive of ``tf.ops``, every family of the library and every extension
    family defined inside tenferro, by name."""
    found = {
        cls.name: cls
        for cls in (getattr(tf.ops, n) for n in tf.ops.__all__)
        if isinstance(cls, type) and issubclass(cls, TensorPrimitive) and cls is not TensorPrimitive
    }
    found.update(families())  # the library's families (tf.linalg, the solvers)
    for name, family in tf.extension.families().items():
        # Families defined inside tenferro (functional ones made by define() live in
        # tenferro.extension itself, whoever defined them: those are users').
        if family.__module__.startswith("tenferro.") and family.__module__ != "tenferro.extension":
            found[name] = family
    return found


def _primitives_run_by(case: Case, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The names of the primitives a case applies (observed on concrete tensors)."""
    seen: set[str] = set()
    original = tf.Tensor.__dict__["_bind"].__func__

    def spy(cls: Any, op: Any, operands: Any, like: Any = None) -> Any:
        seen.add(op.name)
        return original(cls, op, operands, like)

    with monkeypatch.context() as patch:
        patch.setattr(tf.Tensor, "_bind", classmethod(spy))
        dt = case.dtypes[-1]
        f, raw = case.build(dt, case.shapes[-1], np.random.default_rng(0))
        f(*[tf.Tensor(a) for a in raw])
    return seen


def test_every_exported_primitive_has_a_rule_case_or_a_reason(monkeypatch):
    covered: set[str] = set()
    for case in CASES:
        covered |= _primitives_run_by(case, monkeypatch)
    missing = sorted(set(_exported_primitives()) - covered - set(EXEMPT))
    assert not missing, f"primitives with neither a rule case nor an EXEMPT reason: {missing}"
    stale = sorted(set(EXEMPT) - set(_exported_primitives()))
    assert not stale, f"EXEMPT names primitives that do not exist: {stale}"
