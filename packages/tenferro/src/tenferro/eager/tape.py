"""``Tape``: where eager invocations are recorded, and the reverse and forward passes.

A tape records each primitive applied to tracked tensors as a node of
:mod:`tidu.eager` (the primitive as a one-operation graph over canonical input
names, so every invocation of one primitive shares one cached derivative; the plans
of :mod:`tenferro.eager.record_plans` say how). The derivatives are the primitives'
own JVP and transpose rules, the same ones traced mode uses: reverse mode runs the
transposed linear map of each node (compiled once per structure), forward mode its
linear map.

Differentiating through a backward pass (``create_graph=True``) runs the same
programs through the eager surface, so their operations land on the tape too and
can be differentiated again (Hessian-vector products, any order).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from computegraph import DictCache, Input, ValueKey
from tenferro import lax
from tenferro.concrete import Tensor
from tenferro.core.bind import bind
from tenferro.core.flags import check_flag, check_optional_flag
from tenferro.core.primitive import ADD_ANY, AddAny, TensorPrimitive
from tenferro.eager.extents import specialize, specialize_evaluation
from tenferro.eager.record_plans import instance_plan
from tenferro.eager.tensor import EagerTensor, _OutputKey, provide_tape
from tenferro.errors import (
    DTypeError,
    InactiveError,
    NonScalarError,
    ReleasedGraphError,
    ShapeError,
    TenferroError,
    one_warning_per_call,
)
from tenferro.ieee import quiet, restore
from tenferro.meta import Meta
from tidu import ReleasedGraphError as _Released
from tidu.eager import (
    ProgramExecutor,
    Recorder,
    Trace,
    backward,
    contributing_nodes,
    default_derivative_cache,
    forward,
)

__all__ = ["Tape", "default_tape"]


def _refuse_tracked(data: Any) -> None:
    """Tracking a tracked tensor would silently cut it from the tape it belongs to."""
    if isinstance(data, EagerTensor) and data.tape is not None:
        raise TenferroError(
            "track",
            f"{data!r} is already tracked; track data.detach() to start a new leaf from its value",
        )


class Tape:
    """Records operations on tracked tensors and differentiates them.

    * ``track(x)``: a tracked leaf holding ``x``;
    * ``grad(output, wrt)``: gradients (VJP with a seed of one for a real scalar
      output) returned, never accumulated into ``.grad`` (``torch.autograd.grad``);
    * ``backward(output, seed)``: accumulated into ``.grad`` of the leaves
      (``torch.autograd.backward``);
    * ``vjp(output, wrt, cotangent)``; ``jvp(f, primals, tangents)`` (forward mode);
      ``hvp(f, primals, tangents)`` (forward over reverse);
    * ``create_graph=True`` records the backward pass itself, for higher order.

    As in PyTorch, a reverse pass frees each node's saved values once it has used them
    (``retain_graph=False``, the default unless ``create_graph=True``), so backward
    peaks near the liveness minimum; a later pass through those nodes raises
    :class:`~tenferro.ReleasedGraphError`. Pass ``retain_graph=True`` to differentiate
    one graph more than once.
    """

    def __init__(self) -> None:
        self._recorder = Recorder()
        """Records composite nodes (checkpointed segments); primitives are recorded by
        ``EagerTensor._bind``."""
        self._counter = itertools.count()
        """Eager keys of this tape: ``Input.unique`` of fresh integers."""
        self._leaves: weakref.WeakValueDictionary[ValueKey, EagerTensor] = (
            weakref.WeakValueDictionary()
        )
        self._leaves_lock = threading.Lock()
        """Guards ``_leaves``: threads may track leaves while another zeroes gradients."""
        self._derivatives = default_derivative_cache
        self._plain = ProgramExecutor(ADD_ANY, specialize=specialize_evaluation)
        self._recording = _RecordingExecutor(self)

    # ------------------------------------------------------------------ leaves

    def track(self, data: Any, dtype: Any = None) -> EagerTensor:
        """A tracked leaf of this tape holding ``data`` (copied unless it is a tensor).
        A tensor that is already tracked is refused: track ``x.detach()`` instead."""
        _refuse_tracked(data)
        tensor = EagerTensor(data, dtype)
        self.adopt_leaf(tensor)
        return tensor

    def adopt_leaf(self, tensor: EagerTensor) -> None:
        """Make a detached tensor a tracked leaf of this tape."""
        tensor._check_trackable()
        if tensor.tape is not None:
            raise TenferroError("track", "the tensor is already tracked; detach() it first")
        tensor.key = Input.unique(next(self._counter))
        tensor.tape = self
        if tensor.meta.weak:
            tensor.meta = tensor.meta._replace(weak=False)
        with self._leaves_lock:
            self._leaves[tensor.key] = tensor

    def release_leaf(self, tensor: EagerTensor) -> None:
        """Stop tracking a leaf of this tape in place (PyTorch's ``requires_grad_(False)``
        on a leaf): later operations on it are not recorded, and no backward sets its
        ``.grad`` any more (the gradient it has is kept)."""
        with self._leaves_lock:
            self._leaves.pop(tensor.key, None)
        tensor.key = None
        tensor.tape = None

    def zero_grad(self) -> None:
        """Forget the accumulated gradients of every live leaf of this tape."""
        with self._leaves_lock:
            leaves = list(self._leaves.values())
        for leaf in leaves:
            leaf._grad = None

    # ------------------------------------------------------------------ reverse mode

    def grad(
        self,
        output: EagerTensor,
        wrt: EagerTensor | Sequence[EagerTensor],
        seed: Any = None,
        *,
        create_graph: bool = False,
        allow_unused: bool = False,
        retain_graph: bool | None = None,
    ) -> Any:
        """The gradient of ``output`` with respect to ``wrt`` (one tensor or a sequence),
        returned; ``.grad`` is not touched (``torch.autograd.grad``).

        A non-scalar or complex ``output`` needs a ``seed`` (its cotangent, of its shape
        and dtype). A tensor of ``wrt`` that ``output`` does not depend on raises
        :class:`~tenferro.InactiveError`, or gets ``None`` with ``allow_unused=True``;
        one it depends on only through operations with a zero derivative (``floor``)
        gets zeros. With ``create_graph``, the result is recorded (tracked) and can be
        differentiated again. The saved values of the nodes it runs (those that carry
        cotangents to ``wrt``) are freed as it uses them unless ``retain_graph``
        (default: ``create_graph``) is true; as in PyTorch, that includes a call that
        then raises :class:`~tenferro.InactiveError`.
        """
        _check_reverse_flags("grad", create_graph, allow_unused, retain_graph)
        single = isinstance(wrt, Tensor)
        targets: list[EagerTensor] = [wrt] if isinstance(wrt, EagerTensor) else list(wrt)
        self._check_targets("grad", targets)
        reached: set[Any] = set()
        if isinstance(output, Tensor) and getattr(output, "tape", None) is None:
            self._seed("grad", EagerTensor._lift(output), seed, False)  # still validate it
            cotangents: dict[Any, Any] = {}
        else:
            keep = {t.key for t in targets}
            retain = create_graph if retain_graph is None else retain_graph
            # Gradients of intermediates need no node below them (unless it leads to
            # another target): those are neither run nor freed, as in PyTorch.
            only = (
                contributing_nodes(output.node, keep)
                if isinstance(output, EagerTensor)
                and output.node is not None
                and any(t.node is not None for t in targets)
                else None
            )
            cotangents = self._reverse(
                "grad", output, seed, create_graph, reached, keep, retain, only
            )
        results: list[Any] = []
        unused: list[int] = []
        for position, target in enumerate(targets):
            if target.key in cotangents or target.key in reached:
                results.append(self._result(cotangents.get(target.key), target, create_graph))
            else:
                unused.append(position)
                results.append(None)
        if unused and not allow_unused:
            raise InactiveError("grad", _unused_message(output, unused))
        return results[0] if single else results

    def vjp(
        self,
        output: EagerTensor,
        wrt: EagerTensor | Sequence[EagerTensor],
        cotangent: Any,
        *,
        create_graph: bool = False,
        allow_unused: bool = False,
        retain_graph: bool | None = None,
    ) -> Any:
        """``J^H c`` for each tensor of ``wrt`` (conjugate convention); as :meth:`grad`."""
        _check_reverse_flags("vjp", create_graph, allow_unused, retain_graph)
        return self.grad(
            output,
            wrt,
            cotangent,
            create_graph=create_graph,
            allow_unused=allow_unused,
            retain_graph=retain_graph,
        )

    def backward(
        self,
        output: EagerTensor,
        seed: Any = None,
        *,
        inputs: EagerTensor | Sequence[EagerTensor] | None = None,
        retain_graph: bool = False,
    ) -> None:
        """Reverse mode from ``output``, accumulating into ``.grad`` of every tracked leaf
        it depends on (only of ``inputs`` when given, and then only the nodes leading to
        them run), as ``torch.autograd.backward``.
        ``EagerTensor.backward(seed)`` calls this. Leaves reached only through operations
        with a zero derivative accumulate zeros. Use :meth:`grad` for returned gradients.
        The saved values of the nodes it runs are freed as it uses them unless
        ``retain_graph`` is true.
        """
        retain_graph = check_flag("backward", "retain_graph", retain_graph)
        reached: set[Any] = set()
        if inputs is None:
            cotangents = self._reverse(
                "backward", output, seed, False, reached, (), retain_graph, None
            )
            # Keys of recorded outputs are never leaves: only the others are looked up
            # (the registry's lookup is Python code, and the pass reaches every key);
            # when the tape has fewer live leaves than that, each of them is checked.
            keys = reached | cotangents.keys()
            with self._leaves_lock:
                registry = self._leaves
                if len(registry) < len(keys):
                    leaves = [leaf for key, leaf in registry.items() if key in keys]
                else:
                    find = registry.get
                    leaves = [
                        leaf
                        for key in keys
                        if type(key) is not _OutputKey and (leaf := find(key)) is not None
                    ]
        else:
            # Checked before the pass, which frees saved values: a bad call changes nothing.
            given = [inputs] if isinstance(inputs, EagerTensor) else list(inputs)
            self._check_targets("backward", given, "inputs")
            for position, leaf in enumerate(given):
                if not leaf.is_leaf:
                    raise TenferroError(
                        "backward",
                        f"inputs[{position}] is not a leaf; only leaves accumulate .grad",
                    )
            leaves = list({leaf.key: leaf for leaf in reversed(given)}.values())[::-1]
            keys = {leaf.key for leaf in leaves}
            # Only the nodes that carry cotangents to ``inputs`` run (and are freed).
            node = output.node if isinstance(output, EagerTensor) else None
            only = None if node is None else contributing_nodes(node, keys)
            fed = _fed_keys(only, keys) if only is not None else {getattr(output, "key", None)}
            missing = [p for p, leaf in enumerate(given) if leaf.key not in fed]
            if missing:
                raise InactiveError(
                    "backward",
                    f"{', '.join(f'inputs[{p}]' for p in missing)}: the output does not "
                    f"depend on it; leave it out of inputs",
                )
            cotangents = self._reverse(
                "backward", output, seed, False, reached, (), retain_graph, only
            )
        for leaf in leaves:
            value = self._result(cotangents.get(leaf.key), leaf, False)
            leaf._grad = value if leaf._grad is None else lax.add(leaf._grad, value)

    def _reverse(self, *args: Any) -> dict[Any, Any]:
        """One reverse pass (:meth:`_reverse_pass`), its findings warned once."""
        with one_warning_per_call():
            return self._reverse_pass(*args)

    def _reverse_pass(
        self,
        op: str,
        output: Any,
        seed: Any,
        create_graph: bool,
        reached: set[Any],
        keep: Any,
        retain_graph: bool,
        only: Any,
    ) -> dict[Any, Any]:
        """Cotangents of the tape's inputs and of the keys in ``keep`` (intermediate
        cotangents are freed after their last use; the nodes' saved values too, unless
        ``retain_graph``)."""
        if not isinstance(output, EagerTensor) or output.tape is not self:
            raise TenferroError(
                op,
                "the output is not recorded on this tape (is it computed from tensors "
                "tracked by this tape, outside no_grad?)",
            )
        seed_value = self._seed(op, output, seed, create_graph)
        executor = self._recording if create_graph else self._plain
        token = quiet()  # np.errstate(all="ignore"), for a microsecond less
        try:
            return backward(
                output.key,
                output.node,
                seed_value,
                executor,
                reached=reached,
                keep=keep,
                retain_graph=retain_graph,
                only=only,
            )
        except _Released as error:
            raise _released(op, error.node) from None
        finally:
            restore(token)

    def _seed(self, op: str, output: EagerTensor, seed: Any, create_graph: bool) -> Any:
        meta = output.meta
        if seed is None:
            if meta.shape != ():
                raise NonScalarError(
                    op,
                    f"the output has shape {meta.shape}; pass a seed (cotangent) of that "
                    f"shape, or reduce it to a scalar",
                )
            if meta.dtype.kind != "f":
                raise DTypeError(
                    op,
                    f"an implicit seed of 1 needs a real floating output, got {meta.dtype}; "
                    f"pass a seed (for a complex loss, differentiate a real function of it "
                    f"such as its real part or abs)",
                )
            value: Any = np.ones((), meta.dtype)
        else:
            given = seed if isinstance(seed, Tensor) else Tensor(np.asarray(seed))
            if given.meta.shape != meta.shape:
                raise ShapeError(
                    op, f"the seed has shape {given.meta.shape}, the output {meta.shape}"
                )
            if given.meta.dtype != meta.dtype:
                raise DTypeError(op, f"the seed is {given.meta.dtype}, the output {meta.dtype}")
            if isinstance(given, EagerTensor) and given.tape not in (None, self):
                raise TenferroError(op, "the seed is tracked by another tape")
            if create_graph:
                return given if isinstance(given, EagerTensor) else EagerTensor(given)
            value = given._value
        return EagerTensor(value) if create_graph else value

    def _check_targets(self, op: str, targets: Sequence[Any], name: str = "wrt") -> None:
        for position, target in enumerate(targets):
            if not isinstance(target, EagerTensor) or target.tape is not self:
                raise TenferroError(
                    op,
                    f"{name}[{position}] is not tracked by this tape; only tensors tracked by the "
                    f"tape (leaves or results of operations on them) have gradients",
                )

    def _result(self, cotangent: Any, like: EagerTensor, create_graph: bool) -> EagerTensor:
        meta = like.meta._replace(weak=False)
        if cotangent is None:
            return EagerTensor._make(np.zeros(meta.shape, meta.dtype), meta, None, None, None)
        if isinstance(cotangent, EagerTensor):
            return cotangent if create_graph else cotangent.detach()
        value = np.asarray(cotangent)
        if value.dtype != meta.dtype:
            value = value.astype(meta.dtype)
        return EagerTensor._make(value, meta, None, None, None)

    # ------------------------------------------------------------------ forward mode

    def push_forward(
        self,
        outputs: EagerTensor | Sequence[EagerTensor],
        wrt: EagerTensor | Sequence[EagerTensor],
        tangents: Any,
    ) -> Any:
        """Tangents of ``outputs`` given ``tangents`` of the tracked tensors ``wrt`` (one
        per tensor), by forward mode over what the tape recorded."""
        single_out = isinstance(outputs, Tensor)
        outs: list[Any] = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        single_in = isinstance(wrt, Tensor)
        sources: list[EagerTensor] = [wrt] if isinstance(wrt, EagerTensor) else list(wrt)
        given = [tangents] if single_in else list(tangents)
        self._check_targets("jvp", sources)
        if len(given) != len(sources):
            raise TenferroError("jvp", f"{len(given)} tangent(s) for {len(sources)} input(s)")
        seeds: dict[Any, Any] = {}
        for position, (source, tangent) in enumerate(zip(sources, given, strict=True)):
            value = np.asarray(getattr(tangent, "_value", tangent))
            if value.shape != source.meta.shape:
                raise ShapeError(
                    "jvp",
                    f"tangent {position} has shape {value.shape}, the input {source.meta.shape}",
                )
            if value.dtype != source.meta.dtype:
                raise DTypeError(
                    "jvp",
                    f"tangent {position} is {value.dtype}, the input {source.meta.dtype} "
                    f"(tangents have their primal's dtype)",
                )
            seeds[source.key] = value if source.key not in seeds else seeds[source.key] + value
        traces = [o.node for o in outs if isinstance(o, EagerTensor)]
        wanted = {o.key for o in outs if isinstance(o, EagerTensor)}
        token = quiet()
        try:
            result = forward(seeds, traces, self._plain, wanted=wanted)
        except _Released as error:
            raise _released("jvp", error.node) from None
        finally:
            restore(token)
        tangent_out = [
            self._result(result.get(o.key) if isinstance(o, EagerTensor) else None, o, False)
            for o in outs
        ]
        return tangent_out[0] if single_out else tangent_out

    def jvp(self, f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
        """``(f(*primals), J·tangents)`` by forward mode (primals are tracked afresh)."""
        leaves = [self.track(p) for p in primals]
        out = f(*leaves)
        return out, self.push_forward(out, leaves, list(tangents))

    def hvp(self, f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
        """The Hessian-vector product of a real scalar ``f``: forward mode over a recorded
        reverse pass (one tensor per primal)."""
        leaves = [self.track(p) for p in primals]
        gradients = self.grad(f(*leaves), leaves, create_graph=True, allow_unused=True)
        gradients = [  # f does not use a primal: its gradient and HVP are zeros
            self._result(None, leaf, False) if g is None else g
            for g, leaf in zip(gradients, leaves, strict=True)
        ]
        result = self.push_forward(gradients, leaves, list(tangents))
        return result[0] if len(result) == 1 else result

    def __repr__(self) -> str:
        return f"<Tape: {len(self._leaves)} live leaves>"


def _released(op: str, node: Trace) -> ReleasedGraphError:
    """The error for a pass that reached ``node`` after an earlier backward freed it."""
    operations = [o.operation for o in node.recorded.graph.operations]
    names = [getattr(o, "name", type(o).__name__) for o in operations]
    what = (
        repr(names[0])
        if len(names) == 1
        else f"a recorded segment of {len(names)} operations ({', '.join(names[:4])}"
        f"{', ...' if len(names) > 4 else ''})"
    )
    return ReleasedGraphError(
        op,
        f"trying to differentiate through the graph a second time: the values {what} saved "
        f"for differentiation were freed by an earlier tape.grad / backward(), which frees "
        f"them as it uses them. Pass retain_graph=True to that earlier call to "
        f"differentiate the same graph again",
    )


def _fed_keys(nodes: set[Any], keys: set[Any]) -> set[Any]:
    """Those of ``keys`` that an input edge of ``nodes`` requiring grad reads."""
    fed: set[Any] = set()
    for node in nodes:
        edges = node.edges
        for position in range(1, len(edges), 3):
            if edges[position + 1] and edges[position] in keys:
                fed.add(edges[position])
    return fed


def _unused_message(output: Any, positions: list[int]) -> str:
    which = ", ".join(f"wrt[{p}]" for p in positions)
    if not isinstance(output, EagerTensor) or output.tape is None:
        hint = (
            "the output was computed from no tracked tensor (a gradient computed without "
            "create_graph=True is detached: pass create_graph=True to differentiate it again)"
        )
    else:
        hint = "the output does not depend on it"
    return f"{which}: {hint}; pass allow_unused=True to get None instead"


class _RecordingExecutor(ProgramExecutor):
    """Runs derivative programs through the eager surface, so they are recorded."""

    def __init__(self, tape: Tape) -> None:
        super().__init__(ADD_ANY, apply=_apply, specialize=specialize)
        self._tape = tape

    def primal_values(self, node: Trace) -> Mapping[ValueKey, Any]:
        """The node's saved values as tracked tensors (rebuilt from its edges), so the
        derivative's dependence on them is recorded too."""
        tape = self._tape
        saved = node.saved_data
        edges = node.edges
        values: dict[ValueKey, Any] = {}
        make = EagerTensor._make
        for position, key in enumerate(node.recorded.input_value_keys):
            value = saved.get(key)
            if value is None:
                continue
            tracked = edges[3 * position + 2]
            values[key] = make(
                value,
                _meta(value),
                edges[3 * position + 1] if tracked else None,
                edges[3 * position] if tracked else None,
                tape if tracked else None,
            )
        for key, eager_key in zip(node.recorded.output_keys, node.output_keys, strict=True):
            value = saved.get(key)
            if value is not None:
                values[key] = make(value, _meta(value), eager_key, node, tape)
        return values


