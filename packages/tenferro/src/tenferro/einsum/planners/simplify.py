"""Absorbing small terms before a search: a term whose labels another term all holds
(a vector on a bond, a matrix beside a 3-tensor) is contracted into the smallest such
term first. That pair costs no more than the larger term's size and never enlarges
it, and on networks with many such terms (circuits, factor graphs with unary factors)
it shrinks the tree a search must explore by a large factor.
"""

from __future__ import annotations

from collections.abc import Sequence

from tenferro.einsum.planners.network import Network, Pair

__all__ = ["absorbed", "expand"]


def absorbed(network: Network) -> tuple[list[Pair], list[int], Network]:
    """``(steps, ids, rest)``: the absorbing pairs (SSA over ``network``), the ids of the
    terms left (operands or results of those pairs) and the network of those terms."""
    terms: dict[int, frozenset[str]] = dict(enumerate(network.inputs))
    holders: dict[str, set[int]] = {}
    for t, term in terms.items():
        for label in term:
            holders.setdefault(label, set()).add(t)
    output = network.output
    next_id = len(terms)
    steps: list[Pair] = []
    changed = True
    while changed:
        changed = False
        for t in sorted(terms, key=lambda t: (network.size(terms[t]), t)):
            labels = terms.get(t)
            if not labels:
                continue
            hosts = set.intersection(*(holders[label] for label in labels)) - {t}
            if not hosts:
                continue
            host = min(hosts, key=lambda u: (network.size(terms[u]), u))
            union = labels | terms.pop(host)
            del terms[t]
            for label in union:
                holders[label].discard(t)
                holders[label].discard(host)
            kept = frozenset(label for label in union if holders[label] or label in output)
            for label in kept:
                holders[label].add(next_id)
            terms[next_id] = kept
            steps.append((t, host))
            next_id += 1
            changed = True
    ids = sorted(terms)
    return steps, ids, Network(tuple(terms[i] for i in ids), output, network.sizes)


def expand(
    steps: Sequence[Pair], ids: Sequence[int], rest: Sequence[Pair], count: int
) -> list[Pair]:
    """The SSA path over the original network: the absorbing ``steps``, then ``rest``
    (an SSA path over the terms ``ids``) renumbered."""
    path = list(steps)
    names = list(ids)
    next_id = count + len(steps)
    for a, b in rest:
        path.append((names[a], names[b]))
        names.append(next_id)
        next_id += 1
    return path
