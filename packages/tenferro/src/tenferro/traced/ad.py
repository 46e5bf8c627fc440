"""Derivatives of traced values: vjp, jvp, grad, checkpoint.

``vjp`` linearises the outputs with respect to the leaves (tidu ``linearize``)
and runs the transpose sweep into a builder whose seeds are the given cotangents
(``linear_transpose_with_builder``); ``jvp`` runs the forward sweep with the
given tangents as seeds (``linearize_with_builder``). Either way the results are
ordinary traced values (structural keys depending on the seeds), so derivatives
of derivatives need nothing special.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from computegraph import External, Input, Linearized, gc_paused, structural_view
from tenferro import lax
from tenferro.core.keys import AliasKey, CheckpointKey
from tenferro.core.kinds import asarray
from tenferro.dtypes import is_inexact
from tenferro.errors import BindingError, DTypeError, InactiveError, NonScalarError, ShapeError
from tenferro.ops.structural import Convert
from tenferro.traced.program import ALIASES
from tenferro.traced.tensor import TracedTensor, provide
from tidu import (
    GraphPrimitiveBuilder,
    fresh_pass_id,
    linear_transpose_with_builder,
    linearize,
    linearize_with_builder,
)

__all__ = ["checkpoint", "grad", "jvp", "jvp_tensors", "vjp", "vjp_tensors"]

_SEED = Linearized((True,))


def _leaf_names(wrt: Sequence[TracedTensor]) -> list[Any]:
    """The input names of leaf tensors (``wrt`` holds only leaves)."""
    return [cast(Input, w.key).key for w in wrt]


def _seed(builder: GraphPrimitiveBuilder, value: TracedTensor) -> int:
    """A local id in ``builder`` standing for ``value`` (an identity conversion)."""
    identity = Convert.make((value.meta,), dtype=value.meta.dtype)
    (local,) = builder.add_primitive(identity, [External(value.key)], _SEED)
    return local


def _traced(value: Any) -> TracedTensor:
    """``value`` as a traced tensor (concrete values become constants)."""
    tensor = asarray(value)
    return tensor if isinstance(tensor, TracedTensor) else TracedTensor._lift(tensor)


def _leaves(wrt: Any, op: str) -> tuple[list[TracedTensor], bool]:
    single = isinstance(wrt, TracedTensor)
    leaves = [wrt] if single else list(wrt)
    for position, leaf in enumerate(leaves):
        if not isinstance(leaf, TracedTensor) or type(leaf.key) is not Input:
            raise ShapeError(
                op,
                f"wrt[{position}] must be a leaf TracedTensor (a placeholder, traced data or a "
                f"function argument), got {leaf!r}",
            )
        if not is_inexact(leaf.meta.dtype):
            raise DTypeError(
                op,
                f"wrt[{position}] is {leaf.meta.dtype}; only floating and complex values have "
                f"derivatives",
            )
    return leaves, single


def _check_like(op: str, what: str, given: Any, expected: Any) -> None:
    if given.shape != expected.shape or given.dtype != expected.dtype:
        raise ShapeError(op, f"{what} is {given.describe()}, expected {expected.describe()}")


def vjp_tensors(
    outputs: Sequence[TracedTensor],
    wrt: Sequence[TracedTensor],
    cotangents: Sequence[TracedTensor],
) -> list[TracedTensor | None]:
    """``J^H c`` per leaf (``None`` where nothing flows back). Bulk graph work: runs with
    the cyclic garbage collector paused (as do the other builders of the stack)."""
    with gc_paused():
        return _vjp_tensors(outputs, wrt, cotangents)


def _vjp_tensors(
    outputs: Sequence[TracedTensor],
    wrt: Sequence[TracedTensor],
    cotangents: Sequence[TracedTensor],
) -> list[TracedTensor | None]:
    linear = linearize(
        structural_view(),
        [o.key for o in outputs],
        _leaf_names(wrt),
        fresh_pass_id(),
        None,
        ALIASES,
    )
    builder = GraphPrimitiveBuilder()
    seeds = [
        None if local is None else _seed(builder, cotangent)
        for local, cotangent in zip(linear.tangent_outputs, cotangents, strict=True)
    ]
    results = linear_transpose_with_builder(linear, builder, seeds)
    return [
        None if r is None else TracedTensor(builder.global_key(r), w.meta._replace(weak=False))
        for r, w in zip(results, wrt, strict=True)
    ]


def jvp_tensors(
    outputs: Sequence[TracedTensor],
    wrt: Sequence[TracedTensor],
    tangents: Sequence[TracedTensor],
) -> list[TracedTensor | None]:
    """``J t`` per output (``None`` where the output does not depend on the leaves);
    with the cyclic garbage collector paused."""
    with gc_paused():
        return _jvp_tensors(outputs, wrt, tangents)


def _jvp_tensors(
    outputs: Sequence[TracedTensor],
    wrt: Sequence[TracedTensor],
    tangents: Sequence[TracedTensor],
) -> list[TracedTensor | None]:
    builder = GraphPrimitiveBuilder()
    seeds = [_seed(builder, t) for t in tangents]
    results = linearize_with_builder(
        structural_view(),
        [o.key for o in outputs],
        _leaf_names(wrt),
        builder,
        seeds,
        None,
        ALIASES,
    )
    return [
        None if r is None else TracedTensor(builder.global_key(r), o.meta._replace(weak=False))
        for r, o in zip(results, outputs, strict=True)
    ]


def _finish(op: str, results: list[Any], single: bool, optional: bool, names: str) -> Any:
    if not optional:
        missing = [i for i, r in enumerate(results) if r is None]
        if missing:
            raise InactiveError(
                op,
                f"the output does not depend on {names} {missing}; pass allow_unused=True "
                f"to get None there",
            )
    return results[0] if single else results


def vjp(output: TracedTensor, wrt: Any, cotangent: Any, optional: bool) -> Any:
    leaves, single = _leaves(wrt, "vjp")
    seed = _traced(cotangent)
    _check_like("vjp", "the cotangent", seed.meta, output.meta)
    return _finish("vjp", vjp_tensors([output], leaves, [seed]), single, optional, "wrt")


def jvp(output: TracedTensor, wrt: Any, tangent: Any, optional: bool) -> Any:
    leaves, single = _leaves(wrt, "jvp")
    given = [tangent] if single else list(tangent)
    if len(given) != len(leaves):
        raise ShapeError("jvp", f"{len(given)} tangent(s) for {len(leaves)} leaves")
    tangents = [_traced(t) for t in given]
    for position, (t, leaf) in enumerate(zip(tangents, leaves, strict=True)):
        _check_like("jvp", f"tangent {position}", t.meta, leaf.meta)
    (result,) = jvp_tensors([output], leaves, tangents)
    if result is None and not optional:
        raise InactiveError(
            "jvp", "the output does not depend on the leaves; pass allow_unused=True to get None"
        )
    return result


def grad(output: TracedTensor, wrt: Any, optional: bool) -> Any:
    """The gradient of a real scalar (conjugate convention for complex leaves)."""
    if output.meta.shape != ():
        raise NonScalarError(
            "grad",
            f"needs a scalar output, got shape {output.meta.shape}; use vjp with a cotangent",
        )
    if output.meta.dtype.kind != "f":
        raise DTypeError(
            "grad", f"needs a real floating output, got {output.meta.dtype}; use vjp for others"
        )
    leaves, single = _leaves(wrt, "grad")
    seed = lax.full_like(output, 1)
    return _finish("grad", vjp_tensors([output], leaves, [seed]), single, optional, "wrt")


def checkpoint(value: TracedTensor) -> TracedTensor:
    """Evaluate ``value`` and continue from the stored result; derivatives flow through the
    original computation. Inside a traced function (unbound inputs) it cannot be evaluated
    and is an alias instead."""
    try:
        data = value.eval()
    except BindingError:
        return TracedTensor(Input(AliasKey(value.meta, value.key)), value.meta)
    meta = value.meta
    return TracedTensor(Input(CheckpointKey(meta, data.numpy(), value.key)), meta)


provide(grad=grad, vjp=vjp, jvp=jvp, checkpoint=checkpoint)  # TracedTensor's AD methods
