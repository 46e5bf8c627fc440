"""Every public ``tenferro.lax`` function, generated over its integer parameters and its
operands (the class of review s20's bad-input bugs).

* Each integer parameter (axes, extents, positions, padding, dimension numbers, slice
  sizes, index maps) given a bool, a float (integral ones too), a string, ``None``, a
  nested list, an array of the wrong rank or dtype, or a per-axis sequence of the wrong
  length raises the tenferro error of its role naming the function and the value, never
  a bare Python error and never a silent truncation, and leaves no cached state behind.
* Valid spellings (numpy ints, 0-d integer arrays and tensors, lists, tuples, integer
  arrays) give exactly the plain call's result.
* As in ``jax.lax``, operands may be numpy arrays or Python/numpy scalars: any mix of
  them with tensor kinds gives the values of the all-tensor call; other objects raise
  ``ArgumentTypeError`` naming the function.

The table is complete: a new lax function without a case (or an exemption with its
reason) fails ``test_every_lax_function_has_a_case``.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from integer_cases import (
    KINDS,
    Case,
    Encoded,
    Int,
    as_kind,
    assert_same,
    check_encoding,
    check_extremes,
    check_refusal,
    encoded_cases,
    refusals,
    spelled,
)
from tenferro_support import stable_id

import tenferro as tf
from tenferro import lax
from tenferro.core.operands import DECLARED
from tenferro.meta import Meta

AxisError, ShapeError, ParameterError = tf.AxisError, tf.ShapeError, tf.ParameterError

M = np.arange(1.0, 7.0).reshape(2, 3)
N = M[::-1] * 0.5 + 0.25
S = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
V = np.array([3.0, 1.0, 2.0])
Z = M + 1j * N
PERM = np.array([[2, 0, 1], [0, 2, 1]])
MASK = np.array([[True, False, True], [False, True, True]])
F64 = np.dtype(np.float64)


def axis(name: str, **flags: bool) -> Int:
    return Int(name, AxisError, **flags)


def axes(name: str, **flags: bool) -> Int:
    return Int(name, AxisError, sequence=True, **flags)


def extents(name: str, **flags: bool) -> Int:
    return Int(name, ShapeError, sequence=True, **flags)


def _case(name: str, operands: dict[str, Any], params: dict[str, Any], *ints: Int) -> Case:
    return Case(getattr(lax, name), name, operands, params, ints)


def _cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for name in ["add", "sub", "mul", "div", "rem", "max", "min", "pow"]:
        cases[name] = _case(name, {"x": M, "y": N}, {})
    for name in ["neg", "abs", "sign", "stop_gradient", "exp", "log", "sin", "cos", "tanh"]:
        cases[name] = _case(name, {"x": M}, {})
    for name in ["sqrt", "rsqrt", "expm1", "log1p", "log2", "log10", "erf", "erfc"]:
        cases[name] = _case(name, {"x": M}, {})
    for name in ["asin", "acos", "atan", "asinh", "atanh"]:
        cases[name] = _case(name, {"x": M / 10}, {})
    cases["acosh"] = _case("acosh", {"x": M}, {})
    cases["atan2"] = _case("atan2", {"y": M, "x": N - 1}, {})
    for name in ["conj", "real", "imag"]:
        cases[name] = _case(name, {"x": Z}, {})
    cases["round"] = _case("round", {"x": N}, {"method": "floor"})
    cases["clamp"] = _case("clamp", {"x": M, "lower": M * 0 + 2, "upper": M * 0 + 4}, {})
    cases["compare"] = _case("compare", {"x": M, "y": N * 2}, {"direction": "lt"})
    cases["select"] = _case("select", {"pred": MASK, "on_true": M, "on_false": N}, {})
    cases["complex"] = _case("complex", {"re": M, "im": N}, {})
    for name in ["reduce_sum", "reduce_sum_squares", "reduce_prod", "reduce_max", "reduce_min"]:
        cases[name] = _case(name, {"x": M}, {"axes": (1,)}, axes("axes"))
    for name in ["cumsum", "cumprod", "sort", "argsort", "argmax", "argmin"]:
        cases[name] = _case(name, {"x": M}, {"axis": 1}, axis("axis"))
    cases["apply_permutation"] = _case(
        "apply_permutation", {"x": M, "permutation": PERM}, {"axis": 1}, axis("axis")
    )
    cases["transpose"] = _case(
        "transpose", {"x": M}, {"permutation": (1, 0)}, axes("permutation", per_axis=True)
    )
    cases["reshape"] = _case("reshape", {"x": M}, {"shape": (3, 2)}, extents("shape"))
    cases["broadcast_in_dim"] = _case(
        "broadcast_in_dim",
        {"x": M},
        {"shape": (4, 2, 3), "dims": (1, 2)},
        extents("shape"),
        axes("dims", per_axis=True),
    )
    cases["convert_element_type"] = _case("convert_element_type", {"x": M}, {"dtype": "float32"})
    for name, x in [("extract_diag", S), ("embed_diag", V)]:
        cases[name] = _case(
            name, {"x": x}, {"axis_a": 0, "axis_b": 1}, axis("axis_a"), axis("axis_b")
        )
    for name in ["tril", "triu"]:
        cases[name] = _case(name, {"x": S}, {"k": 1}, Int("k", ParameterError))
    cases["rev"] = _case("rev", {"x": M}, {"axes": (1,)}, axes("axes"))
    cases["slice"] = _case(
        "slice",
        {"x": M},
        {"starts": (0, 1), "limits": (2, 3), "strides": (1, 2)},
        extents("starts", per_axis=True),
        extents("limits", per_axis=True),
        extents("strides", per_axis=True, optional=True),
    )
    cases["pad"] = _case(
        "pad",
        {"x": M},
        {"low": (1, 0), "high": (0, 2), "interior": (0, 1)},
        extents("low", per_axis=True),
        extents("high", per_axis=True),
        extents("interior", per_axis=True),
    )
    cases["concatenate"] = _case("concatenate", {"operands": [M, N]}, {"axis": 1}, axis("axis"))
    cases["dynamic_slice"] = _case(
        "dynamic_slice",
        {"x": M},
        {"starts": (1, 1), "sizes": (1, 2)},
        extents("starts", per_axis=True, traced_ok=True),
        extents("sizes", per_axis=True),
    )
    cases["dynamic_update_slice"] = _case(
        "dynamic_update_slice",
        {"x": M, "update": N[:1, :2]},
        {"starts": (1, 1)},
        extents("starts", per_axis=True, traced_ok=True),
    )
    cases["gather"] = _case(
        "gather",
        {"operand": M, "indices": np.array([[1], [0], [1]])},
        {
            "offset_dims": (1,),
            "collapsed_slice_dims": (0,),
            "start_index_map": (0,),
            "index_vector_dim": 1,
            "slice_sizes": (1, 3),
        },
        axes("offset_dims"),
        axes("collapsed_slice_dims"),
        axes("start_index_map"),
        axis("index_vector_dim"),
        extents("slice_sizes", per_axis=True),
    )
    cases["scatter_add"] = _case(
        "scatter_add",
        {
            "operand": M,
            "indices": np.array([[1], [0], [1]]),
            "updates": np.arange(9.0).reshape(3, 3),
        },
        {
            "update_window_dims": (1,),
            "inserted_window_dims": (0,),
            "scatter_dims_to_operand_dims": (0,),
            "index_vector_dim": 1,
        },
        axes("update_window_dims"),
        axes("inserted_window_dims"),
        axes("scatter_dims_to_operand_dims"),
        axis("index_vector_dim"),
    )
    cases["dot_general"] = _case(
        "dot_general",
        {"lhs": np.stack([M, N]), "rhs": np.stack([N.T, M.T])},
        {"lhs_contracting": (2,), "rhs_contracting": (1,), "lhs_batch": (0,), "rhs_batch": (0,)},
        axes("lhs_contracting"),
        axes("rhs_contracting"),
        axes("lhs_batch"),
        axes("rhs_batch"),
    )
    cases["constant"] = _case("constant", {"like": V}, {"value": 1.5, "dtype": F64})
    cases["shape_of"] = _case("shape_of", {"x": M}, {"axis": 1}, axis("axis"))
    cases["dynamic_truncate"] = _case(
        "dynamic_truncate", {"x": M, "size": np.float64(2.0)}, {"axis": 1}, axis("axis")
    )
    cases["pad_to_match"] = _case(
        "pad_to_match", {"x": M[:, :2], "reference": M}, {"axis": 1}, axis("axis")
    )
    cases["full"] = _case("full", {"like": V}, {"meta": Meta((2, 2), F64), "value": 2.5})
    cases["zeros"] = _case("zeros", {"like": V}, {"meta": Meta((2, 2), F64)})
    cases["full_like"] = _case("full_like", {"x": M}, {"value": 2.5})
    cases["zeros_like"] = _case("zeros_like", {"x": M}, {})
    for name in ["add_tangents", "sub_tangents"]:
        cases[name] = _case(name, {"a": M, "b": N}, {})
    for name in ["logical_and", "logical_or"]:
        cases[name] = _case(name, {"a": MASK, "b": MASK[::-1]}, {})
    cases["logical_not"] = _case("logical_not", {"a": MASK}, {})
    return cases


CASES = _cases()

EXEMPT = {
    "no_derivative": "a JVP rule's helper: its tangent is a value of the rule being run",
    "not_linear": "builds an error for a transpose rule; it takes no tensors",
}

INT_ANNOTATIONS = ("int", "Sequence[int]", "Sequence[int] | None")


def test_every_lax_function_has_a_case() -> None:
    assert sorted(set(lax.__all__) - set(CASES) - set(EXEMPT)) == []
    assert sorted((set(CASES) | set(EXEMPT)) - set(lax.__all__)) == []
    assert sorted(set(lax.__all__) - set(DECLARED)) == [], "lax functions without @takes"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_case_lists_every_integer_parameter(name: str) -> None:
    """Parameters annotated as integers (and ``starts``) are described, and the case
    passes numpy data for every declared operand (and only those)."""
    case = CASES[name]
    parameters = inspect.signature(case.function).parameters.values()
    integer = {p.name for p in parameters if p.annotation in INT_ANNOTATIONS}
    if "starts" in case.params:
        integer.add("starts")
    assert {i.name for i in case.ints} == integer
    declared = {o.removesuffix("[]") for o in DECLARED[name]}
    if name.endswith("_tangents"):  # they add or subtract with lax.add / lax.sub
        declared = {"a", "b"}
    assert set(case.operands) == declared


@pytest.mark.parametrize(
    ("name", "param"), refusals(CASES), ids=[f"{n}-{p}" for n, p in refusals(CASES)]
)
def test_malformed_integer_parameters_raise_the_error_of_their_role(name: str, param: str) -> None:
    check_refusal(CASES[name], param)


@pytest.mark.parametrize(
    ("name", "param"), refusals(CASES), ids=[f"{n}-{p}" for n, p in refusals(CASES)]
)
def test_extreme_integers_give_a_result_or_a_tenferro_error(name: str, param: str) -> None:
    """Sizes (``ShapeError``'s role: extents, paddings, slice sizes) only below zero."""
    role = next(p for p in CASES[name].ints if p.name == param).error
    check_extremes(CASES[name], param, grows=role is ShapeError)


@fuzz_settings(150)
@given(st.data())
def test_valid_spellings_and_operand_kinds_give_the_plain_result(data: st.DataObject) -> None:
    case = CASES[data.draw(st.sampled_from(sorted(CASES)))]
    params = spelled(data, case)
    operands = {
        key: as_kind(data.draw(st.sampled_from(KINDS)), array)
        for key, array in case.operands.items()
    }
    expected = case.call({k: as_kind("Tensor", a) for k, a in case.operands.items()})
    assert_same(case.function(**operands, **params), expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_operands_give_a_tensor_equal_to_the_tensor_call(name: str) -> None:
    case = CASES[name]
    got = case.call()
    expected = case.call({k: as_kind("Tensor", a) for k, a in case.operands.items()})
    for result in got if isinstance(got, tuple) else (got,):
        assert type(result) is tf.Tensor
    assert_same(got, expected)


@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n].operands))
@pytest.mark.parametrize("bad", [[1.0, 2.0], "x", None, object()], ids=stable_id)
def test_operands_that_are_not_data_raise_argument_type_error(name: str, bad: Any) -> None:
    case = CASES[name]
    operands = dict(case.operands)
    first = next(iter(operands))
    operands[first] = [bad] if isinstance(operands[first], list) else bad
    if name.endswith("_tangents") and bad is None:
        return  # None is these helpers' symbolic zero
    with pytest.raises(tf.ArgumentTypeError) as caught:
        case.call(operands)
    assert caught.value.op in (name, "add", "sub", "neg"), str(caught.value)


