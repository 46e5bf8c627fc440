"""The numpy-style functions (and ``tf.linalg``, ``tf.random``, the transforms), generated
over their integer parameters: a bool, a float (integral ones too), a string, ``None``
where it is not valid, a nested list or an array of the wrong rank or dtype raises a
tenferro error of the parameter's role naming the function and the value (never a bare
Python error, never a truncation), and numpy's valid spellings (numpy ints, 0-d integer
arrays, lists, tuples, integer arrays) give the plain call's result.

Complete by construction: every public function with a parameter of an integer-valued
name (``axis``, ``shape``, ``k``, ``offset``, ``pad_width``, ``ind``, ``argnums``,
``size`` ...) has a case here or an exemption with its reason
(``test_every_integer_parameter_has_a_case``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import example, given
from hypothesis import strategies as st
from integer_cases import (
    Case,
    Encoded,
    Int,
    assert_same,
    check_encoding,
    check_extremes,
    check_refusal,
    covering,
    encoded_cases,
    parameters_named,
    refusals,
    spelled,
    value,
)

import tenferro as tf

AxisError, ShapeError, ParameterError = tf.AxisError, tf.ShapeError, tf.ParameterError
ArgumentTypeError = tf.ArgumentTypeError

M = np.arange(1.0, 7.0).reshape(2, 3)
S = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
V = np.array([3.0, 1.0, 2.0])
T = np.arange(1.0, 25.0).reshape(2, 3, 4)

INTEGER_NAMES = {
    "axis", "axes", "axis1", "axis2", "axisa", "axisb", "axisc", "source", "destination",
    "shape", "size", "k", "n", "m", "num", "offset", "ind", "pad_width", "decimals", "ddof",
    "indices_or_sections", "trans", "max_rank", "argnums", "static_argnums", "in_axes",
    "out_axes", "axis_size", "seed", "count", "low", "high", "shift", "reps", "repeats",
    "memory_limit",
}  # fmt: skip
"""Parameter names that hold integers (or sequences of them) somewhere in the surface."""


def axis(name: str = "axis", **flags: bool) -> Int:
    return Int(name, AxisError, **flags)


def axes(name: str = "axis", **flags: bool) -> Int:
    """numpy's ``axis``: one integer or a sequence of them."""
    return Int(name, AxisError, sequence=True, scalar_ok=True, **flags)


def shape(name: str = "shape", **flags: bool) -> Int:
    return Int(name, ShapeError, sequence=True, scalar_ok=True, **flags)


def count(name: str, error: type[tf.TenferroError] = ParameterError, **flags: bool) -> Int:
    return Int(name, error, **flags)


def f(v: Any, w: Any) -> Any:
    return tf.sum(v * w * w)


def _rng(method: str) -> Callable[..., Any]:
    def draw(**params: Any) -> Any:
        return getattr(tf.random.default_rng(7), method)(**params)

    draw.__name__ = method
    return draw


def _contraction(name: str) -> Callable[..., Any]:
    def contract(**params: Any) -> Any:
        result = getattr(tf, name)("ij,jk,kl->il", S, S, S, **params)
        return np.array(result[0]) if name == "einsum_path" else result  # the path

    contract.__name__ = name
    return contract


def _transform(name: str, **fixed: Any) -> Callable[..., Any]:
    def apply(**params: Any) -> Any:
        return getattr(tf, name)(f, **params, **fixed)(V, V)

    apply.__name__ = name
    return apply


