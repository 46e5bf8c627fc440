"""Extension operations: user-defined primitive families with their own rules.

An operation family is a primitive like the built-in ones: a shape/dtype rule,
a numpy evaluation and, optionally, a JVP and a transpose rule. Once defined it
works on every tensor kind (``Tensor``, ``EagerTensor``, ``TracedTensor``) and
inside every transform. Differentiating a family that has no rule raises
:class:`tidu.ADRuleError` naming the family; it never yields a zero gradient.

Two ways to define one. Functionally, for a quick operation::

    def softplus_jvp(xs, ys, ts):                   # dy = dx * sigmoid(x)
        (x,), (dx,) = xs, ts
        return [lax.div(dx, lax.add(lax.full_like(x, 1), lax.exp(lax.neg(x))))]

    softplus = tf.extension.define(
        "mylib.softplus",
        infer=lambda x: x,                          # output meta(s) from input metas
        impl=lambda x: np.logaddexp(0.0, x),        # numpy evaluation
        jvp=softplus_jvp,
    )
    y = softplus(x)

or as a class, when the family has parameters and several rules::

    @tf.extension.register("mylib.scale")
    class Scale(tf.extension.ExtensionOp):
        factor: float
        linear = True

        def infer(self):
            return self.inputs
        def impl(self, x):
            return x * self.factor
        def transpose(self, cts, xs, active):
            return [lax.mul(cts[0], lax.full_like(cts[0], self.factor))]

    y = Scale.apply(x, factor=2.0)

Rules are written like the built-in ones: with :mod:`tenferro.lax` (or the
numpy-style functions) on rule values, ``None`` standing for a zero tangent.
``jvp(xs, ys, ts)`` gets primal inputs, primal outputs and input tangents and
returns one tangent per output; ``transpose(cts, xs, active)`` gets output
cotangents, the inputs (readable only where not ``active``) and the active mask,
and returns one cotangent per input (``None`` for inactive ones). Rules must
only emit operations that have rules themselves (built-in primitives do).

For ``tf.vmap``, a family may also define a batching rule ``batch(xs, dims)`` (a
method, or ``define(..., batch=...)``): ``xs`` hold the whole batch, ``dims[i]`` is
the batch axis of ``xs[i]`` (``None``: not batched); it returns the outputs and
their batch axes. :mod:`tenferro.ops.batching` has helpers (``leading`` for
families that accept leading batch axes, ``elementwise``, ``to_front``). A family
without one is batched by applying it to each example and stacking the results.

For the XLA backend (``tf.jit(f, backend="xla")``), a family may define its lowering,
``lower(lo, *values)`` (a method, or ``define(..., lower=...)`` taking the family's
keyword parameters too): the output (a tuple for several) computed from the operands'
JAX values with ``lo.lax`` (``jax.lax``), ``lo.jnp`` (``jax.numpy``) or ``lo.linalg``
(``jax.lax.linalg``); ``lo.platform`` names the target. A program using a family
without one raises :class:`~tenferro.errors.LoweringError` naming it before anything
runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np

from tenferro.core.families import FamilyPrimitive
from tenferro.core.flags import check_flag
from tenferro.core.names import public_dir as _public_dir
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.rules import RuleValue
from tenferro.dtypes import dtype as as_dtype
from tenferro.errors import ExecutionError, TenferroError
from tenferro.meta import Meta
from tidu import ADRuleError

__all__ = [
    "ExtensionFamily",
    "ExtensionOp",
    "define",
    "families",
    "lookup",
    "register",
]

E = TypeVar("E", bound="ExtensionOp")

_FAMILIES: dict[str, type[ExtensionOp]] = {}

Rule = Callable[..., Sequence[RuleValue | None]]


class ExtensionOp(FamilyPrimitive):
    """Base class of extension families (subclass, then decorate with :func:`register`).

    Subclasses declare their parameters as annotated fields and implement
    ``infer()`` (return the output metas; ``Meta`` or ``(shape, dtype)`` pairs),
    ``impl(*arrays)`` (one array, or a tuple for several outputs) and optionally
    ``jvp``/``transpose``. ``linear = True`` derives the JVP from the op itself.
    """

    __slots__ = ()
    family: ClassVar[str] = ""

    def __post_init__(self) -> None:
        raw: Any = self.infer()
        if isinstance(raw, (Meta, tuple)) and _is_single_meta(raw):
            raw = [raw]
        outputs = tuple(_as_meta(self.name, m) for m in raw)
        if not outputs:
            raise TenferroError(self.name, "infer() returned no output metas")
        self._set_outputs(outputs)
        object.__setattr__(
            self, "_hash", hash((type(self), *(getattr(self, f) for f in self._field_names)))
        )

    def kernel(self) -> Any:
        """For generated code: the checked evaluation (every path validates results)."""
        if len(self.outputs) != 1:
            return None
        return self._checked_single

    def _checked_single(self, *arrays: Any) -> Any:
        return self.eval(arrays, None)[0]

    def eval(self, inputs: Sequence[Any], ctx: Any) -> Sequence[Any]:
        """Run ``impl`` and check its results against ``infer()``'s metas: every
        evaluation path (eager, programs, generated code, backward replay) comes here."""
        result = self.impl(*inputs)
        results = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if len(results) != len(self.outputs):
            raise ExecutionError(
                self.name,
                f"impl returned {len(results)} value(s), infer() declared {len(self.outputs)}",
            )
        checked = []
        for position, (value, meta) in enumerate(zip(results, self.outputs, strict=True)):
            array = np.asarray(value)
            if array.shape != meta.shape or array.dtype != meta.dtype:
                raise ExecutionError(
                    self.name,
                    f"impl output {position} is {array.dtype}{list(array.shape)}, "
                    f"infer() declared {meta.describe()}",
                )
            checked.append(array)
        return checked


def _is_single_meta(value: Any) -> bool:
    """``value`` is one meta (``Meta`` or a ``(shape, dtype)`` pair), not a list of them."""
    if isinstance(value, Meta):
        return True
    return (
        len(value) == 2
        and isinstance(value[0], (tuple, list))
        and not isinstance(value[1], (Meta, tuple, list))
    )


def _as_meta(op: str, value: Any) -> Meta:
    if isinstance(value, Meta):
        return value
    try:
        shape, dt = value
        return Meta(tuple(int(n) for n in shape), as_dtype(dt, op))
    except (TypeError, ValueError) as error:
        if isinstance(error, TenferroError):
            raise
        raise TenferroError(
            op, f"infer() must return Meta or (shape, dtype) pairs, got {value!r}"
        ) from None


def register(family: str) -> Callable[[type[E]], type[E]]:
    """Class decorator: make an :class:`ExtensionOp` subclass the primitive of ``family``.

    ``family`` names the operation in graphs and errors (``"mylib.op"``). A later
    registration of the same name replaces the earlier one in :func:`lookup`
    (operations built from the earlier class keep working).
    """
    if not isinstance(family, str) or not family:
        raise TenferroError("extension.register", f"family must be a non-empty str, got {family!r}")

    def decorate(cls: type[E]) -> type[E]:
        if not (isinstance(cls, type) and issubclass(cls, ExtensionOp)):
            raise TenferroError(family, f"{cls!r} must subclass tenferro.extension.ExtensionOp")
        for method in ("infer", "impl"):
            if getattr(cls, method) is getattr(TensorPrimitive, method):
                raise TenferroError(family, f"an extension family must define {method}()")
        cls.name = family
        cls.family = family
        made = primitive(cls)
        _FAMILIES[family] = made
        return made

    return decorate


def lookup(family: str) -> type[ExtensionOp]:
    """The registered primitive class of ``family``."""
    try:
        return _FAMILIES[family]
    except KeyError:
        known = ", ".join(sorted(_FAMILIES)) or "none"
        raise TenferroError(
            "extension.lookup", f"no family named {family!r} (registered: {known})"
        ) from None


def families() -> dict[str, type[ExtensionOp]]:
    """All registered families by name."""
    return dict(_FAMILIES)


# ---------------------------------------------------------------------- functional form


class _FunctionalOp(ExtensionOp):
    """The primitive behind :func:`define`: functions with keyword parameters."""

    __slots__ = ()
    params: tuple[tuple[str, Any], ...]
    spec: ClassVar[ExtensionFamily]

    def infer(self) -> Any:
        return self.spec.infer(*self.inputs, **dict(self.params))

    def impl(self, *arrays: Any) -> Any:
        return self.spec.impl(*arrays, **dict(self.params))

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> Sequence[RuleValue | None]:
        rule = self.spec.jvp_rule
        if rule is None:
            return super().jvp(xs, ys, ts)
        return _as_list(rule(xs, ys, ts, **dict(self.params)))

    def transpose(
        self,
        cts: tuple[RuleValue | None, ...],
        xs: tuple[RuleValue, ...],
        active: tuple[bool, ...],
    ) -> Sequence[RuleValue | None]:
        rule = self.spec.transpose_rule
        if rule is None:
            raise ADRuleError(self.name, "transpose")
        return _as_list(rule(cts, xs, active, **dict(self.params)))

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        rule = self.spec.batch_rule
        if rule is None:
            return super().batch(xs, dims)
        outs, out_dims = rule(xs, dims, **dict(self.params))
        return _as_list(outs), _as_list(out_dims)


def _functional_lower(self: _FunctionalOp, lo: Any, *values: Any) -> Any:
    """The lowering of a family made by :func:`define` with a ``lower`` rule."""
    rule = self.spec.lower_rule
    assert rule is not None
    return rule(lo, *values, **dict(self.params))


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


class ExtensionFamily:
    """A family made by :func:`define`; call it on operands (plus keyword parameters)."""

    def __init__(
        self,
        name: str,
        infer: Callable[..., Any],
        impl: Callable[..., Any],
        jvp: Rule | None,
        transpose: Rule | None,
        linear: bool,
        batch: Callable[..., Any] | None = None,
        lower: Callable[..., Any] | None = None,
    ) -> None:
        self.name = name
        self.infer = infer
        self.impl = impl
        self.jvp_rule = jvp
        self.transpose_rule = transpose
        self.batch_rule = batch
        self.lower_rule = lower
        namespace = {"spec": self, "linear": linear, "__qualname__": name}
        if lower is not None:
            namespace["lower"] = _functional_lower
        self.primitive: type[ExtensionOp] = register(name)(
            type(f"Extension[{name}]", (_FunctionalOp,), namespace)
        )

    def __call__(self, *operands: Any, **params: Any) -> Any:
        return self.primitive.apply(*operands, params=tuple(sorted(params.items())))

    def defjvp(self, rule: Rule) -> Rule:
        """Decorator: set the JVP rule ``rule(xs, ys, ts, **params)``."""
        self.jvp_rule = rule
        return rule

    def deftranspose(self, rule: Rule) -> Rule:
        """Decorator: set the transpose rule ``rule(cts, xs, active, **params)``."""
        self.transpose_rule = rule
        return rule

    def defbatch(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: set the batching rule ``rule(xs, dims, **params)`` (see
        :mod:`tenferro.ops.batching`; without one, ``vmap`` loops over examples)."""
        self.batch_rule = rule
        return rule

    def deflower(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: set the XLA lowering ``rule(lo, *values, **params)`` (see the
        module documentation)."""
        self.lower_rule = rule
        self.primitive.lower = _functional_lower  # type: ignore[method-assign, assignment]
        return rule

    def __repr__(self) -> str:
        pairs = (
            ("jvp", self.jvp_rule),
            ("transpose", self.transpose_rule),
            ("batch", self.batch_rule),
            ("lower", self.lower_rule),
        )
        rules = [r for r, f in pairs if f]
        return f"<extension family {self.name!r} rules={rules}>"


def define(
    name: str,
    *,
    infer: Callable[..., Any],
    impl: Callable[..., Any],
    jvp: Rule | None = None,
    transpose: Rule | None = None,
    linear: bool = False,
    batch: Callable[..., Any] | None = None,
    lower: Callable[..., Any] | None = None,
) -> ExtensionFamily:
    """Define and register an operation family from functions.

    * ``infer(*metas, **params)``: the output meta(s) (``Meta`` or ``(shape, dtype)``);
      raise here to reject bad operands at build time;
    * ``impl(*arrays, **params)``: numpy evaluation, one array or a tuple;
    * ``jvp(xs, ys, ts, **params)`` / ``transpose(cts, xs, active, **params)``:
      optional AD rules (see the module documentation); ``linear=True`` means the
      family is linear in all operands, so only ``transpose`` is needed;
    * ``batch(xs, dims, **params)``: optional batching rule for ``tf.vmap``, returning
      ``(outputs, out_dims)`` (see :mod:`tenferro.ops.batching`); without one,
      ``vmap`` applies the family to each example and stacks the results;
    * ``lower(lo, *values, **params)``: optional lowering for the XLA backend (see the
      module documentation).

    Parameters are passed as keywords when calling the family and must be hashable.
    """
    if not callable(infer) or not callable(impl):
        raise TenferroError(name, "define() needs callable infer and impl")
    linear = check_flag(f"extension.define({name!r})", "linear", linear)
    return ExtensionFamily(name, infer, impl, jvp, transpose, linear, batch, lower)


__dir__ = _public_dir(__all__)
