"""Jacobians as transforms: ``jacfwd``, ``jacrev``, ``jacobian`` and ``hessian``, built on
``jvp``/``vjp`` and vectorised with ``vmap`` over basis tangents or cotangents (one
batched derivative computation, not a loop over basis vectors).

The Jacobian of ``fun`` with respect to an argument leaf of shape ``S`` at an output
leaf of shape ``T`` has shape ``T + S`` (output axes first), as in JAX. With several
outputs or arguments, the result is the output's tree with, in place of each output
leaf, the selected arguments' tree (a tuple when ``argnums`` is a tuple).

Complex numbers. ``jacfwd`` pushes real unit tangents forward, so its entries are
``d out / d in`` along the real axis of each input: for a holomorphic function, the
complex derivative ``f'(z)``. ``jacrev`` pulls unit cotangents back with the
conjugate-convention VJP (``conj(f'(z)) * ct``) and, for complex outputs,
conjugates the rows, so that for a holomorphic function ``jacrev`` equals
``jacfwd`` (``f'(z)``, as JAX's ``jacrev(holomorphic=True)``); for a real-valued
function of complex inputs each row is the gradient ``tf.grad`` gives (the
conjugate-Wirtinger gradient, PyTorch's convention, e.g. ``2z`` for ``|z|^2``).
PyTorch's ``torch.func.jacrev`` rejects complex inputs and
``torch.autograd.functional.jacobian`` rejects complex outputs, so there is nothing
of theirs to differ from there. As in JAX, ``jacrev`` of a complex output with
respect to a real input raises (reverse mode would lose the imaginary part): use
``jacfwd``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec

import numpy as np

from tenferro import lax
from tenferro.concrete import Tensor
from tenferro.core.flags import check_flag
from tenferro.core.kinds import asarray
from tenferro.core.params import argnum_positions, as_argnums
from tenferro.core.pytree import TreeDef, flatten, unflatten
from tenferro.errors import ArgumentTypeError, DTypeError
from tenferro.transforms.jvp import jvp
from tenferro.transforms.vjp import vjp
from tenferro.transforms.vmap import vmap

__all__ = ["hessian", "jacfwd", "jacobian", "jacrev"]

P = ParamSpec("P")


def jacfwd(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[P, Any]:
    """The Jacobian of ``fun`` with respect to ``args[argnums]`` by forward mode (one JVP
    per input element, vectorised): efficient for few inputs and many outputs. With
    ``has_aux``, ``fun`` returns ``(output, aux)`` and the result is ``(jacobian, aux)``.
    Keyword arguments are passed to ``fun`` and not differentiated."""
    argnums = _check(fun, argnums, has_aux, "jacfwd")

    @functools.wraps(fun, updated=())
    def jacobian_fwd(*args: Any, **kwargs: Any) -> Any:

        f = _keywords(fun, kwargs)
        selected = _Selected(args, argnums, "jacfwd")
        partial = selected.partial(f, has_aux, "jacfwd")
        primals = selected.leaves
        basis = _basis([p.meta for p in primals])

        def main(*leaves: Any) -> Any:
            return partial(*leaves)[0] if has_aux else partial(*leaves)

        def pushforward(*tangents: Any) -> Any:
            return jvp(main, primals, list(tangents))[1]

        columns = vmap(pushforward)(*basis)  # each output leaf: (N, *out_shape)
        out_leaves, out_def = flatten(columns)
        blocks = []
        for column in out_leaves:
            out_shape = column.meta.shape[1:]
            per_input = []
            for start, meta in selected.segments():
                block = _rows(column, start, meta.size)  # (n_i, *out_shape)
                block = lax.reshape(block, (*meta.shape, *out_shape))
                order = (*range(len(meta.shape), block.meta.ndim), *range(len(meta.shape)))
                per_input.append(lax.transpose(block, order))
            blocks.append(selected.arrange(per_input))
        result = unflatten(out_def, blocks)
        if has_aux:
            return result, _aux_pair(f(*args), "jacfwd")[1]
        return result

    return jacobian_fwd


def jacrev(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[P, Any]:
    """The Jacobian of ``fun`` with respect to ``args[argnums]`` by reverse mode (one VJP
    per output element, vectorised): efficient for few outputs and many inputs. Complex
    conventions: see the module documentation. With ``has_aux``, ``(jacobian, aux)``."""
    argnums = _check(fun, argnums, has_aux, "jacrev")

    @functools.wraps(fun, updated=())
    def jacobian_rev(*args: Any, **kwargs: Any) -> Any:

        f = _keywords(fun, kwargs)
        selected = _Selected(args, argnums, "jacrev")
        partial = selected.partial(f, has_aux, "jacrev")

        def main(*leaves: Any) -> Any:
            return partial(*leaves)[0] if has_aux else partial(*leaves)

        out, pullback = vjp(main, *selected.leaves)
        out_leaves, out_def = flatten(out)
        out_metas = [asarray(o).meta for o in out_leaves]
        for meta in out_metas:
            if meta.dtype.kind == "c" and any(m.dtype.kind != "c" for m in selected.metas):
                raise DTypeError(
                    "jacrev",
                    f"an output is {meta.dtype} but an argument is real: reverse mode would "
                    f"drop the imaginary part of the derivative; use jacfwd",
                )
            if meta.dtype.kind not in "fc":
                raise DTypeError("jacrev", f"cannot differentiate a {meta.dtype} output")
        basis = _basis(out_metas)

        def pullback_tree(*cotangents: Any) -> Any:
            return pullback(unflatten(out_def, list(cotangents)))

        rows = vmap(pullback_tree)(*basis)  # per selected leaf: (M, *in_shape)
        blocks = []
        start = 0
        for meta in out_metas:
            per_input = []
            for row, in_meta in zip(rows, selected.metas, strict=True):
                block = _rows(row, start, meta.size)  # (m_o, *in_shape)
                block = lax.reshape(block, (*meta.shape, *in_meta.shape))
                if meta.dtype.kind == "c":
                    block = lax.conj(block)
                per_input.append(block)
            start += meta.size
            blocks.append(selected.arrange(per_input))
        result = unflatten(out_def, blocks)
        if has_aux:
            return result, _aux_pair(f(*args), "jacrev")[1]
        return result

    return jacobian_rev


jacobian = jacrev
"""``jacobian`` is ``jacrev`` (as ``torch.autograd.functional.jacobian`` is reverse mode)."""


def hessian(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[P, Any]:
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))`` (forward over reverse),
    of shape ``S + S`` for an argument of shape ``S``. With ``has_aux``, ``(hessian, aux)``."""
    argnums = _check(fun, argnums, has_aux, "hessian")
    if not has_aux:
        second = jacfwd(jacrev(fun, argnums), argnums)
    else:
        gradient = jacrev(fun, argnums, has_aux=True)
        second = jacfwd(lambda *args, **kwargs: gradient(*args, **kwargs)[0], argnums)

    @functools.wraps(fun, updated=())
    def hessian_of(*args: Any, **kwargs: Any) -> Any:
        argnum_positions("hessian", argnums, len(args))  # named as the caller's transform
        if not has_aux:
            return second(*args, **kwargs)
        return second(*args, **kwargs), _aux_pair(fun(*args, **kwargs), "hessian")[1]

    return hessian_of


