"""The derivatives of ``pinv`` and ``lstsq`` where singular values repeat.

A^+ is smooth wherever the numerical rank is constant, ties included; the review of
s21 found both functions' gradients wrong at ties (the identity, orthogonal and unitary
matrices, diag(1, 1, 2)), where they went through the SVD's regularised gaps. The
generator here draws matrices of every dtype, square, tall and wide, full rank and
rank-deficient, with forced repeated singular values (all equal: multiples of
isometries; repeated blocks; nearly tied pairs) in random bases or the standard one,
and checks the gradients against central differences of numpy's truncated ``pinv`` /
``lstsq`` (the truncation at a cut-off above the step keeps the rank constant), against
PyTorch's ``pinv`` gradients where torch is installed, the eager tape against
``tf.grad``, the JVP against its transpose (``check_grads``), and that no
``DegenerateDerivativeWarning`` fires. Second order at full rank is in the rule table
(``linalg_pinv_tied``, ``linalg_lstsq_tied`` in rule_cases_spectral).

The instances the review of s21 found (the identity, an orthogonal, a unitary matrix,
diag(1, 1, 2), isometries, a rank-deficient tie) are kept by name; away from ties, the
gradients of ``pinv``, ``lstsq``'s solution (in ``a`` and in ``b``) and its residuals,
batched, tall, wide and square, rank-deficient at a cut-off above the difference step,
and of the hermitian ``pinv``, by every derivative route against central differences.
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from transform_routes import fd_gradient, gradients_in_every_mode, loss_of, numpy_loss, values

import tenferro as tf

DTYPES = ["float32", "float64", "complex64", "complex128"]
HAVE_TORCH = importlib.util.find_spec("torch") is not None
CUT = 0.1
"""The cut-off of rank-deficient cases: kept singular values are >= 1 (so >= 0.3 of
the largest), the dropped ones 0, and a finite-difference step stays far below it."""


def _unitary(rng: np.random.Generator, n: int, complex_: bool) -> Any:
    x = rng.standard_normal((n, n))
    if complex_:
        x = x + 1j * rng.standard_normal((n, n))
    return np.linalg.qr(x)[0]


def _levels(rng: np.random.Generator, rank: int, structure: str) -> Any:
    """``rank`` singular values in [1, 3], descending, tied as ``structure`` says."""
    if structure == "equal":  # a multiple of an isometry
        return np.full(rank, rng.uniform(1.0, 3.0))
    if structure == "blocks":  # levels of multiplicity 2 (the last alone when odd)
        values = np.repeat(np.sort(rng.choice([1.0, 1.5, 2.0, 3.0], 2, replace=False)), 2)
        return np.resize(values[::-1], rank)
    if structure == "near":  # a pair split by far less than any regularisation
        gap = float(rng.choice([1e-15, 1e-12, 1e-9]))
        return np.sort([1.0 + gap, 1.0, 2.0, 3.0][:rank])[::-1]
    return np.sort(rng.uniform(1.0, 3.0, rank))[::-1]  # distinct


def tied_matrix(
    rng: np.random.Generator,
    shape: tuple[int, int],
    rank: int,
    structure: str,
    basis: str,
    complex_: bool,
) -> Any:
    """An ``M x N`` matrix (complex128 or float64) of the given rank and structure of
    singular values, in random bases or the standard one."""
    m, n = shape
    k = min(m, n)
    s = np.zeros(k)
    s[:rank] = _levels(rng, rank, structure)
    if basis == "standard":
        left, right = np.eye(m)[:, :k], np.eye(n)[:, :k]
    else:
        left, right = _unitary(rng, m, complex_)[:, :k], _unitary(rng, n, complex_)[:, :k]
    a = (left * s) @ np.conj(right.T)
    return a if complex_ else a.real


def _random(rng: np.random.Generator, shape: tuple[int, ...], complex_: bool) -> Any:
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


def _loss(w: Any, f: Any) -> Any:
    """``x ↦ Σ Re(conj(w) f(x))`` on tenferro values."""
    return lambda *xs: tf.sum(tf.real(tf.multiply(np.conj(w), f(*xs))))


def _numpy_loss(w: Any, f: Any) -> Any:
    return lambda *xs: float(np.sum(np.real(np.conj(w) * f(*xs))))


def _close(got: Any, expected: Any, single: bool) -> None:
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    tol = 2e-3 if single else 1e-7
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol * scale)


def _torch_pinv_gradients(a: Any, b: Any, w: Any, rtol: float | None) -> tuple[Any, Any]:
    """PyTorch's gradients of ``Σ Re(conj(w) pinv(a) b)`` with respect to a and b."""
    import torch

    leaf, rhs = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    solution = torch.linalg.pinv(leaf, rtol=rtol) @ rhs
    torch.sum(torch.real(torch.conj(torch.tensor(w)) * solution)).backward()
    assert leaf.grad is not None
    assert rhs.grad is not None
    return leaf.grad.numpy(), rhs.grad.numpy()


