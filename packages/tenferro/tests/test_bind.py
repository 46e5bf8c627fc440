"""``Primitive.bind``, the one entry point that applies a primitive, and the
``tf.lax`` functions written over it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tenferro as tf
from tenferro import lax

BINARY = {
    tf.ops.Add: np.add,
    tf.ops.Sub: np.subtract,
    tf.ops.Mul: np.multiply,
    tf.ops.Maximum: np.maximum,
    tf.ops.Minimum: np.minimum,
}
UNARY = {
    tf.ops.Neg: np.negative,
    tf.ops.Exp: np.exp,
    tf.ops.Sin: np.sin,
    tf.ops.Tanh: np.tanh,
    tf.ops.Abs: np.abs,
}

finite = st.floats(-10, 10, allow_nan=False, width=64)
pairs = hnp.array_shapes(min_dims=0, max_dims=3, max_side=4).flatmap(
    lambda shape: st.tuples(
        hnp.arrays(np.float64, shape, elements=finite),
        hnp.arrays(np.float64, shape, elements=finite),
    )
)


def _kinds() -> dict[str, Callable[[np.ndarray[Any, Any]], Any]]:
    tape = tf.Tape()
    return {"Tensor": tf.Tensor, "EagerTensor": tape.track, "TracedTensor": tf.traced}


def _value(result: Any) -> np.ndarray[Any, Any]:
    if isinstance(result, tf.TracedTensor):
        return np.asarray(result.eval())
    return np.asarray(result)


@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
@pytest.mark.parametrize("primitive", list(BINARY), ids=lambda p: p.name)
@fuzz_settings(25)
@given(data=pairs)
def test_bind_applies_binary_primitives_to_every_kind(primitive, kind, data):
    x, y = data
    make = _kinds()[kind]
    result = primitive.bind(make(x), make(y))
    assert type(result) is type(make(x))
    np.testing.assert_array_equal(_value(result), BINARY[primitive](x, y))


@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
@pytest.mark.parametrize("primitive", list(UNARY), ids=lambda p: p.name)
@fuzz_settings(25)
@given(data=pairs)
def test_bind_applies_unary_primitives_to_every_kind(primitive, kind, data):
    x, _ = data
    result = primitive.bind(_kinds()[kind](x))
    np.testing.assert_allclose(_value(result), UNARY[primitive](x), rtol=1e-15, atol=0)


@given(data=pairs)
def test_bind_lifts_mixed_kinds_to_the_highest(data):
    x, y = data
    result = tf.ops.Mul.bind(tf.Tensor(x), tf.traced(y))
    assert isinstance(result, tf.TracedTensor)
    np.testing.assert_array_equal(_value(result), x * y)


def test_bind_passes_parameters_and_shares_instances():
    x = tf.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(tf.ops.ReduceSum.bind(x, axes=(1,)), [3.0, 12.0])
    assert tf.ops.Transpose.bind(x, permutation=(1, 0)).shape == (3, 2)
    meta = (x.meta,)
    assert tf.ops.ReduceSum.make(meta, axes=(1,)) is tf.ops.ReduceSum.make(meta, axes=(1,))


def test_bind_rejects_bad_parameters_at_the_call():
    x = tf.asarray(np.ones((2, 3)))
    with pytest.raises(tf.TenferroError, match=r"reduce_sum.*hashable"):
        tf.ops.ReduceSum.bind(x, axes=[0])
    with pytest.raises(tf.AxisError, match="reduce_sum"):
        tf.ops.ReduceSum.bind(x, axes=(5,))


def test_bind_without_operands_takes_the_kind_of_like():
    bits = np.float32(2.5).tobytes()
    traced_like = tf.traced(np.ones(2))
    result = tf.ops.Constant.bind(like=traced_like, dtype=np.dtype(np.float32), bits=bits)
    assert isinstance(result, tf.TracedTensor)
    assert _value(result) == np.float32(2.5)
    with pytest.raises(tf.TenferroError, match="like"):
        tf.ops.Constant.bind(dtype=np.dtype(np.float32), bits=bits)


@tf.extension.register("test_bind.split_sign")
class SplitSign(tf.extension.ExtensionOp):
    """Two outputs: the positive and the negative part."""

    def infer(self) -> Any:
        return [self.inputs[0], self.inputs[0]]

    def impl(self, x: Any) -> Any:
        return np.maximum(x, 0), np.minimum(x, 0)


@tf.extension.register("test_bind.double")
class Double(tf.extension.ExtensionOp):
    def infer(self) -> Any:
        return self.inputs

    def impl(self, x: Any) -> Any:
        return x * 2


@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
def test_bind_returns_one_output_or_the_tuple_of_outputs(kind):
    x = np.array([-1.0, 2.0, -3.0])
    make = _kinds()[kind]
    single = Double.bind(make(x))
    assert not isinstance(single, tuple)
    np.testing.assert_array_equal(_value(single), 2 * x)
    both = SplitSign.bind(make(x))
    assert isinstance(both, tuple)
    assert len(both) == 2
    np.testing.assert_array_equal(_value(both[0]), np.maximum(x, 0))
    np.testing.assert_array_equal(_value(both[1]), np.minimum(x, 0))


def test_bind_inside_jit_and_rules():
    x = np.array([0.5, -1.0, 2.0])
    jitted = tf.jit(lambda v: tf.ops.Mul.bind(v, tf.ops.Sin.bind(v)))
    np.testing.assert_allclose(jitted(x), x * np.sin(x), rtol=1e-15)
    gradient = tf.grad(lambda v: lax.reduce_sum(tf.ops.Mul.bind(v, tf.ops.Sin.bind(v)), (0,)))
    np.testing.assert_allclose(gradient(x), np.sin(x) + x * np.cos(x), rtol=1e-14)


def test_every_lax_function_has_a_docstring():
    undocumented = [
        name
        for name in lax.__all__
        if inspect.isfunction(getattr(lax, name))
        and not (inspect.getdoc(getattr(lax, name)) or "").strip()
    ]
    assert undocumented == []
