"""Einsum notation: subscripts (or numpy's interleaved form) and operand shapes to an
:class:`Equation` whose every label is one character, ellipses expanded.

Rules (numpy's, plus diagonal embedding):

* terms are separated by ``,``; ``->`` introduces the explicit output, else the output
  is the labels used exactly once, sorted, after the ellipsis axes;
* a label is any character except ``, - > .`` and whitespace (whitespace is ignored);
  ``...`` (at most once per term) stands for the remaining axes, right-aligned across
  operands, where extents broadcast (equal or 1);
* a label repeated in one operand takes the diagonal (``ii->i``, ``ii->``); a label
  repeated in the output embeds on the diagonal (``i->ii``, which numpy rejects);
* every output label must occur in some input; extents of a label must agree, except
  that an extent of 1 broadcasts against the label's extent in other operands (numpy);
* an explicit output must have ``...`` when the inputs' ellipsis covers any axis
  (numpy's rule).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tenferro.errors import ArgumentTypeError, ParameterError, ShapeError

__all__ = ["Equation", "parse", "parse_interleaved"]

OP = "einsum"
_RESERVED = frozenset(",->.")


@dataclass(frozen=True, eq=False)
class Equation:
    """A parsed einsum: per-operand labels (one character each, ellipsis expanded),
    output labels, each label's extent, and the canonical subscripts text."""

    inputs: tuple[str, ...]
    output: str
    sizes: dict[str, int]
    subscripts: str
    broadcast: tuple[frozenset[int], ...]
    """Per operand, the axes of extent 1 that broadcast against a larger extent."""


class _Fail:
    """Error construction naming ``einsum``, the subscripts and the offending part."""

    def __init__(self, subscripts: str) -> None:
        self.subscripts = subscripts

    def parameter(self, what: str) -> ParameterError:
        return ParameterError(OP, f"{what} in subscripts {self.subscripts!r}")

    def shape(self, what: str) -> ShapeError:
        return ShapeError(OP, f"{what} in subscripts {self.subscripts!r}")


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _fresh(used: set[str]) -> Iterator[str]:
    """Labels not in ``used``, in opt_einsum's order (``gen_unused_symbols``: the 52
    letters, then from U+00C0 skipping surrogates), so ellipsis axes get the labels
    opt_einsum gives them."""
    code = 0
    while True:
        if code < len(_LETTERS):
            char = _LETTERS[code]
        else:
            char = chr(code + 140 if code + 140 < 0xD800 else code + 2048)
        code += 1
        if char not in used:
            yield char


def _split_term(term: str, fail: _Fail, where: str) -> tuple[str, str | None]:
    """``(labels before the ellipsis + after, None)`` or with the ellipsis position."""
    count = term.count("...")
    if count > 1:
        raise fail.parameter(f"{where} {term!r} has more than one ellipsis")
    if count == 1:
        before, after = term.split("...")
        rest = before + after
    else:
        before, rest = "", term
    for char in rest:
        if char in _RESERVED:
            raise fail.parameter(f"{where} {term!r} has the invalid character {char!r}")
    if count == 1:
        return rest, before
    return rest, None


def parse(subscripts: str, shapes: Sequence[Sequence[int]]) -> Equation:
    """Parse ``subscripts`` for operands of ``shapes``; raise a tenferro error naming
    ``einsum``, the subscripts and the offending part when they do not fit."""
    if not isinstance(subscripts, str):
        raise ParameterError(OP, f"subscripts must be a string, got {type(subscripts).__name__}")
    text = "".join(c for c in subscripts if not c.isspace())
    fail = _Fail(subscripts)
    if text.count("->") > 1:
        raise fail.parameter("more than one '->'")
    if "->" in text:
        left, right = text.split("->")
        explicit: str | None = right
    else:
        left, explicit = text, None
    if (
        "-" in left
        or ">" in left
        or (explicit is not None and ("-" in explicit or ">" in explicit))
    ):
        raise fail.parameter("a '-' or '>' outside '->'")
    terms = left.split(",")
    if len(terms) != len(shapes):
        raise fail.parameter(f"{len(terms)} input terms for {len(shapes)} operands")
    return _build(fail, terms, explicit, shapes, sort_key=ord)


def parse_interleaved(args: Sequence[Any]) -> tuple[str, list[Any]]:
    """numpy's interleaved form ``(op0, labels0, op1, labels1, ..., [output])`` to
    ``(subscripts, operands)``. Integer labels become characters in numpy's order;
    labels may also be any other hashable values (opt_einsum's extension: ``("left",
    "bond")``), mapped to characters in their sorted order, or their order of appearance
    when they do not sort; ``Ellipsis`` stands for ``...``."""
    operands = list(args[0::2])
    lists = list(args[1::2])
    output: Any = None
    if len(args) % 2 == 1:
        output = operands.pop()
    every = [*lists, *([output] if output is not None else [])]
    for where, labels in enumerate(every):
        if not isinstance(labels, (list, tuple)):
            what = "output" if where == len(lists) else f"operand {where}"
            raise ArgumentTypeError(
                OP, f"interleaved {what} labels must be a list, got {type(labels).__name__}"
            )
    used = [label for labels in every for label in labels if label is not Ellipsis]
    for label in used:
        if isinstance(label, (bool, float, complex)) or (isinstance(label, int) and label < 0):
            raise ParameterError(  # numpy's labels are non-negative integers
                OP, f"interleaved label {label!r} is not a non-negative integer"
            )
        try:
            hash(label)
        except TypeError:
            raise ArgumentTypeError(OP, f"interleaved label {label!r} is not hashable") from None
    symbols: dict[Any, str] = {}
    if all(type(label) is int and label >= 0 for label in used):
        symbols = {label: _symbol(label) for label in used}
    else:
        try:
            ordered = sorted(set(used))
        except TypeError:
            ordered = list(dict.fromkeys(used))
        symbols = {label: _symbol(rank) for rank, label in enumerate(ordered)}

    def term(labels: Any) -> str:
        return "".join("..." if label is Ellipsis else symbols[label] for label in labels)

    subscripts = ",".join(term(labels) for labels in lists)
    if output is not None:
        subscripts += "->" + term(output)
    return subscripts, operands


