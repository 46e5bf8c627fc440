"""``tf.linalg``: decompositions, solvers and matrix functions with AD.

numpy.linalg / torch.linalg names and conventions: leading batch axes
(``[..., M, N]``), results as named tuples, complex derivatives with the conjugate
convention of the package. Each operation is an extension family of
:mod:`tenferro.extension` (``"linalg.svd"``, ...), defined once with its shape rule,
LAPACK kernel and JVP side by side, so it works on every tensor kind and in every
transform; the families' modules are:

* :mod:`tenferro.linalg.checks`: shared validation (square, finite, eps) and errors.
"""

from __future__ import annotations

__all__: list[str] = []
