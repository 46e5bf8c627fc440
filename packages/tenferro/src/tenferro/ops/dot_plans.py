"""How ``dot_general`` runs on numpy arrays: plans chosen from the operands' memory layout.

:func:`for_operands` is what a ``dot_general`` instance evaluates with, decided once
from its dimension numbers and operand metas: one of the plans below, an outer
product's (a broadcast multiply, or ``numpy.einsum``'s subscripts), or :data:`GENERAL`
for data-dependent extents.

A contraction is one (batched) matrix product of the operands viewed as
``[batch, rows, inner]`` and ``[batch, inner, columns]`` (:class:`Product`). Which views
exist without copying depends on the strides: a group of axes (the batch, the free or
the contracted axes of one operand) becomes one matrix axis without a copy only when
its axes follow each other in memory. The contracted (and batch) axes may be paired in
any order, so :func:`plan` takes the pairing order that leaves the fewest elements to
copy. Free axes keep their order: the result is in C order, as a following
contraction's plan expects (taking them in memory order would spare a copy of a
transposed operand but hand its layout on, and a later contraction may pay a copy
for it instead).

When an operand's contracted axes sit between its free axes in memory (``[P, C, Q]``,
a matrix applied to a middle leg of a tensor), every single matrix product must copy
it; :class:`Broadcast` instead multiplies the other operand into each ``[C, Q]`` slice
(one broadcast batched ``matmul``), writing the result in that operand's own layout
with ``C`` replaced by the other operand's free axes, which is what a following
contraction of the same tensor network reads without a copy.

A product of two matrices is also oriented: BLAS runs a product with few rows and many
columns faster than its transpose, and one of two transposed operands with few rows
slower than either alternative, so it is computed as the transpose of the product of
the transposed operands when that has fewer rows (:func:`_flipped`); the result is
then a transposed view, which a following product of matrices reads as it reads any
(a tensor's product keeps its C-ordered result: a transposed view of a tensor could
cost the next contraction a copy).

When the operation reading the result is known (a program's next contraction),
:func:`for_reader` weighs every plan the layout allows -- each product also with its
factors swapped (the result laid out rhs free axes first), each broadcast product
also transposed (``[P, Q, M]``) or of an operand whose contracted axes come last in
memory (``[P, Q, C]``) -- and takes the one whose result the two copy least in all.

Plans change neither the value nor the output axis order, only the memory layout of
the result and the order in which contracted terms are summed (rounding).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from computegraph import DictCache
from tenferro.meta import Meta

__all__ = [
    "GENERAL",
    "Broadcast",
    "Function",
    "Planned",
    "Problem",
    "Product",
    "any_extent",
    "c_strides",
    "copies",
    "for_operands",
    "for_reader",
    "free_axes",
    "general",
    "plan",
]

_LAYOUT_LIMIT = 8
"""Plans kept per ``dot_general`` instance for operand layouts other than C order."""

_FEW_ROWS = 8
"""Products of two transposed operands with fewer rows are slow in BLAS."""

_MIN_COLUMNS = 4
"""A broadcast product writes rows of at least this many elements (shorter rows leave
one matrix product over a copied operand faster)."""

_MIN_MATRIX = 16
"""... and multiplies a matrix of at least this many elements into each slice."""

Numbers = tuple[tuple[int, ...], ...]
"""``dot_general``'s dimension numbers: lhs and rhs contracting, lhs and rhs batch axes."""

Reader = Callable[[tuple[int, ...]], int]
"""The :func:`copies` of the operation reading a result, given the result's strides."""

Tag = tuple[str, int]
"""An axis of a product: ``("b", pair)``, ``("l", lhs axis)`` or ``("r", rhs axis)``."""


class Problem(NamedTuple):
    """What a plan depends on: dimension numbers, shapes, strides and dtype."""

    numbers: Numbers
    lhs_shape: tuple[int, ...]
    lhs_strides: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    rhs_strides: tuple[int, ...]
    itemsize: int
    floating: bool
    """A BLAS dtype: products are oriented and broadcast for those only."""