def _cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}

    def add(
        key: str,
        function: Any,
        op: str,
        operands: dict[str, Any],
        params: dict[str, Any],
        *ints: Int,
    ) -> None:
        cases[key] = Case(function, op, operands, params, ints)

    for name in [
        "sum",
        "prod",
        "mean",
        "nansum",
        "nanmean",
        "max",
        "min",
        "amax",
        "amin",
        "all",
        "any",
        "logsumexp",
        "var",
        "std",
    ]:
        function = getattr(tf, name)  # amax and amin are max and min, as in numpy
        add(name, function, function.__name__, {"x": M}, {"axis": (1,)}, axes(optional=True))
    for name in ["softmax", "log_softmax"]:
        add(name, getattr(tf, name), name, {"x": M}, {"axis": (1,)}, axes(optional=True))
    for name in ["argmax", "argmin", "cumsum", "cumprod", "sort", "argsort"]:
        add(name, getattr(tf, name), name, {"x": M}, {"axis": 1}, axis(optional=True))
    for name in ["diagonal", "trace"]:
        add(
            name,
            getattr(tf, name),
            name,
            {"x": T},
            {"offset": 1, "axis1": 2, "axis2": 1},
            count("offset"),
            axis("axis1"),
            axis("axis2"),
        )
    for name in ["tril", "triu"]:
        add(name, getattr(tf, name), name, {"x": S}, {"k": -1}, count("k"))
    add(
        "take",
        tf.take,
        "take",
        {"x": M, "indices": np.array([2, 0])},
        {"axis": 1},
        axis(optional=True),
    )
    add("tensordot", tf.tensordot, "tensordot", {"x": M, "y": M.T}, {"axes": 1}, axis("axes"))
    add(
        "tensordot pairs",
        tf.tensordot,
        "tensordot",
        {"x": T, "y": T},
        {"axes": ((0, 1), (0, 1))},
        Int("axes", AxisError, sequence=True, scalar_ok=True),
    )
    for name in ["concatenate", "stack"]:
        add(name, getattr(tf, name), name, {"arrays": [M, M]}, {"axis": 1}, axis())
    add("split", tf.split, "split", {"x": M}, {"indices_or_sections": 3, "axis": 1}, axis())
    add(
        "split at",
        tf.split,
        "split",
        {"x": M},
        {"indices_or_sections": (1, 2), "axis": 1},
        Int("indices_or_sections", ParameterError, sequence=True, scalar_ok=True),
    )
    add(
        "moveaxis",
        tf.moveaxis,
        "moveaxis",
        {"x": T},
        {"source": (0, 2), "destination": (1, 0)},
        axes("source"),
        axes("destination"),
    )
    add("expand_dims", tf.expand_dims, "expand_dims", {"x": M}, {"axis": (0, 3)}, axes())
    add("squeeze", tf.squeeze, "squeeze", {"x": M[:1]}, {"axis": (0,)}, axes(optional=True))
    add(
        "swapaxes",
        tf.swapaxes,
        "swapaxes",
        {"x": T},
        {"axis1": 0, "axis2": 2},
        axis("axis1"),
        axis("axis2"),
    )
    add("flip", tf.flip, "flip", {"x": M}, {"axis": (1,)}, axes(optional=True))
    for name in ["transpose", "permute_dims"]:
        add(
            name,
            getattr(tf, name),
            "transpose",
            {"x": T},
            {"axes": (2, 0, 1)},
            Int("axes", AxisError, sequence=True, optional=True),
        )
    add("broadcast_to", tf.broadcast_to, "broadcast_to", {"x": V}, {"shape": (2, 3)}, shape())
    add("reshape", tf.reshape, "reshape", {"x": M}, {"shape": (3, 2)}, shape())
    add(
        "pad",
        tf.pad,
        "pad",
        {"x": M},
        {"pad_width": ((1, 0), (0, 2))},
        Int("pad_width", ShapeError, sequence=True, scalar_ok=True),
    )
    add("round", tf.round, "round", {"x": M / 7}, {"decimals": 2}, count("decimals"))
    add(
        "cross",
        tf.cross,
        "cross",
        {"a": M, "b": M[::-1]},
        {"axisa": 1, "axisb": -1, "axisc": 0, "axis": None},
        axis("axisa"),
        axis("axisb"),
        axis("axisc"),
    )
    add("cross axis", tf.cross, "cross", {"a": M, "b": M[::-1]}, {"axis": 1}, axis(optional=True))
    add("vecdot", tf.vecdot, "vecdot", {"x": M, "y": M}, {"axis": 0}, axis())
    add(
        "dynamic_truncate",
        tf.dynamic_truncate,
        "dynamic_truncate",
        {"x": M, "size": np.float64(2.0)},
        {"axis": 1},
        axis(),
    )
    add(
        "pad_to_match",
        tf.pad_to_match,
        "pad_to_match",
        {"x": M[:, :2], "reference": M},
        {"axis": 1},
        axis(),
    )
    for name in ["zeros", "ones"]:
        add(name, getattr(tf, name), name, {}, {"shape": (2, 3)}, shape())
    add("full", tf.full, "full", {}, {"shape": (2, 3), "fill_value": 1.5}, shape())
    add(
        "placeholder",
        lambda **p: tf.placeholder(**p).meta,
        "placeholder",
        {},
        {"shape": (2, 3)},
        shape(),
    )
    add(
        "eye",
        tf.eye,
        "eye",
        {},
        {"n": 3, "m": 4, "k": 1},
        count("n", ShapeError),
        count("m", ShapeError, optional=True),
        count("k"),
    )
    add(
        "linspace",
        tf.linspace,
        "linspace",
        {},
        {"start": 0.0, "stop": 1.0, "num": 5},
        count("num", ShapeError),
    )
    add("diag", tf.diag, "diag", {"v": V}, {"k": -1}, count("k"))
    add("diag of a matrix", tf.diag, "diag", {"v": S}, {"k": 1}, count("k"))
    add("diagflat", tf.diagflat, "diagflat", {"v": M}, {"k": 2}, count("k"))
    add(
        "roll",
        tf.roll,
        "roll",
        {"x": T},
        {"shift": (1, -2), "axis": (0, 2)},
        Int("shift", ParameterError, sequence=True, scalar_ok=True),
        axes(optional=True),
    )
    add(
        "tile",
        tf.tile,
        "tile",
        {"x": M},
        {"reps": (2, 1, 3)},
        Int("reps", ParameterError, sequence=True, scalar_ok=True),
    )
    add("repeat", tf.repeat, "repeat", {"x": M}, {"repeats": 2, "axis": 1}, axis(optional=True))
    add(
        "repeat each",
        tf.repeat,
        "repeat",
        {"x": M},
        {"repeats": (1, 0, 2), "axis": 1},
        Int("repeats", ParameterError, sequence=True, scalar_ok=True),
    )
    add("diff", tf.diff, "diff", {"a": T}, {"n": 2, "axis": 1}, count("n"), axis())
    for name in ["einsum", "einsum_path"]:
        add(
            name,
            _contraction(name),
            "einsum",
            {},
            {"memory_limit": 40},
            count("memory_limit", optional=True),
        )
    # tf.linalg
    add("matrix_power", tf.linalg.matrix_power, "matrix_power", {"a": S}, {"n": 3}, count("n"))
    add("norm", tf.linalg.norm, "linalg.norm", {"x": T}, {"axis": (0, 2)}, axes(optional=True))
    add(
        "vector_norm",
        tf.linalg.vector_norm,
        "linalg.vector_norm",
        {"x": T},
        {"axis": (2,)},
        axes(optional=True),
    )
    add(
        "matrix_norm",
        tf.linalg.matrix_norm,
        "linalg.matrix_norm",
        {"x": T},
        {"axis": (2, 0)},
        Int("axis", ShapeError, sequence=True),
    )
    add(
        "tensorinv",
        tf.linalg.tensorinv,
        "tensorinv",
        {"a": np.eye(6).reshape(2, 3, 6) + 0.1},
        {"ind": 2},
        count("ind"),
    )
    add(
        "tensorsolve",
        tf.linalg.tensorsolve,
        "tensorsolve",
        {"a": S + 1, "b": V},
        {"axes": (1,)},
        Int("axes", AxisError, sequence=True, optional=True),
    )
    add(
        "truncated_svd",
        lambda **p: tf.linalg.truncated_svd(**p).S,
        "linalg.truncated_svd",
        {"a": S},
        {"max_rank": 2},
        count("max_rank", optional=True),
    )
    for name in ["eigsh", "eigs"]:
        add(
            name,
            lambda _name=name, **p: getattr(tf.linalg, _name)(**p)[0],
            f"linalg.{name}",
            {"A": S},
            {"k": 2},
            count("k"),
        )
    lu, pivots = (np.asarray(t) for t in tf.linalg.lu_factor(S))
    add(
        "lu_solve",
        lambda lu, pivots, **p: tf.linalg.lu_solve((lu, pivots), **p),
        "lu_solve",
        {"lu": lu, "pivots": pivots},
        {"b": V, "trans": 1},
        count("trans"),
    )
    # tf.random
    add(
        "default_rng",
        lambda **p: tf.random.default_rng(**p).random(3),
        "default_rng",
        {},
        {"seed": (1, 2)},
        Int("seed", ArgumentTypeError, sequence=True, scalar_ok=True, optional=True),
    )
    for method in ["random", "standard_normal"]:
        add(method, _rng(method), method, {}, {"size": (2, 3)}, shape("size", optional=True))
    add(
        "uniform",
        _rng("uniform"),
        "uniform",
        {},
        {"low": 1.0, "high": 2.0, "size": (2,)},
        shape("size", optional=True),
    )
    add(
        "normal",
        _rng("normal"),
        "normal",
        {},
        {"loc": 1.0, "size": (3,)},
        shape("size", optional=True),
    )
    add(
        "integers",
        _rng("integers"),
        "integers",
        {},
        {"low": 2, "high": 9, "size": (4,)},
        count("low"),
        count("high", optional=True),
        shape("size", optional=True),
    )
    add(
        "choice", _rng("choice"), "choice", {}, {"a": 5, "size": (3,)}, shape("size", optional=True)
    )
    add(
        "spawn",
        lambda **p: [g.random(2) for g in tf.random.default_rng(3).spawn(**p)],
        "spawn",
        {},
        {"count": 2},
        count("count"),
    )
    # transforms
    for name in ["grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian"]:
        add(
            name,
            _transform(name),
            getattr(tf, name).__name__,
            {},
            {"argnums": (0, 1)},
            Int("argnums", ArgumentTypeError, sequence=True, scalar_ok=True),
        )
    add(
        "jit",
        lambda **p: tf.jit(lambda v, k: v * k, **p)(V, 3),
        "jit",
        {},
        {"static_argnums": (1,)},
        Int("static_argnums", ArgumentTypeError, sequence=True, scalar_ok=True),
    )
    return cases


