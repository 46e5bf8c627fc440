"""Review campaign (session 20): bad input to linalg flags, pad, take, tensordot,
reshape, einsum and ``tenferro.lax``.

A refused call must raise a :class:`tf.TenferroError` subclass naming the operation
and the offending value (never a bare Python/numpy error) and leave no state behind
that changes later results. Boolean flags given as strings are refused as torch
refuses them: numpy's truthiness makes ``upper="no"`` ask for the upper factor.
Failures found by the campaign are pinned as strict xfails (bugs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tf
from tenferro import lax

SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
V = np.arange(3.0)
TALL = np.arange(6.0).reshape(3, 2) + np.eye(3, 2)

Refusal = tuple[Callable[[], Any], type[tf.TenferroError], tuple[str, ...]]

REFUSED: dict[str, Refusal] = {
    "eigh UPLO=1": (lambda: tf.linalg.eigh(SPD, UPLO=1), tf.ParameterError, ("eigh", "1")),
    "eigh UPLO='l'": (lambda: tf.linalg.eigh(SPD, UPLO="l"), tf.ParameterError, ("eigh", "'l'")),
    "qr gauge=None": (lambda: tf.linalg.qr(SPD, gauge=None), tf.ParameterError, ("qr", "None")),
    "svd eps='x'": (lambda: tf.linalg.svd(SPD, eps="x"), tf.ParameterError, ("svd", "'x'")),
    "matrix_power n='2'": (
        lambda: tf.linalg.matrix_power(SPD, "2"),
        tf.ParameterError,
        ("matrix_power", "'2'"),
    ),
    "tensorinv ind=0": (lambda: tf.linalg.tensorinv(SPD, ind=0), tf.ParameterError, ("0",)),
    "vector_norm ord='fro'": (
        lambda: tf.linalg.vector_norm(V, ord="fro"),
        tf.ParameterError,
        ("vector_norm", "'fro'"),
    ),
    "einsum optimize=3 (two operands)": (
        lambda: tf.einsum("ij,jk->", SPD, SPD, optimize=3),
        tf.ParameterError,
        ("einsum", "3"),
    ),
    "tensordot axes=None": (
        lambda: tf.tensordot(SPD, SPD, axes=None),
        tf.AxisError,
        ("tensordot", "None"),
    ),
    "reshape (-1, -1)": (lambda: tf.reshape(SPD, (-1, -1)), tf.ShapeError, ("reshape",)),
    "reshape (9.0,)": (lambda: tf.reshape(SPD, (9.0,)), tf.ShapeError, ("reshape", "9.0")),
    "reshape (True, 9)": (lambda: tf.reshape(SPD, (True, 9)), tf.ShapeError, ("reshape", "True")),
    "pad 'x'": (lambda: tf.pad(SPD, "x"), tf.ShapeError, ("pad", "'x'")),
    "pad three axes": (lambda: tf.pad(SPD, [(1, 1)] * 3), tf.ShapeError, ("pad",)),
    "take out of range": (lambda: tf.take(V, 5), tf.IndexingError, ("5",)),
    "take float index": (lambda: tf.take(V, 1.0), tf.IndexingError, ("1.0",)),
    "take axis '0'": (lambda: tf.take(SPD, 0, axis="0"), tf.AxisError, ("take", "'0'")),
    "getitem float slice": (
        lambda: tf.asarray(V)[0.5:2],
        tf.IndexingError,
        ("getitem", "0.5"),
    ),
    "sum axis 0.0": (lambda: tf.sum(SPD, axis=0.0), tf.AxisError, ("sum", "0.0")),
    "concatenate axis '0'": (
        lambda: tf.concatenate([SPD, SPD], axis="0"),
        tf.AxisError,
        ("concatenate", "'0'"),
    ),
    "lax.pad interior -1": (
        lambda: lax.pad(tf.asarray(SPD), [0, 0], [0, 0], [-1, 0]),
        tf.ShapeError,
        ("pad", "-1"),
    ),
    "lax.slice stride 0": (
        lambda: lax.slice(tf.asarray(V), [0], [2], [0]),
        tf.ShapeError,
        ("slice", "stride 0"),
    ),
    "lax.gather float indices": (
        lambda: lax.gather(
            tf.asarray(V),
            tf.asarray(np.array([[0.0]])),
            offset_dims=(),
            collapsed_slice_dims=(0,),
            start_index_map=(0,),
            index_vector_dim=1,
            slice_sizes=(1,),
        ),
        tf.DTypeError,
        ("gather", "float64"),
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_bad_input_raises_a_named_tenferro_error(name: str) -> None:
    call, error, fragments = REFUSED[name]
    with pytest.raises(error) as caught:
        call()
    for fragment in fragments:
        assert fragment in str(caught.value), (name, str(caught.value))


def _good() -> list[np.ndarray[Any, Any]]:
    return [
        np.asarray(tf.linalg.cholesky(SPD)),
        np.asarray(tf.linalg.svd(TALL, full_matrices=False).U),
        np.asarray(tf.pad(SPD, 1)),
        np.asarray(tf.take(V, np.array([2, 0]))),
        np.asarray(tf.einsum("ij,jk->ik", SPD, SPD)),
        np.asarray(tf.grad(lambda a: tf.sum(tf.linalg.solve(a, V)))(SPD)),
    ]


def test_refusals_change_no_later_result() -> None:
    before = _good()
    for call, error, _ in REFUSED.values():
        with pytest.raises(error):
            call()
    for first, again in zip(before, _good(), strict=True):
        np.testing.assert_array_equal(first, again)


def test_good_calls_match_numpy() -> None:
    np.testing.assert_allclose(tf.linalg.cholesky(SPD), np.linalg.cholesky(SPD), rtol=1e-14)
    np.testing.assert_allclose(
        tf.linalg.cholesky(SPD, upper=True), np.linalg.cholesky(SPD).T, rtol=1e-14
    )
    np.testing.assert_allclose(
        tf.linalg.cholesky(SPD, upper=np.bool_(False)), np.linalg.cholesky(SPD), rtol=1e-14
    )
    assert np.asarray(tf.linalg.svd(TALL, full_matrices=False).U).shape == (3, 2)
    assert np.asarray(tf.linalg.svd(TALL, full_matrices=np.bool_(True)).U).shape == (3, 3)
    np.testing.assert_array_equal(tf.pad(SPD, 1), np.pad(SPD, 1))
    np.testing.assert_array_equal(tf.pad(SPD, ((1, 0), (0, 2))), np.pad(SPD, ((1, 0), (0, 2))))
    np.testing.assert_array_equal(tf.take(V, np.array([2, -1, 0])), np.take(V, [2, -1, 0]))
    np.testing.assert_allclose(tf.einsum("iI->", SPD), np.einsum("iI->", SPD), rtol=1e-14)
    np.testing.assert_allclose(tf.einsum("i j->", SPD), np.einsum("i j->", SPD), rtol=1e-14)
    np.testing.assert_array_equal(tf.reshape(SPD, np.int64(9)), SPD.reshape(9))
    np.testing.assert_allclose(tf.linalg.matrix_power(SPD, np.int64(2)), SPD @ SPD, rtol=1e-14)
    # StableHLO gather clamps start indices into range (jax.lax.gather's default)
    out = lax.gather(
        tf.asarray(V),
        tf.asarray(np.array([[5]])),
        offset_dims=(),
        collapsed_slice_dims=(0,),
        start_index_map=(0,),
        index_vector_dim=1,
        slice_sizes=(1,),
    )
    np.testing.assert_array_equal(out, [2.0])


# ---------------------------------------------------------------------- bugs found

STRING_FLAGS: dict[str, Callable[[], Any]] = {
    "cholesky(upper='no')": lambda: tf.linalg.cholesky(SPD, upper="no"),
    "cholesky(upper='yes')": lambda: tf.linalg.cholesky(SPD, upper="yes"),
    "svd(full_matrices='no')": lambda: tf.linalg.svd(TALL, full_matrices="no"),
    "solve_triangular(unitriangular='x')": lambda: tf.linalg.solve_triangular(
        SPD, SPD, upper=True, unitriangular="x"
    ),
    "solve_triangular(left='no')": lambda: tf.linalg.solve_triangular(
        SPD, SPD, upper=True, left="no"
    ),
    "pinv(hermitian='yes')": lambda: tf.linalg.pinv(SPD, hermitian="yes"),
    "sum(keepdims='no')": lambda: tf.sum(SPD, keepdims="no"),
    "linalg.norm(keepdims='no')": lambda: tf.linalg.norm(SPD, keepdims="no"),
    "vector_norm(keepdims='no')": lambda: tf.linalg.vector_norm(V, keepdims="no"),
    "matrix_norm(keepdims='no')": lambda: tf.linalg.matrix_norm(SPD, keepdims="no"),
}


@pytest.mark.parametrize("name", sorted(STRING_FLAGS))
def test_boolean_flags_given_as_strings_are_refused(name: str) -> None:
    with pytest.raises(tf.TenferroError, match=r"'(no|yes|x)'"):
        STRING_FLAGS[name]()


RAW_ERRORS: dict[str, Callable[[], Any]] = {
    "tensorsolve(axes='x')": lambda: tf.linalg.tensorsolve(SPD, V, axes="x"),
    "tensorinv(ind='2')": lambda: tf.linalg.tensorinv(SPD, ind="2"),
    "pad(x, 1.5)": lambda: tf.pad(SPD, 1.5),
    "lax.pad(x, 'ab', ...)": lambda: lax.pad(tf.asarray(SPD), "ab", [0, 0], [0, 0]),
    "lax.dot_general(x, y, 'a', (0,))": lambda: lax.dot_general(
        tf.asarray(SPD), tf.asarray(SPD), "a", (0,)
    ),
    "lax.gather(slice_sizes='a')": lambda: lax.gather(
        tf.asarray(V),
        tf.asarray(np.array([[0]])),
        offset_dims=(),
        collapsed_slice_dims=(0,),
        start_index_map=(0,),
        index_vector_dim=1,
        slice_sizes="a",
    ),
    "lax.dynamic_slice(x, [0], [1])": lambda: lax.dynamic_slice(tf.asarray(V), [0], [1]),
    "lax.dynamic_slice(x, np.array([0]), [1])": lambda: lax.dynamic_slice(
        tf.asarray(V), np.array([0]), [1]
    ),
    "lax.add(ndarray, ndarray)": lambda: lax.add(V, V),
    "lax.reshape(ndarray, (3,))": lambda: lax.reshape(V, (3,)),
}


@pytest.mark.xfail(
    strict=True,
    reason="bug: bad input raises a bare Python error instead of a tenferro error naming "
    "the operation: tensorsolve(axes='x') ValueError 'invalid literal for int()', "
    "tensorinv(ind='2') TypeError from '<=', pad(x, 1.5) TypeError 'float object is not "
    "iterable' (numpy: TypeError 'pad_width must be of integral type'), lax.pad / "
    "lax.dot_general / lax.gather with string parameters ValueError from int(), "
    "lax.dynamic_slice with a list or ndarray of starts (jax.lax accepts a sequence) and "
    "every lax function given a numpy array AttributeError \"'numpy.ndarray' object has "
    "no attribute 'meta'\"",
)
@pytest.mark.parametrize("name", sorted(RAW_ERRORS))
def test_bad_input_never_raises_a_bare_python_error(name: str) -> None:
    with pytest.raises(tf.TenferroError):
        RAW_ERRORS[name]()


SILENT: dict[str, Callable[[], Any]] = {
    "pad(x, True)": lambda: tf.pad(SPD, True),
    "lax.pad with one entry for a matrix": lambda: lax.pad(tf.asarray(SPD), [0], [0], [0]),
    "lax.pad with low 0.5": lambda: lax.pad(tf.asarray(SPD), [0.5, 0], [0, 0], [0, 0]),
    "lax.slice with start 0.5": lambda: lax.slice(tf.asarray(V), [0.5], [2]),
    "lax.dot_general contracting axis 0.5": lambda: lax.dot_general(
        tf.asarray(SPD), tf.asarray(SPD), (0.5,), (0,)
    ),
}


@pytest.mark.xfail(
    strict=True,
    reason="bug: malformed extents/axes are accepted silently: tf.pad(x, True) pads by 1 "
    "(numpy raises 'pad_width must be of integral type'; tenferro refuses bool extents "
    "elsewhere), lax.pad with an all-zero config of the wrong length returns x unchecked "
    "(the zero-padding shortcut skips the rank check), and lax.pad/lax.slice/"
    "lax.dot_general truncate float positions with int() (0.5 -> 0); expected "
    "ShapeError/AxisError naming the operation and the value",
)
@pytest.mark.parametrize("name", sorted(SILENT))
def test_malformed_extents_are_not_accepted_silently(name: str) -> None:
    with pytest.raises(tf.TenferroError):
        SILENT[name]()


@pytest.mark.parametrize(
    "indices", [np.array([True, False, True]), [True, False, True], True], ids=repr
)
def test_take_with_boolean_indices_is_numpy_take(indices: Any) -> None:
    try:
        got = np.asarray(tf.take(V, indices))
    except tf.TenferroError:
        return
    np.testing.assert_array_equal(got, np.take(V, indices))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.integers(1, 4),
    st.one_of(
        st.lists(st.booleans(), max_size=5), st.lists(st.integers(-3, 2), min_size=1, max_size=5)
    ),
    st.sampled_from([None, 0, 1, -1]),
    st.booleans(),
)
def test_take_matches_numpy_take_for_integer_and_boolean_indices(rows, picks, axis, as_array):
    x = np.arange(3.0 * rows).reshape(rows, 3)
    indices = np.asarray(picks, dtype=bool if picks and isinstance(picks[0], bool) else np.int64)
    given_indices = indices if as_array else picks
    extent = x.size if axis is None else x.shape[axis]
    if indices.size and not -extent <= indices.astype(np.int64).min() <= indices.max() < extent:
        with pytest.raises(tf.TenferroError):
            tf.take(x, given_indices, axis=axis)
        return
    expected = np.take(x, indices, axis=axis)
    np.testing.assert_array_equal(np.asarray(tf.take(x, given_indices, axis=axis)), expected)
