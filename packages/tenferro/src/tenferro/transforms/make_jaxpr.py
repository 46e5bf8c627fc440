"""``make_jaxpr``: the program a function computes, printed (``jax.make_jaxpr``'s
habit): ``print(tf.make_jaxpr(f)(x))`` lists its operations without evaluating them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tenferro.core.params import as_int_or_ints
from tenferro.core.pytree import flatten, unflatten
from tenferro.errors import ArgumentTypeError, ParameterError
from tenferro.traced.program import format_graph, graph_to_dot
from tenferro.traced.tensor import TracedTensor, placeholder, traced

__all__ = ["FunctionProgram", "make_jaxpr"]


class FunctionProgram:
    """The program a function computes for arguments of given shapes and dtypes, made by
    :func:`make_jaxpr`: ``str()`` is its listing (one operation per line, as
    :func:`format_graph`), :meth:`to_dot` its Graphviz drawing; ``outputs`` are the traced
    results (the function's output structure), ``inputs`` the placeholders standing for
    the arguments, named ``a0``, ``a1`` ... in argument order (pytree leaves in order)."""

    __slots__ = ("_traced", "inputs", "outputs")

    def __init__(self, inputs: list[Any], outputs: Any, traced: list[Any]) -> None:
        self.inputs = inputs
        self.outputs = outputs
        self._traced = traced

    def __str__(self) -> str:
        return format_graph(*self._traced)

    def __repr__(self) -> str:
        return str(self)

    def to_dot(self) -> str:
        """The program as Graphviz DOT source."""
        return graph_to_dot(*self._traced)


def make_jaxpr(function: Any, static_argnums: int | Sequence[int] = ()) -> Any:
    """``jax.make_jaxpr`` for tenferro: ``make_jaxpr(f)(*args, **kwargs)`` traces ``f``
    with placeholders of the arguments' shapes and dtypes (tensors, arrays and numbers,
    in pytrees) and returns its :class:`FunctionProgram`, whose ``str()`` lists the
    operations. Arguments at ``static_argnums`` are passed as they are. Nothing is
    evaluated; data the function closes over appears as constants."""
    if not callable(function):
        raise ArgumentTypeError("make_jaxpr", f"needs a callable, got {function!r}")
    listed = as_int_or_ints("make_jaxpr", "static_argnums", static_argnums, ArgumentTypeError)

    def trace(*args: Any, **kwargs: Any) -> FunctionProgram:
        count = len(args)
        if any(not -count <= p < count for p in listed):
            raise ParameterError(
                "make_jaxpr",
                f"static_argnums {static_argnums!r} out of range for {count} positional "
                f"argument(s)",
            )
        static = {p % count for p in listed}
        inputs: list[Any] = []

        def stand_in(leaf: Any) -> Any:
            if isinstance(leaf, (str, bytes)) or leaf is None or callable(leaf):
                return leaf
            meta = getattr(leaf, "meta", None)
            if meta is None:
                try:
                    array = np.asarray(leaf)
                except Exception:
                    return leaf
                if array.dtype == object:
                    return leaf
                shape, dtype = array.shape, array.dtype
            else:
                shape, dtype = meta.shape, meta.dtype
            made = placeholder(shape, dtype, name=f"a{len(inputs)}")
            inputs.append(made)
            return made

        traced_args = []
        for position, value in enumerate(args):
            if position in static:
                traced_args.append(value)
                continue
            leaves, tree = flatten(value)
            traced_args.append(unflatten(tree, [stand_in(leaf) for leaf in leaves]))
        leaves, tree = flatten(kwargs)
        traced_kwargs = unflatten(tree, [stand_in(leaf) for leaf in leaves])
        result = function(*traced_args, **traced_kwargs)
        out_leaves, out_tree = flatten(result)
        outputs = [leaf if isinstance(leaf, TracedTensor) else traced(leaf) for leaf in out_leaves]
        return FunctionProgram(inputs, unflatten(out_tree, outputs), outputs)

    trace.__name__ = f"make_jaxpr({getattr(function, '__name__', 'function')})"
    return trace