def _symbol(label: int) -> str:
    """Label ``n`` as a character in numpy's order: ``A-Z``, ``a-z``, then from U+00C0."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    if label < len(letters):
        return letters[label]
    code = 0xC0 + label - len(letters)
    if code >= 0xD800:
        code += 0x800
    return chr(code)


def _build(
    fail: _Fail,
    terms: Sequence[str],
    explicit: str | None,
    shapes: Sequence[Sequence[int]],
    sort_key: Any,
) -> Equation:
    split = [_split_term(t, fail, f"input term {i}") for i, t in enumerate(terms)]
    used = {c for labels, _ in split for c in labels}
    if explicit is not None:
        out_labels, out_ellipsis = _split_term(explicit, fail, "output")
        used |= set(out_labels)
    ellipsis_rank = 0
    for i, ((labels, position), shape) in enumerate(zip(split, shapes, strict=True)):
        if position is None:
            if len(labels) != len(shape):
                raise fail.shape(
                    f"operand {i} has {len(shape)} axes but term {terms[i]!r} names {len(labels)}"
                )
        else:
            if len(labels) > len(shape):
                raise fail.shape(
                    f"operand {i} has {len(shape)} axes, fewer than the {len(labels)} "
                    f"labels of term {terms[i]!r}"
                )
            ellipsis_rank = max(ellipsis_rank, len(shape) - len(labels))
    fresh = _fresh(used)
    widest = max((len(shape) for shape in shapes), default=0)
    ellipsis = "".join(next(fresh) for _ in range(widest))[widest - ellipsis_rank :]
    inputs: list[str] = []
    sizes: dict[str, int] = {}
    mine: dict[str, int] = {}
    owner: dict[str, int] = {}
    broadcast: list[frozenset[int]] = []
    ellipsis_sizes: dict[str, int] = {}
    for i, ((labels, position), shape) in enumerate(zip(split, shapes, strict=True)):
        if position is None:
            full = labels
        else:
            covered = len(shape) - len(labels)
            cut = len(position)
            full = labels[:cut] + ellipsis[ellipsis_rank - covered :] + labels[cut:]
        inputs.append(full)
        mine.clear()
        for label, extent in zip(full, shape, strict=True):
            extent = int(extent)
            if label in ellipsis:
                known = ellipsis_sizes.get(label, 1)
                if extent != 1 and known != 1 and extent != known:
                    raise fail.shape(
                        f"ellipsis axes do not broadcast: extent {extent} of operand {i} "
                        f"against {known}"
                    )
                ellipsis_sizes[label] = max(known, extent) if extent != 1 else known
                continue
            if mine.setdefault(label, extent) != extent:
                raise fail.shape(
                    f"label {label!r} has extents {mine[label]} and {extent} in operand {i}"
                )
            seen = sizes.get(label)
            if seen is not None and seen != extent:
                other = owner[label]
                # numpy broadcasts a label of extent 1 across operands
                if seen != 1 and extent != 1:
                    raise fail.shape(
                        f"label {label!r} has extent {seen} in operand {other} "
                        f"and {extent} in operand {i}"
                    )
                if extent == 1:
                    continue
            sizes[label] = extent
            owner[label] = i
    for label in ellipsis:
        sizes[label] = ellipsis_sizes.get(label, 1)
    for full, shape in zip(inputs, shapes, strict=True):
        broadcast.append(
            frozenset(
                axis
                for axis, (label, extent) in enumerate(zip(full, shape, strict=True))
                if int(extent) == 1 and sizes[label] != 1
            )
        )
    if explicit is None:
        counts: dict[str, int] = {}
        for full in inputs:
            for label in full:
                counts[label] = counts.get(label, 0) + 1
        named = sorted((c for c, n in counts.items() if n == 1 and c not in ellipsis), key=sort_key)
        output = ellipsis + "".join(named)
    else:
        everywhere = set().union(*map(set, inputs)) if inputs else set()
        for label in out_labels:
            if label not in everywhere:
                raise fail.parameter(f"output label {label!r} occurs in no input")
        if out_ellipsis is None:
            if ellipsis:  # numpy's rule, even when the axes it covers have extent 1
                raise fail.shape(
                    "the inputs' ellipsis covers axes but the output has no '...' "
                    "(numpy: write '...' in the output, or sum those axes explicitly)"
                )
            output = out_labels
        else:
            cut = len(out_ellipsis)
            output = out_labels[:cut] + ellipsis + out_labels[cut:]
    canonical = ",".join(inputs) + "->" + output
    return Equation(tuple(inputs), output, sizes, canonical, tuple(broadcast))
