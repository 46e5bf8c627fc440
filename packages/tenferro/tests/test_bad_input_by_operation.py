"""Bad input to linalg, einsum, tensordot, the numpy-style surface and ``tenferro.lax``,
instance by instance (the generated classes are in test_bad_input_properties and the
parameter generators test_*_integer_parameters, test_numpy_real_parameters,
test_boolean_flags).

Every refused call raises a :class:`tf.TenferroError` subclass at the call, whose
message names the operation and the offending value; a refused call leaves nothing
behind that changes a later result (the same good computations give the same values
before and after every refusal, on every tensor kind, with warm and cold caches).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro import lax

SQUARE = np.arange(9.0).reshape(3, 3) + 5 * np.eye(3)
WIDE = np.ones((2, 3))
NAN = np.array([[np.nan, 1.0], [2.0, 3.0]])
SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
V = np.arange(3.0)
TALL = np.arange(6.0).reshape(3, 2) + np.eye(3, 2)
A23, B34 = np.ones((2, 3)), np.ones((3, 4))

Refusal = tuple[Callable[[], Any], type[tf.TenferroError], tuple[str, ...]]
"""(the call, the error class it raises, strings its message contains: the operation
and the offending values)."""

LINALG: dict[str, Refusal] = {
    "svd of a vector": (lambda: tf.linalg.svd(np.ones(3)), tf.ShapeError, ("svd", "(3,)")),
    "svd of a scalar": (lambda: tf.linalg.svd(np.float64(1.0)), tf.ShapeError, ("svd", "()")),
    "inv of a wide matrix": (lambda: tf.linalg.inv(WIDE), tf.ShapeError, ("inv", "(2, 3)")),
    "inv of float16": (
        lambda: tf.linalg.inv(np.eye(3, dtype=np.float16)),
        tf.DTypeError,
        ("float16",),
    ),
    "inv of a singular matrix": (
        lambda: tf.linalg.inv(np.ones((3, 3))),
        tf.LinAlgError,
        ("inv", "singular"),
    ),
    "inv of NaN": (lambda: tf.linalg.inv(NAN), tf.LinAlgError, ("inv", "NaN")),
    "solve of mismatched rows": (
        lambda: tf.linalg.solve(SQUARE, np.ones(4)),
        tf.ShapeError,
        ("solve", "(3, 3)"),
    ),
    "solve of mismatched batches": (
        lambda: tf.linalg.solve(np.stack([SQUARE, SQUARE]), np.ones((3, 3, 1))),
        tf.ShapeError,
        ("solve", "(2, 3, 3)", "(3, 3, 1)"),
    ),
    "solve of a vector matrix": (
        lambda: tf.linalg.solve(np.ones(3), np.ones(3)),
        tf.ShapeError,
        ("solve", "(3,)"),
    ),
    "solve of a wide matrix": (
        lambda: tf.linalg.solve(WIDE, np.ones(2)),
        tf.ShapeError,
        ("solve", "(2, 3)"),
    ),
    "cholesky of a negative definite matrix": (
        lambda: tf.linalg.cholesky(-np.eye(2)),
        tf.LinAlgError,
        ("cholesky", "positive definite"),
    ),
    "eigh with UPLO='X'": (
        lambda: tf.linalg.eigh(SQUARE, UPLO="X"),
        tf.ParameterError,
        ("eigh", "'X'"),
    ),
    "eigh of Inf": (
        lambda: tf.linalg.eigh(np.full((2, 2), np.inf)),
        tf.LinAlgError,
        ("eigh", "NaN or Inf"),
    ),
    "svd of NaN": (lambda: tf.linalg.svd(NAN), tf.LinAlgError, ("svd", "NaN")),
    "svd with a negative eps": (
        lambda: tf.linalg.svd(SQUARE, eps=-1.0),
        tf.ParameterError,
        ("svd", "-1.0"),
    ),
    "svd with an unknown gauge": (
        lambda: tf.linalg.svd(SQUARE, gauge="x"),
        tf.ParameterError,
        ("svd", "'x'"),
    ),
    "qr with mode='full'": (
        lambda: tf.linalg.qr(SQUARE, mode="full"),
        tf.ParameterError,
        ("qr", "'full'"),
    ),
    "qr of NaN": (lambda: tf.linalg.qr(NAN), tf.LinAlgError, ("qr", "NaN")),
    "eig of a wide matrix": (lambda: tf.linalg.eig(WIDE), tf.ShapeError, ("eig", "(2, 3)")),
    "lu_solve with pivots out of range": (
        lambda: tf.linalg.lu_solve((SQUARE, np.array([5, 0, 0])), np.ones(3)),
        tf.ParameterError,
        ("lu_solve", "[5 0 0]"),
    ),
    "lu_solve with float pivots": (
        lambda: tf.linalg.lu_solve((SQUARE, np.array([0.0, 1.0, 2.0])), np.ones(3)),
        tf.DTypeError,
        ("lu_solve", "float64"),
    ),
    "lu_solve with trans=5": (
        lambda: tf.linalg.lu_solve(tf.linalg.lu_factor(SQUARE), np.ones(3), trans=5),
        tf.ParameterError,
        ("lu_solve", "5"),
    ),
    "det of a wide matrix": (lambda: tf.linalg.det(WIDE), tf.ShapeError, ("det", "(2, 3)")),
    "pinv with rtol NaN": (
        lambda: tf.linalg.pinv(SQUARE, rtol=float("nan")),
        tf.ParameterError,
        ("pinv", "nan"),
    ),
    "norm 'fro' of a vector": (
        lambda: tf.linalg.norm(np.ones(3), "fro"),
        tf.ParameterError,
        ("norm", "'fro'"),
    ),
    "norm of order 3 of a matrix": (
        lambda: tf.linalg.norm(SQUARE, 3),
        tf.ParameterError,
        ("matrix_norm", "3"),
    ),
    "norm over a repeated axis": (
        lambda: tf.linalg.norm(SQUARE, axis=(0, 0)),
        tf.ParameterError,
        ("norm", "(0, 0)"),
    ),
    "norm over axis 5": (lambda: tf.linalg.norm(SQUARE, axis=5), tf.AxisError, ("norm", "5")),
    "matrix_power 1.5": (
        lambda: tf.linalg.matrix_power(SQUARE, 1.5),
        tf.ParameterError,
        ("matrix_power", "1.5"),
    ),
    "matrix_exp of a wide matrix": (
        lambda: tf.linalg.matrix_exp(WIDE),
        tf.ShapeError,
        ("matrix_exp", "(2, 3)"),
    ),
    "multi_dot of one matrix": (
        lambda: tf.linalg.multi_dot([SQUARE]),
        tf.ParameterError,
        ("multi_dot", "1"),
    ),
    "multi_dot of unchained shapes": (
        lambda: tf.linalg.multi_dot([SQUARE, WIDE, SQUARE]),
        tf.ShapeError,
        ("multi_dot", "(3, 3)", "(2, 3)"),
    ),
    "truncated_svd with max_rank -1": (
        lambda: tf.linalg.truncated_svd(SQUARE, max_rank=-1),
        tf.ParameterError,
        ("truncated_svd", "-1"),
    ),
    "truncated_svd with rtol NaN": (
        lambda: tf.linalg.truncated_svd(SQUARE, rtol=float("nan")),
        tf.ParameterError,
        ("truncated_svd", "nan"),
    ),
    "tensorinv of a non-square split": (
        lambda: tf.linalg.tensorinv(WIDE, ind=1),
        tf.ShapeError,
        ("tensorinv", "(2, 3)"),
    ),
}

EINSUM: dict[str, Refusal] = {
    "a label of two extents": (
        lambda: tf.einsum("ij,jk->ik", A23, np.ones((4, 4))),
        tf.ShapeError,
        ("einsum", "'j'", "3", "4"),
    ),
    "fewer operands than terms": (
        lambda: tf.einsum("ij,jk->ik", A23),
        tf.ParameterError,
        ("einsum", "'ij,jk->ik'"),
    ),
    "more operands than terms": (
        lambda: tf.einsum("ij->ij", A23, B34),
        tf.ParameterError,
        ("einsum", "'ij->ij'"),
    ),
    "a term of the wrong rank": (
        lambda: tf.einsum("ijk->", A23),
        tf.ShapeError,
        ("einsum", "'ijk'", "2"),
    ),
    "an output label in no input": (
        lambda: tf.einsum("ij->ik", A23),
        tf.ParameterError,
        ("einsum", "'k'"),
    ),
    "two arrows": (lambda: tf.einsum("ij->i->j", A23), tf.ParameterError, ("einsum", "'->'")),
    "a comma in the output": (
        lambda: tf.einsum("ij->i,j", A23),
        tf.ParameterError,
        ("einsum", "','"),
    ),
    "two dots": (lambda: tf.einsum("..ij->ij", A23), tf.ParameterError, ("einsum", "'..ij'")),
    "two ellipses in a term": (
        lambda: tf.einsum("...i...->i", A23),
        tf.ParameterError,
        ("einsum", "ellipsis"),
    ),
    "ellipses that do not broadcast": (
        lambda: tf.einsum("...i,...i->...i", np.ones((2, 3)), np.ones((4, 3))),
        tf.ShapeError,
        ("einsum", "4", "2"),
    ),
    "a repeated label of two extents": (
        lambda: tf.einsum("ii->i", A23),
        tf.ShapeError,
        ("einsum", "'i'", "2", "3"),
    ),
    "no operands": (lambda: tf.einsum("->"), tf.ParameterError, ("einsum",)),
    "an unknown optimize": (
        lambda: tf.einsum("ij,jk->ik", A23, B34, optimize="bogus"),
        tf.ParameterError,
        ("einsum", "'bogus'"),
    ),
    "bool operands": (
        lambda: tf.einsum("ij,jk->ik", A23.astype(bool), B34.astype(bool)),
        tf.DTypeError,
        ("einsum", "bool"),
    ),
    "float16 operands": (
        lambda: tf.einsum("ij->ij", A23.astype(np.float16)),
        tf.DTypeError,
        ("einsum", "float16"),
    ),
    "a negative interleaved label": (
        lambda: tf.einsum(A23, [0, -1], [0]),
        tf.ParameterError,
        ("einsum", "-1"),
    ),
    "a path step out of range": (
        lambda: tf.einsum(
            "ij,jk,kl->il", A23, B34, np.ones((4, 2)), optimize=["einsum_path", (0, 5)]
        ),
        tf.ParameterError,
        ("einsum", "(0, 5)"),
    ),
    "a path leaving operands": (
        lambda: tf.einsum(
            "ij,jk,kl->il", A23, B34, np.ones((4, 2)), optimize=["einsum_path", (0, 1)]
        ),
        tf.ParameterError,
        ("einsum", "2 operands"),
    ),
    "tensordot of unequal axes": (
        lambda: tf.tensordot(A23, B34, axes=([0, 1], [0])),
        tf.AxisError,
        ("tensordot",),
    ),
    "tensordot over axis 5": (
        lambda: tf.tensordot(A23, B34, axes=([5], [0])),
        tf.AxisError,
        ("tensordot", "5"),
    ),
    "tensordot of 3 axes": (
        lambda: tf.tensordot(A23, B34, axes=3),
        tf.AxisError,
        ("tensordot", "3"),
    ),
    "numpy.einsum with out=": (
        lambda: np.einsum("ij->ij", tf.asarray(A23), out=np.zeros((2, 3))),
        tf.UnsupportedError,
        ("einsum", "out"),
    ),
}


SURFACE_AND_LAX: dict[str, Refusal] = {
    "eigh UPLO=1": (lambda: tf.linalg.eigh(SPD, UPLO=1), tf.ParameterError, ("eigh", "1")),
    "eigh UPLO='l'": (lambda: tf.linalg.eigh(SPD, UPLO="l"), tf.ParameterError, ("eigh", "'l'")),
    "qr gauge=None": (lambda: tf.linalg.qr(SPD, gauge=None), tf.ParameterError, ("qr", "None")),
    "svd eps='x'": (lambda: tf.linalg.svd(SPD, eps="x"), tf.ParameterError, ("svd", "'x'")),
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
    "reshape (-1, -1)": (lambda: tf.reshape(SPD, (-1, -1)), tf.ShapeError, ("reshape",)),
    "pad three axes": (lambda: tf.pad(SPD, [(1, 1)] * 3), tf.ShapeError, ("pad",)),
    "take out of range": (lambda: tf.take(V, 5), tf.IndexingError, ("5",)),
    "take float index": (lambda: tf.take(V, 1.0), tf.IndexingError, ("1.0",)),
    "getitem float slice": (
        lambda: tf.asarray(V)[0.5:2],
        tf.IndexingError,
        ("getitem", "0.5"),
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

REFUSALS = {**LINALG, **EINSUM, **SURFACE_AND_LAX}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_bad_input_raises_a_tenferro_error_naming_the_operation_and_values(name: str) -> None:
    call, error, needles = REFUSALS[name]
    with pytest.raises(error) as caught:
        call()
    message = str(caught.value)
    for needle in needles:
        assert needle in message, (name, needle, message)


def _good() -> list[np.ndarray[Any, Any]]:
    """Good computations of the families refused above, on every tensor kind."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 3)) + 3 * np.eye(3), rng.standard_normal((3, 2))

    def f(x: Any) -> Any:
        u, s, vh = tf.linalg.svd(x, full_matrices=False)
        q, r = tf.linalg.qr(x)
        return (
            tf.sum(s)
            + tf.sum(tf.abs(u @ vh))
            + tf.sum(tf.linalg.solve(x, b) ** 2)
            + tf.linalg.det(x)
            + tf.sum(tf.einsum("ij,jk,kl->il", x, x, b))
            + tf.sum(tf.abs(q * r))
            + tf.linalg.norm(x)
            + tf.sum(tf.tensordot(x, b, axes=1))
        )

    tape = tf.Tape()
    t = tape.track(a)
    return [
        np.asarray(f(a)),
        np.asarray(tf.jit(f)(a)),
        np.asarray(tf.grad(f)(a)),
        np.asarray(tape.grad(f(t), t)),
        np.asarray(tf.linalg.cholesky(SPD)),
        np.asarray(tf.linalg.svd(TALL, full_matrices=False).U),
        np.asarray(tf.pad(SPD, 1)),
        np.asarray(tf.take(V, np.array([2, 0]))),
        np.asarray(tf.einsum("ij,jk->ik", SPD, SPD)),
        np.asarray(tf.grad(lambda m: tf.sum(tf.linalg.solve(m, V)))(SPD)),
    ]


