"""Transforms cache their programs by the structure of a trace; two functions whose
traces have one structure but read their arguments in different roles
(``a * exp(b)`` and ``b * exp(a)``) must not share a program. ``vmap`` did share one
(its key left out which argument feeds each input of the structure), so ``jacfwd`` with
``argnums=(1, 0)`` after ``(0, 1)`` returned the blocks of the earlier call (found by
``test_argnums``).

The generator: every transform applied, one after the other, to the functions of every
permutation of the roles of three arguments, against the same calls each made with
empty caches.

``jit``'s static arguments are keys by type and value: ``2`` and ``2.0``, ``0.0`` and
``-0.0``, ``nan``, also inside tuples, are equal by ``==`` (``jit`` once compared them so
and shared a trace) but each gets its own trace.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf

A, B, C = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.75]), np.array([0.3, 0.9, -0.2])
T1, T2, T3 = np.array([1.0, 0.5, -2.0]), np.array([0.0, 1.0, 0.25]), np.array([-1.0, 0.0, 3.0])
W = np.array([0.7, -0.4, 1.1])
ROLES = list(itertools.permutations(range(3)))


def function(roles: tuple[int, ...]) -> Callable[..., Any]:
    first, second, third = roles
    return lambda *x: x[first] * tf.exp(x[second]) - tf.sin(x[third]) * x[first]


def total(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *x: tf.sum(f(*x))


TRANSFORMS: dict[str, Callable[[Callable[..., Any]], Any]] = {
    "vmap": lambda f: tf.vmap(f)(A[:, None], B[:, None], C[:, None]),
    "vmap in_axes": lambda f: tf.vmap(f, in_axes=(0, None, 0))(A[:, None], B, C[:, None]),
    "jit": lambda f: tf.jit(f)(A, B, C),
    "grad": lambda f: tf.grad(total(f), argnums=(0, 1, 2))(A, B, C),
    "value_and_grad": lambda f: tf.value_and_grad(total(f), argnums=(2, 0))(A, B, C),
    "jvp": lambda f: tf.jvp(f, (A, B, C), (T1, T2, T3)),
    "vjp": lambda f: tf.vjp(f, A, B, C)[1](W),
    "linearize": lambda f: tf.linearize(f, A, B, C)[1](T1, T2, T3),
    "hvp": lambda f: tf.hvp(total(f), (A, B, C), (T1, T2, T3)),
    "jacfwd": lambda f: tf.jacfwd(f, argnums=(0, 1, 2))(A, B, C),
    "jacrev": lambda f: tf.jacrev(f, argnums=(1, 2, 0))(A, B, C),
    "hessian": lambda f: tf.hessian(total(f), argnums=(0, 2))(A, B, C),
}


def _leaves(value: Any) -> list[np.ndarray[Any, Any]]:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [np.asarray(value)]


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_cached_programs_keep_the_roles_of_arguments(name: str) -> None:
    apply = TRANSFORMS[name]
    tf.clear_caches()
    warm = [_leaves(apply(function(roles))) for roles in ROLES]  # later calls hit caches
    for roles, got in zip(ROLES, warm, strict=True):
        tf.clear_caches()
        fresh = _leaves(apply(function(roles)))
        assert len(got) == len(fresh)
        for g, f in zip(got, fresh, strict=True):
            np.testing.assert_array_equal(g, f, err_msg=f"{name}, roles {roles}")
    distinct = {tuple(np.concatenate([leaf.ravel() for leaf in w]).round(12)) for w in warm}
    assert len(distinct) == len(ROLES)  # the six functions differ: the check can fail


# ---------------------------------------------------------------------- static arguments


def test_jit_static_arguments_of_equal_value_and_other_type_trace_anew() -> None:
    x = np.array([1, 2])
    scaled = tf.jit(lambda v, n: v * n, static_argnums=1)
    assert scaled(x, 2).dtype == np.int64
    assert scaled(x, 2.0).dtype == np.float64
    inverse = tf.jit(lambda v, s: v / s, static_argnums=1)
    assert np.asarray(inverse(np.array([1.0]), 0.0))[0] == np.inf
    assert np.asarray(inverse(np.array([1.0]), -0.0))[0] == -np.inf


# Static values equal by ``==`` that a function may treat differently: by type, by a
# float's sign or NaN, also inside tuples.
_LOOKALIKES = [
    2,
    2.0,
    True,
    1,
    1.0,
    np.float32(2.0),
    np.float64(2.0),
    np.int64(2),
    2 + 0j,
    0.0,
    -0.0,
    np.float64(-0.0),
    float("nan"),
    (0.0,),
    (-0.0,),
    (2,),
    (2.0,),
    ((2, 0.0),),
]


def _static_use(v: Any, s: Any) -> Any:
    """A function whose result shows a static value's type, sign and NaN."""
    items = s if isinstance(s, tuple) else (s,)
    while items and isinstance(items[0], tuple):
        items = items[0]
    out = v
    for item in items:
        out = out * item + 1 / (item if item == item and item != 0 else np.copysign(1.0, item))
    return out


@pytest.mark.parametrize("by_name", [False, True], ids=["argnums", "argnames"])
def test_jit_static_lookalikes_each_match_the_plain_call(by_name: bool) -> None:
    """Every order of the lookalikes through one jit: each call equals the function
    called directly, value (bits) and dtype, so no call reused another's trace."""
    x = np.array([1.5, -2.0], dtype=np.float32)
    jitted = (
        tf.jit(lambda v, s: _static_use(v, s), static_argnames="s")
        if by_name
        else tf.jit(_static_use, static_argnums=1)
    )
    order = list(_LOOKALIKES) + list(reversed(_LOOKALIKES))
    for value in order:
        got = jitted(x, s=value) if by_name else jitted(x, value)
        with np.errstate(all="ignore"):
            expected = np.asarray(_static_use(tf.asarray(x), value))
        got = np.asarray(got)
        assert got.dtype == expected.dtype, value
        for part in (np.real, np.imag):
            np.testing.assert_array_equal(
                np.signbit(part(got)), np.signbit(part(expected)), err_msg=repr(value)
            )
        np.testing.assert_array_equal(got, expected, err_msg=repr(value))
