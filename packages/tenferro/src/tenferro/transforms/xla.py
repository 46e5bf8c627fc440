"""The XLA backend of ``jit``: traced programs compiled by XLA through JAX.

``tf.jit(f, backend="xla")`` traces ``f`` as the numpy backend does -- every transform
inside it (``grad``, ``vmap``, ``hvp``, ``jacrev``, ...) is tenferro's own, symbolic --
and compiles the *final* program (after tenferro's linearize, transpose, merge and CSE)
once more: each instruction through its primitive's lowering rule
(:mod:`tenferro.ops.lowering`) inside a function that ``jax.jit`` traces and XLA
compiles. JAX never differentiates, so derivatives, the complex convention and the
regularised spectral rules are exactly the numpy backend's.

* Arrays stay where they are: JAX arrays in give JAX arrays out, on their devices
  (sharded inputs keep their sharding and XLA's partitioner spreads the work); numpy
  arrays, scalars and ``tf.Tensor``s in give ``tf.Tensor``s out, as on the numpy backend.
* 64-bit types work without touching JAX's global configuration: programs are traced,
  compiled and called inside ``jax.enable_x64(True)``, a thread-local context.
* One executable per (program structure, shapes, dtypes, shardings, devices), in a
  bounded cache emptied by ``tf.clear_caches()``.
* ``jitted.lower(*args)`` gives the program's StableHLO (``as_stablehlo()``) and a
  ``jax.export.Exported`` (``export()``) to ship it.

JAX is imported only when this backend is asked for (:func:`tenferro.ops.lowering.load_jax`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np

from computegraph import BoundedCache, DictCache
from tenferro.concrete import Tensor
from tenferro.core.kinds import asarray
from tenferro.core.pytree import TreeDef, rebuilder, unflatten
from tenferro.dtypes import dtype as as_dtype
from tenferro.errors import BindingError, LoweringError, ParameterError, one_warning_per_call
from tenferro.meta import Meta
from tenferro.ops.lowering import Lowering, load_jax, missing_lowerings
from tenferro.traced.program import TracedProgram
from tenferro.traced.tensor import TracedTensor
from tenferro.traced.tracing import TRACE_DEPTH

__all__ = [
    "BACKENDS",
    "MISS",
    "FastLane",
    "Lowered",
    "XlaPlan",
    "current_backend",
    "default_backend",
]

BACKENDS = ("numpy", "xla")

_DEFAULT: ContextVar[str] = ContextVar("tenferro_default_backend", default="numpy")


def check_backend(op: str, backend: Any) -> str:
    """``backend`` if it names a backend; a ``ParameterError`` naming ``op`` otherwise."""
    if backend not in BACKENDS:
        raise ParameterError(op, f"backend must be one of {BACKENDS}, got {backend!r}")
    return str(backend)


def current_backend() -> str:
    """The backend a ``jit`` without an explicit ``backend`` uses now (see
    :func:`default_backend`)."""
    return _DEFAULT.get()


@contextlib.contextmanager
def default_backend(backend: str) -> Iterator[None]:
    """Make ``backend`` (``"numpy"`` or ``"xla"``) the backend of every ``tf.jit``
    without an explicit ``backend`` that is *called* inside the ``with`` block (this
    thread or task only)::

        with tf.default_backend("xla"):
            step(params, batch)        # step = tf.jit(...) runs on XLA here
    """
    token = _DEFAULT.set(check_backend("default_backend", backend))
    try:
        yield
    finally:
        _DEFAULT.reset(token)


# ---------------------------------------------------------------------- arguments


class DeviceLeaf:
    """A JAX array passed to a jitted function: its meta and the array itself (never
    copied to the host)."""

    __slots__ = ("_value", "meta")

    def __init__(self, value: Any, meta: Meta) -> None:
        self._value = value
        self.meta = meta


def device_leaf(leaf: Any) -> Any:
    """A JAX array as a :class:`DeviceLeaf`; anything else as ``asarray`` makes it."""
    jax = sys.modules.get("jax")  # a JAX array exists only once jax is imported
    if jax is not None and isinstance(leaf, jax.Array):
        return DeviceLeaf(leaf, Meta(tuple(leaf.shape), as_dtype(leaf.dtype, "jit")))
    return asarray(leaf)


def _x64(jax: Any) -> Any:
    """A context in which JAX keeps 64-bit dtypes (thread-local; the global flag is
    never changed)."""
    enable = getattr(jax, "enable_x64", None)
    if enable is not None and callable(enable):
        return enable(True)
    # older JAX releases keep the same thread-local switch under jax.experimental (jax is
    # optional: imported only when the XLA backend is asked for)
    from jax.experimental import enable_x64

    return enable_x64(True)


# ---------------------------------------------------------------------- plans


class _Executable:
    """A compiled program for one set of input shardings: the XLA executable, the
    captured data placed for it, and the host-side checks its extra outputs feed."""

    __slots__ = ("checks", "compiled", "data")

    def __init__(self, compiled: Any, data: tuple[Any, ...], checks: list[Any]) -> None:
        self.compiled = compiled
        self.data = data
        self.checks = checks


EMBED_BYTES = 1 << 16
"""Captured arrays up to this size are constants of the XLA program (folded with what
reads them, as ``jax.jit`` does with numpy constants); larger ones are passed to the
executable on every call, placed once where its inputs are."""

_EXECUTABLES: BoundedCache[Any, _Executable] = BoundedCache(256, "xla executables")
"""XLA executables by (plan, input shardings): a plan is one traced program structure at
one set of shapes and dtypes, so a key is (structure, shapes, dtypes, shardings and
devices). Bounded; emptied by ``tf.clear_caches()``."""


class XlaPlan:
    """A traced computation lowered to XLA: its compiled tenferro program and how each
    program input is bound (a call argument, or data the function captured); its
    executables are in ``_EXECUTABLES``."""

    __slots__ = (
        "arg_positions",
        "bind",
        "data",
        "jax",
        "jax_tree",
        "metas",
        "out_treedef",
        "passed",
        "program",
        "rebuild",
    )

    def __init__(self, outputs: list[TracedTensor], out_treedef: TreeDef) -> None:
        self.jax = load_jax()
        traced = TracedProgram(tuple(o.key for o in outputs))
        self.program = traced.program
        missing = missing_lowerings(self.program)
        if missing:
            raise LoweringError(
                "jit(backend='xla')",
                "the program uses operations that do not lower to XLA: "
                + "; ".join(missing)
                + "; run it with backend='numpy'",
            )
        arg_positions: list[int] = []
        data: list[Any] = []
        for kind, what in traced.sources:
            if kind == "arg":
                arg_positions.append(what)
            elif kind == "data":
                data.append(np.asarray(what))
            else:
                raise BindingError(
                    "jit(backend='xla')",
                    "the function reads a placeholder or a checkpointed value that is not "
                    "bound by its arguments; pass it as an argument",
                    "bind",
                )
        self.arg_positions = tuple(sorted(arg_positions))
        """The call arguments the program reads, in call order: the executable's leading
        parameters."""
        parameter = {position: index for index, position in enumerate(self.arg_positions)}
        self.passed = tuple(d for d in data if d.nbytes > EMBED_BYTES)
        """Captured data too large to embed: the executable's trailing parameters."""
        self.bind = _binder(traced.sources, parameter, data)
        """Per program input: ("arg", parameter index), ("const", array) or ("data",
        (index among the passed data, index among all data))."""
        self.data = tuple(data)
        self.metas = [o.meta for o in outputs]
        self.out_treedef = out_treedef
        self.jax_tree = _jax_tree(out_treedef)
        """Whether the result's structure is a JAX pytree too: then the executable
        returns the result itself (JAX rebuilds it, in C++), otherwise its outputs."""
        self.rebuild = rebuilder(out_treedef)
        """The result's structure from the outputs, prepared once."""

    # ------------------------------------------------------------------ tracing

    def function(
        self, platform: str, checks: list[Any] | None, embed_all: bool = False, flat: bool = False
    ) -> Callable[..., Any]:
        """The function ``jax.jit`` traces: the arguments the program reads (in call
        order), then the passed data unless ``embed_all`` embeds every captured array,
        to the result (``jax_tree``; a tuple of the outputs otherwise, or with ``flat``)
        and, when ``checks`` collects them, the values of the host-side checks."""
        program, bind, jax = self.program, self.bind, self.jax
        treedef = self.out_treedef if self.jax_tree and not flat else None
        count = len(self.arg_positions)
        everything = self.data

        def run(*flat: Any) -> Any:
            inputs = []
            for kind, what in bind:
                if kind == "arg":
                    inputs.append(flat[what])
                elif kind == "const":
                    inputs.append(what)
                elif embed_all:
                    inputs.append(everything[what[1]])
                else:
                    inputs.append(flat[count + what[0]])
            lowering = Lowering(jax, platform)
            outputs = lowering.run(program, inputs)
            result = tuple(outputs) if treedef is None else unflatten(treedef, outputs)
            if checks is None or not lowering.checks:
                return result
            jnp = jax.numpy
            checks.extend(callback for callback, _, _ in lowering.checks)
            flags = jnp.stack([jnp.asarray(when, bool) for _, _, when in lowering.checks])
            return result, flags, tuple(values for _, values, _ in lowering.checks)

        return run

    def _compile(self, inputs: Sequence[Any]) -> _Executable:
        jax = self.jax
        platform = _platform(jax, inputs)
        checks: list[Any] = []
        with _x64(jax):
            data = tuple(_placed(jax, d, inputs) for d in self.passed)
            lowered = jax.jit(self.function(platform, checks)).lower(*inputs, *data)
            return _Executable(lowered.compile(), data, checks)

    # ------------------------------------------------------------------ calls

    def inputs(self, arrays: Sequence[Any]) -> list[Any]:
        return [arrays[p] for p in self.arg_positions]

    def reads_all(self, count: int) -> bool:
        """Whether the program reads each of ``count`` flattened arguments (so the
        executable's own argument checks cover the whole call signature, and its
        parameters are the arguments as they are passed)."""
        return self.arg_positions == tuple(range(count))

    def __call__(self, arrays: Sequence[Any], lane: FastLane | None = None, key: Any = None) -> Any:
        """Run on ``arrays`` (the flattened call arguments); with a ``lane`` and its
        ``key`` for this call (every argument a JAX array), the executable used is
        remembered there."""
        inputs = self.inputs(arrays)
        jax = self.jax
        on_device = any(isinstance(a, jax.Array) for a in inputs)
        if on_device and any(isinstance(a, jax.core.Tracer) for a in inputs):
            # called inside the user's own jax transformation: inline the program there
            outputs = self.function(_platform(jax, inputs), None)(*inputs, *self.passed)
            return outputs if self.jax_tree else self.rebuild(outputs)
        sharding_key = (self, *[getattr(a, "sharding", None) for a in inputs])
        executable = _EXECUTABLES.get(sharding_key)
        if executable is None:
            executable = self._compile(inputs)
            _EXECUTABLES.put(sharding_key, executable)
        if lane is not None and key is not None:
            lane.remember(key, self, executable, arrays)
        with _x64(jax):
            outputs = executable.compiled(*inputs, *executable.data)
        return self.finish(executable, outputs, on_device)

    def finish(self, executable: _Executable, outputs: Any, on_device: bool) -> Any:
        """The call's result from the executable's ``outputs``, after its host checks:
        JAX arrays as they are (``on_device``), else ``tf.Tensor``s."""
        if executable.checks:
            outputs, flags, check_values = outputs
            flagged = np.asarray(flags)  # one transfer for all the checks' flags
            if flagged.any():
                with one_warning_per_call():  # as a numpy-backend run: its first finding warns
                    for callback, on, values in zip(
                        executable.checks, flagged, check_values, strict=True
                    ):
                        if on:
                            callback(*values)
        if self.jax_tree:
            if on_device:
                return outputs
            outputs = self.jax.tree_util.tree_leaves(outputs)
        elif on_device:
            return self.rebuild(outputs)
        return unflatten(
            self.out_treedef,
            [Tensor._wrap(np.asarray(v), m.weak) for v, m in zip(outputs, self.metas, strict=True)],
        )

    def lower(self, arrays: Sequence[Any]) -> Lowered:
        """The program lowered for ``arrays`` (see :class:`Lowered`)."""
        inputs = self.inputs(arrays)
        jax = self.jax
        with _x64(jax):
            function = jax.jit(
                self.function(_platform(jax, inputs), None, embed_all=True, flat=True)
            )
            return Lowered(jax, function, inputs, function.lower(*inputs))


