"""Matrix product states (MPS) and operators (MPO): the helpers of the tensor-network
tutorial (``docs/tensor-networks.md``), ``make demo`` and the benchmark report.

``from tenferro.models import mps``. Conventions (open boundaries): an MPS core has shape
``(left bond, physical, right bond)`` with bonds of size 1 at both ends; an MPO core
``W[a, b, s, t]`` has shape ``(left bond, right bond, bra index s, ket index t)``, so that
``<psi|H|psi>`` contracts ``conj(A)`` on ``s`` and ``A`` on ``t``. Every function taking
cores works on any tensor kind (numpy arrays, ``tf.Tensor``, ``tf.EagerTensor``, traced
tensors) through tenferro's functional surface; the loss functions are real scalars,
ready for ``tf.grad``.

* data: :func:`bond_dimensions`, :func:`core_shapes`, :func:`random_mps`,
  :func:`product_state_mps`; flat parameter vectors: :func:`pack`, :func:`unpack`;
* the transverse-field Ising chain: :func:`ising_mpo`, :func:`ising_sparse`,
  :func:`exact_ground_energy`;
* contractions: :func:`overlap`, :func:`inner`, :func:`expectation`, :func:`energy`,
  :func:`energy_of_vector`;
* compression by truncated SVDs: :func:`left_canonical`, :func:`truncation_step`,
  :func:`compress`, :func:`kept_weight`. Choosing ``rtol`` when differentiating through
  the truncation: see :func:`compress`.

The module is built on tenferro's public API only (it sits above it, like user code).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp  # type: ignore[import-untyped]

import tenferro as tf
from tenferro.core.names import public_dir as _public_dir

__all__ = [
    "PAULI_X",
    "PAULI_Z",
    "bond_dimensions",
    "compress",
    "core_shapes",
    "energy",
    "energy_of_vector",
    "exact_ground_energy",
    "expectation",
    "inner",
    "ising_mpo",
    "ising_sparse",
    "kept_weight",
    "left_canonical",
    "overlap",
    "pack",
    "product_state_mps",
    "random_mps",
    "truncation_step",
    "unpack",
]

Array = np.ndarray[Any, Any]

PAULI_X = np.array([[0.0, 1.0], [1.0, 0.0]])
PAULI_Z = np.array([[1.0, 0.0], [0.0, -1.0]])


# ---------------------------------------------------------------------- shapes and data


def bond_dimensions(length: int, chi: int, d: int = 2) -> list[int]:
    """The ``length + 1`` bond sizes of an open MPS: ``min(chi, d**i, d**(length - i))``."""
    return [min(chi, d**i, d ** (length - i)) for i in range(length + 1)]


def core_shapes(length: int, chi: int, d: int = 2) -> list[tuple[int, int, int]]:
    bonds = bond_dimensions(length, chi, d)
    return [(bonds[i], d, bonds[i + 1]) for i in range(length)]


def random_mps(
    length: int,
    chi: int,
    d: int = 2,
    *,
    dtype: Any = np.float64,
    seed: int = 0,
    decay: float | None = None,
) -> list[Array]:
    """Random cores of norm near 1. With ``decay``, the right bond of each core is
    weighted by ``exp(-k / decay)`` (k = 0, 1, ...): a spectrum that truncation can cut."""
    rng = np.random.default_rng(seed)
    cores = []
    for left, phys, right in core_shapes(length, chi, d):
        shape = (left, phys, right)
        x = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        x = x / math.sqrt(left * phys)
        if decay is not None:
            x = x * np.exp(-np.arange(right) / decay)
        cores.append(x.astype(dtype))
    return cores


def product_state_mps(
    length: int, chi: int, *, dtype: Any = np.float64, noise: float = 1e-2, seed: int = 0
) -> list[Array]:
    """|+>^L (the ground state of the field term) embedded in bond dimension ``chi``, plus
    a little noise so that every bond direction is used from the start."""
    rng = np.random.default_rng(seed)
    cores = []
    for left, phys, right in core_shapes(length, chi):
        x = noise * rng.standard_normal((left, phys, right))
        if np.dtype(dtype).kind == "c":
            x = x + 1j * noise * rng.standard_normal((left, phys, right))
        x[0, :, 0] += 1.0 / math.sqrt(2.0)
        cores.append(x.astype(dtype))
    return cores


# ---------------------------------------------------------------------- flat parameters


def pack(cores: Sequence[Array]) -> Array:
    """All cores as one real vector (complex cores: real parts, then imaginary parts)."""
    flat = np.concatenate([np.ravel(c) for c in cores])
    if np.iscomplexobj(flat):
        return np.concatenate([flat.real, flat.imag])
    return flat


def unpack(vector: Any, shapes: Sequence[tuple[int, ...]], complex_: bool = False) -> list[Any]:
    """The inverse of :func:`pack`; works on numpy arrays and on any tenferro tensor, so a
    loss of the flat vector differentiates through the slices and reshapes."""
    size = sum(math.prod(s) for s in shapes)
    if complex_:
        vector = vector[:size] + 1j * vector[size:]
    cores, offset = [], 0
    for shape in shapes:
        count = math.prod(shape)
        cores.append(tf.reshape(vector[offset : offset + count], shape))
        offset += count
    return cores


# ---------------------------------------------------------------------- the Ising chain


def ising_mpo(length: int, field: float = 1.0, coupling: float = 1.0) -> list[Array]:
    """H = -J sum Z_i Z_{i+1} - g sum X_i as an MPO of bond dimension 3."""
    eye = np.eye(2)
    w = np.zeros((3, 3, 2, 2))
    w[0, 0] = eye
    w[1, 0] = PAULI_Z
    w[2, 0] = -field * PAULI_X
    w[2, 1] = -coupling * PAULI_Z
    w[2, 2] = eye
    first, last = w[2:3], w[:, 0:1]
    return [first] + [w] * (length - 2) + [last]


def ising_sparse(length: int, field: float = 1.0, coupling: float = 1.0) -> sp.csr_matrix:
    """The same Hamiltonian as a sparse 2^L x 2^L matrix (site 0 is the leading factor)."""

    def site_operator(op: Array, site: int) -> sp.csr_matrix:
        left, right = sp.identity(2**site), sp.identity(2 ** (length - site - 1))
        return sp.kron(sp.kron(left, sp.csr_matrix(op)), right, format="csr")

    h = sp.csr_matrix((2**length, 2**length))
    for i in range(length):
        h = h - field * site_operator(PAULI_X, i)
        if i + 1 < length:
            h = h - coupling * (site_operator(PAULI_Z, i) @ site_operator(PAULI_Z, i + 1))
    return h.tocsr()


def exact_ground_energy(length: int, field: float = 1.0, coupling: float = 1.0) -> float:
    # deferred: scipy.sparse.linalg takes long to import and only this check needs it
    from scipy.sparse.linalg import eigsh  # type: ignore[import-untyped]

    value = eigsh(ising_sparse(length, field, coupling), k=1, which="SA")[0][0]
    return float(value)


# ---------------------------------------------------------------------- contractions


def overlap(cores: Sequence[Any]) -> Any:
    """<psi|psi> by left environments E[a, c] (ket bond a, bra bond c)."""
    env = tf.einsum("asb,asd->bd", cores[0], tf.conj(cores[0]))
    for core in cores[1:]:
        env = tf.einsum("ac,asb,csd->bd", env, core, tf.conj(core))
    return tf.real(tf.sum(env))


def expectation(cores: Sequence[Any], mpo: Sequence[Any]) -> Any:
    """Re<psi|H|psi> by left environments E[a, w, c] (ket bond, MPO bond, bra bond)."""
    env = tf.ones((1, 1, 1))
    for core, w in zip(cores, mpo, strict=True):
        env = tf.einsum("awc,atb,wvst,csd->bvd", env, core, w, tf.conj(core))
    return tf.real(tf.sum(env))


def energy(cores: Sequence[Any], mpo: Sequence[Any]) -> Any:
    """The Rayleigh quotient Re<psi|H|psi> / <psi|psi>: invariant under the scale and
    the gauge of the cores, real for complex cores."""
    return expectation(cores, mpo) / overlap(cores)


def energy_of_vector(
    shapes: Sequence[tuple[int, ...]], mpo: Sequence[Any], complex_: bool = False
) -> Callable[[Any], Any]:
    """``vector -> energy(unpack(vector))``, the function an optimizer sees."""

    def f(vector: Any) -> Any:
        return energy(unpack(vector, shapes, complex_), mpo)

    return f


# ---------------------------------------------------------------------- compression


def left_canonical(cores: Sequence[Any]) -> list[Any]:
    """A left-to-right QR sweep: every core but the last becomes an isometry, so the
    singular values of a following right-to-left sweep are the Schmidt values."""
    out = []
    carry = cores[0]
    for core in cores[1:]:
        left, d, right = carry.shape
        q, r = tf.linalg.qr(tf.reshape(carry, (left * d, right)))
        out.append(tf.reshape(q, (left, d, q.shape[-1])))
        carry = tf.einsum("ab,bsc->asc", r, core)
    out.append(carry)
    return out


def truncation_step(carry: Any, previous: Any, rtol: float) -> tuple[Any, Any, Any]:
    """One right-to-left step: split ``carry`` (a, s, b) by a truncated SVD keeping the
    singular values above ``rtol * s_max``; the right factor becomes the new core, the
    rest is absorbed into the core on the left. Returns (new core, new carry, s)."""
    left, d, right = carry.shape
    u, s, vh = tf.linalg.truncated_svd(tf.reshape(carry, (left, d * right)), rtol=rtol)
    rank = s.shape[-1]
    new_core = tf.reshape(vh, (rank, d, right))
    new_carry = tf.einsum("asb,bk,k->ask", previous, u, s)
    return new_core, new_carry, s


def compress(
    cores: Sequence[Any], rtol: float, step: Callable[..., Any] = truncation_step
) -> tuple[list[Any], list[Any]]:
    """Canonicalize, then sweep right to left truncating every bond: (cores, spectra).
    The ranks are read from the data; ``step`` may be wrapped (e.g. in ``tf.checkpoint``).

    Choosing ``rtol`` when you differentiate through the truncation: the kept ranks are
    piecewise constant in the data, and the derivative is that of the kept part at the
    ranks this call chose (exact, to every order, while they do not change). Put ``rtol``
    in a gap of the spectra (where ``s[k] / s[0]`` drops by an order of magnitude or
    more): then small steps of an optimizer keep the ranks, and the loss is smooth along
    them. A singular value close to ``rtol * s[0]`` flips the rank under tiny changes,
    so the loss jumps there and finite differences disagree with the gradient. Print
    the spectra (``compress`` returns them) for a few steps to see the gap; cap the cost
    with ``tf.linalg.truncated_svd(..., max_rank=...)`` rather than a large ``rtol``;
    and confirm with ``tf.testing.check_grads`` at your working point."""
    canonical = left_canonical(cores)
    carry = canonical[-1]
    new_cores: list[Any] = []
    spectra: list[Any] = []
    for previous in reversed(canonical[:-1]):
        core, carry, s = step(carry, previous, rtol)
        new_cores.append(core)
        spectra.append(s)
    new_cores.append(carry)
    return new_cores[::-1], spectra[::-1]


def kept_weight(spectra: Sequence[Any]) -> Any:
    """Sum over bonds of the kept singular values: the loss of the compression check."""
    total = tf.sum(spectra[0])
    for s in spectra[1:]:
        total = total + tf.sum(s)
    return total


def inner(bra: Sequence[Any], ket: Sequence[Any]) -> Any:
    """Re<bra|ket> of two MPS with the same physical dimensions (any bond dimensions)."""
    env = tf.einsum("asb,asd->bd", ket[0], tf.conj(bra[0]))
    for a, b in zip(ket[1:], bra[1:], strict=True):
        env = tf.einsum("ac,asb,csd->bd", env, a, tf.conj(b))
    return tf.real(tf.sum(env))


__dir__ = _public_dir(__all__)