CASES = _cases()

EXEMPT: dict[tuple[str, str], str] = {
    ("tf.var", "ddof"): "a real number, as numpy's (test_numpy_real_parameters)",
    ("tf.std", "ddof"): "a real number, as numpy's (test_numpy_real_parameters)",
    ("tf.vmap", "in_axes"): "a pytree of axes or None (tests/test_vmap.py)",
    ("tf.vmap", "out_axes"): "a pytree of axes or None (tests/test_vmap.py)",
    ("tf.vmap", "axis_size"): "checked by vmap itself (test_vmap_axis_size_is_an_integer)",
    ("tf.dynamic_truncate", "size"): "a real scalar operand, rounded (its documentation)",
    ("tf.random.Generator.uniform", "low"): "a real bound (test_numpy_real_parameters)",
    ("tf.random.Generator.uniform", "high"): "a real bound (test_numpy_real_parameters)",
}


def _covered() -> set[tuple[str, str]]:
    return {
        (qualified, param.name)
        for key, case in CASES.items()
        for qualified in covering(key.split(" ")[0])
        for param in case.ints
    }


def test_every_integer_parameter_has_a_case() -> None:
    """A public function with a parameter of an integer-valued name must have a case
    describing it, or an exemption with its reason."""
    covered, pairs = _covered(), parameters_named(INTEGER_NAMES)
    missing = [pair for pair in pairs if pair not in covered and pair not in EXEMPT]
    assert missing == []
    assert sorted(set(EXEMPT) - set(pairs)) == [], "stale exemptions"


