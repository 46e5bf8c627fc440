"""PyTorch's names on tenferro tensors, where they fit an immutable-tensor library.

The methods (``x.size()``, ``view``, ``permute``, ``to``, ``double()`` ... in
:class:`~tenferro.surface.methods.TensorMethods`) call the helpers here, which map them
onto the numpy-style surface. PyTorch's in-place methods (``add_``, ``zero_``,
``masked_fill_`` ...) cannot exist for immutable tensors: each raises
:class:`~tenferro.InPlaceError` naming the functional equivalent instead of an
``AttributeError``.
"""

from __future__ import annotations

import math
from typing import Any

from tenferro.core.methods import Size
from tenferro.core.params import as_int
from tenferro.errors import AxisError, DTypeError, InPlaceError, ParameterError, ShapeError
from tenferro.meta import normalize_axis
from tenferro.surface.convert import astype, broadcast_to
from tenferro.surface.shapes import permute_dims, ravel, reshape, transpose

__all__ = [
    "DTYPE_METHODS",
    "IN_PLACE",
    "Size",
    "expand",
    "flatten",
    "install_dtype_methods",
    "install_in_place_refusals",
    "matrix_t",
    "permute",
    "to",
    "unsupported_dtype",
    "view",
]


def _one_sequence(values: tuple[Any, ...]) -> Any:
    """PyTorch's ``f(1, 2)`` and ``f((1, 2))`` both name the sequence ``(1, 2)``."""
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        return tuple(values[0])
    return values


def view(x: Any, shape: tuple[Any, ...]) -> Any:

    target = _one_sequence(shape)
    if len(target) == 1 and not _is_integer(target[0]):
        raise DTypeError(
            "view",
            f"a view as another dtype ({target[0]!r}) reinterprets bits, which tenferro "
            f"does not do; use x.astype(dtype) to convert values",
        )
    return reshape(x, target)


def permute(x: Any, dims: tuple[Any, ...]) -> Any:

    return permute_dims(x, _one_sequence(dims))


def expand(x: Any, sizes: tuple[Any, ...]) -> Any:

    target = [as_int("expand", "size", n, ShapeError) for n in _one_sequence(sizes)]
    shape = x.meta.shape
    if len(target) < len(shape):
        raise ShapeError("expand", f"cannot expand shape {shape} to {tuple(target)}: fewer axes")
    offset = len(target) - len(shape)
    for i, n in enumerate(target):
        if n == -1:
            if i < offset:
                raise ShapeError("expand", f"-1 at new leading axis {i} has no extent to keep")
            target[i] = shape[i - offset]
    return broadcast_to(x, tuple(target))


def matrix_t(x: Any) -> Any:

    if x.meta.ndim > 2:
        raise ShapeError(
            "t", f"t() transposes tensors of rank <= 2, got shape {x.meta.shape}; use .mT"
        )
    return transpose(x)


def flatten(x: Any, start_dim: int, end_dim: int) -> Any:

    ndim = x.meta.ndim
    if ndim == 0:
        return reshape(x, (1,))
    first = normalize_axis(as_int("flatten", "start_dim", start_dim, AxisError), ndim, "flatten")
    last = normalize_axis(as_int("flatten", "end_dim", end_dim, AxisError), ndim, "flatten")
    if first > last:
        raise AxisError("flatten", f"start_dim {start_dim} comes after end_dim {end_dim}")
    if first == 0 and last == ndim - 1:
        return ravel(x)
    shape = x.meta.shape
    merged = math.prod(shape[first : last + 1])
    return reshape(x, (*shape[:first], merged, *shape[last + 1 :]))


