"""Users' functions as closed computations: what the iterative solvers run, apply and
differentiate.

An iterative solver takes a function (an operator ``v -> A v``, a fixed-point map
``x -> f(x, params)``) that may read tensors from its enclosing scope: a Hamiltonian's
couplings, the site tensors of a transfer matrix, values being differentiated by an
enclosing transform or recorded on a tape. :func:`close` traces the function once on
fresh leaves and *closure-converts* it (as JAX's ``closure_convert``): every value the
computation reads that does not depend on its arguments becomes an explicit input, and
the function becomes a :class:`ClosedFunction` -- a computation over numbered inputs
(``ArgKey(i)``) and structural constants only. The values it captured come back as the
operands the solver's primitive is bound to, so derivatives reach them through the
solver's own rule, in every mode.

A closed function is structure (it holds no data), so the derived computations a
solver needs are made once per structure and cached: its compiled program
(:meth:`ClosedFunction.run`), its JVP (:meth:`ClosedFunction.jvp`) and its VJP
(:meth:`ClosedFunction.vjp`), themselves closed functions, so derivatives of any order
come from the same machinery. Inside an AD rule :meth:`ClosedFunction.emit` writes the
computation into the rule's graph.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, cast

import numpy as np

from computegraph import After, BoundedCache, Derived, Input, OperationKey, ValueKey, fold, rewrite
from tenferro import lax
from tenferro.concrete import Tensor
from tenferro.core.bind import bind
from tenferro.core.keys import AliasKey, ArgKey, LeafKey
from tenferro.core.kinds import asarray
from tenferro.core.primitive import TensorPrimitive
from tenferro.core.rules import RuleValue
from tenferro.errors import TenferroError
from tenferro.meta import Meta
from tenferro.traced.ad import jvp_tensors, vjp_tensors
from tenferro.traced.program import TracedProgram
from tenferro.traced.replay import replay
from tenferro.traced.tensor import EAGER_CAPTURE, TracedTensor
from tenferro.traced.tracing import call_traced

__all__ = ["ClosedFunction", "close"]


class _Local:
    """Argument ``position`` of a function being closed (compared by identity: the
    leaves of one trace are told from every other key)."""

    __slots__ = ("__weakref__", "meta", "position")

    def __init__(self, position: int, meta: Meta) -> None:
        self.position = position
        self.meta = meta

    def __repr__(self) -> str:
        return f"local{self.position}:{self.meta.describe()}"


class ClosedFunction:
    """A function of ``len(inputs)`` positional tensors as a traced computation: its
    ``outputs`` are keys over ``Input(ArgKey(i, inputs[i]))`` and constants. Equal
    (and hashable) by structure, so it serves as a primitive's parameter."""

    __slots__ = ("_hash", "inputs", "output_metas", "outputs")

    def __init__(
        self,
        outputs: tuple[ValueKey, ...],
        inputs: tuple[Meta, ...],
        output_metas: tuple[Meta, ...],
    ) -> None:
        self.outputs = outputs
        self.inputs = inputs
        self.output_metas = output_metas
        self._hash = hash((outputs, inputs))

    def __eq__(self, other: object) -> bool:
        return self is other or (
            type(other) is ClosedFunction
            and self.outputs == other.outputs
            and self.inputs == other.inputs
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        ins = ", ".join(m.describe() for m in self.inputs)
        outs = ", ".join(m.describe() for m in self.output_metas)
        return f"closed({ins}) -> ({outs})"

    def leaves(self) -> list[TracedTensor]:
        """Traced leaves standing for the inputs."""
        return [TracedTensor(Input(ArgKey(i, m)), m) for i, m in enumerate(self.inputs)]

    def traced_outputs(self) -> list[TracedTensor]:
        return [TracedTensor(k, m) for k, m in zip(self.outputs, self.output_metas, strict=True)]

    # ------------------------------------------------------------------ application

    def apply(self, values: Sequence[Any]) -> list[TracedTensor]:
        """The computation applied to traced (or concrete) ``values``: its outputs, as
        traced values of the computation ``values`` belong to."""
        keys = [_as_traced(v).key for v in values]
        count = len(keys)

        def substitute(key: ValueKey) -> ValueKey:
            name = key.key if type(key) is Input else None
            if type(name) is ArgKey and name.position < count:
                return keys[name.position]
            return key

        rewritten = rewrite(self.outputs, substitute)
        return [TracedTensor(k, m) for k, m in zip(rewritten, self.output_metas, strict=True)]

    def emit(self, name: str, values: Sequence[RuleValue]) -> list[RuleValue]:
        """The computation emitted into the scope of the AD rule ``values`` belong to."""
        count = len(values)

        def position(input_name: Hashable) -> int | None:
            if type(input_name) is ArgKey and input_name.position < count:
                return input_name.position
            return None

        like = next(v for v in values if v is not None)
        return replay(name, values, self.outputs, like, position)

    def run(self, arrays: Sequence[Any]) -> list[Any]:
        """The outputs (numpy arrays) on the input ``arrays``."""
        program = _PROGRAMS.get_or_create(self, lambda: TracedProgram(self.outputs))
        return program.run(arrays)

    # ------------------------------------------------------------------ derivatives

    def jvp(self, active: tuple[bool, ...]) -> ClosedFunction:
        """The JVP with respect to the ``active`` inputs: a closed function of the inputs
        followed by one tangent per active input, giving one tangent per output (zeros
        where an output does not depend on them)."""
        return _DERIVED.get_or_create((self, "jvp", active), lambda: self._jvp(active))

    def _jvp(self, active: tuple[bool, ...]) -> ClosedFunction:
        leaves = self.leaves()
        wrt = [leaf for leaf, a in zip(leaves, active, strict=True) if a]
        count = len(leaves)
        tangents = [
            TracedTensor(Input(ArgKey(count + j, w.meta)), w.meta) for j, w in enumerate(wrt)
        ]
        outputs = self.traced_outputs()
        results = jvp_tensors(outputs, wrt, tangents) if wrt else [None] * len(outputs)
        filled = [_or_zeros(r, o.meta, outputs[0]) for r, o in zip(results, outputs, strict=True)]
        return ClosedFunction(
            tuple(r.key for r in filled),
            (*self.inputs, *(t.meta for t in tangents)),
            tuple(r.meta for r in filled),
        )

    def vjp(self, wrt: tuple[int, ...]) -> ClosedFunction:
        """The VJP with respect to the inputs at positions ``wrt`` (conjugate
        convention: ``J^H c``): a closed function of the inputs followed by one
        cotangent per output, giving one cotangent per position in ``wrt``."""
        return _DERIVED.get_or_create((self, "vjp", wrt), lambda: self._vjp(wrt))

    def _vjp(self, wrt: tuple[int, ...]) -> ClosedFunction:
        leaves = self.leaves()
        count = len(leaves)
        outputs = self.traced_outputs()
        cotangents = [
            TracedTensor(Input(ArgKey(count + j, o.meta._replace(weak=False))), o.meta)
            for j, o in enumerate(outputs)
        ]
        chosen = [leaves[i] for i in wrt]
        results = vjp_tensors(outputs, chosen, cotangents)
        filled = [_or_zeros(r, w.meta, outputs[0]) for r, w in zip(results, chosen, strict=True)]
        return ClosedFunction(
            tuple(r.key for r in filled),
            (*self.inputs, *(c.meta for c in cotangents)),
            tuple(r.meta for r in filled),
        )


_PROGRAMS: BoundedCache[ClosedFunction, TracedProgram] = BoundedCache(
    256, "closed-function programs"
)
"""Compiled programs of closed functions (structure only)."""

_DERIVED: BoundedCache[Any, ClosedFunction] = BoundedCache(512, "closed-function derivatives")
"""Derivatives and other closed functions derived from one, by what was derived."""


def derived(key: Hashable, make: Callable[[], ClosedFunction]) -> ClosedFunction:
    """A closed function derived from others, made once per ``key`` (which must hold the
    closed functions it is made of: structure only)."""
    return _DERIVED.get_or_create(key, make)


def _or_zeros(value: TracedTensor | None, meta: Meta, like: TracedTensor) -> TracedTensor:
    if value is not None:
        return value
    return lax.zeros(meta._replace(weak=False), like)


def _as_traced(value: Any) -> TracedTensor:
    tensor = asarray(value)
    return tensor if isinstance(tensor, TracedTensor) else TracedTensor._lift(tensor)


# ---------------------------------------------------------------------- closure conversion


def close(
    name: str, fun: Callable[..., Sequence[Any]], metas: Sequence[Meta]
) -> tuple[ClosedFunction, list[Any]]:
    """``fun`` (taking ``len(metas)`` tensors positionally, returning a sequence of
    tensors) as a closed function, and the values it captured.

    The closed function's inputs are ``metas`` followed by one input per captured value;
    the captured values are returned as tensors of their own kinds (tracked
    ``EagerTensor``s, ``Tensor``s, or traced values of an enclosing computation), to be
    passed as operands after the arguments. ``name`` names the caller in errors.
    """
    args = [TracedTensor(Input(_Local(i, m)), m) for i, m in enumerate(metas)]
    eager: dict[int, Any] = {}

    def capture(tensor: Any) -> TracedTensor:
        """A tracked EagerTensor the function read: a leaf standing for it."""
        leaf = LeafKey(tensor.meta, np.asarray(tensor._value), "solver_capture")
        eager[id(leaf)] = tensor
        return TracedTensor(Input(leaf), tensor.meta)

    token = EAGER_CAPTURE.set(capture)
    try:
        results = call_traced(fun, args)
    finally:
        EAGER_CAPTURE.reset(token)
    outputs = []
    for position, value in enumerate(results):
        try:
            outputs.append(_as_traced(value))
        except TenferroError:
            raise TenferroError(
                name,
                f"the function returned a {type(value).__name__} at output {position}, "
                f"expected a tensor",
            ) from None
    keys, captured = _convert([o.key for o in outputs], len(metas))
    operands = [_operand(key, eager) for key in captured]
    closed = ClosedFunction(
        tuple(keys),
        (*(m._replace(weak=False) for m in metas), *(_meta_of(k) for k in captured)),
        tuple(o.meta._replace(weak=False) for o in outputs),
    )
    return closed, operands


# A value of the walk: (its key in the closed computation, whether it depends on the
# arguments, whether it reads any input at all).
_Value = tuple[ValueKey, bool, bool]


def _convert(outputs: list[ValueKey], count: int) -> tuple[list[ValueKey], list[ValueKey]]:
    """``outputs`` rewritten over ``ArgKey`` inputs: the arguments' leaves become
    ``ArgKey(0..count-1)``, and each largest part of the computation that reads inputs
    but not the arguments becomes a further ``ArgKey`` (returned in order, as the keys
    of the values it stands for). Constants (computations reading no input) stay."""
    captured: dict[int, ValueKey] = {}
    order: list[ValueKey] = []

    def capture(value: _Value) -> ValueKey:
        key, dependent, reads = value
        if dependent or not reads:
            return key
        found = captured.get(id(key))
        if found is None:
            found = Input(ArgKey(count + len(order), _meta_of(key)))
            captured[id(key)] = found
            order.append(key)
        return found

    def leaf(key: ValueKey) -> _Value | After[_Value]:
        name = key.key if type(key) is Input else None
        if type(name) is _Local:
            return (Input(ArgKey(name.position, name.meta._replace(weak=False))), True, True)
        if type(name) is AliasKey:  # a transform applied inside the function
            return After(name.origin, lambda origin: _alias(key, origin))
        return (key, False, True)

    def operation(operation_key: OperationKey, inputs: list[_Value]) -> tuple[Any, bool, bool]:
        if not any(dependent for _, dependent, _ in inputs):
            return (operation_key, False, any(reads for _, _, reads in inputs))
        rebuilt = OperationKey(
            operation_key.operation, tuple(capture(v) for v in inputs), operation_key.role
        )
        return (rebuilt, True, True)

    def output(result: tuple[Any, bool, bool], key: Derived) -> _Value:
        operation_key, dependent, reads = result
        return (Derived(operation_key, key.output_slot) if dependent else key, dependent, reads)

    values = fold(outputs, operation, output, leaf)
    return [capture(v) for v in values], order


def _alias(key: ValueKey, origin: _Value) -> _Value:
    """An alias whose origin depends on the arguments stands for it; any other alias
    is a value read from outside, like any input."""
    return origin if origin[1] else (key, False, True)


def _meta_of(key: ValueKey) -> Meta:
    if type(key) is Input:
        meta: Meta = key.key.meta  # type: ignore[attr-defined]
    else:
        assert type(key) is Derived
        meta = key.operation_key.operation.outputs[key.output_slot]  # type: ignore[attr-defined]
    return meta._replace(weak=False)


def _operand(key: ValueKey, eager: dict[int, Any]) -> Any:
    """The tensor a captured key stands for, of its own kind: a tracked EagerTensor the
    function read, a concrete Tensor, a traced value of an enclosing computation -- or,
    for a computation on those that does not depend on the arguments (``theta * 2``,
    a broadcast of a captured scalar), that computation applied to them now (recorded
    on the tape, evaluated, or traced, as any operation on them would be)."""
    name = key.key if type(key) is Input else None
    if name is not None:
        return _outer_leaf(key, eager)
    if not _reads_concrete(key, eager):
        return TracedTensor(key, _meta_of(key))

    def operation(operation_key: OperationKey, operands: list[Any]) -> tuple[Any, ...]:
        primitive = cast(TensorPrimitive, operation_key.operation)
        return bind(primitive, operands, operands[0] if operands else _CONCRETE)

    def output(results: tuple[Any, ...], derived_key: Derived) -> Any:
        return results[derived_key.output_slot]

    return fold([key], operation, output, lambda k: _outer_leaf(k, eager))[0]


_CONCRETE = Tensor(np.zeros(()))
"""The kind constants of a concrete computation are made in."""


def _outer_leaf(key: ValueKey, eager: dict[int, Any]) -> Any:
    name = key.key if type(key) is Input else None
    found = eager.get(id(name))
    if found is not None:
        return found
    if type(name) is LeafKey and name.label == "const":
        return Tensor._wrap(name.data, name.meta.weak)
    return TracedTensor(key, _meta_of(key))


def _reads_concrete(key: ValueKey, eager: dict[int, Any]) -> bool:
    """Whether the computation of ``key`` reads a captured EagerTensor or a concrete
    constant (then it is applied to them again, outside the trace)."""

    def leaf(k: ValueKey) -> bool:
        name = k.key if type(k) is Input else None
        return id(name) in eager or (type(name) is LeafKey and name.label == "const")

    def operation(operation_key: OperationKey, inputs: list[bool]) -> bool:
        return any(inputs)

    return fold([key], operation, lambda result, _key: result, leaf)[0]
