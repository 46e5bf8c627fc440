"""Every elementwise ``tenferro.lax`` function with rank-0 operands on either side of an
array, in every spelling ``jax.lax`` takes (Python scalars, numpy scalars, 0-d arrays,
0-d tensors), in the operands' own dtype, another precision of their kind, and another
kind (the class of review s21's finding: ``lax.mul(x, 2.0)`` refused).

Two oracles over one table of calls:

* ``jax.lax`` 0.10.2 itself (x64 on), where JAX is installed: each call gives JAX's
  value, dtype and shape, or a tenferro error where JAX raises. One deliberate
  difference: a weak Python scalar beside strong operands of its kind and another
  precision (``mul(float32 array, 2.0)``) takes their dtype, as ``jax.lax`` does in
  its default precision (x64 off: the scalar is then float32); with x64 on, JAX
  refuses it. There the reference is JAX called with the scalar in that dtype.
* ``jax.lax``'s rules restated with numpy (:func:`_by_the_rules`), everywhere (CI has
  no JAX): rank-0 operands that may be broadcast are (both operands of a binary
  function, ``select``'s predicate, ``clamp``'s bounds; nothing else broadcasts); one
  dtype per group, a weak operand taking the strong ones' dtype when of their kind;
  each function's dtype kinds; ``pow`` takes an integer exponent of an inexact base.
  The values are numpy's, exactly, and a refusal is a tenferro error naming the
  function.

Complete: every lax function that takes operands is a row here or is listed in
:data:`NOT_ELEMENTWISE` with its reason, and the rows that broadcast are exactly the
functions declared elementwise (``tenferro.core.operands.ELEMENTWISE``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import scipy.special
from transform_routes import fd_gradient, values

import tenferro as tf
from tenferro import lax
from tenferro.core.operands import DECLARED, ELEMENTWISE

F64, F32 = np.dtype(np.float64), np.dtype(np.float32)
I64, I32 = np.dtype(np.int64), np.dtype(np.int32)
C128, C64 = np.dtype(np.complex128), np.dtype(np.complex64)
BOOL = np.dtype(np.bool_)

OTHER_PRECISION = {F64: F32, F32: F64, I64: I32, I32: I64, C128: C64, C64: C128, BOOL: BOOL}
ARRAYS = {
    "f": [0.5, -1.25, 3.0],
    "i": [1, -2, 3],
    "c": [0.5 + 1j, -1.25, 3j],
    "b": [True, False, True],
}
SCALARS: dict[str, Any] = {"f": 2.0, "i": 2, "c": 2.0 - 1j, "b": True}
OTHER_KIND: dict[str, Any] = {"f": 2, "i": 2.0, "c": 2.0, "b": 1}
"""A Python scalar of another kind than the row's dtype."""
PYTHON = {bool: BOOL, int: I64, float: F64, complex: C128}


@dataclass(frozen=True)
class Operand:
    """One operand: what tenferro gets, what JAX gets (the same data; a tensor is a 0-d
    array for JAX), its dtype, whether it is weak (a Python scalar) and its shape."""

    tenferro: Any
    jax: Any
    dtype: np.dtype[Any]
    weak: bool
    shape: tuple[int, ...]

    @property
    def data(self) -> np.ndarray[Any, Any]:
        return np.asarray(self.jax, self.dtype)


