"""A contraction run slice by slice: one primitive whose peak memory a limit bounds.

:class:`SlicedContraction` contracts operands whose labels are distinct within each
term (diagonals taken and lone labels summed beforehand, see :mod:`.lowering`) along a
pairwise path, once per combination of values of its *sliced* labels, each slice
seeing those labels with extent 1; slices of a summed label are added up, slices of an
output label fill their part of the result. Every intermediate of a slice is within the
memory limit it was planned for (:mod:`.planners.slicing`).

It is linear in each operand: its JVP is the sum of the contraction with one operand
replaced by its tangent, and its transpose for an operand is the contraction of the
cotangent with the other operands (conjugated) into that operand's labels -- planned,
and sliced, for the same memory limit. So gradients slice as the value does, in eager,
traced and vmapped code; ``vmap`` adds the batch axis as one more label and plans again.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from computegraph import DictCache
from tenferro import lax
from tenferro.core.families import FamilyPrimitive, family
from tenferro.core.rules import RuleValue
from tenferro.einsum.lowering import Program, finish, lower, prepare_operands
from tenferro.einsum.parse import Equation
from tenferro.einsum.planners import auto, plan
from tenferro.einsum.planners.network import Network, Pair, binarize
from tenferro.einsum.planners.slicing import slice_to_fit
from tenferro.errors import DTypeError, ParameterError, ShapeError
from tenferro.meta import Meta
from tenferro.ops.batching import move_axis

__all__ = ["SlicedContraction", "sliced_plan"]

OP = "einsum"
_PLANS: DictCache[Hashable, tuple[tuple[Pair, ...], tuple[str, ...]]] = DictCache(
    256, "einsum sliced plans"
)


def sliced_plan(
    terms: Sequence[str], output: str, shapes: Sequence[Sequence[int]], memory_limit: int
) -> tuple[tuple[Pair, ...], tuple[str, ...]]:
    """``(pairs, sliced)``: ``auto``'s path for a contraction of distinct-label
    ``terms`` into ``output`` and the labels to slice so its intermediates fit
    ``memory_limit`` (cached by structure)."""
    key = (tuple(terms), output, tuple(map(tuple, shapes)), memory_limit)
    found = _PLANS.get(key)
    if found is not None:
        return found
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes, strict=True):
        sizes.update(zip(term, shape, strict=True))
    network = Network(tuple(frozenset(t) for t in terms), frozenset(output), sizes)
    count = len(terms)
    if count == 1:
        pairs: tuple[Pair, ...] = ()
    else:

        def fail(message: str) -> Exception:
            return ParameterError(OP, message)

        if count == 2:
            ssa = plan(network, "auto", None, fail)
        else:
            ssa = auto(network, max(memory_limit, network.size(network.output)))
        pairs = tuple(binarize(ssa, count))
    sliced = slice_to_fit(network, pairs, memory_limit) if pairs else ()
    found = (pairs, sliced)
    _PLANS.put(key, found)
    return found


@family("einsum.sliced_contraction")
class SlicedContraction(FamilyPrimitive):
    """``subscripts`` contracted along ``pairs`` (SSA), one slice per value of the
    ``sliced`` labels; ``memory_limit`` is what derivative contractions are planned
    for (see the module documentation)."""

    subscripts: str
    pairs: tuple[Pair, ...]
    sliced: tuple[str, ...]
    memory_limit: int

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "_prepared", None)

    def terms(self) -> tuple[list[str], str]:
        left, output = self.subscripts.split("->")
        return left.split(","), output

    def sizes(self) -> dict[str, int]:
        terms, _ = self.terms()
        sizes: dict[str, int] = {}
        for term, meta in zip(terms, self.inputs, strict=True):
            sizes.update(zip(term, meta.shape, strict=True))
        return sizes

    def infer(self) -> list[Meta]:
        terms, output = self.terms()
        if len(terms) != len(self.inputs):
            raise ParameterError(
                self.name,
                f"{len(terms)} terms in {self.subscripts!r} for {len(self.inputs)} operands",
            )
        dtype = self.inputs[0].dtype
        sizes: dict[str, int] = {}
        for term, meta in zip(terms, self.inputs, strict=True):
            if meta.dtype != dtype:
                raise DTypeError(
                    self.name, f"operands must share one dtype, got {meta.dtype} and {dtype}"
                )
            if len(term) != meta.ndim or len(set(term)) != len(term):
                raise ShapeError(self.name, f"term {term!r} does not fit {meta.describe()}")
            for label, extent in zip(term, meta.shape, strict=True):
                if sizes.setdefault(label, extent) != extent:
                    raise ShapeError(
                        self.name, f"label {label!r} has extents {sizes[label]} and {extent}"
                    )
        return [Meta(tuple(sizes[label] for label in output), dtype)]

    def lower(self, lo: Any, *values: Any) -> Any:
        """One contraction of the whole network: XLA plans its own memory, so the slices
        that bound the numpy evaluation's intermediates are not needed (the values are
        the same sum)."""
        return lo.jnp.einsum(self.subscripts, *values, precision=lo.lax.Precision.HIGHEST)

    def impl(self, *arrays: Any) -> Any:
        plan_ = self._prepared
        if plan_ is None:
            plan_ = self._prepare()
            object.__setattr__(self, "_prepared", plan_)
        program, operand_index, output_index, ranges = plan_
        out = np.zeros(self.outputs[0].shape, self.outputs[0].dtype)
        for values in itertools.product(*ranges):
            views = [a[index(values)] for a, index in zip(arrays, operand_index, strict=True)]
            part = program.evaluate(views)
            target = output_index(values)
            out[target] += part
        return out

    def _prepare(self) -> tuple[Any, list[Any], Any, list[range]]:
        """The program of one slice, how to index the operands and the output per
        slice, and the slices' ranges (structure only)."""
        terms, output = self.terms()
        sizes = self.sizes()
        sliced = self.sliced
        position = {label: k for k, label in enumerate(sliced)}
        inner_terms = ["".join(c for c in t if c not in position) for t in terms]
        inner_output = "".join(c for c in output if c not in position)
        equation = Equation(
            tuple(inner_terms),
            inner_output,
            {c: n for c, n in sizes.items() if c not in position},
            ",".join(inner_terms) + "->" + inner_output,
            tuple(frozenset() for _ in terms),
        )
        metas = [
            Meta(tuple(sizes[c] for c in t), meta.dtype)
            for t, meta in zip(inner_terms, self.inputs, strict=True)
        ]
        program = lower(equation, metas, self.pairs)

        def indexer(term: str) -> Any:
            axes = [(axis, position[c]) for axis, c in enumerate(term) if c in position]
            rank = len(term)

            def index(values: tuple[int, ...]) -> tuple[Any, ...]:
                full: list[Any] = [slice(None)] * rank
                for axis, k in axes:
                    full[axis] = values[k]
                return tuple(full)

            return index

        ranges = [range(sizes[c]) for c in sliced]
        return program, [indexer(t) for t in terms], indexer(output), ranges

    # ------------------------------------------------------------------ rules

    def jvp(
        self, xs: tuple[RuleValue, ...], ys: tuple[RuleValue, ...], ts: tuple[RuleValue | None, ...]
    ) -> list[RuleValue | None]:
        params = self._params()
        total = None
        for k, tangent in enumerate(ts):
            if tangent is None:
                continue
            operands = list(xs)
            operands[k] = tangent
            total = lax.add_tangents(total, SlicedContraction.bind(*operands, **params))
        return [total]

    def transpose(
        self, cts: tuple[RuleValue | None, ...], xs: tuple[RuleValue, ...], active: tuple[bool, ...]
    ) -> list[RuleValue | None]:
        (ct,) = cts
        chosen = [k for k, is_active in enumerate(active) if is_active]
        if len(chosen) > 1:
            raise lax.not_linear(self, "more than one operand")
        results: list[RuleValue | None] = [None] * len(xs)
        if ct is None or not chosen:
            return results
        (k,) = chosen
        terms, output = self.terms()
        others = [j for j in range(len(xs)) if j != k]
        new_terms = [output] + [terms[j] for j in others]
        operands = [ct] + [lax.conj(xs[j]) for j in others]
        results[k] = _contract(new_terms, terms[k], operands, self.memory_limit)
        return results

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        terms, output = self.terms()
        used = set("".join(terms))
        label = next(chr(c) for c in itertools.count(0x2100) if chr(c) not in used)
        operands, new_terms = [], []
        for x, d, term in zip(xs, dims, terms, strict=True):
            if d is None:
                operands.append(x)
                new_terms.append(term)
            else:
                operands.append(move_axis(x, d, 0))
                new_terms.append(label + term)
        return [_contract(new_terms, label + output, operands, self.memory_limit)], [0]

    def _params(self) -> dict[str, Any]:
        return {
            "subscripts": self.subscripts,
            "pairs": self.pairs,
            "sliced": self.sliced,
            "memory_limit": self.memory_limit,
        }


