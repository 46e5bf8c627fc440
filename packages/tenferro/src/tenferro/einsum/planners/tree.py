"""A mutable binary contraction tree with cheap local cost updates.

Leaves are the operands ``0..n-1``; internal nodes ``n..2n-2`` are pairwise
contractions. Index sets are bit masks over the network's labels, and every node keeps
its *legs*: the labels of its subtree that the rest of the network (other operands or
the output) still needs. A tree rotation at a node ``p`` whose child ``x = (a, b)``
meets ``p``'s other child ``c`` only changes ``x`` (to ``(a, c)`` or ``(b, c)``) and
``p``'s cost: the new legs of ``x`` are ``(legs(a) | legs(c)) & (legs(b) | legs(p))``
(``p``'s legs do not change), so a move is priced from four masks, hyperedges
included. Costs are opt_einsum's: the product of every involved extent, doubled when
the pair sums a label.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tenferro.einsum.planners.network import Network, Pair

__all__ = ["Labels", "Tree"]


class Labels:
    """The labels of a network as bits, and the extent product of a mask of them: by
    counting bits per extent when the network has few distinct extents (circuits, factor
    graphs), else memoised."""

    __slots__ = ("_groups", "bit", "inputs", "memo", "names", "output", "size", "sizes")
    size: Callable[[int], int]
    """The product of the extents of the labels in a mask."""

    def __init__(self, network: Network) -> None:
        self.names = sorted(network.sizes, key=repr)
        self.bit = {label: 1 << k for k, label in enumerate(self.names)}
        self.sizes = [network.sizes[label] for label in self.names]
        self.inputs = [self.mask(term) for term in network.inputs]
        self.output = self.mask(network.output)
        self.memo: dict[int, int] = {0: 1}
        groups: dict[int, int] = {}
        for k, extent in enumerate(self.sizes):
            groups[extent] = groups.get(extent, 0) | (1 << k)
        self._groups = tuple(groups.items())
        if len(groups) == 1:
            (base,) = groups

            def counted(mask: int) -> int:
                count: int = base ** mask.bit_count()
                return count

            self.size = counted
        elif len(groups) <= 3:
            self.size = self._grouped
        else:
            self.size = self._memoised

    def mask(self, labels: object) -> int:
        bit = self.bit
        mask = 0
        for label in labels:  # type: ignore[attr-defined]
            mask |= bit[label]
        return mask

    def labels(self, mask: int) -> frozenset[str]:
        names = self.names
        found = []
        while mask:
            low = mask & -mask
            found.append(names[low.bit_length() - 1])
            mask ^= low
        return frozenset(found)

    def _grouped(self, mask: int) -> int:
        found = 1
        for extent, group in self._groups:
            found *= extent ** (mask & group).bit_count()
        return found

    def _memoised(self, mask: int) -> int:
        """The product of the extents of the labels in ``mask`` (memoised)."""
        found = self.memo.get(mask)
        if found is None:
            sizes = self.sizes
            found = 1
            rest = mask
            while rest:
                low = rest & -rest
                found *= sizes[low.bit_length() - 1]
                rest ^= low
            if len(self.memo) > 1 << 18:
                self.memo.clear()
            self.memo[mask] = found
        return found


class Tree:
    """A complete binary contraction tree over a network's operands (see the module
    documentation). ``flops[v]`` is the cost of the pair contracted at node ``v``."""

    __slots__ = ("count", "flops", "labels", "left", "legs", "parent", "right", "root")

    def __init__(self, labels: Labels, ssa: Sequence[Pair]) -> None:
        count = len(labels.inputs)
        self.count = count
        self.labels = labels
        nodes = count + len(ssa)
        self.left = [-1] * nodes
        self.right = [-1] * nodes
        self.parent = [-1] * nodes
        self.legs = list(labels.inputs) + [0] * len(ssa)
        self.flops = [0] * nodes
        for step, (a, b) in enumerate(ssa):
            node = count + step
            self.left[node], self.right[node] = a, b
            self.parent[a] = self.parent[b] = node
        self.root = nodes - 1
        self.recount()

    def recount(self) -> None:
        """Recompute every internal node's legs and cost (bottom-up)."""
        labels, left, right, legs, flops = self.labels, self.left, self.right, self.legs, self.flops
        needed = self._needed_outside()
        for node in range(self.count, len(left)):
            union = legs[left[node]] | legs[right[node]]
            kept = union & needed[node]
            legs[node] = kept
            flops[node] = labels.size(union) * (1 if kept == union else 2)

    def _needed_outside(self) -> list[int]:
        """Per node, the labels held outside its subtree or by the output (top-down:
        the complement of a subtree is its parent's complement plus its sibling)."""
        count, left, right = self.count, self.left, self.right
        below = list(self.labels.inputs) + [0] * (len(left) - count)
        for node in range(count, len(left)):
            below[node] = below[left[node]] | below[right[node]]
        # A label is needed outside a subtree iff the output has it or some operand
        # outside holds it: count holders per label via the subtree masks.
        outside = [0] * len(left)
        outside[self.root] = self.labels.output
        for node in range(len(left) - 1, count - 1, -1):
            a, b = left[node], right[node]
            outside[a] = outside[node] | below[b]
            outside[b] = outside[node] | below[a]
        return outside

    def copy(self) -> Tree:
        twin = Tree.__new__(Tree)
        twin.count, twin.labels, twin.root = self.count, self.labels, self.root
        twin.left, twin.right, twin.parent = list(self.left), list(self.right), list(self.parent)
        twin.legs, twin.flops = list(self.legs), list(self.flops)
        return twin

    def total(self) -> int:
        return sum(self.flops[self.count :])

    def largest(self) -> int:
        size = self.labels.size
        return max((size(m) for m in self.legs[self.count :]), default=0)

    def ssa(self) -> list[Pair]:
        """The tree as an SSA path (children before parents, iteratively)."""
        count, left, right = self.count, self.left, self.right
        order: list[int] = []
        stack = [(self.root, False)]
        while stack:
            node, done = stack.pop()
            if node < count:
                continue
            if done:
                order.append(node)
                continue
            stack.append((node, True))
            stack.append((right[node], False))
            stack.append((left[node], False))
        ids = list(range(count)) + [0] * (len(left) - count)
        path: list[Pair] = []
        for node in order:
            path.append((ids[left[node]], ids[right[node]]))
            ids[node] = count + len(path) - 1
        return path