@pytest.mark.parametrize(
    ("name", "scalars"),
    [("add", (2.0, 0.5)), ("mul", (3, 4)), ("tanh", (0.5,)), ("compare", (1.0, 2.0))],
)
def test_python_scalars_are_weak_rank_0_operands(name: str, scalars: tuple[Any, ...]) -> None:
    function = getattr(lax, name)
    extra = {"direction": "lt"} if name == "compare" else {}
    got = function(*scalars, **extra)
    expected = function(*(tf.asarray(s) for s in scalars), **extra)
    assert got.meta == expected.meta
    assert got.meta.shape == ()
    assert_same(got, expected)


def test_start_indices_may_mix_scalar_tensors_and_ints() -> None:
    x = tf.asarray(M)
    plain = lax.dynamic_slice(x, (1, 1), (1, 2))
    for starts in [
        (tf.asarray(np.int64(1)), 1),
        (1, tf.asarray(np.int32(1))),
        (tf.EagerTensor(np.int64(1)), np.int64(1)),
    ]:
        assert_same(lax.dynamic_slice(x, starts, (1, 2)), plain)
    traced = tf.traced(np.int64(1))
    assert_same(lax.dynamic_slice(x, (traced, 1), (1, 2)), plain)
    with pytest.raises(tf.DTypeError, match=r"dynamic_slice.*start index 0"):
        lax.dynamic_slice(x, (tf.asarray(1.0), 1), (1, 2))
    with pytest.raises(tf.ShapeError, match="dynamic_slice"):
        lax.dynamic_slice(x, (tf.asarray(np.int64(1)),), (1, 2))