@fuzz_settings(40)
@given(
    st.sampled_from(DTYPES),
    st.sampled_from([(3, 3), (4, 2), (2, 4), (4, 4), (1, 3), (3, 1), (2, 2)]),
    st.sampled_from(["equal", "blocks", "near", "distinct"]),
    st.sampled_from(["random", "standard"]),
    st.booleans(),
    st.integers(0, 2**16),
)
def test_pinv_and_lstsq_gradients_where_singular_values_repeat(
    dtype: str,
    shape: tuple[int, int],
    structure: str,
    basis: str,
    deficient: bool,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    complex_, single = dt.kind == "c", dt in (np.float32, np.complex64)
    k = min(shape)
    rank = k - 1 if deficient and k > 1 else k
    exact = tied_matrix(rng, shape, rank, structure, basis, complex_)
    a = exact.astype(dt)
    upcast = a.astype(np.complex128 if complex_ else np.float64)  # the FD reference's input
    m, n = shape
    b, w_pinv, w_x = (
        _random(rng, (m, 2), complex_).astype(dt),
        _random(rng, (n, m), complex_),
        _random(rng, (n, 2), complex_),
    )
    rtol = CUT if rank < k else None

    pinv_loss = _loss(w_pinv, lambda x: tf.linalg.pinv(x, rtol=rtol))
    lstsq_loss = _loss(w_x, lambda x, y: tf.linalg.lstsq(x, y, rcond=rtol).solution)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        g_pinv = np.asarray(tf.grad(pinv_loss)(a))
        g_a, g_b = (np.asarray(g) for g in tf.grad(lstsq_loss, argnums=(0, 1))(a, b))
        tape = tf.Tape()
        x, y = tape.track(a), tape.track(b)
        tape_a, tape_b = (np.asarray(g) for g in tape.grad(lstsq_loss(x, y), [x, y]))
    np.testing.assert_allclose(tape_a, g_a, rtol=1e-5 if single else 1e-12, atol=1e-6)
    np.testing.assert_allclose(tape_b, g_b, rtol=1e-5 if single else 1e-12, atol=1e-6)

    cut = np.finfo(dt).eps * max(m, n) if rtol is None else rtol
    numpy_pinv = _numpy_loss(w_pinv, lambda x: np.linalg.pinv(x, rtol=cut))
    _close(g_pinv, fd_gradient(numpy_pinv, upcast), single)
    b_up = b.astype(upcast.dtype)
    by_a = _numpy_loss(w_x, lambda x: np.linalg.lstsq(x, b_up, rcond=cut)[0])
    by_b = _numpy_loss(w_x, lambda y: np.linalg.lstsq(upcast, y, rcond=cut)[0])
    _close(g_a, fd_gradient(by_a, upcast), single)
    _close(g_b, fd_gradient(by_b, b_up), single)

    if HAVE_TORCH:
        expected_pinv, _ = _torch_pinv_gradients(upcast, np.eye(m, dtype=upcast.dtype), w_pinv, cut)
        expected_a, expected_b = _torch_pinv_gradients(upcast, b_up, w_x, cut)
        _close(g_pinv, expected_pinv, single)
        _close(g_a, expected_a, single)
        _close(g_b, expected_b, single)


@fuzz_settings(12)
@given(
    st.sampled_from(DTYPES),
    st.sampled_from([(3, 3), (4, 3), (3, 4), (2, 2)]),
    st.sampled_from(["equal", "blocks", "distinct"]),
    st.booleans(),
    st.integers(0, 2**16),
)
def test_pinv_and_lstsq_jvp_and_transpose_at_ties(
    dtype: str, shape: tuple[int, int], structure: str, deficient: bool, seed: int
) -> None:
    """The JVP against finite differences and against its transpose (the adjoint
    identity), full rank and rank-deficient (first order there: a truncation's higher
    orders follow Golub-Pereyra's formula, see tf.linalg.pseudo_inverse)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    k = min(shape)
    rank = k - 1 if deficient else k
    a = tied_matrix(rng, shape, rank, structure, "random", dt.kind == "c").astype(dt)
    b = _random(rng, (shape[0], 2), dt.kind == "c").astype(dt)
    rtol = CUT if deficient else None
    single = dt in (np.float32, np.complex64)
    settings = {"eps": 2e-3, "atol": 2e-2, "rtol": 2e-2} if single else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        tf.testing.check_grads(
            lambda x: tf.linalg.pinv(x, rtol=rtol), [a], order=1 if deficient else 2, **settings
        )
        tf.testing.check_grads(
            lambda x, y: tf.linalg.lstsq(x, y, rcond=rtol).solution,
            [a, b],
            order=1 if deficient else 2,
            **settings,
        )


@pytest.mark.parametrize("gap", [0.0, 1e-15, 1e-12, 1e-9, 1e-6])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_pinv_and_lstsq_jvp_next_to_a_tie_is_the_closed_form(gap: float, dtype: str) -> None:
    """In a random basis, ``A = Q diag(1, 1 + gap, 2) Z^H`` (invertible): the JVPs are
    ``-A^+ dA A^+`` and ``-A^+ dA x``, the same for every gap (no regularisation)."""
    rng = np.random.default_rng(17)
    complex_ = dtype == "complex128"
    q, z = _unitary(rng, 3, complex_), _unitary(rng, 3, complex_)
    a = (q * np.array([2.0, 1.0 + gap, 1.0])) @ np.conj(z.T)
    t, b = _random(rng, (3, 3), complex_), _random(rng, (3, 2), complex_)
    if not complex_:
        a = a.real
    inverse = np.linalg.inv(a)
    _, dp = tf.jvp(tf.linalg.pinv, (a,), (t,))
    np.testing.assert_allclose(np.asarray(dp), -inverse @ t @ inverse, rtol=1e-9, atol=1e-12)
    _, dx = tf.jvp(lambda x: tf.linalg.lstsq(x, b).solution, (a,), (t,))
    np.testing.assert_allclose(np.asarray(dx), -inverse @ t @ inverse @ b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_hermitian_pinv_gradient_at_tied_eigenvalues(dtype: str) -> None:
    """``pinv(h, hermitian=True)`` with eigenvalues (2, 2, -2, 1) (tied values and tied
    magnitudes of opposite signs) against central differences of numpy's, which reads
    the same lower triangle: the input is differentiated as Hermitian, so the gradient
    is the Hermitian part of that function's."""
    rng = np.random.default_rng(8)
    complex_ = dtype == "complex128"
    v = _unitary(rng, 4, complex_)
    h = (v * np.array([2.0, 2.0, -2.0, 1.0])) @ np.conj(v.T)
    h = h if complex_ else h.real
    w = _random(rng, (4, 4), complex_)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        got = np.asarray(tf.grad(_loss(w, lambda x: tf.linalg.pinv(x, hermitian=True)))(h))
    expected = fd_gradient(_numpy_loss(w, lambda x: np.linalg.pinv(x, hermitian=True)), h)
    expected = (expected + np.conj(expected.T)) / 2
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-8)


