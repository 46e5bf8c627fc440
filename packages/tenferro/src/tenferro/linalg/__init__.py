"""``tf.linalg``: decompositions, solvers and matrix functions with AD.

numpy.linalg / torch.linalg names and conventions: leading batch axes
(``[..., M, N]``), results as named tuples, complex derivatives with the conjugate
convention of the package. Each operation is an extension family of
:mod:`tenferro.extension` (``"linalg.svd"``, ...), defined once with its shape rule,
LAPACK kernel and JVP side by side, so it works on every tensor kind and in every
transform; the families' modules are:

* :mod:`tenferro.linalg.checks`: shared validation (square, finite, eps) and errors.
* :mod:`tenferro.linalg.spectral`: svd, svdvals, truncated_svd, eigh, eigvalsh, eig,
  eigvals, pinv (Lorentzian-regularised spectral derivatives, gauges).
* :mod:`tenferro.linalg.norms`: norm, vector_norm, matrix_norm.
"""

from __future__ import annotations

from tenferro.linalg.norms import matrix_norm, norm, vector_norm
from tenferro.linalg.spectral import (
    EighResult,
    EigResult,
    SVDResult,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    pinv,
    svd,
    svdvals,
    truncated_svd,
)

__all__: list[str] = [
    "EigResult",
    "EighResult",
    "SVDResult",
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