# ---------------------------------------------------------------------- every encoding vs numpy


X = np.arange(24.0).reshape(2, 3, 4)

ENCODED: dict[str, Encoded] = {
    "reshape": (lambda p: lax.reshape(X, p), lambda p: np.reshape(X, p), (4, 6)),
    "transpose": (lambda p: lax.transpose(X, p), lambda p: np.transpose(X, p), (2, 0, 1)),
    "reduce_sum": (lambda p: lax.reduce_sum(X, p), lambda p: np.sum(X, axis=p), (0, 2)),
    "slice": (
        lambda p: lax.slice(X, p, (2, 3, 4)),
        lambda p: X[p[0] :, p[1] :, p[2] :],
        (1, 0, 2),
    ),
    "cumsum": (lambda p: lax.cumsum(X, p), lambda p: np.cumsum(X, axis=p), -1),
    "concatenate": (
        lambda p: lax.concatenate([X, X], p),
        lambda p: np.concatenate([X, X], axis=p),
        1,
    ),
    "pad crop": (
        lambda p: lax.pad(X, p, (0, 0, 0), (0, 0, 0)),
        lambda p: X[:, -p[1] :, -p[2] :],
        (0, -1, -2),
    ),
}


@pytest.mark.parametrize(("name", "label"), encoded_cases(ENCODED))
def test_every_encoding_of_an_integer_parameter_gives_numpys_result(name: str, label: str) -> None:
    """Exhaustive (the refusals are generated above): every encoding numpy takes of an
    integer or an integer sequence (1-d integer tensors too) gives numpy's result."""
    check_encoding(ENCODED, name, label)


