"""Derivative checks for users' own functions (and for tenferro's tests).

:func:`check_grads` checks ``f`` the way ``jax.test_util.check_grads`` does,
under tenferro's complex convention:

* ``"fwd"``: the JVP ``J·t`` against central finite differences along a random
  direction ``t``;
* ``"rev"``: the VJP against the JVP through the adjoint identity
  ``Re⟨c, J·t⟩ = Re⟨Jᴴ·c, t⟩``, with ``J·t`` from finite differences and from the
  JVP itself;
* ``order > 1``: the same checks, recursively, on the JVP function ``(x, t) ↦ J(x)·t``
  (forward over forward) and on the VJP function ``x ↦ J(x)ᴴ·f(x)`` (reverse over
  reverse), so ``order=2`` checks every second-order path.

Inputs with integer or bool dtypes are held fixed; only floating and complex
outputs are compared. A failure raises ``AssertionError`` naming the check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tenferro.concrete import Tensor
from tenferro.core.params import as_int
from tenferro.core.pytree import flatten, unflatten
from tenferro.errors import ParameterError
from tenferro.transforms.jvp import jvp
from tenferro.transforms.vjp import vjp

__all__ = ["check_grads", "numerical_jvp"]

_EPS = {"f4": 1e-3, "c8": 1e-3, "f8": 1e-6, "c16": 1e-6}
_TOL = {"f4": 2e-3, "c8": 2e-3, "f8": 1e-5, "c16": 1e-5}


def check_grads(
    f: Callable[..., Any],
    args: Sequence[Any],
    order: int = 2,
    modes: Sequence[str] = ("fwd", "rev"),
    *,
    atol: float | None = None,
    rtol: float | None = None,
    eps: float | None = None,
    seed: int = 0,
) -> None:
    """Check the derivatives of ``f`` at ``args`` up to ``order`` (see the module docs).

    ``f`` takes the arguments positionally and returns a tensor or a tuple/list/dict
    of tensors. Tolerances and the finite-difference step default by the lowest
    precision among the differentiable arguments (float32/complex64: step 1e-3,
    tolerance 2e-3; float64/complex128: step 1e-6, tolerance 1e-5).
    """
    order = as_int("check_grads", "order", order)
    if order < 1:
        raise ParameterError("check_grads", f"order must be >= 1, got {order!r}")
    if isinstance(modes, str) or not isinstance(modes, (list, tuple, set, frozenset)):
        raise ParameterError(
            "check_grads", f"modes must be a sequence of 'fwd' and 'rev', got {modes!r}"
        )
    unknown = set(modes) - {"fwd", "rev"}
    if unknown or not modes:
        raise ParameterError(
            "check_grads", f"modes must be a subset of ('fwd', 'rev'), got {modes!r}"
        )
    arrays = [np.asarray(a) for a in args]
    key = _precision_key(arrays)
    settings = _Settings(
        atol=_TOL[key] if atol is None else atol,
        rtol=_TOL[key] if rtol is None else rtol,
        eps=_EPS[key] if eps is None else eps,
        rng=np.random.default_rng(seed),
    )
    _check(f, arrays, order, tuple(modes), settings, "")


class _Settings:
    def __init__(self, atol: float, rtol: float, eps: float, rng: np.random.Generator) -> None:
        self.atol = atol
        self.rtol = rtol
        self.eps = eps
        self.rng = rng


def _check(
    f: Callable[..., Any],
    args: list[np.ndarray[Any, Any]],
    order: int,
    modes: tuple[str, ...],
    settings: _Settings,
    label: str,
) -> None:
    free = [i for i, a in enumerate(args) if a.dtype.kind in "fc"]
    if not free:
        return
    g = _restricted(f, args, free)
    primals = [args[i] for i in free]
    if "fwd" in modes:
        name = f"JVP of {label}" if label else "JVP"
        _check_jvp(g, primals, settings, name)
        if order > 1:

            def jvp_function(*xs_and_ts: Any) -> Any:
                half = len(xs_and_ts) // 2
                return jvp(g, tuple(xs_and_ts[:half]), tuple(xs_and_ts[half:]))

            tangents = [_random_like(p, settings.rng) for p in primals]
            _check(jvp_function, primals + tangents, order - 1, modes, settings, name)
    if "rev" in modes:
        name = f"VJP of {label}" if label else "VJP"
        _check_vjp(g, primals, settings, name)
        if order > 1:

            def vjp_function(*xs: Any) -> Any:
                out, pullback = vjp(g, *xs)
                return pullback(out)

            _check(vjp_function, primals, order - 1, modes, settings, name)


def _restricted(
    f: Callable[..., Any], args: list[np.ndarray[Any, Any]], free: list[int]
) -> Callable[..., Any]:
    """``f`` as a function of the floating/complex arguments only."""
    if len(free) == len(args):
        return f
    fixed = [Tensor(a) for a in args]

    def g(*xs: Any) -> Any:
        full: list[Any] = list(fixed)
        for i, x in zip(free, xs, strict=True):
            full[i] = x
        return f(*full)

    return g


def _check_jvp(
    g: Callable[..., Any], primals: list[np.ndarray[Any, Any]], settings: _Settings, name: str
) -> None:
    tangents = [_random_like(p, settings.rng) for p in primals]
    _, tangent_out = jvp(g, tuple(primals), tuple(tangents))
    expected = numerical_jvp(g, primals, tangents, settings.eps)
    actual = _inexact_leaves(tangent_out)
    if len(actual) != len(expected):
        raise AssertionError(f"{name}: {len(actual)} tangent outputs, expected {len(expected)}")
    for position, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if a.shape != e.shape:
            raise AssertionError(f"{name}: output {position} has shape {a.shape}, not {e.shape}")
        error = np.abs(a - e)
        bound = settings.atol + settings.rtol * np.abs(e)
        if error.size and not np.all(error <= bound):
            worst = int(np.argmax(error - bound))
            raise AssertionError(
                f"{name} does not match finite differences (output {position}): max error "
                f"{error.max():.3g} at flat index {worst} (AD {a.ravel()[worst]!r}, "
                f"FD {e.ravel()[worst]!r}; atol={settings.atol}, rtol={settings.rtol})"
            )


def _check_vjp(
    g: Callable[..., Any], primals: list[np.ndarray[Any, Any]], settings: _Settings, name: str
) -> None:
    tangents = [_random_like(p, settings.rng) for p in primals]
    out, pullback = vjp(g, *primals)
    out_leaves, _ = flatten(out)
    cotangents = [
        _random_like(np.asarray(o), settings.rng)
        if np.asarray(o).dtype.kind in "fc"
        else np.zeros(np.shape(o), np.asarray(o).dtype)
        for o in out_leaves
    ]
    cotangent = (
        cotangents[0] if not isinstance(out, (tuple, list, dict)) else _like(out, cotangents)
    )
    pulled = pullback(cotangent)
    pulled_leaves = [np.asarray(p) for p in pulled]
    inexact_cts = [c for c in cotangents if c.dtype.kind in "fc"]
    fd = numerical_jvp(g, primals, tangents, settings.eps)
    _, ad_tangent = jvp(g, tuple(primals), tuple(tangents))
    ad = _inexact_leaves(ad_tangent)
    reverse = _inner(pulled_leaves, tangents)
    for source, forward_values in (("finite differences", fd), ("the JVP", ad)):
        forward = _inner(inexact_cts, forward_values)
        scale = _norm(inexact_cts) * _norm(forward_values) + _norm(pulled_leaves) * _norm(tangents)
        if abs(forward - reverse) > settings.atol + settings.rtol * scale:
            raise AssertionError(
                f"{name} fails the adjoint identity against {source}: "
                f"Re<c, J t> = {forward:.10g} but Re<J^H c, t> = {reverse:.10g} "
                f"(scale {scale:.3g}; atol={settings.atol}, rtol={settings.rtol})"
            )


def numerical_jvp(
    f: Callable[..., Any],
    primals: Sequence[np.ndarray[Any, Any]],
    tangents: Sequence[np.ndarray[Any, Any]],
    eps: float,
) -> list[np.ndarray[Any, Any]]:
    """Central differences ``(f(x + eps·t) - f(x - eps·t)) / 2eps`` of the inexact outputs
    (``f`` is called with :class:`~tenferro.Tensor` arguments)."""
    plus = [Tensor(p + eps * t, p.dtype) for p, t in zip(primals, tangents, strict=True)]
    minus = [Tensor(p - eps * t, p.dtype) for p, t in zip(primals, tangents, strict=True)]
    high = _inexact_leaves(f(*plus))
    low = _inexact_leaves(f(*minus))
    return [(h - lo) / (2 * eps) for h, lo in zip(high, low, strict=True)]


def _inexact_leaves(tree: Any) -> list[np.ndarray[Any, Any]]:
    leaves, _ = flatten(tree)
    arrays = [np.asarray(leaf) for leaf in leaves]
    return [
        a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        for a in arrays
        if a.dtype.kind in "fc"
    ]


def _like(out: Any, leaves: list[np.ndarray[Any, Any]]) -> Any:
    _, treedef = flatten(out)
    return unflatten(treedef, leaves)


def _random_like(x: np.ndarray[Any, Any], rng: np.random.Generator) -> np.ndarray[Any, Any]:
    values = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        values = values + 1j * rng.standard_normal(x.shape)
    return np.asarray(values, dtype=x.dtype)


def _inner(a: Sequence[np.ndarray[Any, Any]], b: Sequence[np.ndarray[Any, Any]]) -> float:
    """``Re Σ conj(a)·b`` over all leaves, in double precision."""
    total = 0.0
    for x, y in zip(a, b, strict=True):
        total += float(np.real(np.vdot(np.asarray(x, np.complex128), np.asarray(y, np.complex128))))
    return total


def _norm(values: Sequence[np.ndarray[Any, Any]]) -> float:
    return float(np.sqrt(sum(float(np.sum(np.abs(np.asarray(v)) ** 2)) for v in values)))


def _precision_key(arrays: list[np.ndarray[Any, Any]]) -> str:
    kinds = {a.dtype.str[1:] for a in arrays if a.dtype.kind in "fc"}
    for low in ("f4", "c8"):
        if low in kinds:
            return low
    return "c16" if "c16" in kinds else "f8"
