"""Random einsum networks shaped like the contractions einsum's lowering and dot_general's
plans special-case: matrix chains (thin and thick bonds, either orientation), tensor
network transfer steps (matrices applied to a middle leg, two legs contracted at once),
batched outer products written in any output order, and products with batch, contracted
and repeated labels. Extents reach past the kernels' thresholds (products flipped to
fewer rows, broadcast products), but stay small enough for CI."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

BONDS = [1, 2, 3, 5, 8, 9, 13]
"""Bond extents: 1 and 2 (vectors, copies that are views), 8 and above (flipped
products and broadcast products are planned there)."""


def data(shape: Any, dtype: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x, dtype=dtype)


def _term(draw: Any, labels: str) -> str:
    """``labels`` in a random axis order."""
    return "".join(draw(st.permutations(list(labels))))


@st.composite
def chains(draw: Any) -> tuple[str, list[tuple[int, ...]]]:
    """A chain of 2-5 matrices (each either way round), open or closed into a trace."""
    count = draw(st.integers(2, 5))
    labels = "abcdefg"[: count + 1]
    extents = [draw(st.sampled_from(BONDS)) for _ in labels]
    terms = [_term(draw, labels[i : i + 2]) for i in range(count)]
    if draw(st.booleans()):
        output = _term(draw, labels[0] + labels[-1])
    else:  # closed: the last label is the first
        terms[-1] = terms[-1].replace(labels[-1], labels[0])
        output = ""
    sizes = dict(zip(labels, extents, strict=True))
    return ",".join(terms) + "->" + output, [tuple(sizes[c] for c in t) for t in terms]


@st.composite
def transfers(draw: Any) -> tuple[str, list[tuple[int, ...]]]:
    """One step of a tensor-network sweep: an environment, a site tensor, an optional
    operator on the physical leg, the conjugate site; every tensor's legs in a random
    order, so contracted legs sit first, last or between free ones."""
    chi, d, out = (draw(st.sampled_from(BONDS)) for _ in range(3))
    sizes = {"b": chi, "c": chi, "s": d, "t": d, "d": out, "e": out}
    with_operator = draw(st.booleans())
    terms = [_term(draw, "bc"), _term(draw, "bsd")]
    if with_operator:
        terms.append(_term(draw, "st"))
        terms.append(_term(draw, "cte"))
    else:
        terms.append(_term(draw, "cse"))
    output = _term(draw, "de")
    return ",".join(terms) + "->" + output, [tuple(sizes[c] for c in t) for t in terms]


@st.composite
def batched(draw: Any) -> tuple[str, list[tuple[int, ...]]]:
    """Two operands sharing batch labels (kept), maybe contracted ones, with free labels
    on each side and a random output order (batched outer products when nothing is
    contracted); sometimes a repeated label (a diagonal) in the first operand."""
    sizes = {c: draw(st.sampled_from(BONDS)) for c in "tuvwxyz"}
    batch = "t" + ("u" if draw(st.booleans()) else "")
    contracted = draw(st.sampled_from(["", "v", "vw"]))
    left_free = draw(st.sampled_from(["x", "xy"]))
    right_free = "z"
    left = _term(draw, batch + contracted + left_free)
    right = _term(draw, batch + contracted + right_free)
    if draw(st.booleans()):
        left = left + left[0]  # a repeated label: its diagonal is taken first
    output = _term(draw, batch + left_free + right_free)
    shapes = [tuple(sizes[c] for c in left), tuple(sizes[c] for c in right)]
    if math.prod(shapes[0]) * math.prod(shapes[1]) > 60000:  # keep CI fast
        sizes = {c: min(n, 3) for c, n in sizes.items()}
        shapes = [tuple(sizes[c] for c in left), tuple(sizes[c] for c in right)]
    return f"{left},{right}->{output}", shapes


def networks() -> Any:
    """Any of the families above."""
    return st.one_of(chains(), transfers(), batched())


def laid_out(array: np.ndarray[Any, Any], layout: str) -> np.ndarray[Any, Any]:
    """``array``'s values in another memory layout: C order, Fortran order, a
    transposed copy viewed back, or every other element of a wider array."""
    if layout == "f":
        return np.asfortranarray(array)
    if layout == "reversed" and array.ndim:
        return np.ascontiguousarray(array.transpose()).transpose()
    if layout == "strided" and array.ndim:
        wide = np.zeros((*array.shape[:-1], 2 * array.shape[-1]), array.dtype)
        wide[..., ::2] = array
        return wide[..., ::2]
    return np.ascontiguousarray(array)
