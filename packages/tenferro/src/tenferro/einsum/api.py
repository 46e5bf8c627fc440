"""``tf.einsum`` and ``tf.einsum_path``: parse, plan (cached), lower, run.

Plans are cached by structure: ``(subscripts, shapes, optimize, memory_limit)`` for
paths and, with the operands' metas (shapes, dtypes), for lowered programs. Without an
ellipsis, lowering along a path decides on labels alone: at never-seen extents a call
re-makes the primitives of the program lowered for its labels, ranks, dtypes and path
(when their parameters are axes, never extents) instead of lowering again; one or two
operands have one path at every extent, so they are not even parsed or planned. The
caches are bounded and emptied by :func:`tenferro.clear_caches`. An eager call with a known
structure only binds the cached primitives; a traced call emits them into the graph,
so every AD mode differentiates einsum through the primitives' own rules.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, overload

from computegraph import DictCache
from tenferro.core.flags import check_flag
from tenferro.core.params import as_int
from tenferro.core.primitive import TensorPrimitive
from tenferro.einsum.lowering import Program, lower
from tenferro.einsum.parse import OP, Equation, parse, parse_interleaved
from tenferro.einsum.path_info import PathInfo, describe
from tenferro.einsum.planners import Network, Pair, plan
from tenferro.einsum.planners.three import three_operand_path
from tenferro.errors import DTypeError, ParameterError, TenferroError
from tenferro.meta import Meta
from tenferro.ops.contraction import DotGeneral
from tenferro.ops.elementwise import Mul
from tenferro.ops.reduction import ReduceSum
from tenferro.ops.structural import BroadcastInDim, EmbedDiag, ExtractDiag, Reshape, Transpose
from tenferro.surface.convert import as_shape, asarray, prepare
from tenferro.typing import TensorT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from tenferro.concrete import Tensor

__all__ = ["clear_caches", "einsum", "einsum_path"]

CACHE_LIMIT = 1024
_plans: DictCache[Hashable, tuple[Equation, Network, list[Pair]]] = DictCache(
    CACHE_LIMIT, "einsum plans"
)
_programs: DictCache[Hashable, Program] = DictCache(CACHE_LIMIT, "einsum programs")
_structures: DictCache[Hashable, tuple[tuple[str, ...], Program, Any, Any] | None] = DictCache(
    CACHE_LIMIT, "einsum programs by ranks"
)
"""(subscripts, operand ranks, dtypes and weak flags, optimize, the path of three or more
operands) -> (each operand's labels, a program lowered for them whose primitives take
axes, not extents, or re-derive their extents from their output metas (``remake``),
then the extent of each label, distinct and above 1, that the program was lowered
for, else ``None``, and the program's :func:`_steps`), or ``None`` when its program
holds other extents."""
_terms: DictCache[Hashable, tuple[tuple[str, ...], tuple[frozenset[str], ...], frozenset[str]]]
_terms = DictCache(CACHE_LIMIT, "einsum index sets by ranks")
"""(subscripts, operand ranks, dtypes and weak flags, optimize) of three operands ->
each operand's labels, its index set and the output's, as parsed before: what
:func:`_three_operand_path` compares paths with at other extents."""
_EXTENT_FREE = (DotGeneral, Transpose, Mul, ReduceSum, ExtractDiag, EmbedDiag)
"""The lowering's primitives whose parameters are axes, never extents."""
_BY_OUTPUTS = (BroadcastInDim, Reshape)
"""The lowering's primitives whose extents follow from their output metas: a program
holding them is re-made through the label extents it was lowered for."""


def clear_caches() -> None:
    """Drop every cached einsum plan and lowered program (``tf.clear_caches`` does too:
    both caches are registered)."""
    _plans.clear()
    _programs.clear()
    _structures.clear()
    _terms.clear()


@overload
def einsum(
    subscripts: str,
    x: TensorT,
    /,
    *operands: TensorT | ArrayLike,
    optimize: Any = "auto",
    memory_limit: Any = None,
) -> TensorT: ...
@overload
def einsum(
    subscripts: str,
    x: ArrayLike,
    y: TensorT,
    /,
    *operands: TensorT | ArrayLike,
    optimize: Any = "auto",
    memory_limit: Any = None,
) -> TensorT: ...
@overload
def einsum(
    subscripts: str, /, *operands: NDArray[Any], optimize: Any = "auto", memory_limit: Any = None
) -> Tensor: ...
@overload
def einsum(*args: Any, optimize: Any = "auto", memory_limit: Any = None) -> Any: ...
def einsum(*args: Any, optimize: Any = "auto", memory_limit: Any = None) -> Any:
    """numpy's ``einsum`` for every tensor kind, planned pairwise.

    ``einsum("ij,jk->ik", a, b)`` or numpy's interleaved ``einsum(a, [0, 1], b, [1, 2],
    [0, 2])``. ``optimize``: ``"auto"`` (default), ``"greedy"``, ``"optimal"``, ``"dp"``,
    ``False`` (left to right), an explicit pair path (opt_einsum's form), a nested tuple
    tree of operand positions, or any opt_einsum-style ``PathOptimizer``.
    ``memory_limit`` (elements, or ``"max_input"``) caps the largest intermediate.
    The result has the operands' kind and numpy's promoted dtype.
    """
    if not args:
        raise ParameterError(OP, "needs subscripts and operands")
    if isinstance(args[0], str):
        subscripts, operands = args[0], list(args[1:])
    else:
        subscripts, operands = parse_interleaved(args)
    tensors = _operands(operands)
    metas = tuple(t.meta for t in tensors)
    key = (subscripts, metas, _optimize_key(optimize, subscripts), _limit_key(memory_limit))
    program = _programs.get(key)
    if program is None:
        for meta in metas:
            if meta.dtype.kind not in "ifc":
                raise DTypeError(
                    OP, f"operands must be numeric, got {meta.dtype} in subscripts {subscripts!r}"
                )
        program = _lowered(subscripts, metas, optimize, memory_limit)
        _programs.put(key, program)
    if not program.instructions:
        return tensors[program.result]
    return program.run(tensors)


def _lowered(subscripts: str, metas: tuple[Meta, ...], optimize: Any, memory_limit: Any) -> Program:
    """The program for these operands: re-made from the one lowered for their labels,
    ranks, dtypes and path when that one serves every extent, else lowered."""
    if (
        memory_limit is not None
        or "." in subscripts
        or not isinstance(optimize, (str, bool))
        or any(m.dynamic for m in metas)
    ):
        equation, _, ssa = _plan(subscripts, [m.shape for m in metas], optimize, memory_limit)
        return lower(equation, metas, ssa)
    ranks = (subscripts, tuple((m.ndim, m.dtype, m.weak) for m in metas), optimize)
    structure: Hashable
    if len(metas) <= 2:  # one path at every extent: neither parse nor plan
        structure = (*ranks, None)
        found = _structures.get(structure)
        if found is not None:
            remade = _remade(*found, metas)
            if remade is not None:
                return remade
        equation, _, ssa = _plan(subscripts, [m.shape for m in metas], optimize, None)
    else:  # the path depends on the extents; the lowering along it does not
        known = _three_operand_path(ranks, optimize, metas)
        if known is None:
            equation, network, ssa = _plan(subscripts, [m.shape for m in metas], optimize, None)
            if len(metas) == 3:
                _terms.put(ranks, (equation.inputs, network.inputs, network.output))
        else:
            ssa = known
        structure = (*ranks, tuple(tuple(pair) for pair in ssa))
        found = _structures.get(structure)
        if found is not None:
            remade = _remade(*found, metas)
            if remade is not None:
                return remade
        equation, _, ssa = _plan(subscripts, [m.shape for m in metas], optimize, None)
        structure = (*ranks, tuple(tuple(pair) for pair in ssa))
    program = lower(equation, metas, ssa)
    if structure not in _structures:
        if all(isinstance(op, _EXTENT_FREE) for op, _, _ in program.instructions):
            _structures.put(structure, (equation.inputs, program, None, _steps(program)))
        elif all(isinstance(op, _EXTENT_FREE + _BY_OUTPUTS) for op, _, _ in program.instructions):
            sizes = tuple(equation.sizes.items())
            extents = [n for _, n in sizes]
            if min(extents, default=2) > 1 and len(set(extents)) == len(extents):
                _structures.put(structure, (equation.inputs, program, sizes, _steps(program)))
            # else: a later call with distinct label extents becomes the template
        else:
            _structures.put(structure, None)
    return program


def _three_operand_path(
    ranks: Hashable, optimize: str | bool, metas: tuple[Meta, ...]
) -> list[Pair] | None:
    """The path of a three-operand call whose subscripts were planned before at these
    ranks (``_terms``), found by comparing its three paths' costs at these extents
    (:func:`three_operand_path`: ``auto`` and ``optimal`` pick the same, without parsing
    or planning); ``None`` when it must be planned in full (other planners, a tie,
    labels whose extents disagree)."""
    if len(metas) != 3 or not (optimize is True or optimize in ("auto", "optimal")):
        return None
    terms = _terms.get(ranks)
    if terms is None:
        return None
    labels, inputs, output = terms
    sizes: dict[str, int] = {}
    for term, meta in zip(labels, metas, strict=True):
        for label, extent in zip(term, meta.shape, strict=True):
            if sizes.setdefault(label, extent) != extent:
                return None
    return three_operand_path(inputs, output, sizes)


def _steps(template: Program) -> tuple[Any, ...]:
    """Per instruction of ``template``: its primitive, class, parameters, the
    parameters' part of its instance key, and whether it re-derives extents from its
    output metas: what :func:`_remade` reads, computed once per template."""
    steps = []
    for op, _, _ in template.instructions:
        params = {f: getattr(op, f) for f in op._field_names if f != "inputs"}
        steps.append((op, type(op), params, tuple(params.items()), isinstance(op, _BY_OUTPUTS)))
    return tuple(steps)


def _remade(
    labels: tuple[str, ...],
    template: Program,
    lowered_for: tuple[tuple[str, int], ...] | None,
    steps: tuple[Any, ...],
    metas: tuple[Meta, ...],
) -> Program | None:
    """``template``'s primitives re-made for operands of ``metas`` (those that re-derive
    extents from their output metas get the template's label extents mapped to these
    operands'); ``None`` when a label's extents disagree (the full path then reports
    it) or an instruction cannot be re-made. ``steps``: :func:`_steps` of ``template``."""
    sizes: dict[str, int] = {}
    for term, meta in zip(labels, metas, strict=True):
        for label, extent in zip(term, meta.shape, strict=True):
            if sizes.setdefault(label, extent) != extent:
                return None
    mapping = None if lowered_for is None else {n: sizes[label] for label, n in lowered_for}
    values = list(metas)
    instructions = []
    for (op, cls, params, items, by_outputs), (_, args, free) in zip(
        steps, template.instructions, strict=True
    ):
        operands = tuple([values[a] for a in args])
        remade: TensorPrimitive
        if by_outputs:
            assert mapping is not None
            (out,) = op.outputs
            try:
                shape = tuple([mapping[n] for n in out.shape])
                remade = cls.remake(operands, (out._replace(shape=shape),), params)
            except (KeyError, TenferroError):
                return None
        else:  # TensorPrimitive.make, its instance key spelled out once per template
            remade = cls._make_shared(operands, (cls, operands, *items), params)
        values.append(remade.outputs[0])
        instructions.append((remade, args, free))
    return Program(tuple(instructions), template.result)


def einsum_path(
    *args: Any, optimize: Any = "auto", shapes: bool = False, memory_limit: Any = None
) -> tuple[list[Pair], PathInfo]:
    """``(path, info)``: the pair path ``einsum`` would follow (opt_einsum's form) and a
    :class:`~tenferro.einsum.path_info.PathInfo` (costs, largest intermediate, a
    printable table). With ``shapes=True`` the operands are shapes."""
    shapes = check_flag("einsum_path", "shapes", shapes)
    if not args:
        raise ParameterError(OP, "needs subscripts and operands")
    if isinstance(args[0], str):
        subscripts, operands = args[0], list(args[1:])
    else:
        subscripts, operands = parse_interleaved(args)
    if shapes:
        shape_list = [as_shape(s, OP) for s in operands]
    else:
        shape_list = [tuple(asarray(o).meta.shape) for o in operands]
    equation, network, ssa = _plan(subscripts, shape_list, optimize, memory_limit)
    info = describe(equation, network, ssa)
    return info.path, info


def _operands(operands: Sequence[Any]) -> list[Any]:
    if not operands:
        raise ParameterError(OP, "needs at least one operand")
    first = type(operands[0])
    if getattr(first, "_priority", None) is not None:
        dtype = operands[0].meta.dtype
        if all(type(o) is first and o.meta.dtype == dtype for o in operands):
            return list(operands)
    return prepare(OP, operands, kinds="ifc", broadcast=False)


def _plan(
    subscripts: str,
    shapes: Sequence[tuple[int, ...]],
    optimize: Any,
    memory_limit: Any,
) -> tuple[Equation, Network, list[Pair]]:
    key = (subscripts, tuple(shapes), _optimize_key(optimize, subscripts), _limit_key(memory_limit))
    cached = _plans.get(key)
    if cached is not None:
        return cached
    equation = parse(subscripts, shapes)
    network = Network(
        tuple(frozenset(t) for t in equation.inputs), frozenset(equation.output), equation.sizes
    )
    limit = _limit(memory_limit, shapes, subscripts)

    def fail(message: str) -> Exception:
        return ParameterError(OP, f"{message} in subscripts {subscripts!r}")

    ssa = plan(network, optimize, limit, fail)
    entry = (equation, network, ssa)
    _plans.put(key, entry)
    return entry


def _limit(memory_limit: Any, shapes: Sequence[tuple[int, ...]], subscripts: str) -> int | None:
    if memory_limit is None:
        return None
    if isinstance(memory_limit, str) and memory_limit == "max_input":
        sizes = [Meta(s, None).size for s in shapes]  # type: ignore[arg-type]
        return max(sizes, default=1)
    limit = None if isinstance(memory_limit, str) else as_int(OP, "memory_limit", memory_limit)
    if limit is None or limit < 1:
        raise ParameterError(
            OP,
            f"memory_limit must be a positive integer or 'max_input', got {memory_limit!r} "
            f"in subscripts {subscripts!r}",
        )
    return limit


def _limit_key(memory_limit: Any) -> Hashable:
    return memory_limit if isinstance(memory_limit, (int, str, type(None))) else repr(memory_limit)


def _optimize_key(optimize: Any, subscripts: str) -> Hashable:
    if isinstance(optimize, (list, tuple)):
        return (type(optimize).__name__, _freeze(optimize))
    try:
        hash(optimize)
    except TypeError:
        raise ParameterError(
            OP, f"optimize {optimize!r} is not hashable in subscripts {subscripts!r}"
        ) from None
    hashable: Hashable = optimize
    return hashable


def _freeze(value: Any) -> Hashable:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    leaf: Hashable = value
    return leaf