def _forms(dtype: np.dtype[Any]) -> dict[str, Operand]:
    """Every spelling of an operand of ``dtype``: an array, the rank-0 ones, and the same
    in another precision and another kind."""
    kind = dtype.kind
    other = OTHER_PRECISION[dtype]
    array, scalar = np.array(ARRAYS[kind], dtype), SCALARS[kind]
    found = {
        "array": Operand(array, array, dtype, False, (3,)),
        "python": Operand(scalar, scalar, PYTHON[type(scalar)], True, ()),
        "numpy scalar": Operand(dtype.type(scalar), dtype.type(scalar), dtype, False, ()),
        "0-d array": Operand(np.array(scalar, dtype), np.array(scalar, dtype), dtype, False, ()),
        "0-d Tensor": Operand(
            tf.asarray(np.array(scalar, dtype)), np.array(scalar, dtype), dtype, False, ()
        ),
        "other kind": Operand(
            OTHER_KIND[kind], OTHER_KIND[kind], PYTHON[type(OTHER_KIND[kind])], True, ()
        ),
    }
    if other != dtype:
        found["0-d array, other precision"] = Operand(
            np.array(scalar, other), np.array(scalar, other), other, False, ()
        )
        found["array, other precision"] = Operand(
            np.array(ARRAYS[kind], other), np.array(ARRAYS[kind], other), other, False, (3,)
        )
    return found


@dataclass(frozen=True)
class Row:
    """A lax function as ``jax.lax`` defines it: ``call`` it on operands, ``jax`` gives
    the ``jax.lax`` function from the module (None: none exists), ``oracle`` computes on
    numpy arrays of one dtype; ``kinds`` are the dtype kinds of its ``grouped``
    operands, ``spread`` marks the operands that may be rank-0 beside the others,
    ``predicate`` the bool operand outside the group, ``dtypes`` those tried."""

    call: Callable[..., Any]
    jax: Callable[[Any], Any] | None
    oracle: Callable[..., Any]
    kinds: str
    dtypes: tuple[np.dtype[Any], ...]
    grouped: tuple[bool, ...]
    spread: tuple[bool, ...]
    predicate: int | None = None
    not_jax: Callable[..., bool] | None = None
    """Operands (their data) where tenferro's rule differs from ``jax.lax``'s by design:
    the rules are the reference there (see the rows)."""

    @property
    def arity(self) -> int:
        return len(self.grouped)


def _jax(name: str, **fixed: Any) -> Callable[[Any], Any]:
    return lambda module: lambda *a: getattr(module.lax, name)(*a, **fixed)


def _complex(re: Any, im: Any) -> Any:
    out = np.empty(np.shape(re), np.result_type(re.dtype, np.complex64))
    out.real, out.imag = re, im
    return out


