"""The oracle database's einsum-shaped cases (``vecdot``, ``multi_dot``, ``diagonal``)
replayed through ``tf.einsum``: JVPs, VJPs and HVPs against PyTorch's answers under each
case's tolerances. (The database has no ``einsum`` or ``tensordot`` op of its own.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import oracle_database
import pytest
from oracle_database import CaseRef
from sampling import sample_product
from test_oracles import ROOT, _allclose, _array, skip_reason

import tenferro as tf

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _vecdot(xs: list[Any], kwargs: dict[str, Any]) -> Any:
    x, y = xs
    dim = kwargs.get("dim", -1)
    x, y = tf.moveaxis(x, dim, -1), tf.moveaxis(y, dim, -1)
    return tf.einsum("...i,...i->...", tf.conj(x), y)


def _multi_dot(xs: list[Any], kwargs: dict[str, Any]) -> Any:
    terms, output = [], ""
    for position, x in enumerate(xs):
        left, right = LETTERS[position], LETTERS[position + 1]
        if x.ndim == 1:
            terms.append(right if position == 0 else left)
        else:
            terms.append(left + right)
    if xs[0].ndim == 2:
        output += LETTERS[0]
    if xs[-1].ndim == 2:
        output += LETTERS[len(xs)]
    return tf.einsum(",".join(terms) + "->" + output, *xs)


def _diagonal(xs: list[Any], kwargs: dict[str, Any]) -> Any:
    (x,) = xs
    first = kwargs.get("dim1", 0) % x.ndim
    second = kwargs.get("dim2", 1) % x.ndim
    labels = list(LETTERS[: x.ndim])
    labels[second] = labels[first]
    kept = [c for axis, c in enumerate(labels) if axis not in (first, second)]
    return tf.einsum("".join(labels) + "->" + "".join(kept) + labels[first], x)


EINSUM_FORMS = {"vecdot": _vecdot, "multi_dot": _multi_dot, "diagonal": _diagonal}
SELECTED = [ref for ref in oracle_database.index() if ref.op in EINSUM_FORMS]


def _reason(case: dict[str, Any]) -> str | None:
    reason = skip_reason(case)
    if reason is not None:
        return reason
    if case["op"] == "diagonal":
        kwargs = case.get("op_kwargs") or {}
        if kwargs.get("offset", 0) != 0:
            return "diagonal: an offset diagonal is not an einsum"
        shape = next(iter(case["inputs"].values()))["shape"]
        if shape[kwargs.get("dim1", 0)] != shape[kwargs.get("dim2", 1)]:
            return "diagonal: a repeated einsum label needs equal extents"
    return None


@pytest.mark.skipif(ROOT is None, reason="the oracle database (../shared/oracles) is not present")
@pytest.mark.parametrize(
    "ref",
    sample_product(
        (pytest.param(ref, id=ref.case_id) for ref in SELECTED), per=lambda p: p.values[0].op
    ),
)
def test_oracle_case_through_einsum(ref: CaseRef) -> None:
    case = oracle_database.load(ref)
    reason = _reason(case)
    if reason is not None:
        pytest.skip(reason)
    form = EINSUM_FORMS[case["op"]]
    kwargs = case.get("op_kwargs") or {}
    names = sorted(case["inputs"])
    inputs = {name: tf.Tensor(_array(case["inputs"][name])) for name in names}
    first = case["comparison"]["first_order"]
    second = case["comparison"].get("second_order")
    for probe in case["probes"]:
        active = [n for n in names if n in probe["direction"]]

        def f(*xs: Any, active: list[str] = active) -> Any:
            full = dict(inputs)
            full.update(zip(active, xs, strict=True))
            return form([full[n] for n in names], kwargs)

        primals = tuple(inputs[n] for n in active)
        directions = tuple(_array(probe["direction"][n]) for n in active)
        cotangent = _array(probe["cotangent"]["value"])
        reference = probe["pytorch_ref"]
        where = f"{case['case_id']}/{probe['probe_id']}"
        _, tangent = tf.jvp(f, primals, directions)
        _allclose(f"{where} jvp", tangent, _array(reference["jvp"]["value"]), first)
        _, pullback = tf.vjp(f, *primals)
        for name, value in zip(active, pullback(cotangent), strict=True):
            _allclose(f"{where} vjp[{name}]", value, _array(reference["vjp"][name]), first)
        if "hvp" in reference and second is not None:

            def pulled(*xs: Any, cotangent: Any = cotangent) -> Any:
                return tf.vjp(f, *xs)[1](cotangent)

            _, hvp = tf.jvp(pulled, primals, directions)
            for name, value in zip(active, hvp, strict=True):
                _allclose(f"{where} hvp[{name}]", value, _array(reference["hvp"][name]), second)


def test_einsum_shaped_cases_exist_and_are_replayed() -> None:
    if ROOT is None:
        pytest.skip("the oracle database is not present")
    replayed = {ref.op for ref in SELECTED if _reason(oracle_database.load(ref)) is None}
    assert replayed == set(EINSUM_FORMS)
    values = np.arange(3.0)
    np.testing.assert_allclose(_vecdot([tf.asarray(values), tf.asarray(values)], {}), 5.0)
