"""Tied eigen/singular values: losses that treat a degenerate level as a whole keep
their exact derivatives silently, to second order; losses that need what a tie leaves
out (tied values weighted differently, a rotation inside a tied level) warn in every
reverse-mode path, once per call, instead of returning a wrong number silently. The tie
table (``spectral_ties``) is checked against finite differences in extended precision;
forward-mode tangents are never checked."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import spectral_ties
from fuzz_support import fuzz_settings
from hypothesis import assume, given
from hypothesis import strategies as st

import tenferro as tf
from tenferro.linalg.degeneracy import clusters, uneven_on_ties


def orthogonal(n: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    return q


def rotated(levels: list[float], seed: int, complex_: bool = False) -> np.ndarray:
    """A Hermitian matrix with eigenvalues ``levels`` (repeats make ties) in a random basis."""
    rng = np.random.default_rng(seed)
    n = len(levels)
    z = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if complex_ else 0)
    q, _ = np.linalg.qr(z)
    return (q * np.asarray(levels)) @ q.conj().T


def observable(n: int, seed: int = 1) -> np.ndarray:
    o = np.random.default_rng(seed).standard_normal((n, n))
    return o + o.T


def thermal(o: np.ndarray) -> Callable[[Any], Any]:
    """Tr(exp(-H) O) through eigh: smooth in H, but its derivative at a tie needs the
    mixing of the tied eigenvectors, which eigh-level AD cannot supply."""

    def loss(h: Any) -> Any:
        w, v = tf.linalg.eigh(h)
        return tf.sum(tf.exp(-w) * tf.einsum("ia,ij,ja->a", tf.conj(v), o, v).real)

    return loss


def lowest(h: Any) -> Any:
    return tf.linalg.eigvalsh(h)[0]


def top_singular(a: Any) -> Any:
    return tf.linalg.svdvals(a)[0]


def _tape_grad(f: Callable[[Any], Any], x: np.ndarray) -> Any:
    tape = tf.Tape()
    leaf = tape.track(x)
    return tape.grad(f(leaf), leaf)


REVERSE_PATHS: dict[str, Callable[[Callable[[Any], Any], np.ndarray], Any]] = {
    "tf.grad": lambda f, x: tf.grad(f)(x),
    "jit(grad)": lambda f, x: tf.jit(tf.grad(f))(x),
    "tape": _tape_grad,
    "vjp": lambda f, x: tf.vjp(f, x)[1](np.ones(()))[0],
    "hessian": lambda f, x: tf.hessian(f)(x),
}

EIGH_TIE = r"linalg\.eigh: eigenvalues(\[[\d, ]*\])? 0 and 1"  # [batch] under vmap
SVD_TIE = r"linalg\.svd: singular values(\[[\d, ]*\])? 0 and 1"
DEGENERATE = rotated([0.0, 0.0, 1.0, 2.0], seed=3)
UNEVEN: dict[str, tuple[Callable[[Any], Any], np.ndarray, str]] = {
    "Tr(exp(-H) O)": (thermal(observable(4)), DEGENERATE, EIGH_TIE),
    "lowest of a degenerate level": (lowest, DEGENERATE, EIGH_TIE),
    "top of tied singular values": (
        top_singular,
        orthogonal(3, seed=4) @ np.diag([3.0, 3.0, 1.0]) @ orthogonal(3, seed=5),
        SVD_TIE,
    ),
}


@pytest.mark.parametrize("path", sorted(REVERSE_PATHS))
@pytest.mark.parametrize("case", sorted(UNEVEN))
def test_uneven_losses_at_ties_warn_in_every_reverse_path(case: str, path: str) -> None:
    f, x, where = UNEVEN[case]
    with pytest.warns(tf.DegenerateDerivativeWarning, match=where):
        REVERSE_PATHS[path](f, x)


def test_the_warning_names_the_batch_entry_under_vmap() -> None:
    batch = np.stack([rotated([0.0, 1.0, 2.0], seed=5), np.eye(3)])  # [1] is tied
    with pytest.warns(tf.DegenerateDerivativeWarning, match=r"eigenvalues\[1\] 0 and 1"):
        tf.vmap(tf.grad(lowest))(batch)


def _whole_level_losses(o_proj: np.ndarray) -> dict[str, Callable[[Any], Any]]:
    def projector(h: Any) -> Any:  # onto the complete degenerate level {0, 1}
        _, v = tf.linalg.eigh(h)
        p = v[:, :2] @ tf.conj(v[:, :2]).T
        return tf.sum((p * o_proj).real)

    return {
        "sum of eigenvalues": lambda h: tf.sum(tf.linalg.eigvalsh(h)),
        "sum of squares": lambda h: tf.sum(tf.linalg.eigvalsh(h) ** 2),
        "exp-weighted trace": lambda h: tf.sum(tf.exp(-tf.linalg.eigvalsh(h))),
        "projector": projector,
        "sum of singular values": lambda h: tf.sum(tf.linalg.svdvals(h)),
    }


SECOND_ORDER_EXACT = {"sum of eigenvalues", "projector", "sum of singular values"}


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("name", sorted(_whole_level_losses(np.eye(4))))
def test_whole_level_losses_at_ties_are_silent_and_exact(name: str, complex_: bool) -> None:
    """These are smooth functions of the matrix: no warning (the suite turns warnings
    into errors), and the first derivative matches finite differences in both modes; so
    does the second, in every mode, for those linear in the tied values or independent
    of the rotation inside the level (a non-linear function of tied values needs its own
    second derivative inside the level: the table's "warns")."""
    h = rotated([1.0, 1.0, 2.0, 3.5], seed=6, complex_=complex_)  # s = |w|: no zero s
    f = _whole_level_losses(observable(4, seed=2))[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        for path in ("tf.grad", "tape", "jit(grad)"):
            REVERSE_PATHS[path](f, h)
        if not complex_:  # Hermitian inputs: finite differences along Hermitian directions
            order = 2 if name in SECOND_ORDER_EXACT else 1
            tf.testing.check_grads(  # a step well above rounding: the tie stays resolved
                lambda x: f((x + tf.swapaxes(x, 0, 1)) * 0.5),
                [h],
                order=order,
                modes=("fwd", "rev"),
                eps=1e-4,
                atol=1e-6,
                rtol=1e-6,
            )


@pytest.mark.parametrize("second_order", ["hessian", "hvp"])
def test_second_derivatives_through_a_tie_warn_when_reverse_mode_is_involved(
    second_order: str,
) -> None:
    """The second derivative of Tr(exp(-H)) at a tie needs the within-level mixing the
    spectral rule drops; a reverse pass over the gradient sees uneven cotangents on the
    level and says so. (Forward over forward, ``jacfwd(jacfwd)``, checks nothing: a
    known gap, documented in ``tenferro.linalg.degeneracy``.)"""
    h = rotated([0.0, 0.0, 1.0, 2.5], seed=6)

    def f(x: Any) -> Any:
        return tf.sum(tf.exp(-tf.linalg.eigvalsh(x)))

    run = {
        "hessian": lambda: tf.hessian(f)(h),
        "hvp": lambda: tf.hvp(f, (h,), (np.eye(4)[::-1].copy(),)),
    }[second_order]
    with pytest.warns(tf.DegenerateDerivativeWarning, match=EIGH_TIE):
        run()


def test_forward_mode_never_checks_tangents() -> None:
    """A tangent that splits a level is an ordinary direction."""
    tangent = np.diag([1.0, -1.0, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        _, dw = tf.jvp(lambda h: tf.linalg.eigvalsh(h), (DEGENERATE,), (tangent,))
    assert dw.shape == (4,)


@fuzz_settings(25)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(2, 6),
    weights=st.lists(st.floats(-2, 2), min_size=6, max_size=6),
)
def test_separated_spectra_never_warn(seed: int, n: int, weights: list[float]) -> None:
    """Any loss at a spectrum with distinct values (gaps far above eps) is silent."""
    levels = list(np.cumsum(np.random.default_rng(seed).uniform(0.1, 1.0, n)))
    h = rotated(levels, seed)
    c = np.asarray(weights[:n])
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        tf.grad(lambda x: tf.sum(tf.linalg.eigvalsh(x) * c))(h)
        tf.grad(lambda x: tf.sum(tf.linalg.svdvals(x) * c))(h + np.diag(levels))


@given(
    values=st.lists(st.floats(-10, 10), min_size=1, max_size=8),
    eps=st.sampled_from([1e-12, 1e-6, 1e-2]),
    scale=st.sampled_from([1e-150, 1.0, 1e150]),
)
def test_ties_are_runs_of_gaps_below_eps_times_the_largest_value(
    values: list[float], eps: float, scale: float
) -> None:
    """Ties are relative: a cluster is a run of sorted neighbours at most ``eps * max|v|``
    apart, the same at every scale."""
    w = np.sort(np.asarray(values))
    same, _ = clusters(w * scale, eps)
    bound = eps * np.max(np.abs(w))
    for i in range(w.size - 1):
        assert same[i, i + 1] == (w[i + 1] - w[i] <= bound)
    for i in range(w.size):
        for j in range(w.size):
            assert same[i, j] == all(same[k, k + 1] for k in range(min(i, j), max(i, j)))
    even = uneven_on_ties(w * scale, np.full_like(w, 0.7), eps)
    assert not even.any()  # equal weights on a level are fine
    ramp = uneven_on_ties(w * scale, np.arange(w.size, dtype=float), eps)
    assert (ramp == np.triu(same, 1)).all()  # unequal weights on every tie are flagged


# ---------------------------------------------------------------------- the tie table


def _table_cases() -> list[Any]:
    return [
        pytest.param(name, config, order, dt, id=f"{name}-{config}-{order}-{dt}")
        for (name, config), outcomes in spectral_ties.TABLE.items()
        for order in (1, 2)
        for dt in ("float64", "complex128")
        if outcomes[order - 1] is not None
    ]


@pytest.mark.parametrize(("name", "config", "order", "dt"), _table_cases())
def test_the_tie_table(name: str, config: str, order: int, dt: str) -> None:
    """Each row of the documented table: exact means equal to central finite differences
    of the same quantity computed with mpmath at 50 digits (no warning); warns means a
    DegenerateDerivativeWarning."""
    expected = spectral_ties.TABLE[(name, config)][order - 1]
    outcome = spectral_ties.evaluate(name, config, order, np.dtype(dt))
    if expected == spectral_ties.WARNS:
        assert outcome.warned, f"no warning; AD {outcome.ad!r}, reference {outcome.reference!r}"
        return
    assert not outcome.warned
    if expected == spectral_ties.EXACT:
        assert outcome.error < 1e-5, (outcome.ad, outcome.reference)


# ---------------------------------------------------------------------- scale invariance


def _invariant_losses() -> dict[str, tuple[Callable[[Any], Any], float, str]]:
    """Losses of every spectral family with their degree of homogeneity in the input
    (``L(cA) = c**d L(A)``) and the kind of input they take."""
    w = np.random.default_rng(3).standard_normal((4, 4))

    def vectors(x: Any) -> Any:
        u, _, vh = tf.linalg.svd(x, full_matrices=False)
        return tf.sum(tf.asarray(w) * tf.real(u * tf.conj(u))) + tf.sum(
            tf.asarray(w.T) * tf.real(vh * tf.conj(vh))
        )

    def eigenvectors(x: Any) -> Any:
        _, v = tf.linalg.eigh(x)
        return tf.sum(tf.asarray(w) * tf.real(v * tf.conj(v)))

    def eig_vectors(x: Any) -> Any:
        _, v = tf.linalg.eig(x)
        return tf.sum(tf.asarray(w) * tf.real(v * tf.conj(v)))

    def truncated(x: Any) -> Any:  # traced: a data-dependent rank, at most 3
        u, _, vh = tf.linalg.truncated_svd(x, max_rank=3, rtol=1e-3)
        left, right = tf.real(u * tf.conj(u)), tf.real(vh * tf.conj(vh))
        return tf.sum(left * left) + tf.sum(right * right)

    def polar(x: Any) -> Any:
        u, _, vh = tf.linalg.svd(x, full_matrices=False)
        return tf.sum(tf.real(tf.asarray(w) * (u @ vh)))

    return {
        "svd vectors": (vectors, 0.0, "general"),
        "svdvals": (lambda x: tf.sum(tf.linalg.svdvals(x) * np.arange(1.0, 5.0)), 1.0, "general"),
        "eigh vectors": (eigenvectors, 0.0, "hermitian"),
        "eigvalsh": (
            lambda x: tf.sum(tf.linalg.eigvalsh(x) * np.arange(1.0, 5.0)),
            1.0,
            "hermitian",
        ),
        "eig vectors": (eig_vectors, 0.0, "general"),
        "eigvals": (lambda x: tf.sum(tf.real(tf.linalg.eigvals(x) ** 2)), 2.0, "general"),
        "pinv": (lambda x: tf.sum(tf.asarray(w) * tf.linalg.pinv(x)), -1.0, "general"),
        "polar": (polar, 0.0, "general"),
        "nuclear norm": (lambda x: tf.linalg.matrix_norm(x, "nuc"), 1.0, "general"),
        "truncated svd": (truncated, 0.0, "general"),
    }


INVARIANT = _invariant_losses()


@fuzz_settings(40)
@given(
    name=st.sampled_from(sorted(INVARIANT)),
    exponent=st.integers(-498, 498),  # c = 2**exponent: 1e-150 ... 1e150, scaling exactly
    order=st.sampled_from([1, 2]),
    near=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_spectral_derivatives_are_invariant_under_rescaling(
    name: str, exponent: int, order: int, near: bool, seed: int
) -> None:
    """``c**(k-d) D^k L(cA) = D^k L(A)`` for a loss of degree ``d``, at every scale c from
    1e-150 to 1e150, first and second order (gradient and HVP), for a random matrix and
    for one with a pair of values 1e-9 apart (relative: resolved at every scale). Powers
    of two scale the input without rounding, so the derivatives agree to rounding."""
    f, degree, kind = INVARIANT[name]
    # The derivative scales as c**(d - k): within double precision's range.
    assume(abs((degree - order) * exponent) * math.log10(2) < 250)
    rng = np.random.default_rng(seed)
    levels = np.array([3.0, 2.0, 1.0, 0.4])
    if near:
        levels[1] = levels[0] * (1 - 1e-9)
    q1, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    q2 = q1 if kind == "hermitian" else np.linalg.qr(rng.standard_normal((4, 4)))[0]
    a = (q1 * levels) @ q2.T
    e = rng.standard_normal((4, 4))
    if kind == "hermitian":
        a, e = (a + a.T) / 2, (e + e.T) / 2
    c = 2.0**exponent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tf.DegenerateDerivativeWarning)  # near: precision
        if order == 1:
            base = np.asarray(tf.grad(f)(a))
            scaled = np.asarray(tf.grad(f)(c * a)) * c ** (1 - degree)
        else:
            base = np.asarray(tf.hvp(f, (a,), (e,)))
            scaled = np.asarray(tf.hvp(f, (c * a,), (e,))) * c ** (2 - degree)
    # LAPACK rescales matrices of extreme norms internally: rounding differs at 1e-15,
    # which second derivatives amplify by their conditioning.
    np.testing.assert_allclose(scaled, base, rtol=1e-8, atol=1e-10 * np.max(np.abs(base)))


@fuzz_settings(20)
@given(
    name=st.sampled_from(sorted(INVARIANT)),
    exponent=st.integers(-40, 40),  # c = 2**exponent: 1e-12 ... 1e12
    seed=st.integers(0, 2**16),
)
def test_single_precision_derivatives_are_invariant_under_rescaling(
    name: str, exponent: int, seed: int
) -> None:
    """The same in float32 over its range (gradients; the tie tolerance is single
    precision's)."""
    f, degree, kind = INVARIANT[name]
    rng = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    q2 = q1 if kind == "hermitian" else np.linalg.qr(rng.standard_normal((4, 4)))[0]
    a = (q1 * np.array([3.0, 2.0, 1.0, 0.4])) @ q2.T
    if kind == "hermitian":
        a = (a + a.T) / 2
    c = np.float32(2.0**exponent)
    base = np.asarray(tf.grad(f)(a.astype(np.float32)))
    scaled = np.asarray(tf.grad(f)((c * a).astype(np.float32))) * float(c) ** (1 - degree)
    np.testing.assert_allclose(scaled, base, rtol=1e-5, atol=1e-6 * np.max(np.abs(base)))


# ---------------------------------------------------------------------- warning policy


def _tied_batch() -> np.ndarray:
    return np.stack([rotated([0.0, 0.0, 1.0], seed=8), rotated([0.0, 0.0, 2.0], seed=9)])


def _uneven_on_both(h: Any) -> Any:
    return tf.sum(tf.linalg.eigvalsh(h)[..., 0])  # the lowest of two tied levels


@pytest.mark.parametrize("path", ["tf.grad", "jit(grad)", "tape", "vjp", "hessian"])
def test_one_warning_per_call_naming_the_operation_and_the_tied_values(path: str) -> None:
    """Two matrices of a batch, each with an uneven tie, and several rules finding them:
    one warning per call, naming the operation, the batch entry and the tied values."""
    h = _tied_batch()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        REVERSE_PATHS[path](_uneven_on_both, h)
    found = [c for c in caught if issubclass(c.category, tf.DegenerateDerivativeWarning)]
    assert len(found) == 1, [str(c.message) for c in found]
    # (hessian maps over the batch of its tangents: one more index in front)
    pattern = r"linalg\.eigh: eigenvalues\[(\d+, )?0\] 0 and 1 are tied \("
    assert re.search(pattern, str(found[0].message))


def test_eager_and_traced_passes_warn_alike() -> None:
    """The same mathematics warns the same message on the tape and in a trace."""
    h = _tied_batch()
    messages = []
    for path in ("tf.grad", "tape"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            REVERSE_PATHS[path](_uneven_on_both, h)
        messages.append([str(c.message) for c in caught])
    assert messages[0] == messages[1]
    assert len(messages[0]) == 1


@pytest.mark.parametrize("weight", [1e-10, 1e-6])
def test_warnings_fire_only_for_significant_contributions(weight: float) -> None:
    """A loss that splits a tied level by a cotangent difference below sqrt(eps) of its
    largest cotangent (rounding-level: the part left out cannot matter) is silent; one
    above it warns."""
    h = rotated([0.0, 0.0, 1.0, 2.0], seed=3)
    bump = np.zeros(4)
    bump[0] = weight

    def f(x: Any) -> Any:
        return tf.sum(tf.linalg.eigvalsh(x) * (1.0 + bump))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf.grad(f)(h)
    warned = any(issubclass(c.category, tf.DegenerateDerivativeWarning) for c in caught)
    assert warned == (weight > np.sqrt(np.finfo(float).eps))


# ---------------------------------------------------------------------- Hermitian inputs


@pytest.mark.parametrize("dt", ["float64", "complex128"])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_functions_of_hermitian_inputs_have_hermitian_gradients(dt: str, uplo: str) -> None:
    """eigh, eigvalsh, cholesky and pinv(hermitian=True) read one triangle for their
    values but differentiate the input as Hermitian: the gradient is the Hermitian part
    (torch's and JAX's convention), the same for either triangle, and a JVP along a
    tangent equals the JVP along its Hermitian part."""
    rng = np.random.default_rng(4)
    z = rng.standard_normal((4, 4)) + (
        1j * rng.standard_normal((4, 4)) if dt == "complex128" else 0
    )
    h = (z @ np.conj(z.T) + 4 * np.eye(4)).astype(dt)
    c = np.arange(1.0, 5.0)
    _, v = np.linalg.eigh(h)
    losses = {
        "eigvalsh": lambda x: tf.sum(tf.linalg.eigvalsh(x, uplo) * c),
        "eigh": lambda x: tf.sum(tf.linalg.eigh(x, uplo).eigenvalues * c),
        "cholesky": lambda x: tf.sum(tf.real(tf.linalg.cholesky(x, upper=uplo == "U"))),
        "pinv": lambda x: tf.sum(tf.real(tf.linalg.pinv(x, hermitian=True))),
    }
    expected = (v * c) @ np.conj(v.T)  # V diag(c) V^H: the Hermitian gradient
    np.testing.assert_allclose(np.asarray(tf.grad(losses["eigvalsh"])(h)), expected, atol=1e-12)
    t = rng.standard_normal((4, 4)).astype(dt)  # not Hermitian
    t_h = (t + np.conj(t.T)) / 2
    for name, f in losses.items():
        g = np.asarray(tf.grad(f)(h))
        np.testing.assert_allclose(g, np.conj(g.T), atol=1e-12, err_msg=name)
        _, along = tf.jvp(f, (h,), (t,))
        _, along_h = tf.jvp(f, (h,), (t_h,))
        np.testing.assert_allclose(float(along), float(along_h), rtol=1e-10, err_msg=name)
        np.testing.assert_allclose(float(along), float(np.real(np.sum(np.conj(g) * t))), rtol=1e-10)


def test_eigh_values_read_the_named_triangle() -> None:
    a = np.random.default_rng(5).standard_normal((4, 4))
    for uplo in ("L", "U"):
        np.testing.assert_allclose(
            np.asarray(tf.linalg.eigvalsh(a, uplo)), np.linalg.eigvalsh(a, UPLO=uplo), atol=1e-12
        )
