"""How each PyTorch op of the oracle database is written with tenferro.

``OPS[name](xs, args, kwargs)`` computes the op on tenferro tensors ``xs`` (the case's
inputs ``a, b, ...`` in order) with PyTorch's positional ``args`` and keyword
``kwargs``, translating PyTorch conventions (``dim``/``keepdim``, ``correction``,
``dim=[]`` meaning every axis, reductions over axis 0 of a rank-0 tensor, ...).

``SKIPPED_OPS`` gives, for each op of the database that is not replayed, why; and
``case_skip_reason`` flags individual cases of replayed ops that are outside what
tenferro promises (with the reason).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import tenferro as tf

Op = Callable[[list[Any], list[Any], dict[str, Any]], Any]


# ---------------------------------------------------------------------- conventions


def _axes(x: Any, dim: Any) -> Any:
    """PyTorch ``dim`` as a numpy ``axis``: None and [] mean every axis; a rank-0 tensor
    accepts dim 0 or -1 (meaning no axis)."""
    if dim is None:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return None
    if x.ndim == 0:
        assert all(d in (0, -1) for d in dims), dims
        return ()
    return tuple(dims)


def _reduction(function: Callable[..., Any]) -> Op:
    def apply(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        (a,) = xs
        dim = args[0] if args else kwargs.get("dim")
        keepdim = bool(kwargs.get("keepdim", args[1] if len(args) > 1 else False))
        return function(a, axis=_axes(a, dim), keepdims=keepdim)

    return apply


def _prod(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    if "dtype" in kwargs:
        a = a.astype(kwargs["dtype"])
    dim = args[0] if args else kwargs.get("dim")
    return tf.prod(a, axis=_axes(a, dim), keepdims=bool(kwargs.get("keepdim", False)))


def _moment(function: Callable[..., Any]) -> Op:
    def apply(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        (a,) = xs
        ddof: float = 1.0  # PyTorch's default is the unbiased estimator
        if args and isinstance(args[0], bool):
            ddof = 1.0 if args[0] else 0.0
        if "unbiased" in kwargs:
            ddof = 1.0 if kwargs["unbiased"] else 0.0
        if kwargs.get("correction") is not None:
            ddof = float(kwargs["correction"])
        return function(
            a,
            axis=_axes(a, kwargs.get("dim")),
            keepdims=bool(kwargs.get("keepdim", False)),
            ddof=ddof,
        )

    return apply


def _amax(function: Callable[..., Any]) -> Op:
    def apply(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        (a,) = xs
        dim = kwargs.get("dim", args[0] if args else None)
        return function(a, axis=_axes(a, dim), keepdims=bool(kwargs.get("keepdim", False)))

    return apply


def _diagonal(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    return tf.diagonal(
        a,
        offset=kwargs.get("offset", 0),
        axis1=kwargs.get("dim1", 0),
        axis2=kwargs.get("dim2", 1),
    )


def _unary(function: Callable[[Any], Any]) -> Op:
    return lambda xs, args, kwargs: function(xs[0])


def _binary(function: Callable[[Any, Any], Any]) -> Op:
    return lambda xs, args, kwargs: function(xs[0], xs[1])


def _alpha(function: Callable[[Any, Any], Any]) -> Op:
    """add/sub/rsub with PyTorch's ``alpha`` scaling of the second operand."""

    def apply(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        a, b = xs
        alpha = kwargs.get("alpha", 1)
        return function(a, b if alpha == 1 else b * alpha)

    return apply


def _softplus(x: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
    scaled = x * beta
    safe = tf.where(scaled > threshold, tf.zeros_like(x), scaled)
    return tf.where(scaled > threshold, x, tf.log1p(tf.exp(safe)) / beta)


def _elu(x: Any, alpha: float = 1.0, scale: float = 1.0) -> Any:
    negative = tf.minimum(x, tf.zeros_like(x))
    return scale * tf.where(x > 0, x, alpha * tf.expm1(negative))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _vector_norm_of(a: Any, order: float, axis: Any, keepdim: bool) -> Any:
    magnitude = tf.abs(a)
    if order == math.inf:
        return tf.amax(magnitude, axis=axis, keepdims=keepdim)
    if order == -math.inf:
        return tf.amin(magnitude, axis=axis, keepdims=keepdim)
    if order == 0:
        nonzero = (magnitude != 0).astype(magnitude.dtype)
        return tf.sum(nonzero, axis=axis, keepdims=keepdim)
    if order == 1:
        return tf.sum(magnitude, axis=axis, keepdims=keepdim)
    if order == 2:
        return tf.sqrt(tf.sum(tf.real(a * tf.conj(a)), axis=axis, keepdims=keepdim))
    return tf.sum(magnitude**order, axis=axis, keepdims=keepdim) ** (1.0 / order)


def _vector_norm(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    order = kwargs.get("ord", 2)
    return _vector_norm_of(a, order, _axes(a, kwargs.get("dim")), bool(kwargs.get("keepdim")))


def _norm(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``torch.linalg.norm``: without ``dim``, a numeric order on a matrix is a matrix norm."""
    (a,) = xs
    order = args[0] if args else kwargs.get("ord")
    dim = kwargs.get("dim")
    keepdim = bool(kwargs.get("keepdim"))
    if order is None or order == "fro":
        return _vector_norm_of(a, 2, _axes(a, dim), keepdim)
    if dim is None and a.ndim == 2:
        return _matrix_norm_abs([a], [order, (0, 1), keepdim], {})
    return _vector_norm_of(a, order, _axes(a, dim), keepdim)


def _matrix_norm_fro(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    _, dims, keepdim = args
    return _vector_norm_of(a, 2, tuple(dims), bool(keepdim))


def _matrix_norm_abs(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """order ±1: max/min column sum of |a|; order ±inf: max/min row sum."""
    (a,) = xs
    order, dims, keepdim = args
    rows, cols = (d % a.ndim for d in dims)
    summed_axis = rows if abs(order) == 1 else cols
    other_axis = cols if abs(order) == 1 else rows
    sums = tf.sum(tf.abs(a), axis=summed_axis, keepdims=True)
    pick = tf.amax if order > 0 else tf.amin
    result = pick(sums, axis=other_axis, keepdims=True)
    return result if keepdim else tf.squeeze(result, axis=(rows, cols))


def _matrix_norm(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    if args[0] == "fro":
        return _matrix_norm_fro(xs, args, kwargs)
    return _matrix_norm_abs(xs, args, kwargs)


def _multi_dot(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    result = xs[0]
    for x in xs[1:]:
        result = result @ x
    return result


def _vander(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``torch.linalg.vander``: increasing powers along a new last axis."""
    (a,) = xs
    if a.ndim == 0:
        a = tf.reshape(a, (1,))
    count = kwargs.get("N") or a.shape[-1]
    columns = [tf.ones_like(a)] + [a**k for k in range(1, count)]
    return tf.stack(columns, axis=-1)


def _matrix_power(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    (n,) = args
    result = tf.broadcast_to(tf.eye(a.shape[-1], dtype=a.dtype), a.shape)
    for _ in range(n):
        result = result @ a
    return result


def _prelu(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    a, weight = xs
    if weight.size == 1:
        weight = tf.reshape(weight, ())
    else:  # one weight per channel, channels on axis 1
        weight = tf.reshape(weight, (weight.size,) + (1,) * (a.ndim - 2))
    return tf.where(a > 0, a, weight * a)


def _rrelu(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    slope = (kwargs.get("lower", 1.0 / 8) + kwargs.get("upper", 1.0 / 3)) / 2
    return tf.where(a >= 0, a, a * slope)


def _threshold(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    threshold, value = args
    return tf.where(a > threshold, a, tf.full_like(a, value))


def _hardshrink(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    lambd = kwargs.get("lambd", 0.5)
    return tf.where((a > lambd) | (a < -lambd), a, tf.zeros_like(a))


def _softshrink(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    lambd = kwargs.get("lambd", 0.5)
    return tf.where(a > lambd, a - lambd, tf.where(a < -lambd, a + lambd, tf.zeros_like(a)))


def _hardtanh(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    return tf.clip(a, kwargs.get("min_val", -1.0), kwargs.get("max_val", 1.0))


def _logit(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    (a,) = xs
    eps = args[0] if args else kwargs.get("eps")
    if eps is not None:
        a = tf.clip(a, eps, 1 - eps)
    return tf.log(a / (1 - a))


def _sinc(x: Any) -> Any:
    scaled = x * math.pi
    zero = scaled == 0
    safe = tf.where(zero, tf.ones_like(scaled), scaled)
    return tf.where(zero, tf.ones_like(scaled), tf.sin(safe) / safe)


def _xlogy(x: Any, y: Any, log: Callable[[Any], Any] = tf.log) -> Any:
    zero = x == 0
    safe = tf.where(zero, tf.ones_like(y), y)
    return tf.where(zero, tf.zeros_like(x * y), x * log(safe))


def _entr(x: Any) -> Any:
    positive = x > 0
    safe = tf.where(positive, x, tf.ones_like(x))
    inner = tf.where(x == 0, tf.zeros_like(x), tf.full_like(x, -math.inf))
    return tf.where(positive, -x * tf.log(safe), inner)


def _nan_to_num(x: Any) -> Any:
    info = np.finfo(x.dtype)
    x = tf.where(x != x, tf.zeros_like(x), x)
    x = tf.where(x == math.inf, tf.full_like(x, info.max), x)
    return tf.where(x == -math.inf, tf.full_like(x, info.min), x)


def _copysign(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    a = tf.abs(xs[0])
    if len(xs) == 2:
        return tf.where(xs[1] < 0, -a, a)
    return -a if math.copysign(1.0, args[0]) < 0 else a


def _float_power(a: Any, b: Any) -> Any:
    wide = tf.complex128 if a.dtype.kind == "c" or b.dtype.kind == "c" else tf.float64
    return a.astype(wide) ** b.astype(wide)


def _polar(magnitude: Any, angle: Any) -> Any:
    return tf.complex(magnitude * tf.cos(angle), magnitude * tf.sin(angle))


INVERSE_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "atan": tf.arctan,
    "asin": tf.arcsin,
    "acos": tf.arccos,
    "asinh": tf.arcsinh,
    "acosh": tf.arccosh,
    "atanh": tf.arctanh,
}
"""The inverse functions (real and complex arguments: numpy's principal branches are
PyTorch's)."""


OPS: dict[str, Op] = {
    # ---- arithmetic and its reversed operators
    "add": _alpha(lambda a, b: a + b),
    "sub": _alpha(lambda a, b: a - b),
    "rsub": lambda xs, args, kwargs: xs[1] - xs[0] * kwargs.get("alpha", 1),
    "mul": _binary(lambda a, b: a * b),
    "true_divide": _binary(tf.true_divide),
    "div_no_rounding_mode": _binary(lambda a, b: a / b),
    "neg": _unary(lambda a: -a),
    "positive": _unary(lambda a: +a),
    "conj": _unary(tf.conj),
    "conj_physical": _unary(tf.conj),
    "abs": _unary(tf.abs),
    "sign": _unary(tf.sign),
    "sgn": _unary(tf.sign),
    "square": _unary(tf.square),
    "reciprocal": _unary(tf.reciprocal),
    "pow": _binary(lambda a, b: a**b),
    "maximum": _binary(tf.maximum),
    "max_binary": _binary(tf.maximum),
    "fmax": _binary(tf.maximum),
    "minimum": _binary(tf.minimum),
    "min_binary": _binary(tf.minimum),
    "fmin": _binary(tf.minimum),
    "clamp_min": _binary(lambda a, b: tf.clip(a, b, None)),
    "clamp_max": _binary(lambda a, b: tf.clip(a, None, b)),
    "__radd__": _binary(lambda a, b: a.__radd__(b)),
    "__rsub__": _binary(lambda a, b: a.__rsub__(b)),
    "__rmul__": _binary(lambda a, b: a.__rmul__(b)),
    "__rdiv__": _binary(lambda a, b: a.__rtruediv__(b)),
    "__rpow__": _binary(lambda a, b: a.__rpow__(b)),
    "__rmod__": _binary(lambda a, b: a.__rmod__(b)),
    # ---- analytic
    "exp": _unary(tf.exp),
    "expm1": _unary(tf.expm1),
    "log": _unary(tf.log),
    "log1p": _unary(tf.log1p),
    "sin": _unary(tf.sin),
    "cos": _unary(tf.cos),
    "tan": _unary(tf.tan),
    "tanh": _unary(tf.tanh),
    "sinh": _unary(tf.sinh),
    "cosh": _unary(tf.cosh),
    "sqrt": _unary(tf.sqrt),
    "rsqrt": _unary(tf.rsqrt),
    "sigmoid": _unary(tf.sigmoid),
    "exp2": _unary(tf.exp2),
    "log2": _unary(tf.log2),
    "log10": _unary(tf.log10),
    "logaddexp": _binary(tf.logaddexp),
    "hypot": _binary(tf.hypot),
    "xlogy": _binary(_xlogy),
    "special_xlog1py": _binary(lambda x, y: _xlogy(x, y, tf.log1p)),
    "special_entr": _unary(_entr),
    "float_power": _binary(_float_power),
    "ldexp": _binary(lambda a, b: a * tf.exp2(b)),
    "sinc": _unary(_sinc),
    "logit": _logit,
    "deg2rad": _unary(tf.deg2rad),
    "rad2deg": _unary(tf.rad2deg),
    "frac": _unary(lambda a: a - tf.trunc(a)),
    "trunc": _unary(tf.trunc),
    "floor": _unary(tf.floor),
    "ceil": _unary(tf.ceil),
    "round": _unary(tf.round),
    **dict.fromkeys(
        ["round_decimals_0", "round_decimals_3", "round_decimals_neg_3"],
        lambda xs, args, kwargs: tf.round(xs[0], kwargs["decimals"]),
    ),
    "nan_to_num": _unary(_nan_to_num),
    "copysign": _copysign,
    "angle": _unary(tf.angle),
    "atan2": _binary(tf.arctan2),
    **{name: _unary(function) for name, function in INVERSE_FUNCTIONS.items()},
    # ---- complex parts and conversions
    "real": _unary(tf.real),
    "imag": _unary(tf.imag),
    "complex": _binary(tf.complex),
    "polar": _binary(_polar),
    "double": _unary(lambda a: a.astype(tf.float64)),
    "cdouble": _unary(lambda a: a.astype(tf.complex128)),
    "fill": lambda xs, args, kwargs: tf.full_like(xs[0], kwargs["value"]),
    # ---- reductions
    "sum": _reduction(tf.sum),
    "mean": _reduction(tf.mean),
    "prod": _prod,
    "var": _moment(tf.var),
    "std": _moment(tf.std),
    "var_unbiased": _moment(tf.var),
    "std_unbiased": _moment(tf.std),
    "amax": _amax(tf.amax),
    "amin": _amax(tf.amin),
    "vector_norm": _vector_norm,
    "norm": _norm,
    "matrix_norm": _matrix_norm,
    # ---- structure and contraction
    "diagonal": _diagonal,
    "vecdot": lambda xs, args, kwargs: tf.vecdot(xs[0], xs[1], axis=kwargs.get("dim", -1)),
    "multi_dot": _multi_dot,
    "vander": _vander,
    "matrix_power": _matrix_power,
    # ---- activation functions
    "nn_functional_relu6": _unary(lambda a: tf.clip(a, 0, 6)),
    "nn_functional_hardtanh": _hardtanh,
    "nn_functional_hardsigmoid": _unary(lambda a: tf.clip(a + 3, 0, 6) / 6),
    "nn_functional_softplus": lambda xs, args, kwargs: _softplus(xs[0], **kwargs),
    "nn_functional_silu": _unary(lambda a: a * tf.sigmoid(a)),
    "nn_functional_mish": _unary(lambda a: a * tf.tanh(_softplus(a))),
    "nn_functional_elu": _unary(_elu),
    "nn_functional_selu": _unary(lambda a: _elu(a, _SELU_ALPHA, _SELU_SCALE)),
    "nn_functional_celu": _unary(
        lambda a: tf.maximum(a, 0) + tf.minimum(tf.zeros_like(a), tf.expm1(tf.minimum(a, 0)))
    ),
    "nn_functional_logsigmoid": _unary(lambda a: -_softplus(-a)),
    "nn_functional_softsign": _unary(lambda a: a / (1 + tf.abs(a))),
    "nn_functional_tanhshrink": _unary(lambda a: a - tf.tanh(a)),
    "nn_functional_threshold": _threshold,
    "nn_functional_hardshrink": _hardshrink,
    "nn_functional_softshrink": _softshrink,
    "nn_functional_prelu": _prelu,
    "nn_functional_rrelu": _rrelu,
}

_LINALG = "linear algebra arrives with tf.linalg (a later issue)"
_SPECIAL = "special function without a primitive in the core catalogue"
SKIPPED_OPS: dict[str, str] = {
    **dict.fromkeys(
        [
            "cholesky",
            "cholesky_ex",
            "det",
            "eig",
            "eigh",
            "eigvals",
            "eigvalsh",
            "householder_product",
            "inv",
            "inv_ex",
            "lstsq_grad_oriented",
            "lu",
            "lu_factor",
            "lu_factor_ex",
            "lu_solve",
            "matrix_exp",
            "pinv",
            "pinv_hermitian",
            "qr",
            "slogdet",
            "solve",
            "solve_ex",
            "svd",
            "svdvals",
            "tensorinv",
            "tensorsolve",
        ],
        _LINALG,
    ),
    **dict.fromkeys(
        [
            "digamma",
            "erfinv",
            "i0",
            "lgamma",
            "mvlgamma_mvlgamma_p_1",
            "mvlgamma_mvlgamma_p_3",
            "mvlgamma_mvlgamma_p_5",
            "polygamma_polygamma_n_0",
            "polygamma_polygamma_n_1",
            "polygamma_polygamma_n_2",
            "polygamma_polygamma_n_3",
            "polygamma_polygamma_n_4",
            "special_erfcx",
            "special_i0e",
            "special_i1",
            "special_i1e",
            "special_log_ndtr",
            "special_ndtri",
            "special_polygamma_special_polygamma_n_0",
        ],
        _SPECIAL,
    ),
    "frexp": "integer exponent output; no frexp primitive",
}


def case_skip_reason(case: dict[str, Any], arrays: dict[str, np.ndarray[Any, Any]]) -> str | None:
    """Why one case of a replayed op is not replayed (``None``: replay it)."""
    op = case["op"]
    kwargs = case.get("op_kwargs") or {}
    if op == "sgn" and case["dtype"].startswith("complex"):
        return (
            "seed 001 fixes Sign's derivative to zero for complex inputs too (operation "
            "contract); PyTorch differentiates z/|z|"
        )
    if op in ("clamp_min", "clamp_max"):
        a, b = np.broadcast_arrays(arrays["a"], arrays["b"])
        if np.any(a == b):
            return (
                "exact tie with the bound: seed 001's strict clamp masks give no derivative, "
                "PyTorch gives it to the input"
            )
    if op == "nn_functional_rrelu" and kwargs.get("training"):
        return "rrelu in training mode draws random slopes"
    if op == "copysign" and "b" in arrays and np.any(arrays["b"] == 0):
        return "copysign by a zero: the sign of -0.0 is not a value tenferro compares"
    if op in ("fmax", "fmin") and any(np.isnan(v).any() for v in arrays.values()):
        return "fmax/fmin NaN-ignoring semantics are not part of the tenferro surface"
    return None
