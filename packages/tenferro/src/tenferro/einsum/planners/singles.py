"""Labels only one operand has, and when to sum them in a step of their own.

An operand's *alone* labels (held by no other operand nor the output) can be summed
before any pair, in a one-term step costing twice the operand's size (opt_einsum's
count; its ``dp`` always does this). They only ever enlarge the first pair the operand
takes part in, so whether the step pays off is decided per operand, at that pair
(jointly when both of its terms are operands with alone labels).
"""

from __future__ import annotations

from collections.abc import Sequence

from tenferro.einsum.planners.network import Network, Pair, Step

__all__ = ["alone_labels", "reduced", "with_singles"]


def alone_labels(network: Network) -> list[frozenset[str]]:
    """Per operand, the labels no other operand nor the output holds."""
    counts: dict[str, int] = {}
    for term in network.inputs:
        for label in term:
            counts[label] = counts.get(label, 0) + 1
    output = network.output
    return [
        frozenset(label for label in term if counts[label] == 1 and label not in output)
        for term in network.inputs
    ]


def reduced(network: Network) -> Network:
    """``network`` with every operand's alone labels dropped (what pairs then see)."""
    alone = alone_labels(network)
    if not any(alone):
        return network
    inputs = tuple(term - drop for term, drop in zip(network.inputs, alone, strict=True))
    return Network(inputs, network.output, network.sizes)


def _pair_cost(
    network: Network, left: frozenset[str], right: frozenset[str], kept: frozenset[str]
) -> int:
    involved = left | right
    return network.size(involved) * (2 if len(kept) < len(involved) else 1)


def with_singles(network: Network, pairs: Sequence[Pair]) -> list[Step]:
    """``pairs`` (a binary SSA path) with a one-term step first for every operand whose
    alone labels are cheaper summed alone (ids renumbered); the pairs unchanged when
    no operand has alone labels."""
    count = len(network.inputs)
    alone = alone_labels(network)
    if not any(alone) or not pairs:
        return list(pairs)
    # The result labels of each pair do not depend on the choice (alone labels are
    # never kept); find them on the reduced network.
    terms: list[frozenset[str]] = list(reduced(network).inputs)
    holders: dict[str, int] = {}
    for term in terms:
        for label in term:
            holders[label] = holders.get(label, 0) + 1
    output = network.output
    chosen = [False] * count
    for a, b in pairs:
        left, right = terms[a], terms[b]
        for label in left:
            holders[label] -= 1
        for label in right:
            holders[label] -= 1
        kept = frozenset(i for i in left | right if i in output or holders[i] > 0)
        for label in kept:
            holders[label] += 1
        terms.append(kept)
        options_a = [False, True] if a < count and alone[a] else [False]
        options_b = [False, True] if b < count and alone[b] else [False]
        best: tuple[int, bool, bool] | None = None
        for single_a in options_a:
            for single_b in options_b:
                full_a = left if single_a or a >= count else left | alone[a]
                full_b = right if single_b or b >= count else right | alone[b]
                cost = _pair_cost(network, full_a, full_b, kept)
                if single_a:
                    cost += 2 * network.size(network.inputs[a])
                if single_b:
                    cost += 2 * network.size(network.inputs[b])
                if best is None or cost < best[0]:
                    best = (cost, single_a, single_b)
        assert best is not None
        if best[1]:
            chosen[a] = True
        if best[2]:
            chosen[b] = True
    singles = [t for t in range(count) if chosen[t]]
    if not singles:
        return list(pairs)
    rename = {t: count + k for k, t in enumerate(singles)}
    shift = len(singles)
    steps: list[Step] = [(t,) for t in singles]
    for a, b in pairs:
        steps.append(tuple(rename.get(x, x) if x < count else x + shift for x in (a, b)))
    return steps