def _div(x: Any, y: Any) -> Any:
    """``jax.lax.div``: integers truncate toward zero."""
    if x.dtype.kind != "i":
        return np.divide(x, y)
    return (np.abs(x) // np.abs(y) * np.sign(x) * np.sign(y)).astype(x.dtype)


def _jax_conj(jax: Any) -> Callable[..., Any]:
    """``jax.lax.conj``, but a real operand is returned as it is: tenferro's documented
    difference (``jax.lax.conj`` makes it complex)."""
    return lambda x: jax.lax.conj(x) if np.iscomplexobj(x) else jax.numpy.asarray(x)


def _not_all_bool(*operands: Any) -> bool:
    """tenferro's logical functions take bools only (``jax.lax``'s bitwise ones also
    take integers, bit by bit)."""
    return any(o.dtype != BOOL for o in operands)


def _sign(x: Any) -> Any:
    if x.dtype.kind != "c":
        return np.sign(x)
    with np.errstate(all="ignore"):
        return np.where(x == 0, 0, x / np.abs(x)).astype(x.dtype)


BINARY = (True, True)
REAL, INEXACT, NUMERIC = (F64, F32), (F64, F32, C128), (F64, F32, I64, I32, C128)
UNARY_ORACLES: dict[str, tuple[Callable[..., Any], tuple[np.dtype[Any], ...], str | None]] = {
    "neg": (np.negative, NUMERIC, "neg"),
    "abs": (np.abs, NUMERIC, "abs"),
    "sign": (_sign, NUMERIC, "sign"),
    "stop_gradient": (lambda x: x, NUMERIC, "stop_gradient"),
    "exp": (np.exp, INEXACT, "exp"),
    "log": (np.log, INEXACT, "log"),
    "sin": (np.sin, INEXACT, "sin"),
    "cos": (np.cos, INEXACT, "cos"),
    "tanh": (np.tanh, INEXACT, "tanh"),
    "asin": (np.arcsin, INEXACT, "asin"),
    "acos": (np.arccos, INEXACT, "acos"),
    "atan": (np.arctan, INEXACT, "atan"),
    "asinh": (np.arcsinh, INEXACT, "asinh"),
    "acosh": (np.arccosh, INEXACT, "acosh"),
    "atanh": (np.arctanh, INEXACT, "atanh"),
    "sqrt": (np.sqrt, INEXACT, "sqrt"),
    "rsqrt": (lambda x: np.reciprocal(np.sqrt(x)), INEXACT, "rsqrt"),
    "expm1": (np.expm1, INEXACT, "expm1"),
    "log1p": (np.log1p, INEXACT, "log1p"),
    "log2": (np.log2, INEXACT, None),
    "log10": (np.log10, INEXACT, None),
    "erf": (scipy.special.erf, REAL, "erf"),
    "erfc": (scipy.special.erfc, REAL, "erfc"),
    "real": (np.real, (C128, C64), "real"),
    "imag": (np.imag, (C128, C64), "imag"),
    "conj": (np.conj, (C128, C64), "conj"),
}
"""Unary functions: a rank-0 operand gives a rank-0 result of its dtype (a Python float
is float64, weak). ``log2``/``log10`` have no ``jax.lax`` function."""


def _rows() -> dict[str, Row]:
    rows: dict[str, Row] = {}
    for name, (oracle, dtypes, jax_name) in UNARY_ORACLES.items():
        kinds = "".join(sorted({d.kind for d in dtypes}))
        rows[name] = Row(
            getattr(lax, name),
            jax_name and _jax(jax_name),
            oracle,
            kinds,
            dtypes,
            (True,),
            (False,),
        )
    rows["conj"] = Row(lax.conj, _jax_conj, np.conj, "fc", (C128, C64), (True,), (False,))
    rows["round"] = Row(
        lambda x: lax.round(x, "nearest_even"),
        lambda jax: lambda x: jax.lax.round(x, jax.lax.RoundingMethod.TO_NEAREST_EVEN),
        np.rint,
        "f",
        REAL,
        (True,),
        (False,),
    )
    rows["logical_not"] = Row(
        lax.logical_not,
        _jax("bitwise_not"),
        np.logical_not,
        "b",
        (BOOL,),
        (True,),
        (False,),
        not_jax=_not_all_bool,
    )
    binary = {
        "add": (np.add, "ifc", NUMERIC),
        "sub": (np.subtract, "ifc", NUMERIC),
        "mul": (np.multiply, "ifc", NUMERIC),
        "div": (_div, "ifc", (*INEXACT, I64)),
        "rem": (np.fmod, "if", (F64, F32, I64)),
        "max": (np.maximum, "if", (F64, F32, I64)),
        "min": (np.minimum, "if", (F64, F32, I64)),
        "atan2": (np.arctan2, "f", REAL),
    }
    for name, (oracle, kinds, dtypes) in binary.items():
        rows[name] = Row(getattr(lax, name), _jax(name), oracle, kinds, dtypes, BINARY, BINARY)
    rows["pow"] = Row(
        lax.pow,
        _jax("pow"),
        np.power,
        "ifc",
        INEXACT,
        BINARY,
        BINARY,
        not_jax=lambda x, y: x.dtype.kind == "i",  # integer powers, numpy's (jax.lax refuses)
    )
    comparisons = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "ge": np.greater_equal}
    for direction, oracle in comparisons.items():
        kinds = "bifc" if direction in ("eq", "ne") else "if"
        dtypes = (F64, I64, C128) if direction in ("eq", "ne") else (F64, I32)
        rows[f"compare {direction}"] = Row(
            lambda x, y, d=direction: lax.compare(x, y, d),
            _jax(direction),
            oracle,
            kinds,
            dtypes,
            BINARY,
            BINARY,
        )
    rows["complex"] = Row(lax.complex, _jax("complex"), _complex, "f", REAL, BINARY, BINARY)
    for name, jax_name, oracle in [
        ("logical_and", "bitwise_and", np.logical_and),
        ("logical_or", "bitwise_or", np.logical_or),
    ]:
        rows[name] = Row(
            getattr(lax, name),
            _jax(jax_name),
            oracle,
            "b",
            (BOOL,),
            BINARY,
            BINARY,
            not_jax=_not_all_bool,
        )
    rows["select"] = Row(
        lax.select,
        _jax("select"),
        np.where,
        "bifc",
        (F64, F32, C128),
        (False, True, True),
        (True, False, False),
        predicate=0,
    )
    rows["clamp"] = Row(
        lax.clamp,
        _jax("clamp"),
        lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
        "if",
        (F64, F32, I64),
        (True, True, True),
        (True, False, True),
    )
    return rows


