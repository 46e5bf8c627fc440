"""Direct LAPACK kernels for one matrix: the small sizes of tensor-network code.

``numpy.linalg`` runs every call through a generalized ufunc with Python-level
preparation (type resolution, error-state contexts, ``triu`` masks) that costs
several times the LAPACK work on a 4x4 matrix. These kernels call the same LAPACK
drivers as numpy (``geqrf``/``orgqr``, ``gesdd``, ``syevd``/``heevd``, ``potrf``,
``gesv``), ``getrf``/``getrs`` and ``trtrs`` through scipy's wrappers, looked up once
per dtype (with LAPACK's optimal workspaces where scipy's defaults are minimal ones). They take
one matrix (``[M, N]``, float32/float64/complex64/complex128, finite) and raise
``numpy.linalg.LinAlgError`` where numpy would (LAPACK's ``info > 0``), so the
families' error paths serve both. :func:`apply` runs them over small batches too, so
a batch gives what its matrices give one by one (``vmap`` equals a loop); the
``*_batch`` kernels of the common families do that loop themselves, with the drivers
looked up once, on one Fortran-ordered copy of the batch that the drivers overwrite
with their results (no copy in or out per matrix).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from computegraph import DictCache
from tenferro.linalg._common import scipy_linalg
from tenferro.linalg.checks import failing_batch

__all__ = [
    "LOOP_LIMIT",
    "apply",
    "cholesky",
    "cholesky_batch",
    "eigh",
    "eigh_batch",
    "factor_and_solve",
    "factor_and_solve_batch",
    "first_failure",
    "inv",
    "inv_batch",
    "looped",
    "planned_qr",
    "planned_qr_batch",
    "qr",
    "qr_plan",
    "routine",
    "solve",
    "solve_with_factors",
    "svd",
    "triangular_solve",
]

Array = np.ndarray[Any, Any]

_ROUTINES: DictCache[tuple[str, np.dtype[Any]], Any] = DictCache(64, "linalg LAPACK routines")
"""LAPACK wrappers by (driver name, dtype): structure only, at most 4 dtypes per name."""


def routine(name: str, dtype: np.dtype[Any]) -> Any:
    """scipy's wrapper of the LAPACK driver ``name`` (no prefix) for ``dtype``."""
    key = (name, dtype)
    found = _ROUTINES.get(key)
    if found is None:
        found = scipy_linalg().get_lapack_funcs(name, dtype=dtype)
        _ROUTINES.put(key, found)
    return found


LOOP_LIMIT = 64
"""Batches of at most this many matrices loop over the one-matrix kernels (so a batch
computes what its matrices compute one by one); larger ones take numpy's gufuncs."""


def apply(
    kernel: Callable[..., Any],
    fallback: Callable[..., Any],
    *arrays: Array,
    batched: Callable[..., Any] | None = None,
) -> Any:
    """``kernel`` on one matrix (or each matrix of a small batch, results stacked:
    ``batched`` when given, else :func:`looped`); ``fallback`` (numpy's batched call)
    for empty inputs and large batches. The arrays share their batch axes."""
    a = arrays[0]
    if not a.size:
        return fallback(*arrays)
    if a.ndim == 2:
        return kernel(*arrays)
    if a.size // (a.shape[-1] * a.shape[-2]) > LOOP_LIMIT:
        return fallback(*arrays)
    return looped(kernel, *arrays) if batched is None else batched(*arrays)


def first_failure(op: str, a: Array, kernel: Callable[..., Any]) -> str:
    """Where a batched LAPACK call failed: re-run matrix by matrix (error path only)."""
    batch = a.shape[:-2]
    bad = np.zeros(batch, dtype=bool)
    for index in np.ndindex(*batch):
        try:
            kernel(a[index])
        except np.linalg.LinAlgError:
            bad[index] = True
            break
    return failing_batch(bad)


