"""Iterative solvers with implicit derivatives.

Modules:

* :mod:`~tenferro.solvers.krylov`: the numpy kernels (cg, gmres, bicgstab, Lanczos and
  Arnoldi by Krylov-Schur, plain and Anderson fixed-point iterations);
* :mod:`~tenferro.solvers.closure`: users' functions closed over what they capture
  (:class:`ClosedFunction`: run, applied, differentiated);
* :mod:`~tenferro.solvers.spaces`: pytrees of tensors as the solvers' flat vectors;
* :mod:`~tenferro.solvers.linear`: ``cg``, ``gmres``, ``bicgstab`` (``tf.linalg``);
* :mod:`~tenferro.solvers.roots`: ``fixed_point``, ``custom_root``;
* :mod:`~tenferro.solvers.eigen`: ``eigsh``, ``eigs`` (``tf.linalg``).
"""

from tenferro.solvers.eigen import EigenpairsResult, eigs, eigsh
from tenferro.solvers.linear import bicgstab, cg, gmres
from tenferro.solvers.roots import custom_root, fixed_point

__all__ = [
    "EigenpairsResult",
    "bicgstab",
    "cg",
    "custom_root",
    "eigs",
    "eigsh",
    "fixed_point",
    "gmres",
]