ROWS = _rows()

NOT_ELEMENTWISE = {
    "round": "a row (its method is a parameter)",
    "compare": "rows per direction",
    "add_tangents": "a rule helper over add/sub (its operands are tangents or None)",
    "sub_tangents": "a rule helper over add/sub (its operands are tangents or None)",
    "convert_element_type": "one operand, changes its dtype",
    "dynamic_update_slice": "the update is a slice, not an elementwise partner",
    "apply_permutation": "the permutation indexes along an axis",
    "pad_to_match": "the reference gives an extent, not values",
    "dynamic_truncate": "the size is a count, not an elementwise partner",
    "gather": "indices, not elementwise operands",
    "scatter_add": "indices and updates, not elementwise operands",
    "dot_general": "a contraction",
    "concatenate": "operands are joined along an axis",
}
"""Lax functions with more than one operand that are not elementwise, or rows under
another name; single-operand structural functions (reshape, slice...) need no row."""


def _structural(name: str) -> bool:
    """A function of one operand that is not elementwise (a shape or index change, a
    reduction, a constant): it has no rank-0 partner to broadcast."""
    return len(DECLARED.get(name, ())) <= 1 and name not in ROWS


def test_every_elementwise_lax_function_has_a_row() -> None:
    missing = [
        name
        for name in lax.__all__
        if name not in ROWS
        and not name.startswith("compare")
        and name not in NOT_ELEMENTWISE
        and not _structural(name)
    ]
    assert missing == []
    multi = {n for n in lax.__all__ if len(DECLARED.get(n, ())) > 1}
    assert sorted(multi - set(ROWS) - {"compare"} - set(NOT_ELEMENTWISE)) == []
    broadcasting = {n.split(" ")[0] for n, row in ROWS.items() if any(row.spread)}
    assert broadcasting == set(ELEMENTWISE)
    for name, (grouped, spread) in ELEMENTWISE.items():
        row = next(r for n, r in ROWS.items() if n.split(" ")[0] == name)
        names = DECLARED[name]
        assert grouped == tuple(n for n, g in zip(names, row.grouped, strict=True) if g), name
        assert spread == tuple(n for n, s in zip(names, row.spread, strict=True) if s), name


# ---------------------------------------------------------------------- the table


SAME_FOR_JAX = ("numpy scalar", "0-d Tensor")
"""Spellings JAX receives as the ``0-d array`` one (the JAX test leaves them out)."""