def looped(kernel: Callable[..., Any], *arrays: Array) -> Any:
    """``kernel`` on each matrix of non-empty ``arrays`` (one batch), results stacked."""
    batch = arrays[0].shape[:-2]
    rank = len(batch)
    count = batch[0] if rank == 1 else math.prod(batch)
    stacks = arrays if rank == 1 else [x.reshape((count, *x.shape[rank:])) for x in arrays]
    single = len(stacks) == 1
    first = stacks[0]
    outputs: list[Array] = []
    flats: list[Array] = []
    for index in range(count):
        got = kernel(first[index]) if single else kernel(*[x[index] for x in stacks])
        if not index:
            parts = got if type(got) is tuple else (got,)
            outputs = [np.empty((*batch, *p.shape), p.dtype) for p in parts]
            flats = outputs if rank == 1 else [o.reshape((count, *o.shape[rank:])) for o in outputs]
        # Each result is written as it comes: freeing it at once keeps the allocator warm.
        if type(got) is not tuple:
            flats[0][index] = got
        elif len(got) == 3:
            flats[0][index], flats[1][index], flats[2][index] = got
        else:
            for flat, part in zip(flats, got, strict=True):
                flat[index] = part
    return tuple(outputs) if type(got) is tuple else outputs[0]


def _failed(info: int, what: str) -> None:
    if info > 0:
        raise np.linalg.LinAlgError(what)
    if info < 0:  # pragma: no cover - a wrapper bug, never the data
        raise ValueError(f"LAPACK: illegal value in argument {-info} ({what})")


_GELSD_SIZES: DictCache[tuple[Any, ...], tuple[int, ...]] = DictCache(
    256, "linalg lstsq workspace sizes"
)


def lstsq(a: Array, b: Array, cond: float) -> tuple[Array, Array, int]:
    """The minimum-norm least-squares solution ``x`` (``N x K``), singular values and
    rank of one non-empty finite matrix ``a`` (``M x N``) and ``b`` (``M x K``), singular
    values at or below ``cond * s_max`` treated as zero (``gelsd``, numpy's driver; the
    workspace sizes kept per shape and dtype)."""
    m, n = a.shape
    k = b.shape[1]
    key = (a.dtype, m, n, k)
    sizes = _GELSD_SIZES.get(key)
    if sizes is None:
        *query, info = routine("gelsd_lwork", a.dtype)(m, n, k, cond)
        _failed(info, "least-squares workspace query failed")
        sizes = tuple(int(np.real(size)) for size in query)
        _GELSD_SIZES.put(key, sizes)
    if m < n:  # gelsd writes x over b: b needs max(M, N) rows
        padded = np.zeros((n, k), b.dtype)
        padded[:m] = b
        b = padded
    x, s, rank, info = routine("gelsd", a.dtype)(a, b, *sizes, cond)
    _failed(info, "SVD did not converge in least squares")
    return x[:n], s, int(rank)


def qr(a: Array, complete: bool) -> tuple[Array, Array]:
    """numpy.linalg.qr's ``reduced`` (or ``complete``) factors of one matrix."""
    m, n = a.shape
    return planned_qr(qr_plan(m, n, a.dtype, complete), a)


QRPlan = tuple[Any, int, Any, int, Array, slice | None, int]
"""How :func:`planned_qr` factors matrices of one shape and dtype (structure only)."""


def qr_plan(m: int, n: int, dtype: np.dtype[Any], complete: bool) -> QRPlan:
    """The plan of :func:`qr` for ``[M, N]`` matrices of ``dtype`` (cached): geqrf and
    its workspace size, orgqr/ungqr and its workspace size, the mask of R's entries to
    clear, R's rows in the packed factors (``None``: all), and Q's columns (M for a
    complete QR of a tall matrix, else 0: the packed ones)."""
    key = (m, n, dtype, complete)
    plan = _QR_PLANS.get(key)
    if plan is None:
        plan = _make_qr_plan(m, n, dtype, complete)
        _QR_PLANS.put(key, plan)
    return plan


