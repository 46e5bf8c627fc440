"""numpy's functions applied to tensors: ``np.sum(t)``, ``np.dot(x, x)``, ``np.exp(t)``.

numpy hands calls with a tensor argument to the tensor (``__array_function__`` for
functions, ``__array_ufunc__`` for ufuncs). Each numpy function tenferro provides runs
as the tenferro function, on the tensors' own kind: a tracked ``EagerTensor`` stays on
its tape and a ``TracedTensor`` stays in its graph, so derivatives are complete.
numpy's arguments are bound by numpy's own signature; an option tenferro does not
implement (``out=``, ``where=``, ``order='F'``, ...) raises ``UnsupportedError``.

* ``np.einsum``/``np.einsum_path`` and every ``np.linalg.<name>`` are looked up at call
  time as ``tenferro.einsum``/``tenferro.einsum_path``/``tenferro.linalg.<name>``.
* Functions whose result carries no derivative (``np.allclose``, ``np.argmax``,
  printing, ...) run on the data of concrete tensors; traced tensors have no data yet,
  so they raise.
* Anything else raises ``UnsupportedError`` (on every kind, so code behaves the same
  with or without a tape): never a plain array that has silently left the tape or the
  graph. ``np.asarray(x)`` converts explicitly.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from tenferro.core.flags import check_flag
from tenferro.core.methods import TensorMethods
from tenferro.errors import UnsupportedError
from tenferro.surface import (
    arrangement,
    contraction,
    convert,
    creation,
    indexing,
    math,
    predicates,
    reductions,
    shapes,
)
from tenferro.surface.convert import is_tensor

__all__ = ["array_function", "array_ufunc", "supported_functions", "supported_ufuncs"]

_Entry = tuple[Callable[..., Any], dict[str, str | None]]
"""A tenferro implementation and how numpy's parameters map onto it: a numpy name maps
to the implementation's keyword, or to ``None`` when any value is accepted and ignored."""


