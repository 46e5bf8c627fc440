"""``pad``: numpy's padding modes, for every tensor kind.

Each axis is padded in turn (axis 0 first, so later axes pad the corners, as numpy's),
by concatenating pieces made of slices of the values, reversed slices, broadcasts and
constants: every mode is differentiable through the primitives it uses (a padded entry
copied from the input passes its cotangent back to that entry). Pad areas wider than
the values (``reflect``, ``symmetric``, ``wrap``) are filled chunk by chunk as numpy
fills them, so results match numpy's for any width. Zero constant padding is one
``lax.pad``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.core.params import as_int
from tenferro.errors import ParameterError, ShapeError, UnsupportedError
from tenferro.surface import numerics, predicates, reductions
from tenferro.surface.convert import asarray, astype, broadcast_to
from tenferro.surface.shapes import _pad_widths, concatenate, flip

__all__ = ["pad"]

_OPTIONS = {
    "constant": ("constant_values",),
    "empty": (),
    "edge": (),
    "wrap": (),
    "linear_ramp": ("end_values",),
    "maximum": ("stat_length",),
    "minimum": ("stat_length",),
    "mean": ("stat_length",),
    "median": ("stat_length",),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def pad(x: Any, pad_width: Any, mode: str = "constant", **options: Any) -> Any:
    """``x`` padded by ``pad_width`` (numpy's: integers broadcast to ``(ndim, 2)`` pairs of
    before and after widths) in numpy's ``mode``:

    * ``"constant"`` (``constant_values``, default 0, broadcast to ``(ndim, 2)``),
      ``"empty"`` (zeros: numpy leaves the values undefined);
    * ``"edge"`` (the edge value), ``"linear_ramp"`` (from ``end_values`` to the edge);
    * ``"maximum"``, ``"minimum"``, ``"mean"``, ``"median"`` of the ``stat_length``
      values nearest each edge (all values by default);
    * ``"reflect"`` (mirrored at the edge, not repeating it), ``"symmetric"`` (repeating
      it), with ``reflect_type`` ``"even"`` or ``"odd"`` (``2 * edge - mirrored``);
    * ``"wrap"`` (the values repeated periodically).

    A function as ``mode`` (numpy's in-place callback) is not supported: tensors are
    immutable."""
    a = asarray(x, op="pad")
    if callable(mode):
        raise UnsupportedError(
            "pad", "a function as mode writes into the array, and tensors are immutable"
        )
    if mode not in _OPTIONS:
        raise ParameterError("pad", f"unknown mode {mode!r}; the modes are {sorted(_OPTIONS)}")
    unknown = sorted(set(options) - set(_OPTIONS[mode]))
    if unknown:
        raise ParameterError("pad", f"mode {mode!r} does not take {', '.join(unknown)}")
    widths = _pad_widths(pad_width, a.meta.ndim)
    if mode in ("constant", "empty"):
        values = options.get("constant_values", 0) if mode == "constant" else 0
        return _constant(a, widths, values)
    for axis, (before, after) in enumerate(widths):
        if a.meta.shape[axis] == 0 and (before or after):
            raise ShapeError(
                "pad",
                f"cannot extend the empty axis {axis} of shape {a.meta.shape} in mode "
                f"{mode!r} (only 'constant' and 'empty' can)",
            )
    if mode == "edge":
        return _each_axis(a, widths, _edge)
    if mode == "linear_ramp":
        ends = _pairs("end_values", options.get("end_values", 0), a.meta.ndim)
        return _each_axis(a, widths, lambda v, axis, w: _ramps(v, axis, w, ends[axis]))
    if mode in ("maximum", "minimum", "mean", "median"):
        lengths = _length_pairs(options.get("stat_length"), a.meta.ndim)
        return _each_axis(a, widths, lambda v, axis, w: _statistic(mode, v, axis, w, lengths[axis]))
    if mode == "wrap":
        return _each_axis(a, widths, _wrap)
    method = options.get("reflect_type", "even")
    if method not in ("even", "odd"):
        raise ParameterError("pad", f"reflect_type must be 'even' or 'odd', got {method!r}")
    include_edge = mode == "symmetric"
    return _each_axis(
        a, widths, lambda v, axis, w: _reflect(v, axis, w, method == "odd", include_edge)
    )


Side = Callable[[Any, int, tuple[int, int]], Any]


def _each_axis(a: Any, widths: list[list[int]], fill: Side) -> Any:
    for axis, (before, after) in enumerate(widths):
        if before or after:
            a = fill(a, axis, (before, after))
    return a


def _part(v: Any, axis: int, start: int, stop: int) -> Any:
    """``v[start:stop]`` along ``axis``."""
    starts, limits = [0] * v.meta.ndim, list(v.meta.shape)
    starts[axis], limits[axis] = start, stop
    return lax.slice(v, starts, limits)


def _spread(piece: Any, axis: int, width: int) -> Any:
    """The extent-1 ``piece`` repeated ``width`` times along ``axis``."""
    shape = list(piece.meta.shape)
    shape[axis] = width
    return broadcast_to(piece, tuple(shape))


def _joined(parts: list[Any], axis: int) -> Any:
    kept = [p for p in parts if p is not None and p.meta.shape[axis]]
    return kept[0] if len(kept) == 1 else concatenate(kept, axis)


# ---------------------------------------------------------------------- constant values


def _pairs(name: str, values: Any, ndim: int) -> list[tuple[Any, Any]]:
    """numpy's ``_as_pairs`` of scalars: one value, one pair, or one pair per axis."""
    if hasattr(values, "meta") and values.meta.ndim == 0:
        return [(values, values)] * ndim
    try:
        grid = np.broadcast_to(np.asarray(values, dtype=object), (ndim, 2))
    except ValueError:
        raise ShapeError("pad", f"{name} {values!r} does not fit rank {ndim}") from None
    return [(grid[i, 0], grid[i, 1]) for i in range(ndim)]


def _filler(a: Any, value: Any, shape: tuple[int, ...]) -> Any:
    """A constant of ``shape`` and ``a``'s dtype and kind holding ``value`` (cast as numpy
    casts it)."""
    if hasattr(value, "meta"):
        return broadcast_to(astype(value, a.meta.dtype), shape)
    try:
        cast = np.asarray(value).astype(a.meta.dtype)
    except (TypeError, ValueError):
        raise ParameterError("pad", f"{value!r} is not a {a.meta.dtype} value") from None
    if cast.ndim:
        raise ShapeError("pad", f"padding values must be scalars, got {value!r}")
    return broadcast_to(lax.constant(cast.item(), a.meta.dtype, a), shape)


def _constant(a: Any, widths: list[list[int]], values: Any) -> Any:
    pairs = _pairs("constant_values", values, a.meta.ndim)
    if all(_is_zero(v) for pair in pairs for v in pair):
        return lax.pad(a, [w[0] for w in widths], [w[1] for w in widths], [0] * a.meta.ndim)
    for axis, (before, after) in enumerate(widths):
        parts = []
        for width, value in ((before, pairs[axis][0]), (after, pairs[axis][1])):
            shape = list(a.meta.shape)
            shape[axis] = width
            parts.append(_filler(a, value, tuple(shape)) if width else None)
        a = _joined([parts[0], a, parts[1]], axis)
    return a


def _is_zero(value: Any) -> bool:
    return (
        not hasattr(value, "meta")
        and np.ndim(value) == 0
        and value == 0
        and (not isinstance(value, float) or not np.signbit(value))
    )


# ---------------------------------------------------------------------- edges, ramps, statistics


def _edge(v: Any, axis: int, widths: tuple[int, int]) -> Any:
    n = v.meta.shape[axis]
    before, after = widths
    left = _spread(_part(v, axis, 0, 1), axis, before) if before else None
    right = _spread(_part(v, axis, n - 1, n), axis, after) if after else None
    return _joined([left, v, right], axis)


def _ramps(v: Any, axis: int, widths: tuple[int, int], ends: tuple[Any, Any]) -> Any:
    n = v.meta.shape[axis]
    pieces: list[Any] = []
    for side, width, end in ((0, widths[0], ends[0]), (1, widths[1], ends[1])):
        if not width:
            pieces.append(None)
            continue
        edge = _part(v, axis, 0, 1) if side == 0 else _part(v, axis, n - 1, n)
        steps = np.arange(width, dtype=np.float64) / width
        if side == 1:
            steps = steps[::-1]
        shape = [1] * v.meta.ndim
        shape[axis] = width
        fractions = steps.reshape(shape)
        real = v.meta.dtype.kind in "bi"
        base = astype(edge, np.float64) if real else edge
        start = _filler(base, end, tuple(edge.meta.shape))
        ramp = start + (base - start) * fractions
        if real:
            ramp = astype(lax.round(ramp, "floor"), v.meta.dtype)
        pieces.append(ramp)
    return _joined([pieces[0], v, pieces[1]], axis)


def _length_pairs(lengths: Any, ndim: int) -> list[tuple[int | None, int | None]]:
    if lengths is None:
        return [(None, None)] * ndim
    pairs = _pairs("stat_length", lengths, ndim)
    checked = []
    for pair in pairs:
        numbers = tuple(as_int("pad", "stat_length", n) for n in pair)
        if any(n < 0 for n in numbers):
            raise ParameterError("pad", f"stat_length must be non-negative, got {lengths!r}")
        checked.append(numbers)
    return checked  # type: ignore[return-value]


def _statistic(
    mode: str, v: Any, axis: int, widths: tuple[int, int], lengths: tuple[int | None, int | None]
) -> Any:
    n = v.meta.shape[axis]
    pieces: list[Any] = []
    for side, width, length in ((0, widths[0], lengths[0]), (1, widths[1], lengths[1])):
        if not width:
            pieces.append(None)
            continue
        count = n if length is None else min(length, n)
        if count == 0:
            raise ParameterError("pad", f"stat_length 0 leaves no value to take the {mode} of")
        window = _part(v, axis, 0, count) if side == 0 else _part(v, axis, n - count, n)
        if mode == "maximum":
            value = reductions.max(window, axis, keepdims=True)
        elif mode == "minimum":
            value = reductions.min(window, axis, keepdims=True)
        elif mode == "mean":
            value = reductions.mean(window, axis, keepdims=True)
        else:
            value = _median(window, axis)
        if v.meta.dtype.kind in "bi" and value.meta.dtype != v.meta.dtype:
            value = astype(lax.round(value, "nearest_even"), v.meta.dtype)
        pieces.append(_spread(value, axis, width))
    return _joined([pieces[0], v, pieces[1]], axis)


def _median(window: Any, axis: int) -> Any:
    """numpy's median along ``axis`` (kept, extent 1): NaN where the window holds one."""
    count = window.meta.shape[axis]
    ordered = numerics.sort(window, axis)
    middle = _part(ordered, axis, (count - 1) // 2, count // 2 + 1)
    value = reductions.mean(middle, axis, keepdims=True)
    if window.meta.dtype.kind in "fc":
        has_nan = reductions.any(predicates.isnan(window), axis, keepdims=True)
        value = lax.select(has_nan, lax.full_like(value, np.nan), value)
    return value


# ---------------------------------------------------------------------- reflections, wrapping


def _reflect(v: Any, axis: int, widths: tuple[int, int], odd: bool, include_edge: bool) -> Any:
    period = v.meta.shape[axis]
    left, right = widths
    if period == 1:
        return _edge(v, axis, widths)
    edge_offset = 1 if include_edge else 0
    while left > 0 or right > 0:
        length = v.meta.shape[axis]
        if include_edge:
            available = length // period * period
        else:
            available = (length - 1) // (period - 1) * (period - 1)
        left_chunk = right_chunk = None
        if left > 0:
            count = min(available, left)
            left_chunk = flip(_part(v, axis, 1 - edge_offset, count + 1 - edge_offset), axis)
            if odd:
                left_chunk = 2 * _part(v, axis, 0, 1) - left_chunk
            left -= count
        if right > 0:
            count = min(available, right)
            stop = length - 1 + edge_offset
            right_chunk = flip(_part(v, axis, stop - count, stop), axis)
            if odd:
                right_chunk = 2 * _part(v, axis, length - 1, length) - right_chunk
            right -= count
        v = _joined([left_chunk, v, right_chunk], axis)
    return v


def _wrap(v: Any, axis: int, widths: tuple[int, int]) -> Any:
    original = v.meta.shape[axis]
    left, right = widths
    while left > 0 or right > 0:
        length = v.meta.shape[axis]
        period = length // original * original
        left_chunk = right_chunk = None
        if left > 0:
            count = min(period, left)
            left_chunk = _part(v, axis, period - count, period)
            left = left - period if left > period else 0
        if right > 0:
            count = min(period, right)
            right_chunk = _part(v, axis, length - period, length - period + count)
            right = right - period if right > period else 0
        v = _joined([left_chunk, v, right_chunk], axis)
    return v