V = np.arange(3.0)

# jax.lax takes numpy operands and a sequence of scalar start indices: so does tenferro.lax.
ACCEPTED_AS_JAX: dict[str, tuple[Any, Any]] = {
    "lax.dynamic_slice(x, [1], [2])": (
        lambda: lax.dynamic_slice(tf.asarray(V), [1], [2]),
        lambda: lax.dynamic_slice(tf.asarray(V), tf.asarray(np.array([1])), (2,)),
    ),
    "lax.dynamic_slice(x, np.array([1]), [2])": (
        lambda: lax.dynamic_slice(tf.asarray(V), np.array([1]), [2]),
        lambda: lax.dynamic_slice(tf.asarray(V), tf.asarray(np.array([1])), (2,)),
    ),
    "lax.add(ndarray, ndarray)": (
        lambda: lax.add(V, V),
        lambda: lax.add(tf.asarray(V), tf.asarray(V)),
    ),
    "lax.reshape(ndarray, (9,))": (
        lambda: lax.reshape(S, (9,)),
        lambda: lax.reshape(tf.asarray(S), (9,)),
    ),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED_AS_JAX))
def test_numpy_operands_and_start_sequences_are_taken_as_jax_lax_takes_them(name: str) -> None:
    call, reference = ACCEPTED_AS_JAX[name]
    got, expected = call(), reference()
    assert isinstance(got, tf.Tensor)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