class Planned:
    """A plan for operands of one layout; :meth:`for_layout` finds the plan of another.
    Calling it evaluates the product of two arrays of its problem's shapes (of any
    layout: plans differ in speed only)."""

    __slots__ = (
        "copies",
        "last",
        "layouts",
        "lhs_strides",
        "out",
        "problem",
        "rhs_strides",
        "split",
    )

    def __init__(
        self,
        problem: Problem,
        split: tuple[int, ...],
        out: tuple[int, ...] | None,
        copies: int,
    ) -> None:
        self.problem = problem
        self.lhs_strides, self.rhs_strides = problem.lhs_strides, problem.rhs_strides
        self.split, self.out = split, out
        self.copies = copies
        """Elements copied to view the operands as matrices."""
        self.layouts: dict[tuple[Any, Any], Any] | None = None
        self.last: tuple[Any, Any, Any] | None = None  # strides and plan of for_layout's last

    def result_strides(self) -> tuple[int, ...]:
        """The strides of the result for operands of the problem's layout: the product
        is written in C order as ``split`` and handed on transposed by ``out``."""
        strides = c_strides(self.split, self.problem.itemsize)
        return strides if self.out is None else tuple([strides[a] for a in self.out])

    def for_layout(self, lhs_strides: tuple[int, ...], rhs_strides: tuple[int, ...]) -> Any:
        """The plan for operands of these strides (kept per layout)."""
        key = (lhs_strides, rhs_strides)
        layouts = self.layouts
        if layouts is None:
            layouts = self.layouts = {}
        found = layouts.get(key)
        if found is None:
            found = plan(self.problem._replace(lhs_strides=key[0], rhs_strides=key[1]))
            if len(layouts) >= _LAYOUT_LIMIT:
                layouts.clear()
            layouts[key] = found
        self.last = (lhs_strides, rhs_strides, found)
        return found

    def __call__(self, lhs: Any, rhs: Any) -> Any:
        raise NotImplementedError


class Product(Planned):
    """``[B, M, K] @ [B, K, N]`` of views (numpy copies only where the layout forces
    it), its result split into the separate axes and transposed to ``dot_general``'s
    order. ``swap``: the rhs is the product's first factor (``[B, N, K] @ [B, K, M]``,
    a result laid out with the rhs free axes first); perms and matrices are then those
    of the factors, rhs first."""

    __slots__ = ("lhs_matrix", "lhs_perm", "rhs_matrix", "rhs_perm", "swap")

    def __init__(
        self,
        problem: Problem,
        perms: tuple[tuple[int, ...] | None, tuple[int, ...] | None],
        matrices: tuple[tuple[int, ...], tuple[int, ...]],
        split: tuple[int, ...],
        out: tuple[int, ...] | None,
        copies: int = 0,
        swap: bool = False,
    ) -> None:
        super().__init__(problem, split, out, copies)
        self.lhs_perm, self.rhs_perm = perms
        self.lhs_matrix, self.rhs_matrix = matrices
        self.swap = swap

    def __call__(self, lhs: Any, rhs: Any) -> Any:
        if self.swap:
            lhs, rhs = rhs, lhs
        if self.lhs_perm is not None:
            lhs = lhs.transpose(self.lhs_perm)
        if self.rhs_perm is not None:
            rhs = rhs.transpose(self.rhs_perm)
        product = np.matmul(lhs.reshape(self.lhs_matrix), rhs.reshape(self.rhs_matrix))
        product = product.reshape(self.split)
        return product if self.out is None else product.transpose(self.out)


class Broadcast(Planned):
    """``small[M, K] @ big[P, K, Q]`` broadcast over ``P``: a ``[P, M, Q]`` result, or
    ``big[P, Q, K] @ small[K, M]``, a ``[P, Q, M]`` one (``transposed``), split into the
    separate axes and transposed to ``dot_general``'s order."""

    __slots__ = ("big_is_lhs", "big_perm", "big_shape", "small_perm", "small_shape", "transposed")

    def __init__(
        self,
        problem: Problem,
        big_is_lhs: bool,
        big: tuple[tuple[int, ...] | None, tuple[int, int, int]],
        small: tuple[tuple[int, ...] | None, tuple[int, int]],
        split: tuple[int, ...],
        out: tuple[int, ...] | None,
        copies: int = 0,
        transposed: bool = False,
    ) -> None:
        super().__init__(problem, split, out, copies)
        self.big_is_lhs = big_is_lhs
        self.big_perm, self.big_shape = big
        self.small_perm, self.small_shape = small
        self.transposed = transposed

    def __call__(self, lhs: Any, rhs: Any) -> Any:
        big, small = (lhs, rhs) if self.big_is_lhs else (rhs, lhs)
        if self.big_perm is not None:
            big = big.transpose(self.big_perm)
        if self.small_perm is not None:
            small = small.transpose(self.small_perm)
        big, small = big.reshape(self.big_shape), small.reshape(self.small_shape)
        if self.transposed:
            product = np.matmul(big.swapaxes(1, 2), small.T)
        else:
            product = np.matmul(small, big)
        product = product.reshape(self.split)
        return product if self.out is None else product.transpose(self.out)


def _nn(lhs: Any, rhs: Any) -> Any:
    return lhs.dot(rhs)


def _tn(lhs: Any, rhs: Any) -> Any:
    return lhs.T.dot(rhs)


def _nt(lhs: Any, rhs: Any) -> Any:
    return lhs.dot(rhs.T)


def _tt(lhs: Any, rhs: Any) -> Any:
    return lhs.T.dot(rhs.T)


def _nn_flipped(lhs: Any, rhs: Any) -> Any:
    return rhs.T.dot(lhs.T).T


def _tn_flipped(lhs: Any, rhs: Any) -> Any:
    return rhs.T.dot(lhs).T