def array_function(func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    """The ``__array_function__`` protocol for every tensor kind."""
    for kind in types:
        if not issubclass(kind, (np.ndarray, TensorMethods)):
            return NotImplemented  # another library's arrays: let it answer
    name = _qualified_name(func)
    entry = _table().get(func)
    if entry is not None:
        return _call(name, func, entry, args, kwargs)
    module = getattr(func, "__module__", "")
    if module == "numpy.linalg":
        target = _linalg_target(func.__name__)
        if target is None:
            raise _unsupported(name, "function")
        return _forward(name, func, target, args, kwargs)
    if func is np.einsum or func is np.einsum_path:
        implementation = _public(func.__name__)
        if implementation is not None:
            if kwargs.get("out") is not None:
                raise UnsupportedError(name, "out= is not supported: tensors are immutable")
            kwargs = {k: v for k, v in kwargs.items() if k != "out"}
            for option in ("dtype", "order", "casting"):
                if option in kwargs:
                    raise UnsupportedError(
                        name,
                        f"{option}= is not supported (given {kwargs[option]!r}): convert the "
                        "operands or the result instead",
                    )
            return implementation(*args, **kwargs)
    elif (short := getattr(func, "__name__", "")) in _BY_NAME and getattr(np, short, None) is func:
        target = _public(_BY_NAME[short])
        if target is not None:
            return _forward(name, func, target, args, kwargs)
    if func in _data_only():
        return _on_data(name, func, args, kwargs)
    raise _unsupported(name, "function")


def supported_functions() -> list[Any]:
    """The numpy functions (not ufuncs) that run as tenferro functions on tensors now:
    the table, ``np.einsum``, the ``np.linalg`` functions tenferro has, and the numpy
    functions whose tenferro counterpart of the same name exists (``np.cumsum`` once
    ``tf.cumsum`` does)."""
    functions = [*_table(), np.einsum]
    for attribute in dir(np.linalg):
        function = getattr(np.linalg, attribute)
        if (
            callable(function)
            and getattr(function, "__module__", "") == "numpy.linalg"
            and _linalg_target(attribute) is not None
        ):
            functions.append(function)
    for numpy_name, tenferro_name in _BY_NAME.items():
        function = getattr(np, numpy_name, None)
        if function is not None and _public(tenferro_name) is not None:
            functions.append(function)
    return functions


def supported_ufuncs() -> list[str]:
    """The names of the numpy ufuncs that run as tenferro functions on tensors."""
    return sorted(_ufuncs())


_BY_NAME = {
    name: name
    for name in [
        "argmax",
        "argmin",
        "cross",
        "cumprod",
        "cumsum",
        "diff",
        "kron",
        "nanmean",
        "nansum",
        "sort",
        "split",
    ]
}
"""numpy functions run as the tenferro function of the same name when tenferro has one
(looked up at call time), with numpy's arguments passed by name."""


def _forward(name: str, func: Any, target: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    """``target`` called with the arguments given to numpy's ``func``: parameters without a
    default positionally, the others by numpy's name (numpy's defaults are left to
    ``target``). ``out=`` and options ``target`` does not take raise
    ``UnsupportedError``."""
    signature = _SIGNATURES.get(func)
    if signature is None:
        signature = _SIGNATURES[func] = inspect.signature(func)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise UnsupportedError(
            name, f"the arguments do not fit numpy's signature: {error}"
        ) from None
    positional: list[Any] = []
    options: dict[str, Any] = {}
    for parameter, given in bound.arguments.items():
        kind = signature.parameters[parameter].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            positional.extend(given)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            options.update(given)
        elif signature.parameters[parameter].default is inspect.Parameter.empty:
            positional.append(given)
        else:
            options[parameter] = given
    adapt = _ADAPTERS.get(name)
    if adapt is not None:
        target, options = adapt(target, options)
    if options.get("out") is not None:
        raise UnsupportedError(name, "out= is not supported: tensors are immutable")
    options.pop("out", None)
    try:
        target_signature = inspect.signature(target)
    except (TypeError, ValueError):
        return target(*positional, **options)
    for key in list(options):
        if key not in target_signature.parameters and _is_default(signature, key, options[key]):
            del options[key]
    try:
        target_signature.bind(*positional, **options)
    except TypeError:
        unknown = sorted(set(options) - set(target_signature.parameters))
        detail = f"{', '.join(f'{k}={options[k]!r}' for k in unknown)}" if unknown else "these"
        raise UnsupportedError(name, f"{detail} arguments are not supported for tensors") from None
    return target(*positional, **options)


def _is_default(signature: inspect.Signature, key: str, value: Any) -> bool:
    parameter = signature.parameters.get(key)
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return False
    default = parameter.default
    return bool(value is default or _equal(value, default) or repr(default) == "<no value>")


def _linalg_target(name: str) -> Callable[..., Any] | None:
    """The tenferro function ``numpy.linalg.<name>`` runs as (looked up at call time)."""
    target = _lazy("tenferro.linalg", name)
    if target is not None:
        return target
    extra = _LINALG_EXTRAS.get(name)
    return None if extra is None else extra()


def _svd(target: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    if check_flag("numpy.linalg.svd", "hermitian", options.pop("hermitian", False)):
        raise UnsupportedError(
            "numpy.linalg.svd", "hermitian=True is not supported (use tf.linalg.eigh)"
        )
    if not check_flag("numpy.linalg.svd", "compute_uv", options.pop("compute_uv", True)):
        options.pop("full_matrices", None)
        svdvals = _lazy("tenferro.linalg", "svdvals")
        if svdvals is None:
            raise _unsupported("numpy.linalg.svd", "function")
        return svdvals, options
    return target, options


def _pinv(target: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    rcond = options.pop("rcond", None)
    if rcond is not None:
        if options.get("rtol") is not None and repr(options["rtol"]) != "<no value>":
            raise UnsupportedError("numpy.linalg.pinv", "give rcond or rtol, not both")
        options["rtol"] = rcond
    if repr(options.get("rtol")) == "<no value>":
        options.pop("rtol")
    return target, options


_ADAPTERS = {"numpy.linalg.svd": _svd, "numpy.linalg.pinv": _pinv}


def _last_two(function_name: str) -> Callable[[], Callable[..., Any] | None]:
    """Array-API ``numpy.linalg`` functions over the last two axes (diagonal, trace)."""

    def resolve() -> Callable[..., Any] | None:
        if function_name == "diagonal":
            return lambda x, offset=0: shapes.diagonal(x, offset, -2, -1)

        def trace(x: Any, offset: int = 0, dtype: Any = None) -> Any:
            result = shapes.trace(x, offset, -2, -1)
            return result if dtype is None else convert.astype(result, dtype)

        return trace

    return resolve


_LINALG_EXTRAS: dict[str, Callable[[], Callable[..., Any] | None]] = {
    "matmul": lambda: _public("matmul"),
    "outer": lambda: _public("outer"),
    "tensordot": lambda: _public("tensordot"),
    "vecdot": lambda: _public("vecdot"),
    "cross": lambda: _public("cross"),
    "matrix_transpose": lambda: _public("matrix_transpose") or (lambda x: x.mT),
    "diagonal": _last_two("diagonal"),
    "trace": _last_two("trace"),
}


def array_ufunc(ufunc: Any, method: str, inputs: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """The ``__array_ufunc__`` protocol: ufuncs run as the tenferro function of that name."""
    for value in (*inputs, *kwargs.get("out", ())):
        if hasattr(value, "__array_ufunc__") and not isinstance(
            value, (np.ndarray, np.generic, TensorMethods)
        ):
            return NotImplemented  # another library's arrays: let it answer
    name = f"numpy.{ufunc.__name__}"
    if kwargs.get("out") is not None:
        raise UnsupportedError(name, "out= is not supported: tensors are immutable")
    options = {k: v for k, v in kwargs.items() if k != "out"}
    if method == "__call__":
        function = _ufuncs().get(ufunc.__name__)
        if function is None:
            raise _unsupported(name, "ufunc")
        dtype = options.pop("dtype", None)
        if options:
            raise UnsupportedError(name, f"options {sorted(options)} are not supported")
        result = function(*inputs)
        return result if dtype is None else result.astype(dtype)
    if method == "reduce" and ufunc.__name__ in _REDUCTIONS and len(inputs) == 1:
        unknown = set(options) - {"axis", "keepdims"}
        if unknown:
            raise UnsupportedError(f"{name}.reduce", f"options {sorted(unknown)} are not supported")
        reduce = _REDUCTIONS[ufunc.__name__]()
        return reduce(inputs[0], options.get("axis", 0), options.get("keepdims", False))
    raise _unsupported(f"{name}.{method}", "ufunc method")


# ---------------------------------------------------------------------- calling


_SIGNATURES: dict[Any, inspect.Signature] = {}


def _call(name: str, func: Any, entry: _Entry, args: Any, kwargs: Any) -> Any:
    """Bind ``args``/``kwargs`` by numpy's signature of ``func`` and call the entry."""
    signature = _SIGNATURES.get(func)
    if signature is None:
        signature = _SIGNATURES[func] = inspect.signature(func)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise UnsupportedError(
            name, f"the arguments do not fit numpy's signature: {error}"
        ) from None
    target, mapping = entry
    options: dict[str, Any] = {}
    for parameter, value in bound.arguments.items():
        if signature.parameters[parameter].kind is inspect.Parameter.VAR_KEYWORD:
            items = value.items()
        else:
            items = ((parameter, value),)
        for key, given in items:
            if key in mapping:
                keyword = mapping[key]
                if keyword is not None:
                    options[keyword] = given
                continue
            default = signature.parameters[key].default if key in signature.parameters else None
            if given is None or given is default or _equal(given, default):
                continue
            raise UnsupportedError(name, f"{key}={given!r} is not supported for tensors")
    return target(**options)


def _equal(given: Any, default: Any) -> bool:
    try:
        return bool(type(given) is type(default) and given == default)
    except (TypeError, ValueError):
        return False


_NAMESPACE: list[ModuleType] = []
"""The namespace numpy's functions are dispatched to, by name: ``tenferro`` itself (set
by ``import tenferro``: :func:`dispatch_to`)."""


def dispatch_to(namespace: ModuleType) -> None:
    """Run numpy functions on tensors as the functions of ``namespace`` of the same name,
    looked up at call time (a function that arrives later is found)."""
    _NAMESPACE[:] = [namespace]


def _public(attribute: str) -> Callable[..., Any] | None:
    """``tenferro.attribute`` (see :func:`dispatch_to`) looked up now."""
    return getattr(_NAMESPACE[0], attribute, None) if _NAMESPACE else None


def _lazy(module_name: str, attribute: str) -> Callable[..., Any] | None:
    """``module_name.attribute`` looked up now (it may arrive in a later release)."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, attribute, None)


def _qualified_name(func: Any) -> str:
    module = getattr(func, "__module__", "numpy") or "numpy"
    prefix = "numpy" if module.startswith("numpy._") or module == "numpy" else module
    return f"{prefix}.{getattr(func, '__name__', func)}"


def _unsupported(name: str, what: str) -> UnsupportedError:
    return UnsupportedError(
        name,
        f"tenferro has no counterpart of this numpy {what} for tensors; use tenferro "
        f"functions, or convert explicitly with np.asarray(x) (derivatives do not follow "
        f"a conversion; a TracedTensor has no data until evaluated)",
    )


def _on_data(name: str, func: Any, args: Any, kwargs: Any) -> Any:
    """``func`` run by numpy on the data of concrete tensors: for functions whose results
    carry no derivative (``np.allclose``, ``np.argmax``, printing)."""
    values = _data(name, args)
    options = dict(zip(kwargs, _data(name, kwargs.values()), strict=True))
    return func(*values, **options)


def _data(name: str, values: Any) -> list[Any]:
    converted = []
    for value in values:
        if is_tensor(value):
            if not hasattr(value, "_value"):
                raise UnsupportedError(
                    name,
                    f"needs data, and a {type(value).__name__} has none until evaluated",
                )
            value = np.asarray(value._value)
        elif type(value) in (list, tuple):
            value = type(value)(_data(name, value))
        converted.append(value)
    return converted


# ---------------------------------------------------------------------- adapters


def _mean(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
    return reductions.mean(x if dtype is None else convert.astype(x, dtype), axis, keepdims)


def _spread(function: Any) -> Any:
    """``var``/``std`` with numpy's ``dtype`` and ``correction`` (an alias of ``ddof``)."""

    def apply(
        x: Any,
        axis: Any = None,
        keepdims: bool = False,
        ddof: Any = 0,
        dtype: Any = None,
        correction: Any = None,
    ) -> Any:
        if correction is not None:
            ddof = correction
        return function(x if dtype is None else convert.astype(x, dtype), axis, keepdims, ddof)

    return apply


def _join(function: Any) -> Any:
    """``concatenate``/``stack`` with numpy's ``dtype`` (and ``axis=None``: flattened)."""

    def apply(arrays: Any, axis: Any = 0, dtype: Any = None) -> Any:
        if convert.is_tensor(arrays):  # the sequence of its rows, joined without splitting
            rows = arrays if dtype is None else convert.astype(arrays, dtype)
            if axis is None and function is shapes.concatenate:
                return shapes.ravel(rows)
            return function(rows, axis)
        items = list(arrays)
        if dtype is not None:
            items = [convert.astype(convert.asarray(a, op="concatenate"), dtype) for a in items]
        if axis is None and function is shapes.concatenate:
            return shapes.concatenate([shapes.ravel(a) for a in items], 0)
        return function(items, axis)

    return apply


def _stacked(function: Any) -> Any:
    """``vstack``/``hstack``/``dstack``/``column_stack`` with numpy's ``dtype``."""

    def apply(arrays: Any, dtype: Any = None) -> Any:
        if convert.is_tensor(arrays):  # the sequence of its rows, joined without splitting
            return function(arrays if dtype is None else convert.astype(arrays, dtype))
        items = [convert.asarray(a, op="stack") for a in arrays]
        if dtype is not None:
            items = [convert.astype(a, dtype) for a in items]
        return function(items)

    return apply


def _spread_args(function: Any) -> Any:
    """A function of ``*args`` called with numpy's bound ``args`` tuple."""

    def apply(args: Any, **options: Any) -> Any:
        return function(*args, **options)

    return apply


def _where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None or y is None:
        raise UnsupportedError(
            "numpy.where",
            "the one-argument form (indices of non-zero elements) has a data-dependent "
            "shape; give both x and y",
        )
    return math.where(condition, x, y)


def _clip(x: Any, a_min: Any = None, a_max: Any = None, low: Any = None, high: Any = None) -> Any:
    lower = a_min if low is None else low
    upper = a_max if high is None else high
    return math.clip(x, lower, upper)


def _pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Any:
    if mode != "constant" or not _equal(constant_values, 0):
        raise UnsupportedError(
            "numpy.pad", f"only zero constant padding is supported (mode={mode!r})"
        )
    return shapes.pad(x, pad_width)


def _size(x: Any, axis: Any = None) -> int:
    return int(x.meta.size if axis is None else x.meta.shape[axis])


def _trace(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Any:
    result = shapes.trace(x, offset, axis1, axis2)
    return result if dtype is None else convert.astype(result, dtype)


def _result_type(*values: Any) -> Any:
    return np.result_type(*(v.meta.dtype if is_tensor(v) else v for v in values))


_TABLE: dict[Any, _Entry] = {}


def _spec(target: Callable[..., Any], text: str) -> _Entry:
    """An entry from ``"a->x axis keepdims copy-"``: ``a`` becomes keyword ``x``, ``axis``
    passes as itself, ``copy`` is accepted and ignored."""
    mapping: dict[str, str | None] = {}
    for token in text.split():
        if token.endswith("-"):
            mapping[token[:-1]] = None
        elif "->" in token:
            source, keyword = token.split("->")
            mapping[source] = keyword
        else:
            mapping[token] = token
    return target, mapping


def _table() -> dict[Any, _Entry]:
    if _TABLE:
        return _TABLE
    reduce = "a->x axis keepdims dtype"
    extremum = "a->x axis keepdims"
    spread = "a->x axis keepdims ddof dtype correction"
    entries: dict[Any, _Entry] = {
        np.sum: _spec(reductions.sum, reduce),
        np.prod: _spec(reductions.prod, reduce),
        np.mean: _spec(_mean, "a->x axis keepdims dtype"),
        np.var: _spec(_spread(reductions.var), spread),
        np.std: _spec(_spread(reductions.std), spread),
        np.max: _spec(reductions.max, extremum),
        np.amax: _spec(reductions.max, extremum),
        np.min: _spec(reductions.min, extremum),
        np.amin: _spec(reductions.min, extremum),
        np.all: _spec(reductions.all, extremum),
        np.any: _spec(reductions.any, extremum),
        np.dot: _spec(contraction.dot, "a->x b->y"),
        np.vdot: _spec(contraction.vdot, "a->x b->y"),
        np.inner: _spec(contraction.inner, "a->x b->y"),
        np.outer: _spec(contraction.outer, "a->x b->y"),
        np.tensordot: _spec(contraction.tensordot, "a->x b->y axes"),
        np.concatenate: _spec(_join(shapes.concatenate), "arrays axis dtype"),
        np.vstack: _spec(_stacked(arrangement.vstack), "tup->arrays dtype"),
        np.hstack: _spec(_stacked(arrangement.hstack), "tup->arrays dtype"),
        np.dstack: _spec(_stacked(arrangement.dstack), "tup->arrays"),
        np.column_stack: _spec(_stacked(arrangement.column_stack), "tup->arrays"),
        np.diag: _spec(arrangement.diag, "v k"),
        np.diagflat: _spec(arrangement.diagflat, "v k"),
        np.roll: _spec(arrangement.roll, "a->x shift axis"),
        np.tile: _spec(arrangement.tile, "A->x reps"),
        np.repeat: _spec(arrangement.repeat, "a->x repeats axis"),
        np.atleast_1d: _spec(_spread_args(arrangement.atleast_1d), "arys->args"),
        np.atleast_2d: _spec(_spread_args(arrangement.atleast_2d), "arys->args"),
        np.atleast_3d: _spec(_spread_args(arrangement.atleast_3d), "arys->args"),
        np.meshgrid: _spec(_spread_args(arrangement.meshgrid), "xi->args copy sparse indexing"),
        np.broadcast_arrays: _spec(_spread_args(arrangement.broadcast_arrays), "args subok-"),
        np.stack: _spec(_join(shapes.stack), "arrays axis dtype"),
        np.reshape: _spec(shapes.reshape, "a->x shape newshape->shape copy-"),
        np.transpose: _spec(shapes.transpose, "a->x axes"),
        np.swapaxes: _spec(shapes.swapaxes, "a->x axis1 axis2"),
        np.moveaxis: _spec(shapes.moveaxis, "a->x source destination"),
        np.expand_dims: _spec(shapes.expand_dims, "a->x axis"),
        np.squeeze: _spec(shapes.squeeze, "a->x axis"),
        np.ravel: _spec(shapes.ravel, "a->x"),
        np.flip: _spec(shapes.flip, "m->x axis"),
        np.diagonal: _spec(shapes.diagonal, "a->x offset axis1 axis2"),
        np.trace: _spec(_trace, "a->x offset axis1 axis2 dtype"),
        np.tril: _spec(shapes.tril, "m->x k"),
        np.triu: _spec(shapes.triu, "m->x k"),
        np.pad: _spec(_pad, "array->x pad_width mode constant_values"),
        np.where: _spec(_where, "condition x y"),
        np.clip: _spec(_clip, "a->x a_min a_max min->low max->high"),
        np.broadcast_to: _spec(convert.broadcast_to, "array->x shape"),
        np.take: _spec(indexing.take, "a->x indices axis"),
        np.real: _spec(math.real, "val->x"),
        np.angle: _spec(math.angle, "z deg"),
        np.imag: _spec(math.imag, "val->x"),
        np.round: _spec(math.round, "a->x decimals"),
        np.around: _spec(math.round, "a->x decimals"),
        np.zeros_like: _spec(creation.zeros_like, "a->x dtype"),
        np.ones_like: _spec(creation.ones_like, "a->x dtype"),
        np.empty_like: _spec(creation.zeros_like, "prototype->x dtype"),
        np.full_like: _spec(creation.full_like, "a->x fill_value dtype"),
        np.copy: _spec(lambda x: x, "a->x"),  # tensors are immutable
        np.shape: _spec(lambda x: x.meta.shape, "a->x"),
        np.ndim: _spec(lambda x: x.meta.ndim, "a->x"),
        np.size: _spec(_size, "a->x axis"),
        np.iscomplexobj: _spec(lambda x: x.meta.dtype.kind == "c", "x"),
        np.isrealobj: _spec(lambda x: x.meta.dtype.kind != "c", "x"),
    }
    for name, target, text in (
        ("permute_dims", shapes.transpose, "a->x axes"),
        ("matrix_transpose", lambda x: shapes.swapaxes(x, -1, -2), "x"),
        ("astype", convert.astype, "x dtype copy-"),
    ):
        function = getattr(np, name, None)
        if function is not None:  # numpy 2 names
            entries[function] = _spec(target, text)
    _TABLE.update(entries)
    return _TABLE


_DATA_ONLY: set[Any] = set()


def _data_only() -> set[Any]:
    """numpy functions whose results carry no derivative (bool, integer, text results)."""
    if not _DATA_ONLY:
        names = (
            "allclose isclose array_equal array_equiv argmax argmin argsort argwhere nonzero "
            "flatnonzero count_nonzero searchsorted array2string array_repr array_str save "
            "savez savetxt"
        )
        _DATA_ONLY.update(getattr(np, n) for n in names.split() if hasattr(np, n))
        _DATA_ONLY.add(np.result_type)
    return _DATA_ONLY


def _ufuncs() -> dict[str, Callable[..., Any]]:
    if not _UFUNCS:
        _UFUNCS.update({name: getattr(math, name) for name in _UFUNC_NAMES})
        _UFUNCS.update(
            conjugate=math.conj,
            matmul=contraction.matmul,
            vecdot=contraction.vecdot,
            isnan=predicates.isnan,
            isinf=predicates.isinf,
            isfinite=predicates.isfinite,
        )
    return _UFUNCS


def _reduction(name: str) -> Callable[[], Callable[..., Any]]:
    def resolve() -> Callable[..., Any]:
        function: Callable[..., Any] = getattr(reductions, name)
        return function

    return resolve


_REDUCTIONS = {
    "add": _reduction("sum"),
    "multiply": _reduction("prod"),
    "maximum": _reduction("max"),
    "minimum": _reduction("min"),
    "logical_and": _reduction("all"),
    "logical_or": _reduction("any"),
}

_UFUNCS: dict[str, Callable[..., Any]] = {}
_UFUNC_NAMES = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "floor_divide",
    "remainder",
    "fmod",
    "power",
    "negative",
    "positive",
    "absolute",
    "sign",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "square",
    "reciprocal",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "arctan2",
    "deg2rad",
    "rad2deg",
    "degrees",
    "radians",
    "hypot",
    "logaddexp",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "floor",
    "ceil",
    "trunc",
    "rint",
]