def _cases(
    row: Row, dtype: np.dtype[Any], leave_out: tuple[str, ...] = ()
) -> list[tuple[str, tuple[Operand, ...]]]:
    forms = {k: v for k, v in _forms(dtype).items() if k not in leave_out}
    per_position = []
    for position in range(row.arity):
        if position == row.predicate:
            bools = _forms(BOOL)
            per_position.append({k: bools[k] for k in ("array", "python", "0-d array")})
        elif row.arity == 3:  # a subset keeps the product small
            per_position.append(
                {
                    k: v
                    for k, v in forms.items()
                    if k
                    in ("array", "python", "0-d array", "0-d array, other precision", "other kind")
                }
            )
        else:
            per_position.append(forms)
    return [
        (" / ".join(labels), tuple(per_position[i][label] for i, label in enumerate(labels)))
        for labels in itertools.product(*(sorted(p) for p in per_position))
    ]


def _table() -> list[Any]:
    return [
        pytest.param(name, dtype, id=f"{name}-{dtype}")
        for name, row in sorted(ROWS.items())
        for dtype in row.dtypes
    ]


@dataclass(frozen=True)
class Expected:
    """The result by the rules: its numpy value (dtype and shape included), whether it
    is weak, and the dtype each operand was read in (None: the call is refused)."""

    value: np.ndarray[Any, Any] | None
    weak: bool = False
    read_as: tuple[np.dtype[Any], ...] = ()


def _by_the_rules(row: Row, operands: tuple[Operand, ...]) -> Expected:
    """``jax.lax``'s rules (module documentation), with numpy computing the values."""
    grouped = [o for o, g in zip(operands, row.grouped, strict=True) if g]
    exponent = None
    if row.oracle is np.power and operands[1].dtype.kind == "i" and operands[0].dtype.kind in "fc":
        exponent, grouped = operands[1], grouped[:1]  # pow: an integer exponent is taken so
    strong = {o.dtype for o in grouped if not o.weak}
    if len(strong) > 1:
        return Expected(None)
    if strong:
        (dtype,) = strong
        if any(o.weak and o.dtype.kind != dtype.kind for o in grouped):
            return Expected(None)
    else:
        if len({o.dtype for o in grouped}) > 1:
            return Expected(None)
        dtype = grouped[0].dtype
    if dtype.kind not in row.kinds:
        return Expected(None)
    if row.predicate is not None and operands[row.predicate].dtype != BOOL:
        return Expected(None)
    fixed = [o.shape for o, s in zip(operands, row.spread, strict=True) if not s]
    target = fixed[0] if fixed else next((o.shape for o in operands if o.shape), ())
    shapes = {
        target if s and o.shape == () else o.shape
        for o, s in zip(operands, row.spread, strict=True)
    }
    if len(shapes) > 1:
        return Expected(None)
    read_as = tuple(
        dtype if g or o is exponent else o.dtype for o, g in zip(operands, row.grouped, strict=True)
    )
    data = [
        np.broadcast_to(o.data.astype(d), target) for o, d in zip(operands, read_as, strict=True)
    ]
    with np.errstate(all="ignore"):
        value = np.asarray(row.oracle(*data))
    weak = all(o.weak for o in grouped) and value.dtype != BOOL  # bool results: never weak
    return Expected(value, weak, read_as)


def _call(row: Row, operands: tuple[Operand, ...]) -> Any:
    with np.errstate(all="ignore"):
        return row.call(*(o.tenferro for o in operands))


def _op(name: str) -> str:
    return name.split(" ")[0]


@pytest.mark.parametrize(("name", "dtype"), _table())
def test_rank_0_operands_follow_the_rules(name: str, dtype: np.dtype[Any]) -> None:
    row = ROWS[name]
    wrong = []
    for label, operands in _cases(row, dtype):
        expected = _by_the_rules(row, operands)
        try:
            got = _call(row, operands)
        except tf.TenferroError as error:
            if expected.value is not None or error.op != _op(name):
                wrong.append((label, f"refused: {error}"))
            continue
        if expected.value is None:
            wrong.append((label, f"accepted: {got!r}"))
            continue
        value = np.asarray(got)
        if value.dtype != expected.value.dtype or value.shape != expected.value.shape:
            wrong.append(
                (
                    label,
                    f"{value.dtype}{list(value.shape)}, expected "
                    f"{expected.value.dtype}{list(expected.value.shape)}",
                )
            )
        elif not np.array_equal(value, expected.value, equal_nan=True):
            wrong.append((label, f"{value} != {expected.value}"))
        elif got.meta.weak != expected.weak:
            wrong.append((label, f"weak {got.meta.weak}, expected {expected.weak}"))
    assert not wrong, _report(wrong)


