"""The public functions' real-number parameters (norm orders, ranges, tolerances,
regularisations, distribution parameters), generated over their spellings: what numpy
reads as a real number (Python ints and floats, numpy scalars, 0-d arrays, concrete 0-d
tensors) gives the plain float's result exactly, and anything else (``None`` where it is
not an option, a string, a complex number, a bool, a list, a 1-d array, an object)
raises a tenferro error naming the function, the parameter and the value, never a bare
Python error (review s21: ``norm(x, ord=[3])`` and ``arange(None)`` raised bare
TypeErrors).

Complete: every public function with a parameter of a real-valued name has a case here
or an exemption with its reason (``test_every_real_parameter_has_a_case``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from integer_cases import covering, parameters_named, value

import tenferro as tf

M = np.arange(1.0, 7.0).reshape(2, 3)
S = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
V = np.array([3.0, 1.0, 2.0])


def _halving(x: Any) -> Any:
    """A contraction whose fixed point is [2, 2, 2]."""
    return 0.5 * x + 1.0


REAL_NAMES = {
    "ord", "p", "start", "stop", "step", "eps", "rtol", "atol", "tol", "rcond", "ddof",
    "loc", "scale", "low", "high", "fill_value", "a_min", "a_max",
}  # fmt: skip
"""Parameter names that hold real numbers somewhere in the surface."""


@dataclass(frozen=True)
class Real:
    """``function(**{name: v})``, which ``op`` names in its errors; ``valid`` is a value
    it takes; ``optional``: ``None`` is valid too; ``kinds`` of refusals left out (a
    complex ``loc`` is valid for a complex normal)."""

    function: Callable[..., Any]
    op: str
    name: str
    valid: float
    optional: bool = False


def _rng(method: str, **fixed: Any) -> Callable[..., Any]:
    def draw(**params: Any) -> Any:
        return getattr(tf.random.default_rng(5), method)(size=3, **fixed, **params)

    draw.__name__ = method
    return draw


CASES: dict[str, Real] = {
    "vector_norm ord": Real(lambda **p: tf.linalg.vector_norm(V, **p), "linalg.vector_norm",
                            "ord", 3.0),
    "norm ord": Real(lambda **p: tf.linalg.norm(V, **p), "linalg.norm", "ord", 3.0, True),
    "norm ord of a matrix": Real(lambda **p: tf.linalg.norm(S, **p), "linalg.norm", "ord",
                                 1.0, True),
    "matrix_norm ord": Real(lambda **p: tf.linalg.matrix_norm(S, **p), "linalg.matrix_norm",
                            "ord", -1.0),
    "cond p": Real(lambda **p: tf.linalg.cond(S, **p), "linalg.cond", "p", 1.0, True),
    "arange start": Real(lambda **p: tf.arange(stop=4.0, **p), "arange", "start", 0.5),
    "arange stop": Real(lambda **p: tf.arange(0.25, **p), "arange", "stop", 3.0, True),
    "arange step": Real(lambda **p: tf.arange(0, 3, **p), "arange", "step", 0.5, True),
    # eps=None: the default relative tie tolerance of the operand's precision.
    "eigh eps": Real(lambda **p: tf.linalg.eigh(S, **p), "linalg.eigh", "eps", 1e-9, True),
    "eig eps": Real(lambda **p: tf.linalg.eig(S, **p), "linalg.eig", "eps", 1e-9, True),
    "svd eps": Real(lambda **p: tf.linalg.svd(S, **p), "linalg.svd", "eps", 1e-9, True),
    "svdvals eps": Real(lambda **p: tf.linalg.svdvals(S, **p), "linalg.svdvals", "eps", 1e-9,
                        True),
    "truncated_svd eps": Real(lambda **p: tf.linalg.truncated_svd(S, **p),
                              "linalg.truncated_svd", "eps", 1e-9, True),
    "truncated_svd rtol": Real(lambda **p: tf.linalg.truncated_svd(S, **p),
                               "linalg.truncated_svd", "rtol", 0.25, True),
    "truncated_svd atol": Real(lambda **p: tf.linalg.truncated_svd(S, **p),
                               "linalg.truncated_svd", "atol", 1.5, True),
    "pinv rtol": Real(lambda **p: tf.linalg.pinv(S, **p), "linalg.pinv", "rtol", 0.25, True),
    "lstsq rcond": Real(lambda **p: tf.linalg.lstsq(S, V, **p), "linalg.lstsq", "rcond", 0.25,
                        True),
    "var ddof": Real(lambda **p: tf.var(M, axis=1, **p), "var", "ddof", 0.5),
    "std ddof": Real(lambda **p: tf.std(M, axis=1, **p), "std", "ddof", 1.0),
    "uniform low": Real(_rng("uniform", high=3.0), "uniform", "low", 0.5),
    "uniform high": Real(_rng("uniform", low=-1.0), "uniform", "high", 2.5),
    "normal loc": Real(_rng("normal"), "normal", "loc", 0.5),
    "normal scale": Real(_rng("normal"), "normal", "scale", 2.0),
    "fixed_point tol": Real(lambda **p: tf.fixed_point(_halving, np.zeros(3), **p),
                            "fixed_point", "tol", 1e-9, True),
    "fixed_point atol": Real(lambda **p: tf.fixed_point(_halving, np.zeros(3), **p),
                             "fixed_point", "atol", 1e-12),
    "eigsh tol": Real(lambda **p: tf.linalg.eigsh(S, **p), "linalg.eigsh", "tol", 1e-10),
    "eigsh eps": Real(lambda **p: tf.linalg.eigsh(S, **p), "linalg.eigsh", "eps", 1e-9, True),
    "eigs tol": Real(lambda **p: tf.linalg.eigs(S, **p), "linalg.eigs", "tol", 1e-10),
    "eigs eps": Real(lambda **p: tf.linalg.eigs(S, **p), "linalg.eigs", "eps", 1e-9, True),
}  # fmt: skip
for _solver in ("cg", "gmres", "bicgstab"):
    for _name, _valid, _optional in (
        ("rtol", 1e-9, True),
        ("tol", 1e-9, True),
        ("atol", 1e-12, False),
    ):
        CASES[f"{_solver} {_name}"] = Real(
            lambda _s=_solver, **p: getattr(tf.linalg, _s)(S, V, **p)[0],
            f"linalg.{_solver}", _name, _valid, _optional,
        )  # fmt: skip

EXEMPT: dict[tuple[str, str], str] = {
    ("tf.linspace", "start"): "array-like, as numpy's (broadcast endpoints)",
    ("tf.linspace", "stop"): "array-like, as numpy's (broadcast endpoints)",
    ("tf.full", "fill_value"): "array-like and complex, as numpy's",
    ("tf.full_like", "fill_value"): "array-like and complex, as numpy's",
    ("tf.clip", "a_min"): "an operand (array-like, broadcast)",
    ("tf.clip", "a_max"): "an operand (array-like, broadcast)",
    ("tf.linalg.matrix_rank", "tol"): "a number or one per matrix of the batch (an operand)",
    ("tf.linalg.matrix_rank", "rtol"): "a number or one per matrix of the batch (an operand)",
    ("tf.random.Generator.choice", "p"): "probabilities: an array",
    ("tf.random.Generator.integers", "low"): "an integer (test_numpy_integer_parameters)",
    ("tf.random.Generator.integers", "high"): "an integer (test_numpy_integer_parameters)",
}


def test_every_real_parameter_has_a_case() -> None:
    pairs = parameters_named(REAL_NAMES)
    covered = {(q, case.name) for case in CASES.values() for q in covering(case.op)}
    missing = [pair for pair in pairs if pair not in covered and pair not in EXEMPT]
    assert missing == []
    assert sorted(set(EXEMPT) - set(pairs)) == [], "stale exemptions"


def _spellings(number: float) -> dict[str, Any]:
    spelled = {
        "np.float64": np.float64(number),
        "0-d array": np.array(number),
        "0-d Tensor": tf.asarray(np.float64(number)),
        "0-d EagerTensor": tf.EagerTensor(np.float64(number)),
    }
    if number == int(number):
        spelled.update({"int": int(number), "np.int64": np.int64(int(number))})
    return spelled


def _refused(case: Real) -> dict[str, tuple[Any, str]]:
    """Values refused for ``case`` and what its message must show of them."""
    found = {
        "str": ("x", "'x'"),
        "complex": (1 + 2j, "(1+2j)"),
        "bool": (True, "True"),
        "list": ([case.valid], repr([case.valid])),
        "1-d array": (np.array([case.valid, case.valid]), "array(["),
        "object": (object(), "object"),
        "traced": (tf.traced(np.float64(case.valid)), "TracedTensor"),
    }
    if not case.optional:
        found["None"] = (None, "None")
    return found


def _calls() -> list[Any]:
    return [
        pytest.param(key, label, id=f"{key}-{label}")
        for key, case in sorted(CASES.items())
        for label in _spellings(case.valid)
    ]


@pytest.mark.parametrize(("key", "label"), _calls())
def test_real_spellings_give_the_plain_result(key: str, label: str) -> None:
    case = CASES[key]
    plain = case.function(**{case.name: case.valid})
    got = case.function(**{case.name: _spellings(case.valid)[label]})
    _assert_same(got, plain)


def _assert_same(got: Any, expected: Any) -> None:
    if isinstance(expected, tuple):
        for g, e in zip(got, expected, strict=True):
            _assert_same(g, e)
        return
    got, expected = value(got), value(expected)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def _refusals() -> list[Any]:
    return [
        pytest.param(key, label, id=f"{key}-{label}")
        for key, case in sorted(CASES.items())
        for label in _refused(case)
    ]


@pytest.mark.parametrize(("key", "label"), _refusals())
def test_refused_reals_raise_a_tenferro_error_naming_the_function(key: str, label: str) -> None:
    case = CASES[key]
    bad, shown = _refused(case)[label]
    with pytest.raises(tf.TenferroError) as caught:  # a bare error propagates and fails
        case.function(**{case.name: bad})
    assert caught.value.op == case.op, str(caught.value)
    assert shown in str(caught.value), str(caught.value)
    assert case.name in str(caught.value), str(caught.value)


def test_arange_of_none_raises_a_parameter_error() -> None:
    with pytest.raises(tf.ParameterError, match="arange"):
        tf.arange(None)


def test_a_complex_loc_draws_around_it_for_a_complex_dtype() -> None:
    draw = tf.random.default_rng(1).normal(1 + 2j, 1e-9, size=4, dtype=tf.complex128)
    np.testing.assert_allclose(np.asarray(draw), np.full(4, 1 + 2j), atol=1e-8)
