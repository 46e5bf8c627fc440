"""The base of every tenferro primitive.

A primitive is a frozen, hashable dataclass whose fields are its parameters plus
``inputs``, the metas of its operands. Construction runs the primitive's shape and
dtype rule (:meth:`TensorPrimitive.infer`), so a bad shape, axis or dtype is
reported when the value is built, and ``outputs`` holds the output metas.

Each primitive implements, in one place:

* ``infer()``: validation and output metas;
* ``impl(*arrays)``: the numpy evaluation;
* ``jvp(xs, ys, ts)``: its JVP, written with :mod:`tenferro.lax` on rule values
  (``xs``/``ys`` primal inputs/outputs, ``ts`` input tangents, ``None`` = zero);
* ``transpose(cts, xs, active)``: for linear uses, the cotangents of the active
  inputs (``xs[i]`` is usable only where ``active[i]`` is false);
* ``batch(xs, dims)``: its batching rule for ``vmap``;
* ``lower(lo, *values)``: its lowering to XLA, written with ``jax.lax`` /
  ``jax.numpy`` / ``jax.lax.linalg`` as ``lo`` provides them (see
  :mod:`tenferro.ops.lowering`); or ``lax_name``, the ``jax.lax`` function that is the
  whole lowering; or ``no_lowering``, the reason there is none.

The tidu :class:`~tidu.Primitive` protocol (``eval``, ``jvp_rule``,
``transpose_rule``, ``add``) is implemented here once for all primitives: the rules
run on the rule values of :mod:`tenferro.core.rules`. :class:`AddAny` is the
cotangent accumulation every primitive's ``add()`` names; the shape rules' shared
checks are :mod:`tenferro.core.checks`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar, overload

import numpy as np

from computegraph import DictCache, External, Linearized, Local, LocalValueId, ValueKey
from tenferro.core.bind import bind as _bind_operands
from tenferro.core.rules import RuleScope, RuleValue, rule_bind
from tenferro.errors import ShapeError, TenferroError
from tenferro.meta import Meta, check_size
from tenferro.typing import TensorLikeT
from tidu import ADRuleError

__all__ = [
    "ADD_ANY",
    "AddAny",
    "TensorPrimitive",
    "extent_pattern",
    "primitive",
    "register_default_rules",
]

P = TypeVar("P", bound="TensorPrimitive")

_INSTANCE_LIMIT = 1 << 16


class _DefaultRules:
    """What the base class's default rules are written with, which only the primitive
    catalogue built on this base can provide: zeros of a value's meta (the missing
    tangents of a linear primitive's JVP) and the per-example loop that batches a
    primitive without a batching rule. :mod:`tenferro.lax` provides them when it is
    loaded (:func:`register_default_rules`), so this module imports nothing above it."""

    __slots__ = ("loop", "zeros_like")

    def __init__(self) -> None:
        self.zeros_like: Callable[[Any], Any] = _not_loaded
        self.loop: Callable[
            [TensorPrimitive, Sequence[Any], Sequence[int | None]], tuple[list[Any], list[Any]]
        ] = _not_loaded


def _not_loaded(*args: Any) -> Any:
    raise TenferroError("primitive", "tenferro.lax is not loaded: import tenferro first")


_DEFAULTS = _DefaultRules()


def register_default_rules(
    *,
    zeros_like: Callable[[Any], Any],
    loop: Callable[
        [TensorPrimitive, Sequence[Any], Sequence[int | None]], tuple[list[Any], list[Any]]
    ],
) -> None:
    """Provide what the default JVP of linear primitives and the default batching rule
    are written with (see :class:`_DefaultRules`)."""
    _DEFAULTS.zeros_like = zeros_like
    _DEFAULTS.loop = loop


class TensorPrimitive:
    """Base class of the primitive catalogue (see the module documentation)."""

    __slots__ = ("_hash", "_prepared", "_serial", "_tape_plans", "outputs", "tracks_outputs")

    name: ClassVar[str] = "primitive"
    output_arity: ClassVar[int] = 1
    linear: ClassVar[bool] = False
    """Linear in every input: the JVP applies the primitive to the tangents (zeros
    for missing ones) and only ``transpose`` is written."""
    ufunc: ClassVar[Any] = None
    """The numpy function that is the whole evaluation, when there is one."""
    extent_generic: ClassVar[bool] = False
    """Its JVP and transpose rules read the operands' ranks and dtypes, never their
    extents, and emit only primitives whose parameters hold no extents: the derivative
    programs of one instance serve every instance with the same parameters, ranks and
    dtypes once each instruction is re-made from its operands' metas. The eager tape
    then derives once per such class, not once per shape (a declaration can be checked
    against fresh derivations at other extents)."""
    extent_params: ClassVar[tuple[str, ...]] = ()
    """Of an ``extent_generic`` primitive, the parameters that hold extents (a target
    shape, slice limits): they follow from the operand and output metas, so they stay
    out of its extent class and :meth:`remake` re-derives them. Such a primitive's
    :meth:`extent_facts` must give the extent pattern its rules depend on."""
    reads_extent_coincidences: ClassVar[bool] = True
    """Whether its rules may read which of its extents are equal (beyond which are 0 or
    1): ``False`` lets the eager tape's extent classes ignore such coincidences (see
    :mod:`tenferro.eager.extents`)."""
    extent_offsets: ClassVar[tuple[str, ...]] = ()
    """Parameters holding positions that :meth:`remake` keeps (a slice's starts): in a
    derivative program they must be zeros or a parameter of the node differentiated
    (both the same at every extent), never offsets derived from extents."""

    inputs: tuple[Meta, ...]
    outputs: tuple[Meta, ...]
    _hash: int
    _prepared: Any
    """What a primitive precomputes for its evaluation, built on first use (structure
    only: it depends on the instance's parameters and input metas, never on data)."""
    tracks_outputs: bool
    """Some output is floating or complex (can carry a derivative): a tape records the
    instance only then, so comparisons, ``argmax`` and other integer or bool results of
    tracked operands are untracked, as in PyTorch."""
    _tape_plans: dict[Any, Any] | None
    """How a tape records this instance, by which operands are tracked (the tape's
    plans, kept here too so recording finds them without hashing the instance; built on
    first use, structure only)."""
    _serial: int
    """A number naming this instance in traced values' key memos (set on first use by
    :mod:`tenferro.traced.tensor`; never reused, so it needs no hash of the instance)."""
    _field_names: ClassVar[tuple[str, ...]] = ()
    _flags: ClassVar[frozenset[str]] = frozenset()
    moves_data: ClassVar[bool] = False
    """Evaluation only selects or rearranges elements (no arithmetic), so it never meets
    a floating-point exception: concrete kinds skip silencing numpy's warnings."""
    direct_impl: ClassVar[bool] = True
    """``eval`` is ``(impl(*inputs),)``: concrete kinds may call ``impl`` themselves (set
    per class: false when a class has several outputs or its own ``eval``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.direct_impl = cls.output_arity == 1 and cls.eval is TensorPrimitive.eval

    _instances: ClassVar[DictCache[Any, Any]] = DictCache(_INSTANCE_LIMIT, "primitive instances")

    def extent_facts(self) -> Any:
        """What an ``extent_generic`` instance's extent class keeps of its extents, beside
        its parameters, ranks and dtypes: by default its :func:`extent_pattern` (which
        extents are equal, which are 0 or 1); ``()`` for a primitive whose derivative
        programs hold no extent at all; ``None`` when this instance has no class (its
        derivative programs are derived per shape)."""
        return extent_pattern((*self.inputs, *self.outputs))

    def any_extent_kernel(self) -> Any:
        """A function from input arrays to the output that is right for operands of any
        extents of this instance's extent class (same parameters, ranks and dtypes), or
        ``None`` (default: the ufunc that is the whole evaluation, if any): a derivative
        program made of such instructions runs unchanged at every extent."""
        return self.ufunc if self.output_arity == 1 else None

    def extent_kernel(self, shape: tuple[int, ...]) -> Any:
        """Of a single-output primitive with :attr:`extent_params`: a function from input
        arrays to the output of extents ``shape``, right for every instance of this one's
        extent class (the instance :meth:`remake` would make for that output, run without
        making it), or ``None`` (default)."""
        return None

    @classmethod
    def remake(
        cls: type[P], inputs: tuple[Meta, ...], outputs: tuple[Meta, ...], params: dict[str, Any]
    ) -> P:
        """The instance of an extent class for operands ``inputs`` giving ``outputs``:
        ``params`` are another instance's, of which :attr:`extent_params` are re-derived
        (from ``outputs``); raises when no instance fits."""
        made = cls.make(inputs, **params)
        if made.outputs != outputs:
            raise ShapeError(cls.name, f"{inputs} give {made.outputs}, not {outputs}")
        return made

    # ------------------------------------------------------------------ construction

    @classmethod
    def make(cls: type[P], inputs: tuple[Meta, ...], **params: Any) -> P:
        """The (shared) instance for these input metas and parameters."""
        key = (cls, inputs, *params.items()) if params else (cls, inputs)
        return cls._make_shared(inputs, key, params)

    @classmethod
    def _make_shared(
        cls: type[P], inputs: tuple[Meta, ...], cache_key: Any, params: dict[str, Any]
    ) -> P:
        try:
            found: P | None = cls._instances.get(cache_key)
        except TypeError:
            raise TenferroError(cls.name, f"parameters must be hashable, got {params!r}") from None
        if found is not None:
            return found
        instance = cls(inputs=inputs, **params)  # type: ignore[call-arg]
        TensorPrimitive._instances.put(cache_key, instance)
        return instance

    @overload
    @classmethod
    def bind(cls, x: TensorLikeT, /, *operands: Any, **params: Any) -> TensorLikeT: ...
    @overload
    @classmethod
    def bind(cls, *, like: TensorLikeT, **params: Any) -> TensorLikeT: ...
    @classmethod
    def bind(cls, *operands: Any, like: Any = None, **params: Any) -> Any:
        """Apply this primitive with ``params`` to ``operands`` (tensors of any kind, or
        rule values inside an AD rule); return its output, or the tuple of its outputs
        when it has several (as many as its instance declares; the catalogue's
        primitives have one, and their output is the kind of the first operand, or of
        ``like``, as the static type says).

        ``params`` are the primitive's fields, already in canonical hashable form (the
        :mod:`tenferro.lax` functions normalise what their callers pass); ``like`` gives
        the tensor kind of a primitive without operands.
        """
        metas: tuple[Meta, ...]
        count = len(operands)  # unrolled for the common arities: this is the hot path
        if count == 2:
            metas = (operands[0].meta, operands[1].meta)
        elif count == 1:
            metas = (operands[0].meta,)
        else:
            metas = tuple([o.meta for o in operands])
        key = (cls, metas, *params.items()) if params else (cls, metas)
        try:
            op = cls._instances.get(key)  # .get: subscripting a dict subclass is slower
        except TypeError:  # unhashable parameters: _make_shared reports them
            op = None
        if op is None:
            op = cls._make_shared(metas, key, params)
        if count == 1 or (count == 2 and type(operands[1]) is type(operands[0])):
            results = type(operands[0])._bind(op, operands, like)  # bind()'s common case
        else:
            results = _bind_operands(op, operands, like)
        return results[0] if len(results) == 1 else results

    def __post_init__(self) -> None:
        arity = self.input_count()
        if len(self.inputs) != arity:
            raise TenferroError(self.name, f"expects {arity} operand(s), got {len(self.inputs)}")
        outputs = tuple(self.infer())
        for meta in outputs:
            check_size(self.name, meta.shape, "the result shape")
        self._set_outputs(outputs)
        object.__setattr__(self, "_prepared", None)
        object.__setattr__(self, "_tape_plans", None)
        object.__setattr__(
            self, "_hash", hash((type(self), *(getattr(self, f) for f in self._field_names)))
        )

    def _set_outputs(self, outputs: tuple[Meta, ...]) -> None:
        """Fix the output metas (and :attr:`tracks_outputs`, which follows from them)."""
        object.__setattr__(self, "outputs", outputs)
        object.__setattr__(self, "tracks_outputs", any(meta.dtype.kind in "fc" for meta in outputs))

    def infer(self) -> Sequence[Meta]:
        """Validate the operands and parameters; return the output metas."""
        raise NotImplementedError

    # ------------------------------------------------------------------ computegraph

    def input_count(self) -> int:
        return len(self.inputs)

    def output_count(self) -> int:
        return self.output_arity

    def eval(self, inputs: Sequence[Any], ctx: Any) -> Sequence[Any]:
        if self.output_arity == 1:
            return (self.impl(*inputs),)
        outputs: Sequence[Any] = self.impl(*inputs)
        return outputs

    def impl(self, *arrays: Any) -> Any:
        """The numpy evaluation (one array, or a tuple for several outputs).

        Evaluation may meet IEEE special values: callers run it under
        ``np.errstate(all="ignore")`` (programs once per run, concrete tensors per op).
        """
        if self.ufunc is None:
            raise NotImplementedError
        return self.ufunc(*arrays)

    def kernel(self) -> Any:
        """For computegraph's generated code: the function from input arrays to the output."""
        if self.output_arity != 1:
            return None
        return self.ufunc if self.ufunc is not None else self.impl

    # ------------------------------------------------------------------ lowering to XLA

    lax_name: ClassVar[str] = ""
    """The ``jax.lax`` function that is the whole lowering (operands in order), when there
    is one (the lowering's counterpart of :attr:`ufunc`)."""
    no_lowering: ClassVar[str] = ""
    """Why this primitive has no lowering to XLA, when it has none on purpose (a program
    meeting it raises :class:`~tenferro.errors.LoweringError` with this reason)."""
    conj_commutes: ClassVar[bool] = False
    """Whether ``op(conj(x), conj(y), ...) == conj(op(x, y, ...))`` exactly, up to the
    sign of a zero (structural moves, sums, products, the real part): the XLA lowering
    then runs it on its operands' conjugates when they are at hand, deferring
    conjugation (:mod:`tenferro.ops.lowering`)."""

    def lower(self, lo: Any, *values: Any) -> Any:
        """The XLA backend's rule: the output (a tuple for several) as JAX values, from
        the operands' JAX values; ``lo`` (a :class:`tenferro.ops.lowering.Lowering`) gives
        ``jax.lax``, ``jax.numpy``, ``jax.lax.linalg`` and the target platform. Runs
        while the program is traced by ``jax.jit``, never per call. Default: the
        :attr:`lax_name` function, or a :class:`~tenferro.errors.LoweringError`."""
        if self.lax_name:
            return getattr(lo.lax, self.lax_name)(*values)
        raise lo.missing(self)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt through ``make``: the shared instance, with its cached hash and outputs.
        params = {f: getattr(self, f) for f in self._field_names if f != "inputs"}
        return (_remake, (type(self), self.inputs, params))

    def __str__(self) -> str:
        params = ", ".join(
            f"{f}={_show(value)}"
            for f in self._field_names
            if f != "inputs" and ((value := getattr(self, f)) is not False or f not in self._flags)
        )
        operands = " ".join(m.describe() for m in self.inputs)
        return f"{self.name}[{params}]({operands})" if params else f"{self.name}({operands})"

    # ------------------------------------------------------------------ AD rules

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> Sequence[RuleValue | None]:
        """The output tangents (``None`` = zero). Default: linear primitives re-apply
        themselves to the tangents; anything else has no rule."""
        if not self.linear:
            raise ADRuleError(self.name, "jvp")
        zeros_like = _DEFAULTS.zeros_like
        operands = [t if t is not None else zeros_like(x) for t, x in zip(ts, xs, strict=True)]
        return rule_bind(self, operands)

    def transpose(
        self,
        cts: tuple[RuleValue | None, ...],
        xs: tuple[RuleValue, ...],
        active: tuple[bool, ...],
    ) -> Sequence[RuleValue | None]:
        """The cotangents of the inputs (only active ones may be non-``None``)."""
        raise ADRuleError(self.name, "transpose")

    def add(self) -> TensorPrimitive:
        return ADD_ANY

    # ------------------------------------------------------------------ batching

    batch_loop: ClassVar[str] = ""
    """Why this primitive is batched by the loop fallback on purpose (empty: it has a
    batching rule, or nobody has written one yet)."""

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        """The batching rule used by ``tf.vmap`` (see :mod:`tenferro.ops.batching`):
        ``xs`` hold the whole batch, ``dims[i]`` is the batch axis of ``xs[i]`` (``None``:
        not batched); returns the outputs and their batch axes. Default: the loop
        fallback (the primitive per example, results stacked)."""
        return _DEFAULTS.loop(self, xs, dims)

    def jvp_rule(
        self,
        builder: Any,
        primal_inputs: tuple[ValueKey, ...],
        primal_outputs: tuple[ValueKey, ...],
        tangents: tuple[LocalValueId | None, ...],
        ctx: Any,
    ) -> list[LocalValueId | None]:
        scope = RuleScope(builder, self)
        xs = tuple(
            scope.value(External(k), m, False)
            for k, m in zip(primal_inputs, self.inputs, strict=True)
        )
        ys = tuple(
            scope.value(External(k), m, False)
            for k, m in zip(primal_outputs, self.outputs, strict=True)
        )
        ts = tuple(
            None if t is None else scope.value(Local(t), m, True)
            for t, m in zip(tangents, self.inputs, strict=True)
        )
        results = self.jvp(xs, ys, ts)
        return scope.results(results, self.outputs, "jvp", "output")

    def transpose_rule(
        self,
        builder: Any,
        cotangents: tuple[LocalValueId | None, ...],
        inputs: tuple[External, ...],
        role: Linearized,
        ctx: Any,
    ) -> list[LocalValueId | None]:
        scope = RuleScope(builder, self)
        active = role.active_mask
        xs = tuple(
            scope.linear_input(m) if is_active else scope.value(ref, m, False)
            for ref, m, is_active in zip(inputs, self.inputs, active, strict=True)
        )
        cts = tuple(
            None if c is None else scope.value(Local(c), m, True)
            for c, m in zip(cotangents, self.outputs, strict=True)
        )
        results = self.transpose(cts, xs, active)
        return scope.results(results, self.inputs, "transpose", "input")


def _show(value: Any) -> str:
    """A parameter as printed in graphs (dtypes by name)."""
    if isinstance(value, np.dtype):
        return str(value)
    return repr(value)


def _remake(cls: type[P], inputs: tuple[Meta, ...], params: dict[str, Any]) -> P:
    """Unpickle a primitive (see ``TensorPrimitive.__reduce__``)."""
    return cls.make(inputs, **params)


def primitive(cls: type[P]) -> type[P]:
    """Class decorator: make ``cls`` a frozen, hashable, keyword-only dataclass primitive.

    Fields are the parameters plus ``inputs``; the hash is computed once.
    """
    merged: dict[str, Any] = {"inputs": "tuple[Meta, ...]"}
    for base in reversed(cls.__mro__):
        if base is TensorPrimitive or not issubclass(base, TensorPrimitive):
            continue
        if base is not cls and "__dataclass_fields__" in base.__dict__:
            continue  # its fields are inherited anyway
        merged.update(
            (name, annotation)
            for name, annotation in inspect.get_annotations(base).items()
            if not _is_classvar(annotation)
        )
    cls.__annotations__ = merged
    made = dataclasses.dataclass(frozen=True, kw_only=True, slots=True, repr=False)(cls)
    made._field_names = tuple(f.name for f in dataclasses.fields(made))  # type: ignore[arg-type]
    # Flags (parameters defaulting to False) are shown only when set.
    made._flags = frozenset(f.name for f in dataclasses.fields(made) if f.default is False)  # type: ignore[arg-type]
    made.__hash__ = TensorPrimitive.__hash__  # type: ignore[method-assign]
    made.__repr__ = TensorPrimitive.__str__  # type: ignore[assignment, method-assign]
    _retarget_class_cells(cls, made)
    return made


def _retarget_class_cells(old: type, new: type) -> None:
    """Point zero-argument ``super()`` in ``old``'s methods at ``new``.

    ``dataclass(slots=True)`` returns a new class, but methods keep a ``__class__``
    cell naming the old one (fixed in CPython only from 3.14).
    """
    for member in new.__dict__.values():
        for function in (member, getattr(member, "__func__", None), getattr(member, "fget", None)):
            for cell in getattr(function, "__closure__", None) or ():
                try:
                    if cell.cell_contents is old:
                        cell.cell_contents = new
                except ValueError:  # an empty cell
                    continue


def _is_classvar(annotation: Any) -> bool:
    """``ClassVar[...]`` (also as a string): class attributes, never dataclass fields."""
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is ClassVar or getattr(annotation, "__origin__", None) is ClassVar


class AddAny(TensorPrimitive):
    """``a + b`` for two values of one meta, whatever it is: tidu's cotangent accumulation.

    It carries no metas (accumulated cotangents always share their value's meta),
    so a single instance serves every accumulation.
    """

    __slots__ = ()
    name = "add_any"
    linear = True

    def __init__(self) -> None:
        object.__setattr__(self, "outputs", ())
        object.__setattr__(self, "tracks_outputs", True)  # sums cotangents of any dtype
        object.__setattr__(self, "_prepared", None)
        object.__setattr__(self, "_tape_plans", None)
        object.__setattr__(self, "_hash", hash(AddAny))

    def __reduce__(self) -> Any:
        return (AddAny, ())

    def __eq__(self, other: object) -> bool:
        return type(other) is AddAny

    __hash__ = TensorPrimitive.__hash__

    def input_count(self) -> int:
        return 2

    def eval(self, inputs: Sequence[Any], ctx: Any) -> Sequence[Any]:
        return (np.add(inputs[0], inputs[1]),)

    def kernel(self) -> Any:
        return np.add

    lax_name = "add"
    conj_commutes = True

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangents, ctx):  # type: ignore[no-untyped-def]
        first, second = tangents
        if first is None or second is None:
            return [first if second is None else second]
        return list(
            builder.add_primitive(self, [Local(first), Local(second)], Linearized((True, True)))
        )

    def transpose_rule(self, builder, cotangents, inputs, role, ctx):  # type: ignore[no-untyped-def]
        (ct,) = cotangents
        return [ct if active else None for active in role.active_mask]

    def __str__(self) -> str:
        return "add_any"

    __repr__ = __str__


ADD_ANY = AddAny()


def extent_pattern(metas: Sequence[Meta]) -> tuple[tuple[int, ...], ...]:
    """The shapes of ``metas`` with each extent above 1 replaced by the (negative) number
    of its first appearance: which extents are equal, and which are 0 or 1, the facts
    rules with extents in their parameters branch on."""
    codes: dict[int, int] = {}
    get = codes.get
    pattern: list[tuple[int, ...]] = []
    for meta in metas:  # loops, not nested generators: it runs per never-seen instance
        coded: list[int] = []
        for n in meta.shape:
            if n >= 2:
                code = get(n)
                if code is None:
                    code = codes[n] = -1 - len(codes)
                n = code
            coded.append(n)
        pattern.append(tuple(coded))
    return tuple(pattern)
