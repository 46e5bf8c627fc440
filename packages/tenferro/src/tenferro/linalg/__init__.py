"""``tf.linalg``: decompositions, solvers and matrix functions with AD.

numpy.linalg / torch.linalg names and conventions: leading batch axes
(``[..., M, N]``), results as named tuples, complex derivatives with the conjugate
convention of the package. Each operation is an extension family of
:mod:`tenferro.extension` (``"linalg.svd"``, ...), defined once with its shape rule,
LAPACK kernel and JVP side by side, so it works on every tensor kind and in every
transform; the families' modules are:

* :mod:`tenferro.linalg.checks`: shared validation (square, finite, eps) and errors.
* :mod:`tenferro.linalg.solvers`: solve, solve_triangular, inv, det, slogdet.
* :mod:`tenferro.linalg.factorizations`: qr, cholesky, lu, lu_factor, lu_solve.
* :mod:`tenferro.linalg.functions`: matrix_exp, matrix_power, multi_dot, tensorinv,
  tensorsolve.
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
from tenferro.linalg.solvers import SlogdetResult, det, inv, slogdet, solve, solve_triangular

__all__: list[str] = []
__all__ += [  # solvers
    "LUFactorResult",
    "LUResult",
    "QRResult",
    "SlogdetResult",
    "cholesky",
    "det",
    "inv",
    "lu",
    "lu_factor",
    "lu_solve",
    "matrix_exp",
    "matrix_power",
    "multi_dot",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "tensorinv",
    "tensorsolve",
]
