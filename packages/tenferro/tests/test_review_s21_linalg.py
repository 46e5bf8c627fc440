"""s21 review, area 2: ``tf.linalg.lstsq`` and ``tf.linalg.matrix_rank``.

Oracles: numpy.linalg matrix by matrix (batches broadcast by hand, vector ``b``),
numpy's ``lstsq`` with a cut-off above the finite-difference step for derivatives at a
constant numerical rank (the truncated pseudo-inverse's central differences equal the
constant-rank derivative: the step's component off the rank-r manifold does not move
the kept part to first order), the closed form ``d x = -A^+ dA x`` of an invertible
``A``, PyTorch's ``pinv`` gradients where torch is installed, and numpy's
``matrix_rank`` with ``tol``/``rtol``/``hermitian``. The bugs found were pinned as strict
xfails and are fixed: their tests below pass, and the generators that cover their
classes are test_linalg_pseudo_inverse (repeated singular values),
test_linalg_empty_inputs (results kept on the tape) and test_linalg_least_squares
(matrix_rank's tolerances and vectors).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from test_linalg_least_squares import _matrix as matrix_of_rank
from test_linalg_least_squares import _random as random_values
from transform_routes import fd_gradient, values

import tenferro as tf


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> Any:
    return random_values(rng, shape, np.dtype(dtype))


def _of_rank(rng: np.random.Generator, shape: tuple[int, ...], rank: int, dtype: Any) -> Any:
    """A ``[..., M, N]`` matrix of the given rank, singular values spread in [1, 3]."""
    return matrix_of_rank(rng, shape, rank, np.dtype(dtype))


def _weighted(w: Any) -> Any:
    """``x ↦ Σ Re(conj(w) x)`` for numpy arrays."""
    return lambda x: float(np.sum(np.real(np.conj(w) * x)))


# ---------------------------------------------------------------------- values


@fuzz_settings(40)
@given(
    st.sampled_from(
        [
            ((2, 4, 3), (4, 2)),
            ((4, 3), (2, 4, 2)),
            ((2, 1, 4, 3), (3, 4, 2)),
            ((2, 4, 3), (4,)),
            ((1, 3, 5), (3,)),
            ((3, 3), (3, 1)),
            ((4, 0), (4, 2)),
            ((0, 3), (0, 2)),
            ((4, 3), (4, 0)),
            ((0, 4, 3), (0, 4, 2)),
        ]
    ),
    st.sampled_from([np.float64, np.complex128, np.float32]),
    st.sampled_from(["Tensor", "EagerTensor", "traced"]),
    st.integers(0, 2**16),
)
def test_lstsq_broadcasts_batches_like_numpy_matrix_by_matrix(
    shapes: tuple[tuple[int, ...], tuple[int, ...]], dtype: Any, kind: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a_shape, b_shape = shapes
    a, b = _random(rng, a_shape, dtype), _random(rng, b_shape, dtype)
    make = {
        "Tensor": tf.Tensor,
        "EagerTensor": lambda v: tf.EagerTensor(v, requires_grad=True),
        "traced": tf.traced,
    }[kind]
    solution, residuals, rank, s = (values(r) for r in tf.linalg.lstsq(make(a), make(b)))
    vector = b.ndim == 1
    batch = a_shape[:-2] if vector else np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    a_all = np.broadcast_to(a, (*batch, *a_shape[-2:]))
    b_all = np.broadcast_to(b, (*batch, *b_shape[-1 if vector else -2 :]))
    tol = 2e-4 if dtype == np.float32 else 1e-10
    assert solution.dtype == dtype
    assert rank.dtype == np.int64
    assert rank.shape == tuple(batch)
    for index in np.ndindex(*batch):
        x, _, r, sv = np.linalg.lstsq(a_all[index], b_all[index])
        np.testing.assert_allclose(solution[index], x, rtol=tol, atol=tol)
        np.testing.assert_allclose(s[index], sv, rtol=tol, atol=tol)
        assert rank[index] == r
        misfit = a_all[index] @ x - b_all[index]
        expected = np.atleast_1d(np.sum(np.abs(misfit) ** 2, axis=0))
        np.testing.assert_allclose(residuals[index], expected, rtol=tol, atol=tol)


def test_lstsq_under_vmap_and_jit_equals_numpy() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4, 3)), rng.standard_normal((3, 4))
    expected = np.stack([np.linalg.lstsq(x, y)[0] for x, y in zip(a, b, strict=True)])
    got = tf.vmap(lambda x, y: tf.linalg.lstsq(x, y).solution)(a, b)
    np.testing.assert_allclose(values(got), expected, rtol=1e-12)
    got = tf.jit(tf.vmap(lambda x: tf.linalg.lstsq(x, b[0]).solution))(a)
    expected = np.stack([np.linalg.lstsq(x, b[0])[0] for x in a])
    np.testing.assert_allclose(values(got), expected, rtol=1e-12)


# ---------------------------------------------------------------------- derivatives


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize(
    ("m", "n", "rank", "k"),
    [
        (5, 3, 3, 2),
        (3, 5, 3, 2),
        (4, 4, 4, 1),
        (5, 3, 2, 2),
        (3, 5, 2, 2),
        (4, 4, 2, 1),
        (3, 3, 1, 1),
    ],
)
def test_lstsq_derivative_at_a_constant_rank_equals_truncated_differences(
    m: int, n: int, rank: int, k: int, dtype: Any
) -> None:
    """Full-rank and rank-deficient, tall, wide and square: the gradients with respect to
    ``a`` and ``b`` equal central differences of numpy's lstsq truncated at 1e-3."""
    rng = np.random.default_rng(m * 100 + n * 10 + rank)
    a, b = _of_rank(rng, (m, n), rank, dtype), _random(rng, (m, k), dtype)
    w = _random(rng, (n, k), dtype)

    def loss(x: Any, y: Any) -> Any:
        solution = tf.linalg.lstsq(x, y, rcond=1e-8).solution
        return tf.sum(tf.real(tf.multiply(np.conj(w), solution)))

    ga, gb = (values(g) for g in tf.grad(loss, argnums=(0, 1))(a, b))
    by_a = fd_gradient(lambda x: _weighted(w)(np.linalg.lstsq(x, b, rcond=1e-3)[0]), a)
    by_b = fd_gradient(lambda y: _weighted(w)(np.linalg.lstsq(a, y, rcond=1e-3)[0]), b)
    np.testing.assert_allclose(ga, by_a, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, by_b, rtol=1e-6, atol=1e-7)


