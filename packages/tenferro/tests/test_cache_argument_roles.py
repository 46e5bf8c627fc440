"""Transforms cache their programs by the structure of a trace; two functions whose
traces have one structure but read their arguments in different roles
(``a * exp(b)`` and ``b * exp(a)``) must not share a program. ``vmap`` did share one
(its key left out which argument feeds each input of the structure), so ``jacfwd`` with
``argnums=(1, 0)`` after ``(0, 1)`` returned the blocks of the earlier call (found by
``test_argnums``).

The generator: every transform applied, one after the other, to the functions of every
permutation of the roles of three arguments, against the same calls each made with
empty caches.
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