def _make_qr_plan(m: int, n: int, dtype: np.dtype[Any], complete: bool) -> QRPlan:
    k = min(m, n)
    rows = m if complete else k
    factor = routine("geqrf", dtype)
    generate = routine("ungqr" if dtype.kind == "c" else "orgqr", dtype)
    square = m if complete and m > n else 0
    kept = None if rows == m else slice(0, rows)
    # scipy's default workspaces (3N) force LAPACK's unblocked code paths, several
    # times slower on large matrices: ask the drivers for their optimal sizes once.
    probe = np.zeros((max(m, 1), max(n, 1)), dtype, order="F")
    factor_work = _workspace(factor(probe, lwork=-1)[2])
    columns = square or k
    tau = np.zeros(max(k, 1), dtype)
    generate_work = _workspace(
        generate(np.zeros((max(m, 1), max(columns, 1)), dtype, order="F"), tau, lwork=-1)[1]
    )
    return (factor, factor_work, generate, generate_work, _lower((rows, n)), kept, square)


def _workspace(work: Array) -> int:
    """The optimal workspace size a LAPACK workspace query reported."""
    return max(int(work[0].real), 1)


# The kernels below pass the wrappers' optional arguments by position (f2py parses
# positional arguments faster than keywords): geqrf(a, lwork), orgqr(a, tau, lwork,
# overwrite_a), potrf(a, lower, clean), syevd/heevd(a, compute_v, lower), getrs(lu,
# piv, b, trans).


def planned_qr(plan: QRPlan, a: Array) -> tuple[Array, Array]:
    """:func:`qr` of one non-empty matrix by a plan of its shape and dtype."""
    factor, factor_work, generate, generate_work, lower, rows, square = plan
    packed, tau, _, info = factor(a, factor_work)
    if info:
        _failed(info, "geqrf")
    # R first (geqrf's reflectors below its diagonal cleared, as np.triu does): then Q
    # may overwrite the packed factors.
    r = packed.copy() if rows is None else packed[rows].copy()
    r[lower] = 0
    if square:
        full = np.empty((square, square), a.dtype, order="F")
        full[:, : a.shape[1]] = packed
        q, _, info = generate(full, tau, generate_work, 1)
    else:
        k = tau.shape[0]
        q, _, info = generate(packed if k == a.shape[1] else packed[:, :k], tau, generate_work, 1)
    if info:
        _failed(info, "orgqr")
    return q, r


def planned_qr_batch(plan: QRPlan, a: Array) -> tuple[Array, Array]:
    """:func:`planned_qr` of each matrix of a non-empty batch ``[..., M, N]`` (at least
    one batch axis), in place: geqrf factors Fortran-ordered copies of the matrices
    (:func:`_fortran_copies`) where they lie, R is read from all of them at once, then
    orgqr/ungqr turns each into Q where it lies (the same drivers on the same matrices:
    the same values as one by one)."""
    factor, factor_work, generate, generate_work, lower, rows, square = plan
    batch = a.shape[:-2]
    m, n = a.shape[-2:]
    k = min(m, n)
    work = _fortran_copies(a if len(batch) == 1 else a.reshape((-1, m, n)))
    taus = []
    matrices = work.transpose(0, 2, 1)  # each one Fortran-ordered, factored in place
    for index in range(work.shape[0]):  # (indexing makes fewer views than iterating)
        target = matrices[index]
        packed, tau, _, info = factor(target, factor_work, 1)
        if info:
            _failed(info, "geqrf")
        if packed is not target:  # pragma: no cover - the wrapper copied after all
            target[...] = packed
        taus.append(tau)
    r = work.transpose(0, 2, 1)[:, : m if rows is None else rows.stop]  # then clear below
    r = r.copy()
    r[:, lower] = 0  # the reflectors below R's diagonal, every matrix at once
    if square:  # complete QR of a tall matrix: Q is M x M, its first N columns packed
        full = np.empty((work.shape[0], square, square), a.dtype)
        full[:, :n] = work
        work = full
    elif k < n:  # wide: Q is the first K columns
        work = work[:, :k]
    matrices = work.transpose(0, 2, 1)
    for index, tau in enumerate(taus):
        target = matrices[index]
        q, _, info = generate(target, tau, generate_work, 1)
        if info:
            _failed(info, "orgqr")
        if q is not target:  # pragma: no cover - the wrapper copied after all
            target[...] = q
    if k < n:  # Q alone, not the whole factored buffer (N/K times its size) behind it
        work = work.copy()
    return _from_fortran(work, batch), r.reshape((*batch, *r.shape[1:]))


