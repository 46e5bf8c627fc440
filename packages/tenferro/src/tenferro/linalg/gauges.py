"""Gauges of eigen and singular vectors: which of the equivalent vectors a
decomposition returns, and how their derivatives follow.

A vector of a decomposition is defined up to a phase (a sign for real values).
``gauge="raw"`` keeps LAPACK's choice; ``gauge="canonical"`` makes the
largest-magnitude entry of each vector real and positive (:func:`canonicalize`, on the
numpy side), which makes phase-dependent functions of the vectors well-defined, and
:func:`phase_correction` (on the rule side) keeps the tangents of those entries real.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tenferro import lax
from tenferro.errors import ParameterError

__all__ = ["GAUGES", "canonicalize", "check_gauge", "phase_correction"]

GAUGES = ("raw", "canonical")


def canonicalize(
    vectors: np.ndarray[Any, Any], partner_rows: np.ndarray[Any, Any] | None
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None, np.ndarray[Any, Any]]:
    """Make each column's largest-magnitude entry (the first, on ties) real positive;
    multiply the matching rows of ``partner_rows`` by the inverse phase. Returns the new
    arrays and the one-hot pivot mask (bool, the shape of ``vectors``)."""
    if vectors.shape[-2] == 0:  # no entries to pivot on
        return vectors, partner_rows, np.zeros(vectors.shape, dtype=bool)
    pivot = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
    mask = np.zeros(vectors.shape, dtype=bool)
    if vectors.size:
        np.put_along_axis(mask, pivot, True, axis=-2)
    value = np.take_along_axis(vectors, pivot, axis=-2)[..., 0, :]
    magnitude = np.abs(value)
    phase = np.where(magnitude == 0, 1, value / np.where(magnitude == 0, 1, magnitude))
    vectors = (vectors * np.conj(phase)[..., None, :]).astype(vectors.dtype, copy=False)
    if partner_rows is not None:
        k = min(partner_rows.shape[-2], phase.shape[-1])
        partner_rows = partner_rows.copy()
        partner_rows[..., :k, :] *= phase[..., :k, None]
    return vectors, partner_rows, mask


def _pick(mask: Any, x: Any) -> Any:
    """``[..., M, K] -> [..., K]``: the entry of each column where ``mask`` is set."""
    picked = lax.select(mask, x, lax.zeros_like(x))
    return lax.reduce_sum(picked, (x.meta.ndim - 2,))


def phase_correction(mask: Any, vectors: Any, tangent: Any) -> Any:
    """``i * Im(dv_p) / v_p`` per column (``p`` the pivot, where ``v_p`` is real > 0):
    subtracting ``vectors * that`` from a tangent keeps the pivot entries real."""
    pivot = lax.real(_pick(mask, vectors))
    rate = lax.div(lax.imag(_pick(mask, tangent)), pivot)
    return lax.complex(lax.zeros_like(rate), rate)


def check_gauge(op: str, gauge: str) -> str:
    """``gauge`` if it is one of :data:`GAUGES`; raises naming ``op`` otherwise."""
    if gauge not in GAUGES:
        raise ParameterError(op, f"gauge must be one of {GAUGES}, got {gauge!r}")
    return gauge