def _nt_flipped(lhs: Any, rhs: Any) -> Any:
    return rhs.dot(lhs.T).T


def _tt_flipped(lhs: Any, rhs: Any) -> Any:
    return rhs.dot(lhs).T


def _stacked(lhs: Any, rhs: Any) -> Any:
    return np.matmul(lhs, rhs)


_MATRICES = {
    (False, False, False): _nn,
    (True, False, False): _tn,
    (False, True, False): _nt,
    (True, True, False): _tt,
    (False, False, True): _nn_flipped,
    (True, False, True): _tn_flipped,
    (False, True, True): _nt_flipped,
    (True, True, True): _tt_flipped,
}
"""Two matrices with one contracted axis, by (lhs contracted along its rows, rhs along
its columns, flipped): ``ndarray.dot`` of (transposed) views; flipped, the transpose of
the product of the transposed operands."""


Function = type(_nn)
"""The type of the plans that are plain functions of the two arrays (two matrices, two
stacks of matrices): right for operands of any extents and layout (numpy reads
transposed matrices without copying), so they run without a look at the layout."""


def c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """The strides of a C-ordered array of ``shape``."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def plan(problem: Problem, c_order: bool = False, consumer: Reader | None = None) -> Any:
    """The plan for ``problem`` (see the module docstring): a :data:`Function` for two
    matrices or stacks of matrices, else a :class:`Product` or :class:`Broadcast`.
    ``c_order``: the problem's strides are those of C order (its layout's choices are
    then kept per dimension numbers and which extents are 0 or 1). ``consumer``: the
    elements the operation reading the result copies (:func:`copies`), as a function
    of the result's strides; the plan then minimizes the elements both copy (the result
    laid out as its reader wants), keeping the plan it would choose alone on ties."""
    lc, rc, lb, rb = problem.numbers
    lhs_shape, rhs_shape = problem.lhs_shape, problem.rhs_shape
    nb = len(lb)
    if len(lhs_shape) == len(rhs_shape) == 2 and len(lc) == 1 and not nb:
        return _matrices(problem)
    if (
        len(lhs_shape) == len(rhs_shape) == nb + 2
        and lb == rb == tuple(range(nb))
        and lc == (nb + 1,)
        and rc == (nb,)
    ):
        return _stacked  # matmul layout: numpy's matmul reads any layout
    chosen = _instantiate(_layout_of(problem, c_order), problem)
    if consumer is None:
        return chosen
    better = for_reader(problem, consumer, chosen)
    return chosen if better is None else better


def for_reader(problem: Problem, consumer: Reader, alone: Any = None) -> Planned | None:
    """A plan for ``problem`` whose result its reader takes with fewer copies: fewer
    elements copied by both (``consumer`` gives the reader's :func:`copies` for the
    result's strides) than with the plan chosen alone (``alone``, when known); the
    first such plan of :func:`_options` on ties. ``None`` when the plan chosen alone
    serves as well or ``problem`` has no other plan (matrices)."""
    if alone is None:
        alone = plan(problem)
    if not isinstance(alone, Planned):
        return None
    reader = consumer(alone.result_strides())
    if not reader:
        return None  # its reader copies nothing
    total = alone.copies + reader
    better = None
    known = {alone.result_strides(): reader}  # options often share a result layout
    for option in _options(_layout_of(problem, False), problem):
        if option.copies >= total:
            continue
        strides = option.result_strides()
        found = known.get(strides)
        if found is None:
            found = known[strides] = consumer(strides)
        if option.copies + found < total:
            better, total = option, option.copies + found
    return better


def _layout_of(problem: Problem, c_order: bool) -> _Layout:
    """``problem``'s layout choices, kept per dimension numbers, extent pattern and
    memory order when its operands are dense (``c_order``: known to be in C order)."""
    if c_order:
        orders: Any = None
    else:
        orders = (
            _dense_order(problem.lhs_shape, problem.lhs_strides, problem.itemsize),
            _dense_order(problem.rhs_shape, problem.rhs_strides, problem.itemsize),
        )
        if None in orders:
            return _layout(problem)  # strided or overlapping operands: planned each time
    key = (
        problem.numbers,
        _pattern(problem.lhs_shape),
        _pattern(problem.rhs_shape),
        problem.floating,
        orders,
    )
    layout = _LAYOUTS.get(key)
    if layout is None:
        layout = _layout(problem)
        _LAYOUTS.put(key, layout)
    return layout


def copies(problem: Problem) -> int:
    """How many elements the plan for ``problem`` copies to view its operands as
    matrices: a layout's cost to the operation reading it."""
    found = plan(problem)
    if isinstance(found, Planned):
        return found.copies
    # two matrices or stacks of them: numpy copies an operand whose matrices BLAS can't read
    total = 0
    for shape, strides in (
        (problem.lhs_shape, problem.lhs_strides),
        (problem.rhs_shape, problem.rhs_strides),
    ):
        rows, columns = (shape[-2], strides[-2]), (shape[-1], strides[-1])
        if _order(rows, columns, problem.itemsize) is None:
            total += math.prod(shape)
    return total


def _matrices(problem: Problem) -> Any:
    """The plan of two matrices with one contracted axis."""
    (lc, rc, _, _), lhs_shape, lhs_strides, rhs_shape, rhs_strides, itemsize, floating = problem
    lhs_t, rhs_t = lc == (0,), rc == (1,)
    if lhs_t:  # as the (rows, contracted) matrix the product reads
        lhs_shape, lhs_strides = lhs_shape[::-1], lhs_strides[::-1]
    if rhs_t:  # as (contracted, columns)
        rhs_shape, rhs_strides = rhs_shape[::-1], rhs_strides[::-1]
    lhs_rows = _order((lhs_shape[0], lhs_strides[0]), (lhs_shape[1], lhs_strides[1]), itemsize)
    rhs_rows = _order((rhs_shape[0], rhs_strides[0]), (rhs_shape[1], rhs_strides[1]), itemsize)
    # neither order (None): numpy copies the operand to row order first
    m, n = lhs_shape[0], rhs_shape[1]
    flip = _flipped(lhs_rows is not False, rhs_rows is not False, m, n, floating)
    return _MATRICES[lhs_t, rhs_t, flip]


def _dense_order(
    shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int
) -> tuple[int, ...] | None:
    """The axes of a dense array (a C-ordered array, transposed) from the largest stride
    to the smallest; ``None`` for strided, overlapping or reversed views."""
    order = tuple(_by_memory(range(len(shape)), strides))
    dense = c_strides([shape[a] for a in order], itemsize)
    if any(strides[a] != step for a, step in zip(order, dense, strict=True)):
        return None
    return order


def _pattern(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple([n if n < 2 else 2 for n in shape])


class _Candidate(NamedTuple):
    """A product's axis groups, whether each operand is copied to view them as
    matrices, and its result's axes."""

    lhs_perm: tuple[int, ...] | None
    rhs_perm: tuple[int, ...] | None
    groups: tuple[tuple[int, ...], ...]  # lhs batch, lhs free, contracted (lhs), rhs free
    copies: tuple[bool, bool]
    split: tuple[tuple[int, int], ...]  # (operand, axis) of each result axis
    out: tuple[int, ...] | None


class _Side(NamedTuple):
    """A broadcast product with one operand as ``[P, C, Q]``: its permutation and axis
    groups, the other operand's as ``[M, C]``, whether that copies, the result's axes."""

    big_is_lhs: bool
    extra: bool  # contracted axes last in memory (``[P, Q, C]``): offered to readers only
    big_perm: tuple[int, ...] | None
    outer: tuple[int, ...]
    inner: tuple[int, ...]
    rest: tuple[int, ...]
    small_perm: tuple[int, ...] | None
    small_free: tuple[int, ...]
    small_copies: bool
    split: tuple[tuple[int, int], ...]
    out: tuple[int, ...] | None


class _Layout(NamedTuple):
    candidates: tuple[_Candidate, ...]
    sides: tuple[_Side, ...]


_LAYOUTS: DictCache[Any, _Layout] = DictCache(4096, "dot_general layouts")
"""(dimension numbers, which extents are 0 or 1, BLAS dtype, each operand's axes in
memory order or ``None`` for C order) -> the choices of a product of dense operands:
what a never-seen shape only completes with its extents."""


def _layout(problem: Problem) -> _Layout:
    """The extent-free choices for ``problem``'s layout: each pairing order's product,
    and the broadcast products its operands allow."""
    (lc, rc, lb, rb), lhs_shape, lhs_strides, rhs_shape, rhs_strides, itemsize, _ = problem
    lf = [a for a in range(len(lhs_shape)) if a not in (*lc, *lb)]
    rf = [a for a in range(len(rhs_shape)) if a not in (*rc, *rb)]
    lf_order, rf_order = lf, rf  # the result in C order (see the module docstring)
    candidates = []
    for batch in _pair_orders(lb, rb, lhs_strides, rhs_strides):
        for inner in _pair_orders(lc, rc, lhs_strides, rhs_strides):
            lhs_groups = ([lb[i] for i in batch], lf_order, [lc[i] for i in inner])
            rhs_groups = ([rb[i] for i in batch], [rc[i] for i in inner], rf_order)
            copies = (
                _copies(lhs_shape, lhs_strides, lhs_groups, itemsize),
                _copies(rhs_shape, rhs_strides, rhs_groups, itemsize),
            )
            tags: list[Tag] = [("b", i) for i in batch]
            tags += [("l", a) for a in lf_order] + [("r", a) for a in rf_order]
            candidates.append(
                _Candidate(
                    _perm([a for g in lhs_groups for a in g]),
                    _perm([a for g in rhs_groups for a in g]),
                    (tuple(lhs_groups[0]), tuple(lf_order), tuple(lhs_groups[2]), tuple(rf_order)),
                    copies,
                    _split(problem, tags),
                    _to_output(problem, tags),
                )
            )
    sides = () if lb or not problem.floating else _sides(problem, lf, rf)
    return _Layout(tuple(candidates), sides)


def _sides(problem: Problem, lf: list[int], rf: list[int]) -> tuple[_Side, ...]:
    """The broadcast products ``problem``'s layout allows: an operand whose contracted
    axes form one block between free axes in memory (``[P, C, Q]``), or after them
    (``[P, Q, C]``, each split of the free axes into ``P`` and ``Q``), each group of it
    viewed as one axis without a copy."""
    (lc, rc, _, _), lhs_shape, lhs_strides, rhs_shape, rhs_strides, itemsize, _ = problem
    found = []
    for big_is_lhs, big, small in (
        (True, (lhs_shape, lhs_strides, lc, lf, "l"), (rhs_shape, rhs_strides, rc, rf, "r")),
        (False, (rhs_shape, rhs_strides, rc, rf, "r"), (lhs_shape, lhs_strides, lc, lf, "l")),
    ):
        shape, strides, mine, free, tag = big
        other_shape, other_strides, theirs, other_free, other_tag = small
        memory = [a for a in _by_memory(range(len(shape)), strides) if shape[a] > 1]
        inner = [a for a in memory if a in mine]
        if not inner:
            continue
        start = memory.index(inner[0])
        if memory[start : start + len(inner)] != inner:
            continue  # the contracted axes are not one block in memory
        before, after = memory[:start], memory[start + len(inner) :]
        if before and after:  # [P, C, Q]
            splits = [(False, before, after)]
        elif before:  # [P, Q, C]
            splits = [(True, before[:j], before[j:]) for j in range(1, len(before))]
        else:
            continue  # one product views this operand without a copy
        # pairs in this operand's memory order (contracted axes of extent 1 first)
        pairs = sorted(
            range(len(mine)), key=lambda i: inner.index(mine[i]) if mine[i] in inner else -1
        )
        contracted, other = [mine[i] for i in pairs], [theirs[i] for i in pairs]
        other_order = _by_memory(other_free, other_strides)
        ones = [a for a in free if shape[a] == 1]
        small_copies = _copies(other_shape, other_strides, (other_order, other), itemsize)
        for extra, outer, rest in splits:
            if any(_group(g, shape, strides) is None for g in (outer, inner, rest)):
                continue
            tags: list[Tag] = [(tag, a) for a in ones + outer]
            tags += [(other_tag, a) for a in other_order] + [(tag, a) for a in rest]
            found.append(
                _Side(
                    big_is_lhs,
                    extra,
                    _perm(ones + outer + contracted + rest),
                    tuple(outer),
                    tuple(inner),
                    tuple(rest),
                    _perm(other_order + other),
                    tuple(other_order),
                    small_copies,
                    _split(problem, tags),
                    _to_output(problem, tags),
                )
            )
    return tuple(found)


def _instantiate(layout: _Layout, problem: Problem) -> Planned:
    """The plan ``layout`` gives at ``problem``'s extents: the product that copies fewest
    elements, or a broadcast product that copies fewer still."""
    sizes = (math.prod(problem.lhs_shape), math.prod(problem.rhs_shape))
    best, cost = layout.candidates[0], -1
    for candidate in layout.candidates:
        copies = candidate.copies
        candidate_cost = sizes[0] * copies[0] + sizes[1] * copies[1]
        if cost < 0 or candidate_cost < cost:
            best, cost = candidate, candidate_cost
    if cost:
        sides = layout.sides if sizes[0] >= sizes[1] else layout.sides[::-1]
        for side in sides:
            if side.extra:
                continue
            small = 1 if side.big_is_lhs else 0
            if sizes[small] * side.small_copies >= cost:
                continue
            found = _broadcast(problem, side, False)
            if found is not None:
                return found
    return _product(problem, best, False)


def _options(layout: _Layout, problem: Problem) -> list[Planned]:
    """Every plan ``layout`` allows at ``problem``'s extents: each product, also with
    its factors swapped (the result laid out rhs free axes first), then each broadcast
    product, also transposed. Products come first: where both copy as few elements,
    one matrix product runs faster than a stack of small ones (single-threaded BLAS;
    a threaded BLAS on oversubscribed cores can run a product of a short inner extent
    several times slower, as it does the plans chosen alone)."""
    found: list[Planned] = []
    for candidate in layout.candidates:
        found.append(_product(problem, candidate, False))
        found.append(_product(problem, candidate, True))
    for side in layout.sides:
        for transposed in (False, True):
            option = _broadcast(problem, side, transposed)
            if option is not None:
                found.append(option)
    return found


def _product(problem: Problem, candidate: _Candidate, swap: bool) -> Product:
    """``candidate``'s product at ``problem``'s extents; ``swap``: the rhs first."""
    (_, _, lb, _), lhs_shape, _, rhs_shape, _, _, _ = problem
    shapes = (lhs_shape, rhs_shape)
    lhs_batch, lhs_free, contracted, rhs_free = candidate.groups
    nb, nc = len(lhs_batch), len(contracted)
    b = math.prod([lhs_shape[a] for a in lhs_batch])
    m = math.prod([lhs_shape[a] for a in lhs_free])
    k = math.prod([lhs_shape[a] for a in contracted])
    n = math.prod([rhs_shape[a] for a in rhs_free])
    elements = math.prod(lhs_shape) * candidate.copies[0]
    elements += math.prod(rhs_shape) * candidate.copies[1]
    if not swap:
        return Product(
            problem,
            (candidate.lhs_perm, candidate.rhs_perm),
            ((b, m, k), (b, k, n)) if lb else ((m, k), (k, n)),
            tuple([shapes[i][a] for i, a in candidate.split]),
            candidate.out,
            elements,
        )
    # [B, N, K] @ [B, K, M]: the same groups, each operand's two matrix axes exchanged
    lhs_order = candidate.lhs_perm or tuple(range(len(lhs_shape)))
    rhs_order = candidate.rhs_perm or tuple(range(len(rhs_shape)))
    rhs_batch = rhs_order[:nb]
    rhs_contracted = rhs_order[nb : nb + nc]
    tags: list[Tag] = [("b", lb.index(a)) for a in lhs_batch]  # pairs in the product's order
    tags += [("r", a) for a in rhs_free] + [("l", a) for a in lhs_free]
    split = _split(problem, tags)
    return Product(
        problem,
        (
            _perm([*rhs_batch, *rhs_free, *rhs_contracted]),
            _perm([*lhs_batch, *lhs_order[nb + len(lhs_free) :], *lhs_free]),
        ),
        ((b, n, k), (b, k, m)) if lb else ((n, k), (k, m)),
        tuple([shapes[i][a] for i, a in split]),
        _to_output(problem, tags),
        elements,
        swap=True,
    )


def _broadcast(problem: Problem, side: _Side, transposed: bool) -> Broadcast | None:
    """``side``'s broadcast product at ``problem``'s extents (``transposed``: writing
    ``[P, Q, M]``), or ``None`` where its rows or matrices are too small to pay."""
    shapes = (problem.lhs_shape, problem.rhs_shape)
    big, small = (0, 1) if side.big_is_lhs else (1, 0)
    big_shape = shapes[big]
    p = math.prod([big_shape[a] for a in side.outer])
    k = math.prod([big_shape[a] for a in side.inner])
    q = math.prod([big_shape[a] for a in side.rest])
    m = math.prod([shapes[small][a] for a in side.small_free])
    rows, columns = (q, m) if transposed else (m, q)
    if columns < _MIN_COLUMNS or rows * k < _MIN_MATRIX:
        return None
    split = [shapes[i][a] for i, a in side.split]
    out = side.out
    if transposed:  # [P, Q, M]: the small operand's free axes last
        ones_outer = len(split) - len(side.small_free) - len(side.rest)
        order = list(range(ones_outer))
        order += list(range(len(split) - len(side.rest), len(split)))
        order += list(range(ones_outer, len(split) - len(side.rest)))
        split = [split[a] for a in order]
        ordered = [order.index(a) for a in (range(len(order)) if out is None else out)]
        out = None if ordered == sorted(ordered) else tuple(ordered)
    return Broadcast(
        problem,
        side.big_is_lhs,
        (side.big_perm, (p, k, q)),
        (side.small_perm, (m, k)),
        tuple(split),
        out,
        math.prod(shapes[small]) * side.small_copies,
        transposed,
    )


def _split(problem: Problem, tags: list[Tag]) -> tuple[tuple[int, int], ...]:
    """(operand, axis) holding each of a product's axes ``tags``."""
    lhs_batch = problem.numbers[2]
    return tuple([(0, lhs_batch[a]) if t == "b" else (0 if t == "l" else 1, a) for t, a in tags])


def _pair_orders(
    left: tuple[int, ...], right: tuple[int, ...], lhs_strides: Any, rhs_strides: Any
) -> list[list[int]]:
    """Orders of the axis pairs ``(left[i], right[i])`` worth trying: each operand's
    memory order."""
    pairs = range(len(left))
    mine = sorted(pairs, key=lambda i: -abs(lhs_strides[left[i]]))
    theirs = sorted(pairs, key=lambda i: -abs(rhs_strides[right[i]]))
    return [mine] if theirs == mine else [mine, theirs]


def _by_memory(axes: Sequence[int], strides: Sequence[int]) -> list[int]:
    """``axes`` from the largest stride to the smallest (ties keep their order)."""
    return sorted(axes, key=lambda a: -abs(strides[a]))


def _group(axes: Sequence[int], shape: Sequence[int], strides: Sequence[int]) -> Any:
    """``(extent, stride)`` of ``axes`` merged into one axis in this order, or ``None``
    when numpy must copy to merge them (axes of extent 1 go anywhere)."""
    extent, stride = 1, None
    for a in axes:
        n = shape[a]
        if n == 1:
            continue
        if stride is not None and stride != strides[a] * n:
            return None
        extent *= n
        stride = strides[a]
    return extent, stride


def _copies(
    shape: Sequence[int], strides: Sequence[int], groups: Sequence[Sequence[int]], itemsize: int
) -> bool:
    """Whether viewing the operand as the merged ``groups``, the last two a matrix that
    BLAS reads, needs a copy (numpy's ``reshape`` or ``matmul`` would make one)."""
    merged = [_group(g, shape, strides) for g in groups]
    if any(m is None for m in merged):
        return True
    return _order(merged[-2], merged[-1], itemsize) is None


def _order(rows: Any, columns: Any, itemsize: int) -> bool | None:
    """Whether a matrix of merged ``rows`` and ``columns`` (``(extent, stride)``) is in
    row order (``True``) or column order (``False``) for BLAS; ``None`` for neither."""
    (m, row_stride), (n, column_stride) = rows, columns
    if m == 1 or n == 1:
        return True  # a vector: BLAS reads it at any stride
    if column_stride == itemsize and row_stride >= n * itemsize:
        return True
    if row_stride == itemsize and column_stride >= m * itemsize:
        return False
    return None


def _flipped(lhs_rows: bool, rhs_rows: bool, m: int, n: int, floating: bool) -> bool:
    """Whether to compute ``lhs @ rhs`` (``m`` rows, ``n`` columns; each operand in row
    order or transposed) as ``(rhs.T @ lhs.T).T``: when that has fewer rows, except
    that a product of two transposed operands with fewer than :data:`_FEW_ROWS` rows is
    avoided (BLAS runs it several times slower); never for a vector (BLAS dtypes only)."""
    if not floating or m == 1 or n == 1:
        return False
    if not lhs_rows and not rhs_rows and m < _FEW_ROWS:
        return True
    if lhs_rows and rhs_rows and n < _FEW_ROWS:
        return False
    return n < m


def _perm(order: list[int]) -> tuple[int, ...] | None:
    """``order`` as a transpose, ``None`` when it keeps the axes where they are."""
    return None if order == sorted(order) else tuple(order)


def _to_output(problem: Problem, tags: list[Tag]) -> tuple[int, ...] | None:
    """The transpose taking a product's axes (``tags``) to ``dot_general``'s order
    (batch pairs, lhs free axes, rhs free axes), ``None`` when they are in it."""
    lc, rc, lb, rb = problem.numbers
    ordered: list[Tag] = [("b", i) for i in range(len(lb))]
    ordered += [("l", a) for a in range(len(problem.lhs_shape)) if a not in (*lc, *lb)]
    ordered += [("r", a) for a in range(len(problem.rhs_shape)) if a not in (*rc, *rb)]
    out = tuple(tags.index(t) for t in ordered)
    return None if out == tuple(range(len(out))) else out


# ---------------------------------------------------------------------- dot_general's plans


class _Sentinel:
    """A named evaluation strategy (never mistaken for an outer product's plan)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


_PLANNED = _Sentinel("planned from the operands' layout")
GENERAL = _Sentinel("general: data-dependent extents")
"""The plan of operands with data-dependent extents: :func:`general`, from the arrays'
actual shapes."""
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # numpy.einsum's

_STRATEGIES: DictCache[Any, Any] = DictCache(4096, "dot_general evaluation strategies")
"""(dimension numbers, operand ranks) -> the extent-free part of an instance's evaluation
plan (:func:`_strategy`): a never-seen shape only collects its extents."""


def free_axes(ndim: int, contracting: Sequence[int], batch: Sequence[int]) -> tuple[int, ...]:
    """The axes of an operand of rank ``ndim`` that are neither contracted nor batch."""
    used = set(contracting) | set(batch)
    return tuple(a for a in range(ndim) if a not in used)


def for_operands(numbers: Numbers, lhs: Meta, rhs: Meta) -> Any:
    """How ``dot_general`` with dimension ``numbers`` evaluates operands of metas ``lhs``
    and ``rhs``: a plan of :func:`plan` for operands in C order (the product of two
    matrices or stacks of them, one product of views, or a broadcast product; re-planned
    per layout for other operands), or :data:`GENERAL` for data-dependent extents.
    Without contracted axes (outer products, which a matmul would run as a product over
    an axis of extent 1, several times slower): the rhs rank (one broadcast multiply)
    when there are no batch axes either, else ``numpy.einsum``'s subscripts (its
    two-operand loops are the fastest numpy has for a batched outer product, and
    ``opt_einsum`` runs them too)."""
    if lhs.dynamic or rhs.dynamic:
        return GENERAL
    key = (numbers, lhs.ndim, rhs.ndim)
    strategy = _STRATEGIES.get(key)
    if strategy is None:  # decided once per dimension numbers and ranks
        strategy = _strategy(numbers, lhs.ndim, rhs.ndim)
        _STRATEGIES.put(key, strategy)
    if strategy is not _PLANNED:
        return strategy
    itemsize = lhs.dtype.itemsize
    return plan(
        Problem(
            numbers,
            lhs.shape,
            c_strides(lhs.shape, itemsize),
            rhs.shape,
            c_strides(rhs.shape, itemsize),
            itemsize,
            lhs.dtype.kind in "fc",
        ),
        c_order=True,
    )


def _strategy(numbers: Numbers, lhs_ndim: int, rhs_ndim: int) -> Any:
    """The extent-free part of :func:`for_operands`: an outer product's plan, else
    ``_PLANNED``."""
    if not numbers[0] and lhs_ndim + rhs_ndim <= len(_LETTERS):
        return _outer_plan(numbers, lhs_ndim, rhs_ndim)
    return _PLANNED


def _outer_plan(numbers: Numbers, lhs_ndim: int, rhs_ndim: int) -> int | str:
    _, _, lhs_batch, rhs_batch = numbers
    if not lhs_batch:
        return rhs_ndim
    letters = iter(_LETTERS)
    left = [next(letters) for _ in range(lhs_ndim)]
    right = [next(letters) for _ in range(rhs_ndim)]
    for a, b in zip(lhs_batch, rhs_batch, strict=True):
        right[b] = left[a]
    batch = [left[a] for a in lhs_batch]
    lhs_free = [left[a] for a in free_axes(lhs_ndim, (), lhs_batch)]
    rhs_free = [right[a] for a in free_axes(rhs_ndim, (), rhs_batch)]
    out = "".join(batch + lhs_free + rhs_free)
    return f"{''.join(left)},{''.join(right)}->{out}"


def general(numbers: Numbers, lhs: Any, rhs: Any) -> Any:
    """``dot_general`` from the arrays' actual shapes (data-dependent extents)."""
    lhs_contracting, rhs_contracting, lhs_batch, rhs_batch = numbers
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    lhs_free = free_axes(lhs.ndim, lhs_contracting, lhs_batch)
    rhs_free = free_axes(rhs.ndim, rhs_contracting, rhs_batch)
    batch_shape = tuple(lhs.shape[a] for a in lhs_batch)
    lhs_free_shape = tuple(lhs.shape[a] for a in lhs_free)
    rhs_free_shape = tuple(rhs.shape[a] for a in rhs_free)
    k = math.prod(lhs.shape[a] for a in lhs_contracting)
    a = np.transpose(lhs, (*lhs_batch, *lhs_free, *lhs_contracting)).reshape(
        (math.prod(batch_shape), math.prod(lhs_free_shape), k)
    )
    b = np.transpose(rhs, (*rhs_batch, *rhs_contracting, *rhs_free)).reshape(
        (math.prod(batch_shape), k, math.prod(rhs_free_shape))
    )
    return np.matmul(a, b).reshape(batch_shape + lhs_free_shape + rhs_free_shape)


def any_extent(evaluation: Any, numbers: Numbers, lhs_ndim: int, rhs_ndim: int) -> Any:
    """A function of the two arrays right for operands of any extents, given the plan
    :func:`for_operands` chose (``evaluation``): that plan itself when it reads no
    extent (a :data:`Function`), a batched matmul with the extents read from the arrays
    for a :class:`Planned` product, else ``None`` (outer products and data-dependent
    extents: the primitive's own evaluation serves)."""
    if type(evaluation) is Function:
        return evaluation
    if not isinstance(evaluation, Planned):
        return None
    lhs_contracting, rhs_contracting, lhs_batch, rhs_batch = numbers
    lhs_free = free_axes(lhs_ndim, lhs_contracting, lhs_batch)
    rhs_free = free_axes(rhs_ndim, rhs_contracting, rhs_batch)
    lhs_perm = (*lhs_batch, *lhs_free, *lhs_contracting)
    rhs_perm = (*rhs_batch, *rhs_contracting, *rhs_free)
    lhs_keep = lhs_perm == tuple(range(lhs_ndim))
    rhs_keep = rhs_perm == tuple(range(rhs_ndim))
    batch, contracting = lhs_batch, lhs_contracting
    prod, matmul = math.prod, np.matmul

    def run(a: Any, b: Any) -> Any:
        ls, rs = a.shape, b.shape
        lf, rf = [ls[i] for i in lhs_free], [rs[i] for i in rhs_free]
        n = [ls[i] for i in batch]
        size, k = prod(n), prod([ls[i] for i in contracting])
        a = (a if lhs_keep else a.transpose(lhs_perm)).reshape(size, prod(lf), k)
        b = (b if rhs_keep else b.transpose(rhs_perm)).reshape(size, k, prod(rf))
        return matmul(a, b).reshape((*n, *lf, *rf))

    return run