_QR_PLANS: DictCache[tuple[Any, ...], QRPlan] = DictCache(256, "linalg QR plans")
"""(M, N, dtype, complete) -> :func:`qr_plan`."""


_LOWER: DictCache[tuple[int, ...], Array] = DictCache(256, "linalg lower-triangle masks")


def _lower(shape: tuple[int, ...]) -> Array:
    """True strictly below the diagonal: the entries ``np.triu`` clears, built once per
    shape (one masked assignment is cheaper than ``np.triu`` on small matrices)."""
    mask = _LOWER.get(shape)
    if mask is None:
        mask = ~np.triu(np.ones(shape, bool))
        mask.flags.writeable = False
        _LOWER.put(shape, mask)
    return mask


def svd(a: Array) -> tuple[Array, Array, Array]:
    """The thin SVD ``(U, S, Vh)`` of one matrix (``gesdd``, numpy's driver)."""
    u, s, vh, info = routine("gesdd", a.dtype)(a, compute_uv=1, full_matrices=0)
    _failed(info, "SVD did not converge")
    return u, s, vh


def eigh(a: Array, lower: bool) -> tuple[Array, Array]:
    """Eigenvalues (ascending) and eigenvectors of the Hermitian matrix read from one
    triangle of ``a`` (``syevd``/``heevd``, numpy's drivers)."""
    w, v, info = routine("heevd" if a.dtype.kind == "c" else "syevd", a.dtype)(a, 1, int(lower))
    if info:
        _failed(info, "Eigenvalues did not converge")
    return w, v


def eigh_batch(a: Array, lower: bool) -> tuple[Array, Array]:
    """:func:`eigh` of each matrix of a non-empty batch ``[..., N, N]`` (at least one
    batch axis): the driver overwrites Fortran-ordered copies of the matrices, made in
    one step, with the eigenvectors (see :func:`_fortran_copies`)."""
    driver = routine("heevd" if a.dtype.kind == "c" else "syevd", a.dtype)
    batch = a.shape[:-2]
    n = a.shape[-1]
    work = _fortran_copies(a if len(batch) == 1 else a.reshape((-1, n, n)))
    w_out = np.empty(work.shape[:-1], np.finfo(a.dtype).dtype)
    # The wrappers' default workspace sizes (for compute_v=1), given by position with
    # overwrite_a (f2py parses a keyword slower): the same sizes, so the same drivers.
    if a.dtype.kind == "c":
        sizes: tuple[int, ...] = (max(2 * n + n * n, 1), 3 + 5 * n, 1 + 5 * n + 2 * n * n)
    else:
        sizes = (max(1 + 6 * n + 2 * n * n, 1), 3 + 5 * n)
    flag = int(lower)
    matrices = work.transpose(0, 2, 1)
    for index in range(work.shape[0]):
        target = matrices[index]
        w, v, info = driver(target, 1, flag, *sizes, 1)
        if info:
            _failed(info, "Eigenvalues did not converge")
        w_out[index] = w
        if v is not target:  # pragma: no cover - the wrapper copied after all
            target[...] = v
    return w_out.reshape(a.shape[:-1]), _from_fortran(work, batch)


