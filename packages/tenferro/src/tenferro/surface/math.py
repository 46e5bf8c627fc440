"""numpy-style elementwise functions (broadcasting, numpy promotion), for every tensor kind."""

from __future__ import annotations

from typing import Any

import numpy as np

from computegraph import DictCache
from tenferro import lax
from tenferro.core.bind import highest_kind, lift
from tenferro.core.flags import check_flag
from tenferro.core.kinds import owned
from tenferro.core.params import as_int
from tenferro.dtypes import float64, is_complex
from tenferro.errors import DTypeError, ParameterError, ScalarOverflowError
from tenferro.ieee import IGNORE, error_state
from tenferro.meta import broadcast_shapes
from tenferro.ops.analytic import Cos, Cosh, Exp, Log, Sin, Sinh, Sqrt, Tan, Tanh
from tenferro.ops.elementwise import Add, Mul
from tenferro.ops.inverse import Acos, Acosh, Asin, Asinh, Atan, Atanh
from tenferro.surface.convert import (
    asarray,
    broadcast_operand,
    broadcast_to,
    check_int_fits,
    prepare,
)
from tenferro.surface.dispatch import BINDS_INSTANCES, REPLAYABLE, dispatch_cached
from tenferro.surface.sets import nonzero
from tenferro.surface.signatures import Binary, Unary, binary, preserving, unary
from tenferro.surface.signatures import select as selecting

__all__ = [
    "abs",
    "absolute",
    "acos",
    "acosh",
    "add",
    "angle",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "ceil",
    "clip",
    "complex",
    "conj",
    "conjugate",
    "cos",
    "cosh",
    "deg2rad",
    "degrees",
    "divide",
    "equal",
    "exp",
    "exp2",
    "expm1",
    "fabs",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "nan_to_num",
    "negative",
    "not_equal",
    "positive",
    "power",
    "rad2deg",
    "radians",
    "real",
    "reciprocal",
    "remainder",
    "rint",
    "round",
    "rsqrt",
    "select",
    "sigmoid",
    "sign",
    "sin",
    "sinc",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "true_divide",
    "trunc",
    "where",
]

NUMERIC = "ifc"
INEXACT = "fc"
ORDERED = "if"


def _binary(op: str, x: Any, y: Any, kinds: str = NUMERIC) -> list[Any]:
    return prepare(op, (x, y), kinds=kinds)


def _inexact(op: str, *values: Any) -> list[Any]:
    """Operands promoted to a floating or complex dtype (integers and bool become float64).
    A Python int beside a tensor enters as the float it becomes (numpy divides in
    float, so an int beyond the tensor's integer dtype is no overflow)."""
    if any(type(v) is not int for v in values):
        values = tuple(_int_as_float(op, v) if type(v) is int else v for v in values)
    operands = prepare(op, values, kinds="bifc")
    if operands[0].meta.dtype.kind in "bi":  # promoted and broadcast: one dtype, one shape
        weak = all(o.meta.weak for o in operands)  # Python numbers divide into one
        operands = [lax.convert_element_type(o, float64, weak) for o in operands]
    return operands