def _meta(value: Any) -> Meta:
    return Meta(np.shape(value), np.asarray(value).dtype)


def _apply(operation: Any, inputs: Sequence[Any], ctx: Any) -> Sequence[Any]:
    """Run one instruction of a derivative program on eager tensors (recording it)."""
    operands = [
        v
        if isinstance(v, EagerTensor)
        else EagerTensor._lift(v if isinstance(v, Tensor) else Tensor(np.asarray(v)))
        for v in inputs
    ]
    if type(operation) is AddAny:  # cotangent accumulation: an ordinary add of two tensors
        return (lax.add(operands[0], operands[1]),)
    if operands and any(
        o.meta.shape != m.shape for o, m in zip(operands, operation.inputs, strict=True)
    ):  # a shape-generic derivative program (record_plans.shape_generic) at its actual shape
        operation, operands = _at_actual_shape(operation, operands)
    if not operands:  # constants depend on nothing: detached
        values = operation.eval([], None)
        return [
            EagerTensor._make(v, m, None, None, None)
            for v, m in zip(values, operation.outputs, strict=True)
        ]
    return bind(operation, operands)


def _at_actual_shape(
    operation: TensorPrimitive, operands: list[EagerTensor]
) -> tuple[TensorPrimitive, list[EagerTensor]]:
    """The rank-0 elementwise ``operation`` of a shape-generic program, instantiated for
    its operands' shape (rank-0 constants broadcast to it), to be recorded as such."""
    shape = np.broadcast_shapes(*(o.meta.shape for o in operands))
    rank = len(shape)
    operands = [
        o
        if o.meta.shape == shape
        else lax.broadcast_in_dim(o, shape, range(rank - o.meta.ndim, rank))
        for o in operands
    ]
    metas = tuple(o.meta for o in operands)
    key = (operation, metas)
    instance = _AT_SHAPE.get(key)
    if instance is None:
        params = {f: getattr(operation, f) for f in operation._field_names if f != "inputs"}
        instance = type(operation).make(metas, **params)
        _AT_SHAPE.put(key, instance)
    return instance, operands


_AT_SHAPE: DictCache[Any, TensorPrimitive] = DictCache(4096, "shape-generic instances")
"""(rank-0 primitive, actual operand metas) -> the primitive instance for those metas."""


_default = Tape()


def default_tape() -> Tape:
    """The tape that ``EagerTensor(..., requires_grad=True)`` records on by default."""
    return _default


def adopt_fresh_leaf(tensor: EagerTensor) -> None:
    """:meth:`Tape.adopt_leaf` on the default tape for a tensor just made, detached, of a
    trackable dtype and strong type (the leaf fast path of ``EagerTensor``)."""
    tape = _default
    key = tensor.key = Input.unique(next(tape._counter))
    tensor.tape = tape
    with tape._leaves_lock:
        tape._leaves[key] = tensor


def _check_reverse_flags(op: str, create_graph: Any, allow_unused: Any, retain_graph: Any) -> None:
    check_flag(op, "create_graph", create_graph)
    check_flag(op, "allow_unused", allow_unused)
    check_optional_flag(op, "retain_graph", retain_graph)


provide_tape(
    adopt_fresh_leaf=adopt_fresh_leaf,
    default_tape=default_tape,
    instance_plan=instance_plan,
    refuse_tracked=_refuse_tracked,
)