@pytest.mark.parametrize(
    ("key", "param"), refusals(CASES), ids=[f"{k}-{p}" for k, p in refusals(CASES)]
)
def test_malformed_integer_parameters_raise_the_error_of_their_role(key: str, param: str) -> None:
    check_refusal(CASES[key], param)


GROWS = {
    ("diag", "k"),
    ("diag of a matrix", "k"),
    ("diagflat", "k"),
    ("eye", "k"),
    ("repeat", "repeats"),
    ("repeat each", "repeats"),
    ("tile", "reps"),
    ("spawn", "count"),
    ("integers", "high"),
    ("integers", "low"),
}
"""Parameters besides extents (``ShapeError``'s role) whose value sizes the result or
the work (``integers``' bounds: numpy draws in ``[low, high)`` of any width, fine, but
a huge ``low`` alone is a huge range)."""


@pytest.mark.parametrize(
    ("key", "param"), refusals(CASES), ids=[f"{k}-{p}" for k, p in refusals(CASES)]
)
def test_extreme_integers_give_a_result_or_a_tenferro_error(key: str, param: str) -> None:
    case = CASES[key]
    role = next(p for p in case.ints if p.name == param).error
    check_extremes(case, param, grows=role is ShapeError or (key, param) in GROWS)


ROUNDED = st.sampled_from(["float64", "float32", "complex128", "complex64", "int64", "int32"])


