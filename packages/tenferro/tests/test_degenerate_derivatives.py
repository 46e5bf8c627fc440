"""Tied eigen/singular values: losses that treat a degenerate level as a whole keep
their exact derivative silently; losses that weight tied values differently (no
derivative there) warn in every reverse-mode path instead of returning a wrong
number silently. Forward-mode tangents are never checked."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro.linalg.degeneracy import tied, uneven_on_ties


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


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("name", sorted(_whole_level_losses(np.eye(4))))
def test_whole_level_losses_at_ties_are_silent_and_exact(name: str, complex_: bool) -> None:
    """These are smooth functions of the matrix: no warning (the suite turns warnings
    into errors), and the first derivative matches finite differences in both modes.
    (Their second derivative at the tie is not exact: see the next test.)"""
    h = rotated([1.0, 1.0, 2.0, 3.5], seed=6, complex_=complex_)  # s = |w|: no zero s
    f = _whole_level_losses(observable(4, seed=2))[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tf.DegenerateDerivativeWarning)
        for path in ("tf.grad", "tape", "jit(grad)"):
            REVERSE_PATHS[path](f, h)
        if not complex_:
            tf.testing.check_grads(f, [h], order=1, modes=("fwd", "rev"))


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
)
def test_ties_are_gaps_below_the_regularisation_or_rounding(
    values: list[float], eps: float
) -> None:
    w = np.sort(np.asarray(values))
    found = tied(w, eps)
    scale = np.max(np.abs(w))
    for i, is_tied in enumerate(found):
        gap = w[i + 1] - w[i]
        assert is_tied == (gap <= max(10 * eps, 64 * np.finfo(float).eps * scale))
    even = uneven_on_ties(w, np.full_like(w, 0.7), eps)
    assert not even.any()  # equal weights on a level are fine
    ramp = uneven_on_ties(w, np.arange(w.size, dtype=float), eps)
    assert (ramp == found).all()  # unequal weights on every tie are flagged
