"""Iterative solvers with implicit derivatives.

Modules:

* :mod:`~tenferro.solvers.krylov`: the numpy kernels (cg, gmres, bicgstab, Lanczos and
  Arnoldi by Krylov-Schur, plain and Anderson fixed-point iterations);
* :mod:`~tenferro.solvers.closure`: users' functions closed over what they capture
  (:class:`ClosedFunction`: run, applied, differentiated);
* :mod:`~tenferro.solvers.spaces`: pytrees of tensors as the solvers' flat vectors;
* :mod:`~tenferro.solvers.linear`: ``cg``, ``gmres``, ``bicgstab`` (``tf.linalg``).
"""

from tenferro.solvers.linear import bicgstab, cg, gmres

__all__ = ["bicgstab", "cg", "gmres"]