@fuzz_settings(150)
@given(
    ROUNDED,
    st.one_of(st.integers(-330, 330), st.sampled_from([-(2**63), -(10**6), 10**6, 2**63])),
    st.lists(
        st.floats(allow_nan=True, allow_infinity=True, width=64)
        | st.sampled_from([0.5, 2.5, -1.5, 1e22, 1e23, 123456.789, 5e-324]),
        min_size=1,
        max_size=6,
    ),
)
@example("float64", 309, [1.25, -3.5])  # numpy's scale 10**decimals is inf: NaN
@example("float64", 400, [1.25, -3.5])
def test_round_gives_numpys_value_at_every_decimals(
    dtype: str, decimals: int, entries: list[float]
) -> None:
    """``round`` of every dtype at any number of decimals is numpy's value bit for bit
    (review s21: 10.0**decimals overflowed at 309 decimals; from 23 on, and for negative
    decimals, the last bits differed from numpy's power of ten and division order)."""
    with np.errstate(all="ignore"):
        data = np.array(entries)
        if dtype.startswith("complex"):
            data = data + 1j * data[::-1]
        elif dtype.startswith("int"):
            data = np.nan_to_num(data, posinf=0, neginf=0).clip(-(2**31), 2**31).round()
        data = data.astype(dtype)
        # numpy takes a C int and multiplies out its power of ten; past 400 decimals the
        # power is inf either way (from 309): the value at 400 is numpy's for any beyond
        expected = np.round(data, max(min(decimals, 400), -400))
        got = np.asarray(tf.round(data, decimals))
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@fuzz_settings(120)
@given(st.data())
def test_valid_spellings_give_the_plain_result(data: st.DataObject) -> None:
    case = CASES[data.draw(st.sampled_from(sorted(CASES)))]
    assert_same(case.call(**spelled(data, case)), case.call())


@pytest.mark.parametrize("function", [tf.var, tf.std])
def test_ddof_is_a_real_number(function: Any) -> None:
    """numpy takes any real ``ddof`` (``np.var(x, ddof=0.5)``); a bool, a string or
    ``None`` is refused."""
    for ddof in [0.5, 1, np.int64(1), np.float32(1.5), np.array(0.5)]:
        expected = getattr(np, function.__name__)(M, axis=1, ddof=float(ddof))
        np.testing.assert_allclose(np.asarray(function(M, axis=1, ddof=ddof)), expected)
    for bad in [True, "1", None, [1], 1j]:
        with pytest.raises(tf.ParameterError, match=f"{function.__name__}: ddof .*{bad!r}"):
            function(M, ddof=bad)


def test_vmap_axis_size_is_an_integer() -> None:
    for bad in [True, 2.0, "2", [2]]:
        with pytest.raises(tf.ParameterError, match="vmap"):
            tf.vmap(lambda: tf.zeros(3), axis_size=bad)()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (lambda: tf.pad(M, 1), np.pad(M, 1)),
        (lambda: tf.pad(M, (1, 2)), np.pad(M, (1, 2))),
        (lambda: tf.pad(M, [[1]]), np.pad(M, [[1]])),
        (lambda: tf.pad(M, np.array([[0, 1], [2, 0]])), np.pad(M, [[0, 1], [2, 0]])),
        (lambda: tf.pad(M, ((np.int32(1), 0), (0, np.int64(2)))), np.pad(M, ((1, 0), (0, 2)))),
    ],
)
def test_pad_widths_are_read_as_numpy_reads_them(given: Any, expected: Any) -> None:
    np.testing.assert_array_equal(np.asarray(given()), expected)


@pytest.mark.parametrize("bad", [True, 1.5, [(1, 0), (0, 1.0)], [(1, True), (0, 1)], "x", None, -1])
def test_pad_refuses_what_numpy_refuses_and_bools(bad: Any) -> None:
    with pytest.raises(tf.ShapeError, match="pad"):
        tf.pad(M, bad)


# ---------------------------------------------------------------------- every encoding vs numpy


X = np.arange(24.0).reshape(2, 3, 4)
SQUARE = np.arange(9.0).reshape(3, 3) + 5 * np.eye(3)

