"""Deep graphs: nothing recurses per node, so 100,000-op chains trace, differentiate,
compile and run."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tf

pytestmark = pytest.mark.slow

DEPTH = 100_000


def chain(x: Any) -> Any:
    for _ in range(DEPTH // 2):
        x = tf.sin(x) * 0.999
    return x


def expected_value_and_derivative(x0: float) -> tuple[float, float]:
    value, derivative = x0, 1.0
    for _ in range(DEPTH // 2):
        derivative *= np.cos(value) * 0.999
        value = np.sin(value) * 0.999
    return value, derivative


def test_traced_grad_of_a_100k_op_chain():
    x = tf.traced(0.7)
    y = chain(x)
    assert chain(x).key is y.key  # a retrace answers from the keys' memos, loop by loop
    value, derivative = expected_value_and_derivative(0.7)
    np.testing.assert_allclose(y.eval(), value, rtol=1e-9)
    np.testing.assert_allclose(y.grad(x).eval(), derivative, rtol=1e-9)


def test_transform_grad_of_a_100k_op_chain():
    value, derivative = expected_value_and_derivative(0.3)
    v, g = tf.value_and_grad(chain)(0.3)
    np.testing.assert_allclose(v, value, rtol=1e-9)
    np.testing.assert_allclose(g, derivative, rtol=1e-9)