def _int_as_float(op: str, value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        raise ScalarOverflowError(
            op, f"Python integer {value} is too large to convert to a float"
        ) from None


# ---------------------------------------------------------------------- arithmetic


_TENSOR_AND_SCALAR: DictCache[Any, Any] = DictCache(4096, "tensor-scalar dispatch")
"""(primitive class, kind, meta, scalar type, scalar first) -> the primitive instance
``tensor op scalar`` binds, the meta of the scalar's operand and the scalar's conversion
to the tensor's dtype (or ``_GENERAL``): structure only; the scalar itself becomes an
operand at each call (the kind's ``_scalar_operand``; a conversion of ``None``: the
number as it is)."""

_SAME_META: DictCache[Any, Any] = DictCache(4096, "same-meta binary instances")
"""(primitive class, meta) -> the instance ``x op y`` binds for two concrete tensors of
that one meta (what ``primitive.make((meta, meta))`` returns): structure only."""

_FAST_SCALARS = (int, float)
_GENERAL = "general"
_set_errors = error_state.set
_reset_errors = error_state.reset


def _converter(dtype: Any) -> Any:
    """Python number -> numpy scalar of ``dtype``, as numpy converts a weak scalar: a
    float beyond a narrow dtype's range becomes inf silently (IEEE values are data)."""
    convert = dtype.type
    if dtype.kind in "fc" and dtype.itemsize < (8 if dtype.kind == "f" else 16):

        def narrowing(scalar: Any) -> Any:
            token = _set_errors(IGNORE)
            try:
                return convert(scalar)
            finally:
                _reset_errors(token)

        return narrowing
    return convert


def _boolean_aware(
    op: str, kinds: str, arithmetic: Any, boolean: Any, primitive: Any = None
) -> Binary:
    """A binary function that, like numpy, is a logical one on two bool operands.

    With ``primitive`` (the class ``arithmetic`` binds, a ufunc primitive), calls of a
    concrete tensor and a Python number take the instance :data:`_TENSOR_AND_SCALAR`
    learned from the first call of that structure, and the number as a runtime operand.
    """

    accepted = "b" + kinds

    def general(x: Any, y: Any) -> Any:
        a, b = prepare(op, (x, y), kinds=accepted)
        return boolean(a, b) if a.meta.dtype.kind == "b" else arithmetic(a, b)

    # Two concrete tensors of different metas (broadcasting, promotion): the primitives
    # applied depend on the metas alone, so they are recorded once per pair of metas.
    between_metas = dispatch_cached(2)(general)

    if primitive is None:
        general.__name__ = op
        return general

    def learn(x: Any, y: Any, tensor: Any, first: bool) -> Any:
        """How ``tensor op scalar`` binds, from preparing it once (``_GENERAL`` when it
        promotes, broadcasts or is a logical operation, or the tensor is weakly typed:
        preparing then depends on the number, beyond the range check made per call)."""
        if tensor.meta.weak:
            return _GENERAL
        a, b = prepare(op, (x, y), kinds=accepted)
        constant = a if first else b
        if (
            (b if first else a) is not tensor
            or a.meta.shape != b.meta.shape
            or a.meta.dtype != b.meta.dtype
            or a.meta.dtype.kind not in kinds
        ):
            return _GENERAL
        dtype = a.meta.dtype
        number = type(y if tensor is x else x)
        if number is float and dtype == float64:
            # A float is already a float64 value (numpy's float64 subclasses float), and
            # the ufunc takes it as is faster than the converted scalar: no conversion.
            return (primitive.make((a.meta, b.meta)), constant.meta, None)
        return (primitive.make((a.meta, b.meta)), constant.meta, _converter(dtype))

    def apply(x: Any, y: Any) -> Any:
        kind = type(x)
        if kind is type(y) and kind in REPLAYABLE:
            meta = x.meta
            if meta == y.meta and meta.dtype.kind in kinds and not meta.dynamic:
                # Two concrete tensors of one meta: nothing to promote or broadcast. The
                # key holds the meta once (hashing a meta is most of a lookup's cost).
                instance = _SAME_META.get((primitive, meta))
                if instance is None:
                    instance = primitive.make((meta, meta))
                    _SAME_META.put((primitive, meta), instance)
                return kind._bind(instance, (x, y))[0]
            return between_metas(x, y)
        if type(y) is np.ndarray or type(x) is np.ndarray:
            return _with_array(primitive, kinds, x, y, general)
        scalar_type = type(y)
        if scalar_type in _FAST_SCALARS:
            tensor, scalar, first = x, y, False
        else:
            scalar_type = type(x)
            if scalar_type not in _FAST_SCALARS:
                return general(x, y)
            tensor, scalar, first = y, x, True
        kind = type(tensor)
        if kind not in REPLAYABLE:
            return general(x, y)
        meta = tensor.meta
        key = (primitive, kind, meta, scalar_type, first)
        found = _TENSOR_AND_SCALAR.get(key)
        if found is None:
            found = learn(x, y, tensor, first)
            _TENSOR_AND_SCALAR.put(key, found)
        if found is _GENERAL:
            return general(x, y)
        instance, constant_meta, convert = found
        if scalar_type is int:
            check_int_fits(op, scalar, meta.dtype)
        # The number is an operand made now (a rank-0 value the ufunc broadcasts): the
        # cache holds structure only.
        constant = kind._scalar_operand(
            constant_meta, scalar if convert is None else convert(scalar)
        )
        operands = (constant, tensor) if first else (tensor, constant)
        return kind._bind(instance, operands)[0]

    apply.__name__ = op
    return apply


def _with_array(primitive: Any, kinds: str, x: Any, y: Any, general: Any) -> Any:
    """``x op y`` where one is a numpy array of the other's (concrete) dtype and shape:
    the array borrowed, both lifted to one kind, the same-meta instance bound on it.
    ``general`` otherwise."""
    tensor = y if type(x) is np.ndarray else x
    array = x if tensor is y else y
    kind = type(tensor)
    if kind not in REPLAYABLE:
        return general(x, y)
    meta = tensor.meta
    if (
        array.dtype != meta.dtype
        or array.shape != meta.shape
        or meta.weak
        or meta.dynamic
        or meta.dtype.kind not in kinds
    ):
        return general(x, y)
    operands = lift([x, asarray(y)] if array is y else [asarray(x), y])
    instance = _SAME_META.get((primitive, meta))
    if instance is None:
        instance = primitive.make((meta, meta))
        _SAME_META.put((primitive, meta), instance)
    return highest_kind(operands)._bind(instance, operands)[0]


add = _boolean_aware("add", NUMERIC, lax.add, lax.logical_or, Add)
add.__doc__ = "``x + y`` (numpy broadcasting and promotion; ``or`` on two bools)."


@binary
def subtract(x: Any, y: Any) -> Any:
    """``x - y``."""
    return lax.sub(*_binary("subtract", x, y))


multiply = _boolean_aware("multiply", NUMERIC, lax.mul, lax.logical_and, Mul)
multiply.__doc__ = "``x * y`` (``and`` on two bools)."


@binary
def true_divide(x: Any, y: Any) -> Any:
    """``x / y``; integers divide as float64 (numpy)."""
    return lax.div(*_inexact("divide", x, y))


divide = true_divide


@binary
def floor_divide(x: Any, y: Any) -> Any:
    """``x // y``: the quotient rounded toward minus infinity (numpy)."""
    a, b = _binary("floor_divide", x, y, ORDERED)
    truncated_remainder = lax.rem(a, b)
    if a.meta.dtype.kind == "i":
        quotient = lax.div(a, b)
    else:  # (a - fmod(a, b)) / b is an integer up to rounding: make it exact
        quotient = lax.round(lax.div(lax.sub(a, truncated_remainder), b), "nearest_even")
    floored = lax.sub(
        quotient, lax.convert_element_type(_sign_fix(truncated_remainder, b), a.meta.dtype)
    )
    if a.meta.dtype.kind == "i":
        return floored
    # numpy: division by zero gives a / b (inf with the sign, or nan for 0 / 0).
    return lax.select(lax.compare(b, lax.zeros_like(b), "eq"), lax.div(a, b), floored)


def _sign_fix(remainder: Any, divisor: Any) -> Any:
    """Where a truncated remainder is non-zero and its sign differs from the divisor's."""
    zero = lax.zeros_like(remainder)
    nonzero = lax.compare(remainder, zero, "ne")
    differs = lax.compare(
        lax.compare(remainder, zero, "lt"), lax.compare(divisor, zero, "lt"), "ne"
    )
    return lax.logical_and(nonzero, differs)


@binary
def remainder(x: Any, y: Any) -> Any:
    """``x % y`` with the sign of the divisor (numpy, Python)."""
    a, b = _binary("remainder", x, y, ORDERED)
    r = lax.rem(a, b)
    return lax.select(_sign_fix(r, b), lax.add(r, b), r)


mod = remainder


@binary
def fmod(x: Any, y: Any) -> Any:
    """Remainder with the sign of the dividend (C ``fmod``)."""
    return lax.rem(*_binary("fmod", x, y, ORDERED))


def _rounding(op: str, method: str) -> Unary:
    def apply(x: Any) -> Any:
        a = asarray(x)
        if a.meta.dtype.kind in "bi":
            return owned(a)
        if a.meta.dtype.kind == "c":
            raise DTypeError(op, "complex values cannot be rounded")
        return lax.round(a, method)

    apply.__name__ = op
    apply.__doc__ = (
        f"Elementwise {op} ({method.replace('_', ' ')}); integers are returned unchanged. "
        f"Its derivative is zero."
    )
    return apply


floor = _rounding("floor", "floor")
ceil = _rounding("ceil", "ceil")
trunc = _rounding("trunc", "trunc")
rint = _rounding("rint", "nearest_even")


@preserving
def round(x: Any, decimals: int = 0) -> Any:
    """Round half to even at ``decimals`` decimal places, as numpy computes it: ``x``
    times ``10**decimals`` (divided by ``10**-decimals`` when ``decimals`` is negative),
    rounded to an integer and scaled back, with numpy's power of ten (see
    :func:`_power_of_ten`; past float64's range it is inf, so 309 or more decimals give
    NaN, as in numpy). Complex values are rounded part by part; integers keep their
    dtype (computed in float64 for negative ``decimals``). Its derivative is zero."""
    decimals = as_int("round", "decimals", decimals)
    a = asarray(x)
    kind = a.meta.dtype.kind
    if kind == "c":
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    if kind in "bi" and decimals >= 0:
        return owned(a)
    if kind == "b":
        raise DTypeError("round", f"bool values cannot be rounded to {decimals} decimals")
    if decimals == 0:
        return rint(a)
    scale = _power_of_ten(decimals if decimals > 0 else -decimals)
    first, then = (multiply, true_divide) if decimals > 0 else (true_divide, multiply)
    rounded = then(rint(first(a, scale)), scale)
    return lax.convert_element_type(rounded, a.meta.dtype) if kind == "i" else rounded


def _power_of_ten(n: int) -> float:
    """numpy's ``10**n`` for ``round`` (``power_of_ten`` in its C source): exact up to
    ``1e8``, then ``1e9`` multiplied by 10 in turn, which is not always the double
    nearest to ``10**n`` (``1e23``); inf once past float64's range."""
    if n < 9:
        return 10.0**n
    scale = 1e9
    for _ in range(min(n, 400) - 9):
        scale *= 10.0
    return scale


@binary
def power(x: Any, y: Any) -> Any:
    """``x ** y``; a Python exponent 2 is ``x * x`` (numpy's value, exactly, and a cheaper
    derivative than the general power's)."""
    meta = getattr(x, "meta", None)
    if type(y) in (int, float) and y == 2 and meta is not None and meta.dtype.kind in NUMERIC:
        (a,) = prepare("power", (x,), kinds=NUMERIC)
        return lax.mul(a, a)
    return lax.pow(*_binary("power", x, y))


@unary
def negative(x: Any) -> Any:
    (a,) = prepare("negative", (x,), kinds=NUMERIC)
    return lax.neg(a)


@unary
def positive(x: Any) -> Any:
    (a,) = prepare("positive", (x,), kinds=NUMERIC)
    return owned(a)


@unary
def conj(x: Any) -> Any:
    """Complex conjugate (the value itself for real dtypes)."""
    return lax.conj(asarray(x))


conjugate = conj


@unary
def abs(x: Any) -> Any:
    """``|x|``; real-valued for complex input."""
    (a,) = prepare("abs", (x,), kinds=NUMERIC)
    return lax.abs(a)


absolute = abs


@unary
def sign(x: Any) -> Any:
    """-1, 0 or 1 (``z / |z|`` for complex); its derivative is zero."""
    (a,) = prepare("sign", (x,), kinds=NUMERIC)
    return lax.sign(a)


maximum = _boolean_aware("maximum", ORDERED, lax.max, lax.logical_or)
maximum.__doc__ = "Elementwise maximum (ties share the derivative equally)."
minimum = _boolean_aware("minimum", ORDERED, lax.min, lax.logical_and)
minimum.__doc__ = "Elementwise minimum (ties share the derivative equally)."


def _nan_ignoring(op: str, extremum: Binary) -> Binary:
    def apply(x: Any, y: Any) -> Any:
        a, b = prepare(op, (x, y), kinds="b" + ORDERED)
        if a.meta.dtype.kind != "f":
            return extremum(a, b)
        a_nan, b_nan = lax.compare(a, a, "ne"), lax.compare(b, b, "ne")
        # A NaN operand is replaced by the other one: the extremum of a value with itself
        # is that value, whose derivative reaches it whole (never the 0/0 of a NaN tie).
        return extremum(lax.select(a_nan, b, a), lax.select(b_nan, a, b))

    apply.__name__ = apply.__qualname__ = op
    which = "maximum" if op == "fmax" else "minimum"
    apply.__doc__ = (
        f"Elementwise {which} ignoring NaNs (numpy's ``{op}``): where one operand is NaN "
        f"the other is the result (and takes the derivative); NaN only where both are."
    )
    return binary(apply)


fmax = _nan_ignoring("fmax", maximum)
fmin = _nan_ignoring("fmin", minimum)


@unary
def square(x: Any) -> Any:
    (a,) = prepare("square", (x,), kinds=NUMERIC)
    return lax.mul(a, a)


@unary
def reciprocal(x: Any) -> Any:
    """``1 / x``; integers give float64 (like PyTorch, unlike numpy's integer division)."""
    (a,) = _inexact("reciprocal", x)
    return lax.div(lax.full_like(a, 1), a)


# ---------------------------------------------------------------------- analytic


def _analytic(op: str, function: Any, primitive: Any = None) -> Unary:
    """``function`` on ``x`` made inexact. With ``primitive`` (the class ``function`` binds
    alone, without parameters), a tensor (of a kind in ``BINDS_INSTANCES``) whose instance
    exists binds it directly: what ``primitive.bind`` does, without its frames."""
    instances = None if primitive is None else primitive._instances

    def apply(x: Any) -> Any:
        kind = x.__class__  # type(x), without a builtin call
        if kind in BINDS_INSTANCES and instances is not None:
            instance = instances.get((primitive, (x.meta,)))
            if instance is not None:  # made by an earlier call: the meta is inexact
                return kind._bind(instance, (x,))[0]
        meta = getattr(x, "meta", None)
        if meta is not None and meta.dtype.kind in INEXACT:  # a tensor already: no preparing
            return function(x)
        (a,) = _inexact(op, x)
        return function(a)

    apply.__name__ = op
    apply.__doc__ = f"Elementwise {op}; integers and bool are computed in float64."
    return apply


exp = _analytic("exp", lax.exp, Exp)
log = _analytic("log", lax.log, Log)
sin = _analytic("sin", lax.sin, Sin)
cos = _analytic("cos", lax.cos, Cos)
tanh = _analytic("tanh", lax.tanh, Tanh)
sqrt = _analytic("sqrt", lax.sqrt, Sqrt)
rsqrt = _analytic("rsqrt", lax.rsqrt)
expm1 = _analytic("expm1", lax.expm1)
log1p = _analytic("log1p", lax.log1p)
tan = _analytic("tan", lax.tan, Tan)


sinh = _analytic("sinh", lax.sinh, Sinh)
cosh = _analytic("cosh", lax.cosh, Cosh)
exp2 = _analytic("exp2", lambda a: lax.pow(lax.full_like(a, 2), a))
log2 = _analytic("log2", lax.log2)
log10 = _analytic("log10", lax.log10)


# ---------------------------------------------------------------------- inverse functions


arcsin = _analytic("arcsin", lax.asin, Asin)
arccos = _analytic("arccos", lax.acos, Acos)
arctan = _analytic("arctan", lax.atan, Atan)
arcsinh = _analytic("arcsinh", lax.asinh, Asinh)
arccosh = _analytic("arccosh", lax.acosh, Acosh)
arctanh = _analytic("arctanh", lax.atanh, Atanh)
# numpy 2's (and the Array API's) short names
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh


def _real_inexact(op: str, *values: Any) -> list[Any]:
    operands = _inexact(op, *values)
    if is_complex(operands[0].meta.dtype):
        raise DTypeError(op, f"needs real operands, got {operands[0].meta.dtype}")
    return operands


@binary
def arctan2(y: Any, x: Any) -> Any:
    """The angle of the point ``(x, y)`` in ``[-pi, pi]``, elementwise with broadcasting,
    of real operands (numpy's ``arctan2``: ``arctan2(0.0, -1.0)`` is ``pi``,
    ``arctan2(-0.0, -1.0)`` is ``-pi``). Derivative ``(x dy - y dx) / (x^2 + y^2)``,
    taken as 0 at the origin."""
    a, b = _real_inexact("arctan2", y, x)
    return lax.atan2(a, b)


atan2 = arctan2


@preserving
def angle(z: Any, deg: bool = False) -> Any:
    """The argument of complex ``z`` in ``(-pi, pi]`` (numpy's ``angle``: the arctan2 of
    its imaginary and real parts); of real ``z``, ``pi`` where it is negative and 0
    elsewhere, with derivative 0. In degrees with ``deg=True``. The result is real:
    float32 for float32/complex64, float64 otherwise."""
    in_degrees = check_flag("angle", "deg", deg)
    (a,) = _inexact("angle", z)
    if is_complex(a.meta.dtype):
        result = lax.atan2(lax.imag(a), lax.real(a))
    else:
        result = lax.atan2(lax.zeros_like(a), a)
    return lax.mul(result, lax.full_like(result, 180 / np.pi)) if in_degrees else result


def _scaled(op: str, factor: float) -> Unary:
    def apply(x: Any) -> Any:
        (a,) = _real_inexact(op, x)
        return lax.mul(a, lax.full_like(a, factor))

    apply.__name__ = op
    apply.__doc__ = f"Elementwise {op} of real values; integers and bool give float64."
    return apply


deg2rad = _scaled("deg2rad", np.pi / 180)
rad2deg = _scaled("rad2deg", 180 / np.pi)
radians = _scaled("radians", np.pi / 180)
degrees = _scaled("degrees", 180 / np.pi)


@unary
def sigmoid(x: Any) -> Any:
    """``1 / (1 + exp(-x))``, for real x as ``1 / (1 + e)`` or ``e / (1 + e)`` with
    ``e = exp(-|x|)``: accurate, and with finite derivatives, for every x."""
    (a,) = _inexact("sigmoid", x)
    one = lax.full_like(a, 1)
    if is_complex(a.meta.dtype):
        return lax.div(one, lax.add(one, lax.exp(lax.neg(a))))
    non_negative = lax.compare(a, lax.zeros_like(a), "ge")
    e = lax.exp(lax.select(non_negative, lax.neg(a), a))
    denominator = lax.add(one, e)
    return lax.select(non_negative, lax.div(one, denominator), lax.div(e, denominator))


@binary
def logaddexp(x: Any, y: Any) -> Any:
    """``log(exp(x) + exp(y))`` computed stably (complex: principal branch, factoring
    out the operand of larger real part). Each side of the comparison is a smooth
    expression, so derivatives of every order are exact at ties; equal infinities give
    that infinity (numpy) with the derivative split in half (the limit along x = y)."""
    a, b = _inexact("logaddexp", x, y)
    if is_complex(a.meta.dtype):
        first = lax.compare(lax.real(a), lax.real(b), "ge")
        top, other = lax.select(first, a, b), lax.select(first, b, a)
        return lax.add(top, lax.log1p(lax.exp(lax.sub(other, top))))
    first = lax.compare(a, b, "ge")
    infinite = lax.compare(lax.abs(a), lax.full_like(a, float("inf")), "eq")
    same_infinity = lax.logical_and(lax.compare(a, b, "eq"), infinite)
    gap = lax.select(first, lax.sub(b, a), lax.sub(a, b))  # -|a - b|
    gap = lax.select(same_infinity, lax.zeros_like(gap), gap)
    top = lax.select(first, a, b)
    top = lax.select(same_infinity, lax.mul(lax.add(a, b), lax.full_like(a, 0.5)), top)
    return lax.add(top, lax.log1p(lax.exp(gap)))


@binary
def logaddexp2(x: Any, y: Any) -> Any:
    """``log2(2**x + 2**y)`` computed stably (numpy's; real inputs): ``logaddexp`` of
    ``x ln 2`` and ``y ln 2``, divided by ``ln 2``."""
    a, b = _inexact("logaddexp2", x, y)
    if is_complex(a.meta.dtype):
        raise DTypeError("logaddexp2", f"needs real values, got {a.meta.dtype} (as numpy's)")
    ln2 = lax.full_like(a, np.log(2.0))
    return lax.div(logaddexp(lax.mul(a, ln2), lax.mul(b, lax.full_like(b, np.log(2.0)))), ln2)


@preserving
def fabs(x: Any) -> Any:
    """numpy's ``fabs``: the absolute value of real values, as floats (integers and bool
    give float64); complex values raise (use ``abs``, their modulus), as in numpy."""
    a = asarray(x, op="fabs")
    if a.meta.dtype.kind == "c":
        raise DTypeError("fabs", f"fabs takes real values, got {a.meta.dtype}: use tf.abs")
    if a.meta.dtype.kind not in "f":
        a = lax.convert_element_type(a, float64)
    return abs(a)


@binary
def hypot(x: Any, y: Any) -> Any:
    """``sqrt(x**2 + y**2)`` (real inputs) without overflow or underflow: both are divided
    by a power of two near the larger magnitude (a constant to differentiation, so every
    derivative is that of the plain formula); 0 at (0, 0) with derivative 0; inf when
    either is infinite."""
    a, b = _inexact("hypot", x, y)
    if is_complex(a.meta.dtype):
        raise DTypeError("hypot", f"needs real operands, got {a.meta.dtype}")
    zero, one = lax.zeros_like(a), lax.full_like(a, 1)
    inf = lax.full_like(a, float("inf"))
    magnitude = lax.max(lax.abs(a), lax.abs(b))
    origin = lax.compare(magnitude, zero, "eq")
    infinite = lax.logical_or(
        lax.compare(lax.abs(a), inf, "eq"), lax.compare(lax.abs(b), inf, "eq")
    )
    ordinary = lax.logical_not(lax.logical_or(origin, infinite))
    # NaN magnitudes stay NaN through the scale (log of NaN), as numpy's result does.
    safe_magnitude = lax.select(ordinary, magnitude, one)
    exponent = lax.round(lax.div(lax.log(safe_magnitude), lax.log(lax.full_like(a, 2))), "floor")
    scale = lax.pow(lax.full_like(a, 2), exponent)
    safe_a = lax.select(ordinary, a, one)
    safe_b = lax.select(ordinary, b, one)
    sa, sb = lax.div(safe_a, scale), lax.div(safe_b, scale)
    scaled = lax.mul(scale, lax.sqrt(lax.add(lax.mul(sa, sa), lax.mul(sb, sb))))
    return lax.select(infinite, inf, lax.select(origin, zero, scaled))


# ---------------------------------------------------------------------- complex parts


@unary
def real(x: Any) -> Any:
    """The real part (the value itself for real dtypes)."""
    a = asarray(x)
    return lax.real(a) if is_complex(a.meta.dtype) else owned(a)


@unary
def imag(x: Any) -> Any:
    """The imaginary part (zeros for real dtypes)."""
    a = asarray(x)
    return lax.imag(a) if is_complex(a.meta.dtype) else lax.zeros_like(a)


@binary
def complex(re: Any, im: Any) -> Any:
    """``re + 1j * im`` from real parts (float32 pairs give complex64)."""
    a, b = prepare("complex", (re, im), kinds="bif")
    if a.meta.dtype.kind in "bi":
        a, b = prepare("complex", (a, b), dtype=float64)
    return lax.complex(a, b)


# ---------------------------------------------------------------------- comparison and logic


def _comparison(op: str, direction: Any) -> Binary:
    def apply(x: Any, y: Any) -> Any:
        a, b = prepare(op, (x, y), kinds="bifc")
        return lax.compare(a, b, direction)

    apply.__name__ = op
    apply.__doc__ = f"Elementwise ``{op}`` giving bool."
    return apply


equal = _comparison("equal", "eq")
not_equal = _comparison("not_equal", "ne")
less = _comparison("less", "lt")
less_equal = _comparison("less_equal", "le")
greater = _comparison("greater", "gt")
greater_equal = _comparison("greater_equal", "ge")


def _boolean(op: str, value: Any) -> Any:
    a = asarray(value)
    if a.meta.dtype.kind != "b":
        a = lax.compare(a, lax.zeros_like(a), "ne")
    return a


@binary
def logical_and(x: Any, y: Any) -> Any:
    a, b = prepare("logical_and", (_boolean("logical_and", x), _boolean("logical_and", y)))
    return lax.logical_and(a, b)


@binary
def logical_or(x: Any, y: Any) -> Any:
    a, b = prepare("logical_or", (_boolean("logical_or", x), _boolean("logical_or", y)))
    return lax.logical_or(a, b)


@binary
def logical_xor(x: Any, y: Any) -> Any:
    a, b = prepare("logical_xor", (_boolean("logical_xor", x), _boolean("logical_xor", y)))
    return lax.compare(a, b, "ne")


@unary
def logical_not(x: Any) -> Any:
    return lax.logical_not(_boolean("logical_not", x))


_NOT_GIVEN: Any = object()


@selecting
def where(condition: Any, x: Any = _NOT_GIVEN, y: Any = _NOT_GIVEN) -> Any:
    """``x`` where ``condition`` holds, else ``y`` (all three broadcast; x and y promoted).
    With the condition alone, numpy's one-argument form: ``nonzero(condition)``, the
    indices of its true entries (concrete tensors only: the count is data)."""
    if x is _NOT_GIVEN and y is _NOT_GIVEN:
        return nonzero(condition)
    if x is _NOT_GIVEN or y is _NOT_GIVEN:
        raise ParameterError("where", "give both x and y, or neither (for nonzero(condition))")
    pred = _boolean("where", condition)
    a, b = prepare("where", (x, y))
    pred, a, b = lift([pred, a, b])
    shape = broadcast_shapes(pred.meta.shape, a.meta.shape, op="where")
    return lax.select(
        broadcast_operand(pred, shape), broadcast_operand(a, shape), broadcast_operand(b, shape)
    )


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """numpy's ``select``: for each element the entry of the first choice whose condition
    holds, else ``default`` (conditions, choices and default broadcast together)."""
    conditions, choices = list(condlist), list(choicelist)
    if len(conditions) != len(choices):
        raise ParameterError(
            "select",
            f"condlist and choicelist must have one entry each, got {len(conditions)} "
            f"conditions and {len(choices)} choices",
        )
    if not conditions:
        raise ParameterError("select", "condlist is empty: there is nothing to select from")
    for position, condition in enumerate(conditions):
        kind = asarray(condition, op="select").meta.dtype.kind
        if kind != "b":
            raise DTypeError(
                "select", f"condition {position} must be bool, got a {kind!r}-kind dtype"
            )
    result = default
    for condition, choice in zip(reversed(conditions), reversed(choices), strict=True):
        result = where(condition, choice, result)
    return asarray(result, op="select")


@preserving
def nan_to_num(
    x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None, neginf: Any = None
) -> Any:
    """numpy's ``nan_to_num``: NaN becomes ``nan``, +inf ``posinf`` and -inf ``neginf``
    (the largest and smallest finite values of the dtype by default), in both parts of
    complex values; integers and bools are returned unchanged. Replaced entries have
    derivative 0, the others 1. ``copy`` is accepted (tensors are immutable)."""
    check_flag("nan_to_num", "copy", copy)
    a = asarray(x, op="nan_to_num")
    if a.meta.dtype.kind in "bi":
        return owned(a)
    if is_complex(a.meta.dtype):
        parts = [nan_to_num(part, True, nan, posinf, neginf) for part in (lax.real(a), lax.imag(a))]
        return lax.complex(*parts)
    info = np.finfo(a.meta.dtype)
    replacements = [
        (lax.compare(a, a, "ne"), nan),
        (lax.compare(a, lax.full_like(a, np.inf), "eq"), info.max if posinf is None else posinf),
        (lax.compare(a, lax.full_like(a, -np.inf), "eq"), info.min if neginf is None else neginf),
    ]
    result = a
    for mask, value in replacements:
        (filler,) = prepare("nan_to_num", (value,), dtype=a.meta.dtype)
        result = lax.select(mask, broadcast_to(lift([filler, a])[0], a.meta.shape), result)
    return result


_SINC_SERIES = (1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880)
"""Taylor coefficients of ``sin(t)/t`` in ``t**2`` (enough for |t| < 0.1 in float64)."""


@unary
def sinc(x: Any) -> Any:
    """numpy's normalised ``sinc``: ``sin(pi x) / (pi x)``, 1 at 0. Near 0 it is its
    Taylor polynomial, so every derivative there is exact (the first is 0, the second
    ``-pi**2 / 3``)."""
    (a,) = _inexact("sinc", x)
    t = lax.mul(a, lax.full_like(a, np.pi))
    small = lax.compare(lax.abs(t), lax.full_like(lax.abs(t), 0.1), "lt")
    safe = lax.select(small, lax.full_like(t, 1), t)
    quotient = lax.div(lax.sin(safe), safe)
    near = lax.select(small, t, lax.zeros_like(t))
    squared = lax.mul(near, near)
    series = lax.full_like(t, _SINC_SERIES[-1])
    for coefficient in reversed(_SINC_SERIES[:-1]):
        series = lax.add(lax.mul(series, squared), lax.full_like(t, coefficient))
    return lax.select(small, series, quotient)


@preserving
def clip(x: Any, a_min: Any = None, a_max: Any = None) -> Any:
    """``x`` limited to ``[a_min, a_max]`` (either may be None); strict-mask derivatives:
    at an exact tie with a bound nobody receives a gradient."""
    if a_min is None and a_max is None:
        raise ParameterError("clip", "give a_min, a_max or both (both are None)")
    base = asarray(x)
    fill_low = -float("inf") if base.meta.dtype.kind in "fc" else _int_limit(base, "min")
    fill_high = float("inf") if base.meta.dtype.kind in "fc" else _int_limit(base, "max")
    low = fill_low if a_min is None else a_min
    high = fill_high if a_max is None else a_max
    a, lo, hi = prepare("clip", (base, low, high), kinds=ORDERED)
    return lax.clamp(lo, a, hi)


def _int_limit(x: Any, which: str) -> int:
    info = np.iinfo(x.meta.dtype) if x.meta.dtype.kind == "i" else np.iinfo(np.int64)
    return int(info.min if which == "min" else info.max)
