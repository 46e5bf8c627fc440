"""What the linalg families' lowering rules share: their numpy kernels' steps written
with JAX (``lo`` is the :class:`tenferro.ops.lowering.Lowering` a rule receives), so
each family's ``lower`` computes exactly what its ``impl`` does, in XLA.

XLA's linear algebra does not raise on bad data: where a numpy kernel raises
:class:`~tenferro.errors.LinAlgError` (a singular matrix, one that is not positive
definite, non-finite input), the lowered program gives NaN or Inf, as JAX does.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "adjoint",
    "canonicalize",
    "clusters",
    "diagonal_matrix",
    "inverse_where",
    "kept",
    "lu_permutation",
    "matmul",
    "project",
    "solve_transposed_lu",
]


def matmul(lo: Any, a: Any, b: Any) -> Any:
    """``a @ b`` of stacks, in full precision on every device."""
    return lo.jnp.matmul(a, b, precision=lo.lax.Precision.HIGHEST)


def adjoint(lo: Any, x: Any) -> Any:
    """The conjugate transpose of the last two axes."""
    swapped = lo.jnp.swapaxes(x, -1, -2)
    return lo.lax.conj(swapped) if lo.jnp.iscomplexobj(x) else swapped


def canonicalize(lo: Any, vectors: Any, partner_rows: Any | None) -> tuple[Any, Any, Any]:
    """The canonical gauge of ``tenferro.linalg.gauges.canonicalize``: each column's
    largest-magnitude entry (the first, on ties) made real positive, the matching rows of
    ``partner_rows`` multiplied by the inverse phase; returns them and the pivot mask."""
    jnp = lo.jnp
    if vectors.shape[-2] == 0:
        return vectors, partner_rows, jnp.zeros(vectors.shape, bool)
    pivot = jnp.argmax(jnp.abs(vectors), axis=-2)  # the first of equal magnitudes
    rows = lo.lax.broadcasted_iota("int32", vectors.shape, vectors.ndim - 2)
    mask = rows == pivot[..., None, :]
    value = jnp.sum(jnp.where(mask, vectors, 0), axis=-2)
    magnitude = jnp.abs(value)
    phase = jnp.where(magnitude == 0, 1, value / jnp.where(magnitude == 0, 1, magnitude))
    phase = phase.astype(vectors.dtype)
    vectors = vectors * jnp.conj(phase)[..., None, :]
    if partner_rows is not None:
        k = min(partner_rows.shape[-2], phase.shape[-1])
        scaled = partner_rows[..., :k, :] * phase[..., :k, None]
        partner_rows = jnp.concatenate([scaled, partner_rows[..., k:, :]], axis=-2)
    return vectors, partner_rows, mask


def kept(lo: Any, s: Any, rtol: float, signed: bool) -> Any:
    """Where ``|s| > rtol * max|s|`` (``[..., K]``, K > 0): the values kept."""
    magnitude = lo.jnp.abs(s) if signed else s
    return magnitude > lo.jnp.max(magnitude, axis=-1, keepdims=True) * rtol


def inverse_where(lo: Any, s: Any, keep: Any, dtype: Any) -> Any:
    """``1/s`` where ``keep``, else 0, in ``dtype``."""
    jnp = lo.jnp
    return jnp.where(keep, 1 / jnp.where(keep, s, 1), 0).astype(dtype)


def lu_permutation(lo: Any, pivots: Any, m: int) -> Any:
    """Row order ``perm`` with ``P^T B = B[perm]`` for LAPACK's sequential interchanges
    (0-based ``pivots``)."""
    return lo.linalg.lu_pivots_to_permutation(pivots, m)


def solve_transposed_lu(lo: Any, factors: Any, pivots: Any, b: Any, adjoint: bool) -> Any:
    """``A X = B`` (``A^H X = B`` when ``adjoint``) from the factors
    ``tenferro.linalg.lapack.factor_and_solve`` stores: ``factors`` is the packed LU of
    ``A^T`` (``A^T = P L U``), transposed back; ``pivots`` its 0-based interchanges."""
    jnp, triangular = lo.jnp, lo.linalg.triangular_solve
    packed = jnp.swapaxes(factors, -1, -2)  # L (unit, strictly below) and U of A^T
    perm = lu_permutation(lo, pivots, packed.shape[-1])
    if not adjoint:
        # A = U^T L^T P^T: solve U^T W = B, L^T Y = W, then X = P Y (X[perm] = Y)
        w = triangular(packed, b, left_side=True, lower=False, transpose_a=True)
        y = triangular(packed, w, left_side=True, lower=True, transpose_a=True, unit_diagonal=True)
        inverse = jnp.argsort(perm, axis=-1)
        return jnp.take_along_axis(y, inverse[..., :, None], axis=-2, mode="clip")
    # A^H = P conj(L) conj(U): solve conj(L) Z = P^T B = B[perm], then conj(U) X = Z
    rows = jnp.take_along_axis(b, perm[..., :, None], axis=-2, mode="clip")
    z = triangular(packed, rows, left_side=True, lower=True, conjugate_a=True, unit_diagonal=True)
    return triangular(packed, z, left_side=True, lower=False, conjugate_a=True)


def project(lo: Any, x: Any, part: str) -> Any:
    """``x`` (``"full"``), its Hermitian part ``(x + x^H)/2`` or its anti-Hermitian part
    ``(x - x^H)/2`` over the last two axes (``tenferro.linalg.gaps._project``)."""
    if part == "full":
        return x
    xh = adjoint(lo, x)
    return (x + xh) * 0.5 if part == "hermitian" else (x - xh) * 0.5


def diagonal_matrix(lo: Any, v: Any, dtype: Any) -> Any:
    """``[..., K, K]`` in ``dtype`` with ``v`` (``[..., K]``) on the diagonal, 0 elsewhere."""
    jnp = lo.jnp
    k = v.shape[-1]
    return jnp.where(jnp.eye(k, dtype=bool), v[..., None, :].astype(dtype), 0).astype(dtype)


def clusters(lo: Any, values: Any, eps: float) -> tuple[Any, Any]:
    """The tied clusters of ``tenferro.linalg.degeneracy.clusters``, with static shapes:
    ``(same, at_zero)``, ``same[..., i, j]`` when ``i`` and ``j`` are in one cluster (the
    connected groups of ``|v_i - v_j| <= eps * max|v|``), ``at_zero[..., i]`` when ``i``'s
    cluster holds a value within ``eps * max|v|`` of zero.

    Real values (in any order) are clustered in sorted order, where a cluster is a run
    of neighbours at most the bound apart (the groups the numpy kernel finds, from the
    same differences); complex values by the transitive closure of the relation, by
    repeated squaring (``bit_length(K)`` boolean matrix products)."""
    jnp = lo.jnp
    k = values.shape[-1]
    if k == 0 or 0 in values.shape:
        return jnp.zeros((*values.shape, k), bool), jnp.zeros(values.shape, bool)
    magnitude = jnp.abs(values)
    bound = eps * jnp.max(magnitude, axis=-1, keepdims=True)
    if not jnp.iscomplexobj(values):
        order = jnp.argsort(values, axis=-1, stable=True)
        ordered = jnp.take_along_axis(values, order, axis=-1)
        split = jnp.abs(jnp.diff(ordered, axis=-1)) > bound
        zero = jnp.zeros((*values.shape[:-1], 1), "int32")
        runs = jnp.concatenate([zero, jnp.cumsum(split.astype("int32"), axis=-1)], axis=-1)
        label = jnp.take_along_axis(runs, jnp.argsort(order, axis=-1), axis=-1)
        same = label[..., :, None] == label[..., None, :]
    else:
        same = jnp.abs(values[..., None, :] - values[..., :, None]) <= bound[..., None]
        for _ in range(max(1, int(k).bit_length())):  # transitive closure by squaring
            linked = same.astype("int32")
            same = jnp.matmul(linked, linked) > 0
    near_zero = magnitude <= bound
    at_zero = jnp.any(same & near_zero[..., None, :], axis=-1)
    return same, at_zero
