"""``tf.linalg.lstsq`` and ``tf.linalg.matrix_rank`` against numpy.linalg (batches matrix
by matrix, full-rank and rank-deficient, tall, wide and square, real and complex, every
tensor kind), their derivatives against finite differences and the adjoint identity, and
bad input. The oracle database's lstsq cases are replayed in test_oracles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tenferro_support import plain

import tenferro as tf

KINDS = {
    "Tensor": tf.Tensor,
    "EagerTensor": lambda a: tf.EagerTensor(a, requires_grad=True),
    "TracedTensor": tf.traced,
}
DTYPES = ["float32", "float64", "complex64", "complex128"]


def _values(x: Any) -> np.ndarray[Any, Any]:
    return plain(x.eval() if isinstance(x, tf.TracedTensor) else x)


def _random(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype[Any]) -> Any:
    values = rng.standard_normal(shape)
    if dt.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dt)


def _matrix(rng: np.random.Generator, shape: tuple[int, ...], rank: int, dt: Any) -> Any:
    """A random ``[..., M, N]`` matrix of the given rank with singular values in [1, 3]."""
    *batch, m, n = shape
    left = np.linalg.qr(_random(rng, (*batch, m, m), dt))[0][..., :rank]
    right = np.linalg.qr(_random(rng, (*batch, n, n), dt))[0][..., :rank]
    s = rng.uniform(1.0, 3.0, (*batch, rank))
    return ((left * s[..., None, :]) @ np.swapaxes(right.conj(), -1, -2)).astype(dt)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.sampled_from(DTYPES),
    st.lists(st.integers(1, 2), max_size=2),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from(sorted(KINDS)),
    st.integers(0, 2**16),
)
def test_lstsq_is_numpys_matrix_by_matrix(
    dtype: str,
    batch: list[int],
    m: int,
    n: int,
    deficiency: int,
    vector: bool,
    kind: str,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt in (np.float32, np.complex64):
        # A rank-deficient matrix rounded to single precision has singular values of
        # the order of the rank cut-off itself: whether they count is not defined.
        deficiency = 0
    rank = max(min(m, n) - deficiency, 0)
    a = _matrix(rng, (*batch, m, n), rank, dt)
    b = _random(rng, (m,) if vector else (*batch, m, 2), dt)
    result = tf.linalg.lstsq(KINDS[kind](a), KINDS[kind](b))
    solution, residuals, ranks, s = (_values(v) for v in result)
    tol = 2e-4 if dt in (np.float32, np.complex64) else 1e-10
    assert solution.dtype == dt
    assert residuals.dtype == s.dtype == np.empty(0, dt).real.dtype
    assert ranks.dtype == np.int64
    for index in np.ndindex(*batch):
        rhs = b if vector else b[index]
        x, res, r, sv = np.linalg.lstsq(a[index], rhs)
        np.testing.assert_allclose(solution[index], x, rtol=tol, atol=tol)
        np.testing.assert_allclose(s[index], sv, rtol=tol, atol=tol)
        assert ranks[index] == r == rank
        misfit = a[index] @ x - rhs
        expected = np.sum(np.abs(misfit) ** 2, axis=0)
        np.testing.assert_allclose(residuals[index], np.atleast_1d(expected), rtol=tol, atol=tol)
        if np.size(res):  # numpy returns them for full column rank and M > N
            np.testing.assert_allclose(residuals[index], res, rtol=tol, atol=tol)


def test_lstsq_rcond_and_empty_shapes() -> None:
    a = np.diag([1.0, 1e-3, 1e-9])
    b = np.ones(3)
    for rcond in (None, 1e-6, 1e-2, -1.0):
        expected = np.linalg.lstsq(a, b, rcond=rcond)
        got = tf.linalg.lstsq(a, b, rcond=rcond)
        np.testing.assert_allclose(np.asarray(got.solution), expected[0])
        assert int(got.rank) == expected[2]
    empty = tf.linalg.lstsq(np.zeros((0, 3)), np.zeros((0, 2)))
    assert np.asarray(empty.solution).shape == (3, 2)
    assert np.asarray(empty.solution).sum() == 0
    assert np.asarray(empty.residuals).shape == (2,)
    assert int(empty.rank) == 0


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_lstsq_derivatives(shape: tuple[int, ...], dt: Any) -> None:
    rng = np.random.default_rng(sum(shape))
    a = _matrix(rng, shape, min(shape[-2:]), np.dtype(dt))
    b = _random(rng, (*shape[:-1], 2), np.dtype(dt))

    def f(x: Any, y: Any) -> Any:
        result = tf.linalg.lstsq(x, y)
        return [result.solution, result.residuals, result.singular_values]

    tf.testing.check_grads(f, [a, b], order=2)


def test_lstsq_gradient_is_the_normal_equations() -> None:
    """For a full-column-rank tall A, d/dB of <W, x> is A (A^H A)^-1 W (closed form)."""
    rng = np.random.default_rng(3)
    a, b, w = rng.standard_normal((6, 3)), rng.standard_normal((6, 2)), rng.standard_normal((3, 2))
    grad = tf.grad(lambda y: tf.sum(tf.linalg.lstsq(a, y).solution * w))(b)
    np.testing.assert_allclose(np.asarray(grad), a @ np.linalg.solve(a.T @ a, w), rtol=1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.sampled_from(DTYPES),
    st.lists(st.integers(1, 2), max_size=2),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(0, 5),
    st.booleans(),
    st.integers(0, 2**16),
)
def test_matrix_rank_is_numpys(
    dtype: str, batch: list[int], m: int, n: int, rank: int, hermitian: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if hermitian:
        n = m
    rank = min(rank, m, n)
    if dt in (np.float32, np.complex64):  # see test_lstsq_is_numpys_matrix_by_matrix
        rank = min(m, n)
    a = _matrix(rng, (*batch, m, n), rank, dt)
    if hermitian:
        a = (a + np.swapaxes(a.conj(), -1, -2)) / 2
    got = tf.linalg.matrix_rank(a, hermitian=hermitian)
    np.testing.assert_array_equal(np.asarray(got), np.linalg.matrix_rank(a, hermitian=hermitian))
    tol = np.full(batch, 1.5) if batch else 1.5
    np.testing.assert_array_equal(
        np.asarray(tf.linalg.matrix_rank(a, tol)), np.linalg.matrix_rank(a, tol)
    )
    np.testing.assert_array_equal(
        np.asarray(tf.linalg.matrix_rank(a, rtol=0.5)), np.linalg.matrix_rank(a, rtol=0.5)
    )


def test_matrix_rank_of_vectors_and_through_numpy() -> None:
    for v in (np.zeros(3), np.array([0.0, 2.0]), np.float64(0.0), np.float64(3.0)):
        assert int(tf.linalg.matrix_rank(v)) == np.linalg.matrix_rank(v)
    t = tf.tensor(np.eye(3), requires_grad=True)
    assert int(np.linalg.matrix_rank(t)) == 3
    x = np.linalg.lstsq(t, tf.tensor(np.ones(3)))[0]
    assert isinstance(x, tf.EagerTensor)


BAD = {
    "lstsq with mismatched rows": lambda: tf.linalg.lstsq(np.ones((3, 2)), np.ones(4)),
    "lstsq of a vector": lambda: tf.linalg.lstsq(np.ones(3), np.ones(3)),
    "lstsq with rcond='x'": lambda: tf.linalg.lstsq(np.eye(2), np.ones(2), rcond="x"),
    "lstsq with rcond=nan": lambda: tf.linalg.lstsq(np.eye(2), np.ones(2), rcond=float("nan")),
    "matrix_rank with tol and rtol": lambda: tf.linalg.matrix_rank(np.eye(2), 0.1, rtol=0.1),
    "matrix_rank with hermitian='yes'": lambda: tf.linalg.matrix_rank(np.eye(2), hermitian="yes"),
    "matrix_rank with a wrong tol shape": lambda: tf.linalg.matrix_rank(
        np.ones((2, 3, 3)), np.ones(3)
    ),
    "matrix_rank of a non-square hermitian": lambda: tf.linalg.matrix_rank(
        np.ones((2, 3)), hermitian=True
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_names_the_operation(name: str) -> None:
    with pytest.raises(tf.TenferroError) as info:
        BAD[name]()
    assert name.split()[0] in str(info.value)


@st.composite
def _broadcasting(draw: Any, batch: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts against ``batch``: some of its trailing axes, each kept
    or 1, or all of them after an extra leading axis (the ranks then gain it, as
    numpy's)."""
    extra = draw(st.booleans())
    kept = batch if extra else batch[len(batch) - draw(st.integers(0, len(batch))) :]
    shape = tuple(n if draw(st.booleans()) else 1 for n in kept)
    return (draw(st.integers(1, 2)), *shape) if extra else shape


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.sampled_from([0, 1, 2, 3]), max_size=2).map(tuple),
    st.integers(0, 4),
    st.integers(0, 4),
    st.booleans(),
    st.sampled_from(["tol", "rtol", None]),
    st.booleans(),
    st.sampled_from(sorted(KINDS)),
    st.data(),
)
def test_matrix_rank_tolerances_broadcast_as_numpys(
    batch: tuple[int, ...],
    m: int,
    n: int,
    hermitian: bool,
    name: str | None,
    as_tensor: bool,
    kind: str,
    data: Any,
) -> None:
    """numpy 2: ``tol`` and ``rtol`` are numbers or arrays broadcasting against the batch
    axes (the ranks take the broadcast shape); empty matrices and batches included."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    if hermitian:
        n = m
    rank = data.draw(st.integers(0, min(m, n)))
    a = _matrix(rng, (*batch, m, n), rank, np.dtype(np.complex128))
    if hermitian:
        a = a + np.swapaxes(a.conj(), -1, -2)
    options: dict[str, Any] = {"hermitian": hermitian}
    if name is not None:
        shape = data.draw(_broadcasting(batch))
        high = 4.0 if name == "tol" else 1.0
        value = rng.uniform(0.0, high, shape) if shape else float(rng.uniform(0.0, high))
        options[name] = value
    expected = np.linalg.matrix_rank(a, **options)
    if name is not None and as_tensor:
        options[name] = KINDS[kind](np.asarray(options[name]))
    got = _values(tf.linalg.matrix_rank(KINDS[kind](a), **options))
    assert got.dtype == np.int64
    assert got.shape == np.shape(expected)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["tol", "rtol"])
def test_matrix_rank_tolerances_that_do_not_broadcast(name: str) -> None:
    a, value = np.ones((2, 3, 3)), np.ones(3)
    with pytest.raises(ValueError, match="broadcast"):
        np.linalg.matrix_rank(a, **{name: value})
    with pytest.raises(tf.ShapeError, match=f"matrix_rank.*{name}.*\\(3,\\).*\\(2,\\)"):
        tf.linalg.matrix_rank(a, **{name: value})


@pytest.mark.parametrize("size", [0, 1, 3])
@pytest.mark.parametrize("nonzero", [False, True])
def test_matrix_rank_of_vectors_and_scalars_is_numpys(size: int, nonzero: bool) -> None:
    """Fewer than two axes: 1 unless all entries are 0 (none at all: 0)."""
    for a in (np.zeros(size), np.zeros((size,)) + (np.arange(size) == size - 1) * nonzero):
        got = tf.linalg.matrix_rank(a)
        assert _values(got).dtype == np.int64
        assert int(_values(got)) == np.linalg.matrix_rank(a)
    scalar = np.float64(2.0 if nonzero else 0.0)
    assert int(_values(tf.linalg.matrix_rank(scalar))) == np.linalg.matrix_rank(scalar)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.sampled_from(DTYPES),
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(0, 6),
    st.integers(0, 3),
    st.integers(0, 2**32 - 1),
)
def test_lstsq_of_one_matrix_equals_a_batch_of_one(
    dtype: str, m: int, n: int, rank: int, k: int, seed: int
) -> None:
    """One matrix runs LAPACK's least-squares driver, a batch the SVD's formula: the
    same solution, residuals, rank and singular values (to rounding), full or deficient
    rank (a cut-off between the kept values, in [1, 3], and the zero ones)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    a = _matrix(rng, (m, n), min(rank, m, n), dt)
    b = _random(rng, (m, k), dt)
    one = tf.linalg.lstsq(a, b, rcond=1e-3)
    batch = tf.linalg.lstsq(a[None], b[None], rcond=1e-3)
    tol = 1e-4 if dt in (np.float32, np.complex64) else 1e-10
    for got, expected in zip(one, batch, strict=True):
        np.testing.assert_allclose(_values(got), _values(expected)[0], rtol=tol, atol=tol * 10)
    assert int(_values(one.rank)) == min(rank, m, n)
