"""The tie table: spectral quantities at tied spectra, their derivatives by tenferro and by
finite differences in extended precision (mpmath), and what tenferro promises for each.

A *configuration* is a matrix with a tied level: ``exact`` (a diagonal matrix: the tie is
exact in floating point), ``rotated`` (the same spectrum in a random basis: the tie is split
by rounding), ``near`` (split by 1e-10 of the scale, in a random basis) or ``zero`` (two
zero singular values / eigenvalues, in a random basis). A *quantity* is a real scalar
function of the matrix, written once for tenferro and once for mpmath. Each row of
:data:`TABLE` says, per order (1: the gradient, 2: the Hessian-vector product), whether
tenferro's derivative is exact (it equals the extended-precision finite difference) or
warns (:class:`tenferro.DegenerateDerivativeWarning`).

``python spectral_ties.py`` prints the table as the user documentation quotes it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mpmath as mp
import numpy as np

import tenferro as tf

N = 4
LEVELS = {  # the spectrum of each configuration (singular values: the magnitudes)
    "exact": [2.0, 2.0, 1.0, 0.5],
    "rotated": [2.0, 2.0, 1.0, 0.5],
    "near": [2.0, 2.0 + 2e-10, 1.0, 0.5],
    "zero": [2.0, 1.0, 0.0, 0.0],
}
TIED = {"exact": (0, 1), "rotated": (0, 1), "near": (0, 1), "zero": (2, 3)}
"""Positions (in descending order) of the tied pair of each configuration."""


def _orthonormal(seed: int, complex_: bool) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((N, N))
    if complex_:
        z = z + 1j * rng.standard_normal((N, N))
    q, _ = np.linalg.qr(z)
    return q


def matrix(config: str, kind: str, dtype: Any) -> np.ndarray[Any, Any]:
    """The configuration's matrix: Hermitian (``kind="hermitian"``, eigenvalues the
    levels) or general (``"general"``, singular values the levels)."""
    complex_ = np.dtype(dtype).kind == "c"
    levels = np.asarray(LEVELS[config])
    if config == "exact":
        return np.diag(levels).astype(dtype)
    left = _orthonormal(11, complex_)
    right = left if kind == "hermitian" else _orthonormal(12, complex_)
    a = (left * levels) @ np.conj(right.T)
    if kind == "hermitian":
        a = (a + np.conj(a.T)) / 2
    return a.astype(dtype)


def direction(kind: str, dtype: Any, seed: int = 5) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((N, N))
    if np.dtype(dtype).kind == "c":
        e = e + 1j * rng.standard_normal((N, N))
    if kind == "hermitian":
        e = (e + np.conj(e.T)) / 2
    return e.astype(dtype)


def weights(dtype: Any) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(7)
    w = rng.standard_normal((N, N))
    if np.dtype(dtype).kind == "c":
        w = w + 1j * rng.standard_normal((N, N))
    return w.astype(dtype)


# ---------------------------------------------------------------------- mpmath side


def _mp(a: np.ndarray[Any, Any]) -> Any:
    return mp.matrix([[mp.mpc(complex(x)) for x in row] for row in a])


def _mp_eigh(a: Any) -> tuple[list[Any], Any]:
    """Ascending eigenvalues and eigenvectors of a Hermitian mpmath matrix."""
    herm = (a + a.H) / 2
    if all(mp.im(x) == 0 for x in herm):
        w, v = mp.eigsy(mp.matrix([[mp.re(x) for x in herm.tolist()[i]] for i in range(N)]))
    else:
        w, v = mp.eighe(herm)
    order = sorted(range(N), key=lambda i: w[i])
    return [w[i] for i in order], mp.matrix([[v[r, i] for i in order] for r in range(N)])


def _mp_svd(a: Any) -> tuple[Any, list[Any], Any]:
    """Descending singular values: ``(U, s, Vh)``."""
    u, s, vh = mp.svd_c(a)
    order = sorted(range(N), key=lambda i: -s[i])
    return (
        mp.matrix([[u[r, i] for i in order] for r in range(N)]),
        [s[i] for i in order],
        mp.matrix([[vh[i, c] for c in range(N)] for i in order]),
    )


def _mp_inner(w: Any, p: Any) -> Any:
    """``Re sum(conj(W) * P)``."""
    return mp.re(sum(mp.conj(w[i, j]) * p[i, j] for i in range(N) for j in range(N)))


# ---------------------------------------------------------------------- quantities


@dataclass(frozen=True)
class Quantity:
    name: str
    kind: str  # "hermitian" or "general": the matrices it is evaluated at
    tf_fn: Callable[[Any, np.ndarray[Any, Any], str], Any]
    mp_fn: Callable[[Any, np.ndarray[Any, Any], str], Any]


def _level(config: str) -> list[int]:
    """The complete tied level (ascending positions for eigh, descending for svd are
    mapped by the callers)."""
    return list(TIED[config])


def _tf_eigh_projector(a: Any, w: np.ndarray[Any, Any], config: str) -> Any:
    _, v = tf.linalg.eigh(a)
    cols = [N - 1 - i for i in _level(config)]  # the levels are listed descending
    top = v[:, min(cols) : max(cols) + 1]
    p = top @ tf.conj(tf.swapaxes(top, 0, 1))
    return tf.sum(tf.real(tf.conj(tf.asarray(w)) * p))


def _mp_eigh_projector(a: Any, w: np.ndarray[Any, Any], config: str) -> Any:
    _, v = _mp_eigh(a)
    cols = [N - 1 - i for i in _level(config)]
    p = mp.matrix(N, N)
    for c in cols:
        col = v[:, c]
        p += col * col.H
    return _mp_inner(_mp(w), p)


def _tf_eigh_trace_exp(a: Any, w: Any, config: str) -> Any:
    return tf.sum(tf.exp(-tf.linalg.eigvalsh(a)))


def _mp_eigh_trace_exp(a: Any, w: Any, config: str) -> Any:
    return sum(mp.exp(-x) for x in _mp_eigh(a)[0])


def _tf_eigh_sum(a: Any, w: Any, config: str) -> Any:
    return tf.sum(tf.linalg.eigvalsh(a) * np.arange(1.0, N + 1))


def _mp_eigh_sum(a: Any, w: Any, config: str) -> Any:
    return sum(x * (i + 1) for i, x in enumerate(_mp_eigh(a)[0]))


def _tf_eigh_vector(a: Any, w: Any, config: str) -> Any:
    _, v = tf.linalg.eigh(a)
    col = N - 1 - _level(config)[0]
    one = v[:, col : col + 1]
    p = one @ tf.conj(tf.swapaxes(one, 0, 1))
    return tf.sum(tf.real(tf.conj(tf.asarray(w)) * p))


def _mp_eigh_vector(a: Any, w: Any, config: str) -> Any:
    _, v = _mp_eigh(a)
    col = v[:, N - 1 - _level(config)[0]]
    return _mp_inner(_mp(w), col * col.H)


def _tf_svd_projector(a: Any, w: Any, config: str) -> Any:
    u, _, _ = tf.linalg.svd(a, full_matrices=False)
    lo, hi = _level(config)
    top = u[:, lo : hi + 1]
    p = top @ tf.conj(tf.swapaxes(top, 0, 1))
    return tf.sum(tf.real(tf.conj(tf.asarray(w)) * p))


def _mp_svd_projector(a: Any, w: Any, config: str) -> Any:
    u, _, _ = _mp_svd(a)
    p = mp.matrix(N, N)
    for c in _level(config):
        col = u[:, c]
        p += col * col.H
    return _mp_inner(_mp(w), p)


def _tf_polar(a: Any, w: Any, config: str) -> Any:
    u, _, vh = tf.linalg.svd(a, full_matrices=False)
    return tf.sum(tf.real(tf.conj(tf.asarray(w)) * (u @ vh)))


def _mp_polar(a: Any, w: Any, config: str) -> Any:
    u, _, vh = _mp_svd(a)
    return _mp_inner(_mp(w), u * vh)


def _tf_nuclear(a: Any, w: Any, config: str) -> Any:
    return tf.linalg.matrix_norm(a, "nuc")


def _mp_nuclear(a: Any, w: Any, config: str) -> Any:
    return sum(_mp_svd(a)[1])


def _tf_spectral_norm(a: Any, w: Any, config: str) -> Any:
    s = tf.linalg.svdvals(a)
    lo, _ = _level(config)
    return s[lo]


def _mp_spectral_norm(a: Any, w: Any, config: str) -> Any:
    return _mp_svd(a)[1][_level(config)[0]]


def _tf_pinv(a: Any, w: Any, config: str) -> Any:
    return tf.sum(tf.real(tf.conj(tf.asarray(w)) * tf.linalg.pinv(a)))


def _mp_pinv(a: Any, w: Any, config: str) -> Any:
    u, s, vh = _mp_svd(a)
    top = max(s)
    cut = 2.220446049250313e-16 * N * top
    sinv = [1 / x if x > cut else mp.mpf(0) for x in s]
    p = mp.matrix(N, N)
    for i in range(N):
        p += (vh[i, :].H * u[:, i].H) * sinv[i]
    return _mp_inner(_mp(w), p)


def _tf_eig_trace_sq(a: Any, w: Any, config: str) -> Any:
    return tf.sum(tf.real(tf.linalg.eigvals(a) ** 2))


def _mp_eig_trace_sq(a: Any, w: Any, config: str) -> Any:
    return mp.re(sum(x**2 for x in mp.eig(a)[0]))


QUANTITIES = {
    q.name: q
    for q in (
        Quantity(
            "eigh: projector onto the tied level",
            "hermitian",
            _tf_eigh_projector,
            _mp_eigh_projector,
        ),
        Quantity("eigh: sum of eigenvalues (weighted)", "hermitian", _tf_eigh_sum, _mp_eigh_sum),
        Quantity(
            "eigh: Tr exp(-H) through eigvalsh", "hermitian", _tf_eigh_trace_exp, _mp_eigh_trace_exp
        ),
        Quantity(
            "eigh: projector onto one tied eigenvector",
            "hermitian",
            _tf_eigh_vector,
            _mp_eigh_vector,
        ),
        Quantity(
            "svd: projector onto the tied level", "general", _tf_svd_projector, _mp_svd_projector
        ),
        Quantity("svd: polar factor U Vh", "general", _tf_polar, _mp_polar),
        Quantity("svd: nuclear norm", "general", _tf_nuclear, _mp_nuclear),
        Quantity("svd: one tied singular value", "general", _tf_spectral_norm, _mp_spectral_norm),
        Quantity("pinv", "general", _tf_pinv, _mp_pinv),
        Quantity("eig: Re sum(w^2)", "general", _tf_eig_trace_sq, _mp_eig_trace_sq),
    )
}


# ---------------------------------------------------------------------- the table

EXACT, WARNS, FORMULA = "exact", "warns", "formula"
"""Outcomes: the derivative equals the extended-precision finite difference (relative
error below 1e-5; ``near`` rows resolve a gap of 1e-10 and keep about 1e-6), or a
:class:`~tenferro.DegenerateDerivativeWarning` is raised, or (``pinv`` beyond first order
where values are cut off) the documented formula's value, which is not the truncation's."""

E, W = EXACT, WARNS
_ROWS: dict[str, dict[str, tuple[str, str]]] = {
    "eigh: projector onto the tied level": {
        "exact": (E, E),
        "rotated": (E, E),
        "near": (E, W),
        "zero": (E, E),
    },
    "eigh: sum of eigenvalues (weighted)": {
        "exact": (W, W),
        "rotated": (W, W),
        "near": (E, E),
        "zero": (W, W),
    },
    "eigh: Tr exp(-H) through eigvalsh": {
        "exact": (E, W),
        "rotated": (E, W),
        "near": (E, E),
        "zero": (E, W),
    },
    "eigh: projector onto one tied eigenvector": {
        "exact": (W, W),
        "rotated": (W, W),
        "near": (E, W),
        "zero": (W, W),
    },
    "svd: projector onto the tied level": {
        "exact": (E, E),
        "rotated": (E, E),
        "near": (E, W),
        "zero": (E, W),
    },
    "svd: polar factor U Vh": {
        "exact": (E, E),
        "rotated": (E, E),
        "near": (E, W),
        "zero": (W, W),
    },
    "svd: nuclear norm": {"exact": (E, E), "rotated": (E, E), "near": (E, E), "zero": (W, W)},
    "svd: one tied singular value": {
        "exact": (W, W),
        "rotated": (W, W),
        "near": (E, E),
        "zero": (W, W),
    },
    "pinv": {"exact": (E, E), "rotated": (E, E), "near": (E, E), "zero": (E, FORMULA)},
    "eig: Re sum(w^2)": {"rotated": (E, E)},
}
TABLE: dict[tuple[str, str], tuple[str, str]] = {
    (name, config): outcome for name, row in _ROWS.items() for config, outcome in row.items()
}


@dataclass
class Outcome:
    warned: bool
    ad: float
    reference: float

    @property
    def error(self) -> float:
        return abs(self.ad - self.reference) / max(abs(self.reference), 1e-300)


def derivative(
    name: str, config: str, order: int, dtype: Any = np.float64, backend: str | None = None
) -> tuple[np.ndarray[Any, Any], bool]:
    """tenferro's gradient (``order=1``) or Hessian-vector product along the
    configuration's direction (``order=2``) at its matrix, and whether it warned;
    ``backend`` (``"numpy"``, ``"xla"``) runs it under ``tf.jit`` there."""
    q = QUANTITIES[name]
    a = matrix(config, q.kind, dtype)
    e = direction(q.kind, dtype)
    w = weights(dtype)

    def f(x: Any) -> Any:
        return q.tf_fn(x, w, config)

    def taken(x: Any, d: Any) -> Any:
        return tf.grad(f)(x) if order == 1 else tf.hvp(f, (x,), (d,))

    run = taken if backend is None else tf.jit(taken, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", tf.DegenerateDerivativeWarning)
        g = np.asarray(run(a, e))
    warned = any(issubclass(c.category, tf.DegenerateDerivativeWarning) for c in caught)
    return g, warned


def evaluate(
    name: str, config: str, order: int, dtype: Any = np.float64, backend: str | None = None
) -> Outcome:
    """tenferro's derivative (directional: ``<grad, E>`` or ``<E, H E>``; see
    :func:`derivative`) and the extended-precision finite difference at the
    configuration's matrix."""
    g, warned = derivative(name, config, order, dtype, backend)
    e = direction(QUANTITIES[name].kind, dtype)
    ad = float(np.real(np.sum(np.conj(g) * e)))
    return Outcome(warned, ad, reference(name, config, order, dtype))


def reference(name: str, config: str, order: int, dtype: Any = np.float64) -> float:
    """Central finite differences of the mpmath quantity at 50 digits."""
    q = QUANTITIES[name]
    a, e, w = matrix(config, q.kind, dtype), direction(q.kind, dtype), weights(dtype)
    with mp.workdps(50):
        am, em = _mp(a), _mp(e)
        h = mp.mpf("1e-20")

        def at(t: Any) -> Any:
            return q.mp_fn(am + em * t, w, config)

        if order == 1:
            return float((at(h) - at(-h)) / (2 * h))
        return float((at(h) - 2 * at(0) + at(-h)) / h**2)


if __name__ == "__main__":  # the table the documentation quotes
    configs = ("exact", "rotated", "near", "zero")
    print("| quantity | " + " | ".join(configs) + " |")
    print("|---|" + "---|" * len(configs))
    for name, row in _ROWS.items():
        cells = [" / ".join(row[c]) if c in row else "" for c in configs]
        print(f"| {name} | " + " | ".join(cells) + " |")