def _binder(
    sources: Sequence[tuple[str, Any]], parameter: dict[int, int], data: Sequence[Any]
) -> tuple[tuple[str, Any], ...]:
    """How each program input is found in a run (see ``XlaPlan.bind``): an argument by
    its parameter index; captured data embedded as a constant when small (XLA folds
    what it can into it), else by its index among the passed data, with its index among
    all data (for a lowering that embeds everything)."""
    bind: list[tuple[str, Any]] = []
    arrays = iter(enumerate(data))
    passed = 0
    for kind, what in sources:
        if kind == "arg":
            bind.append(("arg", parameter[what]))
            continue
        position, array = next(arrays)
        if array.nbytes > EMBED_BYTES:
            bind.append(("data", (passed, position)))
            passed += 1
        else:
            bind.append(("const", array))
    return tuple(bind)


_JAX_NODES = frozenset(("*", "none", "tuple", "list", "namedtuple", "odict"))


def _jax_tree(treedef: TreeDef) -> bool:
    """Whether trees of structure ``treedef`` are JAX pytrees of the same leaves in the
    same order: no registered custom nodes (JAX does not know them), dict keys that
    sort among themselves (JAX's order; ours groups keys of mixed types)."""
    stack: list[Any] = [treedef]
    while stack:
        node = stack.pop()
        kind = node[0]
        if kind == "dict":
            try:
                if tuple(sorted(node[1])) != node[1]:
                    return False
            except TypeError:
                return False
            stack.extend(node[2])
        elif kind not in _JAX_NODES:
            return False
        elif kind == "odict":
            stack.extend(node[2])
        elif kind in ("tuple", "list", "namedtuple"):
            stack.extend(node[1])
    return True


