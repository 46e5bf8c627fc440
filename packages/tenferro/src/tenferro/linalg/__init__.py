"""``tf.linalg``: decompositions, solvers and matrix functions with AD.

numpy.linalg / torch.linalg names and conventions: leading batch axes
(``[..., M, N]``), results as named tuples, complex derivatives with the conjugate
convention of the package. Each operation is a primitive family
(:mod:`tenferro.linalg.family`; ``"linalg.svd"``, ...), defined as every primitive is,
with its shape rule, LAPACK kernel and JVP side by side, so it works on every tensor
kind and in every transform; the families' modules are:

* :mod:`tenferro.linalg.checks`: shared validation (square, finite, eps) and errors.
* :mod:`tenferro.linalg.singular_values`: svd, svdvals, truncated_svd;
  :mod:`tenferro.linalg.hermitian_eigen`: eigh, eigvalsh;
  :mod:`tenferro.linalg.general_eigen`: eig, eigvals. Their derivatives share
  :mod:`tenferro.linalg.gaps` (forms, cuts at ties and checks the gap reciprocals),
  :mod:`tenferro.linalg.gauges` (the phase of the vectors) and
  :mod:`tenferro.linalg.degeneracy` (says where a derivative is not defined).
* :mod:`tenferro.linalg.pseudo_inverse`: pinv (the derivative of ``A^+`` itself).
* :mod:`tenferro.linalg.norms`: norm, vector_norm, matrix_norm.
* :mod:`tenferro.linalg.solvers`: solve, solve_triangular, inv, det, slogdet
  (:mod:`tenferro.linalg.adjugate`: det's derivatives of every order).
* :mod:`tenferro.linalg.factorizations`: qr, cholesky, lu, lu_factor, lu_solve.
* :mod:`tenferro.linalg.least_squares`: lstsq, matrix_rank.
* :mod:`tenferro.linalg.functions`: matrix_exp, matrix_power, multi_dot, tensorinv,
  tensorsolve.

The iterative (matrix-free) solvers ``cg``, ``gmres``, ``bicgstab``, ``eigsh`` and
``eigs``, with implicit derivatives, live in :mod:`tenferro.solvers` and are named
here too.
"""

from __future__ import annotations

from tenferro.linalg.factorizations import (
    LUFactorResult,
    LUResult,
    QRResult,
    cholesky,
    lu,
    lu_factor,
    lu_solve,
    qr,
)
from tenferro.linalg.functions import matrix_exp, matrix_power, multi_dot, tensorinv, tensorsolve
from tenferro.linalg.general_eigen import EigResult, eig, eigvals
from tenferro.linalg.hermitian_eigen import EighResult, eigh, eigvalsh
from tenferro.linalg.least_squares import LstsqResult, lstsq, matrix_rank
from tenferro.linalg.norms import cond, matrix_norm, norm, vector_norm
from tenferro.linalg.pseudo_inverse import pinv
from tenferro.linalg.singular_values import SVDResult, svd, svdvals, truncated_svd
from tenferro.linalg.solvers import SlogdetResult, det, inv, slogdet, solve, solve_triangular
from tenferro.solvers import EigenpairsResult, bicgstab, cg, eigs, eigsh, gmres

__all__: list[str] = [
    "EigResult",
    "EighResult",
    "SVDResult",
    "cond",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "matrix_norm",
    "norm",
    "pinv",
    "svd",
    "svdvals",
    "truncated_svd",
    "vector_norm",
]
__all__ += [  # solvers
    "LUFactorResult",
    "LUResult",
    "LstsqResult",
    "QRResult",
    "SlogdetResult",
    "cholesky",
    "det",
    "inv",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_solve",
    "matrix_exp",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "tensorinv",
    "tensorsolve",
]
__all__ += [  # iterative, matrix-free (tenferro.solvers)
    "EigenpairsResult",
    "bicgstab",
    "cg",
    "eigs",
    "eigsh",
    "gmres",
]