@pytest.mark.parametrize(("name", "dtype"), [p for p in _table() if ROWS[p.values[0]].jax])
def test_rank_0_operands_give_what_jax_lax_gives(name: str, dtype: np.dtype[Any]) -> None:
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    jax.config.update("jax_enable_x64", True)
    row = ROWS[name]
    assert row.jax is not None
    function = row.jax(jax)
    wrong = []
    for label, operands in _cases(row, dtype, SAME_FOR_JAX):
        if row.not_jax is not None and row.not_jax(*(o.data for o in operands)):
            continue  # tenferro's own rule (the rules test covers it)
        reference = _jax_result(function, operands)
        if reference is None:  # x64 JAX refuses a weak scalar of another precision
            adopted = _by_the_rules(row, operands)
            if adopted.value is not None and _adopts_weak_scalars(operands, adopted):
                reference = _jax_result(function, operands, adopted.read_as)
        try:
            got = _call(row, operands)
        except tf.TenferroError as error:
            if reference is not None or error.op != _op(name):
                wrong.append((label, f"refused: {error}"))
            continue
        if reference is None:
            wrong.append((label, f"accepted where jax.lax refuses: {got!r}"))
            continue
        value = np.asarray(got)
        if value.dtype != reference.dtype or value.shape != reference.shape:
            wrong.append(
                (
                    label,
                    f"{value.dtype}{list(value.shape)}, jax.lax gives "
                    f"{reference.dtype}{list(reference.shape)}",
                )
            )
            continue
        tolerance = 1e-6 if value.dtype in (F32, C64) else 1e-14
        if not np.allclose(value, reference, rtol=tolerance, atol=tolerance, equal_nan=True):
            wrong.append((label, f"{value} != {reference}"))
    assert not wrong, _report(wrong)


def _report(wrong: list[tuple[str, str]]) -> str:
    return "\n".join(f"{label}: {what}" for label, what in wrong)


def _adopts_weak_scalars(operands: tuple[Operand, ...], expected: Expected) -> bool:
    """The rules read a weak operand in another dtype than its own (the one difference
    from x64 JAX, see the module documentation)."""
    return any(o.weak and d != o.dtype for o, d in zip(operands, expected.read_as, strict=True))


def _jax_result(
    function: Callable[..., Any],
    operands: tuple[Operand, ...],
    read_as: tuple[np.dtype[Any], ...] | None = None,
) -> np.ndarray[Any, Any] | None:
    """JAX's value, or None where it raises ``TypeError`` (its refusal); with
    ``read_as``, weak operands are given in those dtypes (strong, as numpy values)."""
    given = [
        np.asarray(o.jax, d) if read_as is not None and o.weak and d != o.dtype else o.jax
        for o, d in zip(operands, read_as or [o.dtype for o in operands], strict=True)
    ]
    try:
        return np.asarray(function(*given))
    except TypeError:
        return None


# ---------------------------------------------------------------------- messages


def test_select_names_the_predicate_by_its_own_dtype() -> None:
    """The refusal of a predicate of another shape describes it as it is (review s21:
    a bool predicate was described as float64)."""
    with pytest.raises(tf.ShapeError) as caught:
        lax.select(np.array([True, False]), np.arange(3.0), np.arange(3.0))
    message = str(caught.value)
    assert "bool[2]" in message, message
    assert "float64[3]" in message, message
    assert "float64[2]" not in message, message


