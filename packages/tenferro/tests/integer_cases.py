"""Support of the integer-parameter generators (``test_lax_integer_parameters``,
``test_numpy_integer_parameters``): a call with its integer parameters described, the
malformed values generated for each parameter, and the valid spellings of a value.

An integer parameter is an integer in numpy's sense (``__index__``, not bool, not
float: Python and numpy ints, 0-d integer arrays, concrete 0-d integer tensors); a
sequence of them a tuple, list, 1-d integer array or concrete 1-d integer tensor, of one
entry per axis when the parameter is per axis (see ``tenferro.core.params``). A traced
tensor is refused in either role: its value is data.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st
from sampling import first_value, sample_product

import tenferro as tf


@dataclass(frozen=True)
class Int:
    """One integer parameter: its keyword, the error class of its role (``AxisError``
    for axes, ``ShapeError`` for extents and positions, ``ParameterError`` otherwise),
    whether it is a sequence, one entry per axis of an operand, whether ``None`` is
    valid for it, and whether one integer stands for a sequence (numpy's ``axis=1``)."""

    name: str
    error: type[tf.TenferroError]
    sequence: bool = False
    per_axis: bool = False
    optional: bool = False
    scalar_ok: bool = False
    traced_ok: bool = False
    """A tensor is data here, traced or not (``lax.dynamic_slice``'s start indices)."""


@dataclass(frozen=True)
class Case:
    """``function(**operands, **params)``: ``operands`` hold numpy data (a list of arrays
    for a sequence of operands), ``params`` valid values; ``ints`` describe the integer
    parameters among them; ``op`` is the name errors must carry."""

    function: Callable[..., Any]
    op: str
    operands: dict[str, Any]
    params: dict[str, Any]
    ints: tuple[Int, ...] = field(default=())

    def call(self, operands: dict[str, Any] | None = None, **changed: Any) -> Any:
        return self.function(
            **(self.operands if operands is None else operands),
            **{
                **self.params,
                **changed,
            },
        )


def malformed(param: Int, valid: Any) -> Iterator[tuple[Any, Any]]:
    """``(bad value, what the message must show)`` for ``param`` whose valid value is
    ``valid``: bools, floats (integral ones too), strings, ``None`` (unless valid), a
    nested list, arrays of the wrong rank or dtype, and for per-axis sequences the wrong
    length."""
    if not param.sequence:
        yield from _bad_scalars(valid, param.optional)
        yield [valid], "[" + repr(valid)
        yield np.array([valid]), "array(["
        yield tf.traced(np.int64(valid)), "TracedTensor"
        return
    entries = list(valid)
    first = entries[0] if entries else 0
    leaf = _first_leaf(first)
    for bad, shown in _bad_scalars(leaf, optional=False):
        spelled = [_with_first_leaf(first, bad), *entries[1:]]
        yield spelled, shown
        yield tuple(spelled), shown
        if param.scalar_ok and not (bad is None and param.optional):
            yield bad, shown  # one integer is valid here: so a bad one is worth trying
    yield [[first], *entries[1:]], f"[{first!r}]"
    yield "ab", "'ab'"
    if not param.scalar_ok:
        yield first, repr(first)
    if not param.optional:
        yield None, "None"
    yield np.array(entries, dtype=np.float64) + 0.5, "array("
    yield np.array([entries or [0]]), "array([[" if np.ndim(entries) < 2 else "array([[["
    if not param.traced_ok:  # else a tensor is data, checked by the primitive as an operand
        yield tf.asarray(np.array(entries, dtype=np.float64) + 0.5), "Tensor("
        if np.ndim(entries) == 1:
            yield tf.traced(np.array(entries, dtype=np.int64)), "TracedTensor"
    if param.per_axis:
        if entries:
            yield tuple(entries[:-1]), repr(tuple(entries[:-1]))
        yield (*entries, 0), repr((*entries, 0))


def _first_leaf(value: Any) -> Any:
    while isinstance(value, (list, tuple)):
        value = value[0]
    return value


def _with_first_leaf(value: Any, leaf: Any) -> Any:
    """``value`` (an integer, or nested sequences of them) with its first integer ``leaf``."""
    if not isinstance(value, (list, tuple)):
        return leaf
    return type(value)([_with_first_leaf(value[0], leaf), *value[1:]])


def _bad_scalars(valid: Any, optional: bool) -> Iterator[tuple[Any, str]]:
    yield True, "True"
    yield np.True_, "True"
    yield valid + 0.5, repr(valid + 0.5)
    yield float(valid), repr(float(valid))
    yield np.float64(valid), repr(float(valid))
    yield str(valid), repr(str(valid))
    if not optional:
        yield None, "None"


def integer_encodings(value: int) -> dict[str, Any]:
    """Every valid spelling of the integer ``value``, by name: Python and numpy ints
    (unsigned ones too), 0-d integer arrays, 0-d integer tensors (concrete and eager)."""
    found = {
        "int": value,
        "np.int64": np.int64(value),
        "np.int32": np.int32(value),
        "0-d int64 array": np.array(value),
        "0-d int32 array": np.array(value, dtype=np.int32),
        "0-d Tensor": tf.asarray(np.int64(value)),
        "0-d EagerTensor": tf.EagerTensor(np.int32(value)),
    }
    if value >= 0:
        found["np.uint8"] = np.uint8(value)
    return found


def sequence_encodings(values: tuple[int, ...]) -> dict[str, Any]:
    """Every valid spelling of the integer sequence ``values``, by name: tuples and lists
    (of ints, numpy ints, 0-d arrays or 0-d tensors), 1-d integer arrays and tensors."""
    entries = [int(v) for v in values]
    return {
        "tuple": tuple(entries),
        "list": list(entries),
        "int64 array": np.array(entries, dtype=np.int64),
        "int32 array": np.array(entries, dtype=np.int32),
        "1-d Tensor": tf.asarray(np.array(entries, dtype=np.int64)),
        "1-d EagerTensor": tf.EagerTensor(np.array(entries, dtype=np.int32)),
        "tuple of np.int64": tuple(np.int64(v) for v in entries),
        "tuple of 0-d arrays": tuple(np.array(v) for v in entries),
        "tuple of 0-d Tensors": tuple(tf.asarray(np.int64(v)) for v in entries),
    }


def int_spellings(value: int) -> st.SearchStrategy[Any]:
    """Valid spellings of the integer ``value`` (:func:`integer_encodings`), drawn."""
    return st.sampled_from(list(integer_encodings(value).values()))


@st.composite
def spelling(draw: Any, param: Int, value: Any) -> Any:
    """A valid spelling of ``value`` for ``param`` (drawn)."""
    if value is None:
        return None
    if not param.sequence:
        return draw(int_spellings(value))
    if any(isinstance(v, (list, tuple)) for v in value):  # pairs: spell each inner sequence
        inner = tuple(draw(spelling(param, v)) for v in value)
        return inner if draw(st.booleans()) else list(inner)
    forms = sequence_encodings(value)
    form = draw(st.sampled_from([*forms, "entries"]))
    if form == "entries":
        return tuple(draw(int_spellings(int(v))) for v in value)
    return forms[form]


Encoded = tuple[Callable[[Any], Any], Callable[[Any], Any], Any]
"""(tenferro call of one integer parameter, numpy's call, the parameter's value: an
int or a tuple of ints)."""


def encoded_cases(table: dict[str, Encoded]) -> list[Any]:
    """``(name, encoding)`` for every encoding of every parameter value of ``table``."""
    cases = []
    for name, (_, _, base) in sorted(table.items()):
        found = integer_encodings(base) if isinstance(base, int) else sequence_encodings(base)
        cases.extend(pytest.param(name, label, id=f"{name}-{label}") for label in found)
    return sample_product(cases, per=first_value)


def check_encoding(table: dict[str, Encoded], name: str, label: str) -> None:
    """``table[name]``'s call with its parameter spelled ``label`` gives the plain call's
    and numpy's result (values and dtype)."""
    call, reference, base = table[name]
    single = isinstance(base, int)
    encoded = (integer_encodings(base) if single else sequence_encodings(base))[label]
    got = value(call(encoded))
    assert_same(got, call(base))
    expected = np.asarray(reference(base))
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


KINDS = ("numpy", "Tensor", "EagerTensor", "TracedTensor")


def as_kind(kind: str, data: Any) -> Any:
    """``data`` (an array, or a list of arrays) as an operand of ``kind``."""
    if isinstance(data, list):
        return [as_kind(kind, d) for d in data]
    if kind == "numpy":
        return data
    if kind == "Tensor":
        return tf.asarray(data)
    if kind == "EagerTensor":
        return tf.EagerTensor(data)
    return tf.traced(data)


def value(result: Any) -> Any:
    """The data of a lax result (evaluated when traced)."""
    if isinstance(result, tuple):
        return tuple(value(r) for r in result)
    if isinstance(result, tf.TracedTensor):
        return np.asarray(result.eval())
    return np.asarray(result)


def assert_same(got: Any, expected: Any) -> None:
    """Same values (NaNs where NaNs), dtypes and shapes."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple)
        for g, e in zip(got, expected, strict=True):
            assert_same(g, e)
        return
    got, expected = value(got), value(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


def refusals(cases: dict[str, Case]) -> list[tuple[str, str]]:
    """``(case key, parameter)`` for every integer parameter of ``cases``."""
    return [(key, param.name) for key, case in cases.items() for param in case.ints]


def spelled(data: st.DataObject, case: Case) -> dict[str, Any]:
    """``case``'s parameters with each integer parameter in a drawn valid spelling."""
    params = dict(case.params)
    for param in case.ints:
        params[param.name] = data.draw(spelling(param, params[param.name]))
    return params


def check_refusal(case: Case, name: str) -> None:
    """Every malformed value of parameter ``name`` raises its error naming ``case.op`` and
    the value; afterwards the valid call still gives what it gave before."""
    param = next(p for p in case.ints if p.name == name)
    before = value(case.call(_tensors(case)))
    for bad, shown in malformed(param, case.params[param.name]):
        refused = _refusal(case, param.name, bad)
        message = str(refused)
        assert isinstance(refused, param.error), (param.name, bad, message)
        assert refused.op == case.op, (param.name, bad, message)
        assert shown in message, (param.name, bad, shown, message)
    assert_same(case.call(_tensors(case)), before)


EXTREMES = (-(2**64), -(2**63), -(2**31), -400, -309, 309, 400, 2**31, 2**63 - 1, 2**64)
"""Integers at and past the bounds of int32, int64 and float64 exponents (``round``'s
``10.0**decimals`` overflowed at 309)."""


def check_extremes(case: Case, name: str, grows: bool) -> None:
    """Parameter ``name`` at each of :data:`EXTREMES` (only the negative ones when the
    result ``grows`` with it: a huge size is a huge allocation) gives a result or a
    tenferro error naming ``case.op``, never a bare Python or numpy error."""
    param = next(p for p in case.ints if p.name == name)
    entries = list(case.params[name]) if param.sequence else []
    for extreme in EXTREMES:
        if grows and extreme > 0:
            continue
        spelled: Any = extreme
        if entries:
            spelled = [_with_first_leaf(entries[0], extreme), *entries[1:]]
        elif param.sequence:
            spelled = [extreme]
        refused = _outcome(case, name, spelled)
        if refused is not None:
            assert refused.op == case.op, (name, spelled, str(refused))


def _outcome(case: Case, name: str, value: Any) -> tf.TenferroError | None:
    """The tenferro error of ``case`` called with ``name=value``, ``None`` when it gives
    a result; a bare Python/numpy error fails."""
    try:
        case.call(_tensors(case), **{name: value})
    except tf.TenferroError as error:
        return error
    except Exception as error:
        raise AssertionError(
            f"{case.op}({name}={value!r}) raised a bare {type(error).__name__}: {error}"
        ) from error
    return None


def _refusal(case: Case, name: str, bad: Any) -> tf.TenferroError:
    """The tenferro error of ``case`` called with ``name=bad``; a bare Python/numpy error
    (the bug class) or an accepted call fails."""
    refused = _outcome(case, name, bad)
    if refused is None:
        raise AssertionError(f"{case.op}({name}={bad!r}) was accepted")
    return refused


def _tensors(case: Case) -> dict[str, Any]:
    return {name: as_kind("Tensor", data) for name, data in case.operands.items()}


def public_functions() -> dict[str, Any]:
    """Every public function of ``tf``, ``tf.linalg`` and ``tf.random`` (and the
    ``Generator`` methods) by qualified name."""
    found: dict[str, Any] = {}
    for prefix, module in [("tf", tf), ("tf.linalg", tf.linalg), ("tf.random", tf.random)]:
        for name in module.__all__:
            function = getattr(module, name)
            if callable(function) and not isinstance(function, type):
                found[f"{prefix}.{name}"] = function
    for name in dir(tf.random.Generator):
        if not name.startswith("_"):
            found[f"tf.random.Generator.{name}"] = getattr(tf.random.Generator, name)
    return found


def parameters_named(names: set[str]) -> list[tuple[str, str]]:
    """``(qualified function, parameter)`` for every public function's parameter whose
    name is in ``names`` (the completeness gates of the parameter generators)."""
    pairs = []
    for qualified, function in public_functions().items():
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):
            continue
        pairs.extend((qualified, p) for p in parameters if p in names)
    return pairs


def covering(op: str) -> list[str]:
    """The public functions a case of operation ``op`` covers (``linalg.norm``: norm)."""
    name = op.rsplit(".", 1)[-1]
    return [q for q in public_functions() if q.rsplit(".", 1)[-1] == name]
