"""``tf.linalg.lstsq`` and ``tf.linalg.matrix_rank`` against numpy.linalg (batches matrix
by matrix and broadcast against each other, full-rank and rank-deficient, tall, wide and
square, empty, real and complex, every tensor kind, under vmap and jit), their
derivatives against finite differences and the adjoint identity (at a constant
numerical rank: central differences of numpy's lstsq truncated above the step), and bad
input. The oracle database's lstsq cases are replayed in test_oracles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from transform_routes import fd_gradient

import tenferro as tf

KINDS = {
    "Tensor": tf.Tensor,
    "EagerTensor": lambda a: tf.EagerTensor(a, requires_grad=True),
    "TracedTensor": tf.traced,
}
DTYPES = ["float32", "float64", "complex64", "complex128"]


def _values(x: Any) -> np.ndarray[Any, Any]:
    return np.asarray(x.eval() if isinstance(x, tf.TracedTensor) else x)


def _random(rng: np.random.Generator, shape: tuple[int, ...], dt: Any) -> Any:
    values = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dt)


def _matrix(rng: np.random.Generator, shape: tuple[int, ...], rank: int, dt: Any) -> Any:
    """A random ``[..., M, N]`` matrix of the given rank with singular values in [1, 3]."""
    *batch, m, n = shape
    left = np.linalg.qr(_random(rng, (*batch, m, m), dt))[0][..., :rank]
    right = np.linalg.qr(_random(rng, (*batch, n, n), dt))[0][..., :rank]
    s = rng.uniform(1.0, 3.0, (*batch, rank))
    return ((left * s[..., None, :]) @ np.swapaxes(right.conj(), -1, -2)).astype(dt)


@fuzz_settings(60)
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


@fuzz_settings(40)
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


@fuzz_settings(60)
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


@fuzz_settings(60)
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


def _weighted(w: Any) -> Any:
    """``x ↦ Σ Re(conj(w) x)`` for numpy arrays."""
    return lambda x: float(np.sum(np.real(np.conj(w) * x)))


# ---------------------------------------------------------------------- values


# ---------------------------------------------------------------------- broadcasting, transforms


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
    solution, residuals, rank, s = (_values(r) for r in tf.linalg.lstsq(make(a), make(b)))
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
    np.testing.assert_allclose(_values(got), expected, rtol=1e-12)
    got = tf.jit(tf.vmap(lambda x: tf.linalg.lstsq(x, b[0]).solution))(a)
    expected = np.stack([np.linalg.lstsq(x, b[0])[0] for x in a])
    np.testing.assert_allclose(_values(got), expected, rtol=1e-12)


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
    a, b = _matrix(rng, (m, n), rank, dtype), _random(rng, (m, k), dtype)
    w = _random(rng, (n, k), dtype)

    def loss(x: Any, y: Any) -> Any:
        solution = tf.linalg.lstsq(x, y, rcond=1e-8).solution
        return tf.sum(tf.real(tf.multiply(np.conj(w), solution)))

    ga, gb = (_values(g) for g in tf.grad(loss, argnums=(0, 1))(a, b))
    by_a = fd_gradient(lambda x: _weighted(w)(np.linalg.lstsq(x, b, rcond=1e-3)[0]), a)
    by_b = fd_gradient(lambda y: _weighted(w)(np.linalg.lstsq(a, y, rcond=1e-3)[0]), b)
    np.testing.assert_allclose(ga, by_a, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, by_b, rtol=1e-6, atol=1e-7)


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
def test_matrix_rank_options_are_numpys(
    shape: tuple[int, ...], rank: int, complex_: bool, options: dict[str, Any], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a = _low_rank(rng, shape, rank, complex_)
    if options.get("hermitian"):
        if shape[-1] != shape[-2]:
            return
        a = a @ np.swapaxes(a.conj(), -1, -2) - 0.5 * (a + np.swapaxes(a.conj(), -1, -2))
    got = _values(tf.linalg.matrix_rank(a, **options))
    expected = np.asarray(np.linalg.matrix_rank(a, **options))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_matrix_rank_per_matrix_tolerances_and_through_transforms() -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4, 3))
    tol = np.array([0.1, 100.0, 1.0])
    expected = [np.linalg.matrix_rank(x, tol=t) for x, t in zip(a, tol, strict=True)]
    np.testing.assert_array_equal(_values(tf.linalg.matrix_rank(a, tol=tol)), expected)
    got = tf.vmap(lambda x, t: tf.linalg.matrix_rank(x, tol=t))(a, tol)
    np.testing.assert_array_equal(_values(got), expected)
    np.testing.assert_array_equal(
        _values(tf.linalg.matrix_rank(tf.traced(a), tol=tf.traced(tol))), expected
    )
    np.testing.assert_array_equal(_values(tf.jit(tf.linalg.matrix_rank)(a)), [3, 3, 3])


def test_matrix_rank_of_an_empty_batch() -> None:
    a = np.zeros((2, 0, 3))
    np.testing.assert_array_equal(_values(tf.linalg.matrix_rank(a)), np.linalg.matrix_rank(a))


def test_matrix_rank_per_matrix_rtol() -> None:
    """Was refused ('rtol must be a real number or None')."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 4, 4))
    rtol = np.array([0.5, 1e-3, 1e-10])
    np.testing.assert_array_equal(
        _values(tf.linalg.matrix_rank(a, rtol=rtol)), np.linalg.matrix_rank(a, rtol=rtol)
    )


@pytest.mark.parametrize(
    "options",
    [{"tol": -1.0}, {"tol": np.nan}, {"tol": "a"}],
)
def test_matrix_rank_bad_options_raise_tenferro_errors(options: dict[str, Any]) -> None:
    a = np.eye(3)
    try:
        expected = np.linalg.matrix_rank(a, **options)
    except Exception:
        with pytest.raises(tf.TenferroError, match="matrix_rank"):
            tf.linalg.matrix_rank(a, **options)
        return
    np.testing.assert_array_equal(_values(tf.linalg.matrix_rank(a, **options)), expected)
