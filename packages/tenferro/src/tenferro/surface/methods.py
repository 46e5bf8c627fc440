"""The operators and methods of every tensor kind, defined once, and their installation.

``Tensor``, ``EagerTensor`` and ``TracedTensor`` derive from
:class:`~tenferro.core.methods.TensorMethods`, which declares these methods for type
checkers; :func:`register_tensor_methods` (called by ``import tenferro``, as JAX's
``register_jax_array_methods``) installs the definitions below on it. Each method calls
the numpy-style function of the same name, so behaviour (broadcasting, promotion,
errors) is identical across kinds. Tensors hash by identity and compare elementwise,
like PyTorch's; numpy defers to their reflected operators.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, Self, cast

import numpy as np

from tenferro.core.flags import check_flag
from tenferro.core.methods import TensorMethods
from tenferro.eager.tape import default_tape
from tenferro.errors import (
    ArgumentTypeError,
    DTypeError,
    InPlaceError,
    ParameterError,
    ShapeError,
    TenferroError,
    UnsupportedError,
)
from tenferro.meta import Meta
from tenferro.surface import contraction as _contraction
from tenferro.surface import convert as _convert
from tenferro.surface import indexing as _indexing
from tenferro.surface import math as _math
from tenferro.surface import numerics as _numerics
from tenferro.surface import numpy_api as _numpy_api
from tenferro.surface import reductions as _reductions
from tenferro.surface import shapes as _shapes
from tenferro.traced.tensor import TracedTensor, operator_lane

__all__ = ["TensorMethods", "register_tensor_methods"]


class SurfaceMethods(TensorMethods):
    """The definitions :func:`register_tensor_methods` installs (they only need ``meta``)."""

    __slots__ = ()
    meta: Meta

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy ufuncs on tensors run as tenferro functions (``np.exp(t)``, and
        ``ndarray + t``); a ufunc without a tenferro counterpart raises
        ``UnsupportedError`` (see :mod:`tenferro.surface.numpy_api`)."""
        return _numpy_api.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """numpy functions on tensors (``np.sum(t)``, ``np.dot(x, y)``) run as tenferro
        functions on the tensors' kind (tape and graph kept); a function without a
        tenferro counterpart raises ``UnsupportedError``."""
        return _numpy_api.array_function(func, types, args, kwargs)

    @property
    def device(self) -> str:
        """Where the data lives: always ``"cpu"`` (the Array API's attribute)."""
        return "cpu"

    def to_device(self, device: Any, /, *, stream: Any = None) -> Self:
        """The tensor itself on the cpu (the Array API's method); other devices raise."""
        if device != "cpu":
            raise ParameterError("to_device", f"tenferro tensors live on the cpu, not {device!r}")
        return self

    def backward(self, seed: Any = None) -> None:
        """Reverse mode into ``.grad``: only tracked ``EagerTensor`` values have it."""
        raise TenferroError(
            "backward",
            f"a {type(self).__name__} records no operations, so it has no backward(); use "
            f"tf.EagerTensor(data, requires_grad=True) (or tape.track) for tape AD, or "
            f"tf.grad / TracedTensor.grad for traced AD",
        )

    # ------------------------------------------------------------------ metadata

    @property
    def T(self) -> Self:  # noqa: N802 - numpy's name
        """All axes reversed, for any rank (numpy's ``ndarray.T``; PyTorch deprecates
        ``.T`` on rank other than 2, the array API allows only rank 2; use ``.mT`` for a
        batch of matrices)."""
        return _shapes.transpose(self)

    @property
    def mT(self) -> Self:  # noqa: N802 - numpy's name
        """The last two axes swapped (a batch of transposed matrices; rank >= 2)."""
        self._need_matrix("mT", batched=True)
        return _shapes.swapaxes(self, -1, -2)

    @property
    def H(self) -> Self:  # noqa: N802 - PyTorch's name
        """The conjugate transpose of a matrix (rank 2 exactly, as PyTorch's ``.H``)."""
        self._need_matrix("H", batched=False)
        return _math.conj(_shapes.transpose(self))

    @property
    def mH(self) -> Self:  # noqa: N802 - PyTorch's name
        """The conjugate transpose of the last two axes (rank >= 2)."""
        self._need_matrix("mH", batched=True)
        return _math.conj(_shapes.swapaxes(self, -1, -2))

    def _need_matrix(self, name: str, *, batched: bool) -> None:
        ndim = len(self.meta.shape)
        if ndim < 2 or (ndim != 2 and not batched):
            wanted = "rank >= 2" if batched else "a matrix (rank 2; use .mH for batches)"
            raise ShapeError(name, f".{name} needs {wanted}, got shape {self.meta.shape}")

    @property
    def real(self) -> Self:
        return _math.real(self)

    @property
    def imag(self) -> Self:
        return _math.imag(self)

    __hash__ = object.__hash__  # defining __eq__ would otherwise remove it

    # ------------------------------------------------------------------ arithmetic

    if not TYPE_CHECKING:  # the function itself: no wrapper frame on the hot path
        __add__ = _math.add

    def __radd__(self, other: Any) -> Self:
        return _math.add(other, self)

    def __sub__(self, other: Any) -> Self:
        return _math.subtract(self, other)

    def __rsub__(self, other: Any) -> Self:
        return _math.subtract(other, self)

    if not TYPE_CHECKING:  # the function itself: no wrapper frame on the hot path
        __mul__ = _math.multiply

    def __rmul__(self, other: Any) -> Self:
        return _math.multiply(other, self)

    def __truediv__(self, other: Any) -> Self:
        return _math.true_divide(self, other)

    def __rtruediv__(self, other: Any) -> Self:
        return _math.true_divide(other, self)

    def __floordiv__(self, other: Any) -> Self:
        return _math.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Self:
        return _math.floor_divide(other, self)

    def __mod__(self, other: Any) -> Self:
        return _math.remainder(self, other)

    def __rmod__(self, other: Any) -> Self:
        return _math.remainder(other, self)

    def __pow__(self, other: Any) -> Self:
        return _math.power(self, other)

    def __rpow__(self, other: Any) -> Self:
        return _math.power(other, self)

    if not TYPE_CHECKING:  # the function itself: no wrapper frame on the hot path
        __matmul__ = _contraction.matmul

    def __rmatmul__(self, other: Any) -> Self:
        return _contraction.matmul(other, self)

    def __neg__(self) -> Self:
        return _math.negative(self)

    def __pos__(self) -> Self:
        return _math.positive(self)

    def __abs__(self) -> Self:
        return _math.abs(self)

    def __invert__(self) -> Self:
        return _math.logical_not(self._boolean("~"))

    def __and__(self, other: Any) -> Self:
        return _math.logical_and(self._boolean("&"), other)

    def __rand__(self, other: Any) -> Self:
        return _math.logical_and(other, self._boolean("&"))

    def __or__(self, other: Any) -> Self:
        return _math.logical_or(self._boolean("|"), other)

    def __ror__(self, other: Any) -> Self:
        return _math.logical_or(other, self._boolean("|"))

    def __xor__(self, other: Any) -> Self:
        return _math.logical_xor(self._boolean("^"), other)

    def __rxor__(self, other: Any) -> Self:
        return _math.logical_xor(other, self._boolean("^"))

    def _boolean(self, operator: str) -> Any:
        if self.meta.dtype.kind != "b":
            raise DTypeError(
                operator, f"bitwise operators need bool tensors, got {self.meta.dtype}"
            )
        return self

    # ------------------------------------------------------------------ comparison

    def __eq__(self, other: object) -> Any:
        return _math.equal(self, cast("Any", other))

    def __ne__(self, other: object) -> Any:
        return _math.not_equal(self, cast("Any", other))

    def __lt__(self, other: Any) -> Self:
        return _math.less(self, other)

    def __le__(self, other: Any) -> Self:
        return _math.less_equal(self, other)

    def __gt__(self, other: Any) -> Self:
        return _math.greater(self, other)

    def __ge__(self, other: Any) -> Self:
        return _math.greater_equal(self, other)

    # ------------------------------------------------------------------ indexing

    if not TYPE_CHECKING:  # the function itself: no wrapper frame on the hot path
        __getitem__ = _indexing.getitem

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        raise TypeError(
            f"{type(self).__name__} is immutable; build a new tensor instead (e.g. tf.where, "
            f"tf.concatenate, or lax.dynamic_update_slice / lax.scatter_add)"
        )

    # ------------------------------------------------------------------ methods

    def astype(self, dtype: Any) -> Self:
        return _convert.astype(self, dtype)

    def conj(self) -> Self:
        return _math.conj(self)

    conjugate = conj

    def reshape(self, *shape: Any) -> Self:
        target = shape[0] if len(shape) == 1 and not _convert._is_integer(shape[0]) else shape
        return _shapes.reshape(self, target)

    def transpose(self, *axes: Any) -> Self:
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = tuple(axes[0]) if axes[0] is not None else ()
        return _shapes.transpose(self, axes or None)

    def swapaxes(self, axis1: int, axis2: int) -> Self:
        return _shapes.swapaxes(self, axis1, axis2)

    def ravel(self) -> Self:
        return _shapes.ravel(self)

    flatten = ravel

    def squeeze(self, axis: int | Sequence[int] | None = None) -> Self:
        return _shapes.squeeze(self, axis)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Self:
        return _shapes.diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Self:
        return _shapes.trace(self, offset, axis1, axis2)

    def sum(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Self:
        return _reductions.sum(self, axis, keepdims, dtype)

    def prod(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Self:
        return _reductions.prod(self, axis, keepdims, dtype)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Self:
        return _reductions.mean(self, axis, keepdims)

    def var(self, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Self:
        return _reductions.var(self, axis, keepdims, ddof)

    def std(self, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Self:
        return _reductions.std(self, axis, keepdims, ddof)

    def max(self, axis: Any = None, keepdims: bool = False) -> Self:
        return _reductions.max(self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Self:
        return _reductions.min(self, axis, keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Self:
        return _reductions.all(self, axis, keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Self:
        return _reductions.any(self, axis, keepdims)

    def clip(self, a_min: Any = None, a_max: Any = None) -> Self:
        return _math.clip(self, a_min, a_max)

    def dot(self, other: Any) -> Self:
        return _contraction.dot(self, other)

    def take(self, indices: Any, axis: int | None = None) -> Self:
        return _indexing.take(self, indices, axis)

    # numerics (tenferro.surface.numerics): jax.Array's semantics, sort returns a copy

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Self:
        return _numerics.argmax(self, axis, keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Self:
        return _numerics.argmin(self, axis, keepdims)

    def sort(self, axis: int | None = -1, *, descending: bool = False) -> Self:
        return _numerics.sort(self, axis, descending=descending)

    def argsort(self, axis: int | None = -1, *, descending: bool = False) -> Self:
        return _numerics.argsort(self, axis, descending=descending)

    def cumsum(self, axis: int | None = None, dtype: Any = None) -> Self:
        return _numerics.cumsum(self, axis, dtype)

    def cumprod(self, axis: int | None = None, dtype: Any = None) -> Self:
        return _numerics.cumprod(self, axis, dtype)

    # ------------------------------------------------------------------ in place
    #
    # Tensors are immutable. ``x += y`` builds ``x + y`` and rebinds the name ``x`` (as
    # for Python numbers and JAX arrays; other references to the old tensor keep its
    # value). On a tracked leaf it raises ``InPlaceError`` instead, as PyTorch does: the
    # name would silently move from the leaf (whose ``.grad`` backward fills) to a
    # result. ``x[i] = v`` raises ``TypeError`` on every tensor (there is nothing to
    # rebind).

    def _refuse_in_place(self, operator: str) -> None:
        if getattr(self, "tape", None) is not None and getattr(self, "node", 1) is None:
            raise InPlaceError(
                operator,
                f"in-place {operator} on a tracked leaf ({self.meta.describe()}) would "
                f"replace the leaf whose .grad backward() fills; build a new tensor "
                f"(y = x {operator[:-1]} ...), or start a new leaf from new data "
                f"(x = tf.tensor(new_value, requires_grad=True))",
            )

    def __iadd__(self, other: Any) -> Self:
        self._refuse_in_place("+=")
        return self.__add__(other)

    def __isub__(self, other: Any) -> Self:
        self._refuse_in_place("-=")
        return self.__sub__(other)

    def __imul__(self, other: Any) -> Self:
        self._refuse_in_place("*=")
        return self.__mul__(other)

    def __itruediv__(self, other: Any) -> Self:
        self._refuse_in_place("/=")
        return self.__truediv__(other)

    def __ifloordiv__(self, other: Any) -> Self:
        self._refuse_in_place("//=")
        return self.__floordiv__(other)

    def __imod__(self, other: Any) -> Self:
        self._refuse_in_place("%=")
        return self.__mod__(other)

    def __ipow__(self, other: Any) -> Self:
        self._refuse_in_place("**=")
        return self.__pow__(other)

    def __imatmul__(self, other: Any) -> Self:
        self._refuse_in_place("@=")
        return self.__matmul__(other)

    def __iand__(self, other: Any) -> Self:
        self._refuse_in_place("&=")
        return self.__and__(other)

    def __ior__(self, other: Any) -> Self:
        self._refuse_in_place("|=")
        return self.__or__(other)

    def __ixor__(self, other: Any) -> Self:
        self._refuse_in_place("^=")
        return self.__xor__(other)

    # ------------------------------------------------------------------ PyTorch habits

    def __round__(self, ndigits: int | None = None) -> Self:
        """``round(x)`` and ``round(x, n)``: ``tf.round`` (a tensor, as numpy arrays and
        PyTorch give; ``.item()`` first for a Python number)."""
        return _math.round(self, 0 if ndigits is None else ndigits)

    def _concrete_value(self, name: str) -> Any:
        """The data of a concrete tensor; a traced tensor has none while it is traced."""
        value = getattr(self, "_value", None)
        if value is None:
            raise ArgumentTypeError(
                name,
                f"a {type(self).__name__} ({self.meta.describe()}) has no concrete value "
                f"while it is traced; use .eval().{name}() outside a transform",
            )
        return value

    def tolist(self) -> Any:
        """The data as nested Python lists of Python scalars (a scalar for a 0-d tensor)."""
        return np.asarray(self._concrete_value("tolist")).tolist()

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"`` formats the Python scalar of a one-element 0-d tensor; an empty
        spec gives ``str(x)``; a spec for a tensor of rank > 0 raises ``TypeError`` (as in
        PyTorch: format its ``.tolist()`` or elements instead)."""
        if not spec:
            return str(self)
        if self.meta.shape != ():
            raise ArgumentTypeError(
                "format",
                f"unsupported format string {spec!r} for {type(self).__name__} of shape "
                f"{self.meta.shape}: only 0-d tensors take a format spec",
            )
        return format(np.asarray(self._concrete_value("__format__")).item(), spec)

    @property
    def data(self) -> Self:
        """The value without its history (PyTorch's ``.data``): an ``EagerTensor``'s
        ``detach()``, a ``Tensor`` itself. A ``TracedTensor`` raises (use
        ``tf.stop_gradient``, whose derivative is zero by contract)."""
        detach = getattr(self, "detach", None)
        if detach is not None:
            return detach()
        self._concrete_value("data")
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """Make this ``EagerTensor`` a tracked leaf of the default tape (PyTorch's
        ``requires_grad_``); a no-op when it is tracked already. ``False`` stops tracking
        a leaf in place (freezing it: its ``.grad`` is kept, no later backward sets it);
        a computed tensor cannot stop being tracked (use ``detach()``), as in PyTorch.
        Other kinds raise: ``Tensor`` has no AD and traced leaves are differentiated by
        ``.grad(wrt)``."""
        requires_grad = check_flag("requires_grad_", "requires_grad", requires_grad)
        tape: Any = getattr(self, "tape", _NO_TAPE)

        if tape is _NO_TAPE:
            raise ArgumentTypeError(
                "requires_grad_",
                f"a {type(self).__name__} does not record operations; make an EagerTensor "
                f"(tf.tensor(data, requires_grad=True), tf.asarray(x, requires_grad=True))",
            )
        if not requires_grad:
            if tape is None:
                return self
            if getattr(self, "node", None) is not None:
                raise UnsupportedError(
                    "requires_grad_",
                    "only a leaf can stop being tracked in place; this tensor was computed "
                    "from tracked ones: use y.detach() for an untracked copy",
                )
            tape.release_leaf(self)
            return self
        if tape is None:
            default_tape().adopt_leaf(self)  # type: ignore[arg-type]
        return self

    def retain_grad(self) -> None:
        """PyTorch's ``retain_grad``: a tracked leaf already keeps its ``.grad`` (a no-op).
        Intermediate results do not accumulate gradients: ``UnsupportedError`` says how
        to take the gradient with respect to one (``tape.grad(loss, [y])``)."""
        tape = getattr(self, "tape", None)
        if tape is not None and getattr(self, "node", None) is None:
            return
        raise UnsupportedError(
            "retain_grad",
            f"only tracked leaves keep a .grad; for the gradient with respect to this "
            f"{type(self).__name__}, use tape.grad(loss, [y]) / tf.grad, or start a new "
            f"leaf from it with y.detach().requires_grad_()",
        )


_NO_TAPE = object()


_CLASS_ATTRIBUTES = frozenset({"__module__", "__qualname__", "__doc__", "__slots__"})

_BINARY_LANES = (
    ("__add__", _math.add, False),
    ("__radd__", _math.add, True),
    ("__sub__", _math.subtract, False),
    ("__rsub__", _math.subtract, True),
    ("__mul__", _math.multiply, False),
    ("__rmul__", _math.multiply, True),
    ("__truediv__", _math.true_divide, False),
    ("__rtruediv__", _math.true_divide, True),
)
"""The operators a ``TracedTensor`` answers from its keys' memos (see
:func:`tenferro.traced.tensor.operator_lane`): name, surface function, operands swapped."""


def register_tensor_methods(namespace: ModuleType, array_namespace: ModuleType) -> None:
    """Install the operators and methods on every tensor kind (on their base,
    :class:`~tenferro.core.methods.TensorMethods`) and the traced kind's operator lanes;
    numpy functions applied to tensors run as the functions of ``namespace`` (``tenferro``)
    and ``__array_namespace__`` returns ``array_namespace`` (:mod:`tenferro.array_api`).
    Called once, by ``import tenferro``."""
    _numpy_api.dispatch_to(namespace)
    for name, value in vars(SurfaceMethods).items():
        if name not in _CLASS_ATTRIBUTES and (callable(value) or isinstance(value, property)):
            setattr(TensorMethods, name, value)
    version = array_namespace.__array_api_version__

    def __array_namespace__(self: Any, *, api_version: str | None = None) -> Any:  # noqa: N807
        """The Array API namespace of tensors: :mod:`tenferro.array_api` (the standard's
        function names and signatures over the tenferro functions)."""
        if api_version not in (None, "2021.12", "2022.12", version):
            raise ParameterError(
                "__array_namespace__",
                f"api_version {api_version!r} is not supported; tenferro implements {version!r}",
            )
        return array_namespace

    __array_namespace__.__qualname__ = "TensorMethods.__array_namespace__"
    TensorMethods.__array_namespace__ = __array_namespace__  # type: ignore[method-assign]
    for name, function, swapped in _BINARY_LANES:
        setattr(TracedTensor, name, operator_lane(name, function, swapped))