def test_refused_calls_change_no_later_result() -> None:
    tf.clear_caches()
    before = _good()
    for call, error, _ in REFUSALS.values():
        with pytest.raises(error):
            call()
    after = _good()
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
    # and the same refusals with warm caches, then results from cold caches again
    for call, error, _ in REFUSALS.values():
        with pytest.raises(error):
            call()
    tf.clear_caches()
    for b, a in zip(before, _good(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(
    "kind", [tf.asarray, tf.traced, lambda x: tf.Tape().track(x)], ids=["tensor", "traced", "tape"]
)
def test_linalg_refusals_are_the_same_on_every_tensor_kind(kind: Any) -> None:
    for call, error, needles in [
        (lambda x: tf.linalg.inv(x), tf.ShapeError, ("inv", "(2, 3)")),
        (lambda x: tf.linalg.svd(x[0]), tf.ShapeError, ("svd", "(3,)")),
        (lambda x: tf.linalg.qr(x, mode="full"), tf.ParameterError, ("qr", "'full'")),
        (lambda x: tf.einsum("ij,ij->", x, np.ones((3, 2))), tf.ShapeError, ("einsum", "'i'")),
    ]:
        with pytest.raises(error) as caught:
            call(kind(WIDE))
        for needle in needles:
            assert needle in str(caught.value)


@pytest.mark.parametrize(
    "axes",
    ["x", ([0],), 1.5, None, (True, 0), ([1.0], [0]), ([1], [0], [2])],
    ids=["str", "one-list", "float", "none", "bool-axis", "float-axis", "triple"],
)
def test_tensordot_refuses_malformed_axes_with_a_tenferro_error(axes: Any) -> None:
    with pytest.raises(tf.TenferroError, match="tensordot"):
        tf.tensordot(A23, B34, axes=axes)


@pytest.mark.parametrize(
    "axes", [1, np.int64(1), ((1,), (0,)), [[1], [0]], (np.int64(1), 0)], ids=str
)
def test_tensordot_accepts_numpy_axes_forms(axes: Any) -> None:
    expected = np.tensordot(A23, B34, axes=axes)
    np.testing.assert_array_equal(np.asarray(tf.tensordot(A23, B34, axes=axes)), expected)


@pytest.mark.parametrize("max_rank", [True, "2", 1.5, -1])
def test_truncated_svd_refuses_a_non_integer_rank(max_rank: Any) -> None:
    with pytest.raises(tf.ParameterError, match="max_rank"):
        tf.linalg.truncated_svd(SQUARE, max_rank=max_rank)


@pytest.mark.parametrize("name", ["atol", "rtol"])
def test_truncated_svd_refuses_a_non_number_tolerance(name: str) -> None:
    with pytest.raises(tf.ParameterError, match=name):
        tf.linalg.truncated_svd(SQUARE, **{name: "1"})


@pytest.mark.parametrize("option", [{"dtype": np.float32}, {"order": "F"}, {"casting": "no"}])
def test_numpy_einsum_options_tenferro_lacks_raise_unsupported(option: dict[str, Any]) -> None:
    with pytest.raises(tf.UnsupportedError, match=next(iter(option))):
        np.einsum("ij->ij", tf.asarray(A23), **option)


def test_einsum_path_refuses_negative_extents() -> None:
    with pytest.raises(tf.TenferroError, match="einsum"):
        tf.einsum_path("ij,jk->ik", (2, -3), (-3, 4), shapes=True)


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