def _platform(jax: Any, inputs: Sequence[Any]) -> str:
    """The platform the program runs on: its JAX inputs' devices', else JAX's default."""
    for value in inputs:
        if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
            return str(next(iter(value.sharding.device_set)).platform)
    return str(jax.default_backend())


def _placed(jax: Any, data: Any, inputs: Sequence[Any]) -> Any:
    """Captured data placed once where the inputs are (replicated over a mesh)."""
    for value in inputs:
        if isinstance(value, jax.Array):
            sharding = value.sharding
            if len(sharding.device_set) == 1:
                return jax.device_put(data, sharding)
            mesh = getattr(sharding, "mesh", None)
            if mesh is not None:
                replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
                return jax.device_put(data, replicated)
            return data
    return data


MISS = object()
"""What :meth:`FastLane.call` returns when the call must take the full path."""

_SOLE = object()
"""The key under which a :class:`FastLane` keeps its only executable (see there)."""


class FastLane:
    """The steady-state path of one jitted function on XLA: calls whose positional
    arguments are all JAX arrays (not tracers), handed straight to the executable their
    last such call used. Nothing is flattened, converted or validated again: JAX's
    executable checks the arguments' shapes, dtypes, shardings and devices itself, and
    a call it refuses (raising before it runs anything) takes the full path, which
    compiles for those arguments and is remembered instead.

    While the function has been called with one signature only and its program reads
    every argument, that executable is called without a lookup (the common steady
    state: a training loop, a sweep); otherwise the executable is found by one
    dictionary lookup on the arguments' abstract values (shapes, dtypes, weak types).
    Inputs are JAX arrays of fixed dtypes here, so the call needs no 64-bit context.
    Bounded; emptied by ``tf.clear_caches()``."""

    __slots__ = ("array_type", "entries")

    def __init__(self, name: str) -> None:
        self.entries: DictCache[Any, Any] = DictCache(64, f"{name} on XLA (by argument avals)")
        """(plan, executable) by the arguments' avals; under ``_SOLE``, (plan,
        executable, argument count) while there is one signature."""
        self.array_type: type | None = None
        """The concrete JAX array class (learned from the first call that used it)."""

    def key(self, args: tuple[Any, ...]) -> Any:
        """The lane's key for ``args``, or ``None`` when the call is not for the lane
        (an argument that is no concrete JAX array, no arguments, inside a trace)."""
        array_type = self.array_type
        if array_type is None:
            jax = sys.modules.get("jax")  # a JAX array exists only once jax is imported
            if not args or jax is None:
                return None
            first = args[0]
            if not isinstance(first, jax.Array) or isinstance(first, jax.core.Tracer):
                return None
            array_type = self.array_type = type(first)
        if not args or TRACE_DEPTH.get():
            return None
        for arg in args:
            if type(arg) is not array_type:
                return None
        return tuple([arg.aval for arg in args])

    def remember(
        self, key: Any, plan: XlaPlan, executable: _Executable, arrays: Sequence[Any]
    ) -> None:
        if not all(type(a) is type(arrays[0]) for a in arrays):
            return
        entries = self.entries
        entries.put(key, (plan, executable))
        signatures = len(entries) - (_SOLE in entries)
        if signatures == 1 and plan.reads_all(len(arrays)):
            entries.put(_SOLE, (plan, executable, len(arrays)))
        else:
            entries.pop(_SOLE, None)

    def call(self, args: tuple[Any, ...]) -> Any:
        """The call's result, or :data:`MISS`."""
        array_type = self.array_type
        if array_type is None or not args or TRACE_DEPTH.get():
            return MISS
        for arg in args:
            if type(arg) is not array_type:
                return MISS
        entries = self.entries
        sole = entries.get(_SOLE)
        try:
            if sole is not None and len(args) == sole[2]:
                # the executable's parameters are the arguments as passed (reads_all)
                plan, executable = sole[0], sole[1]
                data = executable.data
                outputs = executable.compiled(*args, *data) if data else executable.compiled(*args)
            else:
                entry = entries.get(tuple([arg.aval for arg in args]))
                if entry is None:
                    return MISS
                plan, executable = entry
                outputs = executable.compiled(
                    *[args[p] for p in plan.arg_positions], *executable.data
                )
        except (TypeError, ValueError):
            # compiled for other shapes, dtypes, shardings or devices: JAX ran nothing
            return MISS
        if executable.checks:
            return plan.finish(executable, outputs, True)
        return outputs if plan.jax_tree else plan.rebuild(outputs)