# ---------------------------------------------------------------------- helpers


def _keywords(fun: Callable[..., Any], kwargs: dict[str, Any]) -> Callable[..., Any]:
    """``fun`` with the keyword arguments of a call bound: they are passed through,
    never differentiated (as JAX's Jacobian transforms do)."""
    return functools.partial(fun, **kwargs) if kwargs else fun


def _check(fun: Any, argnums: Any, has_aux: Any, op: str) -> int | tuple[int, ...]:
    """``argnums`` read (see :func:`~tenferro.core.params.as_argnums`), once ``fun`` and
    ``has_aux`` are checked."""
    if not callable(fun):
        raise ArgumentTypeError(op, f"expected a callable function, got {fun!r}")
    positions = as_argnums(op, argnums)
    check_flag(op, "has_aux", has_aux)
    return positions


class _Selected:
    """The arguments differentiated with respect to, flattened: each selected argument
    once (a repeated argnum is differentiated once and its block given at each place it
    is listed, see :func:`~tenferro.core.params.argnum_positions`)."""

    def __init__(self, args: tuple[Any, ...], argnums: int | tuple[int, ...], op: str) -> None:
        self.single = isinstance(argnums, int)
        self.positions = argnum_positions(op, argnums, len(args))
        self.distinct = tuple(dict.fromkeys(self.positions))
        self.args = list(args)
        self.leaves: list[Any] = []
        self.treedefs: list[TreeDef] = []
        self.counts: list[int] = []
        for position in self.distinct:
            leaves, treedef = flatten(args[position])
            tensors = [asarray(leaf) for leaf in leaves]
            for tensor in tensors:
                if tensor.meta.dtype.kind not in "fc":
                    raise DTypeError(
                        op,
                        f"cannot differentiate with respect to a {tensor.meta.dtype} argument "
                        f"(argument {position}); pass floating or complex values",
                    )
            self.leaves.extend(tensors)
            self.treedefs.append(treedef)
            self.counts.append(len(tensors))
        self.metas = [t.meta for t in self.leaves]

    def partial(self, fun: Callable[..., Any], has_aux: bool, op: str) -> Callable[..., Any]:
        """``fun`` as a function of the selected leaves only."""

        def restricted(*leaves: Any) -> Any:
            full = list(self.args)
            start = 0
            for position, treedef, count in zip(
                self.distinct, self.treedefs, self.counts, strict=True
            ):
                full[position] = unflatten(treedef, list(leaves[start : start + count]))
                start += count
            result = fun(*full)
            return _aux_pair(result, op) if has_aux else result

        return restricted

    def segments(self) -> list[tuple[int, Any]]:
        """For each selected leaf, its first row in the stacked basis and its meta."""
        found, start = [], 0
        for meta in self.metas:
            found.append((start, meta))
            start += meta.size
        return found

    def arrange(self, blocks: list[Any]) -> Any:
        """One block per selected leaf, in the selected arguments' structure (a repeated
        argnum's at each of its places)."""
        per_argument, start = {}, 0
        for position, treedef, count in zip(self.distinct, self.treedefs, self.counts, strict=True):
            per_argument[position] = unflatten(treedef, blocks[start : start + count])
            start += count
        if self.single:
            return per_argument[self.positions[0]]
        return tuple(per_argument[p] for p in self.positions)


def _basis(metas: Sequence[Any]) -> list[Any]:
    """The standard basis of the flattened leaves: for each leaf, its ``(N, *shape)`` slice
    of an ``N x N`` identity (``N`` the total size), in the leaf's dtype."""

    total = sum(m.size for m in metas)
    basis, start = [], 0
    for meta in metas:
        eye = np.zeros((total, meta.size), meta.dtype)
        eye[start : start + meta.size] = np.eye(meta.size, dtype=meta.dtype)
        basis.append(Tensor(eye.reshape((total, *meta.shape))))
        start += meta.size
    return basis


def _rows(x: Any, start: int, count: int) -> Any:
    """``x[start:start + count]`` along the leading axis."""
    shape = x.meta.shape
    return lax.slice(x, (start, *(0,) * (len(shape) - 1)), (start + count, *shape[1:]))


def _aux_pair(result: Any, op: str) -> tuple[Any, Any]:
    """``(output, aux)`` of a ``has_aux`` function's result (the aux is taken from a plain
    call at the primal point, so it is returned as the function returned it)."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise ArgumentTypeError(
            op, "with has_aux=True the function must return a pair (output, aux)"
        )
    return result[0], result[1]