def cholesky(a: Array) -> Array:
    """The lower Cholesky factor, read from the lower triangle (``potrf``)."""
    factor, info = routine("potrf", a.dtype)(a, 1, 1)
    if info:
        _failed(info, "Matrix is not positive definite")
    return factor


def cholesky_batch(a: Array) -> Array:
    """:func:`cholesky` of each matrix of a non-empty batch (at least one batch axis),
    computed where Fortran-ordered copies of the matrices lie (see
    :func:`_fortran_copies`)."""
    potrf = routine("potrf", a.dtype)
    batch = a.shape[:-2]
    n = a.shape[-1]
    work = _fortran_copies(a if len(batch) == 1 else a.reshape((-1, n, n)))
    matrices = work.transpose(0, 2, 1)
    for index in range(work.shape[0]):
        target = matrices[index]
        factor, info = potrf(target, 1, 1, 1)
        if info:
            _failed(info, "Matrix is not positive definite")
        if factor is not target:  # pragma: no cover - the wrapper copied after all
            target[...] = factor
    return _from_fortran(work, batch)


def _fortran_copies(stack: Array) -> Array:
    """``[count, N, M]`` (C order) holding each matrix of ``stack`` ``[count, M, N]``
    transposed, copied in one step: ``copies[i].T`` is matrix i in Fortran order, which
    scipy's wrappers hand to LAPACK without a copy of their own when told to overwrite
    it. The drivers then compute what they compute on their own copies (the same
    routine on the same matrix), with no result copied out per matrix."""
    return stack.transpose(0, 2, 1).copy()


def _from_fortran(copies: Array, batch: tuple[int, ...]) -> Array:
    """The ``[..., M, N]`` view of :func:`_fortran_copies`'s matrices (after the drivers
    overwrote them with their results): each matrix in Fortran order, as the one-matrix
    kernels return theirs."""
    if len(batch) != 1:
        copies = copies.reshape((*batch, *copies.shape[1:]))
    return copies.swapaxes(-1, -2)


def solve(a: Array, b: Array) -> Array:
    """``A X = B`` for a square A and a matrix B (``gesv``, numpy's driver)."""
    _, _, x, info = routine("gesv", a.dtype)(a, b)
    _failed(info, "Singular matrix")
    return x


def factor_and_solve(a: Array, b: Array) -> tuple[Array, Array, Array]:
    """``A X = B`` by LU factors that the derivative rules reuse: ``(X, F, pivots)``.

    LAPACK factors ``A^T = P L U`` (``getrf`` on A's transpose: for the usual C-ordered
    A that is already the Fortran order LAPACK works in, so no transposing copy), and
    ``F`` is those packed factors transposed back (so ``F.T`` is them in Fortran order,
    ready for :func:`solve_with_factors`). ``pivots`` are 0-based (int32). An exactly
    singular A raises ``numpy.linalg.LinAlgError``, as ``gesv`` does."""
    dtype = a.dtype
    packed, pivots, info = routine("getrf", dtype)(a.T)
    if info:
        _failed(info, "Singular matrix")
    x, info = routine("getrs", dtype)(packed, pivots, b, 1)  # (A^T)^T X = B
    if info:
        _failed(info, "getrs")
    return x, packed.T, pivots