DEGENERATE = {
    "identity": np.eye(3),
    "twice_orthogonal": 2 * np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))[0],
    "diag_1_1_2": np.diag([1.0, 1.0, 2.0]),
    "tall_isometry": np.eye(4)[:, :3],
    "wide_scaled": 3 * np.eye(4)[:3],
    "unitary": np.linalg.qr(
        np.random.default_rng(1).standard_normal((3, 3))
        + 1j * np.random.default_rng(2).standard_normal((3, 3))
    )[0],
    "rank_deficient_tie": np.diag([1.0, 1.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(DEGENERATE))
def test_lstsq_gradient_at_repeated_singular_values(name: str) -> None:
    """Was wrong (through the SVD rule's regularised gaps, 0 inside a tied level, with a
    DegenerateDerivativeWarning): the derivative of A^+ b, without a warning."""
    a = DEGENERATE[name]
    m, n = a.shape
    rng = np.random.default_rng(5)
    b, w = _random(rng, (m, 2), a.dtype), _random(rng, (n, 2), a.dtype)

    def loss(x: Any) -> Any:
        return tf.sum(tf.real(tf.multiply(np.conj(w), tf.linalg.lstsq(x, b, rcond=1e-8).solution)))

    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        got = values(tf.grad(loss)(a))
    expected = fd_gradient(lambda x: _weighted(w)(np.linalg.lstsq(x, b, rcond=1e-3)[0]), a)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("gap", [0.0, 1e-14, 1e-10])
def test_lstsq_jvp_next_to_a_tie(gap: float) -> None:
    """Was 0 at d = 0 instead of -2, -0.0008 at d = 1e-14: now -A^+ dA A^+ b."""
    a = np.diag([1.0, 1.0 + gap])
    b, t = np.array([1.0, 2.0]), np.array([[0.0, 1.0], [0.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        _, got = tf.jvp(lambda x: tf.linalg.lstsq(x, b).solution, (a,), (t,))
    pinv = np.linalg.pinv(a)
    np.testing.assert_allclose(values(got), -pinv @ t @ pinv @ b, rtol=1e-8)


def test_pinv_gradient_at_the_identity() -> None:
    """Was diag(-b) instead of -outer(1, b)."""
    b = np.array([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        got = values(tf.grad(lambda m: tf.sum(tf.linalg.pinv(m) @ b))(np.eye(2)))
    np.testing.assert_allclose(got, -np.outer(np.ones(2), b), rtol=1e-12)


def test_lstsq_gradient_of_a_well_separated_matrix_equals_pytorch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    rng = np.random.default_rng(11)
    for shape, rank in (((5, 3), 3), ((3, 5), 2), ((4, 4), 3)):
        a = _of_rank(rng, shape, rank, np.complex128)
        b = _random(rng, (shape[0], 2), np.complex128)
        w = _random(rng, (shape[1], 2), np.complex128)
        got = values(
            tf.grad(
                lambda x, b=b, w=w: tf.sum(
                    tf.real(tf.multiply(np.conj(w), tf.linalg.lstsq(x, b, rcond=1e-8).solution))
                )
            )(a)
        )
        leaf = torch.tensor(a, requires_grad=True)
        solution = torch.linalg.pinv(leaf, rtol=1e-8) @ torch.tensor(b)
        torch.sum(torch.real(torch.conj(torch.tensor(w)) * solution)).backward()
        np.testing.assert_allclose(got, leaf.grad.numpy(), rtol=1e-9, atol=1e-12)


DETACHED = {
    "lstsq (0, 3)": (np.zeros((0, 3)), lambda x: tf.linalg.lstsq(x, np.ones((0, 2))).solution),
    "lstsq (3, 0)": (np.zeros((3, 0)), lambda x: tf.linalg.lstsq(x, np.ones((3, 2))).solution),
    "lstsq (0, 0)": (np.zeros((0, 0)), lambda x: tf.linalg.lstsq(x, np.ones((0, 2))).solution),
    "lstsq singular values (0, 3)": (
        np.zeros((0, 3)),
        lambda x: tf.linalg.lstsq(x, np.ones((0, 2))).singular_values,
    ),
    "pinv (0, 3)": (np.zeros((0, 3)), tf.linalg.pinv),
    "matrix_power(x, 0)": (np.ones((2, 2)), lambda x: tf.linalg.matrix_power(x, 0)),
}


@pytest.mark.parametrize("name", sorted(DETACHED))
def test_linalg_results_of_tracked_inputs_stay_on_the_tape(name: str) -> None:
    """Were detached (backward() refused 'this tensor does not require grad'): zeros of
    the input's shape, as tf.grad and PyTorch give."""
    data, function = DETACHED[name]
    leaf = tf.EagerTensor(data, requires_grad=True)
    tf.sum(function(leaf)).backward()
    np.testing.assert_array_equal(values(leaf.grad), np.zeros(data.shape))


@pytest.mark.parametrize("name", sorted(DETACHED))
def test_the_traced_gradients_of_those_results_are_zeros(name: str) -> None:
    data, function = DETACHED[name]
    grad = values(tf.grad(lambda x: tf.sum(function(x)))(data))
    np.testing.assert_array_equal(grad, np.zeros(data.shape))


# ---------------------------------------------------------------------- matrix_rank


def _low_rank(rng: np.random.Generator, shape: tuple[int, ...], rank: int, complex_: bool) -> Any:
    *batch, m, n = shape
    dtype = np.complex128 if complex_ else np.float64
    return _random(rng, (*batch, m, rank), dtype) @ _random(rng, (*batch, rank, n), dtype)


@fuzz_settings(40)
@given(
    st.sampled_from([(3, 4, 4), (2, 5, 3), (4, 3), (2, 2, 3, 3)]),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from(
        [
            {},
            {"tol": 1e-3},
            {"tol": 50.0},
            {"tol": np.float32(0.5)},
            {"tol": 1},
            {"rtol": 0.5},
            {"rtol": 1e-3},
            {"hermitian": True},
            {"hermitian": True, "tol": 1e-6},
        ]
    ),
    st.integers(0, 2**16),
)
def test_matrix_rank_is_numpys(
    shape: tuple[int, ...], rank: int, complex_: bool, options: dict[str, Any], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a = _low_rank(rng, shape, rank, complex_)
    if options.get("hermitian"):
        if shape[-1] != shape[-2]:
            return
        a = a @ np.swapaxes(a.conj(), -1, -2) - 0.5 * (a + np.swapaxes(a.conj(), -1, -2))
    got = values(tf.linalg.matrix_rank(a, **options))
    expected = np.asarray(np.linalg.matrix_rank(a, **options))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_matrix_rank_per_matrix_tolerances_and_through_transforms() -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4, 3))
    tol = np.array([0.1, 100.0, 1.0])
    expected = [np.linalg.matrix_rank(x, tol=t) for x, t in zip(a, tol, strict=True)]
    np.testing.assert_array_equal(values(tf.linalg.matrix_rank(a, tol=tol)), expected)
    got = tf.vmap(lambda x, t: tf.linalg.matrix_rank(x, tol=t))(a, tol)
    np.testing.assert_array_equal(values(got), expected)
    np.testing.assert_array_equal(
        values(tf.linalg.matrix_rank(tf.traced(a), tol=tf.traced(tol))), expected
    )
    np.testing.assert_array_equal(values(tf.jit(tf.linalg.matrix_rank)(a)), [3, 3, 3])


@pytest.mark.parametrize(
    "a", [np.array([0.0, 0.0, 1.0]), np.zeros(3), np.array(2.0), np.array(0.0), np.zeros((2, 0, 3))]
)
def test_matrix_rank_of_vectors_scalars_and_empty_batches(a: Any) -> None:
    np.testing.assert_array_equal(values(tf.linalg.matrix_rank(a)), np.linalg.matrix_rank(a))


def test_matrix_rank_of_an_empty_vector_is_zero() -> None:
    """Raised a ShapeError naming the internal 'reduce_max'."""
    assert int(values(tf.linalg.matrix_rank(np.zeros(0)))) == 0


def test_matrix_rank_per_matrix_rtol() -> None:
    """Was refused ('rtol must be a real number or None')."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 4, 4))
    rtol = np.array([0.5, 1e-3, 1e-10])
    np.testing.assert_array_equal(
        values(tf.linalg.matrix_rank(a, rtol=rtol)), np.linalg.matrix_rank(a, rtol=rtol)
    )


@pytest.mark.parametrize(
    "options",
    [{"tol": -1.0}, {"tol": np.nan}, {"rtol": 0.5, "tol": 0.5}, {"tol": "a"}, {"hermitian": 1}],
)
def test_matrix_rank_bad_options_raise_tenferro_errors(options: dict[str, Any]) -> None:
    a = np.eye(3)
    try:
        expected = np.linalg.matrix_rank(a, **options)
    except Exception:
        with pytest.raises(tf.TenferroError, match="matrix_rank"):
            tf.linalg.matrix_rank(a, **options)
        return
    if "hermitian" in options:  # flags are True or False by design
        with pytest.raises(tf.TenferroError, match="hermitian"):
            tf.linalg.matrix_rank(a, **options)
        return
    np.testing.assert_array_equal(values(tf.linalg.matrix_rank(a, **options)), expected)