def to(x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """PyTorch's ``to``: a dtype, a device, a tensor (its dtype), or ``(device, dtype)``."""

    unknown = sorted(set(kwargs) - {"dtype", "device", "copy", "non_blocking"})
    if unknown:
        raise ParameterError("to", f"unknown arguments {unknown}")
    dtype = kwargs.get("dtype")
    device = kwargs.get("device")
    for value in args:
        if hasattr(value, "meta"):
            dtype = value.meta.dtype
        elif isinstance(value, str) and value.split(":")[0] in ("cpu", "cuda", "mps", "xla"):
            device = value
        else:
            dtype = value
    if device is not None and str(device) != "cpu":
        raise ParameterError(
            "to", f"tenferro tensors live on the cpu, not {device!r} (see tf.jit(backend=...))"
        )
    return x if dtype is None else astype(x, dtype)


def unsupported_dtype(op: str, name: str) -> DTypeError:
    return DTypeError(
        op,
        f"{name} is not one of tenferro's dtypes (bool, int32, int64, float32, float64, "
        f"complex64, complex128)",
    )


def _is_integer(value: Any) -> bool:
    try:
        as_int("view", "shape", value)
    except ParameterError:
        return False
    return True


IN_PLACE: dict[str, str] = {
    "add_": "x = x + y (or tf.add(x, y))",
    "sub_": "x = x - y",
    "mul_": "x = x * y",
    "div_": "x = x / y",
    "true_divide_": "x = x / y",
    "floor_divide_": "x = x // y",
    "remainder_": "x = x % y",
    "pow_": "x = x ** y",
    "neg_": "x = -x",
    "abs_": "x = abs(x)",
    "exp_": "x = tf.exp(x)",
    "log_": "x = tf.log(x)",
    "sqrt_": "x = tf.sqrt(x)",
    "sin_": "x = tf.sin(x)",
    "cos_": "x = tf.cos(x)",
    "tanh_": "x = tf.tanh(x)",
    "sigmoid_": "x = tf.sigmoid(x)",
    "relu_": "x = tf.relu(x)",
    "round_": "x = tf.round(x)",
    "floor_": "x = tf.floor(x)",
    "ceil_": "x = tf.ceil(x)",
    "clamp_": "x = tf.clip(x, low, high)",
    "clip_": "x = tf.clip(x, low, high)",
    "zero_": "x = tf.zeros_like(x)",
    "fill_": "x = tf.full_like(x, value)",
    "copy_": "x = tf.asarray(source)",
    "masked_fill_": "x = tf.where(mask, value, x)",
    "index_put_": "x = x.at[index].set(values)",
    "index_add_": "x = x.at[index].add(values)",
    "index_fill_": "x = x.at[index].set(value)",
    "scatter_": "x = x.at[index].set(values)",
    "scatter_add_": "x = x.at[index].add(values)",
    "put_": "x = x.at[index].set(values)",
    "t_": "x = x.t()",
    "transpose_": "x = tf.swapaxes(x, a, b)",
    "squeeze_": "x = x.squeeze(dim)",
    "unsqueeze_": "x = x.unsqueeze(dim)",
    "resize_": "x = x.reshape(shape)",
    "conj_physical_": "x = x.conj()",
    "normal_": "x = tf.random.default_rng(seed).normal(size=x.shape)",
    "uniform_": "x = tf.random.default_rng(seed).uniform(size=x.shape)",
    "detach_": "x = x.detach()",
}
"""PyTorch's in-place methods, each with what to write instead."""


def _refusal(name: str, instead: str) -> Any:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise InPlaceError(
            name,
            f"tenferro tensors are immutable, so there is no in-place {name}(); write "
            f"{instead}: a new tensor (derivatives flow through it as through any result)",
        )

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"PyTorch's in-place ``{name}``: raises (tensors are immutable); {instead}."
    return refuse


DTYPE_METHODS = {
    "double": "float64",
    "float": "float32",
    "long": "int64",
    "int": "int32",
    "bool": "bool",
    "cfloat": "complex64",
    "cdouble": "complex128",
}
"""PyTorch's conversion methods (``x.double()`` ...) and the dtype each converts to."""


def _conversion(cls: type, name: str, dtype: str) -> Any:
    def convert(self: Any) -> Any:
        return astype(self, dtype)

    convert.__name__ = name
    convert.__qualname__ = f"{cls.__name__}.{name}"
    convert.__doc__ = f"``astype({dtype})`` (PyTorch's ``{name}()``)."
    return convert


def install_dtype_methods(cls: type) -> None:
    """Give ``cls`` PyTorch's conversion methods of :data:`DTYPE_METHODS`."""
    for name, dtype in DTYPE_METHODS.items():
        setattr(cls, name, _conversion(cls, name, dtype))


def install_in_place_refusals(cls: type) -> None:
    """Give ``cls`` a method per name of :data:`IN_PLACE` that raises ``InPlaceError``."""
    for name, instead in IN_PLACE.items():
        if name not in cls.__dict__:
            setattr(cls, name, _refusal(name, instead))