def test_a_weak_integer_that_does_not_fit_is_refused() -> None:
    with pytest.raises(tf.ScalarOverflowError, match=r"mul.*operand y holds 4294967296.*int32"):
        lax.mul(np.array([1, 2], np.int32), 2**32)


@pytest.mark.parametrize("kind", ["TracedTensor", "EagerTensor"])
def test_rank_0_operands_beside_every_tensor_kind(kind: str) -> None:
    """The broadcast and the dtype of a weak scalar are the same on every tensor kind
    (traced: a graph of the same values)."""
    x32 = np.array([0.5, -1.0, 3.0], np.float32)
    operand = tf.traced(x32) if kind == "TracedTensor" else tf.EagerTensor(x32)
    for call, expected in [
        (lambda: lax.mul(operand, 2.0), x32 * np.float32(2.0)),
        (lambda: lax.mul(np.float32(2.0), operand), x32 * np.float32(2.0)),
        (lambda: lax.select(True, operand, operand), x32),
        (lambda: lax.clamp(0.0, operand, 1.0), np.clip(x32, 0, 1)),
        (lambda: lax.pow(operand, 2), x32**2),
    ]:
        got = call()
        assert type(got).__name__ == kind
        value = np.asarray(got.eval() if kind == "TracedTensor" else got)
        assert value.dtype == F32
        np.testing.assert_array_equal(value, expected)


def test_gradients_flow_through_a_broadcast_scalar() -> None:
    """A rank-0 traced operand broadcast beside an array gets the summed cotangent."""
    x = np.array([0.5, -1.0, 3.0])

    def f(s: Any, v: Any) -> Any:
        return tf.sum(lax.mul(s, v))

    gs, gv = tf.grad(f, argnums=(0, 1))(np.float64(2.0), x)
    np.testing.assert_allclose(np.asarray(gs), x.sum())
    np.testing.assert_allclose(np.asarray(gv), np.full(3, 2.0))


# ---------------------------------------------------------------------- integer and bool operands


INEXACT_UNARY = ["asin", "acos", "atan", "asinh", "acosh", "atanh", "sin", "exp", "log", "sqrt"]


@pytest.mark.parametrize("name", INEXACT_UNARY)
@pytest.mark.parametrize("operand", [np.array([1, 2]), True], ids=["int64 array", "bool"])
def test_inexact_functions_refuse_integer_and_bool_operands(name: str, operand: Any) -> None:
    """Integer arrays and bools (whose dtypes the rows above never hold) are refused with
    a tenferro error naming the function, as ``jax.lax`` refuses them (``TypeError``)."""
    with pytest.raises(tf.TenferroError, match=name):
        getattr(lax, name)(operand)
    try:
        import jax
    except ImportError:
        return
    jax.config.update("jax_enable_x64", True)
    with pytest.raises(TypeError):
        getattr(jax.lax, name)(operand)


@pytest.mark.parametrize(
    ("y", "x"),
    [
        (np.array([0.0, -0.0, 1.0]), np.array([-1.0, -1.0, 0.0])),
        (np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32)),
        (0.5, -1.5),
        (np.array(1.0), np.array(-0.0)),
    ],
)
def test_atan2_at_signed_zeros_equals_jax_lax(y: Any, x: Any) -> None:
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    jax.config.update("jax_enable_x64", True)
    expected = np.asarray(jax.lax.atan2(y, x))
    got = np.asarray(lax.atan2(y, x))
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=2e-7 if got.dtype == np.float32 else 1e-15)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


# ---------------------------------------------------------------------- gradients


_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
    "atan2": np.arctan2,
}


