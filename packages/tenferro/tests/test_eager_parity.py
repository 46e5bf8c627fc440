"""Eager and traced modes give the same derivatives, for every primitive and the surface.

The cases are not listed here: they are the primitive table of
``test_primitive_rules`` (every primitive, every dtype it supports) and the
surface functions of the oracle replay (``oracle_ops``), run on the oracle
database's own inputs. For each, the gradient of a real loss, a JVP and a
Hessian-vector product are computed with the eager tape and with the traced
transforms, and must agree.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import oracle_database
import pytest
from oracle_table import OBSERVABLES, OPS, SKIPPED_OPS
from sampling import first_value, sample_product
from tenferro_support import output_weights, real_loss, sample
from test_oracles import _array, output_keys, skip_reason
from test_primitive_rules import CASES, dtype_id

import tenferro as tf


def _tolerance(dtype: np.dtype[Any]) -> float:
    return 1e-4 if dtype in (np.dtype("float32"), np.dtype("complex64")) else 1e-10


def _check_parity(f: Any, args: list[Any], seed: int) -> None:
    rng = np.random.default_rng(seed)
    tensors = [tf.asarray(a) for a in args]
    free = [i for i, t in enumerate(tensors) if t.dtype.kind in "fc"]
    if not free:
        return

    def restricted(*xs: Any) -> Any:
        full = list(tensors)
        for i, x in zip(free, xs, strict=True):
            full[i] = x
        return f(*full)

    primals = [np.asarray(tensors[i]) for i in free]
    loss = real_loss(restricted, output_weights(restricted, [tensors[i] for i in free], rng))
    directions = [sample(p.shape, p.dtype, rng) for p in primals]
    tol = max(_tolerance(p.dtype) for p in primals)

    tape = tf.Tape()
    leaves = [tape.track(p) for p in primals]
    # A function transform's gradient of an unused argument is zeros (as jax.grad's); the
    # tape's is None with allow_unused (as torch.autograd.grad's).
    eager = tape.grad(loss(*leaves), leaves, allow_unused=True)
    traced = tf.grad(loss, argnums=tuple(range(len(primals))))(*primals)
    for a, b in zip(eager, traced, strict=True):
        if a is None:
            assert not np.any(np.asarray(b))
            continue
        scale = max(1.0, float(np.max(np.abs(np.asarray(b)), initial=0.0)))
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=tol * scale)

    _, eager_tangent = tape.jvp(loss, primals, directions)
    _, traced_tangent = tf.jvp(loss, tuple(primals), tuple(directions))
    scale = max(1.0, abs(complex(np.asarray(traced_tangent))))
    np.testing.assert_allclose(eager_tangent, traced_tangent, rtol=0, atol=tol * scale)

    eager_hvp = tape.hvp(loss, primals, directions)
    traced_hvp = tf.hvp(loss, tuple(primals), tuple(directions))
    if len(primals) == 1:
        eager_hvp, traced_hvp = [eager_hvp], [traced_hvp]
    for a, b in zip(eager_hvp, traced_hvp, strict=True):
        scale = max(1.0, float(np.max(np.abs(np.asarray(b)), initial=0.0)))
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=tol * scale)


PRIMITIVE_PARAMS = sample_product(
    (
        pytest.param(case, dt, id=f"{case.name}-{dtype_id(dt)}")
        for case in CASES
        if case.static_output  # data-dependent extents are compared via truncate_then_pad
        for dt in case.dtypes
    ),
    per=first_value,
)


@pytest.mark.parametrize(("case", "dt"), PRIMITIVE_PARAMS)
def test_primitives_eager_equals_traced(case, dt):
    seed = zlib.crc32(f"{case.name}/{dt.name}".encode())
    f, args = case.build(dt, case.shapes[-1], np.random.default_rng(seed))
    _check_parity(f, args, seed)


def _surface_groups() -> list[Any]:
    """``(op, dtype)`` of every replayed op of the oracle database, from its index (the
    case of each is chosen when the test runs: collection parses no case)."""
    groups = {
        (ref.op, ref.dtype)
        for ref in oracle_database.index()
        if ref.op in OPS and ref.op not in SKIPPED_OPS
    }
    return sample_product(
        (pytest.param(op, dtype, id=f"{op}-{dtype}") for op, dtype in sorted(groups)),
        per=first_value,
    )


def _first_case(op: str, dtype: str) -> dict[str, Any] | None:
    """The first case of ``(op, dtype)`` the replay does not skip and that has data (no
    empty input); ``None`` if there is none."""
    for ref in oracle_database.index():
        if ref.op != op or ref.dtype != dtype:
            continue
        case = oracle_database.load(ref)
        if skip_reason(case) is not None:
            continue
        shapes = [spec["shape"] for spec in case["inputs"].values()]
        if not any(0 in shape for shape in shapes):
            return case
    return None


@pytest.mark.parametrize(("op", "dtype"), _surface_groups())
def test_surface_eager_equals_traced(op, dtype):
    case = _first_case(op, dtype)
    if case is None:
        pytest.skip(f"{op} in {dtype}: the replay skips every case with data")
    formulation = OPS[op]
    names = sorted(case["inputs"])
    arrays = [_array(case["inputs"][name]) for name in names]
    op_args, kwargs = case.get("op_args") or [], case.get("op_kwargs") or {}
    observable = OBSERVABLES.get(case["observable"]["kind"])

    # Several outputs of an identity case: the ones it differentiates (output_0, ...).
    keys = output_keys(case["probes"][0]["cotangent"])

    def f(*xs: Any) -> Any:
        result = formulation(list(xs), op_args, kwargs)
        if observable is None and keys is not None:
            return tuple(result[int(k.removeprefix("output_"))] for k in keys)
        if observable is None:
            return result
        named = observable(result)  # the gauge-invariant outputs the case differentiates
        return tuple(named[name] for name in sorted(named))

    _check_parity(f, arrays, zlib.crc32(case["case_id"].encode()))