class Lowered:
    """A jitted function lowered to XLA for some arguments (``jitted.lower(*args)``).

    * :meth:`as_stablehlo`: the program as StableHLO text (MLIR);
    * :meth:`export`: a ``jax.export.Exported`` (serialisable with ``.serialize()``,
      callable from JAX with ``.call(*arrays)``), whose inputs are the function's array
      arguments (flattened) and whose outputs are its results (flattened);
    * :meth:`compile`: JAX's compiled executable (``.as_text()`` shows the optimised HLO).

    Data the function captured are constants of the lowered program.
    """

    def __init__(self, jax: Any, function: Any, inputs: Sequence[Any], lowered: Any) -> None:
        self._jax = jax
        self._function = function
        self._inputs = list(inputs)
        self._lowered = lowered

    def as_stablehlo(self) -> str:
        """The StableHLO (MLIR) text of the program."""
        return str(self._lowered.as_text())

    def compile(self) -> Any:
        """JAX's compiled executable of the program."""
        with _x64(self._jax):
            return self._lowered.compile()

    def export(self) -> Any:
        """The program as a ``jax.export.Exported`` (``.serialize()`` to ship it,
        ``.mlir_module()`` for its StableHLO)."""
        jax = self._jax
        with _x64(jax):
            specs = [jax.ShapeDtypeStruct(np.shape(a), _dtype_of(a)) for a in self._inputs]
            return jax.export.export(self._function)(*specs)


def _dtype_of(value: Any) -> Any:
    dtype = getattr(value, "dtype", None)
    return dtype if dtype is not None else np.asarray(value).dtype