def test_pinv_and_lstsq_values_and_ranks_through_every_kind() -> None:
    """Values where the rank is well defined are numpy's; a batch mixes ranks."""
    rng = np.random.default_rng(2)
    a = np.stack([tied_matrix(rng, (4, 3), r, "blocks", "random", False) for r in (3, 2, 1)])
    b = rng.standard_normal((3, 4, 2))
    for kind in (tf.Tensor, tf.traced, lambda v: tf.EagerTensor(v, requires_grad=True)):
        got = tf.linalg.pinv(kind(a), rtol=CUT)
        got = np.asarray(got.eval() if isinstance(got, tf.TracedTensor) else got)
        np.testing.assert_allclose(got, np.linalg.pinv(a, rtol=CUT), rtol=1e-12, atol=1e-12)
        result = tf.linalg.lstsq(kind(a), kind(b), rcond=CUT)
        solution, rank = (
            np.asarray(v.eval() if isinstance(v, tf.TracedTensor) else v)
            for v in (result.solution, result.rank)
        )
        for i in range(3):
            x, _, r, _ = np.linalg.lstsq(a[i], b[i], rcond=CUT)
            np.testing.assert_allclose(solution[i], x, rtol=1e-12, atol=1e-12)
            assert rank[i] == r == 3 - i


