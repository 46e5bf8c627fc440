"""``dp``'s partner search on arrays: which pairs of two layers' subgraphs to price.

A layer of the search holds thousands of subgraphs; most pairs of them overlap, share no
summed label, or cost more than the cap. :class:`PairFilter` rules those out a block of
pairs at a time with numpy (operand masks of at most 64 operands as ``uint64``, open
labels as ``uint64`` words, costs and log sizes as floats) and hands the few that remain
to the exact search in Python. The floating-point price is an estimate used only to
refuse: a pair is dropped when the estimate exceeds the cap by more than any rounding
could explain, so the search keeps every pair the exact price would keep.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["BLOCK_PAIRS", "GROUP_LIMIT", "LayerArrays", "PairFilter"]

GROUP_LIMIT = 64
"""Components of at most this many operands are searched on arrays (one ``uint64`` mask)."""
BLOCK_PAIRS = 1 << 18
"""Pairs judged at once: bounds the filter's memory (a few MB)."""
_ROUNDING = 1e-9
"""Relative slack between the estimated and the exact price of a pair."""
_WORD = 64
_FULL = (1 << _WORD) - 1


class LayerArrays:
    """One layer's subgraphs as arrays, in the order of ``items``."""

    def __init__(self, items: Sequence[tuple[int, Any]], offset: int, words: int) -> None:
        self.items = items
        count = len(items)
        self.operands = np.fromiter((s >> offset for s, _ in items), np.uint64, count)
        labels = np.empty((count, words), np.uint64)
        for w in range(words):
            shift = _WORD * w
            labels[:, w] = [(entry[0] >> shift) & _FULL for _, entry in items]
        self.labels = labels
        self.costs = np.fromiter((float(entry[1]) for _, entry in items), float, count)
        self.log_sizes = np.fromiter((math.log(entry[3]) for _, entry in items), float, count)

    def __len__(self) -> int:
        return len(self.items)


class PairFilter:
    """Pairs of two layers worth pricing exactly: disjoint, sharing a summed label
    (unless ``search_outer``), and not estimated above the cost cap.

    ``extents`` maps each label's bit to its extent; ``summed`` is the mask of labels
    not in the output."""

    def __init__(self, extents: dict[int, int], summed: int, *, search_outer: bool) -> None:
        bits = max(extents, default=1).bit_length()
        self.words = max(1, -(-bits // _WORD))
        self.summed = [(summed >> (_WORD * w)) & _FULL for w in range(self.words)]
        self.search_outer = search_outer
        # log-extent sums of the labels each byte value names, per byte of the words
        self.bytes: list[tuple[int, int, np.ndarray]] = []
        for w in range(self.words):
            for byte in range(8):
                logs = [math.log(extents.get(1 << (_WORD * w + 8 * byte + t), 1)) for t in range(8)]
                if not any(logs):
                    continue
                table = np.zeros(256)
                for t, value in enumerate(logs):
                    table[np.arange(256) >> t & 1 == 1] += value
                self.bytes.append((w, 8 * byte, table))

    def arrays(self, items: Sequence[tuple[int, Any]], offset: int) -> LayerArrays:
        return LayerArrays(items, offset, self.words)

    def pairs(
        self,
        small: LayerArrays,
        large: LayerArrays,
        same: bool,
        cap: float,
        check: Callable[[], None],
    ) -> Iterator[tuple[list[int], list[int], bool]]:
        """Blocks of ``(rows of small, rows of large, whether the cap refused one)``.
        With ``same`` (one layer paired with itself) each pair comes once.
        ``check`` is called before each block (the deadline)."""
        width = len(large)
        rows = max(1, BLOCK_PAIRS // max(width, 1))
        limit = cap * (1 + _ROUNDING)
        columns = np.arange(width)
        for start in range(0, len(small), rows):
            check()
            stop = min(start + rows, len(small))
            keep = (small.operands[start:stop, None] & large.operands[None, :]) == 0
            if same:
                keep &= np.arange(start, stop)[:, None] < columns[None, :]
            if not self.search_outer:
                shares = np.zeros(keep.shape, bool)
                for w, summed in enumerate(self.summed):
                    if summed:
                        both = small.labels[start:stop, w, None] & large.labels[None, :, w]
                        shares |= (both & np.uint64(summed)) != 0
                keep &= shares
            first, second = np.nonzero(keep)
            if not first.size:
                continue
            first += start
            common = np.zeros(first.size)
            for w, shift, table in self.bytes:
                both = small.labels[first, w] & large.labels[second, w]
                common += table[((both >> np.uint64(shift)) & np.uint64(255)).astype(np.intp)]
            with np.errstate(over="ignore"):
                estimate = (
                    small.costs[first]
                    + large.costs[second]
                    + np.exp(small.log_sizes[first] + large.log_sizes[second] - common)
                )
            cheap = estimate <= limit
            yield first[cheap].tolist(), second[cheap].tolist(), not bool(cheap.all())