def _contract(terms: list[str], output: str, operands: list[Any], memory_limit: int) -> Any:
    """``output`` from distinct-label ``terms`` of ``operands``, planned and sliced for
    ``memory_limit`` (labels of a term that are nowhere else are summed first)."""
    counts: dict[str, int] = {}
    for term in terms:
        for c in term:
            counts[c] = counts.get(c, 0) + 1
    clean_terms, clean = [], []
    for term, x in zip(terms, operands, strict=True):
        alone = tuple(axis for axis, c in enumerate(term) if counts[c] == 1 and c not in output)
        if alone:
            x = lax.reduce_sum(x, alone)
            term = "".join(c for axis, c in enumerate(term) if axis not in alone)
        clean_terms.append(term)
        clean.append(x)
    shapes = [tuple(x.meta.shape) for x in clean]
    pairs, sliced = sliced_plan(clean_terms, output, shapes, memory_limit)
    return SlicedContraction.bind(
        *clean,
        subscripts=",".join(clean_terms) + "->" + output,
        pairs=pairs,
        sliced=sliced,
        memory_limit=memory_limit,
    )


def lower_sliced(
    equation: Equation,
    metas: Sequence[Meta],
    ssa: Sequence[Pair],
    sliced: tuple[str, ...],
    memory_limit: int,
) -> Program:
    """The program computing ``equation`` for operands of ``metas``: each operand's own
    reductions, then the pairs of the binary SSA path ``ssa`` as one
    :class:`SlicedContraction` over the ``sliced`` labels, planned for ``memory_limit``."""
    builder, slots, terms, needed = prepare_operands(equation, metas)
    output = equation.output
    unique = "".join(dict.fromkeys(output))
    slot = builder.emit(
        SlicedContraction,
        tuple(slots),
        subscripts=",".join(terms) + "->" + unique,
        pairs=tuple(tuple(pair) for pair in ssa),
        sliced=tuple(label for label in sliced if any(label in t for t in terms)),
        memory_limit=memory_limit,
    )
    return finish(builder, slot, unique, output, needed, len(metas))
