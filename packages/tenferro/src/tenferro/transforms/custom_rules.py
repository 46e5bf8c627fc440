"""Users' own derivative rules: ``stop_gradient``, ``custom_jvp`` and ``custom_vjp``
(JAX's API), built on the extension mechanism.

A function decorated with :class:`custom_jvp` or :class:`custom_vjp` becomes, when it
is applied to tensors that carry derivatives (tracked ``EagerTensor``s, traced values,
inside any transform), one extension primitive (family ``tenferro.custom_jvp`` /
``tenferro.custom_vjp``): its evaluation calls the function on concrete tensors, and
its JVP rule is the user's rule. So one rule serves every mode -- ``grad``, ``vjp``,
``jvp``, ``hvp``, ``jit``, the tape's ``backward``/``grad``/``jvp`` -- and every order
where the rule is itself differentiable. Applied to plain tensors, the function is
simply called, as in JAX.

The user's rules are written with the ordinary tenferro surface (operators, ``tf.*``
functions, Python scalars). They are traced once per structure (the shapes and dtypes
of the arguments) and their operations are emitted into the transform's graph, so:

* rules must be traceable: no Python control flow on tensor values, no ``.numpy()``;
* rules read only their arguments, Python scalars and constants they fill themselves
  (``tf.ones(n)``, ``tf.zeros``, ``tf.full``: one value repeated, part of the rule's
  structure). Any other array, and a traced value captured from outside, raises an error:
  a rule is traced once per structure, so it would be frozen there (pass it as an
  argument; ``nondiff_argnums`` takes hashable non-tensor values such as functions,
  flags and sizes).

Derivatives follow tenferro's conventions: a ``custom_vjp`` backward rule receives
and returns cotangents in the conjugate convention (PyTorch's; the conjugate of
JAX's) -- for real functions there is no difference.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from computegraph import After, BoundedCache, Derived, Input, OperationKey, ValueKey, fold
from tenferro import lax
from tenferro.concrete import Borrowed, Tensor
from tenferro.core.bind import lift
from tenferro.core.keys import AliasKey, ArgKey, LeafKey
from tenferro.core.kinds import asarray
from tenferro.core.pytree import TreeDef, count_leaves, describe, flatten, unflatten
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.errors import ArgumentTypeError, DTypeError, ShapeError, TenferroError
from tenferro.extension import ExtensionOp, register
from tenferro.meta import Meta
from tenferro.traced.program import TracedProgram
from tenferro.traced.replay import replay
from tenferro.traced.tensor import TracedTensor
from tenferro.transforms.arguments import _call
from tidu import ADRuleError

Tree = TypeVar("Tree")
"""A tensor, or a pytree of them: given back with the same structure."""

__all__ = ["custom_jvp", "custom_vjp", "stop_gradient"]

_LOWERED: BoundedCache[Any, TracedProgram] = BoundedCache(256, "custom function programs")
"""The traced programs of custom functions lowered to XLA, by application (structure)."""


def stop_gradient(x: Tree) -> Tree:
    """``x`` (a tensor or a pytree of them) with a zero derivative by contract.

    The value passes through unchanged; no derivative flows back through it in any
    mode (``grad``, ``vjp``, ``jvp``, the tape) or at any order, as with JAX's
    ``lax.stop_gradient``. On a tape the result is a new node with no derivative
    (``x.detach()`` is the PyTorch spelling; both stay available).
    """
    leaves, treedef = flatten(x)
    stopped: Tree = unflatten(treedef, [lax.stop_gradient(asarray(leaf)) for leaf in leaves])
    return stopped


# ---------------------------------------------------------------------- rule tracing


@dataclass(frozen=True, slots=True)
class RuleArgKey:
    """Input ``position`` of a traced user rule (replayed onto the rule's values)."""

    position: int
    meta: Meta

    def __repr__(self) -> str:
        return f"rule_arg{self.position}:{self.meta.describe()}"


def _rule_args(metas: Sequence[Meta], offset: int = 0) -> list[TracedTensor]:
    return [TracedTensor(Input(RuleArgKey(offset + i, m)), m) for i, m in enumerate(metas)]


def _call_traced(
    fun: Callable[..., Any], args: Sequence[Any], name: str = "", role: str = ""
) -> Any:
    """``fun(*args)`` on traced values, as a transform trace (nested transforms inside
    a rule are symbolic). A rule that cannot take the arguments it is called with raises
    an error naming the decorated function, the rule and how it is called."""
    if name:
        _check_arity(fun, len(args), name, role)
    return _call(fun, args)


def _check_arity(fun: Callable[..., Any], count: int, name: str, role: str) -> None:
    try:
        signature = inspect.signature(fun)
    except (TypeError, ValueError):
        return  # a builtin or C function: Python's own error, if any
    try:
        signature.bind(*([None] * count))
    except TypeError as error:
        own = getattr(fun, "__qualname__", type(fun).__name__)
        raise ArgumentTypeError(
            name,
            f"{role} {own}{signature} cannot take the {count} positional argument(s) it is "
            f"called with ({error}); {_CALLED_AS[role]}",
        ) from None


_CALLED_AS = {
    "the function": "the function is called with its arguments",
    "the JVP rule": "it is called as rule(primals, tangents), after the nondiff_argnums values",
    "fwd": "it is called with the function's arguments (fwd(*args) -> (output, residuals))",
    "bwd": "it is called as bwd(residuals, g), after the nondiff_argnums values",
}


def _traced_leaves(name: str, what: str, leaves: Sequence[Any]) -> list[TracedTensor]:
    traced = []
    for position, leaf in enumerate(leaves):
        if leaf is None:
            raise TenferroError(name, f"{what}: leaf {position} is None, expected a tensor")
        try:
            tensor = asarray(leaf)
        except TenferroError:
            raise TenferroError(
                name, f"{what}: leaf {position} is a {type(leaf).__name__}, expected a tensor"
            ) from None
        traced.append(tensor if isinstance(tensor, TracedTensor) else TracedTensor._lift(tensor))
    return traced


def _replay(
    name: str,
    values: Sequence[RuleValue],
    outputs: Sequence[ValueKey],
    like: RuleValue,
    rule: Callable[..., Any] | None = None,
) -> list[RuleValue]:
    """Emit the traced computation of ``outputs`` into the scope of the rule being run,
    ``RuleArgKey(i)`` standing for ``values[i]``; a constant of one value the rule made
    (``tf.ones``, ``tf.full``) is emitted as its structure."""

    def constant(input_name: Hashable) -> RuleValue | None:
        if type(input_name) is LeafKey and input_name.label == "const":
            return _filled_constant(name, input_name, like, rule)
        return None

    return replay(name, values, outputs, like, _rule_position, constant)


def _rule_position(input_name: Hashable) -> int | None:
    return input_name.position if type(input_name) is RuleArgKey else None


def _filled_constant(
    name: str, key: LeafKey, like: RuleValue, rule: Callable[..., Any] | None
) -> RuleValue:
    """A constant array read by a rule, emitted as its structure (one value broadcast):
    only arrays of one repeated value (``tf.ones``, ``tf.zeros``, ``tf.full``) made by
    the rule itself qualify; any other array would be frozen in the traced rule."""
    data = np.asarray(key.data)
    flat = data.reshape(-1)
    first = flat[0] if flat.size else np.zeros((), data.dtype)
    uniform = bool(np.all((flat == first) | ((flat != flat) & (first != first))))
    if not uniform or _captured(rule, data):
        raise TenferroError(
            name,
            f"a rule read the array {key!r}"
            + ("" if uniform else " (not one repeated value)")
            + ", which it did not make from its arguments (an array captured from outside "
            "the rule, or built from data): a rule is traced once per structure of its "
            "arguments, so the array would be frozen there. Pass it as an argument of the "
            "function instead (constants of one value, tf.ones(n) or tf.full(shape, v), "
            "may be made inside the rule)",
        )
    scalar = lax.constant(first, data.dtype, like)
    return lax.broadcast_in_dim(scalar, data.shape, ())._rewrap(key.meta)


def _captured(rule: Callable[..., Any] | None, data: Any) -> bool:
    """Whether an array equal to ``data`` is reachable from ``rule``: its closure, its
    defaults and the globals it names, and theirs (functions it calls, containers,
    objects' attributes), a few levels deep."""
    if rule is None:
        return False
    seen: set[int] = set()
    frontier: list[Any] = [rule]
    for _ in range(4):
        following: list[Any] = []
        for value in frontier:
            if id(value) in seen or isinstance(value, (ModuleType, type, str, bytes)):
                continue
            seen.add(id(value))
            array = getattr(value, "_value", value)
            if isinstance(array, np.ndarray):
                if array.shape == data.shape and np.array_equal(array, data):
                    return True
                continue
            following.extend(_reachable(value))
        frontier = following
    return False


def _reachable(value: Any) -> list[Any]:
    """The values one step from ``value`` (see :func:`_captured`)."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    code = getattr(value, "__code__", None)
    if code is not None:  # a function: what it closes over, its defaults, its globals
        found = [c.cell_contents for c in getattr(value, "__closure__", None) or ()]
        found += list(getattr(value, "__defaults__", None) or ())
        found += list((getattr(value, "__kwdefaults__", None) or {}).values())
        scope = getattr(value, "__globals__", {})
        return found + [scope[n] for n in code.co_names if n in scope]
    if isinstance(value, functools.partial):
        return [value.func, *value.args, *value.keywords.values()]
    attributes = getattr(value, "__dict__", None)
    return list(attributes.values()) if isinstance(attributes, dict) else []


def _check_result(
    name: str, what: str, value: RuleValue, meta: Meta, cotangent: bool = False
) -> RuleValue:
    """``value`` as a derivative of ``meta``'s dtype: floating precision follows the
    target and a real value widens to complex (as PyTorch converts a rule's gradients);
    a complex derivative of a real value raises (as for ``custom_jvp`` and in PyTorch
    and JAX: its imaginary part would be lost silently), as does anything else."""
    if value.meta.shape != meta.shape:
        raise ShapeError(name, f"{what} has shape {value.meta.shape}, expected {meta.describe()}")
    have, want = value.meta.dtype, meta.dtype
    if have == want:
        return value
    if not (have.kind in "fc" and want.kind in "fc" and (have.kind == "f" or want.kind == "c")):
        role = "cotangent" if cotangent else "tangent"
        hint = (
            f"; return its real part (tf.real) if that is the {role} you mean"
            if have.kind == "c" and want.kind == "f"
            else ""
        )
        raise DTypeError(
            name, f"{what} is {value.meta.describe()}, expected {meta.describe()}{hint}"
        )
    return lax.convert_element_type(value, want)


def _zero_filled(xs: Xs, ts: Ts) -> list[RuleValue]:
    return [lax.zeros_like(x) if t is None else t for x, t in zip(xs, ts, strict=True)]


# ---------------------------------------------------------------------- the decorators


_SIGNATURES: BoundedCache[Any, tuple[TreeDef, tuple[Meta, ...]]] = BoundedCache(
    256, "custom rule signatures"
)
"""Output structure and metas of a custom function, by its argument structure."""


class _CustomFunction:
    """What ``custom_jvp`` and ``custom_vjp`` share: argument handling and the call."""

    kind = "custom"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        if not callable(fun):
            raise ArgumentTypeError(self.kind, f"expected a callable, got {fun!r}")
        numbers = (nondiff_argnums,) if isinstance(nondiff_argnums, int) else nondiff_argnums
        for n in numbers:
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ArgumentTypeError(
                    self.kind, f"nondiff_argnums must be non-negative ints, got {nondiff_argnums!r}"
                )
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(set(numbers)))
        self.name = f"{self.kind}({getattr(fun, '__qualname__', repr(fun))})"
        functools.update_wrapper(self, fun)
        try:
            self._signature: inspect.Signature | None = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None

    def __repr__(self) -> str:
        return self.name

    def _positional(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Keyword arguments resolved to positions (defaults applied), as JAX does."""
        if not kwargs and self._signature is None:
            return args
        if self._signature is None:
            raise TenferroError(self.name, "keyword arguments need a function with a signature")
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.kwargs:
            raise TenferroError(
                self.name,
                f"keyword-only arguments {sorted(bound.kwargs)} cannot be resolved to positions",
            )
        return tuple(bound.args)

    def _split(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[tuple[int, Any], ...]]:
        for n in self.nondiff_argnums:
            if n >= len(args):
                raise TenferroError(
                    self.name, f"nondiff_argnums {n} out of range for {len(args)} argument(s)"
                )
        statics = tuple((n, args[n]) for n in self.nondiff_argnums)
        for n, value in statics:
            if isinstance(value, (Tensor, TracedTensor)) or hasattr(value, "__array__"):
                raise TenferroError(
                    self.name,
                    f"argument {n} is in nondiff_argnums but is a tensor; nondiff arguments "
                    f"are static Python values (functions, flags, sizes): pass tensors as "
                    f"ordinary arguments (wrap them in stop_gradient to keep them constant)",
                )
            try:
                hash(value)
            except TypeError:
                raise TenferroError(
                    self.name, f"nondiff argument {n} ({value!r}) must be hashable"
                ) from None
        diff = tuple(a for i, a in enumerate(args) if i not in self.nondiff_argnums)
        return diff, statics

    @staticmethod
    def merge(statics: tuple[tuple[int, Any], ...], diff: Sequence[Any]) -> list[Any]:
        """The full positional argument list from the static and the other arguments."""
        remaining = iter(diff)
        positions = dict(statics)
        count = len(statics) + len(diff)
        return [positions[i] if i in positions else next(remaining) for i in range(count)]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = self._positional(args, kwargs)
        diff, statics = self._split(args)
        leaves, in_tree = flatten(diff)
        try:
            tensors = [asarray(leaf) for leaf in leaves]
        except TenferroError as error:
            raise TenferroError(
                self.name,
                f"{error}; non-tensor arguments go in nondiff_argnums",
            ) from None
        if all(type(t) is Tensor or type(t) is Borrowed for t in tensors):
            return self.fun(*args)  # nothing to differentiate: the function itself, as in JAX
        tensors = lift(tensors)
        metas = tuple(t.meta for t in tensors)
        out_tree, out_metas = self._output_signature(in_tree, metas, statics)
        family = _CALL_FAMILIES[self.kind]
        outputs = family.bind(
            *tensors,
            rule=self,
            in_tree=in_tree,
            statics=statics,
            out_tree=out_tree,
            out_metas=out_metas,
        )
        outputs = [outputs] if len(out_metas) == 1 else list(outputs)
        return unflatten(out_tree, outputs)

    def _output_signature(
        self, in_tree: TreeDef, metas: tuple[Meta, ...], statics: tuple[tuple[int, Any], ...]
    ) -> tuple[TreeDef, tuple[Meta, ...]]:
        def trace() -> tuple[TreeDef, tuple[Meta, ...]]:
            diff = unflatten(in_tree, _rule_args(metas))
            result = _call_traced(
                self.fun, self.merge(statics, list(diff)), self.name, "the function"
            )
            leaves, out_tree = flatten(result)
            outputs = _traced_leaves(self.name, "the function's output", leaves)
            if not outputs:
                raise TenferroError(self.name, "the function returned no tensors")
            return out_tree, tuple(o.meta for o in outputs)

        return _SIGNATURES.get_or_create((self, in_tree, metas, statics), trace)

    # -- the primitive's evaluation and JVP (called by the families below)

    def evaluate(self, op: _CustomCall, arrays: Sequence[Any]) -> tuple[Any, ...]:
        tensors = [
            Tensor._wrap(np.asarray(a), m.weak) for a, m in zip(arrays, op.inputs, strict=True)
        ]
        diff = unflatten(op.in_tree, tensors)
        leaves = self._output_leaves(op, self.fun(*self.merge(op.statics, list(diff))))
        return tuple(asarray(leaf)._value for leaf in leaves)

    def _output_leaves(self, op: _CustomCall, result: Any) -> list[Any]:
        """The leaves of the function's ``result``, checked against the traced structure."""
        leaves, out_tree = flatten(result)
        if out_tree != op.out_tree:
            raise TenferroError(
                self.name,
                f"the function returned structure {describe(out_tree)}, traced as "
                f"{describe(op.out_tree)} (its output structure must depend only on its "
                f"arguments' shapes and dtypes)",
            )
        return leaves

    def lower(self, lo: Any, op: _CustomCall, values: Sequence[Any]) -> Any:
        """The function traced on the operands' metas and its program lowered inline
        (the XLA backend's :meth:`evaluate`)."""
        program = _LOWERED.get_or_create(op, lambda: self._traced_program(op))
        inputs = [
            values[what] if kind == "arg" else lo.jnp.asarray(what)
            for kind, what in program.sources
        ]
        outputs = lo.run(program.program, inputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _traced_program(self, op: _CustomCall) -> TracedProgram:
        leaves = [TracedTensor(Input(ArgKey(i, m)), m) for i, m in enumerate(op.inputs)]
        diff = unflatten(op.in_tree, leaves)
        outputs = self._output_leaves(op, _call(self.fun, self.merge(op.statics, list(diff))))
        traced = [asarray(leaf) for leaf in outputs]
        keys = tuple(
            (t if isinstance(t, TracedTensor) else TracedTensor._lift(t)).key for t in traced
        )
        return TracedProgram(keys)

    def jvp(self, op: _CustomCall, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        raise NotImplementedError


class custom_jvp(_CustomFunction):  # noqa: N801  (JAX's name)
    """A function with a user-defined JVP rule (JAX's ``jax.custom_jvp``)::

        @tf.custom_jvp
        def f(x, y):
            return tf.sin(x) * y

        @f.defjvp
        def f_jvp(primals, tangents):
            x, y = primals
            dx, dy = tangents
            return f(x, y), tf.cos(x) * dx * y + tf.sin(x) * dy

    ``rule(primals, tangents)`` gets tuples of the arguments and their tangents (zeros
    where none flows; same pytree structure) and returns ``(output, tangent)``. Reverse
    mode transposes the rule (it must be linear in the tangents, as in JAX), and higher
    orders differentiate it. With ``nondiff_argnums``, those arguments (hashable Python
    values) come first: ``rule(*nondiff_args, primals, tangents)``. The primal output is
    always ``f``'s; the rule's own primal output is not used.
    """

    kind = "custom_jvp"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.jvp_rule: Callable[..., Any] | None = None

    def defjvp(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Set the JVP rule (usable as a decorator; returns ``rule``)."""
        if not callable(rule):
            raise ArgumentTypeError(self.name, f"defjvp needs a callable, got {rule!r}")
        self.jvp_rule = rule
        return rule

    def defjvps(self, *rules: Callable[..., Any] | None) -> None:
        """One rule per argument, ``rule(tangent, output, *primals)`` returning that
        argument's contribution to the output tangent (``None``: no contribution)."""
        count = len(rules)

        def jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
            if len(primals) != count:
                raise TenferroError(self.name, f"defjvps got {count} rules for {len(primals)} args")
            output = self(*primals)
            total: Any = None
            for rule, tangent in zip(rules, tangents, strict=True):
                if rule is not None:
                    part = rule(tangent, output, *primals)
                    total = part if total is None else total + part
            return output, lax.zeros_like(asarray(output)) if total is None else total

        self.jvp_rule = jvp

    def jvp(self, op: _CustomCall, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        if self.jvp_rule is None:
            raise ADRuleError(self.name, "jvp", "no JVP rule defined: call defjvp")
        count = len(xs)
        tangents = _zero_filled(xs, ts)
        traced = _rule_args([x.meta for x in xs] + [t.meta for t in tangents])
        primals_tree = unflatten(op.in_tree, traced[:count])
        tangents_tree = unflatten(op.in_tree, traced[count:])
        statics = [value for _, value in op.statics]
        result = _call_traced(
            self.jvp_rule, [*statics, primals_tree, tangents_tree], self.name, "the JVP rule"
        )
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TenferroError(self.name, "the JVP rule must return a pair (output, tangent)")
        leaves, tangent_tree = flatten(result[1])
        if tangent_tree != op.out_tree:
            raise ShapeError(
                self.name,
                f"the JVP rule's tangent has structure {describe(tangent_tree)}, the output "
                f"{describe(op.out_tree)}",
            )
        outputs = _traced_leaves(self.name, "the JVP rule's tangent", leaves)
        values = _replay(
            self.name, [*xs, *tangents], [o.key for o in outputs], xs[0], self.jvp_rule
        )
        results: list[RuleValue | None] = []
        for position, (value, meta) in enumerate(zip(values, op.outputs, strict=True)):
            if meta.dtype.kind not in "fc":
                results.append(None)
                continue
            _check_result(self.name, f"the tangent of output {position}", value, meta)
            # A tangent computed without the input tangents is a zero (for instance
            # from the zeros standing for inputs that carry none).
            results.append(value if value.active else None)
        return results


class custom_vjp(_CustomFunction):  # noqa: N801  (JAX's name)
    """A function with a user-defined VJP rule (JAX's ``jax.custom_vjp``)::

        @tf.custom_vjp
        def f(x):
            return tf.sin(x)

        def f_fwd(x):
            return f(x), (tf.cos(x),)        # output, residuals (a pytree)

        def f_bwd(residuals, g):
            (cos_x,) = residuals
            return (cos_x * g,)               # one cotangent per argument (None: zero)

        f.defvjp(f_fwd, f_bwd)

    ``fwd`` takes ``f``'s arguments; ``bwd(residuals, output_cotangent)`` returns a
    tuple with one cotangent (a pytree like the argument, or ``None``) per argument.
    With ``nondiff_argnums``, ``bwd(*nondiff_args, residuals, g)``. Reverse mode
    (``grad``, ``vjp``, ``backward``) uses the rule; higher orders differentiate
    ``fwd`` and ``bwd``. Forward mode (``jvp``, ``linearize``, the tape's ``jvp``) has
    no rule and raises :class:`tidu.ADRuleError`, as in JAX. Under differentiation
    ``f`` gives the output and ``fwd`` the residuals (each evaluated; the output of
    ``fwd`` is not used).
    """

    kind = "custom_vjp"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Set the forward (``fwd(*args) -> (output, residuals)``) and backward
        (``bwd(residuals, g) -> cotangents``) rules. ``bwd`` is linear in ``g``: each
        cotangent has its argument's shape and dtype (a real one for a real argument), and
        one that does not read ``g`` must be zero (``None``, or zeros); anything else
        raises rather than being dropped."""
        if not callable(fwd) or not callable(bwd):
            raise ArgumentTypeError(self.name, "defvjp needs callable fwd and bwd")
        self.fwd, self.bwd = fwd, bwd

    def jvp(self, op: _CustomCall, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        if self.fwd is None:
            raise ADRuleError(self.name, "transpose", "no VJP rule defined: call defvjp")
        traced = _rule_args([x.meta for x in xs])
        diff = unflatten(op.in_tree, traced)
        result = _call_traced(self.fwd, self.merge(op.statics, list(diff)), self.name, "fwd")
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TenferroError(self.name, "fwd must return a pair (output, residuals)")
        residual_leaves, residual_tree = flatten(result[1])
        static_residuals, tensor_positions, traced_residuals = [], [], []
        for position, leaf in enumerate(residual_leaves):
            if isinstance(leaf, (TracedTensor, Tensor)) or hasattr(leaf, "__array__"):
                tensor_positions.append(position)
                traced_residuals.append(_traced_leaves(self.name, "a residual", [leaf])[0])
            else:
                try:
                    hash(leaf)
                except TypeError:
                    raise TenferroError(
                        self.name,
                        f"residual {position} ({leaf!r}) is neither a tensor nor hashable",
                    ) from None
                static_residuals.append((position, leaf))
        residuals = _replay(self.name, xs, [r.key for r in traced_residuals], xs[0], self.fwd)
        tangents = _zero_filled(xs, ts)
        linear = _CustomVJPLinear.bind(
            *residuals,
            *tangents,
            rule=self,
            in_tree=op.in_tree,
            statics=op.statics,
            out_tree=op.out_tree,
            out_metas=op.out_metas,
            residual_tree=residual_tree,
            static_residuals=tuple(static_residuals),
            residual_count=len(residuals),
        )
        linear = [linear] if len(op.outputs) == 1 else list(linear)
        return [
            t if meta.dtype.kind in "fc" else None
            for t, meta in zip(linear, op.outputs, strict=True)
        ]

    def transpose(
        self, op: _CustomVJPLinear, cts: Ts, xs: Xs, active: tuple[bool, ...]
    ) -> list[RuleValue | None]:
        assert self.bwd is not None
        count = op.residual_count
        residuals = list(xs[:count])
        like = next((c for c in cts if c is not None), None)
        if like is None:
            return [None] * len(xs)
        filled = [
            lax.zeros(m, like) if c is None else c for c, m in zip(cts, op.outputs, strict=True)
        ]
        traced = _rule_args([r.meta for r in residuals] + [c.meta for c in filled])
        residual_leaves: list[Any] = list(traced[:count])
        for position, value in op.static_residuals:
            residual_leaves.insert(position, value)
        residual_tree = unflatten(op.residual_tree, residual_leaves)
        ct_tree = unflatten(op.out_tree, traced[count:])
        statics = [value for _, value in op.statics]
        result = _call_traced(self.bwd, [*statics, residual_tree, ct_tree], self.name, "bwd")
        argument_trees = op.in_tree[1]  # type: ignore[index]
        if not isinstance(result, (tuple, list)) or len(result) != len(argument_trees):
            raise TenferroError(
                self.name,
                f"bwd must return a tuple with one cotangent per argument "
                f"({len(argument_trees)}), got {result!r}",
            )
        leaves: list[Any] = []
        for position, (cotangent, expected) in enumerate(zip(result, argument_trees, strict=True)):
            if cotangent is None:
                cotangent = unflatten(expected, [None] * count_leaves(expected))
            got, tree = flatten(cotangent, is_leaf=lambda n: n is None)
            if tree != expected:
                raise ShapeError(
                    self.name,
                    f"bwd's cotangent {position} has structure {describe(tree)}, the argument "
                    f"{describe(expected)}",
                )
            leaves.extend(got)
        present = [i for i, leaf in enumerate(leaves) if leaf is not None]
        outputs = _traced_leaves(self.name, "bwd's cotangent", [leaves[i] for i in present])
        values = _replay(self.name, [*residuals, *filled], [o.key for o in outputs], like, self.bwd)
        by_input: dict[int, RuleValue] = dict(zip(present, values, strict=True))
        g_positions = frozenset(range(count, count + len(filled)))
        reads_of = dict(
            zip(present, zip(_arguments_read(outputs), outputs, strict=True), strict=True)
        )
        results: list[RuleValue | None] = [None] * count
        for position, meta in enumerate(op.inputs[count:]):
            value = by_input.get(position)
            if value is None:
                results.append(None)
                continue
            # checked even where it is dropped: a cotangent of the wrong shape or a
            # complex one for a real input is a mistake whatever it depends on
            value = _check_result(self.name, f"bwd's cotangent leaf {position}", value, meta, True)
            reads, output = reads_of[position]
            if not reads & g_positions:
                self._check_constant_cotangent(position, reads, output)
            results.append(value if active[count + position] and value.active else None)
        return results

    def _check_constant_cotangent(self, position: int, reads: frozenset[int], value: Any) -> None:
        """A cotangent that does not read ``g`` is dropped by the derivative program (a
        VJP is linear in ``g``): only a zero may be dropped; anything else would be a
        silently wrong derivative."""
        if not reads:  # made of constants alone: its value is known now
            with contextlib.suppress(TenferroError):
                if not np.any(np.asarray(value.eval())):
                    return
        raise TenferroError(
            self.name,
            f"bwd's cotangent leaf {position} does not depend on the output cotangent g "
            f"it is given ({'the residuals alone' if reads else 'a nonzero constant'}): a "
            f"VJP is linear in g; return None (or zeros) for a zero cotangent",
        )


def _arguments_read(outputs: Sequence[TracedTensor]) -> list[frozenset[int]]:
    """For each traced rule output, the positions of the rule arguments it reads."""

    def leaf(key: ValueKey) -> frozenset[int] | After[frozenset[int]]:
        name = key.key if type(key) is Input else None
        if type(name) is RuleArgKey:
            return frozenset((name.position,))
        if type(name) is AliasKey:
            return After(name.origin, lambda reads: reads)
        return frozenset()

    def operation(_: OperationKey, operands: list[frozenset[int]]) -> frozenset[int]:
        return frozenset().union(*operands)

    def output(result: frozenset[int], _: Derived) -> frozenset[int]:
        return result

    return fold([o.key for o in outputs], operation, output, leaf)


# ---------------------------------------------------------------------- the families


class _CustomCall(ExtensionOp):
    """An application of a custom function: evaluation calls it on concrete tensors,
    the JVP is the user's rule (``rule`` is the decorated function)."""

    __slots__ = ()
    batch_loop = "the user's function and rule hold for one example: applied per example"
    rule: Any
    in_tree: Hashable
    statics: tuple[tuple[int, Any], ...]
    out_tree: Hashable
    out_metas: tuple[Meta, ...]

    def infer(self) -> Any:
        return list(self.out_metas)

    def impl(self, *arrays: Any) -> Any:
        return self.rule.evaluate(self, arrays)

    def lower(self, lo: Any, *values: Any) -> Any:
        return self.rule.lower(lo, self, values)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        tangents: list[RuleValue | None] = self.rule.jvp(self, xs, ys, ts)
        return tangents

    def __str__(self) -> str:
        operands = " ".join(m.describe() for m in self.inputs)
        return f"{self.name}[{self.rule.name}]({operands})"


@register("tenferro.custom_jvp")
class _CustomJVPCall(_CustomCall):
    """An application of a ``custom_jvp`` function."""


@register("tenferro.custom_vjp")
class _CustomVJPCall(_CustomCall):
    """An application of a ``custom_vjp`` function."""


@register("tenferro.custom_vjp_linear")
class _CustomVJPLinear(ExtensionOp):
    """The linear map of a ``custom_vjp`` function at its residuals: operands are the
    residuals, then one tangent per argument leaf. Its transpose is the user's ``bwd``;
    its JVP in the tangents is itself (it is linear there: a checkpointed segment's JVP
    is linearised again before it is transposed). It has no evaluation and no JVP in
    the residuals (forward mode) and raises there, as JAX does."""

    batch_loop = "the user's bwd holds for one example: applied per example"

    rule: Any
    in_tree: Hashable
    statics: tuple[tuple[int, Any], ...]
    out_tree: Hashable
    out_metas: tuple[Meta, ...]
    residual_tree: Hashable
    static_residuals: tuple[tuple[int, Any], ...]
    residual_count: int

    def infer(self) -> Any:
        return list(self.out_metas)

    def _forward_error(self) -> ADRuleError:
        return ADRuleError(
            self.rule.name,
            "jvp",
            "a custom_vjp function has no forward-mode derivative (jvp, linearize, the "
            "tape's jvp); define it with custom_jvp for forward mode",
        )

    def impl(self, *arrays: Any) -> Any:
        raise self._forward_error()

    def lower(self, lo: Any, *values: Any) -> Any:
        raise self._forward_error()  # evaluating it is forward mode, which it lacks

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        """The map is linear in its tangent operands, so its derivative there is the map
        itself applied to their tangents (which transposes to ``bwd`` again): a traced
        JVP of a custom_vjp call -- a checkpointed segment's -- can be linearised and
        transposed. A derivative in the residuals would need the forward-mode derivative
        of the function, which a custom_vjp does not have."""
        count = self.residual_count
        if any(t is not None for t in ts[:count]):
            raise self._forward_error()
        tangents = ts[count:]
        if all(t is None for t in tangents):
            return [None] * len(self.outputs)
        params = {f: getattr(self, f) for f in self._field_names if f != "inputs"}
        applied = self.bind(*xs[:count], *_zero_filled(xs[count:], tangents), **params)
        applied = [applied] if len(self.outputs) == 1 else list(applied)
        return [
            t if meta.dtype.kind in "fc" else None
            for t, meta in zip(applied, self.outputs, strict=True)
        ]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        cotangents: list[RuleValue | None] = self.rule.transpose(self, cts, xs, active)
        return cotangents

    def __str__(self) -> str:
        operands = " ".join(m.describe() for m in self.inputs)
        return f"{self.name}[{self.rule.name}]({operands})"


_CALL_FAMILIES: dict[str, type[_CustomCall]] = {
    "custom_jvp": _CustomJVPCall,
    "custom_vjp": _CustomVJPCall,
}
