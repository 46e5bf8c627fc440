"""How the oracle database's spectral linear-algebra ops are written with tf.linalg
(joined to the core table by oracle_table.py; conventions as in oracle_ops.py).

``OBSERVABLES`` maps a case's ``observable.kind`` to the gauge-invariant function of
the decomposition that the database differentiates; it returns the named outputs the
case's probes hold (``{"s": ..., "uvh": ...}``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oracle_ops import _axes

import tenferro as tf

Op = Callable[[list[Any], list[Any], dict[str, Any]], Any]


def _thin(result: Any) -> tuple[Any, Any, Any]:
    """The database's SVD observables read the thin factors (torch narrows a full SVD)."""
    u, s, vh = result
    k = s.shape[-1]
    return u[..., :, :k], s, vh[..., :k, :]


def _hermitian(x: Any) -> Any:
    """torch's OpInfo wraps Hermitian-input ops as ``op(A + A^H)`` (the database
    differentiates that composite)."""
    return x + tf.conj(tf.swapaxes(x, -1, -2))


def _svd(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    return tf.linalg.svd(xs[0], full_matrices=kwargs.get("full_matrices", True))


def _norm(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    order = args[0] if args else kwargs.get("ord")
    dim = kwargs.get("dim")
    axis = None if dim is None else (dim if isinstance(dim, int) else tuple(dim))
    return tf.linalg.norm(a, order, axis, bool(kwargs.get("keepdim")))


def _vector_norm(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    axis = _axes(a, kwargs.get("dim"))
    return tf.linalg.vector_norm(a, kwargs.get("ord", 2), axis, bool(kwargs.get("keepdim")))


def _matrix_norm(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    order, dims, keepdim = args
    return tf.linalg.matrix_norm(xs[0], order, tuple(dims), bool(keepdim))


OPS: dict[str, Op] = {
    "svd": _svd,
    "svdvals": lambda xs, args, kwargs: tf.linalg.svdvals(xs[0]),
    "cond": lambda xs, args, kwargs: tf.linalg.cond(xs[0], args[0] if args else kwargs.get("p")),
    "eigh": lambda xs, args, kwargs: tf.linalg.eigh(_hermitian(xs[0]), kwargs.get("UPLO", "L")),
    "eigvalsh": lambda xs, args, kwargs: tf.linalg.eigvalsh(
        _hermitian(xs[0]), kwargs.get("UPLO", "L")
    ),
    "eig": lambda xs, args, kwargs: tf.linalg.eig(xs[0]),
    "eigvals": lambda xs, args, kwargs: tf.linalg.eigvals(xs[0]),
    "pinv": lambda xs, args, kwargs: tf.linalg.pinv(xs[0], rtol=kwargs.get("rtol")),
    "pinv_hermitian": lambda xs, args, kwargs: tf.linalg.pinv(_hermitian(xs[0]), hermitian=True),
    "norm": _norm,
    "vector_norm": _vector_norm,
    "matrix_norm": _matrix_norm,
}

OBSERVABLES: dict[str, Callable[[Any], dict[str, Any]]] = {
    "svd_s": lambda r: {"s": _thin(r)[1]},
    "svd_u_abs": lambda r: {"u": tf.abs(_thin(r)[0])},
    "svd_vh_abs": lambda r: {"s": _thin(r)[1], "vh": tf.abs(_thin(r)[2])},
    "svd_uvh_product": lambda r: {"s": _thin(r)[1], "uvh": tf.matmul(_thin(r)[0], _thin(r)[2])},
    "eigh_values_vectors_abs": lambda r: {"values": r[0], "vectors": tf.abs(r[1])},
    "eig_values_vectors_abs": lambda r: {"values": r[0], "vectors": tf.abs(r[1])},
}

_FACTOR_OF = {"svd_u_abs": "u", "svd_vh_abs": "vh", "svd_uvh_product": "both"}


def case_skip_reason(case: dict[str, Any], arrays: dict[str, Any]) -> str | None:
    """Why one case of these ops is not replayed (None: replay it)."""
    op = case["op"]
    kind = case["observable"]["kind"]
    if case["expected_behavior"] != "success":
        return (
            "expects an error for a phase-dependent loss of complex singular/eigen vectors "
            "(torch rejects it in backward); tenferro differentiates the raw gauge in a fixed "
            "convention (diag(V^H dV) = 0, as JAX) and offers gauge='canonical' to make "
            "phase-dependent losses well defined, and its transposition never inspects "
            "cotangents to reject them"
        )
    if op == "svd" and (case.get("op_kwargs") or {}).get("full_matrices", True):
        m, n = arrays["a"].shape[-2:]
        factor = _FACTOR_OF.get(kind)
        extra = "u" if m > n else "vh" if n > m else None
        if extra is not None and factor in (extra, "both"):
            return (
                "differentiates a factor of a full non-square SVD: tenferro raises ADRuleError "
                "there (its extra vectors are arbitrary; design decision 10), torch silently "
                "drops their cotangent; the same observables are replayed with "
                "full_matrices=False"
            )
    return None