# ---------------------------------------------------------------------- instances


def _values(x: Any) -> Any:
    return np.asarray(x.eval() if isinstance(x, tf.TracedTensor) else x)


def _weighted(w: Any) -> Any:
    """``x ↦ Σ Re(conj(w) x)`` for numpy arrays."""
    return lambda x: float(np.sum(np.real(np.conj(w) * x)))


def _rank_matrix(rng: np.random.Generator, shape: tuple[int, int], rank: int, dtype: Any) -> Any:
    """A matrix of the given rank, singular values spread in [1, 3]."""
    complex_ = np.dtype(dtype).kind == "c"
    return tied_matrix(rng, shape, rank, "distinct", "random", complex_).astype(dtype)


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
    complex_ = a.dtype.kind == "c"
    b, w = _random(rng, (m, 2), complex_), _random(rng, (n, 2), complex_)

    def loss(x: Any) -> Any:
        return tf.sum(tf.real(tf.multiply(np.conj(w), tf.linalg.lstsq(x, b, rcond=1e-8).solution)))

    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        got = _values(tf.grad(loss)(a))
    expected = fd_gradient(lambda x: _weighted(w)(np.linalg.lstsq(x, b, rcond=1e-3)[0]), a)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_pinv_gradient_at_the_identity() -> None:
    """Was diag(-b) instead of -outer(1, b)."""
    b = np.array([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        got = _values(tf.grad(lambda m: tf.sum(tf.linalg.pinv(m) @ b))(np.eye(2)))
    np.testing.assert_allclose(got, -np.outer(np.ones(2), b), rtol=1e-12)


def test_lstsq_gradient_of_a_well_separated_matrix_equals_pytorch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    rng = np.random.default_rng(11)
    for shape, rank in (((5, 3), 3), ((3, 5), 2), ((4, 4), 3)):
        a = _rank_matrix(rng, shape, rank, np.complex128)
        b = _random(rng, (shape[0], 2), True)
        w = _random(rng, (shape[1], 2), True)
        got = _values(
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


# ---------------------------------------------------------------------- every mode


def _drawn(
    rng: np.random.Generator, shape: tuple[int, ...], complex_: bool, rank: Any = None
) -> Any:
    def draw(s: tuple[int, ...]) -> Any:
        a = rng.standard_normal(s)
        return a + 1j * rng.standard_normal(s) if complex_ else a

    if rank is None:
        return draw(shape)
    *batch, m, n = shape
    return draw((*batch, m, rank)) @ draw((*batch, rank, n))


_PINV_CASES = [
    ((3, 3), False, None, None),
    ((4, 2), True, None, None),
    ((2, 4), False, None, None),
    ((2, 3, 2), True, None, None),
    ((1, 3), True, None, None),
    ((4, 3), False, 2, 1e-6),
    ((3, 4), True, 2, 1e-6),
    ((2, 3, 3), True, 1, 1e-6),
]


@pytest.mark.parametrize("which", ["pinv", "lstsq(a)", "lstsq(b)", "residuals(a)"])
@pytest.mark.parametrize("case", range(len(_PINV_CASES)))
def test_pinv_and_lstsq_gradients(which: str, case: int) -> None:
    shape, complex_, rank, rtol = _PINV_CASES[case]
    rng = np.random.default_rng(case)
    a = _drawn(rng, shape, complex_, rank)
    b = _drawn(rng, (*shape[:-1], 2), complex_)
    if which == "pinv":
        f, x, want_value = (
            lambda v: tf.linalg.pinv(v, rtol=rtol),
            a,
            np.linalg.pinv(a, rtol=rtol) if rtol else np.linalg.pinv(a),
        )
    elif which == "lstsq(a)":
        f, x = (lambda v: tf.linalg.lstsq(v, b, rcond=rtol)[0]), a
        want_value = (np.linalg.pinv(a, rtol=rtol) if rtol else np.linalg.pinv(a)) @ b
    elif which == "lstsq(b)":
        f, x = (lambda v: tf.linalg.lstsq(a, v, rcond=rtol)[0]), b
        want_value = (np.linalg.pinv(a, rtol=rtol) if rtol else np.linalg.pinv(a)) @ b
    else:
        f, x = (lambda v: tf.linalg.lstsq(v, b, rcond=rtol)[1]), a
        solution = (np.linalg.pinv(a, rtol=rtol) if rtol else np.linalg.pinv(a)) @ b
        want_value = np.sum(np.abs(a @ solution - b) ** 2, axis=-2)
    out = values(f(tf.Tensor(x)))
    np.testing.assert_allclose(out, want_value, atol=1e-9)
    w = _drawn(rng, out.shape, out.dtype.kind == "c")
    want = fd_gradient(numpy_loss(f, [w]), x)
    for mode, got in gradients_in_every_mode(f, x, [w]).items():
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=mode)


def test_hermitian_pinv_gradient() -> None:
    rng = np.random.default_rng(7)
    for complex_ in (False, True):
        a = _drawn(rng, (3, 3), complex_)
        f = lambda v: tf.linalg.pinv(v, hermitian=True)  # noqa: E731
        np.testing.assert_allclose(
            values(f(tf.Tensor(a))), np.linalg.pinv(a, hermitian=True), atol=1e-10
        )
        w = _drawn(rng, (3, 3), complex_)
        loss = loss_of(f, [w])
        want = fd_gradient(numpy_loss(f, [w]), a)
        want = (want + np.conj(np.swapaxes(want, -1, -2))) / 2  # differentiated as Hermitian
        np.testing.assert_allclose(values(tf.grad(loss)(a)), want, rtol=1e-5, atol=1e-6)


def test_pinv_gradient_is_torchs() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for shape, complex_ in (((3, 3), False), ((4, 2), True), ((2, 2, 4), True)):
        a, w = _drawn(rng, shape, complex_), _drawn(rng, shape[:-2] + shape[::-1][:2], complex_)
        got = values(tf.grad(loss_of(tf.linalg.pinv, [w]))(a))
        leaf = torch.tensor(a, requires_grad=True)
        (torch.conj(torch.tensor(w)) * torch.linalg.pinv(leaf)).real.sum().backward()
        np.testing.assert_allclose(got, leaf.grad.numpy(), rtol=1e-7, atol=1e-9)
