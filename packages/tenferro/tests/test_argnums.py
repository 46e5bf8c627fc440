"""Every transform taking ``argnums`` reads its positions with one reader
(``tenferro.core.params.argnum_positions``), so all treat them alike (review s21:
``jacfwd``/``jacrev``/``hessian`` gave zeros for the first copy of a repeated argnum
while ``grad`` gave each copy its gradient):

* a repeated position gives the derivative with respect to that argument at each place
  it is listed (JAX 0.10.2 has no rule for it: its transforms fail with an internal
  ``TypeError``), negative positions counting from the end;
* a position out of range raises ``ParameterError`` naming the transform.

Complete: every public function with an ``argnums`` parameter is in :data:`TRANSFORMS`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf

A = np.array([0.5, -1.0, 2.0])
B = np.array([1.5, 0.25, -0.75])


def scalar(a: Any, b: Any) -> Any:
    return tf.sum(a * a * b + tf.sin(b) * a)


def vector(a: Any, b: Any) -> Any:
    return a * tf.exp(b) + b * b


def _derivatives(name: str) -> Callable[[Any], Any]:
    """The transform ``name`` applied to its test function at ``(A, B)``: the
    derivatives only (``value_and_grad``'s value dropped)."""
    transform = getattr(tf, name)
    if name == "value_and_grad":
        return lambda argnums: transform(scalar, argnums=argnums)(A, B)[1]
    function = vector if name in ("jacfwd", "jacrev", "jacobian") else scalar
    return lambda argnums: transform(function, argnums=argnums)(A, B)


TRANSFORMS = ["grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian"]
NESTED = {"hessian"}
"""Transforms whose result is indexed by two positions (a block per pair)."""


def test_every_transform_taking_argnums_is_here() -> None:
    found = set()
    for name in tf.__all__:
        value = getattr(tf, name)
        if callable(value) and not isinstance(value, type):
            try:
                parameters = inspect.signature(value).parameters
            except (TypeError, ValueError):
                continue
            if "argnums" in parameters:
                found.add(name)
    assert found == set(TRANSFORMS)


def _assert_blocks(got: Any, expected: Any) -> None:
    if isinstance(expected, tuple):
        assert isinstance(got, tuple)
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            _assert_blocks(g, e)
        return
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("argnums", [(0, 0), (1, 1), (1, 0, 1), (-1, 1), (0, -2, 1, 0)])
def test_a_repeated_argnum_gives_the_derivative_at_each_place(
    name: str, argnums: tuple[int, ...]
) -> None:
    derive = _derivatives(name)
    distinct = derive((0, 1))
    positions = [p % 2 for p in argnums]
    if name in NESTED:
        expected = tuple(tuple(distinct[i][j] for j in positions) for i in positions)
    else:
        expected = tuple(distinct[p] for p in positions)
    _assert_blocks(derive(argnums), expected)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_the_distinct_derivatives_are_not_zero(name: str) -> None:
    """The reference above is informative: every block of the distinct call is nonzero."""
    result = _derivatives(name)((0, 1))
    blocks = [b for row in result for b in row] if name in NESTED else list(result)
    for block in blocks:
        assert np.any(np.asarray(block) != 0)


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("argnums", [2, (0, 2), (-3,), (1, -3)])
def test_a_position_out_of_range_names_the_transform(name: str, argnums: Any) -> None:
    with pytest.raises(tf.ParameterError) as caught:
        _derivatives(name)(argnums)
    assert caught.value.op == name if name != "jacobian" else "jacrev"
    assert "argnums" in str(caught.value)
    assert "2 positional argument" in str(caught.value)


def three(x: Any, y: Any, z: Any) -> Any:
    return tf.sum(x * x * y) + z * tf.sum(y)


X3, Y3, Z3 = np.array([1.0, 2.0]), np.array([3.0, -1.0]), 0.5
CLOSED_FORM = {0: 2 * X3 * Y3, 1: X3 * X3 + Z3, 2: np.sum(Y3)}
"""``three``'s derivative with respect to each position."""

ENCODINGS: list[tuple[Any, Any]] = [
    (1, 1),
    (np.int64(1), 1),
    (np.array(1), 1),
    (-1, 2),
    (-3, 0),
    ((1,), (1,)),
    ([1], (1,)),
    (np.array([1]), (1,)),
    ((0, 1), (0, 1)),
    ((2, 0), (2, 0)),
    ((-1, 0), (2, 0)),
    ((0, 0), (0, 0)),
    ((np.int64(1), -2), (1, 1)),
    ([0, 1], (0, 1)),
]
"""(an ``argnums`` encoding, the position it names or the positions a sequence names)."""


@pytest.mark.parametrize("name", [n for n in TRANSFORMS if n not in NESTED])
def test_every_argnums_encoding_gives_the_derivatives_of_the_positions_it_names(
    name: str,
) -> None:
    """One integer (Python, numpy, 0-d array, negative) gives one derivative; a sequence
    (tuple, list, 1-d array, repeated and negative entries) a tuple of them, against the
    closed form (``jacfwd``/``jacrev`` of a real scalar function are its gradient)."""
    for argnums, positions in ENCODINGS:
        got = getattr(tf, name)(three, argnums=argnums)(X3, Y3, Z3)
        if name == "value_and_grad":
            got = got[1]
        if isinstance(positions, int):
            assert not isinstance(got, tuple), (name, argnums)
            np.testing.assert_allclose(np.asarray(got), CLOSED_FORM[positions], rtol=1e-14)
            continue
        assert isinstance(got, tuple), (name, argnums)
        assert len(got) == len(positions), (name, argnums)
        for block, position in zip(got, positions, strict=True):
            np.testing.assert_allclose(np.asarray(block), CLOSED_FORM[position], rtol=1e-14)