def factor_and_solve_batch(a: Array, b: Array) -> tuple[Array, Array, Array]:
    """:func:`factor_and_solve` of each pair of a non-empty batch (A ``[..., N, N]``,
    B ``[..., N, K]``, the same batch axes, at least one), computed in place: copies of
    A (C order, so ``copies[i].T`` is A_i^T in Fortran order) that ``getrf`` factors
    where they lie, becoming the stored factors F, and Fortran-ordered copies of B
    (:func:`_fortran_copies`) that ``getrs`` overwrites with X."""
    dtype = a.dtype
    getrf, getrs = routine("getrf", dtype), routine("getrs", dtype)
    batch = a.shape[:-2]
    n, k = b.shape[-2:]
    if len(batch) == 1:
        factors = a.copy()
        solutions = _fortran_copies(b)
    else:
        factors = a.reshape((-1, n, n)).copy()
        solutions = _fortran_copies(b.reshape((-1, n, k)))
    p_out = np.empty(factors.shape[:-1], np.int32)
    matrices, columns = factors.transpose(0, 2, 1), solutions.transpose(0, 2, 1)
    for index in range(factors.shape[0]):
        target = matrices[index]
        packed, pivots, info = getrf(target, 1)
        if info:
            _failed(info, "Singular matrix")
        if packed is not target:  # pragma: no cover - the wrapper copied after all
            target[...] = packed
        rhs = columns[index]
        x, info = getrs(target, pivots, rhs, 1, 1)  # (A^T)^T X = B
        if info:
            _failed(info, "getrs")
        if x is not rhs:  # pragma: no cover - the wrapper copied after all
            rhs[...] = x
        p_out[index] = pivots
    return (
        _from_fortran(solutions, batch),
        factors.reshape(a.shape),
        p_out.reshape(a.shape[:-1]),
    )


def solve_with_factors(factors: Array, pivots: Array, b: Array, adjoint: bool) -> Array:
    """``A X = B`` (or ``A^H X = B`` when ``adjoint``) from :func:`factor_and_solve`'s
    factors of A (``getrs``: two triangular solves, no factorization)."""
    packed = factors.T  # Fortran order when ``factors`` is C-ordered, as stored
    getrs = routine("getrs", packed.dtype)
    if not adjoint:
        x, info = getrs(packed, pivots, b, trans=1)
    elif packed.dtype.kind != "c":
        x, info = getrs(packed, pivots, b, trans=0)  # A^H = A^T = the factored matrix
    else:  # A^H = conj(A^T): conj(A^T) X = B is A^T conj(X) = conj(B)
        x, info = getrs(packed, pivots, np.conj(b), trans=0)
        x = np.conj(x, out=x)
    _failed(info, "getrs")
    return x


def inv(a: Array) -> Array:
    """The inverse, as numpy computes it: ``gesv`` against the identity."""
    return solve(a, np.eye(a.shape[0], dtype=a.dtype))


def inv_batch(a: Array) -> Array:
    """:func:`inv` of each matrix of a non-empty batch (at least one batch axis), in
    place: ``gesv`` factors Fortran-ordered copies of the matrices
    (:func:`_fortran_copies`) and overwrites identities beside them with the inverses."""
    gesv = routine("gesv", a.dtype)
    batch = a.shape[:-2]
    n = a.shape[-1]
    work = _fortran_copies(a if len(batch) == 1 else a.reshape((-1, n, n)))
    inverses = np.zeros(work.shape, a.dtype)
    inverses[:, range(n), range(n)] = 1  # identities (symmetric: their own transposes)
    matrices, columns = work.transpose(0, 2, 1), inverses.transpose(0, 2, 1)
    for index in range(work.shape[0]):
        rhs = columns[index]
        _, _, x, info = gesv(matrices[index], rhs, 1, 1)
        if info:
            _failed(info, "Singular matrix")
        if x is not rhs:  # pragma: no cover - the wrapper copied after all
            rhs[...] = x
    return _from_fortran(inverses, batch)


def triangular_solve(a: Array, b: Array, *, lower: bool, trans: int, unit: bool) -> Array:
    """``op(A) X = B`` with A triangular (only that triangle read); ``trans`` 0, 1, 2:
    A, A^T, A^H. A zero on A's diagonal raises (unless ``unit``)."""
    x, info = routine("trtrs", a.dtype)(a, b, lower=int(lower), trans=trans, unitdiag=int(unit))
    _failed(info, "Singular matrix")
    return x