ENCODED: dict[str, Encoded] = {
    "sum axis": (lambda p: tf.sum(X, axis=p), lambda p: np.sum(X, axis=p), -1),
    "sum axes": (lambda p: tf.sum(X, axis=p), lambda p: np.sum(X, axis=p), (0, -1)),
    "argmax axis": (lambda p: tf.argmax(X, axis=p), lambda p: np.argmax(X, axis=p), 2),
    "reshape": (lambda p: tf.reshape(X, p), lambda p: np.reshape(X, p), (4, -1)),
    "transpose": (lambda p: tf.transpose(X, p), lambda p: np.transpose(X, p), (2, 0, 1)),
    "expand_dims": (lambda p: tf.expand_dims(X, p), lambda p: np.expand_dims(X, p), -1),
    "moveaxis": (lambda p: tf.moveaxis(X, p, 0), lambda p: np.moveaxis(X, p, 0), -1),
    "flip": (lambda p: tf.flip(X, p), lambda p: np.flip(X, p), (0, 2)),
    "cumsum": (lambda p: tf.cumsum(X, axis=p), lambda p: np.cumsum(X, axis=p), 1),
    "tril": (lambda p: tf.tril(SQUARE, p), lambda p: np.tril(SQUARE, p), -1),
    "diagonal": (lambda p: tf.diagonal(X, p, 1, 2), lambda p: np.diagonal(X, p, 1, 2), 1),
    "take axis": (lambda p: tf.take(X, [0, 1], axis=p), lambda p: np.take(X, [0, 1], axis=p), 1),
    "stack axis": (lambda p: tf.stack([X, X], axis=p), lambda p: np.stack([X, X], axis=p), -1),
    "split sections": (
        lambda p: tf.split(X, p, axis=2)[1],
        lambda p: np.split(X, p, axis=2)[1],
        2,
    ),
    "split indices": (
        lambda p: tf.split(X, p, axis=2)[1],
        lambda p: np.split(X, p, axis=2)[1],
        (1, 3),
    ),
    "pad": (lambda p: tf.pad(X, p), lambda p: np.pad(X, p), (1, 2)),
    "round": (lambda p: tf.round(X / 7, p), lambda p: np.round(X / 7, p), 2),
    "roll": (lambda p: tf.roll(X, p, (0, 2)), lambda p: np.roll(X, p, (0, 2)), (1, -1)),
    "tile": (lambda p: tf.tile(X, p), lambda p: np.tile(X, p), (1, 2)),
    "repeat": (lambda p: tf.repeat(X, p, axis=1), lambda p: np.repeat(X, p, axis=1), (1, 0, 2)),
    "diff n": (lambda p: tf.diff(X, p), lambda p: np.diff(X, p), 2),
    "diag k": (lambda p: tf.diag(SQUARE, p), lambda p: np.diag(SQUARE, p), -1),
    "diagflat k": (lambda p: tf.diagflat(SQUARE[0], p), lambda p: np.diagflat(SQUARE[0], p), 2),
    "zeros": (lambda p: tf.zeros(p), lambda p: np.zeros(p), (2, 3)),
    "eye k": (lambda p: tf.eye(3, k=p), lambda p: np.eye(3, k=p), 1),
    "linspace num": (lambda p: tf.linspace(0, 1, p), lambda p: np.linspace(0, 1, p), 5),
    "broadcast_to": (
        lambda p: tf.broadcast_to(X[0, 0], p),
        lambda p: np.broadcast_to(X[0, 0], p),
        (2, 4),
    ),
    "matrix_power": (
        lambda p: tf.linalg.matrix_power(SQUARE, p),
        lambda p: np.linalg.matrix_power(SQUARE, p),
        -2,
    ),
    "norm axes": (
        lambda p: tf.linalg.norm(X, axis=p),
        lambda p: np.linalg.norm(X, axis=p),
        (0, 2),
    ),
    "random size": (
        lambda p: tf.random.default_rng(0).standard_normal(p),
        lambda p: np.random.default_rng(0).standard_normal(p),
        (2, 3),
    ),
    "random integers": (
        lambda p: tf.random.default_rng(0).integers(0, p, size=4),
        lambda p: np.random.default_rng(0).integers(0, p, size=4),
        7,
    ),
}


@pytest.mark.parametrize(("name", "label"), encoded_cases(ENCODED))
def test_every_encoding_of_an_integer_parameter_gives_numpys_result(name: str, label: str) -> None:
    """Exhaustive (the refusals are generated above): every encoding numpy takes of an
    integer or an integer sequence (1-d integer tensors too) gives numpy's result."""
    check_encoding(ENCODED, name, label)


@pytest.mark.parametrize("stop", [np.array(5), tf.Tensor(np.array(5))], ids=["array", "Tensor"])
def test_arange_of_a_zero_d_integer(stop: Any) -> None:
    np.testing.assert_array_equal(value(tf.arange(stop)), np.arange(5))


def test_choice_of_a_zero_d_integer_array_is_a_population_size() -> None:
    draw = value(tf.random.default_rng(0).choice(np.array(5), size=3))
    assert draw.shape == (3,)
    assert set(draw.tolist()) <= set(range(5))
