"""Results that cannot carry a derivative (bool and integer dtypes) of tracked operands are
untracked, as in PyTorch: comparisons, ``isnan``, ``argmax``... give ``requires_grad=False``
for every public function, and a condition computed from tracked tensors broadcasts in
``tf.where`` on the tape as it does in traced mode."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tenferro as tf


def _public_functions() -> list[str]:
    return sorted(
        name
        for name in tf.__all__
        if inspect.isfunction(getattr(tf, name)) and not name.startswith("_")
    )


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value] if isinstance(value, tf.EagerTensor) else []


def _calls(name: str) -> list[Any]:
    """What ``tf.<name>`` gives for one and two tracked float64 operands (the calls it
    accepts)."""
    function = getattr(tf, name)
    x = tf.tensor([[0.5, -1.5], [2.0, 0.25]], requires_grad=True)
    y = tf.tensor([[1.5, -1.5], [0.0, 3.0]], requires_grad=True)
    results = []
    for args in ((x,), (x, y)):
        try:
            results.append(function(*args))
        except (TypeError, ValueError, IndexError, ArithmeticError, tf.TenferroError):
            continue
    return results


@pytest.mark.parametrize("name", _public_functions())
def test_bool_and_integer_results_of_tracked_operands_are_untracked(name: str) -> None:
    for result in _calls(name):
        for leaf in _leaves(result):
            if leaf.dtype.kind not in "fc":
                assert not leaf.requires_grad, (name, leaf.dtype)


def test_the_table_reaches_the_integer_and_bool_results() -> None:
    kinds = {
        leaf.dtype.kind
        for name in ("greater", "equal", "isnan", "argmax", "argsort", "logical_not")
        for result in _calls(name)
        for leaf in _leaves(result)
    }
    assert kinds == {"b", "i"}
    assert all(leaf.requires_grad for leaf in _leaves(_calls("add")))


def test_comparison_operators_of_tracked_tensors_are_untracked() -> None:
    x = tf.tensor([1.0, -2.0], requires_grad=True)
    for result in (x > 0, x >= 0, x < 0, x <= 0, x == 1, x != 1, ~(x > 0), (x > 0) & (x < 2)):
        assert result.dtype == np.bool_
        assert not result.requires_grad
        assert result.is_leaf


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


@fuzz_settings(60)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, base_shape=(), max_dims=3),
    seed=st.integers(0, 2**16),
)
def test_where_with_a_tracked_condition_broadcasts_on_the_tape_as_when_traced(
    shapes: Any, seed: int
) -> None:
    cond_shape, x_shape, y_shape = shapes.input_shapes
    rng = np.random.default_rng(seed)
    c, x, y = (rng.standard_normal(s) for s in (cond_shape, x_shape, y_shape))
    expected = np.where(c > 0, x, y)
    weights = rng.standard_normal(expected.shape)

    def loss(c: Any, x: Any, y: Any) -> Any:
        return tf.sum(tf.where(c > 0, x * c, y) * weights)

    tape = tf.Tape()
    leaves = [tape.track(v) for v in (c, x, y)]
    value = tf.where(leaves[0] > 0, leaves[1], leaves[2])
    np.testing.assert_array_equal(value.detach(), expected)
    eager = tape.grad(loss(*leaves), leaves)
    traced = tf.grad(loss, argnums=(0, 1, 2))(c, x, y)
    for a, b in zip(eager, traced, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