@pytest.mark.parametrize("name", sorted(_BINARY))
@pytest.mark.parametrize("scalar_first", [False, True])
def test_rank_0_operand_gradients_in_every_mode(name: str, scalar_first: bool) -> None:
    """Each operand's gradient (the rank-0 one summed over the broadcast) by ``grad``,
    ``jit(grad)`` and the tape against central differences; a batched rank-0 operand
    beside an unbatched array under ``vmap``."""
    rng = np.random.default_rng(0)
    array = rng.uniform(0.5, 2.0, (2, 3)) if name == "pow" else rng.standard_normal((2, 3))
    scalar = np.float64(0.7)
    args = (scalar, array) if scalar_first else (array, scalar)
    op, reference = getattr(lax, name), _BINARY[name]
    np.testing.assert_allclose(values(op(*args)), reference(*args), rtol=1e-14)
    weights = rng.standard_normal((2, 3))

    def loss(a: Any, b: Any) -> Any:
        return tf.sum(op(a, b) * weights)

    for argnum in (0, 1):

        def of_one(v: Any, argnum: int = argnum) -> float:
            both = list(args)
            both[argnum] = v
            return float(np.sum(reference(*both) * weights))

        want = fd_gradient(of_one, np.asarray(args[argnum], np.float64))
        leaf = tf.EagerTensor(args[argnum], requires_grad=True)
        both: list[Any] = list(args)
        both[argnum] = leaf
        loss(*both).backward()
        for mode, got in (
            ("grad", tf.grad(loss, argnums=argnum)(*args)),
            ("jit(grad)", tf.jit(tf.grad(loss, argnums=argnum))(*args)),
            ("tape", leaf.grad),
        ):
            np.testing.assert_allclose(values(got), want, rtol=1e-6, atol=1e-8, err_msg=mode)
    batch = np.array([0.5, 0.9, 1.3])
    mapped = tf.vmap(lambda s: op(s, array) if scalar_first else op(array, s))(batch)
    expected = np.stack(
        [reference(s, array) if scalar_first else reference(array, s) for s in batch]
    )
    np.testing.assert_allclose(values(mapped), expected, rtol=1e-14)


@pytest.mark.parametrize("ranks", [(0, 2, 0), (2, 2, 0), (0, 2, 2)])
def test_clamp_rank_0_bounds_and_their_gradients(ranks: tuple[int, int, int]) -> None:
    """(jax.lax 0.10.2 cannot take these gradients.)"""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3))
    weights = rng.standard_normal((2, 3))
    args = [
        np.float64(-0.3) if ranks[0] == 0 else np.full_like(x, -0.3),
        x,
        np.float64(0.4) if ranks[2] == 0 else np.full_like(x, 0.4),
    ]
    np.testing.assert_array_equal(values(lax.clamp(*args)), np.clip(x, -0.3, 0.4))
    for argnum in range(3):

        def of_one(v: Any, argnum: int = argnum) -> float:
            both = list(args)
            both[argnum] = v
            return float(np.sum(np.clip(both[1], both[0], both[2]) * weights))

        want = fd_gradient(of_one, np.asarray(args[argnum], np.float64))
        got = tf.grad(lambda a, b, c: tf.sum(lax.clamp(a, b, c) * weights), argnums=argnum)(*args)
        np.testing.assert_allclose(values(got), want, atol=1e-8)
    lower = np.array([-0.5, 0.0])
    mapped = tf.vmap(lambda low: lax.clamp(low, x, 0.4))(lower)
    np.testing.assert_array_equal(values(mapped), np.stack([np.clip(x, v, 0.4) for v in lower]))


def test_select_rank_0_predicate_gradients() -> None:
    rng = np.random.default_rng(2)
    x, y, w = (rng.standard_normal((2, 3)) for _ in range(3))
    for pred in (True, False, np.bool_(True)):
        np.testing.assert_array_equal(values(lax.select(pred, x, y)), x if pred else y)
        g = tf.grad(lambda a, b, p=pred: tf.sum(lax.select(p, a, b) * w), argnums=1)(x, y)
        np.testing.assert_array_equal(values(g), np.zeros_like(w) if pred else w)
    mapped = tf.vmap(lambda p: lax.select(p, x, y))(np.array([True, False]))
    np.testing.assert_array_equal(values(mapped), np.stack([x, y]))
